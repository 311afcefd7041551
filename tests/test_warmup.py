import io

import numpy as np

import ge
from ge.progress import Progress
from ge.warmup import compile_kernels, kernel_signatures
from ge.zoo import light_model_path, reference_feeds


def test_warmup_compiles_exactly_what_the_run_calls():
    sess = ge.Session(light_model_path("inception_v2"), runtime="v2")
    n = compile_kernels(sess.plan, progress=False)
    fns = {fn for fn, _ in kernel_signatures(sess.plan)}
    assert n >= len(fns) > 0
    before = {fn: len(fn.signatures) for fn in fns}
    sess.run(None, reference_feeds(sess))
    assert {fn: len(fn.signatures) for fn in fns} == before  # nothing left to compile in the run


def test_progress_is_silent_off_a_terminal():
    out = io.StringIO()
    bar = Progress(3, "compiling kernels", stream=out)
    for _ in range(3):
        bar.advance(1, "node")
    bar.close()
    assert out.getvalue() == ""


def test_progress_draws_on_a_terminal():
    class Tty(io.StringIO):
        def isatty(self):
            return True
    out = Tty()
    bar = Progress(2, "compiling kernels", stream=out)
    bar.advance(1, "conv1")
    bar.close()
    assert "1/2" in out.getvalue() and "compiling kernels: 1" in out.getvalue()
    assert np.isfinite(bar.t0)

import io

import numpy as np

import ge
from ge.npu import progress
from ge.progress_bar import Progress
from ge.warmup import compile_kernels, kernel_signatures
from ge.zoo import light_model_path, reference_feeds


def test_warmup_compiles_exactly_what_the_run_calls():
    sess = ge.Session(light_model_path("inception_v2"), runtime="v2")
    n = compile_kernels(sess.plan)
    fns = {fn for fn, _ in kernel_signatures(sess.plan)}
    assert n >= len(fns) > 0
    before = {fn: len(fn.signatures) for fn in fns}
    sess.run(None, reference_feeds(sess))
    assert {fn: len(fn.signatures) for fn in fns} == before  # nothing left to compile in the run


def test_progress_piped_is_quiet_for_a_quick_step_and_keeps_the_time():
    out = io.StringIO()
    with Progress(stream=out, every=60) as p:   # piped: a line only every 60 s of work
        with progress.step("compiling kernels", 3) as advance:
            for cached in (True, False, None):
                advance("node", cached)
    assert out.getvalue() == ""
    t = p.total("compiling kernels")
    assert (t.total, t.done, t.cached, t.compiled) == (3, 3, 1, 1) and t.seconds >= 0


def test_progress_draws_on_a_terminal_and_nests():
    class Tty(io.StringIO):
        def isatty(self):
            return True
    out = Tty()
    with Progress(stream=out) as p:
        with p.phase("load"):
            with progress.step("compiling kernels", 2) as advance:
                advance("conv1", False)
    text = out.getvalue()
    assert "load > compiling kernels" in text and "1/2" in text and "conv1" in text
    load, kernels = p.total("load"), p.total("compiling kernels")
    assert load.seconds >= kernels.seconds and np.isclose(load.own, load.seconds - kernels.seconds)


def test_warmup_reports_its_kernels():
    sess = ge.Session(light_model_path("squeezenet"), runtime="v2")
    with Progress(stream=io.StringIO()) as p:
        n = compile_kernels(sess.plan)
    t = p.total("compiling kernels")
    assert t.total == t.done == n > 0

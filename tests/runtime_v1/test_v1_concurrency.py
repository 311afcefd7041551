"""Concurrent runs on one runtime_v1 session: 8 threads x 20 runs equal the serial results; instances
(a small pool, each with its own feature map and I/O, sharing one copy of the weights) are capped."""

import numpy as np

import ge
from ge.zoo import with_random_weights
from hammer import hammer

THREADS, RUNS = 8, 20


def test_eight_threads_match_serial_runs():
    sess = ge.Session(with_random_weights("squeezenet"), runtime="v1",
                      options=ge.Options(executor_instances=4))
    (inp,) = sess.get_inputs()
    rng = np.random.default_rng(0)
    feeds = [{inp.name: rng.standard_normal(inp.shape).astype(np.float32)} for _ in range(THREADS)]
    expected = [sess.run(None, f)[0] for f in feeds]
    errors = hammer(lambda f: sess.run(None, f)[0], feeds, expected, RUNS)
    assert not errors, errors[:5]
    ex = sess._executor
    assert 1 <= ex.stats()["instances"] <= 4
    assert ex.stats()["runs"] == THREADS * (RUNS + 1)
    assert all(inst.weights is ex._instances.all[0].weights for inst in ex._instances.all)  # one copy of the weights

"""examples/video_pipeline.py: three streams (DVPP, AICORE, AICPU) over frames give the sequential results."""
import os
import sys

import numpy as np

from ge.npu import Tracer

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
import video_pipeline as vp  # noqa: E402


def test_pipeline_over_frames_matches_sequential_and_overlaps():
    tracer = Tracer("pipeline")
    pipe = vp.Pipeline(tracer=tracer)
    video = vp.frames(6, 120, 160)
    try:
        want = pipe.run_sequential(video)
        got = pipe.run(video)
        again = pipe.run(video)        # events reused by generation: a second pass works the same
    finally:
        pipe.close()
    for a, b, c in zip(got, want, again):
        assert [k for k, _ in a] == [k for k, _ in b] == [k for k, _ in c]
        np.testing.assert_allclose([p for _, p in a], [p for _, p in b], rtol=1e-6)
    st = tracer.stats()
    assert set(st["busy"]) == {0, 1, 2}
    names = [s.name for s in tracer.slices if s.kind == "kernel"]
    assert sum(n.startswith("inference") for n in names) == 12


def test_pipeline_main_runs(capsys):
    assert vp.main(["--frames", "3"]) == 0
    assert "3 streams" in capsys.readouterr().out

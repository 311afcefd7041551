"""Run under `mpiexec -n 2` by test_mpi.py; rank 0 prints one JSON line per check.

data parallel on both runtimes equals this rank's one-device run, tensor parallel is within 1e-5 of it; a plan that differs on rank 1 is refused
at load (GEError on every rank); `ge bench` prints each rank's lines and rank 0 the group's; then rank 1 exits before a run and rank 0's run raises ExecutionError
naming rank 1 (one launch for all: each costs seconds of start-up; mpiexec -disable-auto-cleanup keeps rank 0
alive when rank 1 dies).
"""
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ge  # noqa: E402
from hccl_models import feed, mlp  # noqa: E402

from ge.hccl.world import launched_size  # noqa: E402

rank = int(os.environ.get("PMI_RANK", "0"))
assert launched_size() == 2
opts = ge.Options(parallel="data", hccl_timeout=float(sys.argv[1]))
x = feed()
out = {}
if True:
    ref = ge.Session(mlp(), runtime="v2").run(None, {"x": x})[0]   # one device: joins no group
    for rt in ("v2", "v1"):
        s = ge.Session(mlp(), runtime=rt, options=opts)
        out[rt] = bool(np.array_equal(s.run(None, {"x": x})[0], ref))
        out[rt + "_group"] = s.stats()["group_size"]
    from ge.models import bert_like
    bert = bert_like(layers=1, hidden=64, heads=4, batch=1, seq=16, vocab=100, max_seq=32)
    ids = np.arange(16, dtype=np.int64).reshape(1, 16)
    one = ge.Session(bert, runtime="v2").run(None, {"input_ids": ids})[0]
    tp = ge.Session(bert, runtime="v2", options=opts.replace(parallel="tensor"))
    out["tensor"] = float(np.abs(tp.run(None, {"input_ids": ids})[0] - one).max())
    try:
        ge.Session(mlp(seed=rank), runtime="v2", options=opts)
        out["mismatch"] = "loaded"
    except ge.GEError as e:
        out["mismatch"] = str(e)
if True:   # `ge bench` under mpiexec: each rank's lines, then rank 0's line for the group
    import contextlib
    import io
    import tempfile

    import onnx
    from ge.cli import main
    path = os.path.join(tempfile.mkdtemp(), f"mlp{rank}.onnx")
    onnx.save(mlp(batch=4), path)
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        main(["bench", path, "--runtime", "v2", "--data-parallel", "2", "--rounds", "3", "--warmup", "1"])
    out["bench"] = text.getvalue()
if True:
    s = ge.Session(mlp(), runtime="v2", options=opts)
    if rank == 1:
        os._exit(3)
    t0 = time.monotonic()
    try:
        s.run(None, {"x": x})
        out["die"] = "ran"
    except ge.ExecutionError as e:
        out["die"] = str(e)
    out["seconds"] = time.monotonic() - t0
print(json.dumps(out), flush=True)
os._exit(0)   # the world lost a rank: MPI_Finalize would wait for it

"""Two ranks under the pip-installed MPI (the `dist` extra: mpi4py on the MPICH wheel, its mpiexec):
data parallel equals one device on both runtimes, tensor parallel is within 1e-5 of it, mismatched plans are refused at load, a rank that dies
is named by the other within the timeout, `ge bench` prints the group's line. One mpiexec launch (mpi_worker.py) for all: ~10 s wall."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mpi4py")
MPIEXEC = Path(sys.executable).parent / "mpiexec"   # the mpich wheel's, beside this Python
HERE = Path(__file__).resolve().parent


@pytest.mark.skipif(not MPIEXEC.exists(), reason="no mpiexec beside this Python (pip install mpich)")
def test_two_ranks():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE.parents[1]), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([str(MPIEXEC), "-disable-auto-cleanup", "-n", "2", sys.executable,
                          str(HERE / "mpi_worker.py"), "2"], capture_output=True, text=True, timeout=120, env=env)
    lines = [json.loads(s) for s in run.stdout.splitlines() if s.startswith("{")]
    assert len(lines) >= 1, run.stdout + run.stderr
    rank0 = lines[0] if len(lines) == 1 else next(d for d in lines if "seconds" in d)
    assert rank0["v2"] and rank0["v1"] and rank0["v2_group"] == rank0["v1_group"] == 2
    assert rank0["tensor"] <= 1e-5
    assert "plans of group 'hccl_world_group' differ: rank 1" in rank0["mismatch"]
    assert "rank 1 did not answer rank 0 within 2 s" in rank0["die"]
    assert rank0["seconds"] < 10
    bench = rank0["bench"]
    assert "rank 0/2  " in bench and "all 2 ranks  ge v2" in bench and "items/s" in bench

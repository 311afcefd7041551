"""Compile + first-run time of a Sum and a Concat vs their input count (10, 100, 1,000, 10,000), with the
split_variadic pass (nodes of at most 8 inputs: the kernels compile once per arity class) and, for the
counts where it finishes in reasonable time, without it (disabled_passes). Issue 46: flat or linear.

    python bench/variadic_compile.py [max_inputs] [--without]
"""
from __future__ import annotations

import datetime
import os
import platform
import subprocess
import sys
import time

import numpy as np
from onnx import TensorProto, helper

import ge


def model(op: str, n: int):
    names = [f"x{i}" for i in range(n)]
    attrs = {"axis": 1} if op == "Concat" else {}
    g = helper.make_graph([helper.make_node(op, names, ["y"], **attrs)], "g",
                          [helper.make_tensor_value_info(x, TensorProto.FLOAT, [2, 3]) for x in names],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def seconds(op: str, n: int, options: ge.Options) -> str:
    """Wall and CPU seconds (the machine is shared: CPU time is the compile cost) of compile + first run."""
    feeds = {f"x{i}": np.ones((2, 3), np.float32) for i in range(n)}
    t, c = time.perf_counter(), time.process_time()
    with ge.Session(model(op, n), options=options) as s:
        s.run(None, feeds)
    return f"{time.perf_counter() - t:8.2f} s ({time.process_time() - c:7.2f} CPU s)"


def main() -> None:
    top = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 10000
    without = "--without" in sys.argv
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    print(f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}, "
          f"commit {commit}")
    for op in ("Sum", "Concat"):
        for n in (10, 100, 1000, 10000):
            if n > top:
                break
            row = f"{op:6} {n:6} inputs: split {seconds(op, n, ge.Options())}"
            if without and n <= 100:
                row += f", one node {seconds(op, n, ge.Options(disabled_passes=('split_variadic',)))}"
            print(row, flush=True)


if __name__ == "__main__":
    main()

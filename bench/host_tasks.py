"""String and ONNX-ML plans per run: runtime_v1 (host tasks in its task tables) against runtime_v2 (host-driven).

    python bench/host_tasks.py [--rounds N] [--calls N] [--rows N]

The scikit-learn exports (tests/fixtures/sklearn) and the hand-built string graph of tests/ort/test_ml_strings.py,
each compiled once at a fixed batch (`--rows`, Options(input_shape=...)) and loaded on both runtimes; samples
of `--calls` runs alternate between the two in a shuffled order each round (ge.bench.alternate). Prints the
date, the machine and the commit, then per model the median per run on each side and the ratio v1 / v2.
"""
from __future__ import annotations

import argparse
import datetime
import os
import sys
from pathlib import Path

import numpy as np

import ge
from ge.bench import alternate

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests" / "ort"))
from aicores_report import machine  # noqa: E402
from ort_dropin import commit  # noqa: E402
from test_ml_strings import STRING_FEEDS, STRINGS  # noqa: E402

FIXTURES = HERE.parent / "tests" / "fixtures" / "sklearn"
MODELS = ("logreg_iris", "svc_iris", "tree_string_labels", "onehot_strings", "pipeline_impute_scale_logreg")


def cases(rows: int):
    """(name, model, options, feeds) per model."""
    rng = np.random.default_rng(1)
    for name in MODELS:
        width = 2 if name == "onehot_strings" else 4
        x = (rng.choice(np.array(["a", "b", "x"], object), size=(rows, width)) if name == "onehot_strings"
             else (rng.random((rows, width)) * 7).astype(np.float32))
        yield name, str(FIXTURES / f"{name}.onnx"), ge.Options(input_shape=f"X:{rows},{width}"), {"X": x}
    yield "strings", STRINGS, ge.Options(input_shape="x:6;ref:6"), STRING_FEEDS


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--calls", type=int, default=100)
    p.add_argument("--rows", type=int, default=6)
    args = p.parse_args(argv)
    print(f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; {machine()}; commit {commit()}; "
          f"load {os.getloadavg()[0]:.1f}")
    print(f"{'model':<30} {'runtime_v1':>12} {'runtime_v2':>12} {'v1 / v2':>8}  host tasks / native tasks (v1)")
    for name, model, options, feeds in cases(args.rows):
        v1, v2 = (ge.Session(model, runtime=rt, options=options) for rt in ("v1", "v2"))

        def runs(sess):
            return lambda: [sess.run(None, feeds) for _ in range(args.calls)]
        times = alternate({"v1": runs(v1), "v2": runs(v2)}, rounds=args.rounds)
        a, b = np.median(times["v1"]) / args.calls, np.median(times["v2"]) / args.calls
        s = v1.stats()
        print(f"{name:<30} {a * 1e6:>9.1f} us {b * 1e6:>9.1f} us {a / b:>8.3f}  {s['host_tasks']} / {s['native_tasks']}")


if __name__ == "__main__":
    main()

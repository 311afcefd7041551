"""Concurrency harness: many threads calling one session at once, each result checked against a serial run."""
import threading

import numpy as np


def hammer(run, work: list, expected: list, runs: int, timeout: float | None = None,
           rotate: bool = False) -> list[str]:
    """One thread per work item, released together, each calling `run(work[k])` `runs` times (with `rotate`,
    run r of thread k takes item (k + r) mod len(work): every thread meets every input); every result (an
    array or a list of arrays) must equal the item's expected one exactly. Returns the problems found, 'hung'
    for a thread still running after `timeout` seconds."""
    errors, barrier = [], threading.Barrier(len(work))

    def worker(k):
        try:
            barrier.wait()
            for r in range(runs):
                i = (k + r) % len(work) if rotate else k
                got = run(work[i])
                for g, w in zip(*((x,) if isinstance(x, np.ndarray) else x for x in (got, expected[i]))):
                    if not np.array_equal(g, w):
                        errors.append(f"thread {k} run {r}: max diff {np.abs(g - w).max()}")
        except Exception as e:  # noqa: BLE001
            errors.append(f"thread {k}: {type(e).__name__}: {e}")
    threads = [threading.Thread(target=worker, args=(k,), daemon=True) for k in range(len(work))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    return errors + [f"thread {k} hung" for k, t in enumerate(threads) if t.is_alive()]

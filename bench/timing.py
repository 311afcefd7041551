"""Side-by-side timing for the bench scripts: the sides alternate within each repetition, so a busy
machine slows them alike and the ratio holds."""
import time


def alternating_best(fns, reps: int) -> list[float]:
    """Best seconds of each function over `reps` rounds, after one warm-up call each."""
    best = [float("inf")] * len(fns)
    for f in fns:
        f()
    for _ in range(reps):
        for i, f in enumerate(fns):
            t = time.perf_counter()
            f()
            best[i] = min(best[i], time.perf_counter() - t)
    return best

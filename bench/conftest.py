import os
import sys

import pytest

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH)

import compare  # noqa: E402


def pytest_configure(config):
    # pyproject's addopts run the tests on a worker per CPU; benchmarks must time one process alone
    if getattr(config.option, "numprocesses", None) and config.getoption("benchmark_only", False):
        raise pytest.UsageError("benchmarks time one process at a time: run them with -n 0, "
                                "e.g. pytest bench --benchmark-only -n 0")


def pytest_collection_finish(session):
    """README's `pytest` collects bench/ beside tests/ (pyproject's testpaths). pytest put bench/ first on sys.path
    to import its modules; there bench/transformers.py (a script) would shadow Hugging Face's transformers for the
    tests that import it later (tests/torch_compile). bench/ stays on the path, last."""
    while BENCH in sys.path:
        sys.path.remove(BENCH)
    sys.path.append(BENCH)


@pytest.fixture(autouse=True)
def _once_when_disabled(request):
    """Benchmarks disabled (README's `pytest`: xdist disables them; or --benchmark-disable): each bench runs as a
    test, its checks intact, once: its alternating loops one round (compare.ONCE), its compile cold-vs-warm on the
    suite's cache."""
    bench = request.getfixturevalue("benchmark") if "benchmark" in request.fixturenames else None
    compare.ONCE = bench is None or bench.disabled
    yield
    compare.ONCE = False

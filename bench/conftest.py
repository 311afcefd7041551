import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))


def pytest_configure(config):
    # pyproject's addopts run the tests on a worker per CPU; benchmarks must time one process alone
    if getattr(config.option, "numprocesses", None) and config.getoption("benchmark_only", False):
        raise pytest.UsageError("benchmarks time one process at a time: run them with -n 0, "
                                "e.g. pytest bench --benchmark-only -n 0")

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
# the repo root too: its regular packages runtime_v1/runtime_v2 must win over the namespace packages the
# test directories tests/runtime_v1 and tests/runtime_v2 would otherwise be under plain `pytest`
sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from suite_summary import SUMMARY  # noqa: E402


def pytest_terminal_summary(terminalreporter):
    for line in SUMMARY:
        terminalreporter.write_line(line)


# The longest files first (with a cold Numba cache: the node cases, the random DAGs of test_rel_fuzz (~11 min
# cold, 2026-12-08: it ran last, alone on one worker, for 8 of the suite's 29 minutes), the conv kernels'
# compiles), then the rest
# by their number of tests: under xdist's loadfile each file runs on one worker, and a long file started last kept
# one worker busy alone for minutes at the end of the run (largest-first keeps both busy to the end). xdist
# would sort the files by their number of tests alone, putting the long files with few tests (whole models,
# subprocesses) last: pyproject's addopts turn that off (--no-loadscope-reorder) so this order holds.
_FIRST = ("tests/test_onnx_node_cases.py", "tests/reliability/test_rel_fuzz.py", "tests/kernels/test_conv.py",
          "tests/test_light_models_vs_ort.py", "tests/test_light_models.py", "tests/reliability/test_rel_soak.py",
          "tests/kernels/test_elementwise.py")


def pytest_collection_modifyitems(config, items):
    rank = {f: i for i, f in enumerate(_FIRST)}
    count: dict[str, int] = {}
    for item in items:
        f = item.nodeid.split("::")[0]
        count[f] = count.get(f, 0) + 1
    items.sort(key=lambda item: (rank.get(item.nodeid.split("::")[0], len(_FIRST)),
                                 -count[item.nodeid.split("::")[0]]))

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
# the repo root too: its regular packages runtime_v1/runtime_v2 must win over the namespace packages the
# test directories tests/runtime_v1 and tests/runtime_v2 would otherwise be under plain `pytest`
sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# lines tests want shown at the end of every run (e.g. the ONNX node-case pass count)
SUMMARY: list[str] = []


def pytest_terminal_summary(terminalreporter):
    for line in SUMMARY:
        terminalreporter.write_line(line)

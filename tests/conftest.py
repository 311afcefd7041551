import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

# lines tests want shown at the end of every run (e.g. the ONNX node-case pass count)
SUMMARY: list[str] = []


def pytest_terminal_summary(terminalreporter):
    for line in SUMMARY:
        terminalreporter.write_line(line)

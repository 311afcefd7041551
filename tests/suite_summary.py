"""Lines tests want shown at the end of every run (e.g. the ONNX node-case pass count); tests/conftest.py prints
them. A module of its own: `from conftest import` finds whichever conftest.py is first on sys.path (a
sub-folder's, e.g. tests/torch_compile's)."""
SUMMARY: list[str] = []

"""onnxruntime.capi's import paths, for scripts that import from them (`from
onnxruntime.capi.onnxruntime_pybind11_state import InvalidArgument` becomes `from
ge.ort.capi.onnxruntime_pybind11_state import InvalidArgument`)."""
from . import _pybind_state, onnxruntime_inference_collection, onnxruntime_pybind11_state  # noqa: F401

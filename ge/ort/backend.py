"""onnxruntime.backend: the ONNX backend API (`prepare(model, device)`, `rep.run(inputs)`, `run_model`,
`supports_device`, `is_compatible`) as onnxruntime's module names it, over ge.backend. Keyword arguments
that name SessionOptions fields set them, as onnxruntime's prepare does."""
from __future__ import annotations

from ..backend import GEBackendRep
from ..errors import UsageError
from .session import InferenceSession
from .options import SessionOptions


class OnnxRuntimeBackendRep(GEBackendRep):
    """A prepared model: `run(inputs)` with a list (in input order), a dict or one array; a list back."""

    def __init__(self, session: InferenceSession):
        super().__init__(session.session)
        self.ort_session = session

    def run(self, inputs, **kwargs):
        return list(super().run(inputs, **kwargs))


def supports_device(device: str) -> bool:
    return str(device).upper().startswith("CPU")


def is_compatible(model, device: str | None = None, **kwargs) -> bool:
    return device is None or supports_device(device)


def prepare(model, device: str | None = None, **kwargs) -> OnnxRuntimeBackendRep:
    """A rep of `model` (a ModelProto, bytes or a path); `device` CPU (onnxruntime's CPU build knows no other)."""
    if device is not None and not supports_device(device):
        raise UsageError(f"device '{device}' is not supported: ge's onnxruntime API runs on the CPU")
    options = SessionOptions()
    for key, value in kwargs.items():
        if hasattr(options, key):
            setattr(options, key, value)
    if hasattr(model, "SerializeToString"):
        model = model.SerializeToString()
    return OnnxRuntimeBackendRep(InferenceSession(model, options, providers=["CPUExecutionProvider"]))


def run_model(model, inputs, device: str | None = None, **kwargs) -> list:
    return prepare(model, device, **kwargs).run(inputs)


def run_node(node, inputs, device: str | None = None, outputs_info=None, **kwargs):
    raise UsageError("onnxruntime.backend.run_node is not supported (onnxruntime does not implement it either): "
                     "build a model around the node and use run_model")

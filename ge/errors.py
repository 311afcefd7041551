"""The errors ge raises. Every one is a GEError; each names the model, node or input at fault.

Each also derives from the exception a script written for onnxruntime would catch (ge.ort, the drop-in):
onnxruntime's status classes are defined here under onnxruntime's names (ge imports no onnxruntime) and
ge.ort exposes them at onnxruntime's paths (`ge.ort.capi.onnxruntime_pybind11_state.InvalidArgument`), and
the Python builtin onnxruntime's Python layer raises for the same fault (ValueError for a bad feed...):

| ge error | onnxruntime status | builtin |
|---|---|---|
| GEError (every one) | Fail | |
| ModelLoadError | InvalidGraph | |
| ModelFileError | NoSuchFile | FileNotFoundError |
| ModelParseError | InvalidProtobuf | |
| UnsupportedOpError | NotImplemented | NotImplementedError |
| ShapeError | InvalidArgument | ValueError |
| InputError | InvalidArgument | ValueError |
| UsageError | | RuntimeError |
| DeviceMemoryError | RuntimeException | MemoryError |
| ExecutionError | RuntimeException | RuntimeError |
"""
from __future__ import annotations


# Step 1: onnxruntime's status classes (onnxruntime/core/common/status.h codes), each a plain Exception as
# onnxruntime's pybind module defines them
class Fail(Exception):
    """onnxruntime's FAIL (1)."""


class InvalidArgument(Exception):
    """onnxruntime's INVALID_ARGUMENT (2)."""


class NoSuchFile(Exception):
    """onnxruntime's NO_SUCHFILE (3)."""


class NoModel(Exception):
    """onnxruntime's NO_MODEL (4)."""


class EngineError(Exception):
    """onnxruntime's ENGINE_ERROR (5)."""


class RuntimeException(Exception):
    """onnxruntime's RUNTIME_EXCEPTION (6)."""


class InvalidProtobuf(Exception):
    """onnxruntime's INVALID_PROTOBUF (7)."""


class ModelLoaded(Exception):
    """onnxruntime's MODEL_LOADED (8)."""


class OrtNotImplemented(Exception):
    """onnxruntime's NOT_IMPLEMENTED (9), exposed by ge.ort under onnxruntime's name `NotImplemented`."""


class InvalidGraph(Exception):
    """onnxruntime's INVALID_GRAPH (10)."""


class EPFail(Exception):
    """onnxruntime's EP_FAIL (11)."""


class ModelLoadCanceled(Exception):
    """onnxruntime's MODEL_LOAD_CANCELED (12)."""


class ModelRequiresCompilation(Exception):
    """onnxruntime's MODEL_REQUIRES_COMPILATION (13)."""


class NotFound(Exception):
    """onnxruntime's NOT_FOUND (14)."""


class DeviceReset(Exception):
    """onnxruntime's DeviceReset."""


# Step 2: ge's errors
class GEError(Fail):
    """Base class of every error ge raises on purpose."""


class ModelLoadError(GEError, InvalidGraph):
    """The model file or proto cannot be read or is not a valid graph."""


class ModelFileError(ModelLoadError, NoSuchFile, FileNotFoundError):
    """The model file does not exist or is not a regular file."""


class ModelParseError(ModelLoadError, InvalidProtobuf):
    """The bytes are not an ONNX protobuf."""


class UnsupportedOpError(GEError, OrtNotImplemented, NotImplementedError):
    """No kernel is registered for an op at the model's opset."""

    def __init__(self, op_type: str, domain: str, opset: int, node: str, registered: list[str],
                 reason: str = ""):
        self.op_type, self.domain, self.opset, self.node = op_type, domain, opset, node
        self.registered, self.reason = registered, reason
        where = f"{domain}::" if domain else ""
        shown = ", ".join(registered[:200])
        why = f": {reason}" if reason else ""
        super().__init__(
            f"unsupported op {where}{op_type} (opset {opset}) at node '{node}'{why}; "
            f"registered ops: {shown}")


class ShapeError(GEError, InvalidArgument, ValueError):
    """Shapes or dtypes of a node's inputs do not fit the op."""


class InputError(GEError, InvalidArgument, ValueError):
    """A feed is missing, unknown, or of the wrong dtype or shape."""


class DeviceMemoryError(GEError, RuntimeException, MemoryError):
    """The modelled device has not enough memory for a request."""

    def __init__(self, requested: int, capacity: int, in_use: int, what: str = ""):
        self.requested, self.capacity, self.in_use, self.what = requested, capacity, in_use, what
        at = f" for {what}" if what else ""
        super().__init__(
            f"device out of memory{at}: requested {requested} bytes, capacity {capacity} bytes, "
            f"in use {in_use} bytes")


class ExecutionError(GEError, RuntimeException, RuntimeError):
    """A kernel failed while running a node."""


class UsageError(GEError, RuntimeError):
    """An API call ge (as onnxruntime) refuses with RuntimeError: a configuration key never set, a device
    this build has not, a buffer of another size."""

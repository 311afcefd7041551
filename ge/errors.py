"""The errors ge raises. Every one is a GEError; each names the model, node or input at fault."""
from __future__ import annotations


class GEError(Exception):
    """Base class of every error ge raises on purpose."""


class ModelLoadError(GEError):
    """The model file or proto cannot be read or is not a valid graph."""


class UnsupportedOpError(GEError):
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


class ShapeError(GEError):
    """Shapes or dtypes of a node's inputs do not fit the op."""


class InputError(GEError):
    """A feed is missing, unknown, or of the wrong dtype or shape."""


class DeviceMemoryError(GEError, MemoryError):
    """The modelled device has not enough memory for a request."""

    def __init__(self, requested: int, capacity: int, in_use: int, what: str = ""):
        self.requested, self.capacity, self.in_use, self.what = requested, capacity, in_use, what
        at = f" for {what}" if what else ""
        super().__init__(
            f"device out of memory{at}: requested {requested} bytes, capacity {capacity} bytes, "
            f"in use {in_use} bytes")


class ExecutionError(GEError):
    """A kernel failed while running a node."""

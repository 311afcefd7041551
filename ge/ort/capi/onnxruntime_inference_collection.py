"""onnxruntime.capi.onnxruntime_inference_collection's classes."""
from ..iobinding import IOBinding  # noqa: F401
from ..ortvalue import OrtValue  # noqa: F401
from ..session import InferenceSession  # noqa: F401
from ..session import InferenceSession as Session  # noqa: F401

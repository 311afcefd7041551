"""ImageDecoder: encoded image bytes (JPEG, PNG, BMP, TIFF, WebP, PNM, JPEG 2000) to an (H, W, C) uint8 array.

A host op (register_host): the output's shape is in the bytes, and decoding is library work, not a kernel
(GE gives it to the DVPP engine). It uses Pillow when Pillow is installed, as the spec's reference does;
ge does not depend on it, so without Pillow the op is refused with the install line. RGB and BGR convert the
image to three channels first (a palette or RGBA image too), Grayscale to Pillow's "L" (ITU-R 601 luma).
Bytes no decoder reads are an ExecutionError naming the node.
"""
from __future__ import annotations

import importlib.util
import io

import numpy as np

from ..errors import ExecutionError
from .registry import refuse, register_host

_FORMATS = ("RGB", "BGR", "Grayscale")


def decode(call, args):
    import PIL.Image  # noqa: PLC0415 (optional: only when a model decodes images)
    fmt = call.attrs.get("pixel_format", "RGB")
    fmt = fmt.decode() if isinstance(fmt, bytes) else fmt
    if fmt not in _FORMATS:
        raise call.error(f"pixel_format '{fmt}': supported are {', '.join(_FORMATS)}")
    data = args[0]
    if not isinstance(data, np.ndarray) or data.dtype != np.uint8 or data.ndim != 1:
        raise call.error(f"encoded_stream must be a 1-d uint8 tensor, got {getattr(data, 'dtype', type(data))}")
    try:
        img = PIL.Image.open(io.BytesIO(data.tobytes()))
        img = img.convert("L" if fmt == "Grayscale" else "RGB")
    except (OSError, ValueError, PIL.Image.DecompressionBombError) as e:
        raise ExecutionError(f"ImageDecoder node '{call.name}': cannot decode the image: {e}") from None
    out = np.asarray(img, np.uint8)
    if fmt == "Grayscale":
        return [out[:, :, None].copy()]
    return [np.ascontiguousarray(out[:, :, ::-1] if fmt == "BGR" else out)]


if importlib.util.find_spec("PIL") is not None:
    register_host("ImageDecoder", since=20)(decode)
else:
    refuse("ImageDecoder", 'decoding images needs Pillow, which is not installed: pip install pillow')

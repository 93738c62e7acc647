"""Frames and arrays on the wire, used by both the server and the client.

Two forms:

* PNG bytes, for MCP ``ImageContent`` (models and people look at these);
  compression level 1 is the cheapest that keeps Atari frames small
  (about 0.4 ms and 1-3 KB for a 210x160 frame).
* compact raw arrays, for trainers: ``{"data": base64, "shape": [...],
  "dtype": "uint8"}``; no image codec on either side.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np
from PIL import Image

# pybase64 is ~10x faster than the stdlib on 100 KB frames.
from pybase64 import b64decode, b64decode_as_bytearray, b64encode

__all__ = [
    "PNG_MIME",
    "b64_text",
    "decode_png",
    "decode_raw",
    "encode_png",
    "encode_raw",
    "is_raw",
    "png_from_b64",
    "to_jsonable",
]

PNG_MIME = "image/png"
_PNG_LEVEL = 1


def encode_png(frame: np.ndarray) -> bytes:
    """Encode an ``HxW`` (grayscale) or ``HxWx3`` (RGB) uint8 array as PNG."""
    if frame.dtype != np.uint8 or frame.ndim not in (2, 3):
        raise ValueError(f"expected an HxW or HxWx3 uint8 frame, got {frame.dtype} {frame.shape}")
    buffer = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(frame)).save(
        buffer, format="PNG", compress_level=_PNG_LEVEL
    )
    return buffer.getvalue()


def decode_png(data: bytes) -> np.ndarray:
    """Decode PNG bytes to a uint8 array (``HxW`` or ``HxWx3``)."""
    with Image.open(io.BytesIO(data)) as image:
        if image.mode in ("L", "RGB"):
            return np.asarray(image)
        return np.asarray(image.convert("RGB"))


def encode_raw(array: np.ndarray) -> dict[str, Any]:
    """An array as ``{"data": base64, "shape": [...], "dtype": str}``."""
    array = np.ascontiguousarray(array)
    return {
        "data": b64encode(array.tobytes()).decode("ascii"),
        "shape": list(array.shape),
        "dtype": array.dtype.str,
    }


def is_raw(value: object) -> bool:
    """Whether ``value`` looks like :func:`encode_raw` output."""
    return isinstance(value, dict) and {"data", "shape", "dtype"} <= value.keys()


def decode_raw(value: dict[str, Any]) -> np.ndarray:
    """Rebuild the array from :func:`encode_raw` output.

    Raises:
        ValueError: when the byte count does not match shape and dtype.
    """
    dtype = np.dtype(value["dtype"])
    shape = tuple(int(n) for n in value["shape"])
    # A bytearray makes the array writable at no extra copy (bytes would not):
    # trainers scale frames in place, and torch.from_numpy warns on read-only arrays.
    data = b64decode_as_bytearray(value["data"])
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(data) != expected:
        raise ValueError(
            f"raw array of shape {shape} and dtype {dtype} needs {expected} bytes, got {len(data)}"
        )
    return np.frombuffer(data, dtype=dtype).reshape(shape)


def b64_text(data: bytes) -> str:
    """Base64 text of ``data`` (for ``ImageContent.data``)."""
    return b64encode(data).decode("ascii")


def png_from_b64(text: str) -> np.ndarray:
    """Decode base64 PNG text (``ImageContent.data``) to an array."""
    return decode_png(b64decode(text))


def to_jsonable(value: Any) -> Any:
    """A JSON-able form of an observation or info value.

    numpy arrays and scalars become lists and numbers, tuples become lists,
    mapping keys become strings; anything else JSON cannot hold becomes its
    ``repr``, so an environment's odd info value can never break a reply.
    """
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)

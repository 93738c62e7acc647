"""Image-like fields of an OpenEnv observation: found, and turned into frames.

OpenEnv environments send pictures in several ways: pixels as a flat list of
integers beside a ``*_shape`` field (its Atari env's ``screen``), as nested
lists (``HxWx3``), or an encoded image as base64 text, bare or as a ``data:``
URL (its Atari env's ``screen_image``, browser screenshots, MCP image content).
:func:`find_images` finds them; pixel lists become zstd raw arrays in the
observation (the same values, in the shape they came in: a few hundred bytes
instead of 100,000 JSON numbers, and a client reads them back as arrays), and
the first image-like field is the frame, which :func:`to_rgb` decodes for the
MCP image.

A picture is measured before it is decoded (an encoded image by its header, a
pixel list by its shape): one past ``max_pixels`` raises :class:`TooLarge`, so a
few KB of PNG declaring gigapixels never becomes gigabytes.
"""

from __future__ import annotations

import binascii
import io
import math
import re
import struct
from typing import Any

import numpy as np
import pybase64

from openenv_mcp.codecs import encode_raw

__all__ = [
    "IMAGE_HINTS",
    "MAX_FRAME_PIXELS",
    "TooLarge",
    "find_images",
    "find_pictures",
    "to_rgb",
]

#: Largest picture taken from an observation, in pixels (width x height): 4096x4096,
#: 48 MiB as RGB. ``--max-frame-pixels`` sets it.
MAX_FRAME_PIXELS = 4096 * 4096

#: Words in a field's name that say it holds a picture.
IMAGE_HINTS = ("image", "frame", "screen", "pixel", "rgb", "render", "grayscale", "photo")
_DATA_URL = re.compile(r"^data:image/[a-z0-9.+-]+;base64,", re.IGNORECASE)
#: Base64 of the first bytes of PNG, JPEG, GIF and WebP files.
_B64_MAGIC = ("iVBORw0KGgo", "/9j/", "R0lGOD", "UklGR")
#: Shortest base64 text taken for an image (a 1x1 PNG is about 90 characters).
_MIN_B64 = 64
#: How deep nested fields are searched for encoded images (MCP content blocks).
_MAX_DEPTH = 4


class TooLarge(Exception):
    """Something an environment sent is past a limit; ``str()`` says what came and the limit
    (``"a 13300x13300 image (176,890,000 pixels); the limit is 16,777,216 pixels
    (--max-frame-pixels)"``). Callers say who sent it, as their own error."""

    def __init__(self, what: str, limit: str, flag: str) -> None:
        super().__init__(f"{what}; the limit is {limit} ({flag})")


def _too_many_pixels(noun: str, width: int, height: int, max_pixels: int) -> None:
    if width * height > max_pixels:
        raise TooLarge(
            f"a {width}x{height} {noun} ({width * height:,} pixels)",
            f"{max_pixels:,} pixels",
            "--max-frame-pixels",
        )


def _hinted(name: str) -> bool:
    lowered = name.lower()
    return any(h in lowered for h in IMAGE_HINTS)


def _encoded(value: str) -> bytes | None:
    """The image bytes a string holds (a ``data:`` URL or bare base64), else ``None``."""
    if len(value) < _MIN_B64:
        return None
    match = _DATA_URL.match(value)
    text = value[match.end() :] if match else value
    if not match and not text.startswith(_B64_MAGIC):
        return None
    try:
        return pybase64.b64decode(text, validate=False)
    except (binascii.Error, ValueError):
        return None


def _array(name: str, value: list[Any], shape: Any, max_pixels: int) -> np.ndarray | None:
    """The list as an array, in the shape it came in, where it may be a picture: flat
    beside a 2- or 3-dimensional shape field, or nested ``HxW[xC]`` (else ``None``).

    Raises:
        TooLarge: a picture of more than ``max_pixels`` (measured before any array is made).
    """
    if not value:
        return None
    if isinstance(shape, list) and len(shape) in (2, 3) and all(isinstance(s, int) for s in shape):
        if math.prod(shape) != len(value) or (len(shape) == 3 and shape[2] not in (1, 3, 4)):
            return None
        if isinstance(value[0], (list, dict, str)):
            return None
        _too_many_pixels(f"pixel list in {name!r}", shape[1], shape[0], max_pixels)
        step = max(1, len(value) // 64)
        if type(value[0]) is int and all(type(v) is int for v in value[::step]):
            try:  # the usual case: twice as fast as np.asarray on 100,800 of them
                return np.fromiter(value, np.int64, count=len(value))
            except (TypeError, ValueError, OverflowError):
                pass
        return np.asarray(value)
    if not isinstance(value[0], list) or not (_hinted(name) or _deep(value) == 3):
        return None
    _too_many_pixels(f"pixel list in {name!r}", len(value[0]), len(value), max_pixels)
    try:
        array = np.asarray(value)
    except ValueError:  # ragged
        return None
    if (array.ndim == 3 and array.shape[2] in (1, 3, 4)) or (array.ndim == 2 and _hinted(name)):
        return array
    return None


def _deep(value: list[Any]) -> int:
    depth = 0
    node: Any = value
    while isinstance(node, list) and node:
        depth += 1
        node = node[0]
    return depth


def _as_pixels(array: np.ndarray) -> np.ndarray | None:
    """``array`` as uint8 pixels (0-255 integers, or 0-1 floats scaled), else ``None``."""
    if array.dtype.kind in "iu":
        if array.size and (array.min() < 0 or array.max() > 255):
            return None
        return array.astype(np.uint8, copy=False)
    if array.dtype.kind == "f":
        if array.size and (array.min() < 0.0 or array.max() > 1.0):
            return None
        return (array * 255.0 + 0.5).astype(np.uint8)
    return None


def find_images(
    observation: dict[str, Any], max_pixels: int = MAX_FRAME_PIXELS
) -> tuple[dict[str, Any], np.ndarray | bytes | None]:
    """The observation with pixel lists as zstd raw arrays, and its first image-like
    field (pixels shaped ``HxW[xC]``, or encoded image bytes).

    Top-level lists (and numpy arrays) become raw arrays where they are pixels;
    encoded images are looked for in nested fields too (an MCP tool result's image
    content), and stay as they came.

    Raises:
        TooLarge: a pixel list, or the frame's encoded image (by its header), holds
            more than ``max_pixels`` pixels; nothing of it was decoded.
    """
    out, found, _ = find_pictures(observation, max_pixels)
    return out, found


def find_pictures(
    observation: dict[str, Any], max_pixels: int = MAX_FRAME_PIXELS
) -> tuple[dict[str, Any], np.ndarray | bytes | None, int]:
    """:func:`find_images`, and how many JSON values its pixel lists held (each number,
    and each list of them: they are arrays now)."""
    found: np.ndarray | bytes | None = None
    out = dict(observation)
    arrays = 0
    for name, value in observation.items():
        shape = observation.get(f"{name}_shape")
        array = None
        if isinstance(value, np.ndarray) and value.ndim in (1, 2, 3) and _hinted(name):
            if value.ndim > 1:
                height, width = value.shape[:2]
                _too_many_pixels(f"pixel array in {name!r}", width, height, max_pixels)
            array = value
        elif isinstance(value, list):
            array = _array(name, value, shape, max_pixels)
        pixels = None if array is None else _as_pixels(array)
        if array is not None and pixels is not None:
            # the same values: integers as bytes, anything else as it came
            out[name] = encode_raw(array if array.dtype.kind == "f" else pixels, compress=True)
            # HxWxC nested: H + H*W lists and H*W*C numbers
            arrays += sum(math.prod(array.shape[:k]) for k in range(1, array.ndim + 1))
            if found is None:
                found = pixels.reshape(shape) if pixels.ndim == 1 and shape else pixels
        elif found is None:
            found = _search(value, 1 if isinstance(value, list) else 0)
            if found is not None:
                _too_large_image(found, max_pixels)
    return out, found, arrays


_PNG = b"\x89PNG\r\n\x1a\n"


def _declared_size(data: bytes) -> tuple[int, int] | None:
    """An encoded image's ``(width, height)`` as its header declares it, nothing decoded:
    read from the bytes for PNG and GIF (a few KB of either can declare gigapixels),
    else by PIL (which reads the header only); ``None`` where PIL knows no image."""
    if data.startswith(_PNG) and data[12:16] == b"IHDR" and len(data) >= 24:
        width, height = struct.unpack(">II", data[16:24])
        return int(width), int(height)
    if data.startswith((b"GIF87a", b"GIF89a")) and len(data) >= 10:
        width, height = struct.unpack("<HH", data[6:10])
        return int(width), int(height)
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as image:
            return image.size
    except Image.DecompressionBombError:
        return None  # past PIL's own limit: it never decodes it (to_rgb gives no frame)
    except (UnidentifiedImageError, OSError, ValueError, struct.error):
        return None


def _too_large_image(data: bytes, max_pixels: int) -> None:
    size = _declared_size(data)
    if size is not None:
        _too_many_pixels("image", size[0], size[1], max_pixels)


def _search(value: Any, depth: int) -> bytes | None:
    """The first encoded image in ``value`` (strings, dicts and lists of them)."""
    if isinstance(value, str):
        return _encoded(value)
    if depth >= _MAX_DEPTH:
        return None
    if isinstance(value, dict):
        for item in value.values():
            found = _search(item, depth + 1)
            if found is not None:
                return found
    elif isinstance(value, list) and value and isinstance(value[0], (dict, str)):
        for item in value[:16]:
            found = _search(item, depth + 1)
            if found is not None:
                return found
    return None


def to_rgb(frame: np.ndarray | bytes, max_pixels: int = MAX_FRAME_PIXELS) -> np.ndarray | None:
    """An ``HxWx3`` uint8 frame from pixels or encoded image bytes (``None`` if undecodable,
    or if its header declares more than ``max_pixels``: :func:`find_images` refused those
    already, this is where nothing may get past)."""
    if isinstance(frame, bytes):
        from PIL import Image, UnidentifiedImageError

        size = _declared_size(frame)
        if size is None or size[0] * size[1] > max_pixels:
            return None
        try:
            with Image.open(io.BytesIO(frame)) as image:
                if image.size[0] * image.size[1] > max_pixels:
                    return None
                return np.asarray(image.convert("RGB"))
        except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError):
            return None
    if frame.ndim == 2:
        return np.repeat(frame[:, :, None], 3, axis=2)
    if frame.shape[2] == 1:
        return np.repeat(frame, 3, axis=2)
    if frame.shape[2] == 4:
        return np.ascontiguousarray(frame[:, :, :3])
    return frame

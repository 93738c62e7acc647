"""Frames and arrays on the wire, used by both the server and the client.

Two forms:

* PNG bytes, for MCP ``ImageContent`` (models and people look at these);
  compression level 1 is the cheapest that keeps Atari frames small
  (about 0.4 ms and 1-3 KB for a 210x160 frame).
* compact raw arrays, for trainers: ``{"data": base64, "shape": [...],
  "dtype": "uint8"}``; no image codec on either side. With
  ``"encoding": "zstd"`` the bytes are one standard zstd frame (RFC 8878,
  level 1) of the array bytes: an Atari frame goes from 100 KB to a few
  hundred bytes for ~0.02 ms each way, which is what lets a batch of 16 frames
  cross a pipe in a fraction of the time the emulator took to make them.
"""

from __future__ import annotations

import io
import math
import threading
from typing import Any, Literal, get_args

import numpy as np

# pybase64 is ~10x faster than the stdlib on 100 KB frames.
from pybase64 import b64decode, b64decode_as_bytearray, b64encode
from zstandard import ZstdCompressor, ZstdDecompressor, ZstdError, frame_content_size

from openenv_mcp.errors import ArgumentError

__all__ = [
    "BENCH_FRAMES",
    "CLIENT_FRAMES",
    "FRAMES",
    "PNG_MIME",
    "ZSTD",
    "ArrayForm",
    "BenchFrames",
    "ClientFrames",
    "Frames",
    "array_form",
    "b64_text",
    "check_frames",
    "decode_png",
    "decode_raw",
    "encode_png",
    "encode_raw",
    "is_raw",
    "png_from_b64",
    "to_jsonable",
    "wants_png",
]

#: How a call returns its observation; one vocabulary for the server, the client and bench:
#:
#: * ``"png"``: the frame as an MCP image (models and people look at it); an
#:   array observation is not sent besides (it is the frame, or too big to read);
#: * ``"raw"``: array observations as raw arrays in ``structuredContent`` (trainers);
#: * ``"zstd"``: the same, zstd-compressed (a few hundred bytes for an Atari frame);
#: * ``"both"``: the PNG image and the raw array;
#: * ``"none"``: neither (the counters only).
#:
#: Observations that are not arrays (text, JSON, tuples...) are always sent, as JSON.
Frames = Literal["png", "raw", "zstd", "both", "none"]
FRAMES: tuple[Frames, ...] = get_args(Frames)
#: The forms a client can decode to arrays.
ClientFrames = Literal["zstd", "raw", "png"]
CLIENT_FRAMES: tuple[ClientFrames, ...] = get_args(ClientFrames)
#: What ``bench`` measures: a client's forms, or none (the counters only).
BenchFrames = Literal["png", "zstd", "raw", "none"]
BENCH_FRAMES: tuple[BenchFrames, ...] = get_args(BenchFrames)

#: How array values are written: nested lists (JSON), or raw arrays, plain or zstd.
ArrayForm = Literal["list", "raw", "zstd"]

PNG_MIME = "image/png"
_PNG_LEVEL = 1
#: zlib level for palette PNGs: a scaled palette frame is rows of repeated bytes, which
#: level 6 halves again from level 1 (about 1 KB for Breakout at 480x630) for ~0.5 ms.
_PALETTE_LEVEL = 6
#: The one compressed encoding of raw arrays.
ZSTD = "zstd"
_ZSTD_LEVEL = 1


class _Zstd(threading.local):
    """Per-thread zstd contexts: building one costs ~14 µs, and they are not thread-safe."""

    def __init__(self) -> None:
        self.compressor = ZstdCompressor(level=_ZSTD_LEVEL)
        self.decompressor = ZstdDecompressor()


_zstd = _Zstd()


def check_frames(value: object, allowed: tuple[str, ...] = FRAMES, what: str = "frames") -> Any:
    """``value`` if it is one of ``allowed``.

    Raises:
        ArgumentError: naming what is allowed and what came.
    """
    if value not in allowed:
        raise ArgumentError(f"{what} must be one of {', '.join(map(repr, allowed))}, got {value!r}")
    return value


def array_form(frames: Frames) -> ArrayForm | None:
    """How array observations travel for ``frames``: raw, zstd, or not at all (``None``)."""
    if frames == "zstd":
        return "zstd"
    if frames in ("raw", "both"):
        return "raw"
    return None


def wants_png(frames: Frames) -> bool:
    """Whether a call asking for ``frames`` gets the frame as a PNG image."""
    return frames in ("png", "both")


def encode_png(frame: np.ndarray, scale: int = 1) -> bytes:
    """Encode an ``HxW`` (grayscale) or ``HxWx3`` (RGB) uint8 array as PNG, losslessly.

    With ``scale`` > 1 each pixel becomes a ``scale`` x ``scale`` block (nearest
    neighbour): a 160x210 Atari screen at 3 is 480x630, legible to a model. A
    scaled RGB frame of at most 256 colours (every Atari screen) is written as a
    palette PNG, at 1, 2, 4 or 8 bits a pixel, which is both smaller and faster:
    a Breakout screen at 480x630 is about 1 KB instead of 6 KB, where a framework
    turning images into base64 text makes a model pay for every byte.
    """
    if frame.dtype != np.uint8 or frame.ndim not in (2, 3):
        raise ValueError(f"expected an HxW or HxWx3 uint8 frame, got {frame.dtype} {frame.shape}")
    from PIL import Image  # only where frames are drawn

    frame = np.ascontiguousarray(frame)
    buffer = io.BytesIO()
    if scale > 1:
        paletted = _paletted(Image.fromarray(frame), frame, scale) if frame.ndim == 3 else None
        if paletted is not None:
            image, bits = paletted
            image.save(buffer, format="PNG", compress_level=_PALETTE_LEVEL, bits=bits)
            return buffer.getvalue()
        frame = np.repeat(np.repeat(frame, scale, axis=0), scale, axis=1)
    Image.fromarray(frame).save(buffer, format="PNG", compress_level=_PNG_LEVEL)
    return buffer.getvalue()


def _paletted(image: Any, frame: np.ndarray, scale: int) -> tuple[Any, int] | None:
    """The RGB ``frame`` as a palette image scaled by ``scale``, and its bits per pixel;
    ``None`` past 256 colours. The palette holds exactly the frame's colours: lossless."""
    from PIL import Image

    colours = image.getcolors(256)  # C, and stops counting past 256
    if colours is None:
        return None
    rgb = np.array([c for _, c in colours], dtype=np.uint32)
    keys = np.sort((rgb[:, 0] << 16) | (rgb[:, 1] << 8) | rgb[:, 2])
    palette = np.stack([keys >> 16, (keys >> 8) & 255, keys & 255], axis=1).astype(np.uint8)
    packed = (frame[..., 0].astype(np.uint32) << 16) | (frame[..., 1].astype(np.uint32) << 8)
    packed |= frame[..., 2]
    index = np.searchsorted(keys, packed).astype(np.uint8)
    index = np.repeat(np.repeat(index, scale, axis=0), scale, axis=1)
    out = Image.fromarray(index, mode="P")
    out.putpalette(palette.tobytes())
    count = len(keys)
    return out, 1 if count <= 2 else 2 if count <= 4 else 4 if count <= 16 else 8


def decode_png(data: bytes) -> np.ndarray:
    """Decode PNG bytes to a uint8 array (``HxW`` or ``HxWx3``)."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        if image.mode in ("L", "RGB"):
            return np.asarray(image)
        return np.asarray(image.convert("RGB"))


def encode_raw(array: np.ndarray, *, compress: bool = False) -> dict[str, Any]:
    """An array as ``{"data": base64, "shape": [...], "dtype": str}``.

    With ``compress``, the bytes are zstd-compressed first and the dict says
    ``"encoding": "zstd"``.
    """
    # Not np.ascontiguousarray: it turns a 0-d array into shape (1,).
    array = np.asarray(array, order="C")
    if not compress:
        return {
            "data": b64encode(array.data).decode("ascii"),
            "shape": list(array.shape),
            "dtype": array.dtype.str,
        }
    return {
        "data": b64encode(_zstd.compressor.compress(array.data)).decode("ascii"),
        "shape": list(array.shape),
        "dtype": array.dtype.str,
        "encoding": ZSTD,
    }


def is_raw(value: object) -> bool:
    """Whether ``value`` looks like :func:`encode_raw` output."""
    return isinstance(value, dict) and {"data", "shape", "dtype"} <= value.keys()


def decode_raw(value: dict[str, Any]) -> np.ndarray:
    """Rebuild the array from :func:`encode_raw` output.

    Raises:
        ValueError: when the byte count does not match shape and dtype, or the
            encoding is unknown or its bytes are not what it says.
    """
    dtype = np.dtype(value["dtype"])
    shape = tuple(int(n) for n in value["shape"])
    expected = math.prod(shape) * dtype.itemsize
    encoding = value.get("encoding")
    # A bytearray makes the array writable at no extra copy (bytes would not):
    # trainers scale frames in place, and torch.from_numpy warns on read-only arrays.
    data = b64decode_as_bytearray(value["data"])
    if encoding == ZSTD:
        data = _unzstd(data, expected)
    elif encoding is not None:
        raise ValueError(f"raw array encoding must be absent or {ZSTD!r}, got {encoding!r}")
    if len(data) != expected:
        raise ValueError(
            f"raw array of shape {shape} and dtype {dtype} needs {expected} bytes, got {len(data)}"
        )
    return np.frombuffer(data, dtype=dtype).reshape(shape)


def _unzstd(data: bytearray, expected: int) -> bytearray:
    """Decompress one zstd frame that must hold exactly ``expected`` bytes."""
    try:
        # Checked before decompressing: the header's size is what gets allocated.
        size = frame_content_size(data)
        if size != expected:
            raise ValueError(f"zstd frame holds {size} bytes, the array needs {expected}")
        return bytearray(_zstd.decompressor.decompress(data))
    except ZstdError as exc:
        raise ValueError(f"raw array data is not a valid zstd frame: {exc}") from exc


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

"""Frames and arrays on the wire: PNG, raw and zstd-compressed raw."""

from __future__ import annotations

import contextlib
import io
from typing import Any

import numpy as np
import pybase64
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from PIL import Image

from openenv_mcp.codecs import decode_png, decode_raw, encode_png, encode_raw

DTYPES = [np.uint8, np.int16, np.float32, np.float64, np.bool_]


@settings(max_examples=150, deadline=None)
@given(
    array=hnp.arrays(
        dtype=st.sampled_from(DTYPES),
        shape=hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=9),
    ),
    compress=st.booleans(),
)
def test_raw_round_trip(array: np.ndarray, compress: bool) -> None:
    value = encode_raw(array, compress=compress)
    assert ("encoding" in value) == compress
    back = decode_raw(value)
    assert back.dtype == array.dtype and back.shape == array.shape
    assert np.array_equal(back, array, equal_nan=array.dtype.kind == "f")
    # Trainers scale frames in place; torch.from_numpy warns on read-only arrays.
    assert back.flags.writeable


@pytest.mark.parametrize("compress", [False, True])
def test_non_contiguous_arrays_travel_in_c_order(compress: bool) -> None:
    array = np.arange(60, dtype=np.uint8).reshape(3, 4, 5).transpose(2, 0, 1)[::2]
    assert np.array_equal(decode_raw(encode_raw(array, compress=compress)), array)


def frame_like() -> np.ndarray:
    frame = np.zeros((210, 160, 3), np.uint8)
    frame[30:190, 140:144] = (92, 186, 92)
    frame[100:104, 80:82] = 236
    return frame


def test_zstd_is_small_for_a_frame() -> None:
    frame = frame_like()
    assert len(encode_raw(frame, compress=True)["data"]) < 1000
    assert len(encode_raw(frame)["data"]) == 134_400


def corrupt(value: dict[str, Any], edit: Any) -> dict[str, Any]:
    data = bytearray(pybase64.b64decode(value["data"]))
    return {**value, "data": pybase64.b64encode(bytes(edit(data))).decode()}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda v: {**v, "shape": [10]}, "zstd frame holds 100800 bytes, the array needs 10"),
        (lambda v: {**v, "encoding": "lz4"}, "encoding must be absent or 'zstd', got 'lz4'"),
        (lambda v: corrupt(v, lambda d: d[:5]), "not a valid zstd frame"),
        (lambda v: corrupt(v, lambda d: b"\0" * 8 + d), "not a valid zstd frame"),
        (lambda v: {k: x for k, x in v.items() if k != "encoding"}, "needs 100800 bytes"),
    ],
)
def test_bad_zstd_data_is_a_clear_value_error(change: Any, message: str) -> None:
    value = change(encode_raw(frame_like(), compress=True))
    with pytest.raises(ValueError, match=message):
        decode_raw(value)


@settings(max_examples=200, deadline=None)
@given(position=st.integers(min_value=0), byte=st.integers(min_value=0, max_value=255))
def test_a_flipped_byte_never_crashes_the_decoder(position: int, byte: int) -> None:
    """Without a checksum a flip may decode to other pixels, but never past ValueError."""
    value = encode_raw(frame_like(), compress=True)

    def flip(data: bytearray) -> bytearray:
        data[position % len(data)] ^= byte
        return data

    with contextlib.suppress(ValueError):
        assert decode_raw(corrupt(value, flip)).shape == (210, 160, 3)


@pytest.mark.parametrize("shape", [(210, 160, 3), (210, 160)])
def test_png_round_trip(shape: tuple[int, ...]) -> None:
    frame = frame_like()[..., 0] if len(shape) == 2 else frame_like()
    assert np.array_equal(decode_png(encode_png(frame)), frame)


@pytest.mark.parametrize("colours", [2, 4, 9, 16, 17, 256])
@pytest.mark.parametrize("scale", [2, 3])
def test_scaled_frames_are_palette_pngs_and_lossless(colours: int, scale: int) -> None:
    rng = np.random.default_rng(colours)
    palette = rng.choice(256**3, size=colours, replace=False)
    picked = rng.integers(0, colours, size=(21, 16))
    picked.flat[:colours] = np.arange(colours)  # every colour is used
    chosen = palette[picked]
    frame = np.stack([chosen >> 16, (chosen >> 8) & 255, chosen & 255], axis=-1).astype(np.uint8)
    data = encode_png(frame, scale=scale)
    with Image.open(io.BytesIO(data)) as image:
        assert image.mode == "P"
        depth = data[24]  # IHDR's bit depth
    assert depth == (1 if colours <= 2 else 2 if colours <= 4 else 4 if colours <= 16 else 8)
    expected = np.repeat(np.repeat(frame, scale, axis=0), scale, axis=1)
    assert np.array_equal(decode_png(data), expected)


def test_frames_of_many_colours_and_grayscale_scale_as_they_are() -> None:
    noise = np.random.default_rng(0).integers(0, 256, size=(30, 20, 3), dtype=np.uint8)
    gray = noise[..., 0]
    for frame in (noise, gray):
        data = encode_png(frame, scale=2)
        with Image.open(io.BytesIO(data)) as image:
            assert image.mode in ("RGB", "L")
        expected = np.repeat(np.repeat(frame, 2, axis=0), 2, axis=1)
        assert np.array_equal(decode_png(data), expected)


def test_png_refuses_what_is_not_a_frame() -> None:
    with pytest.raises(ValueError, match="expected an HxW or HxWx3 uint8 frame, got float32"):
        encode_png(np.zeros((4, 4), np.float32))

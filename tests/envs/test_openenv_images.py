"""Image-like fields of OpenEnv observations: found in every form OpenEnv environments
send them, carried on faithfully, and nothing else taken for a picture."""

from __future__ import annotations

import base64

import numpy as np

from openenv_mcp.codecs import decode_raw, encode_png
from openenv_mcp_envs.openenv._images import find_images, to_rgb

PNG = encode_png(np.full((2, 3, 3), 200, dtype=np.uint8))


def test_a_flat_screen_beside_its_shape() -> None:
    screen = np.arange(24, dtype=np.uint8).reshape(2, 4, 3)
    out, frame = find_images({"screen": screen.ravel().tolist(), "screen_shape": [2, 4, 3]})
    assert np.array_equal(decode_raw(out["screen"]), screen.ravel())  # the same values
    assert isinstance(frame, np.ndarray) and np.array_equal(frame, screen)


def test_float_pixels_stay_floats_and_the_frame_scales_them() -> None:
    out, frame = find_images({"pixels": [[[0.0, 0.5, 1.0]] * 2] * 2})
    assert decode_raw(out["pixels"]).dtype == np.float64
    assert isinstance(frame, np.ndarray) and frame[0, 0].tolist() == [0, 128, 255]


def test_encoded_images_bare_as_data_urls_and_inside_tool_results() -> None:
    encoded = base64.b64encode(PNG).decode()
    for observation in (
        {"screen_image": f"data:image/png;base64,{encoded}"},
        {"shot": encoded},
        {"result": {"content": [{"type": "image", "data": encoded, "mimeType": "image/png"}]}},
    ):
        out, frame = find_images(observation)
        assert out == observation and frame == PNG
        assert to_rgb(frame).shape == (2, 3, 3)  # type: ignore[union-attr]


def test_lists_that_are_not_pictures_stay_lists() -> None:
    observation = {
        "ram": list(range(128)),
        "ram_shape": [128],  # one dimension: not a picture
        "board": [[0, 1], [1, 0]],  # two, but not named like one
        "scores": [[1, 300, 2]] * 3,  # out of a pixel's range
        "name": "iVBORw0KGgo",  # too short to be a picture
    }
    out, frame = find_images(observation)
    assert out == observation and frame is None

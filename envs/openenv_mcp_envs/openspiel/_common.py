"""What the OpenSpiel env and its game of seats share: the longest text, drawing a
state's text, and the seeded generators of an episode."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["MAX_TEXT", "draw_text", "seeded"]

#: Longest text observation (characters); the state as text is cut there.
MAX_TEXT = 1 << 16
_FONT_PATHS = (
    "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf",
    "/usr/share/fonts/dejavu/DejaVuSansMono.ttf",
    "/usr/share/fonts/TTF/DejaVuSansMono.ttf",
)


@functools.cache
def _font(size: int) -> Any:
    from PIL import ImageFont

    for path in _FONT_PATHS:
        if Path(path).exists():
            return ImageFont.truetype(path, size)
    return ImageFont.load_default(size)


def draw_text(text: str) -> np.ndarray:
    """``text`` in a monospace font, light on dark, as an HxWx3 uint8 array."""
    from PIL import Image, ImageDraw

    lines = (text or " ").splitlines() or [" "]
    lines = [line[:160] for line in lines[:80]]
    font = _font(16)
    left, top, right, bottom = font.getbbox("M")
    cell_w, cell_h = max(1, right - left), max(1, int((bottom - top) * 1.45) + 2)
    width = 24 + cell_w * max(len(line) for line in lines)
    height = 24 + cell_h * len(lines)
    image = Image.new("RGB", (width, height), (32, 34, 40))
    draw = ImageDraw.Draw(image)
    for i, line in enumerate(lines):
        draw.text((12, 12 + i * cell_h), line, font=font, fill=(235, 235, 225))
    return np.asarray(image, dtype=np.uint8).copy()


def seeded(seed: int | None) -> tuple[np.random.RandomState, ...]:
    """The generators of chance, the opponents and a random seat, from ``seed`` (fresh
    entropy for ``None``)."""
    return tuple(
        np.random.RandomState(s.generate_state(4)) for s in np.random.SeedSequence(seed).spawn(3)
    )

"""The trading env's frame: a chart of the episode so far, drawn with Pillow.

Top: each asset's close and the portfolio's value, normalised to 1 on the
episode's first day, over the whole window (the days still to come are
blank), with a legend naming each line and its change. Bottom: the current
weights of the assets and of cash, as bars. 600x400 RGB: the agent profile
sends it as it is (its short edge is already 400 px).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
from PIL import Image, ImageDraw, ImageFont

__all__ = ["HEIGHT", "WIDTH", "draw_chart"]

WIDTH, HEIGHT = 600, 400
#: The line chart's box: left, top, right, bottom.
PLOT = (52, 30, 588, 286)  # the top moves down below the legend
#: The weights panel's box.
BARS = (52, 304, 588, 382)

BACKGROUND = (255, 255, 255)
GRID = (225, 225, 225)
AXIS = (120, 120, 120)
TEXT = (30, 30, 30)
PORTFOLIO = (20, 20, 20)
CASH = (150, 150, 150)
#: Matplotlib's tab10, then darker variants: one colour per asset.
PALETTE = (
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
    (214, 39, 40),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (188, 189, 34),
    (23, 190, 207),
    (127, 127, 127),
)

Font = ImageFont.FreeTypeFont | ImageFont.ImageFont


@functools.cache
def _font(size: int) -> Font:
    """Pillow's own font at ``size`` (no system fonts needed)."""
    try:
        return ImageFont.load_default(size=size)
    except (TypeError, OSError, ImportError):  # Pillow without FreeType: the bitmap font
        return ImageFont.load_default()


def colour(index: int) -> tuple[int, int, int]:
    """The colour of asset ``index``."""
    base = PALETTE[index % len(PALETTE)]
    if index < len(PALETTE):
        return base
    return (base[0] * 2 // 3, base[1] * 2 // 3, base[2] * 2 // 3)


def _nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering ``low..high``."""
    span = max(high - low, 1e-9)
    raw = span / count
    magnitude = 10 ** np.floor(np.log10(raw))
    step = float(min(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw))
    first = np.ceil(low / step) * step
    return [float(v) for v in np.arange(first, high + step * 1e-6, step)]


def draw_chart(
    tickers: Sequence[str],
    dates: Sequence[str],
    closes: np.ndarray,
    values: np.ndarray,
    window: int,
    weights: np.ndarray,
    title: str,
) -> np.ndarray:
    """The frame, ``HEIGHT x WIDTH x 3`` uint8.

    Args:
        tickers: asset names.
        dates: the dates from the episode's first day to today.
        closes: ``(len(dates), assets)`` closes over those days.
        values: the portfolio's value on each of those days.
        window: the episode's length in steps (the x axis spans ``window + 1`` days).
        weights: today's weights, one per asset, then cash.
        title: the line above the chart.
    """
    image = Image.new("RGB", (WIDTH, HEIGHT), BACKGROUND)
    draw = ImageDraw.Draw(image)
    small, normal = _font(11), _font(13)
    draw.text((8, 7), title, fill=TEXT, font=normal)

    lines = [closes[:, i] / closes[0, i] for i in range(closes.shape[1])]
    portfolio = values / values[0] if values[0] > 0 else np.ones_like(values)
    left, top, right, bottom = (float(v) for v in PLOT)

    # The legend, above the plot: one entry per line, with its change since the first day.
    entries = [(t, colour(i), float(lines[i][-1])) for i, t in enumerate(tickers)]
    entries.append(("portfolio", PORTFOLIO, float(portfolio[-1])))
    x, y = left, 27.0
    for name, fill, level in entries:
        label = f"{name} {100 * (level - 1):+.1f}%"
        width = int(draw.textlength(label, font=small)) + 16
        if x + width > right:
            x, y = left, y + 14
        draw.rectangle([(x, y + 4), (x + 11, y + 9)], fill=fill)
        draw.text((x + 15, y), label, fill=TEXT, font=small)
        x += width + 10
    top = y + 18

    stacked = np.concatenate([*lines, portfolio])
    low, high = float(np.min(stacked)), float(np.max(stacked))
    pad = max((high - low) * 0.06, 0.01)
    low, high = low - pad, high + pad

    def x_of(day: int) -> float:
        return left + (right - left) * day / max(window, 1)

    def y_of(value: float) -> float:
        return bottom - (bottom - top) * (value - low) / (high - low)

    ticks = _nice_ticks(low, high)
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 0.01
    decimals = max(2, int(np.ceil(-np.log10(step) - 1e-9)))
    for tick in ticks:
        y = y_of(tick)
        draw.line([(left, y), (right, y)], fill=GRID)
        draw.text((left - 6, y), f"{tick:.{decimals}f}", fill=AXIS, font=small, anchor="rm")
    draw.rectangle((left, top, right, bottom), outline=AXIS)
    draw.text((left, bottom + 3), dates[0], fill=AXIS, font=small, anchor="la")
    today = len(dates) - 1
    if today > 0:
        x = x_of(today)
        draw.line([(x, top), (x, bottom)], fill=GRID, width=1)
        anchor = "ra" if x > right - 40 else "ma"
        if x - left > 70:
            draw.text((x, bottom + 3), dates[-1], fill=AXIS, font=small, anchor=anchor)

    def polyline(series: np.ndarray, fill: tuple[int, int, int], width: int) -> None:
        points = [(x_of(d), y_of(float(v))) for d, v in enumerate(series)]
        if len(points) == 1:
            x, y = points[0]
            draw.ellipse([(x - width, y - width), (x + width, y + width)], fill=fill)
        else:
            draw.line(points, fill=fill, width=width, joint="curve")

    for i, series in enumerate(lines):
        polyline(series, colour(i), 2)
    polyline(portfolio, PORTFOLIO, 3)

    # Today's weights: a bar per asset and one for cash, from the zero line.
    b_left, b_top, b_right, b_bottom = BARS
    zero = (b_top + b_bottom) / 2
    draw.text((8, zero), "weights", fill=TEXT, font=small, anchor="lm")
    names = [*tickers, "cash"]
    fills = [*(colour(i) for i in range(len(tickers))), CASH]
    scale = max(1.0, float(np.max(np.abs(weights)))) if len(weights) else 1.0
    half = (b_bottom - b_top) / 2 - 13
    draw.line([(b_left, zero), (b_right, zero)], fill=AXIS)
    slot = (b_right - b_left) / max(len(names), 1)
    for i, (name, fill) in enumerate(zip(names, fills, strict=True)):
        w = float(weights[i]) if i < len(weights) else 0.0
        cx = b_left + slot * (i + 0.5)
        bar = min(slot * 0.3, 24)
        end = zero - half * w / scale
        draw.rectangle([(cx - bar, min(zero, end)), (cx + bar, max(zero, end))], fill=fill)
        percent = 100 * w
        label = f"{0.0 if abs(percent) < 0.5 else percent:.0f}%"
        if w >= 0:
            draw.text((cx, min(zero, end) - 2), label, fill=AXIS, font=small, anchor="md")
        else:
            draw.text((cx, max(zero, end) + 2), label, fill=AXIS, font=small, anchor="ma")
        draw.text((cx, b_bottom + 3), name, fill=TEXT, font=small, anchor="ma")
    return np.asarray(image, dtype=np.uint8)

"""The board for a model: a text diagram and a drawn image (Pillow, DejaVu Sans glyphs)."""

from __future__ import annotations

import functools
import logging
from pathlib import Path

import chess
import numpy as np
from PIL import Image, ImageDraw, ImageFont

__all__ = ["BOARD_PIXELS", "FONT_PATHS", "diagram", "draw_board"]

log = logging.getLogger(__name__)

#: Pixels of one square, and of the margin holding the coordinates.
SQUARE = 60
MARGIN = 24
#: The image's side: eight squares and two margins.
BOARD_PIXELS = 8 * SQUARE + 2 * MARGIN

#: Fonts with the chess glyphs (U+2654-265F), first found wins (Debian's fonts-dejavu-core).
FONT_PATHS = (
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
)

LIGHT = (240, 217, 181)
DARK = (181, 136, 99)
FRAME = (49, 46, 43)
TEXT = (230, 230, 230)
LAST_LIGHT = (205, 210, 106)
LAST_DARK = (170, 162, 58)
CHECK = (230, 65, 65)

#: The solid chess glyphs, by piece letter: both sides' pieces are drawn with these.
_SOLID = {"p": "♟", "n": "♞", "b": "♝", "r": "♜", "q": "♛", "k": "♚"}


def diagram(board: chess.Board, white_below: bool = True) -> str:
    """Eight ranks of letters (uppercase White, lowercase Black, ``.`` empty), labelled."""
    ranks = range(7, -1, -1) if white_below else range(8)
    files = range(8) if white_below else range(7, -1, -1)
    lines = []
    for rank in ranks:
        cells = []
        for file in files:
            piece = board.piece_at(chess.square(file, rank))
            cells.append(piece.symbol() if piece else ".")
        lines.append(f"{rank + 1} {' '.join(cells)}")
    lines.append("  " + " ".join(chess.FILE_NAMES[f] for f in files))
    return "\n".join(lines)


@functools.cache
def _font(size: int) -> tuple[ImageFont.FreeTypeFont | ImageFont.ImageFont, bool]:
    """A font with chess glyphs (and whether it has them), or Pillow's own for letters."""
    for path in FONT_PATHS:
        if Path(path).is_file():
            try:
                return ImageFont.truetype(path, size), True
            except OSError:
                continue
    log.warning("no DejaVu Sans font found (%s): pieces are drawn as letters", FONT_PATHS[0])
    try:
        return ImageFont.load_default(size), False
    except TypeError:  # Pillow without FreeType: a fixed bitmap font
        return ImageFont.load_default(), False


def _centred(
    draw: ImageDraw.ImageDraw,
    xy: tuple[int, int],
    text: str,
    font: ImageFont.FreeTypeFont | ImageFont.ImageFont,
    fill: str | tuple[int, int, int],
    stroke: int = 0,
) -> None:
    """``text`` centred on ``xy`` (anchors need FreeType; a bitmap font is centred by its
    box), with a black contour ``stroke`` pixels wide."""
    if isinstance(font, ImageFont.FreeTypeFont):
        draw.text(
            xy, text, font=font, fill=fill, anchor="mm", stroke_width=stroke, stroke_fill="black"
        )
        return
    left, top, right, bottom = draw.textbbox((0, 0), text, font=font)
    draw.text((xy[0] - (left + right) / 2, xy[1] - (top + bottom) / 2), text, font=font, fill=fill)


def draw_board(board: chess.Board, white_below: bool = True, *, glyphs: bool = True) -> np.ndarray:
    """The position as an ``HxWx3`` uint8 image: squares, pieces, coordinates, the last
    move's squares and a king in check marked.

    Args:
        board: the position (its last move, if any, is highlighted).
        white_below: White's side at the bottom (else Black's).
        glyphs: draw the chess glyphs when the font has them (else letters).
    """
    image = Image.new("RGB", (BOARD_PIXELS, BOARD_PIXELS), FRAME)
    draw = ImageDraw.Draw(image)
    piece_font, has_glyphs = _font(int(SQUARE * 0.82))
    letter_font, _ = _font(int(SQUARE * 0.45))
    label_font, _ = _font(15)
    glyphs = glyphs and has_glyphs
    last = board.move_stack[-1] if board.move_stack else None
    marked = {last.from_square, last.to_square} if last is not None else set()
    checked = board.king(board.turn) if board.is_check() else None

    def corner(square: chess.Square) -> tuple[int, int]:
        file, rank = chess.square_file(square), chess.square_rank(square)
        col = file if white_below else 7 - file
        row = 7 - rank if white_below else rank
        return MARGIN + col * SQUARE, MARGIN + row * SQUARE

    for square in chess.SQUARES:
        x, y = corner(square)
        light = (chess.square_file(square) + chess.square_rank(square)) % 2 == 1
        colour = LIGHT if light else DARK
        if square in marked:
            colour = LAST_LIGHT if light else LAST_DARK
        draw.rectangle((x, y, x + SQUARE - 1, y + SQUARE - 1), fill=colour)
        if square == checked:
            draw.ellipse((x + 4, y + 4, x + SQUARE - 5, y + SQUARE - 5), fill=CHECK)
        piece = board.piece_at(square)
        if piece is None:
            continue
        centre = (x + SQUARE // 2, y + SQUARE // 2)
        letter = piece.symbol().lower()
        if glyphs:
            # One shape for both sides (the solid glyph): White's filled white inside a
            # black contour, Black's filled black; the glyph's inner lines stay visible.
            white = piece.color == chess.WHITE
            _centred(draw, centre, _SOLID[letter], piece_font, "white" if white else "black", 2)
        else:
            fill, ink = ("white", "black") if piece.color == chess.WHITE else ("black", "white")
            r = SQUARE // 2 - 8
            draw.ellipse(
                (centre[0] - r, centre[1] - r, centre[0] + r, centre[1] + r),
                fill=fill,
                outline="black",
                width=2,
            )
            _centred(draw, centre, piece.symbol().upper(), letter_font, ink)

    for i in range(8):
        file = i if white_below else 7 - i
        rank = 7 - i if white_below else i
        x = MARGIN + i * SQUARE + SQUARE // 2
        for y in (MARGIN // 2, BOARD_PIXELS - MARGIN // 2):
            _centred(draw, (x, y), chess.FILE_NAMES[file], label_font, TEXT)
        y = MARGIN + i * SQUARE + SQUARE // 2
        for x in (MARGIN // 2, BOARD_PIXELS - MARGIN // 2):
            _centred(draw, (x, y), chess.RANK_NAMES[rank], label_font, TEXT)
    return np.asarray(image, dtype=np.uint8)

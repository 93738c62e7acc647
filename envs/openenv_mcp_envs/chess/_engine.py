"""The chess env's opponents: random, a built-in alpha-beta search, and Stockfish.

Every opponent ranks its candidate moves and :func:`pick` chooses among them
with the episode's seeded generator, so the same seed gives the same replies:

* :class:`RandomOpponent` draws uniformly from the legal moves;
* :class:`BuiltinEngine` is a small negamax alpha-beta search (depth 1-3) over
  material and a little central placement, with a short capture search at the
  leaves; it needs nothing but python-chess, so a fresh machine has an engine;
* :class:`StockfishEngine` asks a Stockfish process (python-chess's
  ``SimpleEngine``) for its best lines at a fixed depth, with one thread and a
  hash cleared before every search (``ucinewgame``), so each reply depends on
  the position alone and is the same on every run.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import chess
import chess.engine
import numpy as np

__all__ = [
    "BUILTIN_MAX_DEPTH",
    "BuiltinEngine",
    "Opponent",
    "RandomOpponent",
    "StockfishEngine",
    "TunedStockfish",
    "find_stockfish",
    "pick",
]

log = logging.getLogger(__name__)

#: The deepest search the built-in engine runs (pure Python: deeper is slow).
BUILTIN_MAX_DEPTH = 3
#: Skill at which an engine always plays its best move.
MAX_SKILL = 20
#: Candidates an engine below full skill chooses among.
CANDIDATES = 4
#: Where Debian installs Stockfish (``/usr/games`` is not on every PATH).
STOCKFISH_PLACES = ("/usr/games/stockfish", "/usr/bin/stockfish", "/usr/local/bin/stockfish")

MATE = 100_000
_VALUES = {
    chess.PAWN: 100,
    chess.KNIGHT: 320,
    chess.BISHOP: 330,
    chess.ROOK: 500,
    chess.QUEEN: 900,
    chess.KING: 0,
}
_CENTRE = chess.BB_D4 | chess.BB_E4 | chess.BB_D5 | chess.BB_E5
_WIDE_CENTRE = chess.BB_C3 | chess.BB_D3 | chess.BB_E3 | chess.BB_F3
_WIDE_CENTRE |= chess.BB_C6 | chess.BB_D6 | chess.BB_E6 | chess.BB_F6
_WIDE_CENTRE |= chess.BB_C4 | chess.BB_F4 | chess.BB_C5 | chess.BB_F5
_QUIESCENCE_DEPTH = 3


class Opponent(Protocol):
    """Whoever answers the agent's moves."""

    #: How it is named to a model ("Stockfish 15.1 (depth 2)").
    label: str

    def choose(self, board: chess.Board, rng: np.random.Generator) -> chess.Move:
        """Its move in ``board`` (which has a legal move), drawing any chance from ``rng``."""
        ...

    def close(self) -> None:
        """Free what it holds (an engine process)."""
        ...


def pick(
    ranked: Sequence[chess.Move], best: int, skill: int, rng: np.random.Generator
) -> chess.Move:
    """Choose a move from ``ranked`` (best first; the first ``best`` are equally good).

    At full skill one of the equally best moves, uniformly; below it, with
    probability ``(20 - skill) / 40`` one of the top :data:`CANDIDATES` moves,
    uniformly (so skill 0 plays a weaker move half the time). Always two draws
    from ``rng``, whatever comes of the first.
    """
    weaken = float(rng.random()) < (MAX_SKILL - skill) / (2 * MAX_SKILL)
    draw = float(rng.random())
    pool = ranked[: min(len(ranked), CANDIDATES)] if weaken else ranked[: max(1, best)]
    return pool[min(int(draw * len(pool)), len(pool) - 1)]


class RandomOpponent:
    """A uniformly random legal move (legal moves sorted by UCI, drawn from the seeded RNG)."""

    label = "a random mover"

    def choose(self, board: chess.Board, rng: np.random.Generator) -> chess.Move:
        moves = sorted(board.legal_moves, key=lambda m: m.uci())
        return moves[int(rng.integers(len(moves)))]

    def close(self) -> None:
        return None


# -- the built-in search ---------------------------------------------------------------------


def evaluate(board: chess.Board) -> int:
    """Centipawns for the side to move: material, pawns and minor pieces in the centre."""
    score = 0
    for piece_type, value in _VALUES.items():
        if value:
            white = board.pieces_mask(piece_type, chess.WHITE).bit_count()
            black = board.pieces_mask(piece_type, chess.BLACK).bit_count()
            score += value * (white - black)
    for colour, sign in ((chess.WHITE, 1), (chess.BLACK, -1)):
        pawns = board.pieces_mask(chess.PAWN, colour)
        minors = board.pieces_mask(chess.KNIGHT, colour) | board.pieces_mask(chess.BISHOP, colour)
        score += sign * (
            20 * (pawns & _CENTRE).bit_count() + 10 * (minors & _WIDE_CENTRE).bit_count()
        )
        score += sign * 10 * (minors & (_CENTRE)).bit_count()
    return score if board.turn == chess.WHITE else -score


def _victim(board: chess.Board, move: chess.Move) -> int:
    if board.is_en_passant(move):
        return _VALUES[chess.PAWN]
    piece = board.piece_type_at(move.to_square)
    return _VALUES[piece] if piece is not None else 0


def _ordered(board: chess.Board, moves: list[chess.Move]) -> list[chess.Move]:
    """Promotions and captures first (most valuable victim, least valuable attacker)."""

    def key(move: chess.Move) -> int:
        gain = _VALUES[move.promotion] if move.promotion else 0
        if board.is_capture(move):
            attacker = board.piece_type_at(move.from_square) or chess.PAWN
            gain += 10 * _victim(board, move) - _VALUES[attacker] // 10 + 1
        return -gain

    return sorted(moves, key=key)


class BuiltinEngine:
    """Negamax alpha-beta over :func:`evaluate`, ``depth`` plies (1-3) and a capture search.

    The best root moves are scored exactly, so :func:`pick` can choose among
    equals (and, below full skill, among the top few) with the seeded generator.
    """

    def __init__(self, depth: int, skill: int = MAX_SKILL) -> None:
        if not 1 <= depth <= BUILTIN_MAX_DEPTH:
            raise ValueError(
                f"the built-in engine searches 1-{BUILTIN_MAX_DEPTH} plies, got {depth}"
            )
        self.depth = depth
        self.skill = skill
        self.label = f"the built-in engine (depth {depth}, skill {skill})"
        self.nodes = 0

    def choose(self, board: chess.Board, rng: np.random.Generator) -> chess.Move:
        ranked, best = self.rank(board)
        return pick(ranked, best, self.skill, rng)

    def rank(self, board: chess.Board) -> tuple[list[chess.Move], int]:
        """The legal moves, best first, and how many share the best score.

        The best few (one at full skill, else :data:`CANDIDATES`) are scored exactly,
        ties included: each root move is searched with a window just below the
        worst of the best few so far, so weaker moves fail low cheaply.
        """
        board = board.copy(stack=False)
        keep = 1 if self.skill >= MAX_SKILL else CANDIDATES
        scored: list[tuple[int, int, chess.Move]] = []
        top: list[int] = []  # the best scores so far, best first
        for index, move in enumerate(_ordered(board, list(board.legal_moves))):
            floor = top[keep - 1] - 1 if len(top) >= keep else -MATE - 1
            board.push(move)
            score = -self._search(board, self.depth - 1, -MATE - 1, -floor, 1)
            board.pop()
            scored.append((-score, index, move))
            top = sorted([*top, score], reverse=True)[:keep]
        scored.sort(key=lambda item: (item[0], item[1]))
        best = sum(1 for item in scored if item[0] == scored[0][0])
        return [move for _, _, move in scored], best

    def _search(self, board: chess.Board, depth: int, alpha: int, beta: int, ply: int) -> int:
        self.nodes += 1
        if depth <= 0:  # a leaf: mate is seen, stalemate left to the plies above
            if board.is_check() and not any(board.generate_legal_moves()):
                return -MATE + ply
            return self._quiesce(board, alpha, beta, _QUIESCENCE_DEPTH)
        moves = list(board.legal_moves)
        if not moves:
            return -MATE + ply if board.is_check() else 0
        if board.is_insufficient_material() or board.halfmove_clock >= 100:
            return 0
        for move in _ordered(board, moves):
            board.push(move)
            score = -self._search(board, depth - 1, -beta, -alpha, ply + 1)
            board.pop()
            if score >= beta:
                return score
            alpha = max(alpha, score)
        return alpha

    def _quiesce(self, board: chess.Board, alpha: int, beta: int, depth: int) -> int:
        self.nodes += 1
        stand = evaluate(board)
        if stand >= beta or depth <= 0:
            return stand
        alpha = max(alpha, stand)
        captures = list(board.generate_legal_captures())
        for move in _ordered(board, captures):
            board.push(move)
            score = -self._quiesce(board, -beta, -alpha, depth - 1)
            board.pop()
            if score >= beta:
                return score
            alpha = max(alpha, score)
        return alpha

    def close(self) -> None:
        return None


# -- Stockfish --------------------------------------------------------------------------------


def find_stockfish(path: str | None = None) -> str | None:
    """Stockfish's executable: ``path`` if given (checked), else on PATH, else Debian's places."""
    if path:
        return path if Path(path).is_file() and os.access(path, os.X_OK) else None
    found = shutil.which("stockfish")
    if found:
        return found
    for place in STOCKFISH_PLACES:
        if Path(place).is_file() and os.access(place, os.X_OK):
            return place
    return None


class StockfishEngine:
    """Stockfish at a fixed depth, one thread, a small hash cleared before each search.

    The process starts at the first move asked of it and is restarted once if it
    dies mid-game (each search depends on the position alone, so a restarted
    engine answers the same).
    """

    #: Seconds to start the engine and answer a command (not the search itself).
    TIMEOUT = 20.0

    def __init__(self, path: str, depth: int, skill: int = MAX_SKILL, hash_mib: int = 16) -> None:
        self.path = path
        self.depth = depth
        self.skill = skill
        self.hash_mib = hash_mib
        self._engine: chess.engine.SimpleEngine | None = None
        self.version = "Stockfish"
        self.label = f"Stockfish (depth {depth}, skill {skill})"

    def _start(self) -> chess.engine.SimpleEngine:
        if self._engine is None:
            engine = chess.engine.SimpleEngine.popen_uci(
                [self.path], timeout=self.TIMEOUT, stderr=subprocess.DEVNULL
            )
            try:
                engine.configure({"Threads": 1, "Hash": self.hash_mib})
            except BaseException:
                engine.close()
                raise
            self.version = str(engine.id.get("name", "Stockfish"))
            self.label = f"{self.version} (depth {self.depth}, skill {self.skill})"
            self._engine = engine
        return self._engine

    def rank(
        self, board: chess.Board, depth: int | None = None, skill: int | None = None
    ) -> tuple[list[chess.Move], int]:
        """Stockfish's best lines' first moves, best first (one line at full skill), at
        ``depth`` and ``skill`` (default: the engine's own)."""
        depth = self.depth if depth is None else depth
        skill = self.skill if skill is None else skill
        lines = 1 if skill >= MAX_SKILL else CANDIDATES
        for attempt in (1, 2):
            engine = self._start()
            try:
                # game=object(): a new game each time, so Stockfish clears its hash
                # (ucinewgame) and the search depends on the position alone.
                infos = engine.analyse(
                    board, chess.engine.Limit(depth=depth), multipv=lines, game=object()
                )
                break
            except (chess.engine.EngineTerminatedError, chess.engine.EngineError):
                self.close()
                if attempt == 2:
                    raise
                log.warning("Stockfish (%s) stopped; restarting it", self.path)
        moves = [info["pv"][0] for info in infos if info.get("pv")]
        if not moves:  # no line reported: take its best move
            result = self._start().play(board, chess.engine.Limit(depth=depth), game=object())
            if result.move is None:
                raise chess.engine.EngineError("Stockfish returned no move")
            moves = [result.move]
        return moves, 1

    def choose(self, board: chess.Board, rng: np.random.Generator) -> chess.Move:
        ranked, best = self.rank(board)
        return pick(ranked, best, self.skill, rng)

    def close(self) -> None:
        engine, self._engine = self._engine, None
        if engine is None:
            return
        try:
            with contextlib.suppress(Exception):  # already gone: close() still reaps it
                engine.quit()
        finally:
            engine.close()


class TunedStockfish:
    """A :class:`StockfishEngine` played at another depth and skill, on its process.

    An episode's games may each ask for another strength (per-episode options): every
    strength shares the one engine process, which searches each position afresh anyway.
    Closing it leaves the process to the engine that owns it.
    """

    def __init__(self, engine: StockfishEngine, depth: int, skill: int = MAX_SKILL) -> None:
        self.engine = engine
        self.depth = depth
        self.skill = skill
        self.label = self._label()

    def _label(self) -> str:
        return f"{self.engine.version} (depth {self.depth}, skill {self.skill})"

    def choose(self, board: chess.Board, rng: np.random.Generator) -> chess.Move:
        ranked, best = self.engine.rank(board, self.depth, self.skill)
        self.label = self._label()  # the version is known once the process has started
        return pick(ranked, best, self.skill, rng)

    def close(self) -> None:
        return None

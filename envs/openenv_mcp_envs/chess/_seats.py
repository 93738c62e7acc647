"""Chess with seats: White and Black, each a seat its own client drives (``serve chess --seats``).

The rules are the single-seat env's own: the game holds a
:class:`~openenv_mcp_envs.chess.env.ChessEnv` of the server's config and plays on
its board, so a position, a move read from SAN or UCI (and why one is illegal),
the draws that end a game (``claim_draw``: threefold repetition and the fifty-move
rule as if claimed; always checkmate, stalemate, insufficient material, fivefold
repetition and the 75-move rule), a start position (option ``fen``) and the
built-in player of a seat no client takes (``--opponent``, ``--engine``,
``--depth``, ``--skill``, or the episode's options) are the env's.

What differs is what seats need:

* an action is an id, ``Discrete(1968)``: every UCI move that can be legal in some
  position (a queen's or a knight's move between two squares, and the promotions),
  sorted (:data:`MOVES`); its name is the move's SAN now (``Nf3``), and
  :meth:`ChessGame.parse_action` takes an id, SAN or UCI (UCI in any case, SAN in any
  case where that names one move);
* the observation is the env's, the position's FEN (the same for both seats: FEN has
  no side's perspective), and ``info`` holds the board as the env describes it
  (whose move, a diagram, the FEN), the seat's legal moves and its action mask;
* a move cannot be illegal: the env's illegal step (a penalty, the board unchanged) is
  a refused action here, with the env's reason and the legal moves;
* ``max_moves`` is each seat's: the game is cut short when the side to move has made
  that many moves;
* the reward is +1 to the winner and -1 to the loser at checkmate, 0 to both for a
  draw and for every other move.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import chess
import numpy as np
from gymnasium import spaces

from openenv_mcp.environment import parse_options
from openenv_mcp.errors import ArgumentError, InvalidAction, UnsupportedOption, did_you_mean
from openenv_mcp.seats import SeatedGame
from openenv_mcp_envs.chess._engine import Opponent, RandomOpponent
from openenv_mcp_envs.chess._render import draw_board

#: The longest move text read (the single-seat env's action space's).
_MAX_ACTION = 32

__all__ = ["AGENTS", "MOVES", "SEAT_OPTIONS", "ChessGame", "ChessGameSnapshot"]

#: The seats, White first (White moves first from the usual position).
AGENTS = ("white", "black")
#: The per-episode options that make sense with seats (``color`` does not: each
#: colour is a seat of its own).
SEAT_OPTIONS = ("fen", "opponent", "depth", "skill")


def _every_move() -> tuple[str, ...]:
    """Every UCI move legal in some position, sorted: a queen's or a knight's move from
    one square to another (castling is the king's two squares, ``e1g1``), and each
    pawn promotion (``e7e8q``) from the seventh rank to the eighth or the second to
    the first."""
    moves: set[str] = set()
    for start in chess.SQUARES:
        for end in chess.SQUARES:
            files = abs(chess.square_file(start) - chess.square_file(end))
            ranks = abs(chess.square_rank(start) - chess.square_rank(end))
            if start == end:
                continue
            if files == 0 or ranks == 0 or files == ranks or {files, ranks} == {1, 2}:
                moves.add(chess.Move(start, end).uci())
            rows = (chess.square_rank(start), chess.square_rank(end))
            if files <= 1 and rows in ((6, 7), (1, 0)):
                for piece in (chess.QUEEN, chess.ROOK, chess.BISHOP, chess.KNIGHT):
                    moves.add(chess.Move(start, end, piece).uci())
    return tuple(sorted(moves))


#: The action ids' moves: action ``i`` is the UCI move ``MOVES[i]`` (1968 of them).
MOVES: tuple[str, ...] = _every_move()
#: Each UCI move's action id.
MOVE_IDS: dict[str, int] = {uci: i for i, uci in enumerate(MOVES)}


def _brief(value: object, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


@dataclass(frozen=True)
class _Now:
    """What the position now decides, worked out once per position: how the game ended
    (``None`` while it goes on), whether it was cut short, and the legal moves of the
    side to move as ``(id, SAN)``, sorted by UCI (none once it is over)."""

    outcome: chess.Outcome | None
    cut_short: bool
    legal: list[tuple[int, str]]


@dataclass(frozen=True)
class ChessGameSnapshot:
    """A seated game: its start position, its moves (UCI) and the episode's built-in
    player (``(opponent, depth, skill)`` of its options; ``None``: the server's)."""

    root_fen: str
    moves: tuple[str, ...]
    setting: tuple[str, int | None, int | None] | None


#: A position as planes: 8 ranks x 8 files x 13 (White's pawn, knight, bishop, rook,
#: queen, king; Black's the same; all ones where White is to move), rank 0 the first.
PLANES = spaces.Box(0, 1, (8, 8, 13), np.int8)


def planes(board: chess.Board) -> np.ndarray:
    """``board`` as :data:`PLANES`: the same for both seats (chess hides nothing)."""
    out = np.zeros((8, 8, 13), np.int8)
    for square, piece in board.piece_map().items():
        plane = piece.piece_type - 1 + (0 if piece.color == chess.WHITE else 6)
        out[chess.square_rank(square), chess.square_file(square), plane] = 1
    if board.turn == chess.WHITE:
        out[:, :, 12] = 1
    return out


class ChessGame(SeatedGame):
    """Chess between two seats, ``white`` and ``black``, on the single-seat env's rules.

    Args:
        config: the server's chess config (its draws, move cap and built-in player).
    """

    title = "chess"

    def __init__(self, env: Any) -> None:
        """``env``: a fresh ``ChessEnv`` of the server's config, this game's own (typed
        loosely: the env module makes games, so this one never imports it back)."""
        self.possible_agents = list(AGENTS)
        #: The rules, the board and the built-in players: the single-seat env's own.
        self._env = env
        self._max_moves = env.config.max_moves
        self._opponent: Opponent | None = self._env.default_opponent
        self._setting: tuple[str, int | None, int | None] | None = None
        self._random = RandomOpponent()
        #: The position's outcome and legal moves (``None``: not worked out since it changed).
        self._known: _Now | None = None
        self._actions = spaces.Discrete(len(MOVES))
        self._observations: spaces.Space[Any] = PLANES

    # -- spaces ------------------------------------------------------------------------

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        self._side(agent)
        return self._observations

    def action_space(self, agent: str) -> spaces.Space[Any]:
        self._side(agent)
        return self._actions

    # -- the episode -------------------------------------------------------------------

    def reset(self, seed: int | None = None, options: Mapping[str, Any] | None = None) -> None:
        """A new game from the usual position or option ``fen``, its built-in player from
        the options (``opponent``, ``depth``, ``skill``) or the server's.

        Chess has no chance: ``seed`` changes nothing here; the built-in players draw
        from the generator :meth:`opponent_action` is given.

        Raises:
            UnsupportedOption: ``color`` (each colour is a seat), an option the env does not
                take, a value of the wrong type, a FEN that is no legal position or one
                where the game is over.
        """
        opts = self._options(options)
        env = self._env
        setting = env._setting_of(opts)
        opponent = env._episode_opponent(setting)
        board = env._start_board(opts.get("fen"))
        env._board, self._opponent, self._setting = board, opponent, setting
        self._known = None

    def _options(self, options: Mapping[str, Any] | None) -> dict[str, Any]:
        if not options:
            return {}
        if not isinstance(options, Mapping):
            raise ArgumentError(
                f"expected options as an object, got {type(options).__name__} {_brief(options)}"
            )
        allowed = ", ".join(SEAT_OPTIONS)
        for key in options:
            if key == "color":
                raise UnsupportedOption(
                    "option 'color' chooses the one player's colour, but with seats each colour "
                    "is a seat of its own (white, black): take the seat of the colour you play "
                    f"and leave 'color' out. Per-episode options with seats: {allowed}"
                )
            if key not in SEAT_OPTIONS:
                raise UnsupportedOption(
                    f"option {key!r} cannot be set per episode for chess with seats."
                    f"{did_you_mean(str(key), SEAT_OPTIONS)} Per-episode options with seats: "
                    f"{allowed}"
                )
        return parse_options(self._env, options) or {}

    @property
    def board(self) -> chess.Board:
        """The position now (the game's own board: read it, do not move on it)."""
        board: chess.Board = self._env.board
        return board

    def _side(self, agent: str) -> bool:
        """``agent``'s colour (``chess.WHITE`` is ``True``)."""
        if agent == "white":
            return chess.WHITE
        if agent == "black":
            return chess.BLACK
        raise ArgumentError(f"expected a seat, white or black, got {_brief(agent)}")

    @staticmethod
    def _seat(side: bool) -> str:
        return AGENTS[0] if side == chess.WHITE else AGENTS[1]

    def _now(self) -> _Now:
        """The position's outcome and legal moves (worked out once per position: the board
        changes only in :meth:`reset`, :meth:`apply` and :meth:`restore`)."""
        if self._known is None:
            board = self.board
            outcome = self._env._outcome()
            cut = outcome is None and self._moves_made(board.turn) >= self._max_moves
            legal: list[tuple[int, str]] = []
            if outcome is None and not cut:
                moves = sorted(board.legal_moves, key=lambda m: m.uci())
                legal = [(MOVE_IDS[m.uci()], board.san(m)) for m in moves]
            self._known = _Now(outcome, cut, legal)
        return self._known

    def _outcome(self) -> chess.Outcome | None:
        return self._now().outcome

    def _moves_made(self, side: bool) -> int:
        """The moves ``side`` has made this game."""
        board = self.board
        plies = len(board.move_stack)
        first = board.root().turn
        return (plies + 1) // 2 if side == first else plies // 2

    def _cut_short(self) -> bool:
        """Whether the side to move has made ``max_moves`` moves (and no rule ended it)."""
        return self._now().cut_short

    def to_move(self) -> list[str]:
        if self._outcome() is not None or self._cut_short():
            return []
        return [self._seat(self.board.turn)]

    def legal(self, agent: str) -> list[tuple[int, str]]:
        side = self._side(agent)
        return list(self._now().legal) if side == self.board.turn else []

    def terminations(self) -> dict[str, bool]:
        return dict.fromkeys(self.possible_agents, self._outcome() is not None)

    def truncations(self) -> dict[str, bool]:
        return dict.fromkeys(self.possible_agents, self._cut_short())

    def apply(self, actions: Mapping[str, int]) -> dict[str, float]:
        movers = self.to_move()
        if not movers:
            raise InvalidAction("the game is over: there is no move to play; call reset")
        mover = movers[0]
        if set(actions) != {mover}:
            raise InvalidAction(
                f"expected one move, {mover}'s ({mover} to move), got moves of "
                f"{', '.join(map(str, actions)) or 'nobody'}"
            )
        action = actions[mover]
        if isinstance(action, bool) or not isinstance(action, int | np.integer):
            raise InvalidAction(f"expected an action id, got {_brief(action)}")
        if not 0 <= int(action) < len(MOVES):
            raise InvalidAction(f"action {int(action)} is not a move id (0-{len(MOVES) - 1})")
        move = chess.Move.from_uci(MOVES[int(action)])
        board = self.board
        if move not in board.legal_moves:
            raise InvalidAction(
                f"action {int(action)} ({move.uci()}) is not legal for {mover} now: "
                f"{self._env._why_not(move)}"
            )
        board.push(move)
        self._known = None
        rewards = dict.fromkeys(self.possible_agents, 0.0)
        outcome = self._outcome()
        if outcome is not None and outcome.winner is not None:
            winner = self._seat(outcome.winner)
            for agent in self.possible_agents:
                rewards[agent] = 1.0 if agent == winner else -1.0
        return rewards

    # -- what a seat sees --------------------------------------------------------------

    def observe(self, agent: str) -> tuple[Any, dict[str, Any]]:
        """The position as planes (:func:`planes`; a trainer's array, as PettingZoo's
        chess observes; the FEN is ``info["fen"]``) and ``info``: ``text`` (whose move,
        the env's diagram and FEN, the seat's legal moves), ``fen``, ``turn``, ``you``,
        ``check``, ``result`` and ``termination`` (as the env's), ``truncated``,
        ``action_mask``, ``legal_actions`` (ids), ``legal_action_names`` (SAN) and
        ``legal_moves`` (UCI), the last three in the same order."""
        side = self._side(agent)
        board = self.board
        legal = self.legal(agent)
        mask = [0] * len(MOVES)
        for action, _ in legal:
            mask[action] = 1
        outcome = self._outcome()
        info = {
            "text": self._text(side, legal),
            "fen": board.fen(),
            "turn": self._seat(board.turn),
            "you": agent,
            "check": board.is_check(),
            "result": "*" if outcome is None else outcome.result(),
            "termination": "" if outcome is None else outcome.termination.name.lower(),
            "truncated": self._cut_short(),
            "action_mask": mask,
            "legal_actions": [action for action, _ in legal],
            "legal_action_names": [name for _, name in legal],
            "legal_moves": [MOVES[action] for action, _ in legal],
        }
        return planes(board), info

    def _text(self, side: bool, legal: list[tuple[int, str]]) -> str:
        board = self.board
        you = self._seat(side).capitalize()
        outcome = self._outcome()
        if outcome is not None:
            if outcome.winner is None:
                head = f"You played {you}: a draw."
            else:
                head = f"You played {you}: you {'won' if outcome.winner == side else 'lost'}."
        elif self._cut_short():
            head = (
                f"You played {you}: the game was cut short after {self._max_moves} moves "
                "each (a draw)."
            )
        elif board.turn == side:
            head = f"You play {you}; it is your move."
        else:
            head = f"You play {you}; {self._seat(board.turn).capitalize()} is to move."
        lines = [head, self._env.describe(board)]
        if legal:
            lines.append(f"Your legal moves: {', '.join(name for _, name in legal)}")
        return "\n".join(lines)

    def render(self, viewer: str | None = None) -> np.ndarray:
        """The env's board picture, from ``viewer``'s side (White's for a watcher)."""
        white_below = True if viewer is None else self._side(viewer) == chess.WHITE
        return draw_board(self.board, white_below)

    # -- built-in players --------------------------------------------------------------

    def opponent_action(self, agent: str, rng: np.random.Generator) -> int:
        """The move of the env's built-in player (``--opponent``, or the episode's
        ``opponent`` option) for ``agent``; a uniformly random legal move where that is
        ``none``. Its chance (a random move, a weaker engine move) comes from ``rng``."""
        side = self._side(agent)
        if agent not in self.to_move():
            raise InvalidAction(self._not_now(agent))
        board = self.board
        assert board.turn == side
        opponent = self._opponent if self._opponent is not None else self._random
        return MOVE_IDS[opponent.choose(board, rng).uci()]

    # -- actions -----------------------------------------------------------------------

    def _not_now(self, agent: str) -> str:
        if self._outcome() is not None or self._cut_short():
            outcome = self._outcome()
            how = (
                f"{outcome.result()}, {outcome.termination.name.lower()}"
                if outcome is not None
                else f"cut short after {self._max_moves} moves each"
            )
            return f"the game is over ({how}): there is no legal action; call reset"
        return f"it is not {agent}'s turn: {self._seat(self.board.turn)} is to move"

    def parse_action(self, agent: str, action: Any) -> int:
        """The action id of ``action``: an id (or its digits), a move in UCI (``g1f3``, any
        case) or in SAN (``Nf3``; in another case where that names one move).

        Raises:
            InvalidAction: out of turn, once the game is over, or not a legal move now;
                naming what came, why it is not legal, and the legal moves.
        """
        self._side(agent)
        if agent not in self.to_move():
            raise InvalidAction(self._not_now(agent))
        legal = self.legal(agent)
        if isinstance(action, bool) or not isinstance(action, int | np.integer | str):
            raise InvalidAction(
                f"expected a move: an action id (integer) or a move in SAN (Nf3) or UCI (g1f3), "
                f"got {type(action).__name__} {_brief(action)}; legal: {self._listing(legal)}"
            )
        if isinstance(action, str):
            text = action.strip()
            digits = text.lstrip("-")
            if not (digits and digits.isascii() and digits.isdigit() and len(text) <= 18):
                return self._read(text, legal)
            action = int(text)
        return self._by_id(int(action), legal)

    @staticmethod
    def _listing(legal: list[tuple[int, str]]) -> str:
        return ", ".join(f"{a}={name}" for a, name in legal) or "none"

    def _by_id(self, action: int, legal: list[tuple[int, str]]) -> int:
        if action in {a for a, _ in legal}:
            return action
        if not 0 <= action < len(MOVES):
            raise InvalidAction(
                f"action {action} is not a move id: ids are 0-{len(MOVES) - 1} (every UCI "
                f"move, sorted); legal now: {self._listing(legal)}"
            )
        move = chess.Move.from_uci(MOVES[action])
        raise InvalidAction(
            f"action {action} ({move.uci()}) is not legal now: {self._env._why_not(move)}. "
            f"Legal: {self._listing(legal)}"
        )

    def _read(self, text: str, legal: list[tuple[int, str]]) -> int:
        if len(text) > _MAX_ACTION:
            raise InvalidAction(
                f"expected a move of at most {_MAX_ACTION} characters, in SAN (Nf3) or UCI "
                f"(g1f3), got {len(text)} characters"
            )
        move, problem = self._env._read(text)
        if move is not None:
            return MOVE_IDS[move.uci()]
        key = text.lower().rstrip("+#")
        hits = [(a, name) for a, name in legal if name.lower().rstrip("+#") == key]
        if len(hits) == 1:
            return hits[0][0]
        if hits:
            raise InvalidAction(
                f"{text!r} could be {' or '.join(f'{name} ({MOVES[a]})' for a, name in hits)}: "
                "SAN tells a bishop (B) from a b-pawn (b) by its case; give the move in its "
                "case, or in UCI"
            )
        raise InvalidAction(problem)

    # -- snapshots and the end ---------------------------------------------------------

    def snapshot(self) -> ChessGameSnapshot:
        board = self.board
        return ChessGameSnapshot(
            root_fen=board.root().fen(),
            moves=tuple(m.uci() for m in board.move_stack),
            setting=self._setting,
        )

    def restore(self, saved: Any) -> None:
        if not isinstance(saved, ChessGameSnapshot):
            raise UnsupportedOption(
                f"expected a seated chess game's snapshot, got {type(saved).__name__}"
            )
        opponent = self._env._episode_opponent(saved.setting)
        board = chess.Board(saved.root_fen)
        for uci in saved.moves:
            board.push(chess.Move.from_uci(uci))
        self._env._board, self._opponent, self._setting = board, opponent, saved.setting
        self._known = None

    def close(self) -> None:
        self._env.close()

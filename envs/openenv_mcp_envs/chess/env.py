"""Chess: moves in SAN or UCI against Stockfish, a built-in engine, a random mover, or itself.

The observation is the position's FEN (a string: what a trainer feeds a
model, and what every chess tool reads); ``info`` carries the legal moves (UCI),
the last moves in both notations, the result, and ``text``: a diagram of the
board for a model. The frame is the board drawn with Pillow.

An illegal move is a step, not an error: it costs ``illegal_penalty``, counts
toward ``max_moves``, changes nothing on the board, and ``info["illegal"]``
says why it was illegal, which legal move was meant ("did you mean") and what
the legal moves are. Only what cannot be a move at all (not a string, or over
32 characters) is refused as ``InvalidAction``.

Per-episode options may choose another opponent (``opponent``, and the engine's
``depth`` and ``skill``) than the server's: the task set
(:mod:`openenv_mcp_envs.chess._tasks`) starts each game against its difficulty's.
"""

from __future__ import annotations

import copy
import logging
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import chess
import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from openenv_mcp.environment import Environment, EnvTool, Resources, Serving, StepResult
from openenv_mcp.errors import (
    ArgumentError,
    DependencyNotInstalled,
    InvalidAction,
    UnsupportedOption,
    did_you_mean,
)
from openenv_mcp.spaces import AnyText
from openenv_mcp.tasks import TaskSet
from openenv_mcp_envs.chess._engine import (
    BUILTIN_MAX_DEPTH,
    STOCKFISH_PLACES,
    BuiltinEngine,
    Opponent,
    RandomOpponent,
    StockfishEngine,
    TunedStockfish,
    find_stockfish,
)
from openenv_mcp_envs.chess._narration import ChessNarration
from openenv_mcp_envs.chess._openenv import ChessModels
from openenv_mcp_envs.chess._render import diagram, draw_board
from openenv_mcp_envs.chess._seats import ChessGame
from openenv_mcp_envs.chess._tasks import chess_tasks

if TYPE_CHECKING:
    from openenv_mcp.seats import SeatedGame

__all__ = ["MAX_ACTION", "ChessConfig", "ChessEnv", "ChessSnapshot"]

log = logging.getLogger(__name__)

#: The longest action read as a move (SAN is at most 7 characters; annotations aside).
MAX_ACTION = 32
#: The longest FEN (a legal position's FEN is under 100 characters).
MAX_FEN = 128
_UCI = re.compile(r"[a-h][1-8][a-h][1-8][qrbn]?")
_COLOURS = {chess.WHITE: "white", chess.BLACK: "black"}
#: The default of an option that has none of its type: never passed to reset, which
#: takes only the options the caller set.
_UNSET: Any = None


class ChessConfig(BaseModel):
    """Options of the chess environment."""

    model_config = ConfigDict(extra="forbid")

    opponent: Literal["none", "random", "engine"] = Field(
        "engine",
        description="Who answers your moves: none (self-play: you move for both sides), "
        "random (a uniformly random legal move, seeded), or engine (see --engine).",
    )
    engine: Literal["auto", "stockfish", "builtin"] = Field(
        "auto",
        description="The engine for --opponent engine: stockfish (Debian's stockfish package, "
        "found on PATH, in /usr/games or at --stockfish-path), builtin (a small alpha-beta "
        "search in Python, depth 1-3), or auto (Stockfish where installed, else builtin).",
    )
    depth: int = Field(
        2,
        ge=1,
        le=20,
        description="The engine's search depth in plies (Stockfish 1-20; the built-in engine "
        "1-3, and auto caps it at 3 where it falls back to the built-in one).",
    )
    skill: int = Field(
        20,
        ge=0,
        le=20,
        description="The engine's skill, 0-20: at 20 it plays its best move; below, with "
        "probability (20 - skill)/40 one of its top 4 moves instead (drawn from the seed).",
    )
    color: Literal["white", "black", "random"] = Field(
        "white",
        description="Your colour (random: drawn from the reset seed). In self-play you move "
        "for both sides and this only turns the board.",
    )
    max_moves: int = Field(
        200,
        ge=1,
        le=100_000,
        description="Your steps before the episode is truncated; illegal moves count too.",
    )
    illegal_penalty: float = Field(
        0.1,
        ge=0.0,
        le=1.0,
        description="Reward lost for an illegal move (the board stays; the move still counts).",
    )
    claim_draw: bool = Field(
        True,
        description="End the game at threefold repetition and the fifty-move rule, as if "
        "claimed (--no-claim-draw: only fivefold repetition and the 75-move rule end it).",
    )
    stockfish_path: str | None = Field(
        None, description="Stockfish's executable, where it is not on PATH or in /usr/games."
    )


class ChessOptions(BaseModel):
    """Per-episode options of the chess environment."""

    model_config = ConfigDict(extra="forbid", strict=True)

    # Typed with no default value of their type: an option left out is not passed to reset.
    fen: str = Field(
        _UNSET,
        max_length=MAX_FEN,
        description="Start from this position (FEN) instead of the usual one.",
    )
    color: Literal["white", "black", "random"] = Field(
        _UNSET, description="Your colour this episode (random: drawn from the seed)."
    )
    opponent: Literal["none", "random", "engine"] = Field(
        _UNSET,
        description="Who answers your moves this episode (default: the server's --opponent); "
        "engine is the server's --engine.",
    )
    depth: int = Field(
        _UNSET,
        ge=1,
        le=20,
        description="The engine's search depth this episode, in plies (the built-in engine "
        "1-3); only against the engine.",
    )
    skill: int = Field(
        _UNSET,
        ge=0,
        le=20,
        description="The engine's skill this episode, 0-20; only against the engine.",
    )


class ChessInfo(BaseModel):
    """What ``info`` holds."""

    text: str = Field(description="The board for a model: a diagram and the FEN.")
    fen: str = Field(description="The position (FEN), as the observation.")
    turn: str = Field(description="The side to move: white or black.")
    you: str = Field(description="Your colour: white, black, or both (self-play).")
    legal_moves: list[str] = Field(
        description="The legal moves now, in UCI (empty once the game is over)."
    )
    move: str = Field(description="Your last move in UCI ('' if it was illegal, or none yet).")
    move_san: str = Field(description="Your last move in SAN ('' if none).")
    reply: str = Field(description="The opponent's reply in UCI ('' if none).")
    reply_san: str = Field(description="The opponent's reply in SAN ('' if none).")
    illegal: str = Field(description="Why the last action was illegal ('' if it was legal).")
    illegal_moves: int = Field(description="Illegal moves this episode.")
    moves: int = Field(description="Your steps this episode (illegal ones included).")
    moves_left: int = Field(description="Steps before the episode is truncated.")
    check: bool = Field(description="The side to move is in check.")
    result: str = Field(description="'*' while playing, else '1-0', '0-1' or '1/2-1/2'.")
    history: list[str] = Field(
        default=[], description="Every move from the start, both sides', in UCI (state only)."
    )
    termination: str = Field(
        description="How the game ended ('' while playing): checkmate, stalemate, "
        "insufficient_material, threefold_repetition, fifty_moves, "
        "fivefold_repetition, seventyfive_moves."
    )


@dataclass(frozen=True)
class ChessSnapshot:
    """The whole state of an episode: the board (start and moves), the RNG and the counters."""

    root_fen: str
    moves: tuple[str, ...]
    rng_state: dict[str, Any]
    agent: bool | None
    perspective: bool
    steps: int
    illegal: int
    #: Who answered: ``(opponent, depth, skill)`` of the episode's options (``None``: the
    #: server's opponent; snapshots taken before per-episode opponents hold ``None``).
    opponent: tuple[str, int | None, int | None] | None = None


def _colour(side: bool) -> str:
    return _COLOURS[side]


def _suggest(text: str, sans: list[str], ucis: list[str]) -> str:
    """``" Did you mean 'Nf3'?"`` for a move that is not legal: the same move in another
    case, else the closest move of the same piece (or from the same square), else the
    closest legal move at all; ``""`` when none is close."""
    cased = {move.lower(): move for move in [*sans, *ucis]}
    if text.lower() in cased and cased[text.lower()] != text:
        return f" Did you mean {cased[text.lower()]!r}?"
    core = text.rstrip("+#!?")
    if _UCI.fullmatch(core.lower()):
        pool = [u for u in ucis if u[:2] == core[:2].lower()]
        pool = pool or [u for u in ucis if u[2:4] == core[2:4].lower()]
    elif core.upper().startswith(("O-O", "0-0")):
        pool = [s for s in sans if s.startswith("O-O")]
    else:
        letter = core[:1] if core[:1] in ("N", "B", "R", "Q", "K") else ""
        pool = [s for s in sans if (s[:1] == letter if letter else s[:1].islower())]
    return did_you_mean(text, pool) or did_you_mean(text, [*sans, *ucis])


class ChessEnv(Environment[ChessConfig]):
    """Chess with moves as SAN or UCI strings against a chosen opponent."""

    name: ClassVar[str] = "chess"
    description: ClassVar[str] = (
        "Chess against Stockfish, a built-in engine, a random mover or yourself: moves in "
        "SAN (Nf3) or UCI (g1f3); the board as a picture, a diagram and FEN; +1/0/-1."
    )
    Config: ClassVar[type[BaseModel]] = ChessConfig
    Options = ChessOptions
    Info = ChessInfo
    # Not inline: an engine's search takes a while. No tool per action: thousands of
    # possible moves, step takes them all. A server is ~100 MiB; each episode against
    # Stockfish adds its process (~25 MiB).
    serving = Serving(
        inline=False,
        action_tools=False,
        reward_range=(-1.0, 1.0),
        resources=Resources(cpu=1.0, memory_mib=1024, episodes=32),
    )
    narration = ChessNarration
    openenv_models = ChessModels
    render_mode = "rgb_array"

    def __init__(self, config: ChessConfig) -> None:
        super().__init__(config)
        self.action_space = AnyText(MAX_ACTION)
        self.observation_space = AnyText(MAX_FEN)
        #: ``"stockfish"`` or ``"builtin"`` against an engine, else ``None``.
        self.engine_kind: str | None = None
        #: The Stockfish executable in use, if any.
        self.stockfish_path: str | None = None
        #: The server's opponent (``--opponent``); :attr:`opponent` is this episode's.
        self.default_opponent: Opponent | None = self._make_opponent(config)
        #: Who answers this episode's moves (the server's, unless options chose another).
        self.opponent: Opponent | None = self.default_opponent
        self._setting: tuple[str, int | None, int | None] | None = None
        #: Opponents chosen by per-episode options, by ``(opponent, depth, skill)``.
        self._chosen: dict[tuple[str, int | None, int | None], Opponent | None] = {}
        #: The engine of --engine, made for an episode's options where --opponent is not it.
        self._spare_engine: Opponent | None = None
        self._rng = np.random.default_rng()
        self._board = chess.Board()
        self._agent: bool | None = None if config.opponent == "none" else chess.WHITE
        self._perspective: bool = chess.BLACK if config.color == "black" else chess.WHITE
        self._steps = 0
        self._illegal = 0

    def _make_opponent(self, config: ChessConfig) -> Opponent | None:
        if config.opponent == "none":
            return None
        if config.opponent == "random":
            return RandomOpponent()
        return self._make_engine(config)

    def _make_engine(self, config: ChessConfig) -> Opponent:
        """The engine ``--engine`` names, at ``--depth`` and ``--skill``."""
        path = find_stockfish(config.stockfish_path)
        kind = config.engine
        if kind == "stockfish" or (kind == "auto" and config.stockfish_path):
            if path is None:
                where = (
                    f"--stockfish-path {config.stockfish_path!r} is not an executable file"
                    if config.stockfish_path
                    else f"Stockfish is not on PATH nor at {', '.join(STOCKFISH_PLACES)}"
                )
                raise DependencyNotInstalled(
                    f"--engine {kind} needs Stockfish: {where}. Install Debian's stockfish "
                    "package (apt-get install stockfish, or scripts/ensure_debian.sh stockfish "
                    "stockfish), give --stockfish-path, or use --engine builtin"
                )
            kind = "stockfish"
        elif kind == "auto":
            kind = "stockfish" if path is not None else "builtin"
        if kind == "stockfish":
            assert path is not None
            self.engine_kind, self.stockfish_path = "stockfish", path
            return StockfishEngine(path, config.depth, config.skill)
        depth = config.depth
        if depth > BUILTIN_MAX_DEPTH:
            if config.engine == "builtin":
                raise ArgumentError(
                    f"option 'depth': the built-in engine searches 1-{BUILTIN_MAX_DEPTH} plies, "
                    f"got {depth} (Stockfish goes deeper: --engine stockfish)"
                )
            log.warning(
                "Stockfish not found: the built-in engine plays, at depth %d instead of %d",
                BUILTIN_MAX_DEPTH,
                depth,
            )
            depth = BUILTIN_MAX_DEPTH
        self.engine_kind = "builtin"
        return BuiltinEngine(depth, config.skill)

    def metadata(self) -> dict[str, Any]:
        return {
            "config": self.config.model_dump(mode="json"),
            "opponent": self.default_opponent.label
            if self.default_opponent is not None
            else "none (self-play)",
            "engine": self.engine_kind,
            "stockfish": self.stockfish_path,
        }

    def task_set(self) -> TaskSet:
        return chess_tasks(self._engine_kind())

    def _engine_kind(self) -> str:
        """``stockfish`` or ``builtin``: what --engine plays (found without starting it)."""
        for engine in (self.default_opponent, self._spare_engine):
            if isinstance(engine, StockfishEngine):
                return "stockfish"
            if isinstance(engine, BuiltinEngine):
                return "builtin"
        cfg = self.config
        if cfg.engine != "auto":
            return cfg.engine
        found = cfg.stockfish_path or find_stockfish(None)
        return "stockfish" if found else "builtin"

    def seated_game(self) -> SeatedGame:
        """Chess with seats, White and Black (:class:`~openenv_mcp_envs.chess._seats.ChessGame`):
        this env's rules, draws and move cap; its opponent plays a seat no client takes."""
        return ChessGame(type(self)(self.config))

    def tools(self) -> list[EnvTool]:
        return [
            EnvTool(
                name="legal_moves",
                description=(
                    "Every legal move of the side to move in this episode, in SAN and in UCI "
                    "(step accepts either), with the position's FEN."
                ),
                kind="episode",
                handler=lambda env, _args: env.legal_moves(),
            )
        ]

    def legal_moves(self) -> dict[str, Any]:
        """The legal moves now, in both notations (sorted by UCI), and the position."""
        board = self._board
        over = self._outcome() is not None
        moves = [] if over else sorted(board.legal_moves, key=lambda m: m.uci())
        return {
            "fen": board.fen(),
            "turn": _colour(board.turn),
            "game_over": over,
            "count": len(moves),
            "san": [board.san(m) for m in moves],
            "uci": [m.uci() for m in moves],
        }

    # -- the episode ---------------------------------------------------------------

    def _outcome(self, board: chess.Board | None = None) -> chess.Outcome | None:
        board = self._board if board is None else board
        outcome = board.outcome(claim_draw=False)
        if outcome is not None or not self.config.claim_draw:
            return outcome
        if board.is_repetition(3):
            return chess.Outcome(chess.Termination.THREEFOLD_REPETITION, None)
        if board.halfmove_clock >= 100:
            return chess.Outcome(chess.Termination.FIFTY_MOVES, None)
        return None

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        opts = options or {}
        setting = self._setting_of(opts)
        opponent = self._episode_opponent(setting)
        board = self._start_board(opts.get("fen"))
        colour = opts.get("color") or self.config.color
        # Unseeded, the env's own stream goes on (Gymnasium's meaning); a copy, so that a
        # refused reset leaves it as it was.
        rng = copy.deepcopy(self._rng) if seed is None else np.random.default_rng(seed)
        # chess.WHITE is True; a random colour is the seed's first draw
        side = bool(rng.integers(2) == 0) if colour == "random" else colour == "white"
        agent = None if opponent is None else side
        reply = None
        if opponent is not None and board.turn != agent:
            reply = opponent.choose(board, rng)
            board.push(reply)
            if self._outcome(board) is not None:
                raise UnsupportedOption(
                    "option 'fen': the opponent's first move from this position ends the game "
                    f"({board.result(claim_draw=self.config.claim_draw)}); give a position "
                    "where you have a move to make"
                )
        self._rng, self._board, self._agent, self._perspective = rng, board, agent, side
        self.opponent, self._setting = opponent, setting
        self._steps = self._illegal = 0
        return board.fen(), self._info(reply=reply)

    def _setting_of(self, opts: dict[str, Any]) -> tuple[str, int | None, int | None] | None:
        """The episode's ``(opponent, depth, skill)`` from its options (their types and
        ranges checked against ``Options``), or ``None`` for the server's opponent.

        Raises:
            UnsupportedOption: a depth or skill where the episode's opponent is no engine.
        """
        kind = opts.get("opponent")
        depth, skill = opts.get("depth"), opts.get("skill")
        if kind is None and depth is None and skill is None:
            return None
        kind = kind or self.config.opponent
        if kind != "engine" and (depth is not None or skill is not None):
            given = "depth" if depth is not None else "skill"
            raise UnsupportedOption(
                f"option {given!r} sets the engine's strength, but this episode's opponent is "
                f"{kind!r}: add opponent 'engine' (or leave {given!r} out)"
            )
        return (str(kind), depth, skill)

    def _episode_opponent(
        self, setting: tuple[str, int | None, int | None] | None
    ) -> Opponent | None:
        """The opponent of ``setting`` (made once per setting, and the engine process shared)."""
        if setting is None:
            return self.default_opponent
        if setting in self._chosen:
            return self._chosen[setting]
        kind, depth, skill = setting
        opponent: Opponent | None
        if kind == "none":
            opponent = None
        elif kind == "random":
            opponent = RandomOpponent()
        else:
            opponent = self._tuned(self._engine(), depth, skill)
        self._chosen[setting] = opponent
        return opponent

    def _engine(self) -> BuiltinEngine | StockfishEngine:
        """The engine of --engine: the server's opponent where it is that engine."""
        engine = self.default_opponent
        if not isinstance(engine, (BuiltinEngine, StockfishEngine)):
            if self._spare_engine is None:
                self._spare_engine = self._make_engine(self.config)
            engine = self._spare_engine
        assert isinstance(engine, (BuiltinEngine, StockfishEngine))
        return engine

    def _tuned(
        self, engine: BuiltinEngine | StockfishEngine, depth: int | None, skill: int | None
    ) -> Opponent:
        """``engine`` at the episode's depth and skill (each defaults to the engine's)."""
        if depth is None and skill is None:
            return engine
        if isinstance(engine, StockfishEngine):
            return TunedStockfish(
                engine,
                engine.depth if depth is None else depth,
                engine.skill if skill is None else skill,
            )
        if depth is not None and depth > BUILTIN_MAX_DEPTH:
            raise UnsupportedOption(
                f"option 'depth': the built-in engine searches 1-{BUILTIN_MAX_DEPTH} plies, "
                f"got {depth} (Stockfish goes deeper: --engine stockfish)"
            )
        return BuiltinEngine(
            engine.depth if depth is None else depth, engine.skill if skill is None else skill
        )

    def _start_board(self, fen: str | None) -> chess.Board:
        """The board of option ``fen`` (its type and length checked against ``Options``):
        a legal position where the game is not over."""
        if fen is None:
            return chess.Board()
        try:
            board = chess.Board(fen)
        except ValueError as exc:
            raise UnsupportedOption(f"option 'fen' {fen!r} is not a FEN: {exc}") from None
        status = board.status()
        if status != chess.STATUS_VALID:
            problems = ", ".join(
                (flag.name or "").lower().replace("_", " ")
                for flag in chess.Status
                if flag and flag in status and flag.name
            )
            raise UnsupportedOption(f"option 'fen' {fen!r} is not a legal position: {problems}")
        outcome = self._outcome(board)
        if outcome is not None:
            raise UnsupportedOption(
                f"option 'fen' {fen!r}: the game is already over there "
                f"({outcome.termination.name.lower()})"
            )
        return board

    def parse_action(self, action: Any) -> str:
        if not isinstance(action, str):
            text = repr(action)
            brief = text if len(text) <= 40 else text[:37] + "..."
            raise InvalidAction(
                f"expected a move as a string, in SAN (Nf3) or UCI (g1f3), got "
                f"{type(action).__name__} {brief}"
            )
        if len(action) > MAX_ACTION:
            raise InvalidAction(
                f"expected a move of at most {MAX_ACTION} characters, in SAN (Nf3) or UCI "
                f"(g1f3), got {len(action)} characters"
            )
        return action

    def step(self, action: Any) -> StepResult:
        board, cfg = self._board, self.config
        mover = board.turn
        self._steps += 1
        move, problem = self._read(str(action))
        if move is None:
            self._illegal += 1
            return StepResult(
                board.fen(),
                -cfg.illegal_penalty,
                False,
                self._steps >= cfg.max_moves,
                self._info(illegal=problem),
            )
        board.push(move)
        outcome = self._outcome()
        reply = None
        if outcome is None and self.opponent is not None:
            reply = self.opponent.choose(board, self._rng)
            board.push(reply)
            outcome = self._outcome()
        reward = 0.0
        if outcome is not None and outcome.winner is not None:
            reward = 1.0 if outcome.winner == mover else -1.0
        terminated = outcome is not None
        truncated = not terminated and self._steps >= cfg.max_moves
        return StepResult(
            board.fen(), reward, terminated, truncated, self._info(move=move, reply=reply)
        )

    # -- reading moves -----------------------------------------------------------------

    def _read(self, action: str) -> tuple[chess.Move | None, str]:
        """The legal move ``action`` names, or ``None`` and why it is not one."""
        board = self._board
        text = action.strip()
        legal = sorted(board.legal_moves, key=lambda m: m.uci())
        move: chess.Move | None = None
        if not text:
            reason = "no move was given"
        elif _UCI.fullmatch(text.lower()):
            candidate = chess.Move.from_uci(text.lower())
            if candidate in board.legal_moves:
                move = candidate
            else:
                reason = self._why_not(candidate)
        else:
            try:
                move = board.parse_san(text)
            except chess.AmbiguousMoveError:
                reason = f"{text} is ambiguous: " + " or ".join(
                    board.san(m) for m in legal if self._same_san(m, text)
                )
            except chess.IllegalMoveError:
                reason = self._why_not_san(text)
            except ValueError:
                reason = "it is neither a UCI move (e2e4, g1f3) nor a SAN move (e4, Nf3, O-O)"
            if move is not None and (not move or move not in board.legal_moves):
                move, reason = None, f"{text} is not a legal move"
        if move is not None:
            return move, ""
        sans = [board.san(m) for m in legal]
        hint = _suggest(text, sans, [m.uci() for m in legal])
        shown = repr(text) if len(text) <= MAX_ACTION else repr(text[:MAX_ACTION] + "...")
        listed = ", ".join(sans)
        return None, (
            f"Illegal move {shown} for {_colour(board.turn)}: {reason}.{hint} "
            f"Legal moves: {listed}."
        )

    def _same_san(self, move: chess.Move, text: str) -> bool:
        """Whether ``move`` fits the ambiguous SAN ``text`` (same piece and target square)."""
        board = self._board
        target = re.search(r"([a-h][1-8])", text[1:] if text[:1] in "NBRQK" else text)
        piece = board.piece_at(move.from_square)
        letter = text[:1] if text[:1] in "NBRQK" else "P"
        return (
            target is not None
            and chess.square_name(move.to_square) == target.group(1)
            and piece is not None
            and piece.symbol().upper() == letter
        )

    def _why_not_san(self, text: str) -> str:
        """Why the well-formed SAN ``text`` is illegal here, in words."""
        board = self._board
        core = text.rstrip("+#!?")
        if core.upper().startswith(("O-O", "0-0")):
            return (
                "castling that way is not allowed now (the king or rook has moved, a square "
                "between is taken or attacked, or the king is in check)"
            )
        squares = re.findall(r"[a-h][1-8]", core)
        symbol = core[:1] if core[:1] in ("N", "B", "R", "Q", "K") else "P"
        piece_type = chess.Piece.from_symbol(symbol).piece_type
        name, side = chess.piece_name(piece_type), _colour(board.turn)
        if not squares:
            return f"{text} is not a legal move in this position"
        target = chess.parse_square(squares[-1])
        if not board.pieces(piece_type, board.turn):
            return f"{side} has no {name} left"
        occupant = board.piece_at(target)
        if occupant is not None and occupant.color == board.turn:
            return f"{squares[-1]} holds {side}'s own {chess.piece_name(occupant.piece_type)}"
        if board.is_check():
            return f"{side} is in check, and no {name} move to {squares[-1]} answers it"
        return f"no {side} {name} can move to {squares[-1]} now"

    def _why_not(self, move: chess.Move) -> str:
        """Why the well-formed UCI ``move`` is illegal here, in words."""
        board = self._board
        start, end = chess.square_name(move.from_square), chess.square_name(move.to_square)
        piece = board.piece_at(move.from_square)
        if piece is None:
            return f"there is no piece on {start}"
        name = chess.piece_name(piece.piece_type)
        if piece.color != board.turn:
            return (
                f"the {name} on {start} is {_colour(piece.color)}'s, and it is "
                f"{_colour(board.turn)}'s move"
            )
        if piece.piece_type == chess.PAWN and move.promotion is None:
            promoted = chess.Move(move.from_square, move.to_square, chess.QUEEN)
            if promoted in board.legal_moves:
                return f"a pawn reaching the last rank must promote: add q, r, b or n ({end}q)"
        if board.is_castling(move):
            if board.is_check():
                return "you cannot castle out of check"
            if not board.has_castling_rights(board.turn):
                return f"{_colour(board.turn)} may no longer castle (the king or rook has moved)"
            return (
                "castling that way is not allowed now (a square between is taken or attacked, "
                "or that rook has moved)"
            )
        if board.is_pseudo_legal(move):
            return f"moving the {name} from {start} to {end} would leave your king in check"
        if board.is_check():
            return f"your king is in check, and the {name} on {start} cannot move to {end}"
        return f"the {name} on {start} cannot move to {end}"

    # -- what is reported -------------------------------------------------------------

    def _info(
        self,
        *,
        move: chess.Move | None = None,
        reply: chess.Move | None = None,
        illegal: str = "",
    ) -> dict[str, Any]:
        board = self._board
        outcome = self._outcome()
        info = self._status(board, outcome)

        def san_of(m: chess.Move | None, plies_back: int) -> str:
            if m is None:
                return ""
            before = board.copy()
            for _ in range(plies_back):
                before.pop()
            return before.san(m)

        info.update(
            move=move.uci() if move else "",
            move_san=san_of(move, 2 if reply is not None else 1) if move else "",
            reply=reply.uci() if reply else "",
            reply_san=san_of(reply, 1) if reply else "",
            illegal=illegal,
        )
        return info

    def _status(self, board: chess.Board, outcome: chess.Outcome | None) -> dict[str, Any]:
        cfg = self.config
        return {
            "text": self.describe(board),
            "fen": board.fen(),
            "turn": _colour(board.turn),
            "you": "both" if self._agent is None else _colour(self._agent),
            "legal_moves": []
            if outcome is not None
            else sorted(m.uci() for m in board.legal_moves),
            "illegal_moves": self._illegal,
            "moves": self._steps,
            "moves_left": max(0, cfg.max_moves - self._steps),
            "check": board.is_check(),
            "result": "*" if outcome is None else outcome.result(),
            "termination": "" if outcome is None else outcome.termination.name.lower(),
        }

    @property
    def board(self) -> chess.Board:
        """The position now (the episode's own board: read it, do not move on it)."""
        return self._board

    @property
    def agent(self) -> bool | None:
        """The agent's colour (``chess.WHITE`` is ``True``), or ``None`` in self-play."""
        return self._agent

    def describe(self, board: chess.Board) -> str:
        """A position for a model: how it stands, a diagram and the FEN (``info["text"]``)."""
        outcome = self._outcome(board)
        if outcome is not None:
            head = f"Game over: {outcome.result()} ({outcome.termination.name.lower()})"
        else:
            head = f"{_colour(board.turn).capitalize()} to move"
            if board.is_check():
                head += " (in check)"
        if board.move_stack:
            head += f", last move {board.peek().uci()}"
        return f"{head}.\n{diagram(board)}\nFEN {board.fen()}"

    def state(self) -> dict[str, Any]:
        history = [m.uci() for m in self._board.move_stack]
        return {**self._status(self._board, self._outcome()), "history": history}

    def render(self) -> np.ndarray:
        return draw_board(self._board, self._perspective)

    def close(self) -> None:
        for opponent in (self.default_opponent, self._spare_engine):
            if opponent is not None:
                opponent.close()

    # -- snapshots -----------------------------------------------------------------

    def snapshot(self) -> ChessSnapshot:
        board = self._board
        return ChessSnapshot(
            root_fen=board.root().fen(),
            moves=tuple(m.uci() for m in board.move_stack),
            rng_state=dict(self._rng.bit_generator.state),
            agent=self._agent,
            perspective=self._perspective,
            steps=self._steps,
            illegal=self._illegal,
            opponent=self._setting,
        )

    def restore(self, snapshot: Any) -> None:
        if not isinstance(snapshot, ChessSnapshot):
            raise UnsupportedOption(f"expected a chess snapshot, got {type(snapshot).__name__}")
        opponent = self._episode_opponent(snapshot.opponent)
        board = chess.Board(snapshot.root_fen)
        for uci in snapshot.moves:
            board.push(chess.Move.from_uci(uci))
        rng = np.random.default_rng()
        rng.bit_generator.state = snapshot.rng_state
        self._board, self._rng = board, rng
        self._agent, self._perspective = snapshot.agent, snapshot.perspective
        self._steps, self._illegal = snapshot.steps, snapshot.illegal
        self.opponent, self._setting = opponent, snapshot.opponent


if TYPE_CHECKING:  # mypy checks that the env has what its narration reads (ChessView)
    from openenv_mcp_envs.chess._narration import ChessView

    def _narrated(env: ChessEnv) -> ChessView:
        return env

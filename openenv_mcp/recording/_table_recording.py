"""A game of seats recorded whole (``serve ENV --seats ... --record DIR``), read back and
replayed exactly.

Every seat of a table is an episode of its own, recorded by its own pipeline as any
episode is (its view, its actions, its rewards); its start record says which table and
seat it is (``table``, ``seat``) and names the table's file (``table_recording``). A
seat's moves alone cannot replay the game (the others' moves are not its to make), so
:func:`~openenv_mcp.recording.replay` refuses a seat's file and names the table's.

The table's joint record is one JSON Lines file per game, ``DIR/tb-<digest>-<n>.jsonl``
(``n`` counts the games of one table), written as moves are played and flushed after
every record, private (0600) as every recording:

* ``table``: the environment, its class and config, the seed and options, the seats
  (``seats``: every seat; ``clients``: those clients drive, the rest are the game's
  built-in players), the package versions, and every seat's observation digest;
* ``move``: every acting seat's action and its name, every seat's reward of the move,
  every seat's observation digest after it, terminations and truncations;
* ``end``: why it ended (``over``: the game ended; ``reset``: a new game on the table
  began first; ``closed``: every seat closed first), moves, every seat's return.

An observation digest is the SHA-256 of the observation's bytes (arrays: dtype, shape and
data; the rest as JSON, each part typed and counted), so two observations with the same
digest are the same value. :func:`replay_table` rebuilds the game from the env class and
config (``env_cls(config).seated_game()``), resets it with the seed and options, applies
every move and checks every seat's reward, digest, termination and truncation.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import numpy as np
import orjson

from openenv_mcp.codecs import to_jsonable
from openenv_mcp.errors import ArgumentError, RecordingFailed
from openenv_mcp.recording._format import _read_lines, versions
from openenv_mcp.recording._replay import _recorded_env
from openenv_mcp.recording._writer import _cause, _fresh_file
from openenv_mcp.wire.handles import public_id

if TYPE_CHECKING:
    from openenv_mcp.environment import Environment
    from openenv_mcp.seats._game import SeatedGame
    from openenv_mcp.seats._table import Table, _Played

__all__ = [
    "TABLE_FORMAT",
    "TableRecorder",
    "TableRecording",
    "TableReplayReport",
    "is_table_recording",
    "observation_digest",
    "read_table_recording",
    "replay_table",
]

log = logging.getLogger("openenv_mcp.recording")

#: The table recording format's version, in every ``table`` record.
TABLE_FORMAT = 1
#: Mismatches a replay lists at most (it counts the rest).
_MAX_LISTED = 20


# -- observation digests -----------------------------------------------------------------


def observation_digest(observation: Any) -> str:
    """The SHA-256 (hex) of ``observation``: arrays by dtype, shape and bytes; dicts,
    lists and tuples part by part; anything else as JSON."""
    sha = hashlib.sha256()
    _feed(sha, observation)
    return sha.hexdigest()


def _feed(sha: Any, value: Any) -> None:
    if isinstance(value, np.ndarray | np.generic):
        array = np.ascontiguousarray(value)
        sha.update(f"a{array.dtype.str}{array.shape}:".encode())
        sha.update(array.tobytes())
    elif isinstance(value, Mapping):
        sha.update(f"d{len(value)}:".encode())
        for key in sorted(value, key=str):
            _feed(sha, str(key))
            _feed(sha, value[key])
    elif isinstance(value, list | tuple):
        sha.update(f"l{len(value)}:".encode())
        for item in value:
            _feed(sha, item)
    else:
        data = orjson.dumps(value, default=to_jsonable)
        sha.update(f"j{len(data)}:".encode())
        sha.update(data)


def _digests(game: SeatedGame) -> dict[str, str]:
    return {a: observation_digest(game.observe(a)[0]) for a in game.possible_agents}


# -- writing -----------------------------------------------------------------------------


class TableRecorder:
    """Writes one table's games into ``directory``: its hooks are the table's
    ``on_reset`` (:meth:`start`) and ``on_move`` (:meth:`move`), called under the
    table's lock.

    A write that fails (the disk full, the file deleted) stops this game's record (its
    file is closed as it is, without an end record: it reads as incomplete) and is
    logged; the seats play on (each seat's own recording refuses or goes on as the
    server's ``--record-errors`` says).

    Args:
        directory: the recording directory (made private if missing).
        table_id: the table's handle (never written: its public id is).
        prototype: the served environment (its class and config are what replays).
    """

    def __init__(
        self, directory: str | os.PathLike[str], table_id: str, prototype: Environment[Any]
    ) -> None:
        self.directory = Path(directory)
        self.public_id = public_id(table_id)
        cls = type(prototype)
        self.describe: dict[str, Any] = {
            "env": cls.name,
            "env_class": f"{cls.__module__}:{cls.__qualname__}",
            "config": prototype.config.model_dump(mode="json"),
        }
        self.path: Path | None = None
        self._file: IO[bytes] | None = None
        self._games = 0
        self._moves = 0
        self._returns: dict[str, float] = {}

    def seat_marks(self, agent: str) -> dict[str, Any]:
        """What a seat's own recording says of its table: the table, the seat, and the
        file of the game it is a seat of."""
        marks: dict[str, Any] = {"table": self.public_id, "seat": agent}
        if self.path is not None:
            marks["table_recording"] = self.path.name
        return marks

    def start(self, table: Table) -> None:
        """A new game on the table (the last one, unfinished, ends as ``reset``)."""
        self.end("reset")
        game = table.game
        try:
            self._games, self.path, self._file = _fresh_file(
                self.directory, self.public_id, self._games
            )
        except OSError as exc:
            log.warning("table %s not recorded: %s", self.public_id, _cause(exc))
            self._file = self.path = None  # no file: the seats name none
            return
        self._moves = 0
        self._returns = dict.fromkeys(game.possible_agents, 0.0)
        self._write(
            {
                "kind": "table",
                "format": TABLE_FORMAT,
                **self.describe,
                "title": game.title,
                "table": self.public_id,
                "game": self._games,
                "seed": table.seed,
                "options": table.options,
                "seats": list(game.possible_agents),
                "clients": list(table.clients),
                "time": time.time(),
                "versions": versions(),
                "observations": _digests(game),
            }
        )

    def move(self, table: Table, played: _Played) -> None:
        """One move (every seat of a joint move), flushed before any seat is answered;
        the game's end record follows the move that ends it."""
        if self._file is None:
            return
        game = table.game
        self._moves += 1
        for agent, reward in played.rewards.items():
            self._returns[agent] = self._returns.get(agent, 0.0) + reward
        self._write(
            {
                "kind": "move",
                "move": self._moves,
                "actions": played.actions,
                "names": played.names,
                "rewards": {a: played.rewards.get(a, 0.0) for a in game.possible_agents},
                "observations": _digests(game),
                "terminations": game.terminations(),
                "truncations": game.truncations(),
            }
        )
        if game.over:
            self.end("over")

    def end(self, status: str) -> None:
        """Close the game's file with its end record (once)."""
        if self._file is None:
            return
        self._write(
            {
                "kind": "end",
                "status": status,
                "moves": self._moves,
                "returns": self._returns,
                "time": time.time(),
            }
        )
        self._close()

    def _write(self, record: dict[str, Any]) -> None:
        assert self._file is not None
        try:
            if os.fstat(self._file.fileno()).st_nlink == 0:
                raise RecordingFailed(f"the recording {self.path} was deleted while it was written")
            self._file.write(
                orjson.dumps(record, default=to_jsonable, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n"
            )
            self._file.flush()
        except OSError as exc:
            log.warning("table %s: recording stopped: %s", self.public_id, _cause(exc))
            self._close()
        except RecordingFailed as exc:
            log.warning("table %s: recording stopped: %s", self.public_id, exc)
            self._close()

    def _close(self) -> None:
        file, self._file = self._file, None
        if file is not None:
            with contextlib.suppress(OSError):
                file.close()


# -- reading -----------------------------------------------------------------------------


@dataclass
class TableRecording:
    """A recorded game of seats, read back.

    Attributes:
        path: its file.
        start: the ``table`` record.
        moves: every ``move`` record, in order.
        end: the end record, or ``None`` when the file has none (``complete`` false).
        problem: why reading stopped early (a torn last line), else ``""``.
    """

    path: Path
    start: dict[str, Any]
    moves: list[dict[str, Any]] = field(default_factory=list)
    end: dict[str, Any] | None = None
    problem: str = ""

    @property
    def complete(self) -> bool:
        """Whether the game's file was closed with its end record."""
        return self.end is not None


def _first_record(path: Path) -> Any:
    with open(path, "rb") as f:
        line = f.readline()
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return None


def is_table_recording(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a table's joint record (its first record is ``table``)."""
    first = _first_record(Path(path))
    return isinstance(first, dict) and first.get("kind") == "table"


def read_table_recording(path: str | os.PathLike[str]) -> TableRecording:
    """Read one table's game.

    Raises:
        ArgumentError: the file is not a table recording, or of another format.
    """
    path = Path(path)
    lines, start = _read_lines(path)
    if not isinstance(start, dict) or start.get("kind") != "table":
        found = start.get("kind") if isinstance(start, dict) else None
        raise ArgumentError(
            f"{path} is not a table recording: expected a 'table' record first, got "
            f"{'no record' if found is None else repr(found)}"
        )
    if start.get("format") != TABLE_FORMAT:
        raise ArgumentError(
            f"{path} is table recording format {start.get('format')!r}; this openenv-mcp "
            f"reads {TABLE_FORMAT}"
        )
    recording = TableRecording(path=path, start=start)
    for number, line in enumerate(lines[1:], start=2):
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            recording.problem = f"line {number} is torn (the server stopped while writing it)"
            break
        kind = record.get("kind") if isinstance(record, dict) else None
        if kind == "move":
            recording.moves.append(record)
        elif kind == "end":
            recording.end = record
            break
    return recording


# -- replaying ---------------------------------------------------------------------------


@dataclass
class TableReplayReport:
    """What :func:`replay_table` found.

    Attributes:
        path: the recording.
        seats: the game's seats.
        moves: moves replayed.
        recorded: moves the recording has.
        mismatches: every difference, ``"move N, SEAT: what"`` (the first
            :data:`_MAX_LISTED`; ``more`` counts the rest); empty when all matched.
        stopped: why replay stopped before the recording's last move (a recorded
            action not legal in the replayed game), else ``""``.
        complete: whether the recording has its end record.
    """

    path: Path
    seats: list[str]
    moves: int = 0
    recorded: int = 0
    mismatches: list[str] = field(default_factory=list)
    more: int = 0
    stopped: str = ""
    complete: bool = True

    @property
    def ok(self) -> bool:
        return not self.mismatches and not self.stopped

    def _differs(self, where: str, what: str) -> None:
        if len(self.mismatches) < _MAX_LISTED:
            self.mismatches.append(f"{where}: {what}")
        else:
            self.more += 1

    def text(self) -> str:
        partial = "" if self.complete else " (an incomplete recording: the server stopped)"
        if self.ok:
            return (
                f"{self.path}: replayed the game's {self.moves} moves ({', '.join(self.seats)})"
                f"{partial}; every seat's rewards, observations, terminations and "
                "truncations match exactly"
            )
        lines = [f"{self.path}: differs{partial}:"]
        lines += [f"  {m}" for m in self.mismatches]
        if self.more:
            lines.append(f"  ... and {self.more} more")
        if self.stopped:
            lines.append(f"  {self.stopped}")
        return "\n".join(lines)


def replay_table(
    path: str | os.PathLike[str], *, allow_modules: Iterable[str] = ()
) -> TableReplayReport:
    """Re-play a recorded game of seats in this process and check every seat's reward,
    observation (its digest), termination and truncation after every move.

    The environment class is resolved as :func:`~openenv_mcp.recording.replay` resolves
    it: only among registered environments and installed modules (``allow_modules``:
    those the user trusts by name, ``--allow-module``).

    Raises:
        ArgumentError: not a table recording, recorded without a seed, its environment
            cannot be made here or has no game of seats.
    """
    recording = read_table_recording(path)
    start = recording.start
    with _recorded_env(recording.path, start, allow_modules, "games") as (env_cls, env):
        pass  # its game is made outside the recording's data
    try:
        game = env.seated_game()
        if game is None:
            raise ArgumentError(
                f"{recording.path} is a game of seats, but {env_cls.name} with config "
                f"{start['config']} has one player here (seated_game() is None)"
            )
        try:
            return _replay_game(recording, game)
        finally:
            game.close()
    finally:
        env.close()


def _replay_game(recording: TableRecording, game: SeatedGame) -> TableReplayReport:
    start = recording.start
    seats = list(game.possible_agents)
    report = TableReplayReport(
        recording.path, seats, recorded=len(recording.moves), complete=recording.complete
    )
    if list(start.get("seats", [])) != seats:
        report.stopped = (
            f"the recorded seats {start.get('seats')} are not the game's here ({seats})"
        )
        return report
    game.reset(start["seed"], start.get("options"))
    _check_digests(report, "at the start", game, start.get("observations", {}))
    for record in recording.moves:
        where = f"move {record.get('move')}"
        actions: dict[str, Any] = record.get("actions", {})
        movers = [] if game.over else game.to_move()
        if sorted(actions) != sorted(movers):
            report.stopped = (
                f"{where}: the recording has {', '.join(sorted(actions)) or 'nobody'} "
                f"moving, the replayed game {', '.join(movers) or 'nobody'} (it diverged: "
                "replay stopped here)"
            )
            return report
        for agent, action in actions.items():
            legal = {a for a, _ in game.legal(agent)}
            if not isinstance(action, int) or action not in legal:
                report.stopped = (
                    f"{where}, {agent}: the recorded action {action!r} is not legal in the "
                    f"replayed game (legal: {sorted(legal)}); replay stopped here"
                )
                return report
        rewards = {a: float(r) for a, r in game.apply(actions).items()}
        recorded_rewards: dict[str, Any] = record.get("rewards", {})
        for agent in seats:
            got, expected = rewards.get(agent, 0.0), recorded_rewards.get(agent)
            if got != expected:
                report._differs(f"{where}, {agent}", f"reward {got!r}, recorded {expected!r}")
        _check_digests(report, where, game, record.get("observations", {}))
        for key, now in (
            ("terminations", game.terminations()),
            ("truncations", game.truncations()),
        ):
            recorded = record.get(key, {})
            for agent in seats:
                if bool(now[agent]) != recorded.get(agent):
                    report._differs(
                        f"{where}, {agent}",
                        f"{key[:-1]} {bool(now[agent])}, recorded {recorded.get(agent)!r}",
                    )
        report.moves += 1
    return report


def _check_digests(
    report: TableReplayReport, where: str, game: SeatedGame, recorded: Mapping[str, Any]
) -> None:
    for agent, digest in _digests(game).items():
        if recorded.get(agent) != digest:
            report._differs(
                f"{where}, {agent}",
                f"the observation differs (digest {digest[:12]}, recorded "
                f"{str(recorded.get(agent))[:12]})",
            )

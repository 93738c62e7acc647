"""Tables of seats on a server (``serve ENV --seats``): ``reset`` starts a game and hands
out its seats' handles, ``join`` takes an open seat, and every seat is an episode of the
server's table of episodes (its own handle, lock, pipeline and recording).

A seat's handle is its episode's handle: ``step``, ``state`` and ``legal_actions`` take
it as ``seat`` (or ``episode_id``) and reach that seat only. The game's own handle
(``table_id``) lets another client take an open seat; it reaches no seat's view.
"""

from __future__ import annotations

import logging
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio.to_thread

from openenv_mcp.codecs import Frames
from openenv_mcp.environment import Environment
from openenv_mcp.errors import ArgumentError, UnknownEpisode
from openenv_mcp.pipeline import Look, Reset
from openenv_mcp.pipeline.recorder import Recorder
from openenv_mcp.pipeline.view import Reply
from openenv_mcp.recording import TableRecorder
from openenv_mcp.seats import Table, parse_seats
from openenv_mcp.server._settings import ServerSettings
from openenv_mcp.server.episodes._episodes import Caller, Episode, EpisodeTable
from openenv_mcp.server.episodes._runtime import LocalRef
from openenv_mcp.server.episodes._seat_env import MARGIN, SeatEnv
from openenv_mcp.server.tools._results import text_block
from openenv_mcp.sharding import with_shard
from openenv_mcp.wire.handles import public_id

__all__ = ["Tables"]

log = logging.getLogger("openenv_mcp.server")

#: Most open tables (with a seat no client holds) one server keeps for ``join``.
MAX_OPEN_TABLES = 1024


@dataclass(eq=False)
class _Seated:
    """A table and its seats' episodes, by seat."""

    table: Table
    episodes: dict[str, Episode] = field(default_factory=dict)
    #: The game's joint record (``--record``), else ``None``.
    recorder: TableRecorder | None = None


class Tables:
    """The server's tables, each a game whose seats are episodes of ``episodes``."""

    def __init__(
        self, episodes: EpisodeTable, settings: ServerSettings, prototype: Environment[Any]
    ) -> None:
        self.episodes = episodes
        self.settings = settings
        self.prototype = prototype
        game = prototype.seated_game()
        if game is None:
            raise ArgumentError(
                f"--seats {settings.seats}: {type(prototype).name} has one player; seats are "
                "for games of several (openspiel, chess, pettingzoo)"
            )
        #: The seats clients drive (the rest: built-in opponents), in the game's order.
        self.clients = parse_seats(settings.seats, game.possible_agents)
        self.agents = list(game.possible_agents)
        game.close()
        self.by_id: dict[str, _Seated] = {}
        #: Each seat's episode: its table and seat.
        self.seat_of: dict[str, tuple[_Seated, str]] = {}
        episodes.closers.append(self._closed)

    # -- lookup ------------------------------------------------------------------------

    def of_episode(self, episode_id: str) -> tuple[Table, str] | None:
        """The table and seat of a seat's episode, if it is one."""
        found = self.seat_of.get(episode_id)
        return None if found is None else (found[0].table, found[1])

    def waits(self, episode_id: str, wait: bool | None) -> None:
        """Whether the seat's next step waits, after its move, for its next turn
        (``None``: it does)."""
        found = self.of_episode(episode_id)
        if found is not None:
            table, agent = found
            table.seats[agent].waits = True if wait is None else wait

    async def wait_turn(self, episode_id: str) -> None:
        """Wait (bounded, within the call's timeout) until the seat's turn comes or its
        game ends."""
        found = self.of_episode(episode_id)
        if found is None:
            return
        table, agent = found
        budget = min(table.turn_timeout, self.settings.call_timeout - MARGIN)
        await anyio.to_thread.run_sync(
            table.wait_turn, agent, time.monotonic() + budget, abandon_on_cancel=True
        )

    def _seated(self, handle: str) -> _Seated:
        """The table a handle names (its own, or one of its seats')."""
        seated = self.by_id.get(handle)
        if seated is None and handle in self.seat_of:
            seated = self.seat_of[handle][0]
        if seated is None:
            self.episodes.require_here(handle, "table")
            raise UnknownEpisode(
                f"no live table {handle!r}: it was never made, or every seat of it was closed "
                "or evicted; call reset to start a game"
            )
        return seated

    # -- starting games ----------------------------------------------------------------

    async def reset(
        self,
        handle: str | None,
        seats: str | list[str] | None,
        op: Reset,
        caller: Caller | None,
        saved: Any = None,
    ) -> Reply:
        """Start a game (a new table, or again on the table ``handle`` names; from a
        seat's snapshot, ``saved``: its whole table) and answer the first seat ``seats``
        claims, with every claimed seat's handle."""
        if saved is not None and (not isinstance(saved, dict) or "table" not in saved):
            raise ArgumentError("reset: from_snapshot takes a snapshot of a seat")
        if handle is not None:  # again, at the table of the seat it names
            if handle not in self.seat_of:
                self._seated(handle)  # unknown: says so
                raise ArgumentError(
                    f"{handle!r} is a game's table_id, which takes open seats (join); a new "
                    "game at that table starts from a seat's handle (reset(episode_id=SEAT))"
                )
            seated, own = self.seat_of[handle]
            gone = [a for a in seated.table.clients if a not in seated.episodes]
            if gone:
                raise ArgumentError(
                    f"{gone[0]} left this game's table (its seat's episode was closed), so "
                    "no new game starts there: reset without episode_id starts a new table"
                )
            more = [] if seats is None else self._claimed(seats)
            mine = [own, *(a for a in more if a != own)]
        else:
            mine = self.clients[:1] if seats is None else self._claimed(seats)
            seated = await self._new_table()
        table = seated.table
        for agent in mine:
            if handle is None or agent != mine[0]:
                table.claim(agent)  # a seat another client holds is refused
        # On a thread: built-in opponents (MCTS) may think before the first client's turn.
        if saved is None:
            await anyio.to_thread.run_sync(table.reset, op.seed, op.options)
        else:  # every seat goes on from the snapshot's position
            await anyio.to_thread.run_sync(table.restore, saved["table"])
        replies: dict[str, Reply] = {}
        for agent, episode in seated.episodes.items():
            async with episode.lock:
                if episode.broken:
                    await self.episodes.renew(episode)
                    self._bind(episode, seated, agent)
                replies[agent] = await self.episodes.call(episode, op)
        first = mine[0]
        episode = seated.episodes[first]
        if caller is not None:
            caller.default_id = episode.id
            if caller.run is not None:
                caller.run.default_id = episode.id
        handles = {a: seated.episodes[a].id for a in mine}
        return self._with_table(replies[first], table, handles)

    def _claimed(self, seats: str | list[str]) -> list[str]:
        names = parse_seats(seats, self.agents)
        bots = [a for a in names if a not in self.clients]
        if bots:
            raise ArgumentError(
                f"seats: {bots[0]!r} is played by the game's built-in opponent on this server "
                f"(serve --seats names the seats clients drive: {', '.join(self.clients)})"
            )
        return names

    async def _new_table(self) -> _Seated:
        open_ = [s for s in self.by_id.values() if s.table.open_seats()]
        if len(open_) >= MAX_OPEN_TABLES:
            raise ArgumentError(
                f"{len(open_)} games wait for players to join (at most {MAX_OPEN_TABLES}): "
                "join one (join without table_id takes the oldest open seat)"
            )
        game = self.prototype.seated_game()
        assert game is not None  # checked at start
        table_id = with_shard(f"tb_{secrets.token_urlsafe(16)}", self.settings.shard)
        table = Table(table_id, game, list(self.clients), self.settings.turn_timeout)
        seated = _Seated(table)
        if self.settings.record is not None:  # the game whole, beside each seat's episode
            recorder = TableRecorder(Path(self.settings.record).resolve(), table_id, self.prototype)
            table.on_reset, table.on_move = recorder.start, recorder.move
            seated.recorder = recorder
        try:
            for agent in self.clients:
                episode = await self.episodes.create()
                seated.episodes[agent] = episode
                self.seat_of[episode.id] = (seated, agent)
                self._bind(episode, seated, agent)
        except BaseException:
            for episode in seated.episodes.values():
                await self.episodes.close(episode.id)
            raise
        self.by_id[table_id] = seated
        log.info("table %s: seats %s", public_id(table_id), ", ".join(self.clients))
        return seated

    @staticmethod
    def _bind(episode: Episode, seated: _Seated, agent: str) -> None:
        ref = episode.ref
        assert isinstance(ref, LocalRef)  # seats are served in one process (checked at start)
        env = ref.pipeline.env
        assert isinstance(env, SeatEnv)
        env.bind(seated.table, agent)
        table_recorder = seated.recorder
        if table_recorder is not None:  # the seat's own recording names its table's
            layer: Any = ref.pipeline.chain
            while layer is not None and not isinstance(layer, Recorder):
                layer = getattr(layer, "inner", None)
            if layer is not None:
                layer.recorder.marks = lambda: table_recorder.seat_marks(agent)

    # -- joining -----------------------------------------------------------------------

    async def join(
        self, handle: str | None, seat: str | None, frames: Frames, caller: Caller | None
    ) -> Reply:
        """Take an open seat (of the table ``handle`` names, else the oldest open game):
        its view, and its handle."""
        if handle is not None:
            seated = self._seated(handle)
        else:
            waiting = [s for s in self.by_id.values() if s.table.open_seats()]
            if not waiting:
                raise ArgumentError(
                    "no game has an open seat: call reset to start one (others join it)"
                )
            seated = waiting[0]
        table = seated.table
        agent = table.claim(seat)
        episode = seated.episodes[agent]
        async with episode.lock:
            reply = await self.episodes.call(episode, Look(frames, ()))
        if caller is not None:
            caller.default_id = episode.id
        return self._with_table(reply, table, {agent: episode.id})

    # -- answers -----------------------------------------------------------------------

    @staticmethod
    def _with_table(reply: Reply, table: Table, handles: dict[str, str]) -> Reply:
        """``reply`` with the table's handle and the seats handed out (structured, and in
        words for a model: the handles it must pass on)."""
        first = next(iter(handles))
        others = {a: h for a, h in handles.items() if a != first}
        words = (
            f"You hold seat {first} of game {table.id} ({table.turn_words(first)}); pass seat="
            f"{handles[first]!r} to step, state and legal_actions"
        )
        if others:
            words += "; the other seats' handles (hand each to its player): " + ", ".join(
                f"{a}={h}" for a, h in others.items()
            )
        waiting = table.open_seats()
        if waiting:
            words += (
                f". Open seats ({', '.join(waiting)}): another client takes one with "
                f"join(table_id={table.id!r})"
            )
        content = [text_block(f"{reply.text}\n{words}."), *reply.content[1:]]
        structured = None
        if reply.structured is not None:
            structured = {
                **reply.structured,
                "table_id": table.id,
                "seat": first,
                "seats": handles,
                "open_seats": waiting,
            }
        return Reply(content, structured)

    # -- the end -----------------------------------------------------------------------

    def _closed(self, episode_id: str) -> None:
        """A seat's episode closed: forget it, and its table once every seat is gone."""
        found = self.seat_of.pop(episode_id, None)
        if found is None:
            return
        seated, agent = found
        seated.episodes.pop(agent, None)
        seated.table.leave(agent)
        if not seated.episodes:
            self.by_id.pop(seated.table.id, None)
            if seated.recorder is not None:
                with seated.table.cond:
                    seated.recorder.end("closed")
            seated.table.game.close()

"""A read-only feed of the server's live episodes, for people watching (the web page).

Every call on an episode (the tool, its arguments, the counters and summary it
answered with) becomes an event of that episode: kept in a short history and
sent to whoever watches it. Watchers know an episode by a *watch id*, never by
its handle: a handle is the capability to act on an episode, a watch id only
lets one look. Handles and snapshot handles are kept out of every event (the
summaries that name an episode name it by its watch id).

The feed costs nothing until the server is served with its web page
(:meth:`EpisodeTable.feed` stays ``None``); then each call adds one small dict.
Frames are not part of the events: a watcher asks for the current frame
(:meth:`EpisodeTable.peek_frame`) at a rate it can show, so a trainer stepping
thousands of times a second never encodes a PNG for a watcher.
"""

from __future__ import annotations

import contextlib
import math
import secrets
import time
from collections import deque
from collections.abc import AsyncIterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from openenv_mcp.pipeline import CallTool, Op, Reset, Restore, Snapshot, Step

__all__ = ["HISTORY", "Feed", "Watched", "current_tool"]

#: The tool being served, set where tools run, so the feed can say which tool drove
#: an environment call (``fire``, ``step``, ``step_batch``...).
current_tool: ContextVar[str | None] = ContextVar("openenv_current_tool", default=None)

#: Events kept per episode for a watcher who arrives late (and for the page's replay).
HISTORY = 500
#: Episodes kept in the list after they close, so a watcher sees how they ended.
CLOSED_KEPT = 32
#: Events a slow watcher may fall behind by before the oldest are dropped (and counted).
BACKLOG = 256
#: Longest text of an argument or result kept in an event.
_TEXT = 300
#: Arguments that are capabilities or transport details, never shown to watchers.
_HIDDEN_ARGS = frozenset({"episode_id", "frames", "from_snapshot", "snapshot_id"})


@dataclass(eq=False)
class Watched:
    """One episode as watchers see it (no handle in anything sent)."""

    watch_id: str
    episode_id: str
    opened: float
    status: str = "new"
    step: int = 0
    reward: float = 0.0
    episode_return: float = 0.0
    terminated: bool = False
    truncated: bool = False
    lives: int | None = None
    summary: str = ""
    calls: int = 0
    seq: int = 0
    history: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=HISTORY))
    watchers: set[MemoryObjectSendStream[dict[str, Any]]] = field(default_factory=set)
    dropped: int = 0

    def row(self) -> dict[str, Any]:
        """Its line in the list of episodes."""
        return {
            "watch_id": self.watch_id,
            "status": self.status,
            "step": self.step,
            "reward": self.reward,
            "episode_return": self.episode_return,
            "terminated": self.terminated,
            "truncated": self.truncated,
            "lives": self.lives,
            "calls": self.calls,
            "opened": self.opened,
            "watchers": len(self.watchers),
            "summary": self.summary,
        }

    def hide(self, text: str) -> str:
        """``text`` with this episode's handle replaced by its watch id."""
        return text.replace(self.episode_id, self.watch_id)


def _short(value: Any) -> Any:
    """A value small enough for an event: long strings and containers cut."""
    if isinstance(value, str):
        return value if len(value) <= _TEXT else value[: _TEXT - 3] + "..."
    if isinstance(value, bool | int | None):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, dict):
        items = list(value.items())[:16]
        return {str(k): _short(v) for k, v in items if str(k) not in _HIDDEN_ARGS}
    if isinstance(value, list | tuple):
        return [_short(v) for v in value[:16]]
    return _short(repr(value))


def _scalars(info: dict[str, Any]) -> dict[str, Any]:
    """The info fields a person reads at a glance (numbers, flags, short strings)."""
    return {
        k: _short(v)
        for k, v in list(info.items())[:24]
        if isinstance(v, bool | int | float | str) and k != "text"
    }


class Feed:
    """Live episodes, their recent events, and the watchers of each."""

    def __init__(self, clock: Any = time.time) -> None:
        self.clock = clock
        #: By handle (what the episode table knows) and by watch id (what watchers know).
        self.by_handle: dict[str, Watched] = {}
        self.by_watch: dict[str, Watched] = {}
        self.closed: deque[Watched] = deque(maxlen=CLOSED_KEPT)

    # -- from the episode table ------------------------------------------------------------

    def opened(self, episode_id: str) -> Watched:
        """A new episode (before its first reset)."""
        watched = Watched(
            watch_id=f"w_{secrets.token_urlsafe(9)}", episode_id=episode_id, opened=self.clock()
        )
        self.by_handle[episode_id] = watched
        self.by_watch[watched.watch_id] = watched
        return watched

    def called(self, episode_id: str, op: Op[Any], answer: Any) -> None:
        """An operation on an episode and what it answered (a value or an error)."""
        watched = self.by_handle.get(episode_id)
        if watched is None:  # opened before anyone could watch (the feed came on later)
            watched = self.opened(episode_id)
        tool, arguments = self._call(op)
        event: dict[str, Any] = {"tool": tool, "arguments": arguments}
        view = getattr(answer, "view", None)
        if isinstance(answer, Exception):
            event["error"] = watched.hide(f"{type(answer).__name__}: {answer}")
        elif isinstance(view, dict):
            self._update(watched, view)
            event.update(
                status=watched.status,
                step=watched.step,
                reward=watched.reward,
                episode_return=watched.episode_return,
                terminated=watched.terminated,
                truncated=watched.truncated,
                summary=watched.summary,
                events=[watched.hide(str(e)) for e in view.get("events") or []],
                info=_scalars(view.get("info") or {}),
            )
            if view.get("rewards") is not None:
                event["rewards"] = _short(view["rewards"])
            if view.get("repeated") is not None:
                event["repeated"] = view["repeated"]
        elif isinstance(op, Snapshot):
            event["result"] = f"saved the state at step {getattr(answer, 'step', '?')}"
        else:
            event["result"] = _short(watched.hide(repr(_short(answer))))
        self._publish(watched, event)

    def closed_episode(self, episode_id: str) -> None:
        """An episode was closed (by its client, or evicted when idle)."""
        watched = self.by_handle.pop(episode_id, None)
        if watched is None:
            return
        watched.status = "closed"
        self._publish(watched, {"tool": "close", "arguments": {}, "status": "closed"})
        for stream in list(watched.watchers):
            stream.close()
        watched.watchers.clear()
        self.closed.append(watched)
        while len(self.by_watch) > len(self.by_handle) + CLOSED_KEPT:
            oldest = next(w for w in self.by_watch.values() if w.status == "closed")
            del self.by_watch[oldest.watch_id]

    # -- for watchers ------------------------------------------------------------------------

    def rows(self) -> list[dict[str, Any]]:
        """Every episode watchers may see: the live ones, then the recently closed."""
        live = [w.row() for w in self.by_handle.values()]
        gone = [w.row() for w in reversed(self.closed) if w.watch_id in self.by_watch]
        return live + gone

    def get(self, watch_id: str) -> Watched | None:
        """The episode with this watch id (live or recently closed), if any."""
        return self.by_watch.get(watch_id)

    @contextlib.asynccontextmanager
    async def watch(
        self, watched: Watched
    ) -> AsyncIterator[MemoryObjectReceiveStream[dict[str, Any]]]:
        """Receive ``watched``'s events from now on (the stream ends when it closes)."""
        send, receive = anyio.create_memory_object_stream[dict[str, Any]](BACKLOG)
        if watched.status != "closed":
            watched.watchers.add(send)
        else:
            send.close()
        try:
            yield receive
        finally:
            watched.watchers.discard(send)
            send.close()
            receive.close()

    # -- inside ------------------------------------------------------------------------------

    @staticmethod
    def _call(op: Op[Any]) -> tuple[str, dict[str, Any]]:
        """The tool that drove ``op`` and its arguments, as watchers may see them."""
        arguments: dict[str, Any] = {}
        if isinstance(op, CallTool):
            return op.name, _short(op.params or {})
        if isinstance(op, Step):
            arguments = {"action": _short(op.action)}
            if op.repeat != 1:
                arguments["repeat"] = op.repeat
        elif isinstance(op, Reset):
            arguments = {"seed": op.seed, "options": _short(op.options) if op.options else None}
        elif isinstance(op, Restore):
            arguments = {"from_snapshot": "(a snapshot)"}
        return current_tool.get() or op.tool, arguments

    @staticmethod
    def _update(watched: Watched, view: dict[str, Any]) -> None:
        watched.status = str(view.get("status", watched.status))
        watched.step = int(view.get("step", watched.step))
        watched.reward = float(view.get("reward", 0.0))
        watched.episode_return = float(view.get("episode_return", watched.episode_return))
        watched.terminated = bool(view.get("terminated"))
        watched.truncated = bool(view.get("truncated"))
        lives = (view.get("info") or {}).get("lives")
        watched.lives = lives if isinstance(lives, int) and not isinstance(lives, bool) else None
        watched.summary = watched.hide(str(view.get("summary", "")))

    def _publish(self, watched: Watched, event: dict[str, Any]) -> None:
        watched.seq += 1
        watched.calls += 1
        event = {"seq": watched.seq, "time": self.clock(), **event}
        watched.history.append(event)
        for stream in list(watched.watchers):
            try:
                stream.send_nowait(event)
            except anyio.WouldBlock:
                watched.dropped += 1  # a slow watcher: it sees the count, the server never waits
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                watched.watchers.discard(stream)

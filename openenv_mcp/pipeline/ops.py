"""The operations a server runs on an episode's pipeline: small typed values.

Each is a frozen dataclass that pickles (it crosses a worker's pipe) and says what
it does in its :meth:`~Op.apply`, so a call is dispatched the same way inline, on
a thread and in a worker, and "go to definition" leads from the handler that
sends it to the code that runs it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from openenv_mcp.codecs import Frames

if TYPE_CHECKING:
    from openenv_mcp.pipeline.base import SavedEpisode
    from openenv_mcp.pipeline.episode import EpisodePipeline
    from openenv_mcp.pipeline.view import Outcome

__all__ = [
    "CallTool",
    "Close",
    "Frame",
    "LegalActions",
    "Look",
    "Op",
    "Reset",
    "Restore",
    "Snapshot",
    "Step",
    "Summary",
]

R = TypeVar("R")


class Op(Generic[R]):
    """An operation whose answer is an ``R``."""

    #: What a watcher is told the operation was (the tool that usually sends it).
    tool: str = ""
    #: Whether watchers see it (a query that changes nothing and says nothing new is not).
    watched: bool = True

    def apply(self, episode: EpisodePipeline) -> R:
        """Run on ``episode``'s pipeline, where its environment lives."""
        raise NotImplementedError


@dataclass(frozen=True)
class Reset(Op["Outcome"]):
    """Start an episode (``reset``)."""

    seed: int | None
    options: dict[str, Any] | None
    frames: Frames
    #: Without a seed: the env's generator state to continue from (as the client drew it).
    np_random: dict[str, Any] | None = None
    #: Arrays to send beside the observation (the env's ``extra_names``).
    extras: tuple[str, ...] = ()
    tool = "reset"

    def apply(self, episode: EpisodePipeline) -> Outcome:
        return episode.reset(self.seed, self.options, self.frames, self.np_random, self.extras)


@dataclass(frozen=True)
class Step(Op["Outcome"]):
    """Take an action, held for ``repeat`` steps (``step``, an action tool)."""

    action: Any
    frames: Frames
    repeat: int = 1
    extras: tuple[str, ...] = ()
    tool = "step"

    def apply(self, episode: EpisodePipeline) -> Outcome:
        return episode.step(self.action, self.frames, self.repeat, self.extras)


@dataclass(frozen=True)
class Look(Op["Outcome"]):
    """The episode as it is (``state``)."""

    frames: Frames
    extras: tuple[str, ...] = ()
    tool = "state"

    def apply(self, episode: EpisodePipeline) -> Outcome:
        return episode.look(self.frames, self.extras)


@dataclass(frozen=True)
class Snapshot(Op["SavedEpisode"]):
    """Save the episode's full state (``snapshot``)."""

    tool = "snapshot"

    def apply(self, episode: EpisodePipeline) -> SavedEpisode:
        return episode.snapshot()


@dataclass(frozen=True)
class Restore(Op["Outcome"]):
    """Continue from a snapshot (``reset(from_snapshot=...)``)."""

    saved: SavedEpisode
    frames: Frames
    tool = "reset"

    def apply(self, episode: EpisodePipeline) -> Outcome:
        return episode.restore(self.saved, self.frames)


@dataclass(frozen=True)
class CallTool(Op["dict[str, Any]"]):
    """Run the environment's own episode tool ``name``."""

    name: str
    params: dict[str, Any] | None

    @property
    def tool(self) -> str:  # type: ignore[override]
        return self.name

    def apply(self, episode: EpisodePipeline) -> dict[str, Any]:
        return episode.call_tool(self.name, self.params)


@dataclass(frozen=True)
class LegalActions(Op["dict[str, Any]"]):
    """The actions legal now, by number and name (``legal_actions``)."""

    tool = "legal_actions"
    watched = False

    def apply(self, episode: EpisodePipeline) -> dict[str, Any]:
        return episode.legal_actions()


@dataclass(frozen=True)
class Summary(Op["dict[str, Any]"]):
    """How the episode stands (``episode_summary``)."""

    tool = "episode_summary"

    def apply(self, episode: EpisodePipeline) -> dict[str, Any]:
        return episode.summary()


@dataclass(frozen=True)
class Frame(Op["bytes | None"]):
    """The current frame as PNG at the env's size, for a watcher (nothing recorded)."""

    tool = "frame"
    watched = False

    def apply(self, episode: EpisodePipeline) -> bytes | None:
        return episode.frame_png()


@dataclass(frozen=True)
class Close(Op[None]):
    """End the episode and free its environment (``close``, eviction, shutdown)."""

    tool = "close"

    def apply(self, episode: EpisodePipeline) -> None:
        episode.close()

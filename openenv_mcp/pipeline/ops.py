"""The operations a server runs on an episode's pipeline: small typed values.

Each is a frozen dataclass that pickles (it crosses a worker's pipe) and travels
down the chain whole: a layer gets the op it serves, so whatever a layer needs of
the call (the recorder: which tool call this is, :attr:`Step.call`) rides on the
op, never on state set beforehand. :meth:`~Op.apply` names the chain's method that
runs it, so a call is dispatched the same way inline, on a thread and in a worker,
and "go to definition" leads from the handler that sends it to the code that runs it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from openenv_mcp.codecs import Frames

if TYPE_CHECKING:
    from openenv_mcp.pipeline.answers import Reply, SavedEpisode
    from openenv_mcp.tasks import Started

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


class Chain(Protocol):
    """What an operation runs down: an episode pipeline's outermost layer
    (:class:`~.view.View`), one method per operation."""

    def reset(self, op: Reset) -> Reply: ...
    def step(self, op: Step) -> Reply: ...
    def look(self, op: Look) -> Reply: ...
    def restore(self, op: Restore) -> Reply: ...
    def snapshot(self, op: Snapshot) -> SavedEpisode: ...
    def call_tool(self, op: CallTool) -> dict[str, Any]: ...
    def legal_actions(self, op: LegalActions) -> dict[str, Any]: ...
    def summary(self, op: Summary) -> dict[str, Any]: ...
    def frame(self, op: Frame) -> bytes | None: ...
    def close(self, op: Close) -> None: ...


class Op(Generic[R]):
    """An operation whose answer is an ``R``."""

    #: What a watcher is told the operation was (the tool that usually sends it).
    tool: str = ""
    #: Whether watchers see it (a query that changes nothing and says nothing new is not).
    watched: bool = True

    def apply(self, chain: Chain) -> R:
        """Run down ``chain`` (an episode pipeline's outermost layer), where its env lives."""
        raise NotImplementedError


@dataclass(frozen=True)
class Reset(Op["Reply"]):
    """Start an episode (``reset``)."""

    seed: int | None
    options: dict[str, Any] | None
    frames: Frames
    #: Without a seed: the env's generator state to continue from (as the client drew it).
    np_random: dict[str, Any] | None = None
    #: Arrays to send beside the observation (the env's ``extra_names``).
    extras: tuple[str, ...] = ()
    #: The task this reset starts (set by :class:`~.tasks.StartTask`, which turns the
    #: task into ``seed`` and ``options``).
    task: Started | None = None
    tool = "reset"

    def apply(self, chain: Chain) -> Reply:
        return chain.reset(self)


@dataclass(frozen=True)
class Step(Op["Reply"]):
    """Take an action, held for ``repeat`` steps (``step``, an action tool)."""

    action: Any
    frames: Frames
    repeat: int = 1
    extras: tuple[str, ...] = ()
    #: A step a repeat takes after the call's first (:class:`~.repeat.Repeat`): it is
    #: no tool call of its own, so its record names none.
    held: bool = False
    tool = "step"

    @property
    def call(self) -> dict[str, Any] | None:
        """The tool call this step is, as a recording names it (``None``: a held step)."""
        if self.held:
            return None
        arguments: dict[str, Any] = {"action": self.action}
        if self.repeat != 1:
            arguments["repeat"] = self.repeat
        return {"tool": "step", "arguments": arguments}

    def apply(self, chain: Chain) -> Reply:
        return chain.step(self)


@dataclass(frozen=True)
class Look(Op["Reply"]):
    """The episode as it is (``state``)."""

    frames: Frames
    extras: tuple[str, ...] = ()
    tool = "state"

    def apply(self, chain: Chain) -> Reply:
        return chain.look(self)


@dataclass(frozen=True)
class Snapshot(Op["SavedEpisode"]):
    """Save the episode's full state (``snapshot``)."""

    tool = "snapshot"

    def apply(self, chain: Chain) -> SavedEpisode:
        return chain.snapshot(self)


@dataclass(frozen=True)
class Restore(Op["Reply"]):
    """Continue from a snapshot (``reset(from_snapshot=...)``)."""

    saved: SavedEpisode
    frames: Frames
    tool = "reset"

    def apply(self, chain: Chain) -> Reply:
        return chain.restore(self)


@dataclass(frozen=True)
class CallTool(Op["dict[str, Any]"]):
    """Run the environment's own episode tool ``name``."""

    name: str
    params: dict[str, Any] | None

    @property
    def tool(self) -> str:  # type: ignore[override]
        return self.name

    def apply(self, chain: Chain) -> dict[str, Any]:
        return chain.call_tool(self)


@dataclass(frozen=True)
class LegalActions(Op["dict[str, Any]"]):
    """The actions legal now, by number and name (``legal_actions``)."""

    tool = "legal_actions"
    watched = False

    def apply(self, chain: Chain) -> dict[str, Any]:
        return chain.legal_actions(self)


@dataclass(frozen=True)
class Summary(Op["dict[str, Any]"]):
    """How the episode stands (``episode_summary``)."""

    tool = "episode_summary"

    def apply(self, chain: Chain) -> dict[str, Any]:
        return chain.summary(self)


@dataclass(frozen=True)
class Frame(Op["bytes | None"]):
    """The current frame as PNG at the env's size, for a watcher (nothing recorded)."""

    tool = "frame"
    watched = False

    def apply(self, chain: Chain) -> bytes | None:
        return chain.frame(self)


@dataclass(frozen=True)
class Close(Op[None]):
    """End the episode and free its environment (``close``, eviction, shutdown)."""

    tool = "close"

    def apply(self, chain: Chain) -> None:
        chain.close(self)

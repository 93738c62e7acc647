"""What a model reads of an environment: an optional facet of the contract.

A trainer needs none of this; a model playing through an agent harness reads
it in every answer. An environment declares its narration as a class::

    class CorridorNarration(Narration[Narrated]):
        @property
        def title(self) -> str:
            return "Corridor"

        def instructions(self) -> str:
            return "Reach the goal cell: LEFT and RIGHT move, STAY waits."

        def observation_text(self, observation: Any) -> str | None:
            return f"you are at {observation[0]}, the goal at {observation[1]}"

    class CorridorEnv(Environment[CorridorConfig]):
        narration = CorridorNarration

A narration that reads more of its environment than :class:`Narrated` names (its
game, its board) says what in a Protocol of its own, ``class CorridorView(Narrated,
Protocol)``, and is a ``Narration[CorridorView]``: typed without importing the module
of its environment, which imports it.

The server makes one per environment instance (``narration_of(env)``), where
that environment lives. Without one, the defaults apply: the env's name as the
title, its description as the rules, no events beyond what the server tells
itself (a life lost, the episode's end).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

if TYPE_CHECKING:
    from openenv_mcp.environment import ActionSet, Environment, StepResult

__all__ = ["Narrated", "Narration", "narration_of"]


class Narrated(Protocol):
    """What a narration reads of its environment by default: every
    :class:`~openenv_mcp.environment.Environment` has it."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def action_set(self) -> ActionSet | None: ...


EnvT = TypeVar("EnvT", bound=Narrated)


class Narration(Generic[EnvT]):
    """The words for a model about one environment instance (``self.env``).

    Every method has a default; override what the game needs.
    """

    def __init__(self, env: EnvT) -> None:
        self.env = env

    @property
    def title(self) -> str:
        """What is being served, for people and models (``"Atari Breakout"``)."""
        return self.env.name

    def instructions(self) -> str:
        """What a model needs to play: what this is, the goal, how to start, how to act.

        Served as the MCP server's instructions, the ``play`` prompt and the
        ``openenv://ENV/rules`` resource; its gist also opens the first ``reset``
        answer, since many harnesses never show a server's instructions.
        """
        return self.env.description

    def briefing(self) -> str:
        """What a model must know to start playing (the goal, how to start), in a few
        sentences: the first ``reset`` answer and the ``reset`` tool's description carry
        it, since many harnesses never show a server's instructions. Default: nothing."""
        return ""

    def action_description(self) -> str:
        """What ``step``'s ``action`` argument is, for a model reading the tool."""
        return ""

    def observation_text(self, observation: Any) -> str | None:
        """The observation in words, for the text a model reads.

        ``None`` (the default) shows an observation that is not an array as its
        ``repr``, and an array not at all (its frame is the image).
        """
        return None

    def step_events(self, info_before: dict[str, Any], result: StepResult) -> list[str]:
        """What happened in a step, in words, beyond what the server tells itself
        (rewards, ``info["lives"]`` going down, the episode's end).

        Args:
            info_before: the info of the step (or reset) before this one.
            result: this step's result.
        """
        return []

    def action_name(self, action: int) -> str | None:
        """The name of a discrete action in the current state (the ``legal_actions``
        tool's answer), where the action set has no fixed names; ``None``: unnamed."""
        actions = self.env.action_set
        return actions.by_id(action).name if actions is not None else None


def narration_of(env: Environment[Any]) -> Narration[Any]:
    """The narration of an environment instance (its declared class, or the defaults)."""
    cls = type(env).narration or Narration
    narration: Narration[Any] = cls(env)
    return narration

"""What plays an eval's episodes: a policy, one episode of one task at a time.

Every kind of policy (seeded random actions, a Python callable, an agent harness
command, a model behind an OpenAI-compatible endpoint) answers one question: play
this task once and say how it went. The eval (:mod:`openenv_mcp.evals`) schedules the
runs, keeps the counts and writes the reports; it never knows which kind it holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from openenv_mcp.client import Session

__all__ = ["EvalPolicy", "TaskOutcome", "TaskRun"]


@dataclass(frozen=True)
class TaskRun:
    """One run to play: task ``task`` (its JSON, as the Task API sends it), sample
    ``sample`` of it.

    Attributes:
        split, index: where the task is (``reset(options={"split", "index"})`` starts it).
        task: the task's JSON (``id``, ``seed``, ``options``, ``difficulty``...).
        sample: which of the task's samples this run is (0-based).
        seed: a seed for the policy's own randomness (the environment's comes from the
            task), distinct for every run.
        max_steps: a run still going after this many steps is stopped and counted as an
            error; ``0``: no cap.
    """

    split: str
    index: int
    task: dict[str, Any]
    sample: int
    seed: int
    max_steps: int = 0

    @property
    def task_id(self) -> str:
        """The task's id."""
        return str(self.task["id"])


@dataclass
class TaskOutcome:
    """How one run went.

    Attributes:
        success: the env's judgement of the ended episode (``info["task"]["success"]``);
            ``None`` where it did not end (an error).
        reward: the episode's return.
        steps: steps taken.
        error: why the run failed to finish (the policy raised, the server refused, the
            step cap, a timeout); ``None`` for a run that ended. Errors are counted apart
            from failures.
        scores: the env's scores beside the return (``info["task"]["scores"]``).
        first_observation: a hash of the first observation (the reproducibility probe).
        messages: what the run said and did, for the Inspect log: dicts with ``role``
            (``system``, ``user``, ``assistant``, ``tool``) and ``content`` (text), and
            for the assistant's tool calls ``tool_calls`` (``[{"id", "function",
            "arguments"}]``); ``tool`` messages carry ``tool_call_id``.
    """

    success: bool | None
    reward: float = 0.0
    steps: int = 0
    error: str | None = None
    scores: dict[str, float] = field(default_factory=dict)
    first_observation: str | None = None
    messages: list[dict[str, Any]] = field(default_factory=list)


class EvalPolicy(Protocol):
    """Plays one run of a task against a server.

    Attributes:
        name: what the report's config names (``"random"``, ``"my_policies.py:greedy"``,
            ``"claude -p ..."``, ``"openai:MODEL@URL"``).
    """

    name: str

    async def play(self, session: Session, run: TaskRun) -> TaskOutcome:
        """Play ``run`` on a connected session (its own episode: ``session.episode()``
        is not shared with other runs) and say how it went. A policy that drives the
        server some other way (an agent harness with its own MCP config) may ignore
        ``session``. Must not raise for a run that goes wrong: return an outcome with
        ``error`` set.
        """
        ...

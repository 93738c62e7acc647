"""What a model reads of the coding environment: the task, the rules, each run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from openenv_mcp.environment import StepResult
from openenv_mcp.narration import Narrated, Narration

if TYPE_CHECKING:
    from openenv_mcp_envs.coding._problems import Task
    from openenv_mcp_envs.coding._sandbox import Limits, Sandbox

#: What an action is, for a model.
ACTION_TEXT = (
    'Python source to run (a string), or one object: {"code": source} to run it; '
    '{"write": {"path": "notes/a.py", "content": "..."}} to write a file; {"test": true} '
    'to run the hidden tests on solution.py; {"solution": source} to write solution.py '
    "and run the tests in one step."
)


class _Rules(Protocol):
    """What the narration reads of the environment's config (``CodingConfig``)."""

    @property
    def feedback(self) -> str: ...

    @property
    def persist_files(self) -> bool: ...

    @property
    def reward(self) -> str: ...

    @property
    def max_steps(self) -> int: ...


class CodingView(Narrated, Protocol):
    """What the narration reads of :class:`~openenv_mcp_envs.coding.env.CodingEnv` (named
    here, so this module need not import the env's, which imports it)."""

    @property
    def config(self) -> _Rules: ...

    @property
    def limits(self) -> Limits: ...

    @property
    def sandbox(self) -> Sandbox: ...

    @property
    def task(self) -> Task | None: ...

    @property
    def tasks(self) -> Sequence[Task]: ...

    @property
    def events(self) -> Sequence[str]: ...


class CodingNarration(Narration[CodingView]):
    """The task's prompt, the sandbox's limits, and what each run did."""

    @property
    def title(self) -> str:
        task = self.env.task
        return f"Coding: {task.title or task.name}" if task else "Coding"

    def instructions(self) -> str:
        env = self.env
        cfg, lim = env.config, env.limits
        isolation = (
            "bubblewrap namespaces: no network, only /usr and the standard library visible "
            "read-only, the working directory at /sandbox, a private /tmp"
            if env.sandbox.mode == "bwrap"
            else "NOT ISOLATED (--sandbox unsafe-rlimits): resource limits per process and a "
            "private working directory only"
        )
        lines = [
            "You solve a programming task in Python. Each episode is one task: reset names it "
            "and gives its prompt (the task tool shows it again, with the function's "
            "signature). Write the function in solution.py (reset leaves a stub there), in "
            "the episode's working directory; hidden tests call it and compare what it "
            "returns (as JSON: lists for tuples) with the expected values.",
            "Actions (the step tool's action):",
            '- a string, or {"code": "..."}: run that Python source in the working directory '
            "(it can import solution.py and read the files there); you see stdout, stderr and "
            "the exit code.",
            '- {"write": {"path": "solution.py", "content": "..."}}: write a file (relative '
            "paths; folders are made).",
            '- {"test": true}: run the hidden tests on solution.py; you see how many passed '
            + {
                "counts": "(counts only).",
                "inputs": "and, for failing ones, the call and what it returned or raised.",
                "full": "and, for failing ones, the call, what it returned and the expected value.",
            }[cfg.feedback],
            '- {"solution": "..."}: write solution.py and run the tests, in one step.',
            f"Files stay in the working directory from step to step"
            f"{'' if cfg.persist_files else ' (only those you write: runs work on a copy)'}. "
            "The tools read_file and last_output show a file and the full output of the "
            "last step.",
            "Reward: "
            + (
                "each test run earns how much it raised the best fraction of tests passed "
                "so far, so the episode's return is the best fraction reached."
                if cfg.reward == "improvement"
                else "each test run earns the fraction of tests it passed."
            )
            + f" The episode ends when every test passes, or after {cfg.max_steps} steps.",
            f"Sandbox ({isolation}): each run gets {lim.cpu_seconds} s of CPU, "
            f"{lim.wall_seconds:g} s of wall clock, {lim.memory_mib} MiB of memory (all its "
            f"processes together), files up to {lim.file_size_mib} MiB, "
            f"{lim.max_processes} processes; the working directory holds at most "
            f"{lim.quota_mib} MiB in {lim.max_files} files; output beyond "
            f"{lim.output_bytes} bytes per stream is cut. The standard library is available, "
            "no third-party packages.",
            f"Tasks: {', '.join(t.name for t in env.tasks)}.",
        ]
        if env.sandbox.warning:
            lines.append(f"WARNING: {env.sandbox.warning}.")
        return "\n".join(lines)

    def observation_text(self, observation: Any) -> str | None:
        obs = observation
        if not isinstance(obs, dict) or "kind" not in obs:
            return None
        if obs["kind"] == "reset":
            return f"Task {obs['task']}: {obs['prompt']}"
        if obs["kind"] == "write":
            return f"{obs['report']}"
        text = f"{obs['kind']}: exit code {obs['exit_code']}"
        if obs["kind"] in ("test", "solution"):
            text += f", {obs['tests_passed']}/{obs['tests_total']} tests passed"
        return text

    def step_events(self, info_before: dict[str, Any], result: StepResult) -> list[str]:
        return list(self.env.events)

    def action_description(self) -> str:
        return ACTION_TEXT

"""The ``evaluate`` tool: an eval of a server-side policy on one of the served
environment's task splits, run inside the server on episodes of its own.

The eval itself is :func:`openenv_mcp.evals.evaluate`, run over an in-memory
connection to this very server (so its runs are ordinary episodes of the episode table,
under its limits, closed after). The evals package stands above the client, which
stands above the server, so the server refers to it by name and imports it only when
the tool runs, as it does environments (:data:`EVAL_RUNNER`).

:func:`run_evaluate` is the plain async function the tool wraps (what a task runner may
call in its place).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import anyio
from pydantic import BaseModel, ConfigDict, Field

from openenv_mcp.errors import ArgumentError, UnknownTask, did_you_mean
from openenv_mcp.registry import load_reference
from openenv_mcp.server.episodes._episodes import made_episodes
from openenv_mcp.server.jobs._control import job_progress
from openenv_mcp.server.tools._results import Reply, text_block
from openenv_mcp.server.tools._tools import Hints, ModelTool
from openenv_mcp.spec import EnvSpec

if TYPE_CHECKING:
    from openenv_mcp.server.episodes._handlers import Handlers

__all__ = ["EVAL_RUNNER", "MAX_RUNS", "POLICIES", "EvaluateArgs", "evaluate_tool", "run_evaluate"]

log = logging.getLogger("openenv_mcp.server")

#: The eval the tool runs, by reference (see the module's docstring).
EVAL_RUNNER = "openenv_mcp.evals:evaluate"
#: The policies a server runs itself: nothing a client sends is run as code.
POLICIES = ("random",)
#: Most runs (tasks x samples) one call plays.
MAX_RUNS = 1000
#: Most samples per task and largest pass@k.
MAX_SAMPLES = 100
#: The step cap when a call names none (a random policy may never end an episode).
DEFAULT_MAX_STEPS = 1000
#: Most steps a run may take.
MAX_STEPS = 100_000
#: Runs in flight at once (awaits on the event loop: other clients' calls go on).
CONCURRENCY = 4


class EvaluateArgs(BaseModel):
    """What ``evaluate`` takes."""

    model_config = ConfigDict(extra="forbid", strict=True)

    split: str = Field(max_length=200, description="The split to evaluate.")
    samples: int = Field(1, ge=1, le=MAX_SAMPLES, description="Runs per task.")
    k: list[int] | None = Field(
        None,
        min_length=1,
        max_length=16,
        description="The pass@k values to report, each at most samples (default [1]).",
    )
    policy: str = Field(
        "random",
        max_length=200,
        description="Who plays: 'random' (seeded random actions), the one policy a server "
        "runs itself.",
    )
    limit: int | None = Field(
        None, ge=1, description="Evaluate only the split's first limit tasks."
    )
    max_steps: int = Field(
        DEFAULT_MAX_STEPS,
        ge=1,
        le=MAX_STEPS,
        description="A run still going after this many steps is stopped and counted as an error.",
    )
    seed: int = Field(0, ge=0, description="The seed the policy's randomness derives from.")


def evaluate_tool(spec: EnvSpec, handlers: Handlers) -> ModelTool:
    """The ``evaluate`` tool of a server of ``spec``'s environment (one with splits); its
    eval connects to the server ``handlers`` answer for."""
    names = [str(s["name"]) for s in spec.splits]
    sizes = ", ".join(f"{s['name']} ({s['tasks']} tasks)" for s in spec.splits)

    async def handler(args: EvaluateArgs) -> Reply:
        # Every episode the eval makes is closed however it ends: a cancel (an MCP task's)
        # may stop a run whose reset was on its way, an episode its client never learned.
        made: set[str] = set()
        token = made_episodes.set(made)
        try:
            return await run_evaluate(handlers.server, spec, args)
        finally:
            made_episodes.reset(token)
            with anyio.CancelScope(shield=True):
                for episode_id in made:
                    await handlers.table.close(episode_id)

    return ModelTool.build(
        "evaluate",
        f"Evaluate a policy on a split of {spec.title}'s tasks, in the server: every task "
        "(the first limit) played samples times, scored as success rate and unbiased "
        f"pass@k, per task and per difficulty. Splits: {sizes}. At most {MAX_RUNS} runs "
        "(tasks x samples) a call; policy: random.",
        EvaluateArgs,
        handler,
        None,
        hints=Hints(read_only=False, open_world=not spec.serving.offline),
        schema_patch={
            "split": {"type": "string", "enum": names, "description": "The split to evaluate."}
        },
    )


def _progress(done: int, total: int) -> None:
    """An eval running as an MCP task reports its runs (a cancel stops its awaits)."""
    job_progress(done, total, "runs")


async def run_evaluate(server: Any, spec: EnvSpec, args: EvaluateArgs) -> Reply:
    """Run one ``evaluate`` call: the eval's report as ``structuredContent``, its table as
    the text.

    Args:
        server: the FastMCP server to evaluate on (the eval connects to it in memory).
        spec: the served environment's spec.
        args: the call's arguments.

    Raises:
        ArgumentError: a policy the server does not run, a k above samples, more than
            :data:`MAX_RUNS` runs, or a server not built by ``build_server``.
        UnknownTask: a split the environment lacks.
    """
    if args.policy not in POLICIES:
        raise ArgumentError(
            f"evaluate: policy {args.policy!r} is not run in the server; it runs "
            f"{', '.join(POLICIES)}. Evaluate another player from outside: openenv-mcp eval "
            "ENV --policy ... (a Python function, a harness command, --openai-url)"
        )
    sizes = {str(s["name"]): int(s["tasks"]) for s in spec.splits}
    if args.split not in sizes:
        raise UnknownTask(
            f"evaluate: no split {args.split!r} in {spec.name}.{did_you_mean(args.split, sizes)}"
            f" Splits: {', '.join(sizes) or 'none'}"
        )
    k = sorted(set(args.k or [1]))
    if k[0] < 1 or k[-1] > args.samples:
        raise ArgumentError(
            f"evaluate: every k must be between 1 and samples ({args.samples}), got {args.k}"
        )
    tasks = min(sizes[args.split], args.limit or sizes[args.split])
    runs = tasks * args.samples
    if runs > MAX_RUNS:
        raise ArgumentError(
            f"evaluate: {tasks} tasks x {args.samples} samples is {runs} runs; one call plays "
            f"at most {MAX_RUNS}. Pass a limit (the first N tasks) or fewer samples, or run "
            "openenv-mcp eval from outside"
        )
    if server is None:
        raise ArgumentError("evaluate: this server was not built by build_server")
    evaluate = load_reference(EVAL_RUNNER, "evaluate")
    report = await evaluate(
        server,
        split=args.split,
        samples=args.samples,
        k=tuple(k),
        policy=args.policy,
        concurrency=CONCURRENCY,
        max_steps=args.max_steps,
        limit=tasks,
        seed=args.seed,
        progress=_progress,
    )
    log.info("evaluate: %d runs of %s/%s", runs, spec.name, args.split)
    return Reply([text_block(report.table())], report.to_json())

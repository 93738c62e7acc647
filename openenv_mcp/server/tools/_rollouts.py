"""The ``collect`` and ``run_episode`` tools: whole episodes played inside the server by a
server-side policy (seeded random legal actions), each an ordinary episode of the
episode table.

An episode here is what a client's would be: made in the table (its limits hold), then
``reset``, ``step`` until it ends or ``max_steps`` pass, and ``close``, each through the
server's :class:`~openenv_mcp.server.episodes._handlers.Handlers`, so ``--record DIR``
records it like any other. The episode is named by its handle in every call: the
caller's own default episode is left as it was.

Long work, so it reports its progress and stops when asked (:mod:`openenv_mcp.server.jobs`):
:func:`~openenv_mcp.server.jobs.job_check` between every two steps, and whatever stops
an episode (a cancelled task, a cancelled call, an error) closes it before going on up,
so its recording ends with its end record. :func:`run_collect` and
:func:`run_one_episode` are the plain async functions the tools wrap (what a task runner
may call in their place).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel
import numpy as np
from gymnasium import spaces
from pydantic import BaseModel, ConfigDict, Field

from openenv_mcp.errors import ArgumentError, did_you_mean
from openenv_mcp.server.jobs import job_check, job_progress
from openenv_mcp.server.tools._args import EpisodeArgs, ResetArgs
from openenv_mcp.server.tools._evaluate import DEFAULT_MAX_STEPS, MAX_STEPS, POLICIES
from openenv_mcp.server.tools._results import Reply, text_block
from openenv_mcp.server.tools._tools import Hints, ModelTool
from openenv_mcp.spaces import encode
from openenv_mcp.spec import EnvSpec
from openenv_mcp.tasks import TASK_OPTIONS

if TYPE_CHECKING:
    from openenv_mcp.server.episodes._handlers import Handlers

__all__ = [
    "MAX_EPISODES",
    "CollectArgs",
    "RandomActions",
    "RunEpisodeArgs",
    "rollout_tools",
    "run_collect",
    "run_one_episode",
]

log = logging.getLogger("openenv_mcp.server")

#: Most episodes one ``collect`` call plays.
MAX_EPISODES = 10_000


class RandomActions:
    """Seeded random legal actions: ``space`` sampled from ``seed``, the action mask
    respected where the last ``info`` has one (``info["action_mask"]``, Gymnasium's
    convention), as the evals' and ``openenv-mcp collect``'s random policy choose.

    Args:
        space: the action space (copied: the chooser's draws are its own).
        seed: where its draws start; the same seed and infos give the same actions.
    """

    def __init__(self, space: spaces.Space[Any], seed: int) -> None:
        self.space = copy.deepcopy(space)
        self.space.seed(seed)

    def __call__(self, info: Mapping[str, Any]) -> Any:
        """The next action, in wire form (what ``step`` takes), legal under ``info``'s mask."""
        mask = info.get("action_mask")
        if mask is not None:
            value = self.space.sample(mask=np.asarray(mask, dtype=np.int8))
        else:
            value = self.space.sample()
        return encode(self.space, value)


class RunEpisodeArgs(BaseModel):
    """What ``run_episode`` takes."""

    model_config = ConfigDict(extra="forbid", strict=True)

    policy: str = Field(
        "random",
        max_length=200,
        description="Who plays: 'random' (seeded random legal actions), the one policy a "
        "server runs itself.",
    )
    seed: int = Field(
        0,
        ge=0,
        description="The episode's seed (an episode of a task named in options starts from "
        "the task's own), and the seed of the policy's randomness.",
    )
    max_steps: int = Field(
        DEFAULT_MAX_STEPS,
        ge=1,
        le=MAX_STEPS,
        description="An episode still going after this many steps is stopped (closed) and "
        "answered as capped.",
    )
    options: dict[str, Any] | None = Field(
        None, description="Per-episode options of this environment (as reset takes them)."
    )


class CollectArgs(RunEpisodeArgs):
    """What ``collect`` takes."""

    episodes: int = Field(ge=1, le=MAX_EPISODES, description="How many episodes to play.")
    seed: int = Field(
        0,
        ge=0,
        description="Episode i (from 0) is seeded seed + i, as run_episode(seed=seed + i).",
    )


def rollout_tools(
    spec: EnvSpec, handlers: Handlers, options_schema: dict[str, Any]
) -> list[ModelTool]:
    """``collect`` and ``run_episode`` for a server of ``spec``'s environment;
    ``options_schema`` is the ``options`` schema ``reset`` lists (the env's own)."""

    async def collect(args: CollectArgs) -> Reply:
        return await run_collect(handlers, spec, args)

    async def run_episode(args: RunEpisodeArgs) -> Reply:
        return await run_one_episode(handlers, spec, args)

    policies = ", ".join(POLICIES)
    # Episodes of its own, closed after: it changes nothing else (the env's reach aside).
    hints = Hints(read_only=False, open_world=not spec.serving.offline)
    patch = {"options": options_schema}
    return [
        ModelTool.build(
            "collect",
            f"Play episodes of {spec.title} in the server with a server-side policy "
            f"({policies}: seeded random legal actions), each an ordinary episode (recorded "
            "with --record), closed at its end or after max_steps; episode i is seeded "
            f"seed + i. Returns each episode's return, steps and end, and the mean return. "
            f"At most {MAX_EPISODES} episodes a call.",
            CollectArgs,
            collect,
            None,
            hints=hints,
            schema_patch=patch,
        ),
        ModelTool.build(
            "run_episode",
            f"Play one whole episode of {spec.title} in the server with a server-side policy "
            f"({policies}: seeded random legal actions), recorded with --record, closed at "
            "its end or after max_steps. Returns its return, steps and end.",
            RunEpisodeArgs,
            run_episode,
            None,
            hints=hints,
            schema_patch=patch,
        ),
    ]


async def run_collect(handlers: Handlers, spec: EnvSpec, args: CollectArgs) -> Reply:
    """Run one ``collect`` call: ``args.episodes`` episodes, one after another.

    Returns:
        A line of text, and ``structuredContent`` ``{episodes: [...], mean_return, ...}``
        (each episode as :func:`run_one_episode` answers it).

    Raises:
        ArgumentError: a policy the server does not run, or a server of seats.
        JobCancelled: the task running the call was cancelled (the episode in progress
            closed first).
        OpenEnvError: what a reset or step refused (bad options, a full server).
    """
    _check(handlers, "collect", args.policy)
    played: list[dict[str, Any]] = []
    for index in range(args.episodes):
        played.append(await _play(handlers, spec, args, args.seed + index, index, args.episodes))
        job_progress(index + 1, args.episodes, f"{index + 1} of {args.episodes} episodes")
    returns = [e["return"] for e in played]
    data: dict[str, Any] = {
        "env": spec.name,
        "policy": args.policy,
        "seed": args.seed,
        "max_steps": args.max_steps,
        "episodes": played,
        "mean_return": float(np.mean(returns)),
        "min_return": min(returns),
        "max_return": max(returns),
        "steps": sum(e["steps"] for e in played),
        "ends": {end: sum(e["end"] == end for e in played) for end in _ENDS},
    }
    log.info("collect: %d episodes of %s", len(played), spec.name)
    return Reply([text_block(_collect_text(data))], data)


async def run_one_episode(handlers: Handlers, spec: EnvSpec, args: RunEpisodeArgs) -> Reply:
    """Run one ``run_episode`` call: one episode, its record as ``structuredContent``
    ``{episode_id, seed, return, steps, terminated, truncated, end, recording?, task?}``.

    Raises:
        ArgumentError: a policy the server does not run, or a server of seats.
        JobCancelled: the task running the call was cancelled (the episode closed first).
        OpenEnvError: what the reset or a step refused.
    """
    _check(handlers, "run_episode", args.policy)
    record = await _play(handlers, spec, args, args.seed, 0, 1)
    return Reply([text_block(_episode_text(spec, args.policy, record))], record)


#: How an episode ends: the env ended it (terminated, truncated), or max_steps did.
_ENDS = ("terminated", "truncated", "capped")


def _check(handlers: Handlers, tool: str, policy: str) -> None:
    if policy not in POLICIES:
        raise ArgumentError(
            f"{tool}: policy {policy!r} is not run in the server; it runs "
            f"{', '.join(POLICIES)}.{did_you_mean(policy, POLICIES)} Play another policy "
            "from outside: openenv-mcp collect ENV --policy package.module:fn, or drive "
            "reset and step yourself"
        )
    if handlers.tables is not None:
        raise ArgumentError(
            f"{tool}: this server serves games of seats (--seats), whose seats take turns "
            "from several clients; a server-side policy plays single-player episodes. "
            "Serve the environment without --seats to collect"
        )


async def _play(
    handlers: Handlers,
    spec: EnvSpec,
    args: RunEpisodeArgs,
    seed: int,
    index: int,
    episodes: int,
) -> dict[str, Any]:
    """Play one episode of ``args.policy`` from ``seed``; its record. The episode is
    closed however this ends (its end, max_steps, an error, a cancellation)."""
    choose = RandomActions(spec.action_space, seed)
    # Made in the table (its limits hold), then driven by its handle: reset without a
    # handle would make it the caller's default episode in place of the caller's own.
    episode = await handlers.table.create()
    handle = episode.id
    try:
        job_check()
        # A task starts from its own seed; the policy's draws still start from ``seed``.
        tasked = any(key in (args.options or {}) for key in TASK_OPTIONS)
        reset = ResetArgs(
            episode_id=handle, seed=None if tasked else seed, options=args.options, frames="none"
        )
        view = (await handlers.reset(reset)).view
        record: dict[str, Any] = {"episode_id": handle, "seed": seed}
        if "recording" in view:
            record["recording"] = view["recording"]
        steps, total = 0, 0.0
        terminated = truncated = False
        while not (terminated or truncated) and steps < args.max_steps:
            # Inline environments never wait: yield so other calls (and a cancel) get in.
            await anyio.lowlevel.checkpoint()
            job_check()
            action = choose(view.get("info") or {})
            view = (await handlers.step(handle, action, "none")).view
            steps += 1
            total += float(view.get("reward", 0.0))
            terminated, truncated = bool(view.get("terminated")), bool(view.get("truncated"))
            job_progress(
                index + min(steps / args.max_steps, 1.0),
                episodes,
                f"episode {index + 1} of {episodes}: step {steps}",
            )
        record.update(
            {
                "return": float(view.get("episode_return", total)),
                "steps": steps,
                "terminated": terminated,
                "truncated": truncated,
                "end": "terminated" if terminated else "truncated" if truncated else "capped",
            }
        )
        task = view.get("task")
        if isinstance(task, dict):
            record["task"] = {k: task[k] for k in ("id", "success") if k in task}
        return record
    finally:
        # Closed even when the call is cancelled: its recording gets its end record.
        with anyio.CancelScope(shield=True):
            if handle in handlers.table.episodes:
                await handlers.close(EpisodeArgs(episode_id=handle))


def _collect_text(data: dict[str, Any]) -> str:
    ends = ", ".join(f"{n} {end}" for end, n in data["ends"].items() if n)
    played = data["episodes"]
    first, last = played[0]["seed"], played[-1]["seed"]
    seeds = f"seed {first}" if first == last else f"seeds {first}-{last}"
    count = f"{len(played)} episode" + ("" if len(played) == 1 else "s")
    return (
        f"collect: {count} of {data['env']} with policy {data['policy']} "
        f"({seeds}): mean return {data['mean_return']:g} (min {data['min_return']:g}, max "
        f"{data['max_return']:g}), {data['steps']} steps; {ends}"
    )


def _episode_text(spec: EnvSpec, policy: str, record: dict[str, Any]) -> str:
    recorded = f"; recorded in {record['recording']}" if "recording" in record else ""
    return (
        f"run_episode: an episode of {spec.name} with policy {policy} (seed {record['seed']}) "
        f"{record['end']} after {record['steps']} steps, return {record['return']:g}{recorded}"
    )

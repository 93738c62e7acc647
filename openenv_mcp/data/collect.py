"""Rollouts at scale with any policy: ``openenv-mcp collect ENV --episodes N --concurrency K``.

Every episode is played over MCP against a recorded server (``serve --record``),
so what is collected is the recording format (:mod:`openenv_mcp.recording`),
ready for ``replay`` and ``export``. The policy is one of:

* ``random``: seeded random legal actions (the action mask respected);
* ``package.module:fn``: ``fn(observation, info) -> action``, sync or async;
* an agent harness command (``--agent``): for each episode the collector writes
  an MCP config naming a fresh recorded server (``{mcp_config}`` in the command
  is its path) and runs the command; whatever the agent played is collected.

``DIR/collect.jsonl`` lists each finished episode (its index, seed, recording,
return, steps); run the same command again after an interruption and the
episodes already there are skipped. A summary table ends the run.
"""

from __future__ import annotations

import inspect
import json
import math
import os
import shlex
import shutil
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from openenv_mcp._util.interpreter import python_command
from openenv_mcp.errors import ArgumentError
from openenv_mcp.recording import iter_recordings
from openenv_mcp.registry import load_reference

__all__ = ["CollectConfig", "CollectResult", "run_collect"]

INDEX = "collect.jsonl"
_HEADER = "collect.json"
MCP_CONFIG_PLACEHOLDER = "{mcp_config}"


@dataclass(frozen=True)
class CollectConfig:
    """What to collect.

    Attributes:
        env: the environment (a registered name or ``module:Class``).
        out: the directory: recordings under ``episodes/``, the index, MCP configs.
        episodes: how many episodes in all (those already collected count).
        concurrency: episodes in flight at once.
        env_args: the environment's options and server settings in CLI form
            (``["--game", "breakout", "--reward", "m:r"]``), passed to ``serve``.
        policy: ``"random"`` or ``package.module:fn``.
        agent: a harness command with ``{mcp_config}``; replaces ``policy``.
        seed: episode ``i`` is reset with ``seed + i``.
        max_steps: a policy episode still running after this many steps is closed
            (left out of exports as not finished); ``0``: no cap.
        agent_timeout: seconds one agent command may run.
    """

    env: str
    out: str
    episodes: int = 10
    concurrency: int = 1
    env_args: tuple[str, ...] = ()
    policy: str = "random"
    agent: str | None = None
    seed: int = 0
    max_steps: int = 0
    agent_timeout: float = 600.0

    def check(self) -> None:
        if self.episodes < 1:
            raise ArgumentError(f"--episodes must be at least 1, got {self.episodes}")
        if self.concurrency < 1:
            raise ArgumentError(f"--concurrency must be at least 1, got {self.concurrency}")
        if self.agent is not None and MCP_CONFIG_PLACEHOLDER not in self.agent:
            raise ArgumentError(
                f"--agent needs {MCP_CONFIG_PLACEHOLDER} where the MCP config's path goes, "
                f"e.g. 'claude -p \"Play\" --mcp-config {MCP_CONFIG_PLACEHOLDER}'; got "
                f"{self.agent!r}"
            )

    def header(self) -> dict[str, Any]:
        """What must not change between a run and its resumption."""
        return {
            "env": self.env,
            "env_args": list(self.env_args),
            "policy": self.agent or self.policy,
            "seed": self.seed,
        }


@dataclass
class CollectResult:
    """A run's figures (this run's episodes and all collected so far)."""

    out: str
    skipped: int
    episodes: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    total: int = 0

    def as_dict(self) -> dict[str, Any]:
        returns = [e["return"] for e in self.episodes]
        steps = sum(e["steps"] for e in self.episodes)
        return {
            "out": self.out,
            "episodes": len(self.episodes),
            "skipped_already_collected": self.skipped,
            "collected_in_all": self.total,
            "finished": sum(1 for e in self.episodes if e["status"] in ("terminated", "truncated")),
            "mean_return": statistics.fmean(returns) if returns else math.nan,
            "std_return": statistics.pstdev(returns) if len(returns) > 1 else 0.0,
            "steps": steps,
            "mean_steps": steps / len(self.episodes) if self.episodes else 0.0,
            "seconds": self.seconds,
            "steps_per_s": steps / self.seconds if self.seconds else 0.0,
            "episodes_per_s": len(self.episodes) / self.seconds if self.seconds else 0.0,
        }

    def table(self) -> str:
        d = self.as_dict()
        rows = [
            ("episodes (this run)", f"{d['episodes']}"),
            ("already collected (skipped)", f"{d['skipped_already_collected']}"),
            ("collected in all", f"{d['collected_in_all']}"),
            ("finished (terminated/truncated)", f"{d['finished']}"),
            ("return, mean ± std", f"{d['mean_return']:.3f} ± {d['std_return']:.3f}"),
            ("steps (mean per episode)", f"{d['steps']} ({d['mean_steps']:.1f})"),
            ("time", f"{d['seconds']:.1f} s"),
            ("throughput", f"{d['steps_per_s']:.0f} steps/s, {d['episodes_per_s']:.2f} episodes/s"),
        ]
        width = max(len(k) for k, _ in rows)
        return "\n".join(f"{k:<{width}}  {v}" for k, v in rows) + f"\nrecordings: {self.out}"


def _serve_command(config: CollectConfig, record: Path, *extra: str) -> list[str]:
    """The recorded server's command line (this interpreter, importing nothing from the
    working directory, which is a harness's too)."""
    return python_command(
        "-m",
        "openenv_mcp",
        "serve",
        config.env,
        "--stdio",
        "--record",
        str(record),
        *extra,
        *config.env_args,
    )


def _done(out: Path) -> dict[int, dict[str, Any]]:
    index = out / INDEX
    done: dict[int, dict[str, Any]] = {}
    if index.exists():
        for line in index.read_text().splitlines():
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line torn by an interruption: that episode runs again
            done[int(entry["index"])] = entry
    return done


def _check_header(config: CollectConfig, out: Path) -> None:
    path = out / _HEADER
    header = config.header()
    if path.exists():
        before = json.loads(path.read_text())
        if before != header:
            raise ArgumentError(
                f"{out} was collected with {before}; this run asks for {header}: use another "
                "directory, or the same arguments to resume"
            )
    else:
        out.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(header) + "\n")


def load_policy(ref: str) -> Callable[..., Any]:
    """``package.module:fn`` as a callable (``random`` is handled by the collector)."""
    fn = load_reference(ref, "--policy")
    if not callable(fn):
        raise ArgumentError(f"--policy {ref!r} is a {type(fn).__name__}, not a function")
    return fn  # type: ignore[no-any-return]


def run_collect(
    config: CollectConfig, progress: Callable[[int, int], None] | None = None
) -> CollectResult:
    """Collect ``config.episodes`` episodes (resuming), ``config.concurrency`` at a time.

    Args:
        progress: called with (episodes done, episodes in all) as each one ends.
    """
    config.check()
    out = Path(config.out).resolve()
    _check_header(config, out)
    done = _done(out)
    todo = [i for i in range(config.episodes) if i not in done]
    result = CollectResult(out=str(out), skipped=config.episodes - len(todo))
    if progress is not None:
        progress(result.skipped, config.episodes)
    started = time.perf_counter()
    if todo:
        if config.agent is not None:
            anyio.run(_collect_agent, config, out, todo, result, progress)
        else:
            anyio.run(_collect_policy, config, out, todo, result, progress)
    result.seconds = time.perf_counter() - started
    result.total = len(_done(out))
    return result


def _append(out: Path, entry: dict[str, Any], result: CollectResult) -> None:
    with open(out / INDEX, "a") as f:
        f.write(json.dumps(entry) + "\n")
        f.flush()
    result.episodes.append(entry)


async def _collect_policy(
    config: CollectConfig,
    out: Path,
    todo: list[int],
    result: CollectResult,
    progress: Callable[[int, int], None] | None,
) -> None:
    from openenv_mcp.client import Session

    choose = None if config.policy == "random" else load_policy(config.policy)
    command = _serve_command(config, out / "episodes")
    pending = iter(todo)
    finished = result.skipped

    async with Session(command, server_log=str(out / "server.log")) as session:
        space = session.server_spec.action_space

        async def worker() -> None:
            nonlocal finished
            episode = session.episode()
            for index in pending:
                seed = config.seed + index
                began = time.perf_counter()
                obs, info = await episode.reset(seed=seed)
                space.seed(seed)
                total, steps, status = 0.0, 0, "running"
                while True:
                    if choose is None:
                        mask = info.get("action_mask")
                        action = space.sample(mask=mask) if mask is not None else space.sample()
                    else:
                        action = choose(obs, info)
                        if inspect.isawaitable(action):
                            action = await action
                    obs, reward, terminated, truncated, info = await episode.step(action)
                    total += float(reward)
                    steps += 1
                    if terminated or truncated:
                        status = "terminated" if terminated else "truncated"
                        break
                    if config.max_steps and steps >= config.max_steps:
                        status = "capped"
                        break
                recording = info.get("recording") or ""
                if status == "capped":  # its recording ends as closed; a new env takes over
                    await episode.close()
                    episode = session.episode()
                _append(
                    out,
                    {
                        "index": index,
                        "seed": seed,
                        "status": status,
                        "return": total,
                        "steps": steps,
                        "recording": recording,
                        "seconds": time.perf_counter() - began,
                    },
                    result,
                )
                finished += 1
                if progress is not None:
                    progress(finished, config.episodes)

        async with anyio.create_task_group() as tg:
            for _ in range(min(config.concurrency, len(todo))):
                tg.start_soon(worker)


async def _collect_agent(
    config: CollectConfig,
    out: Path,
    todo: list[int],
    result: CollectResult,
    progress: Callable[[int, int], None] | None,
) -> None:
    assert config.agent is not None
    limit = anyio.Semaphore(config.concurrency)
    finished = result.skipped

    async def one(index: int) -> None:
        nonlocal finished
        async with limit:
            name = f"agent-{index:05d}"
            record = out / "episodes" / name
            if record.exists():  # what an interrupted attempt left: kept aside, never lost
                shutil.move(str(record), str(out / "interrupted" / f"{name}-{time.time_ns()}"))
            seed = config.seed + index
            mcp_config = out / "mcp" / f"{name}.json"
            mcp_config.parent.mkdir(parents=True, exist_ok=True)
            command = _serve_command(config, record, "--profile", "agent", "--seed", str(seed))
            server = {"command": command[0], "args": command[1:]}
            mcp_config.write_text(json.dumps({"mcpServers": {"openenv": server}}, indent=2))
            argv = [
                part.replace(MCP_CONFIG_PLACEHOLDER, str(mcp_config))
                for part in shlex.split(config.agent or "")
            ]
            began = time.perf_counter()
            log = out / "agents" / f"{name}.log"
            log.parent.mkdir(parents=True, exist_ok=True)
            with open(log, "wb") as sink:
                try:
                    with anyio.fail_after(config.agent_timeout):
                        process = await anyio.run_process(
                            argv,
                            check=False,
                            stdout=sink,
                            stderr=sink,
                            env={**os.environ, "OPENENV_MCP_CONFIG": str(mcp_config)},
                        )
                    code: int | None = process.returncode
                except TimeoutError:
                    code = None
            played = [r for r in iter_recordings(record, observations=False) if r.steps]
            status = (
                "timeout"
                if code is None
                else "no episode played"
                if not played
                else (played[-1].end or {}).get("status", "incomplete")
            )
            _append(
                out,
                {
                    "index": index,
                    "seed": seed,
                    "status": status,
                    "agent_exit": code,
                    "return": float(sum(r.episode_return for r in played)),
                    "steps": sum(len(r.steps) for r in played),
                    "recordings": [str(r.path) for r in played],
                    "seconds": time.perf_counter() - began,
                },
                result,
            )
            finished += 1
            if progress is not None:
                progress(finished, config.episodes)

    async with anyio.create_task_group() as tg:
        for index in todo:
            tg.start_soon(one, index)


def parse_env_args(args: Sequence[str]) -> tuple[str, ...]:
    """The environment options and server settings to pass to ``serve``, as given."""
    for arg in args:
        if arg in ("--record", "--stdio", "--http") or arg.startswith("--record="):
            raise ArgumentError(f"collect sets {arg.split('=')[0]} itself; leave it out")
    return tuple(args)

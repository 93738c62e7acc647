"""The eval runner: every task of a split played ``samples`` times by a policy, over one
MCP session, many runs at once; each finished run kept as it ends, so an interrupted
eval resumes where it stopped.

::

    report = await evaluate("openenv-mcp serve gymnasium --id CartPole-v1", samples=4,
                            k=(1, 4), policy="my_policies.py:balance")
    print(report.scores()["pass@4"])

The sidecar file (``runs_file``) is JSON lines: a header naming what the eval plays
(environment, split, policy, seed, step cap), then one :class:`RunRecord` per finished
run, appended and flushed as each ends. ``resume=True`` plays only the runs it lacks;
a line torn by an interruption at the end is dropped (that run plays again); anything
else unreadable, or a header for another eval, is refused.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import importlib.metadata
import json
import math
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

from openenv_mcp._util.interpreter import python_command
from openenv_mcp._util.version import __version__
from openenv_mcp.client import Session
from openenv_mcp.errors import ArgumentError, ServerDied
from openenv_mcp.evals._policies import observation_digest, policy_from_spec
from openenv_mcp.evals._policy import EvalPolicy, TaskOutcome, TaskRun
from openenv_mcp.evals._report import HARNESS_NAME, EvalReport, RunRecord

__all__ = ["evaluate", "evaluate_sync", "parse_k", "serve_command"]

#: The sidecar's first line says what it is, and which version of the format.
RUNS_FORMAT = "openenv-mcp eval runs"
RUNS_VERSION = 1
#: The libraries a report names the versions of, where installed.
LIBRARIES = ("openenv-mcp", "fastmcp", "mcp", "gymnasium", "ale-py", "numpy", "inspect-ai")

#: ``(runs finished, runs in all)``, called as each run ends (resumed runs count as done).
Progress = Callable[[int, int], None]


def parse_k(text: str | Iterable[int]) -> tuple[int, ...]:
    """``"1,4,8"`` (or a sequence of ints) as a sorted tuple of distinct ``k``.

    Raises:
        ArgumentError: for a value that is not a positive integer.
    """
    parts: list[Any] = text.split(",") if isinstance(text, str) else list(text)
    ks: set[int] = set()
    for part in parts:
        try:
            value = int(str(part).strip())
        except ValueError:
            raise ArgumentError(f"--k takes positive integers like 1,4,8; got {part!r}") from None
        if value < 1:
            raise ArgumentError(f"--k values must be at least 1 (pass@k of k samples), got {value}")
        ks.add(value)
    if not ks:
        raise ArgumentError("--k needs at least one value, e.g. 1 or 1,4,8")
    return tuple(sorted(ks))


def _check(
    samples: int, k: tuple[int, ...], concurrency: int, max_steps: int, limit: int | None
) -> None:
    if samples < 1:
        raise ArgumentError(f"--samples must be at least 1, got {samples}")
    if k[-1] > samples:
        raise ArgumentError(
            f"pass@{k[-1]} needs at least {k[-1]} samples per task, got --samples {samples}: "
            f"raise --samples to {k[-1]} or ask for k up to {samples}"
        )
    if concurrency < 1:
        raise ArgumentError(f"--concurrency must be at least 1, got {concurrency}")
    if max_steps < 0:
        raise ArgumentError(f"--max-steps must be 0 (no cap) or more, got {max_steps}")
    if limit is not None and limit < 1:
        raise ArgumentError(f"--limit must be at least 1, got {limit}")


def serve_command(env: str, env_args: Sequence[str] = ()) -> list[str]:
    """The command of the stdio server an eval of ``env`` starts (this interpreter).

    Raises:
        ArgumentError: ``env_args`` choose a transport (the eval does).
    """
    for arg in env_args:
        name = arg.split("=")[0]
        if name in ("--stdio", "--http", "--ray", "--transport", "--agent"):
            raise ArgumentError(f"eval starts its own stdio server: leave {name} out")
    return python_command("-m", "openenv_mcp", "serve", env, "--stdio", *env_args)


def run_seed(seed: int, task_id: str, sample: int) -> int:
    """The seed of a run's policy: stable for (eval seed, task, sample), distinct across them."""
    digest = hashlib.sha256(f"{seed}:{task_id}:{sample}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def library_versions() -> dict[str, str]:
    """The installed versions of the libraries an eval's figures depend on."""
    found: dict[str, str] = {}
    for name in LIBRARIES:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return found


# -- the tasks -------------------------------------------------------------------------------


def _require_tasks(session: Session) -> None:
    spec = session.server_spec
    if not spec.splits:
        raise ArgumentError(
            f"{spec.name} publishes no tasks (its task_set() is None), so there is nothing to "
            "evaluate: eval needs an environment with task splits"
        )


async def list_tasks(
    session: Session, split: str, limit: int | None = None
) -> list[dict[str, Any]]:
    """The JSON of split ``split``'s tasks (the first ``limit`` of them), in order.

    Raises:
        ArgumentError: the env has no tasks, no such split (naming the splits there are),
            or the split is empty.
    """
    _require_tasks(session)
    tasks = [task.to_json() for task in await session.tasks(split)][:limit]
    if not tasks:
        raise ArgumentError(f"split {split!r} of {session.server_spec.name} has no tasks")
    return tasks


async def probe_reproducible(session: Session, split: str) -> bool:
    """Start the split's first task twice, on two fresh episodes: the same first
    observation both times?"""
    digests = []
    for _ in range(2):
        episode = session.episode()
        try:
            obs, _ = await episode.reset(options={"split": split, "index": 0})
            digests.append(observation_digest(obs))
        finally:
            await episode.close()
    return digests[0] == digests[1]


# -- the sidecar -----------------------------------------------------------------------------


def _read_runs(path: Path, header: Mapping[str, Any]) -> dict[tuple[int, int], RunRecord]:
    """The finished runs ``path`` holds (a torn last line dropped from the file).

    Raises:
        ArgumentError: the file is not a runs file, belongs to another eval, or has an
            unreadable line other than a torn last one.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ArgumentError(f"cannot read {path} to resume: {exc}") from None
    if data and not data.endswith(b"\n"):  # the interruption tore the last line: drop it
        data = data[: data.rfind(b"\n") + 1]
        with open(path, "r+b") as f:
            f.truncate(len(data))
    lines = data.decode("utf-8", "replace").splitlines()
    if not lines:
        return {}
    fix = f"delete {path} (and the report beside it) to start the eval over"
    try:
        first = json.loads(lines[0])
    except json.JSONDecodeError:
        first = None
    if not isinstance(first, dict) or first.get("format") != RUNS_FORMAT:
        raise ArgumentError(f"{path} is not an eval's runs file (line 1 is not its header); {fix}")
    if first.get("eval") != dict(header):
        raise ArgumentError(
            f"{path} holds the runs of another eval: {first.get('eval')}; this one is "
            f"{dict(header)}. Resume with the same arguments, or {fix}"
        )
    runs: dict[tuple[int, int], RunRecord] = {}
    for number, line in enumerate(lines[1:], start=2):
        try:
            run = RunRecord.from_json(json.loads(line))
        except (json.JSONDecodeError, ArgumentError) as exc:
            raise ArgumentError(
                f"{path} line {number} is not a finished run ({exc}); {fix}"
            ) from None
        runs[run.key] = run
    return runs


def _open_runs(path: Path, header: Mapping[str, Any], resume: bool) -> None:
    """Make sure ``path`` can take runs: a new file gets its header; an existing one is
    only taken when resuming."""
    exists = path.exists() and path.stat().st_size > 0
    if exists and not resume:
        raise ArgumentError(
            f"{path} already holds an eval's runs: pass --resume (resume=True) to continue it, "
            "or write to another output"
        )
    if exists:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w") as f:
            f.write(
                json.dumps({"format": RUNS_FORMAT, "version": RUNS_VERSION, "eval": dict(header)})
                + "\n"
            )
    except OSError as exc:
        raise ArgumentError(f"cannot write the eval's runs to {path}: {exc}") from None


# -- the eval --------------------------------------------------------------------------------


async def evaluate(
    target: Any,
    *,
    split: str = "test",
    samples: int = 1,
    k: Sequence[int] | str = (1,),
    policy: str | EvalPolicy = "random",
    concurrency: int = 4,
    max_steps: int = 0,
    limit: int | None = None,
    seed: int = 0,
    progress: Progress | None = None,
    runs_file: str | os.PathLike[str] | None = None,
    resume: bool = False,
    env_args: Sequence[str] = (),
    policy_options: Mapping[str, Any] | None = None,
    env: str | None = None,
) -> EvalReport:
    """Evaluate a policy on a split of an environment's tasks.

    Every task (the first ``limit``) is played ``samples`` times, ``concurrency`` runs at
    a time on one session; the first task is also started twice to probe
    reproducibility.

    Args:
        target: what :class:`~openenv_mcp.MCPEnvClient` takes (a server object, a
            command, a URL), or a :class:`~openenv_mcp.client.Session` (connected or not;
            one this call connects, it closes).
        split: the split to evaluate.
        samples: runs per task.
        k: the pass@k values to report (each at most ``samples``), or ``"1,4,8"``.
        policy: an :class:`~openenv_mcp.evals.EvalPolicy`, or a spec
            (:func:`~openenv_mcp.evals.policy_from_spec`: ``"random"``,
            ``"FILE.py:NAME"``, ``"module:NAME"``...).
        concurrency: runs in flight at once.
        max_steps: a run still going after this many steps is an error; ``0``: no cap.
        limit: evaluate only the split's first ``limit`` tasks.
        seed: the seed the policies' own randomness derives from (each run gets its own).
        progress: called with ``(runs finished, runs in all)``.
        runs_file: a sidecar file each finished run is appended to (see the module).
        resume: play only the runs ``runs_file`` lacks (without it, an existing
            ``runs_file`` is refused).
        env_args: the environment's options as given on the command line (the report's
            ``dataset`` names them).
        policy_options: passed to :func:`~openenv_mcp.evals.policy_from_spec`.
        env: the environment the caller means (a registered name): a server serving
            another is refused.

    Returns:
        The report (every run's record, the figures, RFC 013's JSON).

    Raises:
        ArgumentError: a bad argument, an env without tasks, an unknown split, a runs file
            that cannot be written or resumed.
        ServerDied: the server was lost; the runs finished before are in ``runs_file``.
    """
    ks = parse_k(k)
    _check(samples, ks, concurrency, max_steps, limit)
    player = policy_from_spec(policy, **dict(policy_options or {}))
    own = not isinstance(target, Session)
    session = Session(target) if own else target
    try:
        if not session.connected:
            await session.connect()
        served = session.server_spec.name
        if env is not None and ":" not in env and served != env:
            raise ArgumentError(f"{session.description} serves {served!r}, not {env!r}")
        return await _evaluate(
            session,
            player,
            split=split,
            samples=samples,
            k=ks,
            concurrency=concurrency,
            max_steps=max_steps,
            limit=limit,
            seed=seed,
            progress=progress,
            runs_path=None if runs_file is None else Path(runs_file),
            resume=resume,
            env_args=tuple(env_args),
        )
    finally:
        if own:
            await session.close()


async def _evaluate(
    session: Session,
    player: EvalPolicy,
    *,
    split: str,
    samples: int,
    k: tuple[int, ...],
    concurrency: int,
    max_steps: int,
    limit: int | None,
    seed: int,
    progress: Progress | None,
    runs_path: Path | None,
    resume: bool,
    env_args: tuple[str, ...],
) -> EvalReport:
    spec = session.server_spec
    tasks = await list_tasks(session, split, limit)
    header = {
        "env": spec.name,
        "env_config": spec.config,
        "split": split,
        "policy": player.name,
        "seed": seed,
        "max_steps": max_steps,
    }
    done: dict[tuple[int, int], RunRecord] = {}
    if runs_path is not None:
        if resume and runs_path.exists():
            done = _read_runs(runs_path, header)
        _open_runs(runs_path, header, resume)
    for (index, _), record in done.items():
        if index < len(tasks) and record.task_id != str(tasks[index]["id"]):
            raise ArgumentError(
                f"{runs_path} has task {record.task_id!r} at index {index}, the server "
                f"{tasks[index]['id']!r}: the split changed; start the eval over"
            )
    wanted = {(i, s) for i in range(len(tasks)) for s in range(samples)}
    kept = [record for key, record in sorted(done.items()) if key in wanted]
    todo = [
        TaskRun(
            split=split,
            index=index,
            task=task,
            sample=sample,
            seed=run_seed(seed, str(task["id"]), sample),
            max_steps=max_steps,
        )
        for index, task in enumerate(tasks)
        for sample in range(samples)
        if (index, sample) not in done
    ]
    reproducible = await probe_reproducible(session, split)
    total = len(wanted)
    finished = list(kept)
    if progress is not None:
        progress(len(finished), total)
    limiter = anyio.Semaphore(concurrency)
    started = time.perf_counter()

    lost: list[BaseException] = []

    async def one(run: TaskRun, group: anyio.abc.TaskGroup) -> None:
        async with limiter:
            began = time.perf_counter()
            try:
                outcome = await player.play(session, run)
            except ServerDied as exc:  # not this run's error: the eval stops, resumable
                lost.append(exc)
                group.cancel_scope.cancel()
                return
            except Exception as exc:  # a policy must not raise; if one does, the run errs
                outcome = TaskOutcome(success=None, error=f"{type(exc).__name__}: {exc}")
            record = _record(run, outcome, time.perf_counter() - began)
            if runs_path is not None:
                try:
                    with open(runs_path, "a") as f:
                        f.write(json.dumps(record.to_json(), default=repr) + "\n")
                        f.flush()
                except OSError as exc:
                    lost.append(
                        ArgumentError(f"cannot write the eval's runs to {runs_path}: {exc}")
                    )
                    group.cancel_scope.cancel()
                    return
            finished.append(record)
            if progress is not None:
                progress(len(finished), total)

    async with anyio.create_task_group() as group:
        for run in todo:
            group.start_soon(one, run, group)
    if lost:
        first = lost[0]
        if isinstance(first, ServerDied) and runs_path is not None:
            raise ServerDied(
                f"{first}\n{len(finished)} runs finished and are kept in {runs_path}: "
                "resume to play the rest"
            ) from first
        raise first
    finished.sort(key=lambda r: r.key)
    config = {
        "harness_name": HARNESS_NAME,
        "harness_version": __version__,
        "library_versions": library_versions(),
        "dataset": {
            "env": spec.name,
            "env_config": spec.config,
            "env_args": list(env_args),
            "split": split,
            "tasks": len(tasks),
            "task_ids": [str(t["id"]) for t in tasks],
        },
        "eval_parameters": {
            "samples": samples,
            "k": list(k),
            "policy": player.name,
            "max_steps": max_steps,
            "seed": seed,
            "concurrency": concurrency,
            "limit": limit,
        },
    }
    return EvalReport(
        config=config,
        tasks=tasks,
        runs=finished,
        k=k,
        reproducible=reproducible,
        seconds=time.perf_counter() - started,
    )


def _record(run: TaskRun, outcome: TaskOutcome, seconds: float) -> RunRecord:
    reward = float(outcome.reward)
    return RunRecord(
        task_id=run.task_id,
        index=run.index,
        sample=run.sample,
        success=None if outcome.error is not None else bool(outcome.success),
        reward=reward if math.isfinite(reward) else 0.0,
        steps=int(outcome.steps),
        error=outcome.error,
        scores=dict(outcome.scores),
        first_observation=outcome.first_observation,
        messages=list(outcome.messages),
        seconds=seconds,
    )


def evaluate_sync(target: Any, **options: Any) -> EvalReport:
    """:func:`evaluate` without ``await``: in a plain script it runs an event loop of its
    own; where the calling thread already runs one (a notebook, an async trainer), on a
    helper thread while the caller waits. Takes :func:`evaluate`'s arguments."""

    async def main() -> EvalReport:
        return await evaluate(target, **options)

    try:
        import asyncio

        asyncio.get_running_loop()
    except RuntimeError:
        return anyio.run(main)
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="openenv-mcp-eval") as pool:
        return pool.submit(anyio.run, main).result()

"""``openenv-mcp check ENV``: everything an environment's author should know before
shipping it, in one command that exits non-zero when anything fails (for CI).

It checks, in order, and says how to fix what fails:

1. **loads**: the name (an entry point, or ``module:Class``) imports to an
   :class:`~openenv_mcp.environment.Environment`, and a registered name is the
   class's own ``name`` (else ``serve NAME`` and the manifest disagree);
2. **manifest**: the derived manifest (:mod:`openenv_mcp.authoring.manifest`) holds and
   validates against the published JSON Schema;
3. **the contract** (:func:`openenv_mcp.authoring.testing.check_env`): declarations,
   spaces that travel, observations in their space, seeded determinism,
   snapshots, a worker process, an MCP round trip in memory;
4. **reward range and offline**: a seeded rollout, with the network blocked, keeps
   its rewards in the declared ``reward_range`` and, if it declares ``offline``,
   never reaches the network;
5. **tool schemas**: every tool, in both profiles, travels to every client
   (:mod:`openenv_mcp.wire.portability`);
6. **stdio**: ``openenv-mcp serve ENV --stdio`` starts, and a real MCP client
   resets, steps and closes an episode through it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from openenv_mcp.environment import Environment
from openenv_mcp.errors import OpenEnvError

__all__ = ["CheckLine", "run_checks"]

#: Steps of the reward-range rollout.
_STEPS = 200


@dataclass
class CheckLine:
    """One check: its name, whether it passed, and what it found (or how to fix it)."""

    name: str
    ok: bool
    detail: str = ""


@dataclass
class _Run:
    lines: list[CheckLine] = field(default_factory=list)

    def add(self, name: str, ok: bool, detail: str = "") -> bool:
        self.lines.append(CheckLine(name, ok, detail))
        return ok

    def attempt(self, name: str, fn: Callable[[], str]) -> bool:
        try:
            detail = fn()
        except _Failed as exc:
            return self.add(name, False, str(exc))
        except Exception as exc:
            return self.add(name, False, f"raised {type(exc).__name__}: {exc}")
        return self.add(name, True, detail)


class _Failed(Exception):
    """A check that failed: the message says what was wrong and how to fix it."""


def run_checks(env: str, args: list[str], stdio: bool = True) -> list[CheckLine]:
    """Run every check on ``env`` (a registered name or ``module:Class``) built with
    the options ``args`` (its CLI flags); each result in order. A failed early check
    skips those needing it."""
    from openenv_mcp.options import parse_cli_options
    from openenv_mcp.registry import get_entry, is_reference

    run = _Run()
    env_cls: type[Environment[Any]] | None = None
    options: dict[str, Any] = {}

    def loads() -> str:
        nonlocal env_cls, options
        entry = get_entry(env)
        env_cls = entry.load()
        (options,) = parse_cli_options([env_cls.Config], args, where=env)
        if not is_reference(env) and env_cls.name != env:
            raise _Failed(
                f"the entry point {env!r} loads {entry.reference}, whose name is "
                f"{env_cls.name!r}: name the entry point {env_cls.name!r} in your pyproject, or "
                f"set name = {env!r} in the class"
            )
        return f"{env} -> {entry.reference}"

    if not run.attempt("loads", loads) or env_cls is None:
        return run.lines
    cls = env_cls
    run.attempt("manifest", lambda: _manifest(cls, options))
    _contract(run, cls, options)
    run.attempt("reward range and offline", lambda: _rollout(cls, options))
    run.attempt("tool schemas", lambda: _schemas(cls, options))
    run.attempt("tasks", lambda: _tasks(cls, options))
    run.attempt("seats", lambda: _seats(cls, options))
    if stdio:
        run.attempt("stdio round trip", lambda: _stdio(env, args))
    return run.lines


def _manifest(env_cls: type[Environment[Any]], options: dict[str, Any]) -> str:
    import jsonschema
    from pydantic import ValidationError

    from openenv_mcp.authoring.manifest import FORMAT, build_manifest, manifest_schema
    from openenv_mcp.options import make_config

    try:
        manifest = build_manifest(env_cls, make_config(env_cls.Config, options, env_cls.name))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc']))}: {e['msg']} (got {e.get('input')!r})"
            for e in exc.errors()
        )
        raise _Failed(
            f"the class declares what no manifest may hold: {problems}. Set these class "
            "attributes (name: lower-case letters, digits and _; description: one line; "
            "resources: positive)"
        ) from None
    data = json.loads(manifest.model_dump_json())
    errors = sorted(jsonschema.Draft202012Validator(manifest_schema()).iter_errors(data), key=str)
    if errors:
        raise _Failed(f"the manifest breaks its schema: {errors[0].message}")
    low, high = manifest.reward_range
    return (
        f"{FORMAT}: {manifest.title}, package {manifest.package or '(not installed)'} "
        f"{manifest.version or ''}, rewards [{_num(low)}, {_num(high)}], "
        f"{manifest.resources.memory_mib} MiB for {manifest.resources.episodes} episodes"
    ).replace("  ", " ")


def _num(value: float | None) -> str:
    return "unbounded" if value is None else f"{value:g}"


def _contract(run: _Run, env_cls: type[Environment[Any]], options: dict[str, Any]) -> None:
    from openenv_mcp.authoring.testing import check_env

    report = check_env(env_cls, raise_on_failure=False, **options)
    for passed in report.passed:
        run.add(f"contract: {passed}", True)
    for failure in report.failures:
        what, _, why = failure.partition(": ")
        run.add(f"contract: {what}", False, why)
    for skipped in report.skipped:
        run.add(f"contract: {skipped}", True, "skipped")


def _rollout(env_cls: type[Environment[Any]], options: dict[str, Any]) -> str:
    """A seeded rollout, its network blocked: rewards in range, and ``offline`` true."""
    import socket
    from unittest import mock

    tried: list[str] = []
    connect = socket.socket.connect

    def refuse(sock: socket.socket, address: Any) -> Any:
        if sock.family == socket.AF_UNIX:
            return connect(sock, address)
        tried.append(repr(address))
        raise OSError(f"openenv-mcp check: no network (the env tried {address!r})")

    with mock.patch.object(socket.socket, "connect", refuse):
        try:
            ranged = _reward_range(env_cls, options)
        except Exception:
            if not tried:
                raise
            ranged = "(the rollout failed without the network)"
    if tried and env_cls.serving.offline:
        raise _Failed(
            f"it declares offline = True but connected to {', '.join(tried[:3])}: set offline "
            "= False on the class, or stop reaching the network"
        )
    where = "needs the network (offline = False)" if tried else "no network used"
    return f"{ranged}; {where}"


def _reward_range(env_cls: type[Environment[Any]], options: dict[str, Any]) -> str:
    import numpy as np

    from openenv_mcp.errors import InvalidAction
    from openenv_mcp.options import make_config
    from openenv_mcp.spaces import encode

    low, high = env_cls.serving.reward_range
    declared = not (math.isinf(low) and math.isinf(high))
    env = env_cls(make_config(env_cls.Config, options, env_cls.name))
    try:
        env.action_space.seed(0)
        _, info = env.reset(seed=0)
        seen = []
        for _ in range(_STEPS):
            mask = info.get("action_mask")
            for _attempt in range(50):  # an env may refuse actions its state makes illegal
                sample = (
                    env.action_space.sample(mask=np.asarray(mask, dtype=np.int8))
                    if mask is not None
                    else env.action_space.sample()
                )
                try:
                    action = env.parse_action(encode(env.action_space, sample))
                    break
                except InvalidAction:
                    continue
            else:
                raise _Failed(f"no legal action among 50 samples of {env.action_space}")
            result = env.step(action)
            seen.append(float(result.reward))
            info = result.info
            if result.terminated or result.truncated:
                _, info = env.reset()
    finally:
        env.close()
    if not declared:
        return (
            f"{len(seen)} seeded steps; no reward_range declared (set serving.reward_range to "
            "have it checked)"
        )
    outside = [r for r in seen if not low <= r <= high]
    if outside:
        raise _Failed(
            f"rewards {sorted(set(outside))[:5]} lie outside the declared reward_range "
            f"({low:g}, {high:g}): widen serving.reward_range, or fix the reward"
        )
    return (
        f"{len(seen)} seeded steps, rewards {min(seen):g}..{max(seen):g} within ({low:g}, {high:g})"
    )


def _tasks(env_cls: type[Environment[Any]], options: dict[str, Any]) -> str:
    """The task set, where the env publishes one: well formed, and each split's first
    task starts the same episode twice."""
    from openenv_mcp.codecs import to_jsonable
    from openenv_mcp.environment import parse_options
    from openenv_mcp.options import make_config
    from openenv_mcp.tasks import start_task

    env = env_cls(make_config(env_cls.Config, options, env_cls.name))
    try:
        task_set = env.task_set()
        if task_set is None:
            return "none published (optional: Environment.task_set)"
        problems = task_set.check()
        if problems:
            raise _Failed("the task set: " + "; ".join(problems[:5]))
        sizes = []
        for split in task_set.splits():
            size = len(task_set.tasks(split.name))
            sizes.append(f"{split.name} {size}")
            if not size:
                continue
            started = start_task(task_set, env_cls.name, None, {"split": split.name, "index": 0})
            assert started is not None
            first = [
                to_jsonable(
                    env.reset(seed=started.seed, options=parse_options(env, started.options))[0]
                )
                for _ in range(2)
            ]
            if first[0] != first[1]:
                raise _Failed(
                    f"task {started.task.id} started twice gave two first observations: a "
                    "task must fix everything its episode starts from (a seed, options)"
                )
        return ", ".join(sizes)
    finally:
        env.close()


def _seats(env_cls: type[Environment[Any]], options: dict[str, Any]) -> str:
    """The game of seats, where the env publishes one: seeded games of random legal moves
    hold to the contract (:func:`openenv_mcp.seats.check_game`)."""
    from openenv_mcp.options import make_config
    from openenv_mcp.seats import check_game

    env = env_cls(make_config(env_cls.Config, options, env_cls.name))
    try:
        game = env.seated_game()
        if game is None:
            return "one player (optional: Environment.seated_game)"
        agents = ", ".join(game.possible_agents)
        game.close()

        def make() -> Any:
            made = env.seated_game()
            assert made is not None
            return made

        problems = check_game(make)
        if problems:
            raise _Failed("the game of seats: " + "; ".join(problems[:5]))
        return f"{agents}: 3 seeded games of random legal moves, replayed"
    finally:
        env.close()


def _schemas(env_cls: type[Environment[Any]], options: dict[str, Any]) -> str:
    import anyio
    from fastmcp import Client

    from openenv_mcp.server import ServerSettings, build_server, get_app
    from openenv_mcp.wire.portability import schema_problems

    async def listed(profile: str) -> list[dict[str, Any]]:
        server = build_server(env_cls, settings=ServerSettings(profile=profile), **options)
        try:
            async with Client(server) as client:
                tools = await client.list_tools()
        finally:
            await get_app(server).aclose()
        return [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools]

    counts, problems = [], []
    for profile in ("full", "agent"):
        tools = anyio.run(listed, profile)
        counts.append(f"{len(tools)} tools ({profile} profile)")
        for tool in tools:
            problems += [f"{profile} profile: {p}" for p in schema_problems(tool)]
    if problems:
        raise _Failed(
            "; ".join(problems[:5])
            + ": give each argument a type (a pydantic field, or an EnvTool params model)"
        )
    return ", ".join(counts) + ": every schema portable"


def _stdio(env: str, args: list[str]) -> str:
    from openenv_mcp._util.interpreter import python_command
    from openenv_mcp.client import MCPEnvClient

    command = python_command("-m", "openenv_mcp", "serve", env, "--stdio", *args)
    from openenv_mcp.errors import InvalidAction

    try:
        with MCPEnvClient(command, connect_timeout=120).sync() as client:
            client.reset(seed=0)
            client.action_space.seed(0)
            for _ in range(50):  # a sample the env accepts (text envs may refuse most)
                try:
                    _, reward, _, _, info = client.step(client.action_space.sample())
                except InvalidAction:
                    continue
                return (
                    f"serve {env} --stdio: reset, step (reward {reward:g}, step "
                    f"{info.get('step')}), close"
                )
            client.state()
    except OpenEnvError as exc:
        raise _Failed(f"{type(exc).__name__}: {exc}") from None
    return f"serve {env} --stdio: reset, state, close (no sampled action was legal to step)"

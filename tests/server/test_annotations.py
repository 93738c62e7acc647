"""Every tool of every bundled environment says what it does: MCP's four tool annotations
(``readOnlyHint``, ``destructiveHint``, ``idempotentHint``, ``openWorldHint``), every one
given, as a boolean, and true.

A hint left out means its cautious default to a client (a tool not read-only is then
destructive and open-world), and harnesses act on that: ``codex exec`` refused reset,
step and every action tool ("MCP tool call requires approval, but approval policy is
never"; issue 37, tests/harnesses/test_codex.py plays through it). The table below is
what each tool does; a tool it does not know fails the test, so a new one is decided.

The hints are the same on every path a client lists tools by: FastMCP's ``tools/list``
in memory, over real stdio (the lean transport hands ``tools/list`` to FastMCP), from
the prelude's answer book (what the next start of the same command line answers with
before the stack is up), and OpenEnv's JSON-RPC route (``/openenv/mcp``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import pytest
from fastmcp import Client

from openenv_mcp.environment import EnvTool
from openenv_mcp.registry import env_names
from openenv_mcp.server import ServerSettings, build_server, get_app
from openenv_mcp.server.tools._catalog import env_tool_hints
from openenv_mcp.server.transports._answers import CACHE_ENV
from openenv_mcp.spec import EnvSpec
from tests.servers import (
    INITIALIZE,
    PROCESS_ENVS,
    REQUIRED_OPTIONS,
    RawStdio,
    stdio_command,
    stop,
)

PROFILES = ["full", "agent"]
#: Each bundled env (with the options it needs), and the OpenEnv bridge serving an MCP
#: environment (its tools become tools of ours: calls, each a step).
SERVED: list[tuple[str, dict[str, Any]]] = [
    *((name, REQUIRED_OPTIONS.get(name, {})) for name in env_names()),
    ("openenv", {"env": "tests.openenv_envs:ToolsEnvironment"}),
]

#: Looks, changing nothing.
LOOK = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True}
#: Changes only the episode (its moves, a new one, a snapshot of it), every call anew.
ACT = {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False}
#: Frees what the client holds (an episode, a snapshot): called again, nothing more.
TIDY = {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": True}
#: What each tool does, and whether it runs the environment's code (then it reaches
#: whatever the environment reaches: openWorldHint is the env not being offline).
EPISODE_TOOLS: dict[str, tuple[dict[str, bool], bool]] = {
    "reset": (ACT, True),
    "step": (ACT, True),
    "step_batch": (ACT, True),
    "snapshot": (ACT, True),
    "state": (LOOK, True),
    "legal_actions": (LOOK, True),
    "close": (TIDY, True),  # ends the episode: the bridge's remote session closes too
    "release_snapshot": (TIDY, False),  # the server's own table
    "episode_summary": (LOOK, False),  # the server's own records
    "evaluate": (ACT, True),  # plays episodes of its own (an env with tasks, full profile)
    "collect": (ACT, True),  # plays episodes of its own (full profile)
    "run_episode": (ACT, True),
}
#: The bundled envs' own tools: all of them look (at the episode, the task, the board).
ENV_TOOLS = {
    "legal_moves",  # chess
    "history",  # echo
    "reward_rule",
    "task",  # coding
    "read_file",
    "last_output",
    "list_tasks",
    "portfolio",  # trading
    "price_history",
}


def build(env: str, profile: str, options: dict[str, Any]) -> Any:
    return build_server(env, settings=ServerSettings(profile=profile), **options)


def expected(name: str, spec: EnvSpec) -> dict[str, bool]:
    """What tool ``name`` of a server of ``spec`` must say."""
    reaches = not spec.serving.offline
    actions = spec.action_set
    action_tools = {actions.tool_name(a) for a in actions} if actions is not None else set()
    calls = set(getattr(spec.action_space, "tools", None) or ())
    if name in EPISODE_TOOLS:
        hints, runs_env = EPISODE_TOOLS[name]
        return {**hints, "openWorldHint": reaches and runs_env}
    if name in ENV_TOOLS:
        return {**LOOK, "openWorldHint": reaches}
    if name.removeprefix("act_") in action_tools or name.removeprefix("call_") in calls:
        return {**ACT, "openWorldHint": reaches}
    raise AssertionError(f"tool {name!r} of {spec.name}: decide what it does (the table)")


def cases() -> list[Any]:
    return [
        pytest.param(
            env,
            profile,
            options,
            id=f"{env}{'-' + options['env'].rsplit(':')[-1] if 'env' in options else ''}-{profile}",
            marks=[pytest.mark.integration] if env in PROCESS_ENVS else [],
        )
        for env, options in SERVED
        for profile in PROFILES
    ]


def wire(annotations: Any) -> dict[str, Any]:
    """Annotations as ``tools/list`` sends them."""
    assert annotations is not None
    dumped: dict[str, Any] = annotations.model_dump(by_alias=True, exclude_none=True, mode="json")
    return dumped


async def memory_annotations(server: Any) -> dict[str, dict[str, Any]]:
    async with Client(server, timeout=60) as client:
        return {t.name: wire(t.annotations) for t in await client.list_tools()}


@pytest.mark.anyio
@pytest.mark.parametrize(("env", "profile", "options"), cases())
async def test_every_tool_says_what_it_does(
    env: str, profile: str, options: dict[str, Any]
) -> None:
    server = build(env, profile, options)
    spec = get_app(server).spec
    listed = await memory_annotations(server)
    for name, hints in listed.items():
        assert set(hints) == {"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}
        assert all(isinstance(v, bool) for v in hints.values()), (name, hints)
    assert listed == {name: expected(name, spec) for name in listed}
    if spec.serving.offline:  # then codex exec runs every tool: none may harm or reach out
        for hints in listed.values():
            assert hints["readOnlyHint"] or not (hints["destructiveHint"] or hints["openWorldHint"])


def cli_options(options: dict[str, Any]) -> list[str]:
    return [arg for k, v in options.items() for arg in (f"--{k.replace('_', '-')}", str(v))]


def stdio_tools_list(argv: list[str], env: dict[str, str]) -> dict[str, dict[str, Any]]:
    """A raw ``tools/list`` over stdio, after the handshake: each tool's annotations."""
    server = RawStdio(argv, env=env)
    try:
        server.send(INITIALIZE)
        server.until(lambda seen: any(m.get("id") == "init" for m in seen))
        server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        server.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        answer = server.until(lambda seen: any(m.get("id") == 2 for m in seen))[-1]
    finally:
        stop(server.proc)
    return {t["name"]: t.get("annotations") for t in answer["result"]["tools"]}


def kept_tools_lists(folder: Path) -> list[dict[str, dict[str, Any]]]:
    """Every ``tools/list`` answer the answer books in ``folder`` keep."""
    found = []
    for book in folder.glob("*.json"):
        for answers in orjson.loads(book.read_bytes())["answers"].values():
            if "tools/list" in answers:
                tools = answers["tools/list"]["tools"]
                found.append({t["name"]: t.get("annotations") for t in tools})
    return found


@pytest.mark.integration
@pytest.mark.anyio
@pytest.mark.parametrize(("env", "profile", "options"), cases())
async def test_stdio_and_the_answer_book_list_the_same_hints(
    env: str, profile: str, options: dict[str, Any], tmp_path: Path
) -> None:
    in_memory = await memory_annotations(build(env, profile, options))
    argv = stdio_command(env, *cli_options(options), "--profile", profile)
    variables = {**os.environ, CACHE_ENV: str(tmp_path / "answers")}
    first = stdio_tools_list(argv, variables)  # the stack answers, and its answers are kept
    kept = kept_tools_lists(tmp_path / "answers")
    second = stdio_tools_list(argv, variables)  # answered from the book while the stack loads
    assert first == in_memory
    assert kept == [in_memory]
    assert second == in_memory


@pytest.mark.anyio
async def test_openenv_route_lists_the_same_hints() -> None:
    from tests.server.faces.test_openenv_routes import client, openenv_app

    server = build("echo", "full", {})
    in_memory = await memory_annotations(server)
    async with client(openenv_app(server)) as http:
        request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        listed = (await http.post("/openenv/mcp", json=request)).json()["result"]["tools"]
    assert {t["name"]: t["annotations"] for t in listed} == in_memory


@pytest.mark.integration
@pytest.mark.anyio
async def test_a_remote_openenv_servers_tools_reach_outside() -> None:
    """``serve openenv --url``: every tool that runs the bridge's environment talks to the
    OpenEnv server, so it is open-world (Codex asks before each; see the README)."""
    from tests.openenv_procs import openenv_server

    with openenv_server("tests.openenv_apps:tools") as url:
        for profile in PROFILES:
            server = build("openenv", profile, {"url": url})
            spec = get_app(server).spec
            listed = await memory_annotations(server)
            assert {"add", "picture", "finish"} <= set(listed)  # the remote env's tools
            assert listed == {name: expected(name, spec) for name in listed}
            reaching = {n for n, h in listed.items() if h["openWorldHint"]}
            assert reaching == set(listed) - {"release_snapshot", "episode_summary"}


def test_env_tools_declare_their_hints_and_the_rest_is_derived() -> None:
    echo = get_app(build("echo", "full", {})).spec

    def tool(**hints: Any) -> EnvTool:
        return EnvTool("t", "A tool.", "episode", lambda env, args: {}, **hints)

    def said(made: EnvTool, spec: EnvSpec = echo) -> dict[str, Any]:
        return wire(env_tool_hints(made, spec).annotations())

    assert said(tool()) == {**LOOK, "openWorldHint": False}
    assert said(tool(read_only=False)) == {**ACT, "openWorldHint": False}
    assert said(tool(read_only=False, idempotent=True)) == {**TIDY, "openWorldHint": False}
    declared = tool(read_only=False, destructive=True, open_world=True)
    assert said(declared) == {**ACT, "destructiveHint": True, "openWorldHint": True}
    # an env that is not offline reaches out from its tools, unless a tool says otherwise
    remote = get_app(build("openenv", "full", REQUIRED_OPTIONS["openenv"])).spec
    assert said(tool(), remote)["openWorldHint"] is True
    assert said(tool(open_world=False), remote)["openWorldHint"] is False
    with pytest.raises(ValueError, match="cannot be destructive"):
        tool(destructive=True)
    with pytest.raises(ValueError, match="is idempotent"):
        tool(idempotent=False)

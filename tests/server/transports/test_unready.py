"""A stdio server that cannot serve its environment still answers the MCP handshake and
says why, with the command that fixes it: harnesses show none of a server's stderr.

The unit tests judge the answers (:class:`Unready`), the loop's two modes, and the
reason and fix told for a start's error (:func:`why_not_started`). The
integration tests drive real servers with the MCP SDK's own client, reading the
instructions and calling the one tool as a harness's model would: ``./dev run`` with
nothing set up (the system's Python answers), an environment that cannot be built (a
missing extra, a module that is not there), and a start that dies after the prelude
gave the handshake kept from an earlier start (the first call says why, then the
server ends).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import typer
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from openenv_mcp.errors import ArgumentError, DependencyNotInstalled
from openenv_mcp.server.transports._answers import CACHE_ENV
from openenv_mcp.server.transports._unready import DEV_ENV, TOOL, Unready, serve, why_not_started
from tests.servers import CLI, INITIALIZE, ROOT, RawStdio, call, initialize, request

pytestmark = pytest.mark.anyio

DEV = str(ROOT / "dev")
WAIT = 120
LEGACY = "2025-06-18"


# -- unit: what it answers ----------------------------------------------------------------


UNREADY = Unready("nothing is set up.", "run `/x/dev setup atari`, then restart.", "1.2")


def test_the_handshake_the_tool_and_its_call_say_why_and_what_to_run() -> None:
    init = UNREADY.answer(initialize())
    assert init is not None
    result = init["result"]
    assert result["protocolVersion"] == LEGACY
    assert result["serverInfo"] == {"name": "openenv-mcp", "version": "1.2"}
    assert "nothing is set up." in result["instructions"]
    assert "/x/dev setup atari" in result["instructions"]
    later = UNREADY.answer(initialize("2099-01-01"))
    assert later is not None and later["result"]["protocolVersion"] == "2025-11-25"

    listed = UNREADY.answer(request("tools/list"))
    assert listed is not None
    (tool,) = listed["result"]["tools"]
    assert tool["name"] == TOOL and "/x/dev setup atari" in tool["description"]
    assert tool["annotations"]["readOnlyHint"] is True

    for name in (TOOL, "reset"):  # any tool: a client may still call what it knew
        called = UNREADY.answer(request("tools/call", {"name": name, "arguments": {}}))
        assert called is not None
        assert called["result"]["isError"] is True
        assert "/x/dev setup atari" in called["result"]["content"][0]["text"]


def test_discover_is_refused_with_the_reason_and_the_rest_is_plain() -> None:
    """A 2026-07-28 client's probe gets an error (it falls back to the handshake; ours
    reports the reason); the lists are empty, a ping answered, notifications not."""
    discover = UNREADY.answer(request("server/discover"))
    assert discover is not None and discover["error"]["code"] == -32601
    assert "nothing is set up." in discover["error"]["message"]
    assert UNREADY.answer(request("resources/read", {"uri": "x"}))["error"]  # type: ignore[index]
    assert UNREADY.answer(request("ping")) == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert UNREADY.answer(request("resources/list"))["result"] == {"resources": []}  # type: ignore[index]
    assert UNREADY.answer({"jsonrpc": "2.0", "method": "notifications/initialized"}) is None
    assert UNREADY.answer({"jsonrpc": "2.0", "id": 7, "result": {}}) is None
    assert UNREADY.answer([1, 2])["error"]["code"] == -32600  # type: ignore[index]


def _serve_on_pipes(
    lines: list[dict[str, Any]], close: bool, **how: Any
) -> tuple[list[dict[str, Any]], threading.Thread]:
    """Run :func:`serve` on pipes with ``lines`` written (and stdin closed, ``close``);
    the answers it wrote once it returned, and its thread."""
    client_in, server_out = os.pipe()
    server_in, client_out = os.pipe()
    os.write(client_out, b"".join(json.dumps(m).encode() + b"\n" for m in lines))
    if close:
        os.close(client_out)
    thread = threading.Thread(target=serve, args=(server_in, server_out, UNREADY), kwargs=how)
    thread.start()
    thread.join(30)
    if not close:
        assert not thread.is_alive()
        os.close(client_out)
    os.close(server_out)
    os.close(server_in)
    with os.fdopen(client_in, "rb") as answers:
        return [json.loads(line) for line in answers], thread


def test_it_answers_until_the_client_leaves() -> None:
    answers, thread = _serve_on_pipes(
        [initialize(), request("tools/list", request_id=2), call(3, TOOL, {})], close=True
    )
    assert not thread.is_alive()
    assert [a["id"] for a in answers] == [1, 2, 3]
    assert answers[2]["result"]["isError"]


def test_after_a_kept_handshake_the_first_call_says_why_then_it_ends() -> None:
    """The client got a working server's handshake and tools: kept lists still answer, the
    first request that needed the server gets the reason, and the loop ends without
    waiting for the client to leave."""
    kept = {"tools/list": {"tools": [{"name": "reset"}]}}
    answers, _ = _serve_on_pipes(
        [request("tools/list"), request("ping", request_id=2), call(3, "reset", {})],
        close=False,
        kept=lambda message: kept.get(message["method"]),
    )
    assert [a["id"] for a in answers] == [1, 2, 3]
    assert answers[0]["result"] == kept["tools/list"]
    assert answers[2]["result"]["isError"]
    assert "nothing is set up." in answers[2]["result"]["content"][0]["text"]


# -- unit: why a start failed, and what fixes it ------------------------------------------


def _exit_behind(error: BaseException) -> SystemExit:
    """The ``SystemExit`` the CLI ends with after printing ``error``: ``typer.Exit`` raised
    while handling it (``from None``), then ``SystemExit`` while handling that."""
    try:
        try:
            try:
                raise error
            except BaseException:
                raise typer.Exit(2) from None
        except typer.Exit:
            raise SystemExit(2) from None
    except SystemExit as exc:
        return exc


def test_a_failed_start_s_reason_is_the_error_behind_the_cli_s_exit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "argv", ["openenv-mcp", "serve", "atari", "--gmae", "pong"])
    why = why_not_started(_exit_behind(ArgumentError("unknown option '--gmae'")), "atari")
    assert why is not None
    reason, fix = why
    assert reason == "unknown option '--gmae'"
    assert "correct this MCP server's command line" in fix
    assert "openenv-mcp serve atari --gmae pong" in fix
    crashed = why_not_started(RuntimeError("no ROM"), "atari")
    assert crashed is not None and crashed[0] == "RuntimeError: no ROM"
    assert crashed[1].startswith("fix the cause above")
    assert why_not_started(_exit_behind(KeyboardInterrupt()), "atari") is None  # stopped
    exited = why_not_started(SystemExit(3), "atari")
    assert exited is not None and exited[0] == "it exited at start (status 3)."


def test_a_missing_extra_s_fix_installs_it(monkeypatch: pytest.MonkeyPatch) -> None:
    missing = DependencyNotInstalled("environment 'chess' could not be imported: No module")
    monkeypatch.setenv(DEV_ENV, "/src/openenv-mcp/dev")
    why = why_not_started(_exit_behind(missing), "chess")
    assert why is not None and why[1].startswith("run `/src/openenv-mcp/dev setup chess` once")
    monkeypatch.delenv(DEV_ENV)
    why = why_not_started(_exit_behind(missing), "chess")
    assert why is not None and "-m pip install 'openenv-mcp[chess]'" in why[1]
    why = why_not_started(_exit_behind(ModuleNotFoundError("No module named 'x'")), "x:Y")
    assert why is not None and why[1].startswith("install the missing module")


# -- integration: real servers, a real client ------------------------------------------------


async def _told(params: StdioServerParameters, mode: str = "auto") -> tuple[str, str, str]:
    """Connect as a harness would; the instructions, the one tool's description and the
    text of calling it."""
    with anyio.fail_after(WAIT):
        async with Client(params, mode=mode) as client:  # type: ignore[arg-type]
            tools = (await client.list_tools()).tools
            assert [t.name for t in tools] == [TOOL]
            called = await client.call_tool(TOOL, {})
            assert called.is_error
            text = called.content[0].text  # type: ignore[union-attr]
            return client.instructions or "", tools[0].description or "", text


def _stdlib_only_python() -> str:
    """A Python 3.11+ outside the project's venv (the system's, as ``./dev`` finds it)."""
    venv = str(ROOT / ".venv")
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if venv not in p)
    for name in ("python3", "python3.13", "python3.12", "python3.11"):
        found = shutil.which(name, path=path)
        if found is not None:
            version = subprocess.run(
                [found, "-c", "import sys; print(sys.version_info >= (3, 11))"],
                capture_output=True,
                text=True,
            )
            if version.stdout.strip() == "True":
                return found
    pytest.skip("no Python 3.11+ outside the venv")


@pytest.mark.integration
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_dev_run_with_nothing_set_up_answers_with_the_set_up_command(
    tmp_path: Path, mode: str
) -> None:
    """``./dev run`` with an empty venv directory: the system's Python answers (the
    standard library only), naming ``./dev setup`` by its absolute path."""
    empty = tmp_path / "venv"
    empty.mkdir()
    env = {**os.environ, "OPENENV_MCP_VENV": str(empty), "PYTHON": _stdlib_only_python()}
    params = StdioServerParameters(
        command=DEV, args=["run", "serve", "atari", "--stdio"], env=env, cwd=str(tmp_path)
    )
    instructions, description, text = await _told(params, mode)
    command = f"{DEV} setup atari"
    for said in (instructions, description, text):
        assert command in said and "not set up" in said
    assert list(empty.iterdir()) == []  # nothing installed


@pytest.mark.integration
def test_dev_run_with_nothing_set_up_still_says_it_on_stderr_and_ends_at_eof(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "OPENENV_MCP_VENV": str(tmp_path), "PYTHON": _stdlib_only_python()}
    done = subprocess.run(
        [DEV, "run", "serve", "chess", "--stdio"],
        input=json.dumps(INITIALIZE) + "\n" + json.dumps(call("c", TOOL, {})) + "\n",
        capture_output=True,
        text=True,
        env=env,
        timeout=WAIT,
    )
    assert done.returncode == 1
    assert f"{DEV} setup chess" in done.stderr and "not set up yet" in done.stderr
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert [a["id"] for a in answers] == ["init", "c"]
    assert f"{DEV} setup chess" in answers[1]["result"]["content"][0]["text"]


def _env(books: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, CACHE_ENV: str(books), **extra}


@pytest.mark.integration
@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["openenv", "--env", "nosuch:Thing"], "No module named 'nosuch'"),
        (["nosuch_module:Thing"], "No module named 'nosuch_module'"),
        (["atari", "--gmae", "pong"], "Did you mean '--game'?"),
    ],
)
async def test_an_environment_that_cannot_be_built_says_why(
    tmp_path: Path, args: list[str], said: str
) -> None:
    params = StdioServerParameters(
        command=CLI[0],
        args=[*CLI[1:], "serve", *args, "--stdio"],
        env=_env(tmp_path / "books"),
        cwd=str(ROOT),
    )
    instructions, description, text = await _told(params)
    for told in (instructions, description, text):
        assert said in told
        assert "correct this MCP server's command line" in told
        assert f"openenv-mcp serve {' '.join(args)} --stdio" in told


@pytest.fixture
def chess_missing(tmp_path: Path) -> Iterator[Path]:
    """A directory that, first on PYTHONPATH, makes ``import chess`` fail as if the
    [chess] extra were not installed."""
    stub = tmp_path / "no_chess" / "chess"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'chess'\", name='chess')\n"
    )
    yield stub.parent


@pytest.mark.integration
async def test_a_missing_extra_names_dev_setup_for_it(tmp_path: Path, chess_missing: Path) -> None:
    """``./dev run serve chess`` without the [chess] extra: the command is ``./dev setup
    chess`` (``./dev run`` says where ``./dev`` is)."""
    env = _env(
        tmp_path / "books", PYTHONPATH=str(chess_missing), OPENENV_MCP_VENV=str(ROOT / ".venv")
    )
    params = StdioServerParameters(
        command=DEV, args=["run", "serve", "chess", "--stdio"], env=env, cwd=str(tmp_path)
    )
    instructions, description, text = await _told(params)
    for told in (instructions, description, text):
        assert "could not be imported: No module named 'chess'" in told
        assert f"run `{DEV} setup chess`" in told


@pytest.mark.integration
async def test_without_dev_a_missing_extra_names_pip(tmp_path: Path, chess_missing: Path) -> None:
    env = _env(tmp_path / "books", PYTHONPATH=str(chess_missing))
    env.pop(DEV_ENV, None)
    params = StdioServerParameters(
        command=CLI[0], args=[*CLI[1:], "serve", "chess", "--stdio"], env=env, cwd=str(ROOT)
    )
    instructions, _, _ = await _told(params)
    assert f"{sys.executable} -m pip install 'openenv-mcp[chess]'" in instructions


#: An environment whose start fails when asked to (``FLAKY_START_FAILS``), from a module
#: outside openenv-mcp: what changes between two starts is not what the book watches.
FLAKY = """
import os

from openenv_mcp_envs.echo.env import EchoEnv


class FlakyStart(EchoEnv):
    def __init__(self, config):
        if os.environ.get("FLAKY_START_FAILS"):
            raise RuntimeError("the flaky env's licence file is gone")
        super().__init__(config)
"""


@pytest.mark.integration
async def test_a_start_dying_after_the_kept_handshake_says_why_at_the_first_call(
    tmp_path: Path,
) -> None:
    """The prelude answers initialize and tools/list from what the last start answered;
    the start then dies. The first call gets an error result naming the cause (not a
    closed connection), and the server ends."""
    modules = tmp_path / "modules"
    modules.mkdir()
    (modules / "flaky_start.py").write_text(textwrap.dedent(FLAKY))
    books = tmp_path / "books"
    argv = [*CLI, "serve", "flaky_start:FlakyStart", "--stdio"]
    params = StdioServerParameters(
        command=argv[0], args=argv[1:], env=_env(books, PYTHONPATH=str(modules)), cwd=str(ROOT)
    )
    with anyio.fail_after(WAIT):
        async with Client(params, mode="legacy") as client:  # a start that works: kept
            tools = sorted(t.name for t in (await client.list_tools()).tools)
            instructions = client.instructions
            assert not (await client.call_tool("reset", {})).is_error
    assert list(books.glob("*.json"))

    failing = _env(books, PYTHONPATH=str(modules), FLAKY_START_FAILS="1")
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=failing, cwd=str(ROOT))
    with anyio.fail_after(WAIT):
        async with Client(params, mode="legacy") as client:
            assert client.instructions == instructions  # kept: the start had not failed yet
            assert sorted(t.name for t in (await client.list_tools()).tools) == tools
            called = await client.call_tool("reset", {})
            assert called.is_error
            text = called.content[0].text  # type: ignore[union-attr]
            assert "the flaky env's licence file is gone" in text
            assert "fix the cause above" in text and "flaky_start:FlakyStart" in text

    # Line by line, in the handshake the client above kept: the answer, then the end.
    (book,) = books.glob("*.json")
    (scope,) = json.loads(book.read_text())["answers"]
    initialize: dict[str, Any] = json.loads(json.dumps(INITIALIZE))
    initialize["params"]["protocolVersion"] = scope.removeprefix("legacy:")
    server = RawStdio(argv, env=failing)
    for message in (
        initialize,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": "list", "method": "tools/list"},
        call("reset", "reset", {"seed": 1}),
    ):
        server.send(message)
    seen = server.until(lambda seen: len(seen) == 3)
    assert [m["id"] for m in seen] == ["init", "list", "reset"]
    assert seen[1]["result"]["tools"] and seen[2]["result"]["isError"]
    assert server.receive() is None  # it ended without being asked to
    assert server.proc.wait(30) != 0
    assert "licence file is gone" in server.stderr()

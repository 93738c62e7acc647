"""A stdio server's prelude: the handshake and the lists answered from what the same
command line's server answered before, then the real stack taking over.

The unit tests judge the decisions (what may be answered from a book, and when a
book is stale); the integration tests start real servers with a book directory of
their own and drive them with the MCP SDK's own client in both protocol eras, and
line by line. Times are never asserted: ``openenv-mcp bench --startup`` measures them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest
from mcp import types
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from openenv_mcp._launch import serves_stdio
from openenv_mcp.server.transports._answers import CACHE_ENV, AnswerBook
from openenv_mcp.server.transports._prelude import PRIVATE_ID, Answerer
from tests.servers import (
    CLI,
    INITIALIZE,
    ROOT,
    RawStdio,
    call,
    initialize,
    request,
    sessionless_meta,
)

pytestmark = pytest.mark.anyio

LEGACY = "2025-06-18"
MODERN = "2026-07-28"
_ENVELOPE = sessionless_meta("t")


# -- unit: what the prelude may answer ------------------------------------------------------


def _book(scope: str, answers: dict[str, Any]) -> AnswerBook:
    return AnswerBook(None, [], {scope: answers})


INIT_RESULT = {"protocolVersion": LEGACY, "capabilities": {}, "serverInfo": {"name": "x"}}


def test_legacy_handshake_then_lists_from_the_book() -> None:
    book = _book(f"legacy:{LEGACY}", {"initialize": INIT_RESULT, "tools/list": {"tools": []}})
    answerer = Answerer(book)
    assert answerer.answer(request("tools/list")) is None  # not before initialize
    assert answerer.answer(initialize()) == (f"legacy:{LEGACY}", INIT_RESULT)
    assert answerer.answer(request("tools/list", request_id=2)) == (
        f"legacy:{LEGACY}",
        {"tools": []},
    )
    assert answerer.answer(request("prompts/list")) is None  # not kept
    assert answerer.answer(request("tools/list", {"cursor": "x"})) is None
    assert answerer.answer(request("tools/list", {"_meta": _ENVELOPE})) is None  # other era
    assert answerer.answer(initialize()) is None  # a second handshake is the stack's to refuse
    assert answerer.answer(request("tools/call", {"name": "reset"})) is None


def test_an_unknown_protocol_version_is_not_answered() -> None:
    answerer = Answerer(_book(f"legacy:{LEGACY}", {"initialize": INIT_RESULT}))
    assert answerer.answer(initialize("2099-01-01")) is None
    assert answerer.era is None


def test_modern_requests_carry_their_own_version() -> None:
    discover = {"supportedVersions": [MODERN]}
    answerer = Answerer(_book(f"modern:{MODERN}", {"server/discover": discover}))
    assert answerer.answer(request("server/discover", {"_meta": _ENVELOPE})) == (
        f"modern:{MODERN}",
        discover,
    )
    assert answerer.answer(initialize()) is None  # the handshake on a modern connection
    assert answerer.answer(request("server/discover")) is None  # no envelope


def test_a_client_declaring_extensions_is_answered_by_the_stack() -> None:
    """The kept answers are a plain client's: one announcing MCP Apps sees other lists
    (the ui:// view), so neither its requests nor, in the legacy era, its session are
    answered from the book."""
    lists = {"tools/list": {"tools": []}, "resources/list": {"resources": []}}
    answerer = Answerer(_book(f"modern:{MODERN}", lists))
    ui = {
        "extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}
    }
    extended = {**_ENVELOPE, "io.modelcontextprotocol/clientCapabilities": ui}
    assert answerer.answer(request("tools/list", {"_meta": extended})) is None
    assert answerer.answer(request("tools/list", {"_meta": _ENVELOPE})) is not None
    legacy = Answerer(_book(f"legacy:{LEGACY}", {"initialize": INIT_RESULT, **lists}))
    handshake = initialize()
    handshake["params"]["capabilities"] = ui
    assert legacy.answer(handshake) is None
    assert legacy.answer(request("tools/list", request_id=2)) is None


def test_malformed_requests_are_left_to_the_stack() -> None:
    """The stack says what is wrong with them; a kept answer would hide it."""
    book = _book(f"legacy:{LEGACY}", {"initialize": INIT_RESULT})
    no_version = request("initialize", {"protocolVersion": LEGACY, "capabilities": {}})
    no_version["params"]["clientInfo"] = {"name": "t"}
    assert Answerer(book).answer(no_version) is None
    discover = {"supportedVersions": [MODERN]}
    answerer = Answerer(_book(f"modern:{MODERN}", {"server/discover": discover}))
    half = {"io.modelcontextprotocol/protocolVersion": MODERN}  # no clientCapabilities
    assert answerer.answer(request("server/discover", {"_meta": half})) is None


def test_notifications_and_odd_messages_are_never_answered() -> None:
    answerer = Answerer(_book(f"legacy:{LEGACY}", {"initialize": INIT_RESULT}))
    assert answerer.answer({"jsonrpc": "2.0", "method": "notifications/initialized"}) is None
    assert answerer.answer([initialize()]) is None
    assert answerer.answer({**initialize(), "id": None}) is None
    assert answerer.answer({**initialize(), "id": 1.5}) is None
    assert answerer.answer({**initialize(), "id": True}) is None


def test_a_book_is_stale_when_its_code_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "books"))
    watched = tmp_path / "env_pkg"
    watched.mkdir()
    (watched / "env.py").write_text("A = 1\n")
    book = AnswerBook.open(["atari", "--stdio"])
    assert book.put(f"legacy:{LEGACY}", "initialize", INIT_RESULT)
    assert not book.put(f"legacy:{LEGACY}", "initialize", INIT_RESULT)
    book.save([str(watched)])
    assert AnswerBook.open(["atari", "--stdio"]).get(f"legacy:{LEGACY}", "initialize")
    assert AnswerBook.open(["pong", "--stdio"]).answers == {}  # another command line
    (watched / "env.py").write_text("A = 22\n")
    assert AnswerBook.open(["atari", "--stdio"]).answers == {}


def test_books_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_ENV, "off")
    book = AnswerBook.open(["echo"])
    assert book.path is None
    book.save([])  # nothing written, no error


def test_which_command_lines_start_a_prelude() -> None:
    assert serves_stdio(["serve", "atari", "--stdio", "--game", "pong"])
    assert serves_stdio(["serve", "echo"])  # stdio is the default
    assert not serves_stdio(["serve", "atari", "--http"])
    assert not serves_stdio(["serve", "atari", "--ray"])
    assert not serves_stdio(["serve", "--help"])
    assert not serves_stdio(["serve", "echo", "--no-fast-path"])
    assert not serves_stdio(["list"])
    assert not serves_stdio([])


# -- integration: real servers -------------------------------------------------------------


def _env(books: Path) -> dict[str, str]:
    return {**os.environ, CACHE_ENV: str(books)}


def _params(books: Path, env: str = "echo", *options: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=CLI[0],
        args=[*CLI[1:], "serve", env, "--stdio", *options],
        env=_env(books),
        cwd=str(ROOT),
    )


def _kept(books: Path) -> dict[str, Any]:
    (path,) = books.glob("*.json")
    return dict(orjson.loads(path.read_bytes()))


async def _session(
    params: StdioServerParameters, mode: str, **kwargs: Any
) -> tuple[str | None, list[str], Any]:
    """Connect, list the tools, reset and step; the instructions, tool names and step."""
    with anyio.fail_after(120):
        async with Client(params, mode=mode, **kwargs) as client:  # type: ignore[arg-type]
            tools = await client.list_tools()
            reset = await client.call_tool("reset", {"seed": 3})
            step = await client.call_tool("step", {"action": "hello"})
            assert not reset.is_error and not step.is_error
            episode = reset.structured_content["episode_id"]  # type: ignore[index]
            assert step.structured_content["episode_id"] == episode  # type: ignore[index]
            result = {k: v for k, v in step.structured_content.items() if k != "episode_id"}  # type: ignore[union-attr]
            return client.instructions, sorted(t.name for t in tools.tools), result


@pytest.mark.integration
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_second_start_answers_from_the_first_ones_answers(
    tmp_path: Path, mode: str
) -> None:
    """The python SDK's client, in the handshake era (``legacy``) and the sessionless one
    (``auto`` probes ``server/discover``): the same tools and results both starts."""
    books = tmp_path / "books"
    first = await _session(_params(books), mode)
    kept = _kept(books)["answers"]
    era = "legacy" if mode == "legacy" else "modern"
    assert any(scope.startswith(era) and "tools/list" in kept[scope] for scope in kept)
    second = await _session(_params(books), mode)
    assert second == first
    assert _kept(books)["answers"] == kept  # the stack agreed with every kept answer


@pytest.mark.integration
async def test_a_stale_book_is_mended_and_the_client_told(tmp_path: Path) -> None:
    books = tmp_path / "books"
    await _session(_params(books), "legacy")
    (path,) = books.glob("*.json")
    record = orjson.loads(path.read_bytes())
    (scope,) = (s for s in record["answers"] if "tools/list" in record["answers"][s])
    tools = record["answers"][scope]["tools/list"]["tools"]
    record["answers"][scope]["tools/list"]["tools"] = [t for t in tools if t["name"] != "state"]
    path.write_bytes(orjson.dumps(record))

    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    params = _params(books)
    with anyio.fail_after(120):
        async with Client(params, mode="legacy", message_handler=on_message) as client:  # type: ignore[arg-type]
            told = {t.name for t in (await client.list_tools()).tools}
            assert "state" not in told  # the prelude answered from the (edited) book
            await changed.wait()
            assert "state" in {t.name for t in (await client.list_tools()).tools}
    assert any(t["name"] == "state" for t in _kept(books)["answers"][scope]["tools/list"]["tools"])


@pytest.mark.integration
def test_pipelined_requests_are_all_answered_once(tmp_path: Path) -> None:
    """A client that sends everything at once: the prelude answers what it can, the stack
    the rest, each request exactly once and no reply to a replayed request leaks."""
    books = tmp_path / "books"
    argv = [*CLI, "serve", "echo", "--stdio"]
    for start in ("first", "second"):
        server = RawStdio(argv, env=_env(books))
        for message in (
            INITIALIZE,
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": "list", "method": "tools/list"},
            call("reset", "reset", {"seed": 1}),
            call("step", "step", {"action": "hi"}),
            {"jsonrpc": "2.0", "id": "again", "method": "tools/list"},
        ):
            server.send(message)
        server.proc.stdin.close()  # type: ignore[union-attr]
        seen = []
        while (message := server.receive()) is not None:
            seen.append(message)
        assert server.proc.wait(30) == 0
        ids = sorted(str(m.get("id")) for m in seen)
        assert ids == sorted(["init", "list", "reset", "step", "again"]), (start, seen)
        assert not any(str(m.get("id")).startswith(PRIVATE_ID) for m in seen)
        step = next(m for m in seen if m.get("id") == "step")
        assert step["result"]["structuredContent"]["step"] == 1
        server.stderr()


def _run(argv: list[str], books: Path, **how: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=60, env=_env(books), cwd=ROOT, **how
    )


@pytest.mark.integration
@pytest.mark.parametrize("stdin", ["/dev/null", "a closed pipe"])
def test_stdin_at_eof_exits_cleanly(tmp_path: Path, stdin: str) -> None:
    argv = [*CLI, "serve", "atari", "--game", "breakout", "--stdio"]
    how: dict[str, Any] = {"stdin": subprocess.DEVNULL} if stdin == "/dev/null" else {"input": ""}
    done = _run(argv, tmp_path, **how)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


@pytest.mark.integration
def test_bad_options_are_reported_even_with_stdin_closed(tmp_path: Path) -> None:
    done = _run([*CLI, "serve", "atari", "--game", "breakot"], tmp_path, stdin=subprocess.DEVNULL)
    assert done.returncode == 2
    assert "Did you mean 'breakout'?" in done.stderr


@pytest.mark.integration
def test_without_the_prelude_dev_null_is_read_too(tmp_path: Path) -> None:
    """``python -m openenv_mcp.cli`` has no prelude: the stack reads /dev/null itself."""
    argv = [sys.executable, "-m", "openenv_mcp.cli", "serve", "echo", "--stdio"]
    done = _run(argv, tmp_path, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.integration
def test_books_turned_off_still_serve(tmp_path: Path) -> None:
    env = {**os.environ, CACHE_ENV: "off"}
    lines = [INITIALIZE, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]
    done = subprocess.run(
        [*CLI, "serve", "echo", "--stdio"],
        input="".join(json.dumps(m) + "\n" for m in lines),
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["id"] for line in done.stdout.splitlines()] == ["init", 2]
    assert not list(tmp_path.iterdir())

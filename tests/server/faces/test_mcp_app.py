"""The game view as an MCP App: what a client announcing ``io.modelcontextprotocol/ui``
sees, and that a client without it sees exactly what it saw before the App existed."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastmcp import Client, FastMCP
from mcp.client import Client as SdkClient
from mcp.client import advertise
from mcp.client.stdio import StdioServerParameters

from openenv_mcp.server import build_server
from openenv_mcp.server._settings import ServerSettings
from openenv_mcp.server.faces import _mcp_app
from openenv_mcp.server.faces._mcp_app import (
    APP_MIME,
    EXTENSION_ID,
    REPLAY_TOOL,
    VIEW_META,
    view_html,
    view_uri,
)
from tests.servers import CLI, ROOT

pytestmark = pytest.mark.anyio

APPS = advertise(EXTENSION_ID, {"mimeTypes": [APP_MIME]})
PONG = view_uri("atari")
_HANDLE = re.compile(r"ep_[A-Za-z0-9_-]{8,}")


def agent(env: str, **options: Any) -> FastMCP:
    return build_server(env, settings=ServerSettings(profile="agent"), **options)


@pytest.fixture
async def pong() -> AsyncIterator[FastMCP]:
    server = agent("atari", game="pong")
    yield server


def wire(value: Any) -> Any:
    """A result as the wire carries it, with episode handles made comparable."""
    text = json.dumps(value.model_dump(mode="json", by_alias=True, exclude_none=True))
    return json.loads(_HANDLE.sub("ep_X", text))


async def test_a_client_announcing_the_extension_sees_the_view(pong: FastMCP) -> None:
    async with Client(pong, extensions=[APPS]) as client:
        tools = {t.name: t for t in await client.list_tools()}
        for name in ("reset", "step", "state", "legal_actions", "fire", "left", "right_fire"):
            assert (tools[name].meta or {})["ui"] == {"resourceUri": PONG}, name
        assert REPLAY_TOOL not in tools  # served only with --record
        listed = {str(r.uri): r for r in await client.list_resources()}
        assert listed[PONG].mime_type == APP_MIME
        (content,) = await client.read_resource(PONG)
        assert content.mime_type == APP_MIME
        assert content.meta is not None
        assert content.meta["ui"]["csp"] == {"connectDomains": [], "resourceDomains": ["data:"]}
        assert content.meta["ui"]["prefersBorder"] is True
        assert content.text == view_html()  # type: ignore[union-attr]

        reset = await client.call_tool("reset", {"seed": 0})
        view = reset.meta[VIEW_META]  # type: ignore[index]
        episode = view["episode_id"]
        assert episode in reset.content[0].text  # type: ignore[union-attr]
        assert view["env"] == "atari" and view["title"].startswith("Atari Pong")
        assert (view["step"], view["reward"], view["return"], view["done"]) == (0, 0.0, 0.0, False)
        assert [a["name"] for a in view["legal_actions"]] == [
            "NOOP",
            "FIRE",
            "RIGHT",
            "LEFT",
            "RIGHTFIRE",
            "LEFTFIRE",
        ]
        assert view["legal_actions"][1] == {"id": 1, "name": "FIRE"}
        assert "lives" in view
        assert reset.structured_content is None  # the agent profile's content, unchanged
        assert [b.type for b in reset.content] == ["text", "image"]

        fire = await client.call_tool("fire", {"episode_id": episode})
        assert fire.meta[VIEW_META]["step"] == 1  # type: ignore[index]
        assert fire.meta[VIEW_META]["tool"] == "fire"  # type: ignore[index]
        step = await client.call_tool(
            "step", {"action": "LEFT", "episode_id": episode, "repeat": 3}
        )
        assert step.meta[VIEW_META]["step"] == 4  # type: ignore[index]
        assert step.meta[VIEW_META]["episode_id"] == episode  # type: ignore[index]


async def _everything(server: FastMCP) -> dict[str, Any]:
    async with Client(server) as client:
        session = client.session
        tools = await session.list_tools()
        resources = await session.list_resources()
        reset = await client.call_tool_mcp("reset", {"seed": 5})
        episode = _HANDLE.search(json.dumps(wire(reset))) is not None
        step = await client.call_tool_mcp("step", {"action": "FIRE", "repeat": 2})
        fire = await client.call_tool_mcp("fire", {})
        state = await client.call_tool_mcp("state", {})
        bad = await client.call_tool_mcp(REPLAY_TOOL, {})
        return {
            "tools": wire(tools),
            "resources": wire(resources),
            "episode named": episode,
            "results": [wire(r) for r in (reset, step, fire, state, bad)],
        }


async def test_a_client_without_it_sees_exactly_what_it_saw_before(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """tools/list, resources/list and the results, byte for byte as a server without the
    App answers them (recording on, so view_replay exists to be hidden)."""
    settings = ServerSettings(profile="agent", record=str(tmp_path / "with"))
    served = await _everything(build_server("atari", settings=settings, game="pong"))
    monkeypatch.setattr(_mcp_app, "mount_mcp_app", lambda server, app: None)
    settings = ServerSettings(profile="agent", record=str(tmp_path / "without"))
    before = await _everything(build_server("atari", settings=settings, game="pong"))
    assert served == before
    assert "ui://" not in json.dumps(served)
    assert VIEW_META not in json.dumps(served)


async def test_announcing_the_extension_without_the_mime_type_is_not_enough(
    pong: FastMCP,
) -> None:
    for settings in ({}, {"mimeTypes": ["text/html"]}, {"mimeTypes": "text/html;profile=mcp-app"}):
        async with Client(pong, extensions=[advertise(EXTENSION_ID, settings)]) as client:
            assert PONG not in {str(r.uri) for r in await client.list_resources()}
            assert all(t.meta is None or "ui" not in t.meta for t in await client.list_tools())
            reset = await client.call_tool("reset", {"seed": 0})
            assert reset.meta is None or VIEW_META not in reset.meta


async def test_the_view_is_one_file_with_a_strict_inline_policy() -> None:
    html = view_html()
    assert not re.search(r"""(src|href|action)\s*=\s*["']?\s*(https?:)?//""", html, re.I)
    assert "@import" not in html and "url(" not in html
    assert not re.search(r"<(script|link|iframe)[^>]*\b(src|href)=", html, re.I)
    (policy,) = re.findall(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html)
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
    assert directives["default-src"] == "'none'"
    assert directives["connect-src"] == "'none'"
    assert directives["img-src"] == "data:"
    (script,) = re.findall(r"<script>(.*?)</script>", html, re.S)
    (style,) = re.findall(r"<style>(.*?)</style>", html, re.S)
    for kind, text in (("script-src", script), ("style-src", style)):
        digest = base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()
        assert directives[kind] == f"'sha256-{digest}'"
    # The hooks a host page's test drives.
    for hook in ('id="frame"', 'id="step"', "data-action", "ui/notifications/size-changed"):
        assert hook in html
    for method in (
        "ui/initialize",
        "ui/notifications/initialized",
        "ui/notifications/tool-input",
        "ui/notifications/tool-result",
        "ui/notifications/host-context-changed",
        "ui/resource-teardown",
        "tools/call",
    ):
        assert f'"{method}"' in html, method


async def test_reading_ui_uris_that_do_not_exist_or_are_not_yours_fails_plainly(
    pong: FastMCP,
) -> None:
    async with Client(pong, extensions=[APPS]) as client:
        for uri in (
            "ui://openenv-mcp/atari/other.html",
            "ui://openenv-mcp/chess/view.html",
            "ui://openenv-mcp/atari/view.html/../../spec",
            "ui://openenv-mcp/atari/VIEW.html",
        ):
            with pytest.raises(Exception, match=r"not found|Unknown resource|Invalid"):
                await client.read_resource(uri)
    async with Client(pong) as client:  # the view itself, to a client without the App
        with pytest.raises(Exception, match="not found"):
            await client.read_resource(PONG)


async def test_a_text_env_gets_its_view_and_no_frame() -> None:
    async with Client(agent("echo"), extensions=[APPS]) as client:
        reset = await client.call_tool("reset", {"seed": 1})
        said = await client.call_tool("step", {"action": "hello there"})
        assert [b.type for b in said.content] == ["text"]
        view = said.meta[VIEW_META]  # type: ignore[index]
        assert view["env"] == "echo" and view["legal_actions"] == []
        assert view["episode_id"] == reset.meta[VIEW_META]["episode_id"]  # type: ignore[index]
        assert view["step"] == 1 and view["reward"] > 0
        assert "board" not in view and "hello there" in said.content[0].text  # type: ignore[union-attr]


async def test_a_board_game_sends_its_board_and_legal_moves() -> None:
    pytest.importorskip("chess", reason="the [chess] extra is not installed")
    async with Client(agent("chess", opponent="random"), extensions=[APPS]) as client:
        reset = await client.call_tool("reset", {"seed": 0})
        view = reset.meta[VIEW_META]  # type: ignore[index]
        assert "e2e4" in [a["name"] for a in view["legal_actions"]]
        assert len(view["legal_actions"]) == 20
        assert "r n b q k b n r" in view["board"] or "rnbqkbnr" in view["board"]


async def test_view_replay_plays_a_recording_back_and_reads_nothing_outside(
    tmp_path: Path,
) -> None:
    records = tmp_path / "records"
    secret = tmp_path / "secret.jsonl"
    secret.write_text('{"kind": "start"}\n')
    settings = ServerSettings(profile="agent", record=str(records))
    server = build_server("atari", settings=settings, game="pong")
    async with Client(server, extensions=[APPS]) as client:
        tools = {t.name: t for t in await client.list_tools()}
        assert tools[REPLAY_TOOL].meta["ui"] == {  # type: ignore[index]
            "resourceUri": PONG,
            "visibility": ["app"],
        }
        reset = await client.call_tool("reset", {"seed": 2})
        episode = reset.meta[VIEW_META]["episode_id"]  # type: ignore[index]
        recording = reset.meta[VIEW_META]["recording"]  # type: ignore[index]
        assert not Path(recording).is_absolute()
        for action in ("FIRE", "LEFT", "LEFT", "RIGHT"):
            await client.call_tool("step", {"action": action, "episode_id": episode})
        listed = await client.call_tool(REPLAY_TOOL, {})
        (entry,) = listed.meta[VIEW_META]["recordings"]  # type: ignore[index]
        assert entry["steps"] == 4 and entry["path"] == recording
        for name in (entry["id"], recording):
            replay = await client.call_tool(REPLAY_TOOL, {"recording": name})
            steps = replay.meta[VIEW_META]["replay"]  # type: ignore[index]
            assert [s["action"] for s in steps] == [None, "FIRE", "LEFT", "LEFT", "RIGHT"]
            assert [b.type for b in replay.content] == ["text"] + ["image"] * 5
            assert [s["image"] for s in steps] == [0, 1, 2, 3, 4]
        sampled = await client.call_tool(REPLAY_TOOL, {"recording": recording, "max_frames": 2})
        assert sum(b.type == "image" for b in sampled.content) <= 3
        for bad in (
            "../secret.jsonl",
            str(secret),
            "/etc/passwd",
            f"{recording}/../../secret.jsonl",
            "nothing",
            "x" * 5000,
            "",
        ):
            answer = await client.call_tool_mcp(REPLAY_TOOL, {"recording": bad})
            assert answer.is_error, bad
            text = answer.content[0].text  # type: ignore[union-attr]
            assert "no recording" in text and str(records) not in text
        for frames in (0, 601, -1):
            answer = await client.call_tool_mcp(
                REPLAY_TOOL, {"recording": recording, "max_frames": frames}
            )
            assert answer.is_error and "max_frames must be 1-600" in answer.content[0].text  # type: ignore[union-attr]
    async with Client(server) as client:  # hidden from, and refused to, a plain client
        assert REPLAY_TOOL not in {t.name for t in await client.list_tools()}
        answer = await client.call_tool_mcp(REPLAY_TOOL, {"recording": recording})
        assert answer.is_error and "UnknownTool" in answer.content[0].text  # type: ignore[union-attr]
        listed = answer.content[0].text.split("Tools: ")[1]  # type: ignore[union-attr]
        assert REPLAY_TOOL not in listed and "reset" in listed


async def test_the_full_profile_serves_no_app() -> None:
    server = build_server("atari", game="pong")
    async with Client(server, extensions=[APPS]) as client:
        assert PONG not in {str(r.uri) for r in await client.list_resources()}
        reset = await client.call_tool("reset", {"seed": 0})
        assert reset.meta is None or VIEW_META not in reset.meta


@pytest.mark.integration
async def test_over_stdio_the_stock_sdk_client_gets_the_view_and_a_plain_one_does_not(
    tmp_path: Path,
) -> None:
    """Over a real stdio server (its direct path for tool calls included), with the stock
    ``mcp`` SDK client announcing the extension per request, and without it."""
    params = StdioServerParameters(
        command=CLI[0],
        args=[*CLI[1:], "serve", "atari", "--game", "pong", "--agent", "--stdio"],
        env={**os.environ, "OPENENV_MCP_ANSWER_CACHE": str(tmp_path / "books")},
        cwd=str(ROOT),
    )
    with anyio.fail_after(180):
        async with SdkClient(params, extensions=[APPS], read_timeout_seconds=120) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert tools["fire"].meta["ui"] == {"resourceUri": PONG}  # type: ignore[index]
            uris = [str(r.uri) for r in (await client.list_resources()).resources]
            assert PONG in uris
            read = await client.read_resource(PONG)
            assert read.contents[0].mime_type == APP_MIME
            reset = await client.call_tool("reset", {"seed": 0})
            episode = reset.meta[VIEW_META]["episode_id"]  # type: ignore[index]
            fire = await client.call_tool("fire", {"episode_id": episode})
            assert fire.meta[VIEW_META]["step"] == 1  # type: ignore[index]
            assert [b.type for b in fire.content] == ["text", "image"]
    with anyio.fail_after(180):
        async with SdkClient(params, read_timeout_seconds=120) as client:
            tools = (await client.list_tools()).tools
            assert all(t.meta is None or "ui" not in t.meta for t in tools)
            assert PONG not in [str(r.uri) for r in (await client.list_resources()).resources]
            reset = await client.call_tool("reset", {"seed": 0})
            episode = _HANDLE.search(reset.content[0].text).group()  # type: ignore[union-attr]
            fire = await client.call_tool("fire", {"episode_id": episode})
            assert fire.meta is None or VIEW_META not in fire.meta

"""The web page's routes and feed, without a browser and in memory (the unit tier).

The routes run in the server's real HTTP app (the Host/Origin guard, the bearer
token, the direct path) through httpx's ASGI transport; episodes are stepped by
``MCPEnvClient`` in memory. What needs a socket (the event stream as it
happens, a stdio server's viewer) is in ``tests/web/test_web_live.py``; the
page in a real browser in ``tests/web/test_browser.py``.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from fastmcp import FastMCP

from openenv_mcp.client import MCPEnvClient
from openenv_mcp.errors import UnknownEpisode
from openenv_mcp.server import ServerSettings, build_server, get_app
from openenv_mcp.server.faces._feed import BACKLOG, HISTORY
from openenv_mcp.server.faces._web import CSP, WebPage, mount_web
from openenv_mcp.server.transports._http import MCP_PATH, guarded_app

pytestmark = pytest.mark.anyio

ORIGIN = "http://127.0.0.1:8765"
TOKEN = "s3cret-token"
#: Every GET route of the page (ids filled in by the tests that need real ones).
ROUTES = [
    "/web",
    "/web/",
    "/web/static/app.js",
    "/web/static/app.css",
    "/web/api/info",
    "/web/api/episodes",
    "/web/api/episodes/w_x",
    "/web/api/episodes/w_x/events",
    "/web/api/episodes/w_x/frame",
    "/web/api/recordings",
    "/web/api/recordings/abc",
    "/web/api/recordings/abc/frames/0",
]


def web_app(server: FastMCP, token: str | None = None) -> Any:
    """``server``'s HTTP app with the page, guarded as ``serve --http --web`` guards it."""
    app = get_app(server)
    mount_web(server, app, token)
    return guarded_app(server, "127.0.0.1", token, app.direct_calls(server, "streamable-http"))


def browser(app: Any, **kwargs: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url=ORIGIN, timeout=30, **kwargs
    )


@pytest.fixture
async def breakout() -> AsyncIterator[tuple[FastMCP, Any]]:
    server = build_server("atari", game="breakout")
    yield server, web_app(server)
    await get_app(server).aclose()


def no_handles(value: Any, *handles: str) -> None:
    text = orjson.dumps(value).decode()
    for handle in handles:
        assert handle not in text
    assert "ep_" not in text and "snap_" not in text


async def test_page_and_files_are_served_with_a_strict_policy(breakout: Any) -> None:
    _, app = breakout
    async with browser(app) as web:
        page = await web.get("/web/")
        assert page.status_code == 200
        assert page.headers["content-security-policy"] == CSP
        assert "'unsafe-inline'" not in CSP and "script-src 'self'" in CSP
        html = page.text
        assert "<title>Atari Breakout · openenv-mcp</title>" in html
        # No inline script, no inline handler, no inline style: the policy allows none.
        assert re.findall(r"<script(?![^>]*\bsrc=)[^>]*>", html) == []
        assert re.findall(r"\son[a-z]+\s*=", html) == []
        assert " style=" not in html and "<style" not in html
        assert "http://" not in html and "https://" not in html  # nothing from elsewhere
        redirect = await web.get("/web", follow_redirects=False)
        assert redirect.status_code == 307 and redirect.headers["location"] == "/web/"
        for name, kind in (("app.js", "text/javascript"), ("app.css", "text/css")):
            asset = await web.get(f"/web/static/{name}")
            assert asset.status_code == 200 and asset.headers["content-type"].startswith(kind)
            assert asset.headers["x-content-type-options"] == "nosniff"
        script = (await web.get("/web/static/app.js")).text
        assert "eval(" not in script and "innerHTML" not in script
        missing = await web.get("/web/static/../../cli.py")
        assert missing.status_code == 404
        other = await web.get("/web/static/index.html")
        assert other.status_code == 404 and "app.css" in other.json()["error"]


async def test_info_gives_the_spec_and_how_the_server_is_served(breakout: Any) -> None:
    _, app = breakout
    async with browser(app) as web:
        info = (await web.get("/web/api/info")).json()
    assert info["server"] == "openenv-atari"
    assert info["spec"]["title"] == "Atari Breakout"
    assert [a["name"] for a in info["spec"]["action_set"]] == ["NOOP", "FIRE", "RIGHT", "LEFT"]
    assert info["spec"]["settings"]["profile"] == "full"
    assert info["recording"] is False
    assert "FIRE" in info["instructions"]


async def test_the_list_and_history_show_each_call_and_never_a_handle(breakout: Any) -> None:
    server, app = breakout
    async with MCPEnvClient(server) as env, browser(app) as web:
        assert (await web.get("/web/api/episodes")).json() == {"episodes": []}
        await env.reset(seed=0)
        await env.call("fire")
        await env.step("RIGHT")
        await env.call("legal_actions")  # a static tool: no call on the episode
        snapshot = await env.snapshot()
        await env.state()
        (row,) = (await web.get("/web/api/episodes")).json()["episodes"]
        assert row["status"] == "running" and row["step"] == 2 and row["lives"] == 5
        assert row["watch_id"].startswith("w_") and row["calls"] == 5
        detail = (await web.get(f"/web/api/episodes/{row['watch_id']}")).json()
        tools = [(e["tool"], e["arguments"]) for e in detail["history"]]
        assert tools == [
            ("reset", {"seed": 0, "options": None}),
            ("fire", {"action": 1}),
            ("step", {"action": "RIGHT"}),
            ("snapshot", {}),
            ("state", {}),
        ]
        events = detail["history"]
        assert [e["seq"] for e in events] == [1, 2, 3, 4, 5]
        assert events[2]["step"] == 2 and events[2]["reward"] == 0.0
        assert events[2]["summary"].startswith("Step 2 (RIGHT)")
        assert "saved the state at step 2" in events[3]["result"]
        # The summary of reset names the episode: by its watch id, never its handle.
        assert row["watch_id"] in events[0]["summary"]
        no_handles(detail, env.episode_id, snapshot)
        no_handles((await web.get("/web/api/episodes")).json(), env.episode_id)
        frame = await web.get(f"/web/api/episodes/{row['watch_id']}/frame")
        assert frame.status_code == 200 and frame.headers["content-type"] == "image/png"
        assert frame.content[:8] == b"\x89PNG\r\n\x1a\n"


async def test_watching_is_read_only(breakout: Any) -> None:
    server, app = breakout
    async with MCPEnvClient(server) as env, browser(app) as web:
        await env.reset(seed=0)
        (row,) = (await web.get("/web/api/episodes")).json()["episodes"]
        watch_id = row["watch_id"]
        # No route of the page takes anything but GET.
        for path in ROUTES:
            for method in ("POST", "PUT", "DELETE", "PATCH"):
                answer = await web.request(method, path.replace("w_x", watch_id))
                assert answer.status_code == 405, (method, path, answer.status_code)
        # A watch id is no handle: it cannot step, look or close.
        other = env.spawn()
        for call in (
            other.session.call("step", {"episode_id": watch_id, "action": 1}),
            other.session.call("close", {"episode_id": watch_id}),
        ):
            with pytest.raises(UnknownEpisode):
                await call
        _, _, _, _, info = await env.step("FIRE")
        assert info["step"] == 1  # the episode went on, untouched


async def test_closed_episodes_stay_listed_a_while_and_watching_reports_them(
    breakout: Any,
) -> None:
    server, app = breakout
    async with browser(app) as web:
        async with MCPEnvClient(server) as env:
            await env.reset(seed=0)
            await env.step("FIRE")
        (row,) = (await web.get("/web/api/episodes")).json()["episodes"]
        assert row["status"] == "closed" and row["step"] == 1
        history = (await web.get(f"/web/api/episodes/{row['watch_id']}")).json()["history"]
        assert history[-1]["tool"] == "close"
        frame = await web.get(f"/web/api/episodes/{row['watch_id']}/frame")
        assert frame.status_code == 404 and "no frame" in frame.json()["error"]
        missing = await web.get("/web/api/episodes/w_nope/events")
        assert missing.status_code == 404
        assert "GET /web/api/episodes lists them" in missing.json()["error"]
        bad = await web.get(f"/web/api/episodes/{row['watch_id']}/events?after=x")
        assert bad.status_code == 400 and "got 'x'" in bad.json()["error"]


async def test_the_event_stream_sends_history_calls_frames_and_the_close(
    breakout: Any,
) -> None:
    server, _ = breakout
    page = WebPage(get_app(server), None)
    async with MCPEnvClient(server) as env:
        await env.reset(seed=0)
        await env.step("FIRE")
        watched = page.feed.by_handle[env.episode_id]
        stream = page._stream(watched, after=0)
        hello = await anext(stream)
        assert hello.startswith(b"event: hello\n")
        body = orjson.loads(hello.split(b"data: ", 1)[1])
        assert [e["tool"] for e in body["history"]] == ["reset", "step"]
        frame = await anext(stream)
        assert frame.startswith(b"event: frame\n")
        assert orjson.loads(frame.split(b"data: ", 1)[1])["image"].startswith(
            "data:image/png;base64,"
        )
        await env.step("RIGHT")
        calls = await anext(stream)
        assert calls.startswith(b"event: calls\n")
        (event,) = orjson.loads(calls.split(b"data: ", 1)[1])["events"]
        assert event["tool"] == "step" and event["step"] == 2
        await env.close()
        seen = [await anext(stream) for _ in range(2)]
        kinds = [s.split(b"\n", 1)[0] for s in seen]
        assert b"event: closed" in kinds
        await stream.aclose()


async def test_a_slow_watcher_loses_events_not_the_server(breakout: Any) -> None:
    server, _ = breakout
    app = get_app(server)
    page = WebPage(app, None)
    async with MCPEnvClient(server) as env:
        await env.reset(seed=0)
        watched = page.feed.by_handle[env.episode_id]
        async with page.feed.watch(watched) as receive:
            for _ in range(BACKLOG + 40):
                await env.step("NOOP")
            assert watched.dropped == 40
            assert receive.statistics().current_buffer_used == BACKLOG
        assert len(watched.history) == min(HISTORY, BACKLOG + 41)
        assert not watched.watchers


async def test_recordings_are_listed_read_and_framed_by_an_opaque_id(tmp_path: Path) -> None:
    server = build_server("atari", settings=ServerSettings(record=str(tmp_path)), game="breakout")
    app = web_app(server)
    try:
        async with MCPEnvClient(server) as env, browser(app) as web:
            await env.reset(seed=3)
            for action in ("FIRE", "RIGHT", "RIGHT"):
                await env.step(action)
            (listed,) = (await web.get("/web/api/recordings")).json()["recordings"]
            assert listed["steps"] == 3 and listed["seed"] == 3
            assert listed["status"] == "incomplete"  # still being played
            assert listed["title"] == "Atari Breakout"
            rid = listed["id"]
            assert re.fullmatch(r"[0-9a-f]{20}", rid)
            detail = (await web.get(f"/web/api/recordings/{rid}")).json()
            assert [s["action"] for s in detail["steps"]] == ["FIRE", "RIGHT", "RIGHT"]
            assert detail["frames"] == 4  # the start, then one per step
            png = await web.get(f"/web/api/recordings/{rid}/frames/3")
            assert png.status_code == 200 and png.content[:4] == b"\x89PNG"
            assert (await web.get(f"/web/api/recordings/{rid}/frames/4")).status_code == 404
            for path in (f"/web/api/recordings/{rid[:-1]}x", "/web/api/recordings/..%2f..%2fetc"):
                answer = await web.get(path)
                assert answer.status_code == 404
            # The files are named by handle; nothing the page gets names one.
            no_handles(
                [listed, detail, (await web.get("/web/api/recordings")).json()],
                env.episode_id,
            )
    finally:
        await get_app(server).aclose()


async def test_without_recording_the_replay_api_says_how_to_get_it(breakout: Any) -> None:
    _, app = breakout
    async with browser(app) as web:
        assert (await web.get("/web/api/recordings")).json() == {
            "recording": False,
            "recordings": [],
        }
        answer = await web.get("/web/api/recordings/abc")
        assert answer.status_code == 404 and "--record DIR" in answer.json()["error"]


async def test_every_web_route_checks_host_origin_and_token() -> None:
    server = build_server("echo")
    app = web_app(server, token=TOKEN)
    bearer = {"authorization": f"Bearer {TOKEN}"}
    try:
        async with browser(app) as web:
            for path in ROUTES:
                web.cookies.clear()  # only what each request sends itself
                refused = await web.get(path, follow_redirects=False)
                assert refused.status_code == 401, path
                assert "/web/?token=<token>" in refused.json()["error"]
                wrong = await web.get(path, headers={"authorization": "Bearer nope"})
                assert wrong.status_code == 401, path
                cookie = {"cookie": "openenv_mcp_token=nope"}
                assert (await web.get(path, headers=cookie)).status_code == 401, path
                host = await web.get(path, headers={**bearer, "host": "evil.example"})
                assert host.status_code == 421, path
                origin = await web.get(path, headers={**bearer, "origin": "http://evil.example"})
                assert origin.status_code == 403, path
                allowed = await web.get(path, headers=bearer, follow_redirects=False)
                assert allowed.status_code in (200, 307, 404), (path, allowed.status_code)
            web.cookies.clear()
            # A person opens the page with the token in its address: the page gets it
            # (for /mcp) and a strict cookie carries it to the page's own requests.
            page = await web.get(f"/web/?token={TOKEN}")
            assert page.status_code == 200
            assert f'<meta name="openenv-token" content="{TOKEN}">' in page.text
            cookie = page.headers["set-cookie"]
            assert f"openenv_mcp_token={TOKEN}" in cookie
            assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/web" in cookie
            web.cookies.clear()
            jar = {"cookie": f"openenv_mcp_token={TOKEN}"}
            assert (await web.get("/web/api/episodes", headers=jar)).status_code == 200
            assert (await web.get("/web/static/app.js", headers=jar)).status_code == 200
            # The address token opens the page only; the cookie never opens /mcp.
            api = await web.get(f"/web/api/episodes?token={TOKEN}")
            assert api.status_code == 401
            mcp = await web.post(
                MCP_PATH, headers={**jar, "content-type": "application/json"}, content=b"{}"
            )
            assert mcp.status_code == 401
    finally:
        await get_app(server).aclose()

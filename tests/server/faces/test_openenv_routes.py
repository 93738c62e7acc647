"""OpenEnv's routes under /openenv, in memory (the HTTP app as ``serve --http --openenv
--web`` guards it): the same episodes as /mcp and the web page, the same Host and token
rules, OpenEnv's wire forms. Real OpenEnv clients over real sockets are in
tests/server/faces/test_openenv.py."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import pytest
from fastmcp import FastMCP
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from openenv_mcp.server import build_server, get_app
from openenv_mcp.server.faces._openenv import mount_openenv
from openenv_mcp.server.faces._web import mount_web
from openenv_mcp.server.transports._http import guarded_app

pytestmark = pytest.mark.anyio

ORIGIN = "http://127.0.0.1:8765"
HOSTS = ["127.0.0.1", "localhost", "[::1]"]


def openenv_app(server: FastMCP, token: str | None = None) -> Any:
    app = get_app(server)
    mount_web(server, app, token)
    mount_openenv(server, app)
    return guarded_app(server, "127.0.0.1", token)


@pytest.fixture
async def echo() -> AsyncIterator[Any]:
    server = build_server("echo")
    yield openenv_app(server)
    await get_app(server).aclose()


def client(app: Any, **kwargs: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=ORIGIN, **kwargs)


async def test_reset_step_state_are_the_servers_episodes(echo: Any) -> None:
    async with client(echo) as http:
        reset = (await http.post("/openenv/reset", json={"seed": 3, "greeting": "hi"})).json()
        assert reset["observation"]["observation"] == "hi" and reset["done"] is False
        episode = reset["observation"]["episode_id"]
        watched = (await http.get("/web/api/episodes")).json()
        assert len(watched["episodes"]) == 1  # the page watches it like any episode
        body = {"episode_id": episode, "action": {"action": "bye"}}
        step = (await http.post("/openenv/step", json=body)).json()
        assert step["done"] and step["observation"]["terminated"]
        assert step["reward"] == pytest.approx(0.3)
        state = (await http.get("/openenv/state", params={"episode_id": episode})).json()
        assert (state["episode_id"], state["step_count"], state["status"]) == (episode, 1, "ended")
        assert (await http.get("/openenv/state")).json() == {"episode_id": None, "step_count": 0}


async def test_bad_input_is_named(echo: Any) -> None:
    async with client(echo) as http:
        bad_seed = await http.post("/openenv/reset", json={"seed": -1})
        assert bad_seed.status_code == 422 and "non-negative integer" in bad_seed.json()["detail"]
        unknown = await http.post("/openenv/reset", json={"colour": "red"})
        assert unknown.status_code == 422 and "'colour'" in unknown.json()["detail"]
        gone = await http.post(
            "/openenv/step", json={"episode_id": "ep_x", "action": {"action": "a"}}
        )
        assert gone.status_code == 404 and gone.json()["code"] == "UnknownEpisode"
        not_json = await http.post("/openenv/reset", content=b"{")
        assert not_json.status_code == 400  # malformed, as /mcp answers it
        assert "expected a JSON object as the body, got no JSON" in not_json.json()["detail"]


async def test_schema_metadata_and_openapi_are_what_openenv_reads(echo: Any) -> None:
    async with client(echo) as http:
        schema = (await http.get("/openenv/schema")).json()
        assert schema["action"]["required"] == ["action"]
        assert schema["action"]["properties"]["action"]["maxLength"] == 4096
        assert {"observation", "episode_id", "terminated", "truncated"} <= set(
            schema["observation"]["properties"]
        )
        meta = (await http.get("/openenv/metadata")).json()
        assert meta["name"] == "echo" and meta["description"]
        openapi = (await http.get("/openenv/openapi.json")).json()
        assert openapi["info"]["version"].startswith("1.")
        assert {"/reset", "/step", "/state"} <= set(openapi["paths"])
        probe = await http.post("/openenv/mcp", json={})
        assert probe.status_code == 200 and probe.json()["jsonrpc"] == "2.0"
        call = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "reset", "arguments": {"seed": 1}},
        }
        answer = (await http.post("/openenv/mcp", json=call)).json()
        assert answer["id"] == 7 and answer["result"]["structuredContent"]["step"] == 0


async def test_atari_frames_go_flat_with_their_shape() -> None:
    server = build_server("atari", game="pong")
    try:
        async with client(openenv_app(server)) as http:
            body = {"seed": 0, "frames": "list"}  # our own form, asked
            obs = (await http.post("/openenv/reset", json=body)).json()["observation"]
            assert obs["observation_shape"] == [210, 160, 3]
            assert len(obs["observation"]) == 210 * 160 * 3
            assert obs["legal_actions"][:2] == ["NOOP", "FIRE"]
            png = (await http.post("/openenv/reset", json={"frames": "png"})).json()
            assert png["observation"]["frame"].startswith("data:image/png;base64,")
    finally:
        await get_app(server).aclose()


async def test_a_namesake_of_openenvs_envs_speaks_its_models_over_http() -> None:
    """``serve atari --openenv`` answers as OpenEnv's Atari server, field for field (the
    typed clients themselves: tests/server/faces/test_openenv_typed_clients.py), and says what
    it expected of a payload that is not OpenEnv's ``AtariAction``."""
    server = build_server("atari", game="pong")
    try:
        async with client(openenv_app(server)) as http:
            reset = (await http.post("/openenv/reset", json={"seed": 0})).json()
            assert set(reset) == {"observation", "reward", "done", "episode_id"}
            obs = reset["observation"]
            assert set(obs) == {
                "screen",
                "screen_shape",
                "legal_actions",
                "lives",
                "episode_frame_number",
                "frame_number",
            }
            assert obs["screen_shape"] == [210, 160, 3] and len(obs["screen"]) == 210 * 160 * 3
            assert obs["legal_actions"] == [0, 1, 2, 3, 4, 5] and reset["reward"] == 0.0
            episode = reset["episode_id"]
            step = {"episode_id": episode, "action": {"action_id": 1, "game_name": "pong"}}
            stepped = (await http.post("/openenv/step", json=step)).json()
            assert stepped["observation"]["frame_number"] == 4 and stepped["done"] is False
            for action, said in [
                (1, "expected atari_env's AtariAction as an object, got int"),
                ({"action": 1}, "action_id: Field required"),
                ({"action_id": "FIRE"}, "action_id: Input should be a valid integer"),
                ({"action_id": 1, "volume": 3}, "volume: Extra inputs are not permitted"),
                ({"action_id": 6}, "action_id must be a legal action, 0..5"),
            ]:
                bad = {"episode_id": episode, "action": action}
                refused = await http.post("/openenv/step", json=bad)
                assert refused.status_code == 422, refused.text
                assert said in refused.json()["detail"], refused.json()
                if isinstance(action, dict) and "action_id must" not in said:
                    assert "atari_env's AtariAction (action_id, " in refused.json()["detail"]
            state = (await http.get("/openenv/state", params={"episode_id": episode})).json()
            assert state["step_count"] == 1 and state["game_name"] == "pong"
            assert state["frameskip"] == 4 and state["episode_id"] == episode
            schema = (await http.get("/openenv/schema")).json()
            assert schema["action"]["title"] == "AtariAction"
            assert schema["observation"]["required"] == ["screen", "screen_shape", "legal_actions"]
    finally:
        await get_app(server).aclose()


async def test_the_guard_covers_openenv_routes() -> None:
    server = build_server("echo")
    try:
        app = openenv_app(server, token="s3cret")
        async with client(app) as http:
            assert (await http.get("/openenv/health")).status_code == 401
            basic = base64.b64encode(b"openenv:s3cret").decode()
            ok = await http.get("/openenv/health", headers={"Authorization": f"Basic {basic}"})
            assert ok.status_code == 200 and ok.json() == {"status": "healthy"}
            wrong = base64.b64encode(b"openenv:nope").decode()
            denied = await http.get("/openenv/health", headers={"Authorization": f"Basic {wrong}"})
            assert denied.status_code == 401
            # Basic credentials are OpenEnv's way only: /mcp takes the bearer token alone
            mcp = await http.post("/mcp", json={}, headers={"Authorization": f"Basic {basic}"})
            assert mcp.status_code == 401
            evil = await http.get(
                "/openenv/health",
                headers={"Host": "evil.example", "Authorization": "Bearer s3cret"},
            )
            assert evil.status_code == 421
    finally:
        await get_app(server).aclose()


def test_the_socket_meets_the_guards_rules() -> None:
    """The handshake is refused, naming the rule, for a wrong Host, any page of another
    origin (another loopback one included: a local web app), or a missing token."""
    server = build_server("echo")
    guarded = openenv_app(server, "t")
    basic = base64.b64encode(b"u:t").decode()
    own = {"host": "127.0.0.1:8765"}  # the test client's own Host is "testserver"
    bearer = {**own, "authorization": "Bearer t"}
    refused = {
        "Host 'evil.example'": {**bearer, "host": "evil.example"},
        "another origin ('https://evil.example')": {**bearer, "origin": "https://evil.example"},
        "another origin ('http://127.0.0.1:3000')": {**bearer, "origin": "http://127.0.0.1:3000"},
        "no Authorization header": own,
        "a wrong bearer token": {**own, "authorization": "Bearer guess"},
    }
    accepted = [bearer, {**own, "authorization": f"Basic {basic}"}, {**bearer, "origin": ORIGIN}]
    try:
        with TestClient(guarded, base_url=ORIGIN) as http:
            for why, headers in refused.items():
                with (
                    pytest.raises(WebSocketDisconnect) as closed,
                    http.websocket_connect("/openenv/ws", headers=headers) as ws,
                ):
                    ws.receive_text()
                assert closed.value.code == 1008 and why in closed.value.reason, why
            for headers in accepted:
                with http.websocket_connect("/openenv/ws", headers=headers) as ws:
                    ws.send_json({"type": "reset", "data": {"greeting": "hi"}})
                    assert ws.receive_json()["type"] == "observation"
    finally:
        anyio.run(get_app(server).aclose)


async def test_pages_of_other_origins_cannot_act(echo: Any) -> None:
    """A page of another origin (another loopback one included) cannot send a simple
    request (text/plain, a form: no preflight) to any route; reading routes answer, and
    the server's own pages and JSON clients act as before."""
    other = {"origin": "http://localhost:3000"}
    text = {"content-type": "text/plain"}
    async with client(echo) as http:
        for path in ("/openenv/reset", "/openenv/step", "/openenv/mcp", "/mcp"):
            answer = await http.post(path, content=b"{}", headers={**other, **text})
            assert answer.status_code == 403, (path, answer.text)
            assert "another origin ('http://localhost:3000')" in answer.json()["error"]
            form = {**other, "content-type": "application/x-www-form-urlencoded"}
            assert (await http.post(path, content=b"a=1", headers=form)).status_code == 403
            assert (await http.post(path, content=b"{}", headers=other)).status_code == 403
        assert (await http.get("/openenv/health", headers=other)).status_code == 200
        own = {"origin": ORIGIN, **text}
        assert (await http.post("/openenv/reset", content=b"{}", headers=own)).status_code == 200
        assert (await http.post("/openenv/reset", json={}, headers=other)).status_code == 200
        assert (await http.post("/openenv/reset", content=b"{}", headers=text)).status_code == 200


async def test_deeply_nested_json_is_a_clear_400(echo: Any) -> None:
    """Nesting past 1,024 levels (Python's json would recurse until it broke) is refused
    as malformed: 400 naming the limit on the HTTP routes, a JSON-RPC parse error on its
    JSON-RPC route; never a 500 with a traceback."""
    deep = b'{"action": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    async with client(echo) as http:
        for path in ("/openenv/reset", "/openenv/step"):
            answer = await http.post(
                path, content=deep, headers={"content-type": "application/json"}
            )
            assert answer.status_code == 400, answer.text
            assert "nested deeper than 1024 levels" in answer.json()["detail"]
            assert answer.json()["code"] == "ArgumentError"
        answer = await http.post("/openenv/mcp", content=deep)
        assert answer.status_code == 200 and answer.json()["error"]["code"] == -32700
        reset = (await http.post("/openenv/reset", json={})).json()
        body = {"episode_id": reset["observation"]["episode_id"], "action": {"action": "ok"}}
        assert (await http.post("/openenv/step", json=body)).status_code == 200


def test_deeply_nested_json_on_the_socket_keeps_the_session() -> None:
    server = build_server("echo")
    try:
        with (
            TestClient(openenv_app(server), base_url=ORIGIN) as http,
            http.websocket_connect("/openenv/ws", headers={"host": "127.0.0.1:8765"}) as ws,
        ):
            ws.send_text("[" * 100_000 + "]" * 100_000)
            error = ws.receive_json()
            assert error["type"] == "error" and error["data"]["code"] == "INVALID_JSON"
            assert "nested deeper than 1024 levels" in error["data"]["message"]
            ws.send_json({"type": "reset", "data": {"greeting": "still here"}})
            assert ws.receive_json()["data"]["observation"]["observation"] == "still here"
    finally:
        anyio.run(get_app(server).aclose)


def test_openenv_is_for_http_servers() -> None:
    from typer.testing import CliRunner

    from openenv_mcp.cli import app

    result = CliRunner().invoke(app, ["serve", "echo", "--stdio", "--openenv"])
    assert result.exit_code != 0
    assert "--openenv needs --transport http (it serves OpenEnv's protocol" in result.output


async def test_the_web_page_serves_a_bridged_openenv_class() -> None:
    server = build_server("openenv", env="tests.openenv_envs:CountEnvironment")
    try:
        async with client(openenv_app(server)) as http:
            info = (await http.get("/web/api/info")).json()
            assert info["spec"]["action_space"]["type"] == "Json"
            assert info["spec"]["action_space"]["schema"]["required"] == ["message"]
            assert (await http.get("/web/")).status_code == 200
            # an episode started over OpenEnv's routes is watched on the page, frame and all
            await http.post("/openenv/reset", json={"seed": 1})
            (watched,) = (await http.get("/web/api/episodes")).json()["episodes"]
            frame = await http.get(f"/web/api/episodes/{watched['watch_id']}/frame")
            assert frame.status_code == 200 and frame.headers["content-type"] == "image/png"
    finally:
        await get_app(server).aclose()


def test_refused_handshakes_do_not_flood_the_log(caplog: pytest.LogCaptureFixture) -> None:
    """A stranger chooses how often a handshake is refused: the log gets a line per ten
    seconds, the rest counted, as for uvicorn's own warnings."""
    server = build_server("echo")
    try:
        with TestClient(openenv_app(server, "t"), base_url=ORIGIN) as http:
            for _ in range(50):
                with (
                    pytest.raises(WebSocketDisconnect),
                    http.websocket_connect("/openenv/ws", headers={"host": "evil.example"}) as ws,
                ):
                    ws.receive_text()
    finally:
        anyio.run(get_app(server).aclose)
    refused = [r for r in caplog.records if "WebSocket to /openenv/ws refused" in r.getMessage()]
    assert len(refused) <= 1

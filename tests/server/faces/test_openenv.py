"""``serve ENV --http --openenv``: our environments on OpenEnv's protocol, driven by
OpenEnv's own clients (``GenericEnvClient``, an ``EnvClient`` subclass) and checked by
its own validator (``openenv validate --url``), all from the real openenv-core."""

from __future__ import annotations

import base64
import json
import socket
from collections.abc import Iterator
from typing import Any

import httpx
import numpy as np
import pytest
from fastmcp import Client
from openenv.cli._validation import validate_running_environment
from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.generic_client import GenericEnvClient
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from openenv_mcp.codecs import decode_raw
from tests.figures import record_figure
from tests.openenv_procs import openenv_cli
from tests.servers import ensure_installed, http_server

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

#: Every bundled environment, as `openenv validate` sees it (quick options).
BUNDLED = {
    "echo": (),
    "atari": ("--game", "pong"),
    "gymnasium": ("--id", "CartPole-v1"),
    "chess": ("--engine", "builtin", "--depth", "1"),
    "trading": (),
    "openspiel": ("--game", "tic_tac_toe"),
    "coding": (),
    "reasoning": (),
}
#: A first action OpenEnv's client sends each (coding's run in a sandbox: reset only).
FIRST_ACTION: dict[str, Any] = {
    "echo": "hi",
    "atari": "FIRE",
    "gymnasium": 0,
    "chess": "e4",
    "trading": [0.2, 0.2, 0.2, 0.2, 0.2],
    "openspiel": 4,
    "reasoning": "42",
}


@pytest.fixture(scope="module")
def echo_base() -> Iterator[str]:
    with http_server("echo", "--openenv") as url:
        yield url.removesuffix("/mcp") + "/openenv"


@pytest.fixture(scope="module")
def atari_base() -> Iterator[str]:
    with http_server("atari", "--openenv", "--game", "pong") as url:
        yield url.removesuffix("/mcp") + "/openenv"


@pytest.mark.parametrize("env", sorted(BUNDLED))
def test_openenv_validate_passes_and_its_client_plays(env: str) -> None:
    if env == "coding":  # its sandbox needs bubblewrap, whichever test runs first
        ensure_installed("ensure_debian.sh", "bubblewrap", "bubblewrap", "bwrap")
    with http_server(env, "--openenv", *BUNDLED[env]) as url:
        base = url.removesuffix("/mcp") + "/openenv"
        if env == "echo":  # the command itself, once
            proc = openenv_cli("validate", "--url", base, "--timeout", "30")
            assert proc.returncode == 0, proc.stdout + proc.stderr
            report = json.loads(proc.stdout)
        else:  # what the command runs, without its start-up each time
            report = validate_running_environment(base, timeout_s=30)
        # ... and OpenEnv's client plays it, unchanged, in our own form (frames=): the
        # namesakes of OpenEnv's envs speak their models otherwise (test_openenv_typed_clients)
        with GenericEnvClient(base_url=base, message_timeout_s=120).sync() as client:
            result = client.reset(seed=0, frames="list")
            assert result.observation["episode_id"].startswith("ep_")
            if env in FIRST_ACTION:
                result = client.step({"action": FIRST_ACTION[env]})
                assert result.observation["step"] == 1 and isinstance(result.reward, float)
    assert report["passed"], json.dumps(report["criteria"], indent=1)
    assert report["mode"] == "simulation"
    assert report["standard_profile"] == "openenv-http/1.x"
    assert report["summary"]["passed_count"] == report["summary"]["total_count"] == 6
    record_figure(f"openenv validate --url (serve {env} --http --openenv): 6/6 criteria passed")


async def test_generic_client_plays_echo_with_seeds(echo_base: str) -> None:
    async with GenericEnvClient(base_url=echo_base) as env:
        first = await env.reset(seed=11)
        again = await env.reset(seed=11)
        assert first.observation["info"]["nonce"] == again.observation["info"]["nonce"]
        step = await env.step({"action": "hello"})
        assert (step.reward, step.done) == (pytest.approx(0.5), False)
        assert step.observation["observation"] == "hello"
        state = await env.state()
        assert state["step_count"] == 1 and state["episode_id"].startswith("ep_")
        with pytest.raises(RuntimeError, match=r"InvalidAction: .*\(code: VALIDATION_ERROR\)"):
            await env.step({"action": 3})
        with pytest.raises(RuntimeError, match=r"unknown action fields \['volume'\]"):
            await env.step({"action": "x", "volume": 2})
        bye = await env.step({"action": "bye"})
        assert bye.done and bye.observation["terminated"]


class EchoClient(EnvClient[str, str, dict[str, Any]]):
    """A typed OpenEnv client, as an OpenEnv user writes one for an environment."""

    def _step_payload(self, action: str) -> dict[str, Any]:
        return {"action": action}

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[str]:
        return StepResult(
            observation=payload["observation"]["observation"],
            reward=payload.get("reward"),
            done=payload.get("done", False),
        )

    def _parse_state(self, payload: dict[str, Any]) -> dict[str, Any]:
        return payload


def test_a_typed_env_client_in_sync_mode(echo_base: str) -> None:
    with EchoClient(base_url=echo_base).sync() as env:
        assert env.reset(seed=1).observation == ""
        assert env.step("hi there").observation == "hi there"


async def test_atari_frames_decode_as_openenv_sends_them_and_seeds_replay(atari_base: str) -> None:
    """As OpenEnv's Atari server sends them (the default), and as asked (frames=)."""
    runs = []
    for _ in range(2):
        async with GenericEnvClient(base_url=atari_base) as env:
            reset = await env.reset(seed=3)  # OpenEnv's Atari models: ids, a flat screen
            assert reset.observation["legal_actions"] == [0, 1, 2, 3, 4, 5]
            frames = []
            for i in range(20):
                obs = (await env.step({"action_id": i % 6})).observation
                frame = np.asarray(obs["screen"], dtype=np.uint8)
                frames.append(frame.reshape(obs["screen_shape"]))
            runs.append(np.stack(frames))
    assert runs[0].shape == (20, 210, 160, 3)
    assert np.array_equal(runs[0], runs[1])  # seeds take effect: the same game twice
    async with GenericEnvClient(base_url=atari_base) as env:
        compact = (await env.reset(seed=3, frames="zstd")).observation["observation"]
        assert decode_raw(compact).shape == (210, 160, 3)
        png = (await env.reset(seed=3, frames="png")).observation
        assert png["observation"] is None and png["frame"].startswith("data:image/png;base64,")


async def test_the_same_episodes_over_openenv_and_mcp(echo_base: str) -> None:
    mcp_url = echo_base.removesuffix("/openenv") + "/mcp"
    async with GenericEnvClient(base_url=echo_base) as env, Client(mcp_url) as client:
        episode = (await env.reset(seed=2)).observation["episode_id"]
        await client.call_tool("step", {"episode_id": episode, "action": "from mcp"})
        step = await env.step({"action": "from openenv"})
        assert step.observation["step"] == 2
        state = await client.call_tool("state", {"episode_id": episode})
        assert state.structured_content["observation"] == "from openenv"
    async with httpx.AsyncClient(base_url=echo_base) as http:
        reset = (await http.post("/reset", json={"seed": 4})).json()
        episode = reset["observation"]["episode_id"]
        step = await http.post("/step", json={"episode_id": episode, "action": {"action": "hey"}})
        assert step.json()["observation"]["step"] == 1
        missing = await http.post("/step", json={"action": {"action": "hey"}})
        assert missing.status_code == 400 and "needs the episode_id" in missing.json()["detail"]
        state = (await http.get("/state", params={"episode_id": episode})).json()
        assert state["step_count"] == 1
        probe = await http.post("/mcp", json={})
        assert probe.status_code == 200 and probe.json()["error"]["code"] == -32600
        listed = (
            await http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        ).json()
        assert "reset" in {t["name"] for t in listed["result"]["tools"]}
    # the standard /mcp stays standard: OpenEnv's probe is refused there
    async with httpx.AsyncClient() as http:
        standard = await http.post(mcp_url, json={})
        assert standard.status_code >= 400


def _upgrade(port: int, host: str, extra: str = "") -> int:
    """The status of a raw WebSocket handshake on /openenv/ws with this Host header."""
    key = base64.b64encode(b"0123456789abcdef").decode()
    request = (
        f"GET /openenv/ws HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\n"
        f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
        f"{extra}\r\n"
    )
    with socket.create_connection(("127.0.0.1", port), 10) as sock:
        sock.sendall(request.encode())
        return int(sock.recv(1024).split(b" ")[1])


def test_the_socket_keeps_the_host_origin_and_token_rules() -> None:
    with http_server("echo", "--openenv", "--auth-token", "s3cret") as url:
        port = int(url.split(":")[2].split("/")[0])
        base = f"http://127.0.0.1:{port}/openenv"
        assert httpx.get(f"{base}/health").status_code == 401
        assert httpx.get(f"{base}/health", auth=("openenv", "s3cret")).status_code == 200
        assert httpx.get(f"{base}/health", auth=("openenv", "wrong")).status_code == 401
        with pytest.raises(InvalidStatus):
            connect(f"ws://127.0.0.1:{port}/openenv/ws", open_timeout=10)
        assert _upgrade(port, f"127.0.0.1:{port}", "Authorization: Bearer s3cret\r\n") == 101
        assert _upgrade(port, "evil.example", "Authorization: Bearer s3cret\r\n") == 403
        origin = "Origin: http://evil.example\r\nAuthorization: Bearer s3cret\r\n"
        assert _upgrade(port, f"127.0.0.1:{port}", origin) == 403
        # OpenEnv's own client, unchanged: the token as Basic credentials in its base URL
        client = GenericEnvClient(base_url=f"http://openenv:s3cret@127.0.0.1:{port}/openenv")
        with client.sync() as env:
            env.reset(seed=0)
            assert env.step({"action": "hi"}).observation["observation"] == "hi"

"""The namesake form of ``--openenv`` and its MCP tool calls, attacked as a stranger would:
raw WebSocket messages that are not OpenEnv's models, tool calls that are malformed, name
no tool, or name another episode. Each gets a clear error naming what was expected; the
socket goes on; no other socket's episode is touched. (OpenEnv's own clients, playing:
tests/server/faces/test_openenv_typed_clients.py.)"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from websockets.sync.client import ClientConnection, connect

from tests.servers import http_server

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def atari_ws() -> Iterator[str]:
    with http_server("atari", "--openenv", "--game", "pong") as url:
        yield url.removesuffix("/mcp").replace("http://", "ws://") + "/openenv/ws"


@pytest.fixture(scope="module")
def echo_ws() -> Iterator[str]:
    with http_server("echo", "--openenv") as url:
        yield url.removesuffix("/mcp").replace("http://", "ws://") + "/openenv/ws"


def ask(ws: ClientConnection, kind: str, data: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"type": kind}
    if data is not None:
        message["data"] = data
    ws.send(json.dumps(message))
    answer: dict[str, Any] = json.loads(ws.recv(timeout=60))
    return answer


def call(ws: ClientConnection, name: Any, arguments: Any = None) -> dict[str, Any]:
    data: dict[str, Any] = {"type": "call_tool", "tool_name": name}
    if arguments is not None:
        data["arguments"] = arguments
    observation: dict[str, Any] = ask(ws, "step", data)["data"]["observation"]
    return observation


def test_payloads_that_are_not_the_models_are_refused_by_name(atari_ws: str) -> None:
    with connect(atari_ws, open_timeout=30) as ws:
        assert ask(ws, "reset", {"seed": 1})["data"]["observation"]["legal_actions"] == list(
            range(6)
        )
        for payload, said in [
            ({"action": 1}, "action_id: Field required"),
            ({"action_id": "FIRE"}, "action_id: Input should be a valid integer"),
            ({"action_id": 1, "extra": True}, "extra: Extra inputs are not permitted"),
            ([1], "expected atari_env's AtariAction as an object, got list"),
            ({"action_id": -1}, "action_id must be a legal action, 0..5"),
            ({"type": "list_everything"}, "type: Extra inputs are not permitted"),
        ]:
            answer = ask(ws, "step", payload)
            assert answer["type"] == "error", answer
            assert said in answer["data"]["message"], answer
            assert answer["data"]["code"] == "VALIDATION_ERROR"
        stepped = ask(ws, "step", {"action_id": 1})["data"]  # the socket goes on
        assert stepped["observation"]["frame_number"] == 4
        state = ask(ws, "state")["data"]
        assert state["step_count"] == 1 and state["game_name"] == "pong"
        # our own form, asked: the same socket speaks it from its next reset
        ours = ask(ws, "reset", {"seed": 1, "frames": "list"})["data"]["observation"]
        assert ours["legal_actions"][:2] == ["NOOP", "FIRE"]
        assert ask(ws, "step", {"action": "FIRE"})["data"]["observation"]["step"] == 1


def test_tool_calls_on_this_servers_tools_stay_on_their_socket(atari_ws: str) -> None:
    with connect(atari_ws, open_timeout=30) as other, connect(atari_ws, open_timeout=30) as ws:
        ask(other, "reset", {"seed": 2})
        ask(other, "step", {"action_id": 0})
        theirs = ask(other, "state")["data"]
        listed = ask(ws, "step", {"type": "list_tools"})["data"]["observation"]["tools"]
        assert {"reset", "step", "state"} <= {t["name"] for t in listed}
        assert all(set(t) == {"name", "description", "input_schema"} for t in listed)
        before = call(ws, "step", {"action": 1})  # no episode on this socket yet
        assert before["error"]["error_type"] == "execution_error", before
        assert "EpisodeRequired" in before["error"]["message"], before
        nothing = call(ws, "teleport", {})
        assert nothing["error"]["error_type"] == "tool_not_found"
        assert "tools: " in nothing["error"]["message"] and "step" in nothing["error"]["message"]
        for arguments in (["x"], "x", 3):
            bad = call(ws, "step", arguments)
            assert bad["error"] == {
                "error_type": "invalid_args",
                "message": "arguments must be an object",
            }, bad
        made = call(ws, "reset", {"seed": 2})  # the socket adopts the episode it made
        assert made["error"] is None and made["result"]["data"]["episode_id"].startswith("ep_")
        stepped = call(ws, "step", {"action": 1})
        assert stepped["result"]["data"]["step"] == 1
        mine = ask(ws, "state")["data"]
        assert mine["episode_id"] == made["result"]["data"]["episode_id"] != theirs["episode_id"]
        bogus = call(ws, "step", {"action": 1, "episode_id": "ep_" + "x" * 22})
        assert bogus["error"]["error_type"] == "execution_error", bogus
        assert ask(other, "state")["data"] == theirs  # the other socket's episode: untouched


def test_openenvs_echo_tools_refuse_what_they_cannot_take(echo_ws: str) -> None:
    with connect(echo_ws, open_timeout=30) as ws:
        listed = ask(ws, "step", {"type": "list_tools"})["data"]["observation"]["tools"]
        assert [t["name"] for t in listed] == ["echo_message", "echo_with_length"]
        missing = call(ws, "echo_message", {})
        assert missing["error"] == {
            "error_type": "invalid_args",
            "message": "echo_message needs message",
        }
        unnamed = call(ws, None, {"message": "hi"})
        assert unnamed["error"]["error_type"] == "tool_not_found"
        assert "echo_message, echo_with_length" in unnamed["error"]["message"]
        said = call(ws, "echo_message", {"message": "hi"})  # the episode made at need
        assert said["error"] is None and said["result"]["data"] == "hi"
        counted = call(ws, "echo_with_length", {"message": "x" * 500})
        assert counted["result"]["data"] == {"message": "x" * 500, "length": 500}
        long = call(ws, "echo_message", {"message": "x" * 5000})  # past echo's limit
        assert long["error"]["error_type"] == "invalid_args", long
        assert "at most" in long["error"]["message"] and "got 5000" in long["error"]["message"]
        # the episode the tools stepped, as the state message sees it: two steps
        assert ask(ws, "state")["data"]["step_count"] == 2

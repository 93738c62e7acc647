"""Long calls as MCP tasks (``io.modelcontextprotocol/tasks``), on the wire: over real
stdio and real Streamable HTTP, spoken as raw JSON-RPC in the 2026-07-28 envelope, as a
stranger's client would; the libraries' own clients are in
tests/serving/test_mcp_tasks_clients.py."""

from __future__ import annotations

import contextlib
import http.client
import json
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from openenv_mcp.server.jobs import TASKS_EXTENSION_ID
from tests.servers import RawStdio, ensure_sandbox, http_server, sessionless_meta, stdio_command

pytestmark = pytest.mark.integration

CAPS = "io.modelcontextprotocol/clientCapabilities"
EVAL = {"split": "test", "samples": 2, "k": [1, 2]}


def meta(tasks: bool = True, client: str = "probe") -> dict[str, Any]:
    out = sessionless_meta(client)
    if tasks:
        out[CAPS] = {"extensions": {TASKS_EXTENSION_ID: {}}}
    return out


class Stdio:
    """A stdio server spoken to request by request."""

    def __init__(self, *options: str) -> None:
        self.raw = RawStdio(stdio_command(*options))
        self.next_id = 0

    def ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        self.raw.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            message = self.raw.receive(timeout=120)
            assert message is not None, "the server closed its stdout"
            if message.get("id") == self.next_id:
                return message


@pytest.fixture
def echo() -> Iterator[Stdio]:
    server = Stdio("echo", "--mcp-tasks-per-client", "2")
    try:
        yield server
    finally:
        server.raw.proc.kill()
        server.raw.proc.wait(10)


def call(server: Stdio, tool: str, args: dict[str, Any], tasks: bool = True) -> dict[str, Any]:
    return server.ask("tools/call", {"name": tool, "arguments": args, "_meta": meta(tasks)})


def poll(ask: Any, task_id: str, timeout: float = 120) -> dict[str, Any]:
    """``tasks/get`` until the task is no longer working; its last answer."""
    deadline = time.monotonic() + timeout
    while True:
        answer = ask("tasks/get", {"taskId": task_id, "_meta": meta()})
        result: dict[str, Any] = answer["result"]
        if result["status"] != "working" or time.monotonic() > deadline:
            return result
        time.sleep(0.1)


def test_without_the_extension_evaluate_answers_in_the_call(echo: Stdio) -> None:
    answer = call(echo, "evaluate", EVAL, tasks=False)["result"]
    assert answer["resultType"] == "complete" and "taskId" not in answer
    assert "pass@2" in answer["content"][0]["text"]


def test_with_it_evaluate_is_a_task_whose_result_is_the_calls(echo: Stdio) -> None:
    direct = call(echo, "evaluate", EVAL, tasks=False)["result"]
    task = call(echo, "evaluate", EVAL)["result"]
    assert task["resultType"] == "task" and task["status"] == "working"
    assert task["taskId"].startswith("task_") and len(task["taskId"]) > 20
    assert task["ttlMs"] == 3_600_000 and task["pollIntervalMs"] > 0
    assert task["createdAt"].endswith("Z") and "content" not in task
    done = poll(echo.ask, task["taskId"])
    assert done["status"] == "completed" and done["resultType"] == "complete"
    assert done["result"]["content"] == direct["content"]
    assert done["result"]["structuredContent"]["scores"] == direct["structuredContent"]["scores"]
    again = poll(echo.ask, task["taskId"])  # kept for ttlMs: read again, the same
    assert again["result"] == done["result"]


def test_short_calls_stay_in_the_call_for_a_client_of_tasks(echo: Stdio) -> None:
    answer = call(echo, "reset", {"seed": 1})["result"]
    assert answer["resultType"] == "complete" and "taskId" not in answer
    assert answer["structuredContent"]["episode_id"]


def test_the_server_declares_the_extension_and_lists_the_same_tools(echo: Stdio) -> None:
    # 2026-07-28 tools carry no task support of their own: the server decides per call.
    plain = echo.ask("tools/list", {"_meta": meta(tasks=False)})["result"]["tools"]
    assert echo.ask("tools/list", {"_meta": meta()})["result"]["tools"] == plain
    found = echo.ask("server/discover", {"_meta": meta()})["result"]
    assert TASKS_EXTENSION_ID in found["capabilities"]["extensions"]


def test_strangers_asking_about_tasks_get_clear_errors(echo: Stdio) -> None:
    task_id = call(echo, "evaluate", EVAL)["result"]["taskId"]
    unknown = echo.ask("tasks/get", {"taskId": "task_madeup", "_meta": meta()})["error"]
    assert unknown["code"] == -32602 and "no task 'task_madeup'" in unknown["message"]
    undeclared = echo.ask("tasks/get", {"taskId": task_id, "_meta": meta(tasks=False)})["error"]
    assert undeclared["code"] == -32021 and TASKS_EXTENSION_ID in undeclared["message"]
    for bad in ({}, {"taskId": 7}, {"taskId": "x" * 1000}, {"taskId": None}):
        error = echo.ask("tasks/get", {**bad, "_meta": meta()})["error"]
        assert error["code"] == -32602, (bad, error)
    update = echo.ask("tasks/update", {"taskId": task_id, "inputResponses": {}, "_meta": meta()})
    assert "never ask for input" in update["error"]["message"]
    assert poll(echo.ask, task_id)["status"] == "completed"
    cancel_done = echo.ask("tasks/cancel", {"taskId": task_id, "_meta": meta()})["result"]
    assert cancel_done["resultType"] == "complete"
    assert poll(echo.ask, task_id)["status"] == "completed"  # a finished task stays as it ended


def test_a_client_runs_at_most_its_cap_of_tasks(echo: Stdio) -> None:
    big = {"split": "test", "samples": 100, "k": [1]}
    running = [call(echo, "evaluate", big)["result"]["taskId"] for _ in range(2)]
    refused = call(echo, "evaluate", big)
    assert refused["error"]["code"] == -32602
    assert "runs 2 tasks" in refused["error"]["message"]
    assert "--mcp-tasks-per-client=2" in refused["error"]["message"]
    for task_id in running:
        echo.ask("tasks/cancel", {"taskId": task_id, "_meta": meta()})
    assert {poll(echo.ask, t)["status"] for t in running} == {"cancelled"}
    assert call(echo, "evaluate", EVAL)["result"]["resultType"] == "task"  # room again


class Http:
    """Sessionless Streamable HTTP: every request a new connection."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.host, self.port, self.path = parts.hostname or "", parts.port or 80, parts.path

    def ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
        headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": params["_meta"]["io.modelcontextprotocol/protocolVersion"],
            "mcp-method": method,
        }
        if method == "tools/call":
            headers["mcp-name"] = params["name"]
        conn = http.client.HTTPConnection(self.host, self.port, timeout=120)
        try:
            conn.request("POST", self.path, body, headers)
            response = conn.getresponse()
            text = response.read().decode()
        finally:
            conn.close()
        if text.startswith("event:") or text.startswith("data:"):
            text = next(
                line[5:] for line in text.splitlines() if line.startswith("data:") and "id" in line
            )
        return dict(json.loads(text))

    def health(self) -> dict[str, Any]:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
        with contextlib.closing(conn):
            conn.request("GET", "/healthz")
            return dict(json.loads(conn.getresponse().read()))


def test_over_http_a_cancel_stops_a_long_eval_and_closes_its_episodes() -> None:
    with http_server("gymnasium", "--id", "CartPole-v1") as url:
        server = Http(url)
        args = {"split": "train", "samples": 10, "k": [1], "limit": 100}
        params = {"name": "evaluate", "arguments": args, "_meta": meta()}
        task = server.ask("tools/call", params)["result"]
        deadline = time.monotonic() + 60
        while server.health()["episodes"] == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        working = server.ask("tasks/get", {"taskId": task["taskId"], "_meta": meta()})["result"]
        assert working["status"] == "working" and working["statusMessage"].startswith("evaluate")
        asked = time.monotonic()
        server.ask("tasks/cancel", {"taskId": task["taskId"], "_meta": meta()})
        ended = poll(server.ask, task["taskId"], timeout=30)
        took = time.monotonic() - asked
        assert ended["status"] == "cancelled" and "result" not in ended
        assert took < 3, f"cancelled {took:.2f}s after the cancel"  # the bound
        assert server.health()["episodes"] == 0
        # A finished task is read from a new connection, as after a reconnect.
        quick = server.ask(
            "tools/call", {**params, "arguments": {"split": "test", "samples": 1, "limit": 2}}
        )["result"]
        done = poll(Http(url).ask, quick["taskId"])
        assert (
            done["status"] == "completed" and "success rate" in done["result"]["content"][0]["text"]
        )


def test_a_step_held_past_the_calls_limit_runs_as_a_task_and_stops_at_a_cancel() -> None:
    pong = Stdio("atari", "--game", "breakout")  # NOOP never launches the ball: no end
    try:
        episode = call(pong, "reset", {"seed": 3})["result"]["structuredContent"]["episode_id"]
        held = {"episode_id": episode, "action": 0, "repeat": 2000}
        refused = call(pong, "step", held, tasks=False)["result"]
        assert (
            refused["isError"] and "repeat must be 1..32, got 2000" in refused["content"][0]["text"]
        )
        assert "io.modelcontextprotocol/tasks" in refused["content"][0]["text"]
        task = call(pong, "step", held)["result"]
        done = poll(pong.ask, task["taskId"])
        assert done["status"] == "completed", done
        steps = done["result"]["structuredContent"]["step"]
        assert steps == 2000
        forever = call(pong, "step", {**held, "repeat": 100_000})["result"]
        time.sleep(0.5)
        pong.ask("tasks/cancel", {"taskId": forever["taskId"], "_meta": meta()})
        assert poll(pong.ask, forever["taskId"], timeout=30)["status"] == "cancelled"
        # The episode stands where the cancel stopped it, and plays on.
        after = call(pong, "step", {"episode_id": episode, "action": 0})["result"]
        assert not after.get("isError") and after["structuredContent"]["step"] > steps + 1
    finally:
        pong.raw.proc.kill()
        pong.raw.proc.wait(10)


def test_a_seat_waiting_for_its_turn_is_a_task_the_other_seats_move_completes() -> None:
    game = Stdio("openspiel", "--game", "tic_tac_toe", "--seats", "all")
    try:
        table = call(game, "reset", {"seed": 1, "seats": "all"})["result"]["structuredContent"]
        p0, p1 = table["seats"]["player_0"], table["seats"]["player_1"]
        task = call(game, "step", {"seat": p0, "action": 4})["result"]
        assert task["resultType"] == "task"  # it plays, then waits for player_1's move
        time.sleep(0.5)
        assert (
            game.ask("tasks/get", {"taskId": task["taskId"], "_meta": meta()})["result"]["status"]
            == "working"
        )
        moved = call(game, "step", {"seat": p1, "action": 0, "wait": False})["result"]
        assert moved["resultType"] == "complete"  # no wait, no task
        done = poll(game.ask, task["taskId"])
        assert done["status"] == "completed"
        told = done["result"]["content"][0]["text"]
        assert "you played x(1,1)" in told and "player_1 played o(0,0)" in told
    finally:
        game.raw.proc.kill()
        game.raw.proc.wait(10)


def test_a_coding_test_run_is_a_task() -> None:
    ensure_sandbox()
    coding = Stdio("coding")
    try:
        first = call(coding, "reset", {"seed": 0}, tasks=False)["result"]["structuredContent"]
        episode = first["episode_id"]
        call(coding, "step", {"episode_id": episode, "action": {"solution": "x = 1\n"}}, False)
        task = call(coding, "step", {"episode_id": episode, "action": {"test": True}})
        assert task["result"]["resultType"] == "task", task
        done = poll(coding.ask, task["result"]["taskId"])
        assert done["status"] == "completed"
        assert "test" in done["result"]["content"][0]["text"].lower()
    finally:
        coding.raw.proc.kill()
        coding.raw.proc.wait(10)


def test_a_client_of_both_extensions_gets_its_seats_wait_as_a_task_in_the_agent_profile() -> None:
    game = Stdio("openspiel", "--game", "tic_tac_toe", "--seats", "all", "--profile", "agent")
    both = meta()
    both[CAPS]["extensions"]["io.modelcontextprotocol/ui"] = {
        "mimeTypes": ["text/html;profile=mcp-app"]
    }
    try:
        reset = game.ask(
            "tools/call", {"name": "reset", "arguments": {"seats": "all"}, "_meta": both}
        )["result"]
        handles = reset["_meta"]["openenv-mcp/view"]  # the App's view of the answer
        text = reset["content"][0]["text"]
        seat = text.split("pass seat='")[1].split("'")[0]
        task = game.ask(
            "tools/call", {"name": "step", "arguments": {"seat": seat, "action": 4}, "_meta": both}
        )["result"]
        assert task["resultType"] == "task" and handles
        time.sleep(0.5)  # it played, and waits for player_1's move
        asked = time.monotonic()
        game.ask("tasks/cancel", {"taskId": task["taskId"], "_meta": both})
        assert poll(game.ask, task["taskId"])["status"] == "cancelled"
        took = time.monotonic() - asked
        assert took < 3, f"a seat's wait was given up {took:.2f}s after the cancel"
    finally:
        game.raw.proc.kill()
        game.raw.proc.wait(10)

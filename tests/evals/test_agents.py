"""Agents as eval policies: a model behind an OpenAI-compatible endpoint (a scripted
stand-in model on a real loopback HTTP server, the one fake allowed: the model), and an
agent harness command (a real MCP client process following a script) against real
servers over stdio, HTTP and memory."""

from __future__ import annotations

import copy
import json
import re
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import pytest

from openenv_mcp.client import Session
from openenv_mcp.errors import ArgumentError
from openenv_mcp.evals import TaskRun, evaluate
from openenv_mcp.evals._agents import (
    HarnessPolicy,
    OpenAIPolicy,
    agent_policy_from_spec,
    openai_tools,
)
from tests.servers import ROOT, serve_target

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

Script = Callable[[dict[str, Any]], tuple[int, bytes]]
HARNESS = ROOT / "tests" / "evals" / "echo_harness.py"
WAIT = 120


# -- a stand-in model: chat completions on loopback, answered from a script -----------------


class StandinModel:
    """``POST /v1/chat/completions`` on 127.0.0.1, answered by ``script(body)``; every
    request body is kept."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        model = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length))
                model.bodies.append(body)
                model.headers.append(dict(self.headers))
                if self.path != "/v1/chat/completions":
                    status, data = 404, b"no such route"
                else:
                    status, data = model.script(body)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> StandinModel:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)


def answer(*calls: tuple[str, Any], content: str | None = None) -> tuple[int, bytes]:
    """A chat completion whose message makes ``calls`` (``(name, arguments)``)."""
    tool_calls = [
        {
            "id": f"call_{k}_{name}",
            "type": "function",
            "function": {
                "name": name,
                "arguments": args if isinstance(args, str) else json.dumps(args),
            },
        }
        for k, (name, args) in enumerate(calls)
    ]
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    body = {"id": "x", "object": "chat.completion", "choices": [{"index": 0, "message": message}]}
    return 200, json.dumps(body).encode()


def turns(body: dict[str, Any]) -> int:
    return sum(1 for m in body["messages"] if m["role"] == "assistant")


def greeting(body: dict[str, Any]) -> str:
    """The task's greeting, read from the reset's text the model was given."""
    found = re.search(r"Observation: '([^']*)'", body["messages"][1]["content"])
    assert found, body["messages"][1]
    return found.group(1)


def echo_solver(body: dict[str, Any]) -> tuple[int, bytes]:
    """Echo's right answers: the greeting, then bye."""
    return answer(
        ("step", {"action": greeting(body)}) if turns(body) == 0 else ("step", {"action": "bye"})
    )


def echo_quitter(body: dict[str, Any]) -> tuple[int, bytes]:
    """Says bye at once: the episode ends, the task fails."""
    return answer(("step", {"action": "bye"}))


def check_requests(bodies: list[dict[str, Any]], model: str = "m") -> None:
    """Every request is a valid chat completions request: the model, function tools with
    object parameters, messages whose tool calls are each answered, in order, by id."""
    assert bodies
    for body in bodies:
        assert body["model"] == model and body["tool_choice"] == "auto"
        for tool in body["tools"]:
            assert tool["type"] == "function"
            function = tool["function"]
            assert set(function) == {"name", "description", "parameters"}
            assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", function["name"])
            assert function["parameters"]["type"] == "object"
            assert "episode_id" not in function["parameters"]["properties"]
        messages = body["messages"]
        assert messages[0]["role"] == "system" and messages[1]["role"] == "user"
        owed: list[str] = []
        for message in messages:
            assert message["role"] in ("system", "user", "assistant", "tool")
            if message["role"] == "tool":
                assert owed and message["tool_call_id"] == owed.pop(0)
                assert isinstance(message["content"], str)
                continue
            assert not owed, f"tool calls {owed} unanswered before a {message['role']} message"
            for call in message.get("tool_calls") or []:
                assert call["type"] == "function"
                assert isinstance(call["function"]["arguments"], str)
                owed.append(call["id"])
        assert not owed


def run_of(split: str = "test", index: int = 1, sample: int = 0) -> TaskRun:
    return TaskRun(split, index, {"id": f"echo-{split}-{index}"}, sample, seed=11)


@pytest.fixture
def transport_target(request: pytest.FixtureRequest) -> Iterator[Any]:
    with serve_target(request.param) as target:
        yield target


# -- the endpoint policy ------------------------------------------------------------------------


@pytest.mark.parametrize("transport_target", ["memory", "stdio", "http"], indirect=True)
async def test_a_model_that_echoes_solves_the_task_over_every_transport(
    transport_target: Any,
) -> None:
    with StandinModel(echo_solver) as model, anyio.fail_after(WAIT):
        policy = OpenAIPolicy(model.url, "m")
        async with Session(transport_target) as session:
            outcome = await policy.play(session, run_of())
    assert outcome.error is None and outcome.success is True
    assert outcome.steps == 2 and outcome.reward == pytest.approx(0.8)
    check_requests(model.bodies)
    # The Inspect log's messages: the rules, the start, each call and its result, paired.
    roles = [m["role"] for m in outcome.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool"]
    call = outcome.messages[2]["tool_calls"][0]
    assert call["function"] == "step" and json.loads(call["arguments"]) == {"action": "howdy"}
    assert outcome.messages[3]["tool_call_id"] == call["id"]
    assert "Episode over" in outcome.messages[5]["content"]


async def test_a_model_that_quits_fails_the_task_and_the_eval_counts_it() -> None:
    with (
        serve_target("memory") as server,
        StandinModel(echo_quitter) as model,
        anyio.fail_after(WAIT),
    ):
        report = await evaluate(
            server, split="test", samples=2, k=(1, 2), policy=OpenAIPolicy(model.url, "m")
        )
    scores = report.scores()
    assert scores["pass@1"] == 0.0 and scores["error_rate"] == 0.0
    assert len(model.bodies) == 8  # 4 tasks x 2 samples, one turn each
    check_requests(model.bodies)
    with (
        serve_target("memory") as server,
        StandinModel(echo_solver) as model,
        anyio.fail_after(WAIT),
    ):
        report = await evaluate(
            server, split="train", samples=1, limit=3, policy=OpenAIPolicy(model.url, "m")
        )
    assert report.scores()["pass@1"] == 1.0
    assert report.config["eval_parameters"]["policy"] == f"openai:m@{model.url}"


async def test_the_tools_are_the_servers_without_what_the_loop_keeps_and_strict_safe() -> None:
    from agents.strict_schema import ensure_strict_json_schema

    with serve_target("memory") as server, anyio.fail_after(WAIT):
        async with Session(server) as session:
            tools = openai_tools(session.tools)
    names = [t["function"]["name"] for t in tools]
    assert names == sorted(names) and "step" in names and "history" in names
    assert not {"reset", "close", "step_batch", "snapshot", "evaluate"} & set(names)
    for tool in tools:
        ensure_strict_json_schema(copy.deepcopy(tool["function"]["parameters"]))


async def test_the_api_key_is_sent_only_when_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "never-sent")
    monkeypatch.setenv("MY_KEY", "sk-test")
    with serve_target("memory") as server, StandinModel(echo_solver) as model:
        with anyio.fail_after(WAIT):
            async with Session(server) as session:
                await OpenAIPolicy(model.url, "m").play(session, run_of())
                await OpenAIPolicy(model.url, "m", api_key_env="MY_KEY").play(session, run_of())
    keys = {h.get("Authorization") for h in model.headers}
    assert keys == {None, "Bearer sk-test"}
    monkeypatch.delenv("MY_KEY")
    with pytest.raises(ArgumentError, match="MY_KEY: that environment variable is not set"):
        OpenAIPolicy(model.url, "m", api_key_env="MY_KEY")


# -- the endpoint policy, attacked --------------------------------------------------------------


async def play_with(script: Script, **options: Any) -> tuple[Any, StandinModel]:
    with serve_target("memory") as server, StandinModel(script) as model:
        with anyio.fail_after(WAIT):
            async with Session(server) as session:
                outcome = await OpenAIPolicy(model.url, "m", **options).play(session, run_of())
    return outcome, model


async def test_an_endpoint_that_is_down_is_the_runs_error() -> None:
    with StandinModel(echo_solver) as model:
        url = model.url
    with serve_target("memory") as server, anyio.fail_after(WAIT):
        async with Session(server) as session:
            outcome = await OpenAIPolicy(url, "m", retries=1).play(session, run_of())
    assert outcome.success is None
    assert outcome.error is not None and "could not reach the model endpoint" in outcome.error
    assert "after 2 attempts" in outcome.error


async def test_a_500_is_retried_then_the_runs_error() -> None:
    outcome, model = await play_with(lambda body: (500, b'{"error": "overloaded"}'), retries=1)
    assert len(model.bodies) == 2
    assert outcome.error is not None and "answered 500" in outcome.error
    assert "overloaded" in outcome.error and outcome.success is None


async def test_a_refusal_is_not_retried() -> None:
    outcome, model = await play_with(lambda body: (400, b'{"error": "bad model"}'))
    assert len(model.bodies) == 1
    assert outcome.error is not None and "answered 400" in outcome.error


@pytest.mark.parametrize(
    ("reply", "says"),
    [
        (b"<html>not json</html>", "answered with no JSON"),
        (b'{"choices": []}', "without choices[0].message"),
        (b'{"choices": [{"message": {"tool_calls": [{"id": "a"}]}}]}', "without function.name"),
        (b'{"choices": [{"message": {"tool_calls": "step"}}]}', "not a list"),
        (b"[1, 2]", "without choices[0].message"),
    ],
)
async def test_a_malformed_answer_is_the_runs_error(reply: bytes, says: str) -> None:
    outcome, _ = await play_with(lambda body: (200, reply))
    assert outcome.error is not None and says in outcome.error and outcome.success is None


async def test_an_unknown_tool_and_arguments_that_are_not_json_are_told_to_the_model() -> None:
    def script(body: dict[str, Any]) -> tuple[int, bytes]:
        n = turns(body)
        if n == 0:
            return answer(("reset", {}), ("fire", {}), ("step", '{"action": '))
        if n == 1:
            return answer(("step", "[1, 2]"), ("step", {"action": 7}))
        return (
            echo_solver({**body, "messages": body["messages"][:2]})
            if n == 2
            else answer(("step", {"action": "bye"}))
        )

    outcome, model = await play_with(script)
    assert outcome.success is True and outcome.error is None
    check_requests(model.bodies)
    results = [m["content"] for m in model.bodies[2]["messages"] if m["role"] == "tool"]
    assert "no tool 'reset'" in results[0] and "Tools: " in results[0]
    assert "no tool 'fire'" in results[1]
    assert "must be a JSON object" in results[2]
    assert "must be a JSON object, got list" in results[3]
    assert "InvalidAction" in results[4] and "expected a message string" in results[4]


async def test_a_model_that_never_calls_a_tool_stops_the_run() -> None:
    outcome, _ = await play_with(lambda body: answer(content="I would rather chat."))
    assert outcome.success is None
    assert outcome.error is not None
    assert "the model stopped before the episode ended" in outcome.error
    assert outcome.messages[-1] == {"role": "assistant", "content": "I would rather chat."}


async def test_a_model_that_never_ends_the_episode_meets_the_caps() -> None:
    outcome, model = await play_with(lambda body: answer(("step", {"action": "hi"})), max_turns=3)
    assert len(model.bodies) == 3 and outcome.steps == 3
    assert outcome.error == "the episode did not end within 3 model turns"
    with (
        serve_target("memory") as server,
        StandinModel(lambda body: answer(("step", {"action": "hi"}))) as m,
    ):
        with anyio.fail_after(WAIT):
            async with Session(server) as session:
                run = TaskRun("test", 0, {"id": "echo-test-0"}, 0, 1, max_steps=2)
                capped = await OpenAIPolicy(m.url, "m").play(session, run)
    assert capped.error == "stopped at the step cap (2 steps)" and capped.steps == 2


async def test_a_huge_answer_is_refused_not_read() -> None:
    huge = b'{"choices": [{"message": {"content": "' + b"x" * (9 * 1024 * 1024) + b'"}}]}'
    outcome, _ = await play_with(lambda body: (200, huge))
    assert outcome.error is not None and "more than 8388608 bytes" in outcome.error


def test_bad_endpoint_settings_are_refused() -> None:
    with pytest.raises(ArgumentError, match="http"):
        OpenAIPolicy("localhost:8000", "m")
    with pytest.raises(ArgumentError, match="--model"):
        OpenAIPolicy("http://x/v1", "")
    with pytest.raises(ArgumentError, match="max_turns"):
        OpenAIPolicy("http://x/v1", "m", max_turns=0)
    assert OpenAIPolicy("http://x/v1/", "m").url == "http://x/v1/chat/completions"
    assert OpenAIPolicy("http://x/v1/chat/completions", "m").url.count("chat") == 1


# -- the harness command policy ---------------------------------------------------------------


def harness(how: str) -> str:
    return f"{sys.executable} {HARNESS} {{mcp_config}} --{how}"


@pytest.mark.parametrize(("how", "success"), [("solve", True), ("quit", False)])
async def test_a_harness_commands_run_is_judged_from_its_recording(
    tmp_path: Path, how: str, success: bool
) -> None:
    policy = HarnessPolicy(harness(how), "echo", tmp_path, timeout=WAIT)
    with anyio.fail_after(WAIT + 30):
        outcome = await policy.play(None, run_of("test", 2))
    assert outcome.error is None, outcome.messages
    assert outcome.success is success
    assert outcome.steps == (2 if success else 1)
    config = json.loads((tmp_path / "mcp" / "echo-test-2-s000.json").read_text())
    assert "--task" in config["mcpServers"]["openenv"]["args"]
    assert "good evening, friend" in outcome.messages[-1]["content"]  # what the agent saw


async def test_a_harness_eval_counts_successes_over_samples(tmp_path: Path) -> None:
    policy = HarnessPolicy(harness("solve"), "echo", tmp_path, timeout=WAIT)
    with serve_target("memory") as server, anyio.fail_after(4 * WAIT):
        report = await evaluate(server, split="test", samples=2, limit=2, policy=policy)
    assert report.scores()["pass@1"] == 1.0 and report.scores()["error_rate"] == 0.0


async def test_the_command_may_name_the_task(tmp_path: Path) -> None:
    policy = HarnessPolicy(harness("solve") + " --task {task}", "echo", tmp_path, timeout=WAIT)
    with anyio.fail_after(WAIT + 30):
        outcome = await policy.play(None, run_of("test", 3))
    assert outcome.success is True, outcome.messages
    assert "--task echo-test-3" in outcome.messages[0]["content"]


@pytest.mark.parametrize(
    ("how", "says"),
    [
        ("idle", "the agent played no episode of task echo-test-1"),
        ("stall", "the agent stopped before the episode of task echo-test-1 ended"),
        ("fail", "exited with status 3"),
    ],
)
async def test_a_harness_that_does_not_finish_is_the_runs_error(
    tmp_path: Path, how: str, says: str
) -> None:
    policy = HarnessPolicy(harness(how), "echo", tmp_path, timeout=WAIT)
    with anyio.fail_after(WAIT + 30):
        outcome = await policy.play(None, run_of())
    assert outcome.success is None and outcome.error is not None and says in outcome.error


async def test_a_harness_past_its_timeout_and_one_that_cannot_start(tmp_path: Path) -> None:
    slow = HarnessPolicy(harness("sleep"), "echo", tmp_path / "a", timeout=1)
    with anyio.fail_after(WAIT):
        outcome = await slow.play(None, run_of())
    assert outcome.error is not None and "past its timeout (1s)" in outcome.error
    missing = HarnessPolicy("/nonexistent/harness {mcp_config}", "echo", tmp_path / "b")
    with anyio.fail_after(WAIT):
        outcome = await missing.play(None, run_of())
    assert outcome.error is not None and "did not start" in outcome.error


def test_harness_commands_and_flags_are_checked() -> None:
    with pytest.raises(ArgumentError, match=r"needs \{mcp_config\}"):
        HarnessPolicy("claude -p play", "echo", "/tmp/x")
    with pytest.raises(ArgumentError, match="does not parse"):
        HarnessPolicy("claude -p 'play {mcp_config}", "echo", "/tmp/x")
    with pytest.raises(ArgumentError, match="sets --record itself"):
        HarnessPolicy("h {mcp_config}", "echo", "/tmp/x", env_args=["--record", "d"])
    with pytest.raises(ArgumentError, match="cannot play a --server"):
        agent_policy_from_spec("h {mcp_config}", env=None, out="/tmp/x")
    with pytest.raises(ArgumentError, match="go together"):
        agent_policy_from_spec(None, openai_url="http://x/v1")
    with pytest.raises(ArgumentError, match="names another player"):
        agent_policy_from_spec("m.py:f", openai_url="http://x/v1", model="m")
    with pytest.raises(ArgumentError, match="--api-key-env goes with"):
        agent_policy_from_spec(None, api_key_env="K")
    assert agent_policy_from_spec("random") is None
    assert agent_policy_from_spec("m.py:f") is None
    made = agent_policy_from_spec("h {mcp_config}", env="echo", out="/tmp/x")
    assert isinstance(made, HarnessPolicy) and made.name == "h {mcp_config}"
    made_model = agent_policy_from_spec(None, openai_url="http://x/v1", model="m")
    assert isinstance(made_model, OpenAIPolicy) and made_model.name == "openai:m@http://x/v1"

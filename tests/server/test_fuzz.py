"""Bad input harms nothing: every tool's arguments fuzzed, and malformed JSON-RPC on stdio.

Hypothesis throws arbitrary JSON at every tool of echo, Atari (Pong) and
Gymnasium's Blackjack through the in-memory client: missing and extra
arguments, wrong types, unknown tools (and the tools of an env not mounted),
illegal actions, unknown and stale episode and snapshot handles, steps after
an episode ended, oversized strings. The server's state carries over from one
example to the next, so calls land on live, ended, broken, closed and evicted
episodes alike. After every call:

* the answer is a valid result (its ``structuredContent`` matches the tool's
  ``outputSchema``) or a tool error whose text starts ``Name: message`` and
  carries no traceback, file path or megabytes of echoed input;
* a normal call works (a canary episode steps, its step count exact);
* a bystander episode is untouched (step count, return, observation hash).

The number of calls tried is printed in the "openenv-mcp figures" summary.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import jsonschema
import mcp_types
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from fastmcp import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openenv_mcp.server import ServerSettings, build_server
from openenv_mcp.server.transports._stdio import MAX_LINE
from tests.figures import record_figure
from tests.servers import CLI, INITIALIZE, LEAKS, RawStdio, call, stop

#: A tool error's text: ``ErrorName: what was expected and what came``.
ERROR_TEXT = re.compile(r"^[A-Z][A-Za-z]*: \S")
#: Error texts stay readable however large the input was.
MAX_ERROR_TEXT = 4096
HUGE = ["x" * 200_000, "9" * 5_000, "ep_" + "a" * 10_000, "\u00e9" * 50_000, "\u00b2"]
#: Tools of other environments, asked of a server that does not mount them.
FOREIGN_TOOLS = ["fire", "left_fire", "legal_actions", "history", "reward_rule", "hit", "stick"]

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=40)
    | st.sampled_from(["", "ep_", "snap_", "NOOP", "bye", "png", "raw", "0", "-1"]),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=8,
)

#: Thousands of generated calls: the reliability tier, with faults, load and leaks.
pytestmark = pytest.mark.integration

FUZZ_COUNT: dict[str, int] = {}


@pytest.fixture(scope="module", autouse=True)
def report_fuzz_count() -> Iterator[None]:
    """After this module: report how many bad inputs were tried."""
    yield
    if FUZZ_COUNT:
        total = sum(FUZZ_COUNT.values())
        detail = ", ".join(f"{what} {n}" for what, n in sorted(FUZZ_COUNT.items()))
        record_figure(
            f"fuzz: {total} bad inputs tried ({detail}); each answered with a result or "
            "a clear error, the server kept serving, bystanders untouched"
        )


def fingerprint(view: dict[str, Any]) -> tuple[Any, ...]:
    """What must not change in a bystander: step, return, status, info, observation."""
    observation = json.dumps(view.get("observation"), sort_keys=True).encode()
    return (
        view["step"],
        view["episode_return"],
        view["status"],
        json.dumps(view["info"], sort_keys=True),
        hashlib.sha256(observation).hexdigest(),
    )


@dataclass(repr=False)
class Target:
    """A server under fuzz, its client (on a portal's event loop) and its witnesses."""

    env: str
    portal: BlockingPortal
    client: Client
    actions: st.SearchStrategy[Any]
    canary_action: Any
    option_keys: list[str]
    tools: dict[str, mcp_types.Tool] = field(default_factory=dict)
    bystander: str = ""
    baseline: tuple[Any, ...] = ()
    canary: str = ""
    canary_step: int = 0
    episodes: list[str] = field(default_factory=list)
    snapshots: list[str] = field(default_factory=list)
    live: list[str] = field(default_factory=list)
    calls: int = 0

    def __repr__(self) -> str:  # hypothesis prints it with every failure
        return f"<{self.env} server after {self.calls} fuzzed calls>"

    def raw(self, tool: str, args: dict[str, Any]) -> mcp_types.CallToolResult:
        result: mcp_types.CallToolResult = self.portal.call(
            partial(self.client.call_tool_mcp, tool, args)
        )
        return result

    def ok(self, tool: str, **args: Any) -> dict[str, Any]:
        result = self.raw(tool, args)
        assert not result.is_error, f"{tool}({args}): {text_of(result)}"
        assert result.structured_content is not None
        return dict(result.structured_content)

    def setup(self) -> None:
        self.tools = {t.name: t for t in self.portal.call(self.client.list_tools)}
        # Bystander first and the fuzz's default episode last: calls without an
        # episode_id land on the default episode, never on the witnesses.
        self.bystander = self.ok("reset", seed=1, new_episode=True)["episode_id"]
        self.ok("step", episode_id=self.bystander, action=self.canary_action)
        self.baseline = fingerprint(self.ok("state", episode_id=self.bystander, frames="raw"))
        self.canary = self.ok("reset", seed=2, new_episode=True)["episode_id"]
        default = self.ok("reset", seed=3, new_episode=True)["episode_id"]
        closed = self.ok("reset", new_episode=True)["episode_id"]
        self.ok("close", episode_id=closed)
        self.episodes = [default, closed]
        self.live = [default]
        if "snapshot" in self.tools:
            snap = self.ok("snapshot", episode_id=default)["snapshot_id"]
            released = self.ok("snapshot", episode_id=default)["snapshot_id"]
            self.ok("release_snapshot", snapshot_id=released)
            self.snapshots = [snap, released]

    # -- one fuzz case ---------------------------------------------------------------

    def fuzz(self, tool: str, args: dict[str, Any]) -> None:
        """Call ``tool`` with ``args``, then check every invariant."""
        self.calls += 1
        FUZZ_COUNT[self.env] = FUZZ_COUNT.get(self.env, 0) + 1
        result = self.raw(tool, args)
        self.check(tool, result)
        self.learn(result)
        self.check_witnesses()

    def check(self, tool: str, result: mcp_types.CallToolResult) -> None:
        text = text_of(result)
        if result.is_error:
            assert ERROR_TEXT.match(text), f"{tool}: error text without an error name: {text!r}"
            for leak in LEAKS:
                assert leak not in text, f"{tool}: {leak!r} leaked to the client: {text[:500]}"
            assert len(text) <= MAX_ERROR_TEXT, f"{tool}: error of {len(text)} chars"
            return
        assert result.content and result.content[0].type == "text"
        schema = self.tools[tool].output_schema if tool in self.tools else None
        if schema is not None:
            jsonschema.validate(result.structured_content, schema)

    def learn(self, result: mcp_types.CallToolResult) -> None:
        """Remember handles the fuzz minted (so later cases use them); bound their number."""
        data = result.structured_content or {}
        episode = data.get("episode_id")
        if isinstance(episode, str) and episode not in (self.bystander, self.canary):
            if episode not in self.episodes:
                self.episodes.append(episode)
            if episode not in self.live:
                self.live.append(episode)
        snap = data.get("snapshot_id")
        if isinstance(snap, str) and snap not in self.snapshots:
            self.snapshots.append(snap)
        while len(self.live) > 8:
            self.raw("close", {"episode_id": self.live.pop(0)})
        while len(self.snapshots) > 8:
            self.raw("release_snapshot", {"snapshot_id": self.snapshots.pop(0)})
        del self.episodes[:-24]

    def check_witnesses(self) -> None:
        view = self.ok("step", episode_id=self.canary, action=self.canary_action, frames="none")
        self.canary_step += 1
        assert view["step"] == self.canary_step
        if view["status"] == "ended":
            self.ok("reset", episode_id=self.canary, frames="none")
            self.canary_step = 0
        assert fingerprint(self.ok("state", episode_id=self.bystander, frames="raw")) == (
            self.baseline
        )

    # -- strategies ----------------------------------------------------------------------

    def tool_names(self) -> st.SearchStrategy[str]:
        own = st.sampled_from(sorted(self.tools))
        return st.one_of(own, own, own, st.sampled_from(FOREIGN_TOOLS), st.text(max_size=30))

    def value(self, prop: str) -> st.SearchStrategy[Any]:
        # Indices, resolved when drawn: the handles known change from case to case,
        # and hypothesis wants the same draws to mean the same choices.
        episodes = st.integers(0, 31).map(lambda i: pick([*self.episodes, "ep_nope", "", "EP"], i))
        snapshots = st.integers(0, 15).map(lambda i: pick([*self.snapshots, "snap_nope"], i))
        plausible: dict[str, st.SearchStrategy[Any]] = {
            "episode_id": episodes,
            "snapshot_id": snapshots,
            "from_snapshot": snapshots,
            "action": self.actions,
            "seed": st.integers(-5, 2**31 + 5) | st.sampled_from([2**63, -(2**70)]),
            "frames": st.sampled_from(["png", "raw", "both", "none", "jpeg", "PNG"]),
            "options": st.dictionaries(
                st.sampled_from([*self.option_keys, "bogus"]), json_values, max_size=2
            ),
            "new_episode": st.booleans(),
            "steps": st.lists(
                st.fixed_dictionaries({"episode_id": episodes, "action": self.actions}),
                max_size=5,
            ),
        }
        good = plausible.get(prop, json_values)
        return st.one_of(good, good, json_values, st.sampled_from(HUGE))

    def arguments(self, tool: str) -> st.SearchStrategy[dict[str, Any]]:
        known = self.tools.get(tool) or self.tools["step"]
        props = sorted(known.input_schema.get("properties", {}))
        declared = st.fixed_dictionaries({}, optional={p: self.value(p) for p in props})
        extra = st.dictionaries(st.text(max_size=12), json_values, max_size=2)
        return st.one_of(declared, declared, declared, st.builds(_merge, declared, extra))


def pick(choices: list[str], index: int) -> str:
    return choices[index % len(choices)]


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    return {**b, **a}


def text_of(result: mcp_types.CallToolResult) -> str:
    return " ".join(c.text for c in result.content if isinstance(c, mcp_types.TextContent))


@contextlib.contextmanager
def fuzz_target(
    env: str,
    actions: st.SearchStrategy[Any],
    canary_action: Any,
    option_keys: list[str],
    **options: Any,
) -> Iterator[Target]:
    # Small limits, so the fuzz also meets them; a short idle timeout is never
    # reached (eviction has its own test with a controlled clock).
    server = build_server(
        env, settings=ServerSettings(max_episodes=16, max_snapshots=12), **options
    )
    with start_blocking_portal("asyncio") as portal:
        client = portal.wrap_async_context_manager(Client(server, timeout=60))
        with client as connected:
            target = Target(env, portal, connected, actions, canary_action, option_keys)
            target.setup()
            yield target


@pytest.fixture(scope="module")
def echo() -> Iterator[Target]:
    actions = st.text(max_size=30) | st.sampled_from(["bye", "x" * 4096, "x" * 4097])
    with fuzz_target("echo", actions, "hi", ["greeting"], max_steps=50) as target:
        yield target


@pytest.fixture(scope="module")
def atari() -> Iterator[Target]:
    names = ["NOOP", "FIRE", "RIGHT", "LEFT", "RIGHTFIRE", "LEFTFIRE"]
    actions = (
        st.integers(-3, 20)
        | st.sampled_from([*names, *(n.lower() for n in names), " fire ", "FIREE", "UP", "5"])
        | st.text(max_size=12)
    )
    with fuzz_target("atari", actions, 0, ["mode", "difficulty"], game="pong") as target:
        yield target


@pytest.fixture(scope="module")
def blackjack() -> Iterator[Target]:
    actions = st.integers(-2, 3) | st.sampled_from(["stick", "HIT", "hit", "0", "1", "fold"])
    with fuzz_target("gymnasium", actions, "stick", [], id="Blackjack-v1") as target:
        yield target


FUZZ = settings(
    deadline=None,
    suppress_health_check=list(HealthCheck),
    database=None,  # each run explores afresh; a failure prints its reproduction
    print_blob=True,
)


def run_case(target: Target, data: st.DataObject) -> None:
    tool = data.draw(target.tool_names(), label="tool")
    args = data.draw(target.arguments(tool), label="arguments")
    target.fuzz(tool, args)


@given(data=st.data())
@settings(FUZZ, max_examples=1000)
def test_fuzz_echo(echo: Target, data: st.DataObject) -> None:
    run_case(echo, data)


@given(data=st.data())
@settings(FUZZ, max_examples=600)
def test_fuzz_atari(atari: Target, data: st.DataObject) -> None:
    run_case(atari, data)


@given(data=st.data())
@settings(FUZZ, max_examples=200)
def test_fuzz_blackjack(blackjack: Target, data: st.DataObject) -> None:
    run_case(blackjack, data)


# -- the cases the issue names, every run, by name ------------------------------------


def named_cases(t: Target) -> list[tuple[str, dict[str, Any], str]]:
    """``(tool, arguments, expected error name)`` for each kind of bad input."""
    episode = t.ok("reset", new_episode=True)["episode_id"]
    closed = t.ok("reset", new_episode=True)["episode_id"]
    t.ok("close", episode_id=closed)
    snap = t.ok("snapshot", episode_id=episode)["snapshot_id"]
    t.ok("release_snapshot", snapshot_id=snap)
    return [
        ("step", {"episode_id": episode}, "ArgumentError"),  # missing argument
        ("step", {"episode_id": episode, "action": 0, "bogus": 1}, "ArgumentError"),  # extra
        ("reset", {"seed": "seven"}, "ArgumentError"),  # wrong type
        ("reset", {"seed": -(2**40)}, "ArgumentError"),  # out of range (any seed >= 0 is one)
        ("reset", {"new_episode": "yes"}, "ArgumentError"),
        ("state", {"episode_id": 42}, "ArgumentError"),
        ("state", {"episode_id": episode, "frames": "jpeg"}, "ArgumentError"),
        ("step_batch", {"steps": "all"}, "ArgumentError"),
        ("step_batch", {"steps": []}, "ArgumentError"),
        ("no_such_tool", {}, "UnknownTool"),  # unknown tool
        ("reset", {"episode_id": "x" * 200_000}, "ArgumentError"),  # oversized handle
        ("step", {"episode_id": "ep_nope", "action": 0}, "UnknownEpisode"),
        ("step", {"episode_id": closed, "action": 0}, "UnknownEpisode"),  # closed handle
        ("close", {"episode_id": closed}, "UnknownEpisode"),
        ("reset", {"from_snapshot": snap}, "UnknownSnapshot"),  # released handle
        ("release_snapshot", {"snapshot_id": snap}, "UnknownSnapshot"),
        ("reset", {"options": {"bogus": 1}}, "UnsupportedOption"),
    ]


def run_named(t: Target, cases: list[tuple[str, dict[str, Any], str]]) -> None:
    for tool, args, expected in cases:
        t.calls += 1
        FUZZ_COUNT[t.env] = FUZZ_COUNT.get(t.env, 0) + 1
        result = t.raw(tool, args)
        t.check(tool, result)
        assert result.is_error, f"{tool}({str(args)[:200]}) should fail"
        assert text_of(result).startswith(f"{expected}: "), (tool, text_of(result)[:300])
        t.check_witnesses()


def test_named_bad_inputs_echo(echo: Target) -> None:
    ended = echo.ok("reset", new_episode=True)["episode_id"]
    echo.ok("step", episode_id=ended, action="bye")  # terminated
    episode = echo.ok("reset", new_episode=True)["episode_id"]
    cases = [
        *named_cases(echo),
        ("step", {"episode_id": ended, "action": "after the end"}, "ResetNeeded"),
        ("step", {"episode_id": episode, "action": 7}, "InvalidAction"),
        ("step", {"episode_id": episode, "action": "x" * 200_000}, "InvalidAction"),
        ("fire", {"episode_id": episode}, "UnknownTool"),  # a tool of an env not mounted
    ]
    run_named(echo, cases)
    text = text_of(echo.raw("step", {"episode_id": episode, "action": "x" * 200_000}))
    assert "at most 4096 characters" in text and len(text) < 300
    text = text_of(echo.raw("histroy", {}))
    assert "Did you mean 'history'?" in text and "reset" in text


def test_named_bad_inputs_atari(atari: Target) -> None:
    episode = atari.ok("reset", new_episode=True)["episode_id"]
    cases = [
        *named_cases(atari),
        ("step", {"episode_id": episode, "action": 6}, "InvalidAction"),
        ("step", {"episode_id": episode, "action": "9" * 5000}, "InvalidAction"),
        ("step", {"episode_id": episode, "action": "\u00b2"}, "InvalidAction"),
        ("step", {"episode_id": episode, "action": "x" * 200_000}, "InvalidAction"),
        ("step", {"episode_id": episode, "action": [1]}, "InvalidAction"),
        ("step", {"episode_id": episode, "action": True}, "InvalidAction"),
        ("history", {"episode_id": episode}, "UnknownTool"),
    ]
    run_named(atari, cases)
    # a huge illegal action is named briefly, and the legal ones still listed
    text = text_of(atari.raw("step", {"episode_id": episode, "action": "x" * 200_000}))
    assert "Legal: 0-5 (NOOP" in text and len(text) < 1000


# -- malformed JSON-RPC on stdio -------------------------------------------------------


@pytest.mark.integration
def test_malformed_jsonrpc_lines_on_stdio() -> None:
    """Each bad line gets a JSON-RPC error (or a tool error); the server keeps serving."""
    server = RawStdio([*CLI, "serve", "echo", "--stdio", "--log-level", "WARNING"])
    try:
        server.send(INITIALIZE)
        assert server.until(lambda seen: bool(seen))[0]["id"] == "init"
        server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        anonymous = [  # no usable id: answered with id null
            (b"not json", -32700),
            (b'{"jsonrpc": "2.0", "id": 1, "method"', -32700),  # cut off
            (b"42", -32600),
            (b"[1, 2]", -32600),
            (b'"text"', -32600),
            (b"null", -32600),
            (b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "tools/list"}', -32600),
            (b'{"jsonrpc": "2.0", "id": 1' + b" " * (MAX_LINE + 1024) + b"}", -32700),
        ]
        identified: dict[Any, Callable[[dict[str, Any]], bool]] = {
            "no-method": lambda m: m["error"]["code"] == -32600,
            "no-jsonrpc": lambda m: m["error"]["code"] == -32600,
            "no-params": lambda m: "error" in m,
            "args-list": lambda m: "error" in m,
            "args-str": lambda m: "error" in m,
            "name-int": lambda m: "error" in m,
            "no-method-x": lambda m: m["error"]["code"] == -32601,
            "seed-type": lambda m: (
                m["result"]["isError"]
                and m["result"]["content"][0]["text"].startswith("ArgumentError: ")
            ),
            "unknown-tool": lambda m: (
                m["result"]["isError"]
                and m["result"]["content"][0]["text"].startswith("UnknownTool: ")
            ),
        }
        for line, _ in anonymous:
            server.send(line)
        server.send(b'{"jsonrpc": "2.0", "id": "no-method"}')
        server.send(b'{"id": "no-jsonrpc", "method": "tools/list"}')
        server.send(b'{"jsonrpc": "2.0", "method": "notifications/nonsense"}')  # unanswered
        server.send(b'{"jsonrpc": "2.0", "id": "no-params", "method": "tools/call"}')
        server.send(call("args-list", "reset", [1, 2]))
        server.send(call("args-str", "reset", "seed=1"))
        server.send(call("name-int", 42))
        server.send({"jsonrpc": "2.0", "id": "no-method-x", "method": "no/such/method"})
        server.send(call("seed-type", "reset", {"seed": "x"}))
        server.send(call("unknown-tool", "no_such_tool", {}))
        server.send(call("after", "reset", {"seed": 5}))  # a normal call afterwards
        seen = server.until(lambda s: {m.get("id") for m in s} >= {*identified, "after"})
        # The anonymous errors come first, one per bad line, in order.
        nulls = [m for m in seen if m.get("id") is None]
        assert [m["error"]["code"] for m in nulls] == [code for _, code in anonymous]
        by_id = {m["id"]: m for m in seen if m.get("id") is not None}
        for request_id, expected in identified.items():
            assert expected(by_id[request_id]), by_id[request_id]
        assert by_id["after"]["result"]["structuredContent"]["step"] == 0
        assert len(seen) == len(anonymous) + len(identified) + 1  # nothing else, no repeats
        # Python's json writes NaN and Infinity (say, a diverged policy's action): still
        # answered under the request's id, with the env's verdict.
        server.send(json.dumps(call("nan", "step", {"action": float("nan")})).encode())
        server.send(json.dumps(call("inf", "reset", {"seed": float("inf")})).encode())
        odd = {
            m["id"]: m["result"]["content"][0]["text"] for m in server.until(lambda s: len(s) == 2)
        }
        assert odd["nan"].startswith("InvalidAction: expected a message string, got float nan")
        assert odd["inf"].startswith("ArgumentError: reset: argument 'seed'")
        # and the connection still serves, then ends cleanly at EOF
        server.send(call("last", "step", {"action": "still here"}))
        (last,) = server.until(lambda s: bool(s))
        assert last["result"]["structuredContent"]["step"] == 1
        assert server.proc.stdin is not None
        server.proc.stdin.close()
        assert server.receive() is None
        assert server.proc.wait(30) == 0
    finally:
        stop(server.proc)


@pytest.mark.integration
def test_fuzz_stdio_lines() -> None:
    """Random bytes and random JSON-RPC-ish lines: each request with an id is answered
    exactly once, and a normal call afterwards works."""
    rng = random.Random(7)
    server = RawStdio([*CLI, "serve", "echo", "--stdio", "--log-level", "WARNING"])
    try:
        server.send(INITIALIZE)
        server.until(lambda seen: bool(seen))
        owed: set[Any] = set()  # requests with a usable id: each must get one answer
        for n in range(400):
            kind = rng.randrange(3)
            if kind == 0:
                line = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200)))
                server.send(line.replace(b"\n", b" "))
                continue
            request_id = rng.choice([f"s{n}", n, None, 2.5, True, [], {}])
            if kind == 1:
                message: dict[str, Any] = {
                    "jsonrpc": rng.choice(["2.0", "2.0", "1.0", None]),
                    "id": request_id,
                    "method": rng.choice(["tools/call", "tools/list", "ping", "x", 5]),
                    "params": rng.choice([None, 1, "p", [], {"name": "step"}, {"name": 3}]),
                }
                message = {k: v for k, v in message.items() if v is not None or rng.random() < 0.5}
            else:
                tool = rng.choice(["reset", "step", "state", "close", "fire", ""])
                arguments = rng.choice([None, {}, {"action": 1}, {"action": "a"}, [], "a"])
                message = call(request_id, tool, arguments)
            if isinstance(request_id, str | int) and not isinstance(request_id, bool):
                owed.add(request_id)
            server.send(message)
        server.send(call("final", "reset", {"seed": 1}))
        seen = server.until(lambda s: owed | {"final"} <= {m.get("id") for m in s})
        final = next(m for m in seen if m.get("id") == "final")
        assert final["result"]["structuredContent"]["step"] == 0
        assert server.proc.stdin is not None
        server.proc.stdin.close()
        while (message := server.receive()) is not None:  # bounded: 60 s per message
            seen.append(message)
        answered = [m["id"] for m in seen if m.get("id") is not None]
        assert sorted(map(str, answered)) == sorted(map(str, {*owed, "final"}))  # once each
        assert server.proc.wait(30) == 0
        FUZZ_COUNT["stdio lines"] = FUZZ_COUNT.get("stdio lines", 0) + 400
    finally:
        stop(server.proc)

"""The one spec type: made from an environment, published as JSON, read back the same on the
client's side, read from what older servers published, and what a malformed one says."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import fields
from typing import Any

import anyio
import pytest

from openenv_mcp.client import MCPEnvClient, ServerSpec
from openenv_mcp.environment import ActionSet, Environment, Serving
from openenv_mcp.errors import ArgumentError
from openenv_mcp.registry import get_env_class
from openenv_mcp.server import EnvApp
from openenv_mcp.spec import OLD_KEYS, EnvSpec
from tests.servers import memory_server

#: The fields only the environment's side knows: a spec read from JSON has their defaults.
ENV_SIDE = {"instructions", "briefing", "serving", "metadata", "tools"}

ENVS = [
    ("echo", {}),
    ("gymnasium", {"id": "Blackjack-v1"}),
    ("gymnasium", {"id": "CartPole-v1"}),
    ("gymnasium", {"id": "Pendulum-v1"}),
]

#: ``openenv://gymnasium/spec`` as the server published it before the client's spec and the
#: server's were one type (``env``, ``actions``, ``reset_options``), settings cut short.
OLD_BLACKJACK: dict[str, Any] = {
    "env": "gymnasium",
    "title": "Gymnasium Blackjack-v1",
    "description": "Any registered Gymnasium environment (--id Blackjack-v1, CartPole-v1, "
    "FrozenLake-v1, ...): named discrete actions, observations in words, rgb_array frames "
    "as images.",
    "config": {"id": "Blackjack-v1", "kwargs": {}, "max_episode_steps": None, "render": True},
    "action_space": {"type": "Discrete", "n": 2, "start": 0, "dtype": "int64"},
    "observation_space": {
        "type": "Tuple",
        "spaces": [
            {"type": "Discrete", "n": 32, "start": 0, "dtype": "int64"},
            {"type": "Discrete", "n": 11, "start": 0, "dtype": "int64"},
            {"type": "Discrete", "n": 2, "start": 0, "dtype": "int64"},
        ],
    },
    "actions": [
        {
            "id": 0,
            "name": "STICK",
            "meaning": "stop taking cards; the dealer then plays out their hand",
        },
        {"id": 1, "name": "HIT", "meaning": "take another card"},
    ],
    "action_schema": {
        "anyOf": [
            {"type": "integer", "minimum": 0, "maximum": 1},
            {"type": "string", "enum": ["STICK", "HIT"]},
        ],
        "description": "A legal action, by number or by name: 0=STICK, 1=HIT",
    },
    "has_frame": True,
    "frame_is_observation": False,
    "reset_options": {},
    "supports_snapshots": True,
    "extras": [],
    "openenv_mcp": "0.1.0",
    "settings": {"profile": "full"},
}

#: ``openenv://echo/spec`` of the same older server.
OLD_ECHO: dict[str, Any] = {
    "env": "echo",
    "title": "echo",
    "description": "Echo: step with a message, observe it back, reward from its length "
    "('bye' ends).",
    "config": {"max_steps": 100, "reward_per_char": 0.1, "frame": False, "step_delay": 0.0},
    "action_space": {"type": "Text", "min_length": 0, "max_length": 4096, "charset": None},
    "observation_space": {"type": "Text", "min_length": 0, "max_length": 4096, "charset": None},
    "actions": None,
    "action_schema": {
        "type": "string",
        "minLength": 0,
        "maxLength": 4096,
        "description": "The message to echo ('bye' ends the episode).",
    },
    "has_frame": False,
    "frame_is_observation": False,
    "reset_options": {
        "greeting": {
            "default": "",
            "description": "The first observation.",
            "maxLength": 4096,
            "type": "string",
        }
    },
    "supports_snapshots": True,
    "extras": [],
    "openenv_mcp": "0.1.0",
    "settings": {"profile": "full"},
}


@contextmanager
def made(name: str, config: dict[str, Any]) -> Iterator[Environment[Any]]:
    cls = get_env_class(name)
    env = cls(cls.Config(**config))
    try:
        yield env
    finally:
        env.close()


def as_older(published: dict[str, Any]) -> dict[str, Any]:
    """A spec as a server published it before: the older keys, none of the newer fields."""
    older = {OLD_KEYS.get(k, k): v for k, v in published.items()}
    for newer in ("entry_point", "info", "np_random"):
        del older[newer]
    return older


def test_one_type_under_both_names() -> None:
    """``openenv_mcp.client.ServerSpec`` is the spec type itself, not a second one."""
    assert ServerSpec is EnvSpec


@pytest.mark.parametrize(("name", "config"), ENVS, ids=[c.get("id", n) for n, c in ENVS])
def test_what_a_server_publishes_reads_back_as_the_same_spec(
    name: str, config: dict[str, Any]
) -> None:
    with made(name, config) as env:
        spec = EnvSpec.of(env, settings={"profile": "full", "max_episodes": 8})
        published = json.loads(json.dumps(spec.to_json()))  # as it travels
        read = EnvSpec.from_json(published)
        assert read.to_json() == published
        for field in fields(EnvSpec):
            if field.name not in ENV_SIDE:
                assert getattr(read, field.name) == getattr(spec, field.name), field.name
        assert (read.tools, read.metadata, read.serving, read.instructions) == (
            (),
            {},
            Serving(),
            "",
        )
        assert published["name"] == name and "env" not in published
        assert published["openenv_mcp"] == spec.version != ""


@pytest.mark.parametrize("old", [OLD_ECHO, OLD_BLACKJACK], ids=["echo", "Blackjack-v1"])
def test_a_spec_an_older_server_published_still_loads(old: dict[str, Any]) -> None:
    spec = EnvSpec.from_json(old)
    assert spec.name == old["env"] and spec.options == old["reset_options"]
    assert spec.action_set == (ActionSet.from_json(old["actions"]) if old["actions"] else None)
    assert (spec.version, spec.settings, spec.config) == (
        "0.1.0",
        {"profile": "full"},
        old["config"],
    )
    # Code written against the client's older names still reads them.
    assert (spec.env, spec.actions, spec.reset_options) == (
        spec.name,
        spec.action_set,
        spec.options,
    )
    # The same environment as today's server describes it: the same spaces and actions.
    with made(old["env"], {k: v for k, v in old["config"].items() if k == "id"}) as env:
        today = EnvSpec.of(env)
    same = ("name", "action_space", "observation_space", "action_set", "has_frame")
    assert [getattr(spec, f) for f in same] == [getattr(today, f) for f in same]
    assert (spec.frame_is_observation, spec.supports_snapshots, spec.extras) == (
        today.frame_is_observation,
        today.supports_snapshots,
        today.extras,
    )
    written = spec.to_json()  # written back in the one vocabulary
    assert written["name"] == old["env"] and not {"env", "actions", "reset_options"} & set(written)


def test_the_newer_key_wins_where_both_came() -> None:
    both = {**OLD_ECHO, "name": "echo2", "options": {"x": {"type": "integer"}}}
    spec = EnvSpec.from_json(both)
    assert (spec.name, spec.options) == ("echo2", {"x": {"type": "integer"}})


def test_a_minimal_spec_takes_the_defaults() -> None:
    spec = EnvSpec.from_json(
        {
            "name": "tiny",
            "action_space": {"type": "Discrete", "n": 3},
            "observation_space": {"type": "Discrete", "n": 2},
        }
    )
    assert spec.title == "tiny" and spec.action_set is None and spec.extras == ()
    assert not (spec.has_frame or spec.frame_is_observation or spec.supports_snapshots)
    assert (spec.options, spec.settings, spec.version) == ({}, {}, "")


def _without(key: str) -> dict[str, Any]:
    return {k: v for k, v in OLD_BLACKJACK.items() if k != key}


MALFORMED: list[tuple[Any, str]] = [
    ([1, 2], "a spec should be a JSON object, got list [1, 2]"),
    ("{}", "a spec should be a JSON object, got str '{}'"),
    (_without("env"), "the spec has no 'name' (or the older 'env'): a name expected (its keys: "),
    ({**OLD_BLACKJACK, "env": ""}, "the spec's 'env' should be a name, got str ''"),
    ({**OLD_BLACKJACK, "name": 3}, "the spec's 'name' should be a name, got int 3"),
    ({**OLD_BLACKJACK, "title": ["t"]}, "the spec's 'title' should be a string, got list ['t']"),
    (_without("action_space"), "the spec has no 'action_space': a space's JSON object"),
    (
        {**OLD_BLACKJACK, "action_space": "Discrete(2)"},
        "the spec's 'action_space' should be a space's JSON object "
        '({"type": "Discrete", ...}), got str \'Discrete(2)\'',
    ),
    (
        {**OLD_BLACKJACK, "observation_space": {"type": "Nope"}},
        "the spec's 'observation_space': not a space description: {'type': 'Nope'}",
    ),
    (
        {**OLD_BLACKJACK, "has_frame": "yes"},
        "the spec's 'has_frame' should be true or false, got str 'yes'",
    ),
    (
        {**OLD_BLACKJACK, "supports_snapshots": 1},
        "'supports_snapshots' should be true or false, got int 1",
    ),
    (
        {**OLD_BLACKJACK, "actions": "STICK HIT"},
        "the spec's 'actions' should be a list of actions "
        '({"id": 0, "name": "NOOP", "meaning": ...}), got str \'STICK HIT\'',
    ),
    (
        {**OLD_BLACKJACK, "actions": [{"id": 0, "name": "A"}, {"id": 5, "name": "B"}]},
        "the spec's 'actions' should be a list of actions "
        '({"id": 0, "name": "NOOP", "meaning": ...}): action ids must be consecutive',
    ),
    (
        {**OLD_BLACKJACK, "action_set": [{"name": "A"}]},
        "the spec's 'action_set' should be a list of actions",
    ),
    (
        {**OLD_BLACKJACK, "reset_options": []},
        "the spec's 'reset_options' should be a JSON object, got list []",
    ),
    (
        {**OLD_BLACKJACK, "config": "id=Blackjack-v1"},
        "the spec's 'config' should be a JSON object, got str",
    ),
    (
        {**OLD_BLACKJACK, "extras": "ram"},
        "the spec's 'extras' should be a list of names, got str 'ram'",
    ),
    (
        {**OLD_BLACKJACK, "extras": ["ram", 2]},
        "the spec's 'extras' should be a list of names, got list ['ram', 2]",
    ),
    (
        {**OLD_BLACKJACK, "openenv_mcp": 0.1},
        "the spec's 'openenv_mcp' should be a string, got float 0.1",
    ),
]


@pytest.mark.parametrize(("data", "says"), MALFORMED, ids=[m for _, m in MALFORMED])
def test_a_malformed_spec_names_the_field_what_it_should_be_and_what_came(
    data: Any, says: str
) -> None:
    with pytest.raises(ArgumentError) as caught:
        EnvSpec.from_json(data)
    assert says in str(caught.value)


def test_a_long_value_is_quoted_short() -> None:
    with pytest.raises(ArgumentError) as caught:
        EnvSpec.from_json({**OLD_BLACKJACK, "description": ["x" * 10_000]})
    assert len(str(caught.value)) < 200 and "chars)" in str(caught.value)


# -- the client, against a real server publishing an older or a broken spec -------------------


@pytest.fixture
def publishes(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Make the servers built next publish ``form(spec_json)`` as their spec resource."""

    def publish(form: Any) -> None:
        today = EnvApp.spec_json
        monkeypatch.setattr(EnvApp, "spec_json", lambda self: form(today(self)))

    return publish


@pytest.mark.anyio
async def test_the_client_drives_a_server_that_publishes_the_older_spec(publishes: Any) -> None:
    publishes(as_older)
    server = memory_server("gymnasium", "--id", "Blackjack-v1")
    with anyio.fail_after(60):
        async with MCPEnvClient(server) as env:
            assert "actions" in json.loads(
                (
                    await env.session.transport.request(
                        "resources/read", {"uri": "openenv://gymnasium/spec"}
                    )
                )["contents"][0]["text"]
            )
            assert env.env_name == "gymnasium" and env.server_spec.name == "gymnasium"
            assert env.get_action_meanings() == ["STICK", "HIT"]
            assert env.server_spec.options == {} and env.server_spec.settings["profile"] == "full"
            obs, _ = await env.reset(seed=0)
            assert env.observation_space.contains(obs)
            _, _, terminated, truncated, _ = await env.step("STICK")
            assert terminated or truncated


@pytest.mark.anyio
async def test_a_server_with_a_broken_spec_is_refused_naming_the_field(publishes: Any) -> None:
    publishes(lambda published: {**published, "observation_space": "Text()"})
    server = memory_server("echo")
    with anyio.fail_after(60), pytest.raises(ArgumentError) as caught:
        async with MCPEnvClient(server):
            pass
    said = str(caught.value)
    assert "openenv://echo/spec is not a spec this client reads" in said
    assert "the spec's 'observation_space' should be a space's JSON object" in said
    assert "got str 'Text()'" in said

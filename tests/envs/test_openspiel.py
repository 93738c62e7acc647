"""OpenSpiel over MCP with the real ``pyspiel`` games and bots.

Unit tier: the contract (check_env) for tic_tac_toe, kuhn_poker, connect_four,
2048, leduc_poker and backgammon; opponents; seeded chance; action names and
refusals; game parameters; snapshots; the in-memory MCP server. Integration
tier: a worker process, a full seeded game over stdio (MCPEnvClient) and over
HTTP (the MCP Inspector CLI), and a fuzz of every tool.
"""

from __future__ import annotations

import json
import pickle
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from openenv_mcp.authoring.testing import check_env
from openenv_mcp.cli import app
from openenv_mcp.client import MCPEnvClient
from openenv_mcp.environment import contract_problems, parse_options
from openenv_mcp.errors import ArgumentError, InvalidAction, ResetNeeded, UnsupportedOption
from openenv_mcp.narration import narration_of
from openenv_mcp.registry import get_env_class
from openenv_mcp.server import ServerSettings, build_server
from openenv_mcp.spaces import NamedDiscrete
from openenv_mcp.spec import EnvSpec
from openenv_mcp_envs.openspiel import OpenSpielConfig, OpenSpielEnv, list_games, unsupported_games
from tests.server.test_fuzz import FUZZ, Target, fuzz_target, run_case
from tests.servers import CLI, ROOT, http_server
from tests.test_harness_examples import dev_env  # noqa: F401  (a shared fixture)
from tests.test_independent_clients import (  # node_tools: a shared fixture
    call,
    http_target,
    inspector,
    node_tools,  # noqa: F401
)

#: Opponent searches stay small in tests.
SIMS = 16


def make(game: str = "tic_tac_toe", **options: Any) -> OpenSpielEnv:
    return OpenSpielEnv(OpenSpielConfig(game=game, **options))


def play(env: OpenSpielEnv, seed: int, choose: Any = None) -> list[Any]:
    """A whole episode: the agent plays ``choose(info)`` (default: its first legal action)."""
    _, info = env.reset(seed=seed)
    trace: list[Any] = [info["text"], info["moves"]]
    for _ in range(500):
        action = choose(info) if choose else info["legal_actions"][0]
        result = env.step(env.parse_action(action))
        info = result.info
        trace += [info["text"], info["moves"], result.reward]
        if result.terminated or result.truncated:
            return trace
    raise AssertionError("the game did not end within 500 agent moves")


# -- the contract ------------------------------------------------------------------------------


def test_registered_as_openspiel() -> None:
    assert get_env_class("openspiel") is OpenSpielEnv


@pytest.mark.parametrize(
    ("game", "options"),
    [
        ("tic_tac_toe", {}),
        ("kuhn_poker", {}),  # chance and imperfect information
        ("connect_four", {"opponent": "first_legal"}),
        ("2048", {}),  # one player, chance after every move
        ("leduc_poker", {"player": "random"}),
        ("backgammon", {}),  # dice, frames of the text
        ("go", {"game_params": "board_size=5"}),
        ("sheriff", {}),  # no observation tensor: the information-state tensor
        ("morpion_solitaire", {}),  # neither tensor: the text
        ("tic_tac_toe", {"observation": "text"}),
    ],
)
def test_check_env(game: str, options: dict[str, Any]) -> None:
    report = check_env(OpenSpielEnv, worker=False, game=game, **options)
    assert report.ok, report


@pytest.mark.integration
def test_check_env_with_a_worker_process() -> None:
    check_env(OpenSpielEnv, game="kuhn_poker", opponent="mcts", mcts_simulations=SIMS)


def test_spaces_and_observations() -> None:
    env = make("tic_tac_toe")
    assert env.action_space.n == 9 and env.observation_space.shape == (3, 3, 3)
    obs, info = env.reset(seed=0)
    assert obs.dtype == np.float32 and obs[0].sum() == 9  # every cell empty
    assert info["text"] == "...\n...\n..."
    assert info["legal_action_names"] == [f"x({r},{c})" for r in range(3) for c in range(3)]
    assert info["action_mask"] == [1] * 9 and info["player"] == 0
    # neither tensor: text; an information-state tensor where only that exists
    assert make("sheriff").observation_kind == "information_state_tensor"
    assert make("morpion_solitaire").observation_kind == "text"
    text = make("tic_tac_toe", observation="text")
    assert text.reset(seed=0)[0] == "...\n...\n..."
    with pytest.raises(ArgumentError, match="does not provide an information_state_tensor"):
        make("tic_tac_toe", observation="information_state_tensor")


# -- opponents -----------------------------------------------------------------------------------


def test_first_legal_opponent_takes_the_lowest_legal_action() -> None:
    env = make("tic_tac_toe", opponent="first_legal")
    env.reset(seed=0)
    result = env.step(env.parse_action(4))
    assert result.info["moves"][-1] == {"player": 1, "action": 0, "name": "o(0,0)"}


def test_random_opponent_is_seeded() -> None:
    env = make("connect_four")
    first = play(env, seed=7)
    assert play(make("connect_four"), seed=7) == first
    others = {str(play(env, seed=s)) for s in range(4)}
    assert len(others) > 1  # the seed changes the opponent's moves


def test_mcts_opponent_beats_a_naive_agent() -> None:
    outcomes = []
    for seed in range(3):
        env = make("tic_tac_toe", opponent="mcts", mcts_simulations=200, player=1)
        _, info = env.reset(seed=seed)
        while True:
            result = env.step(env.parse_action(info["legal_actions"][0]))
            info = result.info
            if result.terminated:
                outcomes.append(info["returns"])
                break
    assert all(returns[0] >= 0 for returns in outcomes), outcomes  # MCTS never loses
    assert any(returns[0] == 1 for returns in outcomes), outcomes


def test_mcts_opponent_is_seeded_in_imperfect_information_games() -> None:
    options = {"opponent": "mcts", "mcts_simulations": SIMS}
    assert play(make("leduc_poker", **options), 3) == play(make("leduc_poker", **options), 3)


def test_mcts_is_refused_where_it_cannot_play() -> None:
    with pytest.raises(ArgumentError, match="resample the hidden information"):
        make("liars_dice", opponent="mcts")
    with pytest.raises(ArgumentError, match=r"opponent.*'random', 'first_legal' or 'mcts'"):
        build_server("openspiel", opponent="alphazero")


def test_agent_seat() -> None:
    env = make("tic_tac_toe", player=1, opponent="first_legal")
    _, info = env.reset(seed=0)
    assert info["player"] == 1 and info["text"] == "x..\n...\n..."  # the opponent opened
    assert info["legal_action_names"][0] == "o(0,1)"
    seats = {make("kuhn_poker", player="random").reset(seed=s)[1]["player"] for s in range(8)}
    assert seats == {0, 1}
    assert env.reset(seed=0, options={"player": 0})[1]["player"] == 0
    with pytest.raises(UnsupportedOption, match=r"option 'player'.* less than or equal to 1"):
        env.reset(options=parse_options(env, {"player": 2}))
    with pytest.raises(UnsupportedOption, match="Did you mean 'player'"):
        parse_options(env, {"players": 1})
    with pytest.raises(ArgumentError, match="choose 0-1"):
        make("tic_tac_toe", player=2)


def test_one_player_game_2048() -> None:
    env = make("2048")
    _, info = env.reset(seed=1)
    assert set(info["legal_action_names"]) <= {"Up", "Right", "Down", "Left"}
    total = 0.0
    for _ in range(40):
        result = env.step(env.parse_action(info["legal_actions"][0]))
        info = result.info
        assert result.reward >= 0 and result.reward % 2 == 0  # the merged tiles' sum
        assert [m["player"] for m in info["moves"]] in ([0, -1], [0])  # a new tile each move
        total += result.reward
        if result.terminated:
            break
    assert total == info["returns"][0] and total > 0


# -- chance, seeds and snapshots -----------------------------------------------------------------


def test_chance_is_seeded() -> None:
    first = play(make("backgammon"), seed=11)
    assert play(make("backgammon"), seed=11) == first
    rolls = [m["name"] for m in first[1] + first[3] if m["player"] == -1]
    assert rolls and all("roll" in r for r in rolls)
    assert play(make("backgammon"), seed=12)[:4] != first[:4]
    deals = {make("kuhn_poker").reset(seed=s)[1]["text"] for s in range(10)}
    assert deals == {"0", "1", "2"}  # every card is dealt to the agent for some seed


def test_snapshots_restore_state_and_generators() -> None:
    env = make("backgammon", opponent="random")
    _, info = env.reset(seed=5)
    for _ in range(3):
        info = env.step(env.parse_action(info["legal_actions"][0])).info
    saved = pickle.loads(pickle.dumps(env.snapshot()))
    tail = [env.step(env.parse_action(a)).info["moves"] for a in [env.legal()[0][0]]]
    other = make("backgammon", opponent="random")
    other.restore(saved)
    assert [other.step(other.parse_action(a)).info["moves"] for a in [other.legal()[0][0]]] == tail
    with pytest.raises(UnsupportedOption, match="snapshot is of"):
        make("kuhn_poker").restore(saved)


def test_an_unseeded_reset_continues_every_stream() -> None:
    """reset(seed=None) goes on with the env's own generators (Gymnasium's meaning): chance,
    the opponents and a random seat move on from the last seeded reset, not from fresh
    entropy."""
    a, b = make("kuhn_poker", player="random"), make("kuhn_poker", player="random")
    a.reset(seed=4)
    b.reset(seed=4)
    episodes = []
    for _ in range(8):
        (_, first), (_, second) = a.reset(), b.reset()
        assert (first["player"], first["text"]) == (second["player"], second["text"])
        episodes.append((first["player"], first["text"]))
    assert len(set(episodes)) > 1  # the streams move on between resets
    # a snapshot carries them too: an unseeded reset after a restore replays
    saved = a.snapshot()
    after = a.reset()[1]
    b.restore(saved)
    assert b.reset()[1] == after


def test_imperfect_information_stays_hidden() -> None:
    env = make("kuhn_poker")
    _, info = env.reset(seed=0)
    assert all(m["name"] == "(hidden)" for m in info["moves"])  # both deals
    assert len(info["text"]) == 1  # the agent's own card only
    result = env.step(env.parse_action("Bet"))
    while not result.terminated:
        result = env.step(env.parse_action("Bet"))
    assert "final_state" in result.info  # the whole deal, once it is over
    assert sum(result.info["returns"]) == 0 and result.reward == result.info["returns"][0]


# -- actions -----------------------------------------------------------------------------------


def test_actions_by_id_and_by_name() -> None:
    env = make("tic_tac_toe", opponent="first_legal")
    assert isinstance(env.action_space, NamedDiscrete) and env.action_space.n == 9
    assert not contract_problems(env)
    schema = EnvSpec.of(env).action_schema
    assert schema["anyOf"][0] == {"type": "integer", "minimum": 0, "maximum": 8}
    assert schema["anyOf"][1]["type"] == "string"
    assert schema["description"].startswith("A legal action of the current turn, by id")
    narration = narration_of(env)
    assert narration.action_name(4) is None  # no state before the first reset
    env.reset(seed=0)
    assert narration.action_name(4) == "x(1,1)"
    assert env.parse_action("x(1,1)") == 4 and env.parse_action(" X(1,1) ") == 4
    assert env.parse_action("4") == 4 and env.parse_action(np.int64(4)) == 4
    bg = make("backgammon")
    _, info = bg.reset(seed=0)
    action, name = info["legal_actions"][0], info["legal_action_names"][0]
    assert bg.parse_action(name) == action
    assert bg.parse_action(name.split(" - ", 1)[1]) == action  # the move without its id


def test_illegal_and_unknown_actions_are_refused_with_the_legal_list() -> None:
    env = make("tic_tac_toe", opponent="first_legal")
    env.reset(seed=0)
    env.step(env.parse_action(4))  # x centre, o corner (0, 0)
    for bad, message in [
        (4, "action 4 is not legal now"),
        ("o(0,0)", "not legal now"),
        ("x(1,3)", re.escape("Did you mean 'x(1,2)'")),
        (9, "action 9 is not legal now"),
        (-1, "action -1"),
        (True, "boolean"),
        (1.5, "expected a legal action id"),
        ("9" * 5000, "not legal now"),
    ]:
        with pytest.raises(InvalidAction, match=message) as caught:
            env.parse_action(bad)
        assert "1=x(0,1)" in str(caught.value) and len(str(caught.value)) < 1000
    go = make("go", game_params={"board_size": 9})
    go.reset(seed=0)
    with pytest.raises(InvalidAction, match="and 22 more") as caught:
        go.parse_action("B z9")
    assert len(str(caught.value)) < 1200


# -- game parameters and game names ------------------------------------------------------------


def test_game_params() -> None:
    assert make("go", game_params="board_size=9,komi=6.5").observation_space.shape == (4, 9, 9)
    assert make("go(board_size=7)").observation_space.shape == (4, 7, 7)
    assert make("hex", game_params='{"board_size": 5}').action_space.n == 25
    env = make("turn_based_simultaneous_game(game=goofspiel(num_cards=4))")
    assert env.action_space.n == 4
    play(env, seed=0)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"game": "tic_tac_to"}, "Did you mean 'tic_tac_toe'"),
        ({"game": "go", "game_params": "board_sise=9"}, "Did you mean 'board_size'"),
        ({"game": "go", "game_params": "board_size=big"}, "must be an integer"),
        ({"game": "go", "game_params": "komi=[1]"}, "must be a number"),
        ({"game": "go", "game_params": "board_size=0"}, "OpenSpiel refused"),
        ({"game": "go", "game_params": "nonsense"}, "key=value pairs"),
        ({"game": "go", "game_params": '{"board_size": '}, "not valid JSON"),
        (
            {"game": "matrix_rps", "opponent": "mcts"},
            "simultaneous-move game.*turn_based_simultaneous_game",
        ),
        ({"game": "mfg_garnet"}, "mean-field"),
        ({"game": "negotiation"}, "SAMPLED_STOCHASTIC"),
        ({"game": "tic_tac_toe", "mcts_simulations": 0}, "mcts_simulations"),
    ],
)
def test_bad_options_fail_clearly(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ArgumentError, match=message):
        build_server("openspiel", **options)


def test_metadata_and_describe_list_the_games() -> None:
    games = list_games()
    assert {"tic_tac_toe", "connect_four", "kuhn_poker", "leduc_poker", "backgammon"} <= set(games)
    assert {"hex", "go", "2048", "chess", "goofspiel", "matrix_rps"} <= set(games)
    assert "mean-field" in unsupported_games()["mfg_garnet"]
    meta = make("go", game_params="board_size=9").metadata()
    assert meta["games"] == games and meta["parameters"]["board_size"] == 9
    result = CliRunner().invoke(app, ["describe", "openspiel", "--game", "kuhn_poker"])
    assert result.exit_code == 0, result.output
    assert "choose with --game" in result.output and "leduc_poker" in result.output


def test_instructions_name_the_rules_seat_and_opponent() -> None:
    text = narration_of(make("kuhn_poker", opponent="mcts", mcts_simulations=SIMS)).instructions()
    assert "Kuhn poker" in text and "you are player 0" in text and "tree search" in text
    assert "imperfect" in text and "sampled by the environment" in text
    assert "legal_actions" in narration_of(make("2048")).instructions()


@pytest.mark.integration
@pytest.mark.parametrize("game", list_games())
def test_every_served_game_plays_by_name(game: str) -> None:
    env = make(game)
    obs, info = env.reset(seed=0)
    assert env.observation_space.contains(obs) and narration_of(env).observation_text(obs)
    for i in range(12):
        result = env.step(
            env.parse_action(info["legal_action_names"][i % len(info["legal_actions"])])
        )
        info = result.info
        assert env.observation_space.contains(result.observation)
        assert sum(info["action_mask"]) == len(info["legal_actions"])
        if result.terminated:
            break
    snapshot = pickle.loads(pickle.dumps(env.snapshot()))
    again = make(game)
    again.restore(snapshot)
    assert again.state() == env.state()


# -- over MCP ------------------------------------------------------------------------------------


def test_agent_profile_tools_and_summary() -> None:
    server = build_server("openspiel", settings=ServerSettings(profile="agent"), game="tic_tac_toe")

    async def run() -> tuple[set[str], str, str]:
        async with Client(server) as client:
            names = {t.name for t in await client.list_tools()}
            reset = await client.call_tool("reset", {"seed": 0})
            step = await client.call_tool("step", {"action": "x(1,1)"})
            return names, reset.content[0].text, step.content[0].text

    names, reset, step = anyio.run(run)
    assert names == {"reset", "step", "state", "legal_actions"}
    assert "0=x(0,0)" in reset and "9 legal actions" in reset
    assert "Player 1 played o(" in step


def test_a_seeded_game_in_memory_through_mcpenvclient() -> None:
    server = build_server("openspiel", game="tic_tac_toe", opponent="first_legal")
    with MCPEnvClient(server).sync() as client:
        obs, info = client.reset(seed=0)
        assert obs.shape == (3, 3, 3) and list(info["action_mask"]) == [1] * 9
        legal = client.call("legal_actions")
        assert legal["actions"][4] == {"id": 4, "name": "x(1,1)"}
        assert legal == {"actions": [{"id": i, "name": f"x({i // 3},{i % 3})"} for i in range(9)]}
        for action in ["x(0,1)", 4, "x(2,1)"]:  # o answers (0,0), (0,2), then loses
            obs, reward, terminated, _, info = client.step(action)
            if action == "x(0,1)":  # the legal actions of this turn only, named by the state
                listed = client.call("legal_actions")["actions"]
                assert [a["id"] for a in listed] == [2, 3, 4, 5, 6, 7, 8]
                assert listed[0] == {"id": 2, "name": "x(0,2)"}
        assert terminated and reward == 1.0 and info["returns"] == [1.0, -1.0]
        with pytest.raises(ResetNeeded):
            client.step(0)
        client.reset(seed=0)
        with pytest.raises(InvalidAction, match="Legal: 0=x"):
            client.step("x(9,9)")


def _full_game(client: Any) -> list[Any]:
    _, info = client.reset(seed=3)
    trace = [info["text"]]
    while True:
        _, reward, terminated, truncated, info = client.step(info["legal_action_names"][0])
        trace += [info["text"], reward]
        if terminated or truncated:
            return trace


@pytest.mark.integration
def test_a_seeded_game_over_stdio_through_mcpenvclient() -> None:
    command = [*CLI, "serve", "openspiel", "--stdio", "--game", "tic_tac_toe"]
    with MCPEnvClient(command).sync() as client:
        over_stdio = _full_game(client)
    with MCPEnvClient(build_server("openspiel", game="tic_tac_toe")).sync() as client:
        assert _full_game(client) == over_stdio  # the same seed, the same game


@pytest.mark.integration
def test_a_seeded_game_through_the_inspector_cli_over_http(
    node_tools: dict[str, str],  # noqa: F811
) -> None:
    with http_server("openspiel", "--game", "tic_tac_toe", "--opponent", "first_legal") as url:
        target = http_target(url)
        names = {t["name"] for t in inspector(node_tools, target, "tools/list")["tools"]}
        assert {"reset", "step", "state", "legal_actions"} <= names
        reset = inspector(node_tools, target, "tools/call", *call("reset", {"seed": 0}))
        eid = reset["structuredContent"]["episode_id"]
        legal = inspector(
            node_tools, target, "tools/call", *call("legal_actions", {"episode_id": eid})
        )
        assert legal["structuredContent"]["actions"][1]["name"] == "x(0,1)"
        bad = inspector(
            node_tools,
            target,
            "tools/call",
            *call("step", {"episode_id": eid, "action": "x(3,3)"}),
            ok=False,
        )
        assert bad["content"][0]["text"].startswith("InvalidAction:")
        for action in ["x(0,1)", 4, "x(2,1)"]:
            step = inspector(
                node_tools,
                target,
                "tools/call",
                *call("step", {"episode_id": eid, "action": action}),
            )
        done = step["structuredContent"]
        assert done["terminated"] and done["reward"] == 1 and done["step"] == 3
        assert "You won" in step["content"][0]["text"]


@pytest.mark.integration
def test_the_harness_config_serves_openspiel(
    tmp_path: Path,
    dev_env: dict[str, str],  # noqa: F811
) -> None:
    """harness_examples/openspiel.mcp.json's exact command, filled in as a user would; ./dev
    runs as the other harness configs' tests run it (dev_env: no install)."""
    text = (ROOT / "harness_examples" / "openspiel.mcp.json").read_text()
    assert "/ABSOLUTE/PATH/TO/openenv-mcp" in text
    server = json.loads(text.replace("/ABSOLUTE/PATH/TO/openenv-mcp", str(ROOT)))
    server = server["mcpServers"]["openspiel"]
    assert server["args"][:4] == ["run", "serve", "openspiel", "--agent"]
    transport = StdioTransport(
        command=server["command"],
        args=server["args"],
        env={**dev_env, **server.get("env", {})},
        cwd=str(tmp_path),  # a harness starts it from anywhere: the path is absolute
    )

    async def run() -> None:
        with anyio.fail_after(120):
            async with Client(transport, timeout=60) as client:
                names = {t.name for t in await client.list_tools()}
                assert names == {"reset", "step", "state", "legal_actions"}
                reset = await client.call_tool("reset", {"seed": 0})
                assert reset.structured_content is None  # the agent profile: text only
                assert "Connect Four" in reset.content[0].text
                step = await client.call_tool("step", {"action": "x3"})
                assert "Player 1 played o" in step.content[0].text

    anyio.run(run)


# -- fuzz ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def kuhn() -> Iterator[Target]:
    actions = (
        st.integers(-2, 4)
        | st.sampled_from(["Pass", "bet", " BET ", "0", "1", "fold", "Raise", "1.0"])
        | st.text(max_size=12)
    )
    with fuzz_target("openspiel", actions, "Pass", ["player"], game="kuhn_poker") as target:
        yield target


@pytest.mark.integration
@given(data=st.data())
@settings(FUZZ, max_examples=150)
def test_fuzz_openspiel(kuhn: Target, data: st.DataObject) -> None:
    run_case(kuhn, data)

"""PettingZoo over MCP: ``as_pettingzoo()`` and ``as_pettingzoo_parallel()`` pass
PettingZoo's own API tests against servers of seats (``serve ENV --seats all``), games
played through them are zero-sum, and one seat driven from another client (``seat``)
plays against the rest."""

from __future__ import annotations

import asyncio
import re
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from pettingzoo import AECEnv, ParallelEnv
from pettingzoo.test import api_test, parallel_api_test

from openenv_mcp.client import (
    MCPEnvClient,
    MCPPettingZooEnv,
    MCPPettingZooParallelEnv,
    Seat,
)
from openenv_mcp.client._seat import take_seats
from openenv_mcp.errors import ArgumentError, InvalidAction, ResetNeeded
from openenv_mcp.server import ServerSettings, build_server
from tests.servers import serve_target

#: PettingZoo's advice that is no failure, and what each game earns of it: the test's
#: reset passes an option of no env's (the faces know the agents from the server's spec).
ALWAYS = (r"reset options not \w+'s left out: options \(",)
UNBOUNDED = (r"observation space value is infinity", r"observation space value is -infinity")
#: An empty tic-tac-toe board's planes are all 0.
EMPTY_BOARD = (r"Observation numpy array is all zeros",)


def seats_server(env: str, **config: Any) -> Any:
    """A server of ``env`` in memory, every seat a client's."""
    return build_server(env, settings=ServerSettings(seats="all"), **config)


def tic_tac_toe() -> Any:
    return seats_server("openspiel", game="tic_tac_toe")


def goofspiel() -> Any:
    return seats_server("openspiel", game="goofspiel", game_params={"num_cards": 4})


@pytest.fixture
def advice() -> Iterator[Callable[..., None]]:
    """Record every warning; the test names what PettingZoo may advise (the rest fail)."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")

        def only(*allowed: str) -> None:
            patterns = [re.compile(p) for p in (*ALWAYS, *allowed)]
            unexpected = {
                str(w.message) for w in seen if not any(p.search(str(w.message)) for p in patterns)
            }
            assert not unexpected, f"unexpected warnings: {sorted(unexpected)}"

        yield only


# -- PettingZoo's API tests ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "config", "allowed"),
    [
        pytest.param("openspiel", {"game": "tic_tac_toe"}, UNBOUNDED, id="openspiel-tic_tac_toe"),
        pytest.param("pettingzoo", {"id": "tictactoe_v3"}, EMPTY_BOARD, id="pettingzoo-tictactoe"),
        # Simultaneous moves through AEC: each agent of the node in turn.
        pytest.param(
            "openspiel",
            {"game": "goofspiel", "game_params": {"num_cards": 4}},
            UNBOUNDED,
            id="openspiel-goofspiel",
        ),
    ],
)
def test_api_test_passes(
    env: str, config: dict[str, Any], allowed: tuple[str, ...], advice: Callable[..., None]
) -> None:
    aec = MCPEnvClient(seats_server(env, **config)).as_pettingzoo()
    try:
        assert isinstance(aec, AECEnv)
        api_test(aec, num_cycles=60)
    finally:
        aec.close()
    advice(*allowed)


def test_api_test_passes_for_chess(advice: Callable[..., None]) -> None:
    aec = MCPEnvClient(seats_server("chess", engine="builtin", depth=1)).as_pettingzoo()
    try:
        api_test(aec, num_cycles=60)
    finally:
        aec.close()


@pytest.mark.integration
def test_api_test_passes_over_stdio(advice: Callable[..., None]) -> None:
    with serve_target("stdio", "openspiel", "--game", "tic_tac_toe", "--seats", "all") as cmd:
        aec = MCPEnvClient(cmd).as_pettingzoo()
        try:
            api_test(aec, num_cycles=30)
        finally:
            aec.close()
    advice(*UNBOUNDED)


def test_parallel_api_test_passes_for_goofspiel(advice: Callable[..., None]) -> None:
    par = MCPEnvClient(goofspiel()).as_pettingzoo_parallel(mask_in_observation=True)
    try:
        assert isinstance(par, ParallelEnv) and isinstance(par, MCPPettingZooParallelEnv)
        parallel_api_test(par, num_cycles=30)
    finally:
        par.close()
    advice()


# -- games played through the faces -------------------------------------------------------


def play_aec(env: MCPPettingZooEnv, seed: int) -> dict[str, float]:
    """One game of seeded random legal moves; every agent's return."""
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    returns = dict.fromkeys(env.possible_agents, 0.0)
    for agent in env.agent_iter():
        _, reward, terminated, truncated, info = env.last()
        returns[agent] += reward
        if terminated or truncated:
            env.step(None)
            continue
        mask = info["action_mask"]
        assert isinstance(mask, np.ndarray) and mask.dtype == np.int8 and mask.any()
        env.step(int(rng.choice(np.flatnonzero(mask))))
    return returns


def test_self_play_is_zero_sum_and_agents_leave_at_the_end() -> None:
    env = MCPEnvClient(tic_tac_toe()).as_pettingzoo()
    try:
        outcomes = set()
        for seed in range(6):
            returns = play_aec(env, seed)
            assert sum(returns.values()) == 0.0, returns
            assert set(returns) == {"player_0", "player_1"}
            outcomes.add(returns["player_0"])
            assert env.agents == []
            # Every seat was told its end: its episode is over on the server.
            assert all(seat.ended for seat in env.seats.values())
        assert outcomes <= {-1.0, 0.0, 1.0} and len(outcomes) > 1
    finally:
        env.close()


def test_restarts_keep_the_seats_and_a_seed_replays_the_game() -> None:
    env = MCPEnvClient(goofspiel()).as_pettingzoo()
    try:
        first = play_aec(env, seed=7)
        handles = {a: s.handle for a, s in env.seats.items()}
        again = play_aec(env, seed=7)
        assert {a: s.handle for a, s in env.seats.items()} == handles
        assert first == again and sum(first.values()) == 0.0
    finally:
        env.close()


def test_parallel_self_play_is_zero_sum() -> None:
    env = MCPEnvClient(goofspiel()).as_pettingzoo_parallel()
    try:
        for seed in range(3):
            obs, infos = env.reset(seed=seed)
            assert set(obs) == set(infos) == {"player_0", "player_1"}
            returns = dict.fromkeys(env.possible_agents, 0.0)
            rng = np.random.default_rng(seed)
            while env.agents:
                actions = {
                    a: int(rng.choice(np.flatnonzero(infos[a]["action_mask"]))) for a in env.agents
                }
                obs, rewards, terminations, truncations, infos = env.step(actions)
                for agent, reward in rewards.items():
                    returns[agent] += reward
                assert all(env.observation_space(a).contains(o) for a, o in obs.items())
            assert sum(returns.values()) == 0.0 and set(terminations) == set(returns)
            assert all(terminations.values()) and not any(truncations.values())
            with pytest.raises(ResetNeeded, match="call reset"):
                env.step({})
    finally:
        env.close()


def test_observe_and_infos_follow_the_game() -> None:
    env = MCPEnvClient(tic_tac_toe()).as_pettingzoo(render_mode="ansi")
    try:
        env.reset(seed=0)
        assert env.agent_selection == "player_0"
        assert env.infos["player_0"]["action_mask"].tolist() == [1] * 9
        assert env.infos["player_1"]["action_mask"].tolist() == [0] * 9
        env.step(4)
        assert env.agent_selection == "player_1"
        mask = env.infos["player_1"]["action_mask"]
        assert mask.dtype == np.int8 and mask[4] == 0 and mask.sum() == 8
        # Every agent observes the board the move made, whoever's turn it is.
        for agent in env.agents:
            assert env.observation_space(agent).contains(env.observe(agent))
            assert np.array_equal(env.observe(agent), env.observe("player_1"))
        assert "x" in env.render()
        assert env.observation_space("player_0") is env.observation_space("player_1")
    finally:
        env.close()


def test_mask_in_observation_is_a_classic_games_dict() -> None:
    env = MCPEnvClient(tic_tac_toe()).as_pettingzoo(mask_in_observation=True)
    try:
        env.reset(seed=0)
        obs, *_ = env.last()
        assert set(obs) == {"observation", "action_mask"}
        assert env.observation_space("player_0").contains(obs)
        assert obs["action_mask"].tolist() == [1] * 9
    finally:
        env.close()


# -- refusals -----------------------------------------------------------------------------


def test_refusals_name_what_was_expected() -> None:
    with pytest.raises(ArgumentError, match="--seats all"):
        MCPEnvClient(build_server("openspiel", game="tic_tac_toe")).as_pettingzoo()
    with pytest.raises(ArgumentError, match="render modes: ansi"):
        MCPEnvClient(tic_tac_toe()).as_pettingzoo(render_mode="human")
    env = MCPEnvClient(tic_tac_toe()).as_pettingzoo()
    try:
        assert env.possible_agents == ["player_0", "player_1"]  # the spec's, before reset
        with pytest.raises(ResetNeeded, match="reset"):
            env.step(0)
        env.reset(seed=1)
        with pytest.raises(ArgumentError, match="only for an agent whose game is over"):
            env.step(None)
        with pytest.raises(InvalidAction, match="Legal: 0=x"):
            env.step("nonsense")
        env.step(0)
        with pytest.raises(InvalidAction, match="not legal"):
            env.step(0)  # taken
        with pytest.raises(ArgumentError, match=r"not an agent of this game.*player_0"):
            env.observe("player_9")
    finally:
        env.close()
    par = MCPEnvClient(goofspiel()).as_pettingzoo_parallel()
    try:
        par.reset(seed=0)
        with pytest.raises(ArgumentError, match="no action for player_1"):
            par.step({"player_0": 0})
    finally:
        par.close()


# -- one seat from another client ---------------------------------------------------------


async def play_seat(seat: Seat, seed: int) -> float:
    """Random legal moves until the seat's game ends, each answered at its next turn;
    the seat's return."""
    rng = np.random.default_rng(seed)
    total = 0.0
    while True:
        _, reward, terminated, truncated, info = await seat.last()
        total += reward
        if terminated or truncated:
            return total
        await seat.step(int(rng.choice(info["legal_actions"])))


@pytest.mark.anyio
async def test_a_seat_from_another_client_plays_against_the_rest() -> None:
    server = tic_tac_toe()
    async with MCPEnvClient(server) as host, MCPEnvClient(server) as guest:
        # The host takes player_0 (a reset's default: the first seat); player_1 stays
        # open, and the guest joins the game by its handle.
        seats = await take_seats(host.session, ["player_0"], seed=3)
        mine = seats["player_0"]
        assert mine.table_id is not None and mine.info["seat"] == "player_0"
        theirs = await guest.seat(table_id=mine.table_id, join=True)
        assert theirs.name == "player_1" and theirs.handle != mine.handle
        returns = await asyncio.gather(play_seat(mine, 1), play_seat(theirs, 2))
        assert sum(returns) == 0.0
        # A handle reaches its seat from any client: the game is over for both.
        again = await guest.seat(mine.handle)
        assert again.name == "player_0" and (await again.last())[2]
        with pytest.raises(ArgumentError, match="join=True"):
            await guest.seat()
        with pytest.raises(ArgumentError, match="not both"):
            await guest.seat(mine.handle, join=True)


def test_sync_seats_take_turns() -> None:
    client = MCPEnvClient(tic_tac_toe()).sync()
    try:
        client.reset(seed=5)  # the client's episode takes the first seat; the other is open
        first = client.seat(client.episode_id)
        second = client.seat(join=True)
        assert (first.name, second.name) == ("player_0", "player_1")
        assert first.table_id == second.table_id
        rng = np.random.default_rng(0)
        totals = {"player_0": 0.0, "player_1": 0.0}
        seats = [first, second]
        turn = 0
        while True:
            seat = seats[turn % 2]
            _, reward, terminated, truncated, info = seat.last()
            totals[str(seat.name)] += reward
            if terminated or truncated:
                other = seats[(turn + 1) % 2]
                totals[str(other.name)] += other.last()[1]
                break
            seat.step(int(rng.choice(info["legal_actions"])), wait=False)
            turn += 1
        assert sum(totals.values()) == 0.0
    finally:
        client.close()


@pytest.mark.anyio
async def test_grpo_groups_per_seat_start_from_one_snapshot() -> None:
    """A seat's snapshot holds its whole game: every member of a group starts a new game
    (new handles) at that position, and the same moves end each the same way."""
    async with MCPEnvClient(tic_tac_toe()) as client:
        seats = await client.take_seats(seed=1)
        await seats["player_0"].step(4, wait=False)
        await seats["player_1"].step(0, wait=False)
        saved = await seats["player_0"].snapshot()
        ends = []
        for _ in range(3):
            group = await client.take_seats(from_snapshot=saved)
            assert group["player_0"].handle not in {s.handle for s in seats.values()}
            assert group["player_0"].info["your_turn"]
            for name, action in (("player_0", 2), ("player_1", 1), ("player_0", 6)):
                last = await group[name].step(action, wait=False)
            lost = await group["player_1"].step(0, wait=False)
            ends.append((last[1], last[2], lost[1], lost[2]))
        assert ends == [(1.0, True, -1.0, True)] * 3


def test_sync_grpo_groups_per_seat() -> None:
    client = MCPEnvClient(tic_tac_toe()).sync()
    try:
        seats = client.take_seats(seed=2)
        seats["player_0"].step(4, wait=False)
        saved = seats["player_0"].snapshot()
        views = [client.take_seats(from_snapshot=saved)["player_1"].last()[4] for _ in range(2)]
        assert views[0]["text"] == views[1]["text"] and views[0]["your_turn"]
    finally:
        client.close()

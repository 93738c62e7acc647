"""Seats as a stranger meets them (``serve ENV --seats``), in memory over real MCP.

A real OpenSpiel game behind a real FastMCP server, reached through fastmcp's client:
handles that are not the seat's never move a seat, out-of-turn steps wait and then
answer ``NotYourTurn`` naming whose turn it is, illegal actions name the legal ones,
bad arguments are refused by name and the server carries on; a closed seat leaves its
partner a clear answer; ``join`` takes the oldest open game; a built-in opponent fills
the seats no client takes; a simultaneous game commits only once every seat acted.
Every finished game's returns sum to zero.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from fastmcp import Client
from typer.testing import CliRunner

from openenv_mcp.cli import app
from openenv_mcp.errors import ArgumentError
from openenv_mcp.server import ServerSettings, build_server

pytestmark = pytest.mark.anyio

#: Short enough for a test to wait out; a seat's call keeps 5 s back from its timeout.
TURN = 1.0
SETTINGS = {"seats": "all", "turn_timeout": TURN, "call_timeout": TURN + 10}
GOOFSPIEL = {"game": "goofspiel", "game_params": {"num_cards": 4}}
#: A tool error's text: ``ErrorName: message``.
ERROR = re.compile(r"^(?P<name>[A-Z][A-Za-z]*): (?P<message>.+)$", re.S)


def server(seats: str = "all", **options: Any) -> Any:
    options.setdefault("game", "tic_tac_toe")
    return build_server(
        "openspiel", settings=ServerSettings(**{**SETTINGS, "seats": seats}), **options
    )


async def call(client: Client, tool: str, **args: Any) -> dict[str, Any]:
    """A call that must succeed: its structured answer."""
    result = await client.call_tool(tool, args, raise_on_error=False)
    assert not result.is_error, (tool, args, result.content)
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def refused(client: Client, tool: str, **args: Any) -> tuple[str, str]:
    """A call that must fail: its error's name and message."""
    result = await client.call_tool(tool, args, raise_on_error=False)
    assert result.is_error, (tool, args, result.structured_content)
    text = result.content[0].text  # type: ignore[union-attr]
    assert "Traceback" not in text and 'File "' not in text, text
    found = ERROR.match(text)
    assert found, text
    return found["name"], found["message"]


async def view(client: Client, seat: str) -> dict[str, Any]:
    return await call(client, "state", seat=seat)


def legal(answer: dict[str, Any]) -> list[int]:
    return list(answer["info"]["legal_actions"])


@pytest.fixture
async def client() -> AsyncIterator[Client]:
    async with Client(server()) as c:
        yield c


async def table(client: Client, seed: int = 0, **args: Any) -> dict[str, Any]:
    """A new tic-tac-toe game with both seats: reset's answer (``seats``: the handles)."""
    return await call(client, "reset", seed=seed, seats="all", **args)


# -- handles that are not the seat's -------------------------------------------------------


async def test_a_wrong_handle_never_moves_a_seat(client: Client) -> None:
    mine = await table(client, seed=1)
    p0, p1 = mine["seats"]["player_0"], mine["seats"]["player_1"]
    other = await table(client, seed=2)
    o1 = other["seats"]["player_1"]
    before = {h: await view(client, h) for h in (p0, p1, *other["seats"].values())}

    # Another table's seat is that table's: out of its turn there, it moves nothing.
    name, message = await refused(client, "step", seat=o1, action=4)
    assert name == "NotYourTurn"
    assert "it is not player_1's turn: player_0 to move" in message
    # A made-up handle and the table's own handle reach no seat.
    for handle in ("ep_madeUpHandle000000000", mine["table_id"], other["table_id"], ""):
        name, message = await refused(client, "step", seat=handle, action=4)
        assert name in {"UnknownEpisode", "ArgumentError", "ValidationError"}, (name, message)
    # seat and episode_id must agree.
    name, message = await refused(client, "step", seat=p0, episode_id=p1, action=4)
    assert name == "ArgumentError" and "not two different handles" in message

    for handle, was in before.items():
        now = await view(client, handle)
        assert now["step"] == was["step"] == 0
        assert now["info"]["text"] == was["info"]["text"]
        assert now["info"]["to_move"] == ["player_0"]


async def test_a_table_id_restarts_nothing(client: Client) -> None:
    mine = await table(client, seed=1)
    await call(client, "step", seat=mine["seats"]["player_0"], action=4, wait=False)
    name, message = await refused(client, "reset", episode_id=mine["table_id"], seats="all")
    assert name == "ArgumentError"
    assert "table_id" in message and "join" in message
    assert (await view(client, mine["seats"]["player_1"]))["info"]["moves"][0]["action"] == 4


# -- turns ---------------------------------------------------------------------------------


async def test_out_of_turn_waits_then_names_whose_turn(client: Client) -> None:
    mine = await table(client)
    p0, p1 = mine["seats"]["player_0"], mine["seats"]["player_1"]
    name, message = await refused(client, "step", seat=p1, action=4)
    assert name == "NotYourTurn"
    assert message.startswith("it is not player_1's turn: player_0 to move")
    assert "nothing was applied" in message
    seat0, seat1 = await view(client, p0), await view(client, p1)
    assert seat0["step"] == seat1["step"] == 0
    assert seat0["info"]["your_turn"] and not seat1["info"]["your_turn"]
    assert seat0["info"]["text"] == mine["info"]["text"]
    # player_0 then plays as if nothing happened; player_1's (refused) 4 is still free.
    answer = await call(client, "step", seat=p0, action=4, wait=False)
    assert answer["step"] == 1 and answer["info"]["to_move"] == ["player_1"]
    assert 4 not in legal(await view(client, p1))
    assert legal(await view(client, p1)) == [0, 1, 2, 3, 5, 6, 7, 8]


async def test_an_illegal_action_names_the_legal_ones(client: Client) -> None:
    mine = await table(client)
    p0, p1 = mine["seats"]["player_0"], mine["seats"]["player_1"]
    await call(client, "step", seat=p0, action=4, wait=False)
    before = await view(client, p1)
    for action in (4, 9, -1, "x(1,1)", "nonsense"):
        name, message = await refused(client, "step", seat=p1, action=action)
        assert name == "InvalidAction", message
        assert "legal" in message.lower() and "o(0,0)" in message, message
    after = await view(client, p1)
    assert after["step"] == before["step"] == 0
    assert after["info"]["text"] == before["info"]["text"]
    assert after["info"]["your_turn"]
    # A legal name works.
    answer = await call(client, "step", seat=p1, action="o(0,0)", wait=False)
    assert answer["step"] == 1 and answer["info"]["moves"][-1]["name"] == "o(0,0)"


async def test_step_waits_for_the_other_seat(client: Client) -> None:
    """player_0's step (wait=True) answers once player_1, driven concurrently, has moved."""
    mine = await table(client)
    p0, p1 = mine["seats"]["player_0"], mine["seats"]["player_1"]
    answers: dict[str, dict[str, Any]] = {}

    async def zero() -> None:
        answers["player_0"] = await call(client, "step", seat=p0, action=4, wait=True)

    async def one() -> None:
        turn = await call(client, "state", seat=p1, wait=True)  # waits for player_0's move
        assert turn["info"]["your_turn"] and 4 not in legal(turn)
        answers["player_1"] = await call(client, "step", seat=p1, action=0, wait=False)

    async with anyio.create_task_group() as tg:
        tg.start_soon(zero)
        tg.start_soon(one)
    seen = answers["player_0"]["info"]
    assert seen["your_turn"] and seen["to_move"] == ["player_0"]
    assert [(m["agent"], m["action"]) for m in seen["moves"]] == [
        ("player_0", 4),
        ("player_1", 0),
    ]
    assert 0 not in seen["legal_actions"] and 4 not in seen["legal_actions"]
    assert answers["player_1"]["info"]["to_move"] == ["player_0"]


async def test_two_seats_play_to_the_end_concurrently(client: Client) -> None:
    mine = await table(client, seed=7)
    handles = mine["seats"]
    returns: dict[str, float] = {}

    async def play(agent: str) -> None:
        handle = handles[agent]
        answer = await call(client, "state", seat=handle, wait=True)
        total = answer["episode_return"]
        while not (answer["terminated"] or answer["truncated"]):
            answer = await call(client, "step", seat=handle, action=legal(answer)[0])
            total = answer["episode_return"]
        returns[agent] = total

    async with anyio.create_task_group() as tg:
        for agent in handles:
            tg.start_soon(play, agent)
    assert set(returns) == {"player_0", "player_1"}
    assert sum(returns.values()) == 0
    # Both played first legal: player_0 takes the top row.
    assert returns == {"player_0": 1.0, "player_1": -1.0}


# -- seats: claiming and joining -----------------------------------------------------------


async def test_bogus_seats_name_the_seats(client: Client) -> None:
    for seats in ("bogus", ["player_0", "nobody"], "player_0,,player_1"):
        name, message = await refused(client, "reset", seats=seats)
        assert name == "ArgumentError", message
        assert "player_0" in message and "player_1" in message, message
    with pytest.raises(ArgumentError, match="'bogus' is not a seat of this game; its seats are"):
        build_server(
            "openspiel",
            game="tic_tac_toe",
            settings=ServerSettings(**{**SETTINGS, "seats": "bogus"}),
        )


async def test_join_takes_the_oldest_open_game_and_refuses_a_full_one(client: Client) -> None:
    name, message = await refused(client, "join")
    assert name == "ArgumentError" and "no game has an open seat" in message
    first = await call(client, "reset", seed=1)  # default: player_0 only
    assert first["seat"] == "player_0" and first["open_seats"] == ["player_1"]
    second = await call(client, "reset", seed=2)
    full = await table(client, seed=3)

    joined = await call(client, "join")
    assert joined["table_id"] == first["table_id"] and joined["seats"].keys() == {"player_1"}
    assert joined["open_seats"] == []
    joined2 = await call(client, "join")
    assert joined2["table_id"] == second["table_id"]
    # Every seat now taken: by table, by seat name, and without a table.
    for args in ({"table_id": first["table_id"]}, {"table_id": full["table_id"]}):
        name, message = await refused(client, "join", **args)
        assert name == "ArgumentError" and "every seat is taken (player_0, player_1)" in message
    name, message = await refused(client, "join", table_id=full["table_id"], seat="player_1")
    assert name == "ArgumentError" and "'player_1' is taken; open seats: none" in message
    name, message = await refused(client, "join", table_id=full["table_id"], seat="player_9")
    assert name == "ArgumentError" and "its seats are player_0, player_1" in message
    name, message = await refused(client, "join")
    assert name == "ArgumentError" and "no game has an open seat" in message
    name, message = await refused(client, "join", table_id="tb_madeUp")
    assert name == "UnknownEpisode", message
    # A seat's handle names its table, which is full too.
    name, message = await refused(client, "join", table_id=first["episode_id"])
    assert name == "ArgumentError" and "every seat is taken" in message

    # The joined seat plays the first table's game.
    p1 = joined["seats"]["player_1"]
    await call(client, "step", seat=first["episode_id"], action=0, wait=False)
    answer = await call(client, "step", seat=p1, action=8, wait=False)
    assert [m["action"] for m in answer["info"]["moves"]] == [0, 8]


async def test_bad_types_are_refused_and_the_server_carries_on(client: Client) -> None:
    mine = await table(client)
    p0 = mine["seats"]["player_0"]
    bad: list[tuple[str, dict[str, Any]]] = [
        ("step", {"seat": 5, "action": 4}),
        ("step", {"seat": ["x"], "action": 4}),
        ("step", {"seat": "x" * 500, "action": 4}),
        ("step", {"seat": p0, "action": 4, "wait": "later"}),
        ("step", {"seat": p0, "action": 4, "wait": [True]}),
        ("step", {"seat": p0, "action": [4]}),
        ("step", {"seat": p0, "action": {"id": 4}}),
        ("step", {"seat": p0, "action": True}),
        ("state", {"seat": p0, "wait": {"x": 1}}),
        ("state", {"seat": 3.5}),
        ("legal_actions", {"seat": None, "episode_id": 7}),
        ("reset", {"seats": 5}),
        ("reset", {"seats": {"player_0": True}}),
        ("reset", {"seats": [1, 2]}),
        ("join", {"table_id": 3}),
        ("join", {"seat": ["player_1"]}),
        ("join", {"extra": 1}),
    ]
    for tool, args in bad:
        name, message = await refused(client, tool, **args)
        assert name in {"ValidationError", "ArgumentError", "InvalidAction"}, (tool, args, message)
    now = await view(client, p0)
    assert now["step"] == 0 and now["info"]["your_turn"]
    answer = await call(client, "step", seat=p0, action=4, wait=False)
    assert answer["step"] == 1


async def test_an_empty_seats_list_is_refused(client: Client) -> None:
    name, message = await refused(client, "reset", seats=[])
    assert name == "ArgumentError" and "player_0" in message, message


async def test_closing_one_seat_leaves_the_other_a_clear_answer(client: Client) -> None:
    mine = await table(client)
    p0, p1 = mine["seats"]["player_0"], mine["seats"]["player_1"]
    await call(client, "close", episode_id=p0)
    name, message = await refused(client, "step", seat=p0, action=4)
    assert name == "UnknownEpisode", message
    # player_0 (closed) was to move: player_1 is told at once that it left.
    name, message = await refused(client, "step", seat=p1, action=4)
    assert name == "ResetNeeded" and "player_0 left this game" in message, message
    assert (await view(client, p1))["step"] == 0
    await call(client, "close", episode_id=p1)
    name, message = await refused(client, "state", seat=p1)
    assert name == "UnknownEpisode"
    # The server carries on.
    fresh = await table(client)
    assert (await call(client, "step", seat=fresh["episode_id"], action=4, wait=False))["step"] == 1


async def test_a_finished_seat_is_told_its_end_then_needs_a_reset(client: Client) -> None:
    mine = await table(client)
    p0, p1 = mine["seats"]["player_0"], mine["seats"]["player_1"]
    for seat, action in ((p0, 0), (p1, 3), (p0, 1), (p1, 4)):
        await call(client, "step", seat=seat, action=action, wait=False)
    won = await call(client, "step", seat=p0, action=2, wait=False)
    assert won["terminated"] and won["reward"] == 1.0 and won["info"]["to_move"] == []
    lost = await call(client, "step", seat=p1, action=5)  # a done agent's step: its end
    assert lost["terminated"] and lost["reward"] == -1.0
    assert won["episode_return"] + lost["episode_return"] == 0
    name, message = await refused(client, "step", seat=p1, action=5)
    assert name == "ResetNeeded", message
    # Restart the same table from a seat's handle: the same handles, a fresh game. Seats
    # held already are not handed out again (the server cannot tell who holds them).
    name, message = await refused(client, "reset", episode_id=p1, seats="all")
    assert name == "ArgumentError" and "'player_0' is taken" in message
    again = await call(client, "reset", episode_id=p1, seed=3)
    assert again["seats"] == {"player_1": p1} and again["table_id"] == mine["table_id"]
    assert again["step"] == 0 and again["info"]["to_move"] == ["player_0"]
    assert (await view(client, p0))["info"]["your_turn"]
    assert (await call(client, "step", seat=p0, action=4, wait=False))["step"] == 1


# -- servers that mix seats with built-in opponents, and refuse seats ----------------------


async def test_one_seat_against_the_built_in_opponent() -> None:
    async with Client(server("player_0")) as client:
        start = await call(client, "reset", seed=11)
        assert start["seats"].keys() == {"player_0"} and start["open_seats"] == []
        name, message = await refused(client, "reset", seats="player_1")
        assert name == "ArgumentError" and "built-in opponent" in message
        name, _ = await refused(client, "join")
        assert name == "ArgumentError"
        answer, handle = start, start["episode_id"]
        steps = 0
        while not answer["terminated"]:
            assert answer["info"]["your_turn"]
            answer = await call(client, "step", seat=handle, action=legal(answer)[-1])
            steps += 1
            assert steps <= 5
        returns = answer["info"]["returns"]
        assert sum(returns) == 0 and answer["episode_return"] == returns[0]
        assert answer["info"]["terminations"] == {"player_0": True, "player_1": True}
        assert {m["agent"] for m in answer["info"]["moves"]} <= {"player_0", "player_1"}


def test_a_one_player_env_refuses_seats_at_start() -> None:
    with pytest.raises(ArgumentError, match="echo has one player; seats are for games of several"):
        build_server("echo", settings=ServerSettings(seats="all"))
    result = CliRunner().invoke(app, ["serve", "echo", "--seats", "all"])
    assert result.exit_code != 0
    assert "echo has one player" in result.output, result.output


def test_seats_with_workers_are_refused() -> None:
    with pytest.raises(ArgumentError, match="--seats all with --workers 2: the seats of a game"):
        build_server("openspiel", settings=ServerSettings(seats="all", workers=2))
    with pytest.raises(ArgumentError, match="--turn-timeout 60 must be at least 5 s below"):
        build_server("openspiel", settings=ServerSettings(seats="all", turn_timeout=60))
    result = CliRunner().invoke(app, ["serve", "openspiel", "--seats", "all", "--workers", "2"])
    assert result.exit_code != 0
    assert "--workers" in result.output, result.output


# -- simultaneous moves --------------------------------------------------------------------


async def test_a_simultaneous_move_commits_once_both_seats_acted() -> None:
    async with Client(server(**GOOFSPIEL)) as client:
        start = await call(client, "reset", seed=5, seats="all")
        p0, p1 = start["seats"]["player_0"], start["seats"]["player_1"]
        assert start["info"]["to_move"] == ["player_0", "player_1"]
        before = await view(client, p1)

        # player_0 bids alone: nothing commits; player_1's view is as it was.
        first = await call(client, "step", seat=p0, action=legal(start)[0], wait=False)
        assert first["info"]["moves"] == [] and not first["info"]["your_turn"]
        assert first["info"]["to_move"] == ["player_0", "player_1"]
        still = await view(client, p1)
        assert still["info"]["text"] == before["info"]["text"] and still["info"]["your_turn"]
        # player_0 may not bid twice: it waits for the joint move, then is told.
        name, message = await refused(client, "step", seat=p0, action=legal(start)[0])
        assert name == "NotYourTurn" and "player_1 to move" in message

        # Then both bid concurrently, to the end, each answering after the commit.
        returns: dict[str, float] = {"player_0": 0.0, "player_1": 0.0}
        answers = {"player_1": still}

        async def bid(agent: str, handle: str) -> None:
            answer = answers.get(agent) or await call(client, "state", seat=handle, wait=True)
            while not answer["terminated"]:
                answer = await call(client, "step", seat=handle, action=legal(answer)[-1])
                assert answer["terminated"] or answer["info"]["your_turn"], answer["info"]
            answers[agent] = answer
            returns[agent] = answer["episode_return"]

        async with anyio.create_task_group() as tg:
            tg.start_soon(bid, "player_1", p1)
            tg.start_soon(bid, "player_0", p0)
        assert sum(returns.values()) == 0
        assert answers["player_0"]["info"]["returns"] == answers["player_1"]["info"]["returns"]
        assert list(returns.values()) == answers["player_0"]["info"]["returns"]


async def test_a_seat_snapshot_starts_groups_of_whole_games_from_one_position(
    client: Client,
) -> None:
    """GRPO per seat: a snapshot of one seat holds its whole table; every reset from it is
    a new game (new handles) at that position, and the same moves end it the same way."""
    mine = await table(client)
    p0, p1 = mine["seats"]["player_0"], mine["seats"]["player_1"]
    await call(client, "step", seat=p0, action=4, wait=False)
    await call(client, "step", seat=p1, action=0, wait=False)
    saved = await call(client, "snapshot", episode_id=p0)
    ends = []
    for _ in range(2):
        group = await call(client, "reset", from_snapshot=saved["snapshot_id"], seats="all")
        g0, g1 = group["seats"]["player_0"], group["seats"]["player_1"]
        assert {g0, g1}.isdisjoint({p0, p1})
        assert group["info"]["your_turn"] and group["info"]["text"].count("x") == 1
        for seat, action in ((g0, 2), (g1, 1), (g0, 6)):
            last = await call(client, "step", seat=seat, action=action, wait=False)
        lost = await call(client, "step", seat=g1, action=0, wait=False)
        ends.append((last["reward"], last["terminated"], lost["reward"], lost["terminated"]))
    assert ends == [(1.0, True, -1.0, True)] * 2
    # The original game never moved.
    assert (await view(client, p0))["info"]["text"].count("x") == 1
    name, message = await refused(client, "reset", from_snapshot="snap_made-up")
    assert name == "UnknownSnapshot", message


async def test_a_table_a_seat_left_starts_no_new_game(client: Client) -> None:
    mine = await table(client)
    p0, p1 = mine["seats"]["player_0"], mine["seats"]["player_1"]
    await call(client, "close", episode_id=p1)
    name, message = await refused(client, "reset", episode_id=p0)
    assert name == "ArgumentError" and "player_1 left" in message, message
    assert (await view(client, p0))["step"] == 0  # the seat that stayed is as it was
    fresh = await table(client)  # a new table is fine
    assert fresh["seats"]["player_0"] != p0


async def test_a_sharded_server_routes_join_on_its_game_and_seats_on_their_episode() -> None:
    sharded = build_server(
        "openspiel",
        settings=ServerSettings(**{**SETTINGS, "shard": "s1"}),
        game="tic_tac_toe",
    )
    async with Client(sharded) as c:
        tools = {t.name: t.inputSchema["properties"] for t in await c.list_tools()}
        assert "x-mcp-header" in tools["join"]["table_id"]
        assert "x-mcp-header" in tools["step"]["episode_id"]  # a seat's handle is its episode's
        mine = await table(c)
        assert mine["table_id"].endswith("@s1") and mine["seats"]["player_1"].endswith("@s1")

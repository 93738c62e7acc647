"""A game of seats recorded (``serve --seats all --record DIR``): the table's joint file,
each seat's own file naming it, the game's exact replay (by file and through the CLI), a
tampered file's mismatch named by move and seat, the refusal to replay one seat alone,
and the seats' episodes exported. Real OpenSpiel tic-tac-toe over MCP in memory."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastmcp import Client
from typer.testing import CliRunner

from openenv_mcp.cli import app
from openenv_mcp.data.export import export_jsonl
from openenv_mcp.errors import ArgumentError
from openenv_mcp.recording import (
    is_table_recording,
    read_recording,
    read_table_recording,
    replay,
    replay_table,
)
from openenv_mcp.recording._table_recording import observation_digest
from openenv_mcp.server import ServerSettings, build_server

pytestmark = pytest.mark.anyio

runner = CliRunner()

#: player_0 wins along the middle column: x(1,1), o(0,0), x(0,1), o(0,2), x(2,1).
MOVES = [("player_0", 4), ("player_1", 0), ("player_0", 1), ("player_1", 2), ("player_0", 7)]


def seats_server(directory: Path) -> Any:
    settings = ServerSettings(seats="all", record=str(directory))
    return build_server("openspiel", game="tic_tac_toe", settings=settings)


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def table_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("tb-*.jsonl"))


def seat_files(directory: Path) -> dict[str, Path]:
    found = {}
    for path in sorted(directory.glob("ep-*.jsonl")):
        found[lines(path)[0]["seat"]] = path
    return found


async def play(directory: Path, seed: int = 3) -> dict[str, str]:
    """One game, both seats driven by one client; every seat told of the end."""
    with anyio.fail_after(120):
        async with Client(seats_server(directory)) as c:
            reset = await c.call_tool("reset", {"seed": seed, "seats": "all"})
            handles: dict[str, str] = reset.structured_content["seats"]
            for seat, action in MOVES:
                args = {"action": action, "seat": handles[seat], "wait": False}
                await c.call_tool("step", args)
            # player_1's step after the end applies nothing: it is told it lost.
            last = await c.call_tool("step", {"action": 3, "seat": handles["player_1"]})
            assert last.structured_content["reward"] == -1.0
            assert last.structured_content["terminated"] is True
    return handles


@pytest.fixture
async def recorded(tmp_path: Path) -> Path:
    directory = tmp_path / "rec"
    await play(directory)
    return directory


async def test_the_table_records_the_game_whole_and_each_seat_names_it(recorded: Path) -> None:
    (table,) = table_files(recorded)
    assert is_table_recording(table)
    assert stat.S_IMODE(os.stat(table).st_mode) == 0o600
    records = lines(table)
    assert [r["kind"] for r in records] == ["table", *["move"] * 5, "end"]
    start, *moves, end = records
    assert start["format"] == 1 and start["env"] == "openspiel"
    assert start["env_class"] == "openenv_mcp_envs.openspiel.env:OpenSpielEnv"
    assert start["config"]["game"] == "tic_tac_toe"
    assert (start["seed"], start["options"]) == (3, None)
    assert start["seats"] == start["clients"] == ["player_0", "player_1"]
    assert table.name == f"{start['table']}-0001.jsonl" and start["table"].startswith("tb-")
    assert "tb_" not in table.read_text()  # the table's handle (a capability) is nowhere
    assert [(m["move"], m["actions"]) for m in moves] == [
        (i + 1, {seat: action}) for i, (seat, action) in enumerate(MOVES)
    ]
    assert moves[0]["names"] == {"player_0": "x(1,1)"}
    assert [m["rewards"] for m in moves[:4]] == [{"player_0": 0.0, "player_1": 0.0}] * 4
    assert moves[4]["rewards"] == {"player_0": 1.0, "player_1": -1.0}
    assert moves[4]["terminations"] == {"player_0": True, "player_1": True}
    for record in [start, *moves]:
        assert set(record["observations"]) == {"player_0", "player_1"}
        assert all(len(d) == 64 for d in record["observations"].values())
    assert moves[0]["observations"] != start["observations"]
    assert end["status"] == "over" and end["moves"] == 5
    assert end["returns"] == {"player_0": 1.0, "player_1": -1.0}
    seats = seat_files(recorded)
    assert set(seats) == {"player_0", "player_1"}
    for seat, path in seats.items():
        first = lines(path)[0]
        assert first["kind"] == "start" and first["seat"] == seat
        assert (first["table"], first["table_recording"]) == (start["table"], table.name)
        assert "tb_" not in path.read_text()


async def test_the_game_replays_exactly(recorded: Path) -> None:
    (table,) = table_files(recorded)
    report = replay_table(table)
    assert report.ok, report.text()
    assert (report.moves, report.recorded, report.complete) == (5, 5, True)
    assert report.seats == ["player_0", "player_1"]
    assert "replayed the game's 5 moves" in report.text()
    assert "match exactly" in report.text()
    result = runner.invoke(app, ["replay", str(recorded)])
    assert result.exit_code == 0, result.output
    assert result.output.count("match exactly") == 1
    assert result.output.count(f"replayed with {table.name}") == 2


async def test_a_tampered_reward_is_a_mismatch_named_by_move_and_seat(recorded: Path) -> None:
    (table,) = table_files(recorded)
    records = lines(table)
    records[5]["rewards"]["player_1"] = 0.0  # move 5: player_1 lost, recorded as a draw
    tampered = recorded / "tampered" / table.name
    tampered.parent.mkdir()
    tampered.write_text("".join(json.dumps(r) + "\n" for r in records))
    report = replay_table(tampered)
    assert not report.ok
    assert report.mismatches == ["move 5, player_1: reward -1.0, recorded 0.0"]
    assert report.moves == 5
    result = runner.invoke(app, ["replay", str(tampered)])
    assert result.exit_code == 1
    assert "differs" in result.output and "move 5, player_1: reward -1.0" in result.output


async def test_a_changed_observation_and_a_move_the_game_cannot_make(recorded: Path) -> None:
    (table,) = table_files(recorded)
    records = lines(table)
    records[2]["observations"]["player_0"] = observation_digest("not the board")
    path = recorded / "tampered" / table.name
    path.parent.mkdir()
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    (mismatch,) = replay_table(path).mismatches
    assert mismatch.startswith("move 2, player_0: the observation differs")
    records = lines(table)
    records[3]["actions"] = {"player_0": 4}  # move 3 onto the centre x took at move 1
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    report = replay_table(path)
    assert not report.ok and report.moves == 2
    assert "move 3, player_0: the recorded action 4 is not legal" in report.stopped


async def test_one_seats_file_refuses_to_replay_and_names_the_tables(recorded: Path) -> None:
    (table,) = table_files(recorded)
    seat = seat_files(recorded)["player_0"]
    assert read_recording(seat).complete  # an episode all the same
    with pytest.raises(ArgumentError, match="seat player_0 of the game of seats") as caught:
        replay(seat)
    assert f"replay the table's file instead: {table.name}" in str(caught.value)
    result = runner.invoke(app, ["replay", str(seat)])
    assert result.exit_code == 1
    assert "cannot replay" in result.output and table.name in result.output
    with pytest.raises(ArgumentError, match="not a table recording: expected a 'table' record"):
        read_table_recording(seat)


async def test_a_new_game_at_the_table_ends_the_last_as_reset(tmp_path: Path) -> None:
    with anyio.fail_after(120):
        async with Client(seats_server(tmp_path)) as c:
            reset = await c.call_tool("reset", {"seed": 1, "seats": "all"})
            handles = reset.structured_content["seats"]
            await c.call_tool("step", {"action": 4, "seat": handles["player_0"], "wait": False})
            await c.call_tool("reset", {"seed": 2, "episode_id": handles["player_0"]})
            await c.call_tool("step", {"action": 0, "seat": handles["player_0"], "wait": False})
    first, second = table_files(tmp_path)
    assert first.name.endswith("-0001.jsonl") and second.name.endswith("-0002.jsonl")
    assert lines(first)[-1]["status"] == "reset"
    assert (lines(second)[0]["seed"], lines(second)[0]["game"]) == (2, 2)
    # The server is gone without closing it: the second game's file reads, incomplete.
    again = read_table_recording(second)
    assert not again.complete and len(again.moves) == 1
    report = replay_table(second)
    assert report.ok and not report.complete and "incomplete" in report.text()
    starts = [lines(p)[0] for p in sorted(tmp_path.glob("ep-*.jsonl"))]
    assert sorted(s["table_recording"] for s in starts) == sorted(
        [first.name, first.name, second.name, second.name]
    )


async def test_each_seat_exports_as_an_episode_named_by_its_seat(
    recorded: Path, tmp_path: Path
) -> None:
    out = tmp_path / "seats.jsonl"
    report = export_jsonl(recorded, out)
    assert report.episodes == 2, report.text()
    episodes = {e["seat"]: e for e in map(json.loads, out.read_text().splitlines())}
    assert set(episodes) == {"player_0", "player_1"}
    (table,) = table_files(recorded)
    for episode in episodes.values():
        assert episode["table_recording"] == table.name and episode["status"] == "terminated"
    assert episodes["player_0"]["return"] == 1.0 and episodes["player_1"]["return"] == -1.0
    assert episodes["player_0"]["steps"] == 3


@pytest.mark.integration  # h5py runs `uname -p` as it loads
async def test_the_seats_export_as_a_minari_dataset_of_single_seat_episodes(
    recorded: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Minari holds one agent's episodes (one observation and action space, one reward
    per step): a seats recording exports as each seat's episodes, the game not joined."""
    minari = pytest.importorskip("minari", reason="the [data] extra installs minari")
    from openenv_mcp.data.export import export_minari

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    report = export_minari(recorded, "test/tic-tac-toe-seats-v0")
    assert report.episodes == 2, report.text()
    dataset = minari.load_dataset("test/tic-tac-toe-seats-v0")
    returns = sorted(float(e.rewards.sum()) for e in dataset.iterate_episodes())
    assert returns == [-1.0, 1.0]

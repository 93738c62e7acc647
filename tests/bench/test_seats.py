"""``openenv-mcp bench ENV --seats``: a game of seats over MCP against the same game in
process; it runs and reports every field (no test asserts a time or a ratio)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from openenv_mcp.cli import app

runner = CliRunner()

TINY = ["--steps", "12", "--repeats", "2", "--warmup", "2"]


@pytest.mark.parametrize(
    "game",
    [
        ["openspiel", "--game", "tic_tac_toe"],
        ["openspiel", "--game", "goofspiel", "--game-params", "num_cards=4"],  # joint moves
    ],
)
def test_bench_seats_reports_both_sides_and_their_ratio(game: list[str]) -> None:
    result = runner.invoke(
        app, ["bench", *game, "--seats", "--transport", "memory", *TINY, "--json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["env"] == "openspiel" and data["moves"] == 12 and data["repeats"] == 2
    assert data["in_process_moves_per_s"] > 0 and data["mcp_moves_per_s"] > 0
    assert data["ratio"] == pytest.approx(data["mcp_moves_per_s"] / data["in_process_moves_per_s"])
    assert data["games"] >= 2 and "versions" in data["environment"]


def test_bench_seats_refuses_a_game_of_one_player_and_other_transports() -> None:
    result = runner.invoke(app, ["bench", "echo", "--seats", "--transport", "memory", *TINY])
    assert result.exit_code == 2 and "echo has one player" in result.output
    result = runner.invoke(app, ["bench", "openspiel", "--seats", "--transport", "http", *TINY])
    assert result.exit_code == 2 and "stdio or memory" in result.output

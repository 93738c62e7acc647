"""OpenEnv's own games through the bridge (``serve openenv --env``), their code vendored
in :mod:`tests.openenv_games` (TextArena and Reasoning Gym from PyPI, Connect4, Chess):

* what a model reads is the text, and what it needs to act is in it whole: a model
  reading nothing else wins GuessTheNumber by the game's feedback and solves a
  mini_sudoku from the grid in its question (over real stdio, ``--profile agent``);
* ``--env`` takes a factory or an app as well as a class, ``--kwargs`` the constructor's
  arguments, and finds the models a ``step`` does not name; a bad one says what it
  expected, what came and what to pass;
* the reset's text says where a seed was not used, or may not be.

The same games over ``--url`` (reset options reaching the server) are in
``tests/test_openenv_bridge.py``.
"""

from __future__ import annotations

import itertools
import re
import sys
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from openenv.core.env_server.interfaces import Environment

from openenv_mcp.errors import ArgumentError
from openenv_mcp.server import ServerSettings, build_server
from tests.servers import ROOT

pytestmark = pytest.mark.anyio

GAMES = "tests.openenv_games.server.environments"
APPS = "tests.openenv_games.server.app"
AGENT = ServerSettings(profile="agent")


def text_of(result: Any) -> str:
    """All a model reads of an answer: its text content (nothing structured)."""
    return "\n".join(c.text for c in result.content if c.type == "text")


# -- a model reading only the text wins ----------------------------------------------------


def agent_over_stdio(env: str, *options: str) -> Client[Any]:
    """``openenv-mcp serve openenv --env ENV --profile agent`` over real stdio."""
    argv = ["-m", "openenv_mcp", "serve", "openenv", "--env", env, "--profile", "agent"]
    transport = StdioTransport(
        command=sys.executable, args=[*argv, "--stdio", *options], cwd=str(ROOT)
    )
    return Client(transport, timeout=120)


def solve_sudoku(grid: list[list[int]]) -> list[list[int]]:
    """A tiny backtracking solver for a 4x4 mini sudoku (0 for a blank)."""
    for r, c in itertools.product(range(4), range(4)):
        if grid[r][c]:
            continue
        box = {
            grid[i][j]
            for i in range(r // 2 * 2, r // 2 * 2 + 2)
            for j in range(c // 2 * 2, c // 2 * 2 + 2)
        }
        used = set(grid[r]) | {grid[i][c] for i in range(4)} | box
        for value in (v for v in range(1, 5) if v not in used):
            grid[r][c] = value
            if solve_sudoku(grid):
                return grid
        grid[r][c] = 0
        return []
    return grid


@pytest.mark.integration
async def test_a_model_reading_only_text_wins_guess_the_number() -> None:
    # TextArena's app hands create_app a factory: so does --env.
    async with agent_over_stdio(f"{GAMES}:create_textarena_environment") as client:
        tools = {t.name for t in await client.list_tools()}
        assert {"reset", "step", "state"} <= tools
        text = text_of(await client.call_tool("reset", {}))
        assert "You are playing Guess The Number" in text  # the prompt, whole
        low, high = map(int, re.search(r"between (\d+) and (\d+)", text).groups())  # type: ignore[union-attr]
        for _ in range(10):
            guess = (low + high) // 2
            text = text_of(await client.call_tool("step", {"action": {"message": f"[{guess}]"}}))
            if "Episode over" in text:
                break
            # the game's feedback reaches the text: it was cut at 200 characters before
            hint = re.search(r"\[GAME\] The target number is (higher|lower)", text)
            assert hint is not None, text
            low, high = (guess + 1, high) if hint.group(1) == "higher" else (low, guess - 1)
        assert "reward +1" in text and "Episode over (terminated)" in text, text


@pytest.mark.integration
async def test_a_model_reading_only_text_solves_a_mini_sudoku() -> None:
    async with agent_over_stdio(f"{GAMES}:ReasoningGymEnvironment") as client:
        options = {"dataset_name": "mini_sudoku", "size": 5}
        text = text_of(await client.call_tool("reset", {"seed": 7, "options": options}))
        # the question's grid reaches the text: it was cut at 200 characters before
        rows = re.search(r"puzzle:\n((?:[1-4_](?: [1-4_]){3}\n?){4})", text)
        assert rows is not None, text
        lines = rows[1].strip().split("\n")
        grid = [[0 if v == "_" else int(v) for v in line.split()] for line in lines]
        assert len(grid) == 4 and grid[3]
        solved = solve_sudoku(grid)
        answer = "\n".join(" ".join(map(str, row)) for row in solved)
        text = text_of(await client.call_tool("step", {"action": {"answer": answer}}))
        assert "reward +1, return 1" in text and "Episode over (terminated)" in text, text


# -- the text: whole where it is needed to act ---------------------------------------------


async def test_legal_moves_past_twenty_and_a_board_are_in_the_text() -> None:
    server = build_server(
        "openenv", settings=AGENT, env=f"{GAMES}:ChessEnvironment", kwargs={"opponent": None}
    )
    async with Client(server) as client:
        text = text_of(await client.call_tool("reset", {}))
        assert "legal_moves (20): g1h3, g1f3" in text and "a2a4" in text
        text = text_of(await client.call_tool("step", {"action": {"move": "e2e4"}}))
        moves = re.search(r"legal_moves \((\d+)\): ([a-h1-8, ]+)", text)
        assert moves is not None and int(moves[1]) == 20  # black to move: its 20
        text = text_of(await client.call_tool("step", {"action": {"move": "e7e5"}}))
        moves = re.search(r"legal_moves \((\d+)\): ([a-h1-8q, ]+)", text)
        assert moves is not None and int(moves[1]) == 29, text
        assert len(moves[2].split(", ")) == 29 and "e1e2" in moves[2]  # every one, whole
        assert "fen='rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2'" in text
    server = build_server("openenv", settings=AGENT, env=f"{GAMES}:Connect4Environment")
    async with Client(server) as client:
        await client.call_tool("reset", {})
        text = text_of(await client.call_tool("step", {"action": {"column": 3}}))
        assert "board (6x7):\n" + "0 0 0 0 0 0 0\n" * 5 + "0 0 0 1 0 0 0" in text
        assert "legal_actions=[0, 1, 2, 3, 4, 5, 6]" in text


async def test_only_the_new_messages_are_told_and_long_values_are_summarised() -> None:
    server = build_server("openenv", settings=AGENT, env=f"{GAMES}:create_textarena_environment")
    async with Client(server) as client:
        reset = text_of(await client.call_tool("reset", {}))
        # the line names the long fields by size; the prompt follows whole, once (its
        # one message says the same)
        assert "Observation: prompt=<515 chars>, messages=<1 message>" in reset
        assert reset.count("You are playing Guess The Number") == 1
        step = text_of(await client.call_tool("step", {"action": {"message": "[30]"}}))
        assert "messages, new since the last answer:\n[Player] [30]\n[GAME] You attempted" in step
        assert "You are playing Guess The Number" not in step  # the transcript, not again
        again = text_of(await client.call_tool("step", {"action": {"message": "[0]"}}))
        assert "[Player] [0]" in again and "[Player] [30]" not in again
    server = build_server("openenv", settings=AGENT, env=f"{GAMES}:ReasoningGymEnvironment")
    async with Client(server) as client:
        await client.call_tool(
            "reset", {"seed": 1, "options": {"dataset_name": "mini_sudoku", "size": 3}}
        )
        done = text_of(await client.call_tool("step", {"action": {"answer": "no idea"}}))
        assert "correct_answer:\n2 1 4 3\n4 3 1 2\n1 2 3 4\n3 4 2 1" in done
        assert "Observation: question=None, score=0.0, correct_answer=<31 chars>" in done


# -- --env: a factory, an app, arguments, models found -------------------------------------


async def test_an_app_a_factory_and_constructor_arguments() -> None:
    # the app create_app made: its factory and models
    async with Client(build_server("openenv", settings=AGENT, env=f"{APPS}:chess")) as client:
        text = text_of(await client.call_tool("reset", {}))
        assert "legal_moves (20)" in text
    # a class and its arguments (--kwargs key=value pairs, read as the CLI reads them)
    server = build_server(
        "openenv", env=f"{GAMES}:ChessEnvironment", kwargs="opponent=null,agent_color=black"
    )
    async with Client(server) as client:
        reset = await client.call_tool("reset", {})
        assert reset.structured_content["observation"]["fen"].split()[1] == "w"  # no opponent
    # a factory's environment comes from its own arguments (TEXTARENA_ENV_ID here)
    server = build_server("openenv", env=f"{GAMES}:create_textarena_environment")
    async with Client(server) as client:
        tools = {t.name: t for t in await client.list_tools()}
        assert "message" in tools["step"].input_schema["properties"]["action"]["properties"]


async def test_models_a_step_does_not_name_are_found_in_its_package() -> None:
    # Connect4 annotates its step's action only; Chess nothing: the package's models say
    for env, field in (("Connect4Environment", "column"), ("ChessEnvironment", "move")):
        async with Client(build_server("openenv", env=f"{GAMES}:{env}")) as client:
            tools = {t.name: t for t in await client.list_tools()}
            assert list(tools["step"].input_schema["properties"]["action"]["properties"]) == [field]
            reset = await client.call_tool("reset", {})
            assert "legal_" in str(reset.structured_content["observation"])


class Bare(Environment):  # type: ignore[misc]
    """Nothing names its models: not its step, not its package."""

    def reset(self, seed=None, episode_id=None, **kwargs):  # type: ignore[no-untyped-def]
        return None

    def step(self, action):  # type: ignore[no-untyped-def]
        return None

    @property
    def state(self):  # type: ignore[no-untyped-def]
        return None


def test_a_failed_start_says_what_was_expected_what_came_and_what_to_pass() -> None:
    here = "tests.envs.test_openenv_games"
    with pytest.raises(ArgumentError) as found:
        build_server("openenv", env=f"{here}:Bare")
    assert str(found.value) == (
        f"could not find the action model of {here}:Bare (Bare): none in its step() "
        f"annotation or in {here}; pass --action module:Class (an OpenEnv Action subclass)"
    )
    with pytest.raises(ArgumentError) as found:
        build_server("openenv", env=f"{GAMES}:ChessEnvironment", kwargs={"colour": "white"})
    assert str(found.value) == (
        f"--env '{GAMES}:ChessEnvironment': its constructor has no argument 'colour' (its "
        "constructor takes opponent, max_moves, agent_color; --kwargs gave ['colour'])"
    )
    with pytest.raises(ArgumentError, match=r"made a NoneType, not an OpenEnv Environment"):
        build_server("openenv", env=f"{here}:not_an_environment")
    with pytest.raises(ArgumentError, match=r"the factory needs result: pass --kwargs result="):
        build_server("openenv", env=f"{here}:text_of")
    with pytest.raises(ArgumentError, match=r"is the class tests\.openenv_games\.models\.ChessAct"):
        build_server("openenv", env="tests.openenv_games.models:ChessAction")
    with pytest.raises(
        ArgumentError,
        match=r"making the environment with --kwargs \{'env_id': 'Nope-v0'\} failed: "
        r"ValueError: Environment Nope-v0 not found in registry",
    ):
        build_server("openenv", env=f"{GAMES}:TextArenaEnvironment", kwargs={"env_id": "Nope-v0"})
    with pytest.raises(ArgumentError, match="--kwargs, --action and --observation go with --env"):
        build_server("openenv", url="http://127.0.0.1:1", kwargs={"a": 1})


# -- seeds ---------------------------------------------------------------------------------


async def test_the_reset_text_says_where_a_seed_is_not_used() -> None:
    # Connect4's reset takes no seed: OpenEnv drops it, and the text says so
    async with Client(
        build_server("openenv", settings=AGENT, env=f"{GAMES}:Connect4Environment")
    ) as client:
        text = text_of(await client.call_tool("reset", {"seed": 3}))
        assert "seed 3)" in text  # the head says what was asked...
        assert "Seed 3 was not used: this environment's reset takes no seed" in text
        assert "Seed" not in text_of(await client.call_tool("reset", {}))  # none asked
    # a reset that names a seed takes it: nothing more to say
    async with Client(
        build_server("openenv", settings=AGENT, env=f"{GAMES}:ReasoningGymEnvironment")
    ) as client:
        assert "Seed 3" not in text_of(await client.call_tool("reset", {"seed": 3}))
    # one that takes **kwargs only may or may not use it
    server = build_server(
        "openenv",
        settings=AGENT,
        env=f"{__name__}:Kwargs",
        action="tests.openenv_games.models:Connect4Action",
        observation="tests.openenv_games.models:Connect4Observation",
    )
    async with Client(server) as client:
        text = text_of(await client.call_tool("reset", {"seed": 3}))
        assert (
            "Seed 3 was passed on; this environment may ignore seeds (its reset does not " in text
        )


def not_an_environment() -> None:
    """A factory that makes nothing."""


class Kwargs(Environment):  # type: ignore[misc]
    """Its reset takes **kwargs: a seed goes in, used or not."""

    def reset(self, **kwargs: Any) -> Any:
        from tests.openenv_games.models import Connect4Observation

        return Connect4Observation(board=[[0]], legal_actions=[0])

    def step(self, action: Any) -> Any:
        return self.reset()

    @property
    def state(self) -> Any:
        from openenv.core.env_server.types import State

        return State()


@pytest.mark.integration
async def test_a_failed_start_says_why_inside_the_harness() -> None:
    env = f"{GAMES}:ChessEnvironment"
    async with agent_over_stdio(env, "--kwargs", "colour=white") as client:
        (tool,) = await client.list_tools()
        said = text_of(await client.call_tool(tool.name, {}, raise_on_error=False))
        assert (
            f"--env '{env}': its constructor has no argument 'colour' (its constructor takes "
            "opponent, max_moves, agent_color; --kwargs gave ['colour'])"
        ) in said

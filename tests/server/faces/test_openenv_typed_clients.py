"""``serve ENV --http --openenv`` against OpenEnv's own typed clients, unchanged.

OpenEnv's env packages (``atari_env``, ``chess_env``, ``coding_env``, ``echo_env``,
``openspiel_env``; vendored in ``tests/openenv_packages``, installed by pip in the
``openenv_packages`` fixture) each ship a typed client (``AtariEnv``, ``ChessEnv``,
``CodingEnv``, ``EchoEnv``, ``OpenSpielEnv``) that sends its own action model and
parses its own observation and state models. Each runs here as its users run it,
``with Client(base_url=...).sync() as env``, in a subprocess that imports it from the
installed packages, against our server of the same env; the subprocess prints what it
saw as JSON and the test checks it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.servers import ensure_installed, http_server, with_pythonpath

pytestmark = pytest.mark.integration

START_FEN = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"

#: Every client script starts with this: the server's OpenEnv base URL, and a way to
#: report an exception a call raised (as JSON) instead of failing the script.
PRELUDE = '''
import json, sys
BASE = sys.argv[1]

def error_of(call):
    """The exception ``call()`` raises, as {type, message}; None if it returns."""
    try:
        call()
    except Exception as exc:
        return {"type": type(exc).__name__, "message": str(exc)}
    return None
'''


@contextmanager
def openenv_server(env: str, *options: str) -> Iterator[str]:
    """``serve ENV --http --openenv OPTIONS``; yield its OpenEnv base URL."""
    with http_server(env, "--openenv", *options) as url:
        yield url.removesuffix("/mcp") + "/openenv"


def run_client(packages: Path, base: str, *parts: str) -> dict[str, Any]:
    """Run a script of ``parts`` (each dedented; after :data:`PRELUDE`) with OpenEnv's
    packages importable; the JSON object its last line prints."""
    script = "\n".join(textwrap.dedent(part) for part in (PRELUDE, *parts))
    proc = subprocess.run(
        [sys.executable, "-P", "-c", script, base],
        capture_output=True,
        text=True,
        timeout=300,
        env=with_pythonpath(packages),
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


@pytest.fixture(scope="module")
def atari_base() -> Iterator[str]:
    with openenv_server("atari") as base:
        yield base


# -- atari ---------------------------------------------------------------------------------

ATARI_OBSERVATION = """
def seen(result):
    o = result.observation
    return {
        "type": type(o).__name__,
        "screen_len": len(o.screen),
        "screen_ints": all(type(v) is int and 0 <= v <= 255 for v in o.screen),
        "screen_shape": o.screen_shape,
        "legal_actions": o.legal_actions,
        "lives": o.lives,
        "episode_frame_number": o.episode_frame_number,
        "frame_number": o.frame_number,
        "reward": result.reward,
        "done": result.done,
    }
"""


def test_atari_env_resets_steps_and_states(openenv_packages: Path, atari_base: str) -> None:
    script = """
    from atari_env import AtariAction, AtariEnv

    with AtariEnv(base_url=BASE).sync() as env:
        reset = seen(env.reset())
        step = seen(env.step(AtariAction(action_id=1)))  # FIRE; game_name etc. defaults
        state = env.state()
    print(json.dumps({
        "reset": reset, "step": step,
        "state": {"type": type(state).__name__, **state.model_dump()},
    }))
    """
    found = run_client(openenv_packages, atari_base, ATARI_OBSERVATION, script)
    reset, step, state = found["reset"], found["step"], found["state"]
    assert reset["type"] == "AtariObservation"
    assert reset["screen_len"] == 210 * 160 * 3 and reset["screen_ints"], reset
    assert reset["screen_shape"] == [210, 160, 3]
    assert reset["legal_actions"] == list(range(6))
    assert isinstance(reset["lives"], int)
    assert (reset["episode_frame_number"], reset["frame_number"]) == (0, 0)
    assert (reset["reward"], reset["done"]) == (0.0, False)
    assert step["screen_len"] == 210 * 160 * 3 and step["screen_ints"]
    assert step["screen_shape"] == [210, 160, 3]
    assert (step["episode_frame_number"], step["frame_number"]) == (4, 4)  # frameskip 4
    assert isinstance(step["reward"], float) and step["done"] is False
    assert state["type"] == "AtariState"
    assert isinstance(state["episode_id"], str) and state["episode_id"]
    assert (state["game_name"], state["step_count"], state["frameskip"]) == ("pong", 1, 4)


def test_atari_an_illegal_action_id_is_a_clear_error_and_the_socket_goes_on(
    openenv_packages: Path, atari_base: str
) -> None:
    script = """
    from atari_env import AtariAction, AtariEnv

    with AtariEnv(base_url=BASE).sync() as env:
        env.reset()
        error = error_of(lambda: env.step(AtariAction(action_id=99)))
        after = env.step(AtariAction(action_id=0))
        state = env.state()
    print(json.dumps({
        "error": error,
        "after": {"shape": after.observation.screen_shape, "done": after.done},
        "step_count": state.step_count,
    }))
    """
    found = run_client(openenv_packages, atari_base, script)
    error = found["error"]
    assert error is not None, "action_id=99 was taken"
    assert error["type"] == "RuntimeError", error
    assert "99" in error["message"], error
    assert re.search(r"\b0\s*(?:\.\.|-|to)\s*5\b", error["message"]), error  # the range
    assert found["after"] == {"shape": [210, 160, 3], "done": False}
    assert found["step_count"] >= 1


def test_two_atari_clients_on_one_server_never_share_an_episode(
    openenv_packages: Path, atari_base: str
) -> None:
    script = """
    from atari_env import AtariAction, AtariEnv

    with AtariEnv(base_url=BASE).sync() as a, AtariEnv(base_url=BASE).sync() as b:
        a.reset()
        b.reset()
        for _ in range(3):
            last_a = a.step(AtariAction(action_id=0)).observation
        last_b = b.step(AtariAction(action_id=0)).observation
        state_a, state_b = a.state(), b.state()
    print(json.dumps({
        "a": [state_a.episode_id, state_a.step_count, last_a.episode_frame_number],
        "b": [state_b.episode_id, state_b.step_count, last_b.episode_frame_number],
    }))
    """
    found = run_client(openenv_packages, atari_base, script)
    (id_a, steps_a, frame_a), (id_b, steps_b, frame_b) = found["a"], found["b"]
    assert id_a and id_b and id_a != id_b, found
    assert (steps_a, frame_a) == (3, 12), found
    assert (steps_b, frame_b) == (1, 4), found


def test_openenvs_mcp_tool_client_calls_this_servers_tools(
    openenv_packages: Path, atari_base: str
) -> None:
    """``MCPToolClient`` on a server of an env that is not an MCP env of OpenEnv's: it
    lists, and calls, this server's own tools."""
    script = """
    from openenv.core.mcp_client import MCPToolClient

    with MCPToolClient(base_url=BASE).sync() as env:
        env.reset()
        names = [tool.name for tool in env.list_tools()]
        result = env.call_tool("step", action=1)
    print(json.dumps({"names": names, "type": type(result).__name__,
                      "keys": sorted(result) if isinstance(result, dict) else None}))
    """
    found = run_client(openenv_packages, atari_base, script)
    assert {"reset", "step", "state"} <= set(found["names"]), found
    assert found["type"] == "dict", found


# -- chess ---------------------------------------------------------------------------------


CHESS_OBSERVATION = """
from chess_env import ChessAction, ChessEnv

def seen(result):
    o = result.observation
    return {"type": type(o).__name__, "fen": o.fen, "legal_moves": o.legal_moves,
            "is_check": o.is_check, "result": o.result, "reward": result.reward,
            "done": result.done}

def state_of(env):
    state = env.state()
    return {"type": type(state).__name__, **state.model_dump()}
"""


@pytest.fixture(scope="module")
def chess_base() -> Iterator[str]:
    with openenv_server("chess", "--engine", "builtin", "--depth", "1") as base:
        yield base


def test_chess_env_plays_against_the_engine(openenv_packages: Path, chess_base: str) -> None:
    script = """
    with ChessEnv(base_url=BASE).sync() as env:
        reset = seen(env.reset())
        moved = seen(env.step(ChessAction(move="e2e4")))
        state = state_of(env)
    print(json.dumps({"reset": reset, "moved": moved, "state": state}))
    """
    found = run_client(openenv_packages, chess_base, CHESS_OBSERVATION, script)
    reset, moved, state = found["reset"], found["moved"], found["state"]
    assert reset["type"] == "ChessObservation"
    assert reset["fen"] == START_FEN
    assert len(reset["legal_moves"]) == 20 and "e2e4" in reset["legal_moves"]
    assert (reset["is_check"], reset["result"], reset["done"]) == (False, None, False)
    assert moved["fen"] != START_FEN
    assert " w " in moved["fen"], moved["fen"]  # the engine replied: White to move
    assert moved["legal_moves"] and moved["done"] is False
    assert state["type"] == "ChessState"
    assert isinstance(state["episode_id"], str) and state["episode_id"]
    assert state["fen"] == moved["fen"]
    assert state["current_player"] == "white"
    assert isinstance(state["move_history"], list) and state["move_history"][0] == "e2e4"
    assert isinstance(state["step_count"], int) and state["step_count"] >= 1


def test_chess_an_illegal_move_is_a_penalised_step_that_changes_nothing(
    openenv_packages: Path, chess_base: str
) -> None:
    """As on OpenEnv's own chess server: no error (a training loop goes on), a reward of
    -0.1 (``--illegal-penalty``), the board as it was; and the game goes on."""
    script = """
    with ChessEnv(base_url=BASE).sync() as env:
        env.reset()
        moved = seen(env.step(ChessAction(move="e2e4")))
        before = state_of(env)
        illegal = seen(env.step(ChessAction(move="e2e5")))
        after = state_of(env)
        again = seen(env.step(ChessAction(move=moved["legal_moves"][0])))
    print(json.dumps({"before": before, "illegal": illegal, "after": after, "again": again}))
    """
    found = run_client(openenv_packages, chess_base, CHESS_OBSERVATION, script)
    before, illegal, after = found["before"], found["illegal"], found["after"]
    assert illegal["reward"] == pytest.approx(-0.1) and illegal["done"] is False
    assert illegal["fen"] == before["fen"] == after["fen"]
    assert after["move_history"] == before["move_history"]
    assert found["again"]["fen"] != before["fen"]  # and it goes on


# -- coding --------------------------------------------------------------------------------


def test_coding_env_runs_code(openenv_packages: Path) -> None:
    ensure_installed("ensure_debian.sh", "bubblewrap", "bubblewrap", "bwrap")
    script = """
    from coding_env import CodeAction, CodingEnv

    def seen(result):
        o = result.observation
        return {"type": type(o).__name__, "stdout": o.stdout, "stderr": o.stderr,
                "exit_code": o.exit_code}

    with CodingEnv(base_url=BASE).sync() as env:
        reset = seen(env.reset())
        answer = seen(env.step(CodeAction(code="print(6 * 7)")))
        failed = seen(env.step(CodeAction(code="1/0")))
        state = env.state()
    print(json.dumps({"reset": reset, "answer": answer, "failed": failed,
                      "state": {"type": type(state).__name__, **state.model_dump()}}))
    """
    with openenv_server("coding") as base:
        found = run_client(openenv_packages, base, script)
    assert found["reset"] == {"type": "CodeObservation", "stdout": "", "stderr": "", "exit_code": 0}
    assert (found["answer"]["stdout"], found["answer"]["exit_code"]) == ("42\n", 0)
    failed, state = found["failed"], found["state"]
    assert failed["exit_code"] != 0 and "ZeroDivisionError" in failed["stderr"], failed
    assert state["type"] == "CodeState"
    assert isinstance(state["episode_id"], str) and state["episode_id"]
    assert state["step_count"] == 2
    assert state["last_exit_code"] == failed["exit_code"]


# -- openspiel -----------------------------------------------------------------------------

OPENSPIEL_OBSERVATION = """
from openspiel_env import OpenSpielAction, OpenSpielEnv

def seen(result):
    o = result.observation
    return {"type": type(o).__name__, "info_state": o.info_state,
            "floats": all(type(v) is float for v in o.info_state),
            "legal_actions": o.legal_actions, "game_phase": o.game_phase,
            "current_player_id": o.current_player_id,
            "opponent_last_action": o.opponent_last_action,
            "reward": result.reward, "done": result.done}

def state_of(env):
    state = env.state()
    return {"type": type(state).__name__, **state.model_dump()}
"""


def _assert_initial(reset: dict[str, Any], size: int) -> None:
    assert reset["type"] == "OpenSpielObservation"
    assert len(reset["info_state"]) == size and reset["floats"], reset
    assert reset["legal_actions"] and all(type(a) is int for a in reset["legal_actions"])
    assert (reset["game_phase"], reset["current_player_id"]) == ("initial", 0)
    assert reset["done"] is False


def test_openspiel_env_plays_tic_tac_toe(openenv_packages: Path) -> None:
    script = """
    with OpenSpielEnv(base_url=BASE).sync() as env:
        reset = seen(env.reset())
        step = seen(env.step(OpenSpielAction(action_id=reset["legal_actions"][0])))
        state = state_of(env)
    print(json.dumps({"reset": reset, "step": step, "state": state}))
    """
    with openenv_server("openspiel", "--game", "tic_tac_toe") as base:
        found = run_client(openenv_packages, base, OPENSPIEL_OBSERVATION, script)
    reset, step, state = found["reset"], found["step"], found["state"]
    _assert_initial(reset, 27)
    assert reset["legal_actions"] == list(range(9))
    assert step["game_phase"] in ("playing", "terminal"), step
    assert type(step["opponent_last_action"]) is int, step  # the opponent replied
    assert step["opponent_last_action"] != reset["legal_actions"][0]
    assert reset["legal_actions"][0] not in step["legal_actions"]
    assert state["type"] == "OpenSpielState" and state["game_name"] == "tic_tac_toe"
    assert isinstance(state["episode_id"], str) and state["step_count"] == 1


def test_openspiel_env_plays_catch_to_the_end(openenv_packages: Path) -> None:
    script = """
    with OpenSpielEnv(base_url=BASE).sync() as env:
        reset = seen(env.reset())
        steps = []
        last = reset
        while not last["done"] and len(steps) < 50:
            last = seen(env.step(OpenSpielAction(action_id=last["legal_actions"][0])))
            steps.append(last)
        state = state_of(env)
    print(json.dumps({"reset": reset, "steps": steps, "state": state}))
    """
    with openenv_server("openspiel", "--game", "catch") as base:
        found = run_client(openenv_packages, base, OPENSPIEL_OBSERVATION, script)
    reset, steps, state = found["reset"], found["steps"], found["state"]
    _assert_initial(reset, 50)
    assert steps, found
    *before, last = steps
    assert all(not s["done"] and s["game_phase"] == "playing" for s in before), before
    assert last["done"] is True and last["game_phase"] == "terminal", last
    assert last["reward"] in (-1.0, 1.0), last
    assert state["type"] == "OpenSpielState" and state["game_name"] == "catch"
    assert state["step_count"] == len(steps)


# -- echo (an MCP environment of OpenEnv's) ------------------------------------------------


def test_echo_env_lists_and_calls_its_tools(openenv_packages: Path) -> None:
    script = """
    from echo_env import EchoEnv

    with EchoEnv(base_url=BASE).sync() as env:
        env.reset()
        names = [tool.name for tool in env.list_tools()]
        echoed = env.call_tool("echo_message", message="Hello!")
        measured = env.call_tool("echo_with_length", message="Test")
        error = error_of(lambda: env.call_tool("no_such_tool", message="x"))
        again = env.call_tool("echo_message", message="still here")
    print(json.dumps({"names": names, "echoed": echoed, "measured": measured,
                      "error": error, "again": again}))
    """
    with openenv_server("echo") as base:
        found = run_client(openenv_packages, base, script)
    assert {"echo_message", "echo_with_length"} <= set(found["names"]), found
    assert found["echoed"] == "Hello!"
    assert found["measured"] == {"message": "Test", "length": 4}
    error = found["error"]
    assert error is not None, "an unknown tool was called"
    assert "no_such_tool" in error["message"], error
    assert found["again"] == "still here"

"""Two players in two processes at one game over Streamable HTTP, with the stock ``mcp`` SDK.

``openenv-mcp serve openspiel --game tic_tac_toe --seats all --http`` runs as its own
process. Player A (a Python process that imports nothing but ``mcp``) starts the game
with every seat, hands player_1's handle to player B (another such process) through a
file, and plays player_0; B plays player_1 with that handle alone. Each step waits for
the player's next turn, so neither polls. Both print their final return: they sum to
zero, and each saw the other's moves.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.servers import ROOT, http_server

pytestmark = pytest.mark.integration

#: One player: ``python -c PLAYER URL a|b HANDOFF``. Only the ``mcp`` SDK: what any
#: program in any harness has.
PLAYER = textwrap.dedent(
    """
    import json, os, sys, time
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    url, role, handoff = sys.argv[1], sys.argv[2], sys.argv[3]

    async def call(session, tool, **args):
        result = await session.call_tool(tool, args)
        if result.is_error:
            return None, result.content[0].text
        return result.structured_content, None

    async def main():
        async with streamable_http_client(url) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                if role == "a":
                    answer, error = await call(session, "reset", seed=3, seats="all")
                    assert error is None, error
                    seats = answer["seats"]
                    assert answer["seat"] == "player_0" and set(seats) == {"player_0", "player_1"}
                    with open(handoff + ".tmp", "w") as f:
                        f.write(seats["player_1"])
                    os.replace(handoff + ".tmp", handoff)
                    seat = seats["player_0"]
                else:
                    deadline = time.monotonic() + 60
                    while not os.path.exists(handoff):
                        assert time.monotonic() < deadline, "no handle came"
                        await anyio.sleep(0.05)
                    seat = open(handoff).read()
                    answer, error = await call(session, "state", seat=seat, wait=True)
                    assert error is None, error
                seen, played = [], []
                while not answer["terminated"]:
                    info = answer["info"]
                    if info["your_turn"]:
                        legal = info["legal_actions"]
                        action = legal[0] if role == "a" else legal[-1]
                        answer, error = await call(session, "step", seat=seat, action=action)
                        if error is None:
                            played.append(action)
                    else:
                        answer, error = await call(session, "state", seat=seat, wait=True)
                    if error is not None:
                        assert error.startswith("NotYourTurn: "), error
                        answer, error = await call(session, "state", seat=seat)
                        assert error is None, error
                    seen += answer["info"]["moves"]
                print(json.dumps({
                    "seat": answer["info"]["seat"],
                    "return": answer["episode_return"],
                    "returns": answer["info"]["returns"],
                    "moves": seen,
                    "played": played,
                }))

    anyio.run(main)
    """
)


def test_two_processes_play_one_game_over_http(tmp_path: Path) -> None:
    handoff = tmp_path / "player_1.handle"
    with http_server("openspiel", "--game", "tic_tac_toe", "--seats", "all") as url:
        procs = {
            role: subprocess.Popen(
                [sys.executable, "-c", PLAYER, url, role, str(handoff)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=ROOT,
                text=True,
            )
            for role in ("a", "b")
        }
        outs: dict[str, dict[str, object]] = {}
        try:
            for role, proc in procs.items():
                out, err = proc.communicate(timeout=180)
                assert proc.returncode == 0, f"player {role} failed:\n{err[-3000:]}"
                outs[role] = json.loads(out.strip().splitlines()[-1])
        finally:
            for proc in procs.values():
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
    a, b = outs["a"], outs["b"]
    assert a["seat"] == "player_0" and b["seat"] == "player_1"
    assert isinstance(a["return"], float) and isinstance(b["return"], float)
    assert a["return"] + b["return"] == 0
    assert a["returns"] == b["returns"] == [a["return"], b["return"]]
    # Each was told the other's moves as played (a state answer may repeat what the
    # next step answer tells again; tic-tac-toe never plays a cell twice).
    for me, other, agent in ((a, b, "player_1"), (b, a, "player_0")):
        told = [m["action"] for m in me["moves"] if m["agent"] == agent]  # type: ignore[union-attr]
        assert list(dict.fromkeys(told)) == other["played"]
    assert len(a["played"]) + len(b["played"]) >= 5  # type: ignore[arg-type]

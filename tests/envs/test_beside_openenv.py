"""OpenEnv's own env packages installed beside ours: every bundled env still serves.

OpenEnv's env distributions (``openenv-atari-env``, ``openenv-chess-env``,
``openenv-coding_env``, ``openenv-echo-env``, ``openenv-openspiel-env``: what its typed
clients, and so TRL's OpenEnv examples, import from) install the top-level packages
``atari_env``, ``chess_env``, ``coding_env``, ``echo_env`` and ``openspiel_env``. Ours
live under ``openenv_mcp_envs``, so both install into one environment. The packages are
OpenEnv's, vendored byte for byte (``tests/openenv_packages``), installed by pip as a user
would (the ``openenv_packages`` fixture: a target folder put on ``PYTHONPATH``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from openenv_mcp.registry import env_names
from tests.servers import CLI, with_pythonpath

pytestmark = pytest.mark.integration

#: What each bundled env is served with, and one action it takes. The openenv bridge
#: serves OpenEnv's own echo environment, from the package installed beside ours.
SERVED: dict[str, tuple[list[str], object]] = {
    "atari": ([], 1),
    "chess": ([], "e2e4"),
    "coding": ([], "print(6 * 7)"),
    "echo": ([], "hello"),
    "gymnasium": (["--id", "CartPole-v1"], 0),
    "openenv": (
        ["--env", "echo_env.server.echo_environment:EchoEnvironment"],
        {"tool": "echo_message", "arguments": {"message": "hi"}},
    ),
    "openspiel": (["--game", "tic_tac_toe"], 4),
    "reasoning": ([], "42"),
    "trading": ([], None),  # all in cash: zeros of its action space
}


def test_every_bundled_env_is_covered() -> None:
    assert set(env_names()) >= set(SERVED)


def test_openenvs_packages_are_theirs_and_ours_are_ours(openenv_packages: Path) -> None:
    probe = (
        "import json, atari_env, chess_env, coding_env, echo_env, openspiel_env\n"
        "from atari_env import AtariEnv, AtariAction\n"
        "from echo_env import EchoEnv\n"
        "import openenv_mcp_envs.atari, trading_env\n"
        "from openenv_mcp.registry import get_env_class\n"
        "print(json.dumps({\n"
        "  'theirs': [m.__file__ for m in (atari_env, chess_env, coding_env, echo_env,"
        " openspiel_env)],\n"
        "  'client': AtariEnv.__mro__[1].__module__,\n"
        "  'ours': get_env_class('atari').__module__,\n"
        "}))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-P", "-c", probe],
        capture_output=True,
        text=True,
        timeout=120,
        env=with_pythonpath(openenv_packages),
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    found = json.loads(proc.stdout)
    assert all(path.startswith(str(openenv_packages)) for path in found["theirs"]), found
    assert found["client"] == "openenv.core.env_client"
    assert found["ours"] == "openenv_mcp_envs.atari.env"


@pytest.mark.parametrize("name", sorted(SERVED))
def test_each_bundled_env_serves_beside_openenvs_packages(
    openenv_packages: Path, name: str
) -> None:
    """``openenv-mcp serve NAME --stdio``, as a harness starts it, with OpenEnv's packages
    importable first: it answers the handshake, resets and steps."""
    options, action = SERVED[name]
    command = [*CLI, "serve", name, "--stdio", "--log-level", "WARNING", *options]
    script = (
        "import json, sys\n"
        "import atari_env, echo_env  # OpenEnv's, imported first in the client too\n"
        "from openenv_mcp import MCPEnvClient\n"
        "command, action = json.loads(sys.argv[1]), json.loads(sys.argv[2])\n"
        "with MCPEnvClient(command).sync() as client:\n"
        "    first, info = client.reset(seed=3)\n"
        "    if action is None:\n"
        "        action = client.action_space.sample() * 0\n"
        "    obs, reward, terminated, truncated, info = client.step(action)\n"
        "    print(json.dumps({'tools': sorted(client.tool_names), 'reward': reward}))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-P", "-c", script, json.dumps(command), json.dumps(action)],
        capture_output=True,
        text=True,
        timeout=300,
        env=with_pythonpath(openenv_packages),
    )
    assert proc.returncode == 0, proc.stdout[-1000:] + proc.stderr[-3000:]
    answer = json.loads(proc.stdout.strip().splitlines()[-1])
    assert {"reset", "step", "state"} <= set(answer["tools"]), answer
    assert isinstance(answer["reward"], float)

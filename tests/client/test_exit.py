"""Scripts that leave their clients open still exit, and leave no server behind.

Gym and SB3 scripts routinely skip ``close()``, and an uncaught exception skips it
too. Each case here is a real script in its own interpreter: it opens one kind of
sync client (``MCPGymEnv``, ``.sync()``, ``MCPVectorEnv``) over stdio or HTTP,
steps, and ends without closing (normally, or by raising). The script must exit
within a bounded wait, every stdio server it started must be gone (reaped, not an
orphan or a zombie) the moment it has, and its episodes must have been closed on
the server (their recordings end ``closed``).
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from openenv_mcp.client import MCPGymEnv
from openenv_mcp.data.recording import iter_recordings
from tests.servers import CLI, ROOT, http_server, memory_server

#: Long enough for a loaded CI machine to start Python and a server; a hang is forever.
EXIT_BOUND = 120

SCRIPT = textwrap.dedent(
    """
    import json, os, sys
    from openenv_mcp.client import MCPEnvClient, MCPGymEnv, MCPVectorEnv

    kind, ending, target = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    if kind == "gym":
        env = MCPGymEnv(target)
        env.reset(seed=0)
        env.step(env.action_space.sample())
    elif kind == "sync":
        env = MCPEnvClient(target).sync()
        env.reset(seed=0)
        env.step(env.action_space.sample())
    else:
        env = MCPVectorEnv(target, num_envs=2)
        env.reset(seed=0)
        env.step(env.action_space.sample())
    if ending == "fork":
        # A forked child that exits normally runs the exit hooks too: it must not
        # wait on (or close) the parent's client, which keeps working after it.
        child = os.fork()
        if child == 0:
            sys.exit(0)
        os.waitpid(child, 0)
        env.step(env.action_space.sample())
    print("stepped", flush=True)
    if ending == "raise":
        raise RuntimeError("the script fails with its client open")
    """
)

KINDS = ["gym", "sync", "vector"]
ENDINGS = ["forget", "raise"]


def run_script(tmp_path: Path, kind: str, ending: str, target: object) -> None:
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    try:
        done = subprocess.run(
            [sys.executable, str(script), kind, ending, json.dumps(target)],
            capture_output=True,
            text=True,
            timeout=EXIT_BOUND,
            cwd=ROOT,
        )
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(
            f"a {kind} script that did not close its client did not exit in {EXIT_BOUND}s"
        ) from exc
    assert "stepped" in done.stdout, done.stderr[-3000:]
    if ending == "raise":
        assert done.returncode == 1
        assert "RuntimeError: the script fails with its client open" in done.stderr
    else:
        assert done.returncode == 0, done.stderr[-3000:]


def assert_closed_on_server(records: Path, episodes: int) -> None:
    ends = [r.end["status"] if r.end else None for r in iter_recordings(records)]
    assert ends == ["closed"] * episodes


def stdio_target(tmp_path: Path, records: Path) -> tuple[list[str], Path]:
    """A stdio server command that writes its own pid (``exec`` keeps the pid)."""
    pids = tmp_path / "server.pids"
    serve = [*CLI, "serve", "echo", "--stdio", "--log-level", "WARNING", "--record", str(records)]
    return ["sh", "-c", 'echo $$ >> "$0"; exec "$@"', str(pids), *serve], pids


@pytest.mark.integration
@pytest.mark.parametrize(
    ("kind", "ending"), [*((k, e) for k in KINDS for e in ENDINGS), ("gym", "fork")]
)
def test_stdio_script_exits_and_reaps_its_server(kind: str, ending: str, tmp_path: Path) -> None:
    records = tmp_path / "records"
    target, pids = stdio_target(tmp_path, records)
    run_script(tmp_path, kind, ending, target)
    (pid,) = [int(p) for p in pids.read_text().split()]
    # Gone as the script exits: stopped and reaped by it, not left to init (nor a zombie).
    assert not Path(f"/proc/{pid}").exists(), f"server {pid} outlived its script"
    assert_closed_on_server(records, episodes=2 if kind == "vector" else 1)


@pytest.fixture(scope="module")
def http_records(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    records = tmp_path_factory.mktemp("records")
    with http_server("echo", "--record", str(records)) as url:
        yield url, records


@pytest.mark.integration
@pytest.mark.parametrize("ending", ENDINGS)
@pytest.mark.parametrize("kind", KINDS)
def test_http_script_exits_and_closes_its_episodes(
    kind: str, ending: str, tmp_path: Path, http_records: tuple[str, Path]
) -> None:
    url, records = http_records
    before = {r.path for r in iter_recordings(records)}
    run_script(tmp_path, kind, ending, url)
    ours = [r for r in iter_recordings(records) if r.path not in before]
    assert [r.end["status"] if r.end else None for r in ours] == ["closed"] * (
        2 if kind == "vector" else 1
    )


def test_a_dropped_env_stops_its_loop() -> None:
    """An env collected without ``close()`` closes its episode and its loop (which runs
    on the caller's thread: no thread is left behind either)."""
    threads = threading.active_count()
    env = MCPGymEnv(memory_server("echo"))
    env.reset(seed=0)
    loop = env.client.loop
    del env
    gc.collect()
    assert loop.stopped and loop._loop.is_closed()
    assert threading.active_count() == threads

"""Inspect AI, the eval harness, plays our server as its users run it: ``react()`` (one MCP
connection per sample) over stdio and Streamable HTTP, ``basic_agent()`` (a new stdio
server per tool call) through the episode host, with Inspect's mock model calling the
tools and no episode_id after reset. Each eval runs in a process of its own
(``tests/inspect_play.py``); its log is read back with ``inspect_ai.log.read_eval_log``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.log import EvalLog, read_eval_log
from inspect_ai.model import ChatMessageTool, ContentImage

from openenv_mcp.server.transports._host import HOST_DIR_ENV
from tests.servers import CLI, ROOT, episode_host_dir, episode_hosts, http_server

pytestmark = pytest.mark.integration

#: Seconds an eval may take, its servers' starts included.
WAIT = 240
#: Each sample's calls: a reset, then steps and a look, none naming its episode.
PLAY: list[tuple[str, dict[str, Any]]] = [
    ("reset", {"seed": 0}),
    ("step", {"action": "{sample}-a"}),
    ("step", {"action": "{sample}-b"}),
    ("state", {}),
]


def stdio(*options: str) -> dict[str, Any]:
    return {
        "command": [*CLI, "serve", "echo", "--stdio", "--log-level", "WARNING", *options],
        "cwd": str(ROOT),
    }


def play(
    tmp_path: Path,
    agent: str,
    server: dict[str, Any],
    *,
    samples: int = 1,
    max_samples: int | None = None,
    plan: list[tuple[str, dict[str, Any]]] = PLAY,
    env: dict[str, str] | None = None,
) -> EvalLog:
    """Run one eval (tests/inspect_play.py) and read its log back; no process may be left."""
    spec = {
        "agent": agent,
        "server": server,
        "samples": samples,
        "max_samples": max_samples or samples,
        "plan": plan,
        "log_dir": str(tmp_path / "logs"),
    }
    # Inspect keeps traces and caches in the user's data directories: this test's own.
    isolated = {
        **os.environ,
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        **(env or {}),
    }
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "inspect_play.py"), json.dumps(spec)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=isolated,
        cwd=tmp_path,
        start_new_session=True,  # its servers go with it on a timeout
    )
    try:
        out, err = proc.communicate(timeout=WAIT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate(timeout=30)
        raise AssertionError(f"the eval took over {WAIT}s: {err.decode()[-3000:]}") from None
    assert proc.returncode == 0, err.decode()[-3000:]
    answer = json.loads(out.decode().strip().splitlines()[-1])
    assert not answer["left"], f"processes left behind: {answer['left']}"
    log = read_eval_log(answer["log"])
    assert log.status == "success", log.error
    assert log.samples is not None and len(log.samples) == samples
    return log


def tool_results(log: EvalLog) -> dict[str, list[ChatMessageTool]]:
    """Each sample's tool results (by its input), submit aside."""
    assert log.samples is not None
    return {
        str(s.input): [
            m for m in s.messages if isinstance(m, ChatMessageTool) and m.function != "submit"
        ]
        for s in log.samples
    }


def assert_played(log: EvalLog) -> None:
    """Every sample reset, stepped twice and looked, each call answered (no error), in an
    episode of its own: no sample saw another's messages."""
    episodes = set()
    for sample, results in tool_results(log).items():
        assert [m.function for m in results] == ["reset", "step", "step", "state"], sample
        for m in results:
            assert m.error is None, f"{sample}: {m.function}: {m.error.message}"
        reset, first, second, state = (m.text for m in results)
        assert reset.startswith("New episode of echo"), reset
        assert first.startswith(f"Step 1 ({sample}-a)"), first
        assert second.startswith(f"Step 2 ({sample}-b)"), second
        assert "at step 2" in state and f"'{sample}-b'" in state, state
        episodes.add(state.split()[1])
    assert len(episodes) == len(tool_results(log))


@pytest.fixture
def host_dir() -> Iterator[Path]:
    with episode_host_dir() as path:
        yield path


# -- react(): one connection per sample ---------------------------------------------------


def test_react_over_stdio_keeps_frames_and_samples_apart(tmp_path: Path) -> None:
    log = play(tmp_path, "react", stdio("--frame"), samples=4)
    assert_played(log)
    for results in tool_results(log).values():
        step = results[1]
        assert any(isinstance(c, ContentImage) for c in step.content), step.content  # type: ignore[union-attr]


def test_react_over_http_plays_without_an_episode_id(tmp_path: Path) -> None:
    """Inspect holds one MCP session per sample: a call without an episode_id means that
    session's default episode (before: EpisodeRequired on every step)."""
    with http_server("echo") as url:
        log = play(tmp_path, "react", {"url": url}, samples=4)
    assert_played(log)


# -- basic_agent(): a new stdio server per tool call ----------------------------------------


def test_basic_agent_without_the_host_is_told_what_happened(tmp_path: Path) -> None:
    """Each call is a new process: a step without an id has no default, a step with the
    id finds nothing; both say the client seems to start a server per call, and what to do."""
    plan: list[tuple[str, dict[str, Any]]] = [
        ("reset", {"seed": 0}),
        ("step", {"action": "{sample}-a"}),
        ("step", {"action": "{sample}-b", "episode_id": "{episode}"}),
    ]
    log = play(tmp_path, "basic", stdio(), plan=plan)
    ((reset, alone, named),) = tool_results(log).values()
    assert reset.error is None
    assert alone.error is not None and named.error is not None
    told = alone.error.message
    assert told.startswith("ResetNeeded: no episode yet"), told
    assert "start a new server for each call" in told and "--episode-host" in told
    assert "episode_id from reset's answer" in told
    told = named.error.message
    assert told.startswith("UnknownEpisode:"), told
    assert "made no episode since it started" in told and "--episode-host" in told


#: The episode host keys callers to the harness run once server/transports/_host.py sends the run
#: (server/transports/_harness.py's hello) from the front and serves each connection within it
#: (EpisodeTable.joined): until then each per-call process is a caller of its own.


def test_basic_agent_plays_through_the_episode_host(tmp_path: Path, host_dir: Path) -> None:
    """One sample at a time: every call a new process, and no episode_id to copy."""
    log = play(
        tmp_path,
        "basic",
        stdio("--episode-host"),
        samples=2,
        max_samples=1,
        env={HOST_DIR_ENV: str(host_dir)},
    )
    for sample, results in tool_results(log).items():
        assert [m.function for m in results] == ["reset", "step", "step", "state"], sample
        for m in results:
            assert m.error is None, f"{sample}: {m.function}: {m.error.message}"
        # each sample's reset restarts the run's episode: its steps count from 1 again
        assert results[1].text.startswith(f"Step 1 ({sample}-a)"), results[1].text
        assert results[2].text.startswith(f"Step 2 ({sample}-b)"), results[2].text
        assert f"'{sample}-b'" in results[3].text
    assert len(episode_hosts(host_dir)) == 1


def test_concurrent_basic_agent_samples_never_cross(tmp_path: Path, host_dir: Path) -> None:
    """Samples at once start servers from one process: a call without an episode_id
    cannot be told apart, so it is refused (never sent to another sample's game)."""
    log = play(
        tmp_path,
        "basic",
        stdio("--episode-host"),
        samples=3,
        env={HOST_DIR_ENV: str(host_dir)},
    )
    for sample, results in tool_results(log).items():
        assert results[0].error is None
        steps = 0
        for m in results[1:]:
            if m.error is not None:
                assert m.error.message.startswith("EpisodeRequired:"), m.error.message
                assert "several server processes at once" in m.error.message
            elif m.function == "step":  # before the run was seen crowded: its own game only
                steps += 1
                assert m.text.startswith(f"Step {steps} ({sample}-"), m.text
            else:
                assert f"at step {steps}:" in m.text, m.text

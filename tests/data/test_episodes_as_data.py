"""Episodes as data, as a user runs it: Atari recorded over real stdio (SIGKILL included),
replayed by the CLI, exported to a real Minari dataset and loaded with ``minari``, and
collected by the CLI with a policy and with a scripted agent harness."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from openenv_mcp.recording import iter_recordings, read_recording
from tests.servers import CLI, INITIALIZE, ROOT, RawStdio, call

pytestmark = pytest.mark.integration

HARNESS = [sys.executable, str(ROOT / "tests" / "scripted_harness.py")]


def cli(*args: str, env: dict[str, str] | None = None, check: bool = True) -> Any:
    done = subprocess.run(
        [*CLI, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **(env or {})},
    )
    if check:
        assert done.returncode == 0, done.stdout + done.stderr
    return done


def answered(server: RawStdio, request_id: int) -> dict[str, Any]:
    message = server.receive()
    assert message is not None and message["id"] == request_id, message
    return message


def test_a_server_killed_mid_episode_leaves_every_answered_step_readable(tmp_path: Path) -> None:
    flags = ["--game", "breakout", "--record", str(tmp_path)]
    flags += ["--reward", "harness_examples.rewards:breakout"]
    server = RawStdio([*CLI, "serve", "atari", "--stdio", *flags])
    try:
        server.send(INITIALIZE)
        server.receive()
        server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        server.send(call(1, "reset", {"seed": 5, "frames": "none"}))
        answered(server, 1)
        for i in range(2, 40):
            server.send(call(i, "step", {"action": i % 4, "frames": "none"}))
            answered(server, i)
        server.proc.send_signal(signal.SIGKILL)  # no chance to write anything more
        server.proc.wait(timeout=30)
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
    (recording,) = iter_recordings(tmp_path)
    assert not recording.complete and recording.problem == ""
    assert [s.index for s in recording.steps] == list(range(1, 39))  # every answered step
    assert recording.steps[-1].rewards is not None
    # The reward is the repository's (harness_examples, not installed): a recording's
    # references import nothing from the working directory unless allowed by name.
    replayed = cli("replay", str(recording.path), "--allow-module", "harness_examples.rewards")
    assert "replayed 38 steps (an incomplete recording: the server stopped)" in replayed.stdout
    # Cut off by the kill, the episode is data all the same: exported truncated at its
    # last answered step, unless --finished-only leaves it out.
    out = tmp_path / "out.jsonl"
    exported = cli("export", str(tmp_path), "--format", "jsonl", str(out))
    assert "exported 1 episodes (38 steps)" in exported.stdout
    assert json.loads(out.read_text())["status"] is None  # no end record
    only = cli("export", str(tmp_path), "--format", "jsonl", str(out), "--finished-only")
    assert "exported 0 episodes" in only.stdout and "1 incomplete" in only.stdout


def test_record_replay_and_a_minari_dataset_the_real_package_loads(tmp_path: Path) -> None:
    minari = pytest.importorskip("minari", reason="the [data] extra installs minari")
    record, root = tmp_path / "rec", tmp_path / "minari"
    collected = cli(
        "collect",
        "atari",
        "--out",
        str(record),
        "--episodes",
        "3",
        "--concurrency",
        "2",
        "--game",
        "breakout",
        "--workers",
        "2",
        "--no-record-video",
    )
    assert "episodes (this run)              3" in collected.stdout
    replayed = cli("replay", str(record / "episodes"))
    assert replayed.stdout.count("all match exactly") == 3, replayed.stdout
    # Tampering is found: one step's reward changed.
    victim = sorted((record / "episodes").glob("*.jsonl"))[0]
    lines = victim.read_text().splitlines()
    step = json.loads(lines[5])
    step["reward"] += 1
    lines[5] = json.dumps(step)
    tampered = tmp_path / "tampered.jsonl"
    tampered.write_text("\n".join(lines) + "\n")
    bad = cli("replay", str(tampered), check=False)
    assert bad.returncode == 1 and "differs at step 5: reward" in bad.stdout
    name = "openenv/breakout-random-v0"
    exported = cli(
        "export",
        str(record / "episodes"),
        "--format",
        "minari",
        name,
        env={"MINARI_DATASETS_PATH": str(root)},
    )
    assert "exported 3 episodes" in exported.stdout
    os.environ["MINARI_DATASETS_PATH"] = str(root)
    try:
        dataset = minari.load_dataset(name)
    finally:
        del os.environ["MINARI_DATASETS_PATH"]
    recordings = list(iter_recordings(record / "episodes"))  # in the order exported
    assert dataset.total_episodes == 3
    assert dataset.total_steps == sum(len(r.steps) for r in recordings)
    assert dataset.observation_space == recordings[0].observation_space
    assert dataset.action_space == recordings[0].action_space
    for episode in dataset.iterate_episodes():
        recording = recordings[int(episode.id)]
        assert len(episode.observations) == len(recording.steps) + 1
        assert np.array_equal(episode.observations[0], recording.observation)
        for t in (1, len(recording.steps) // 2, len(recording.steps)):  # frames, losslessly
            assert np.array_equal(episode.observations[t], recording.steps[t - 1].observation)
        assert list(episode.actions) == [s.action for s in recording.steps]
        assert np.allclose(episode.rewards, [s.reward for s in recording.steps])
        assert bool(episode.terminations[-1]) == recording.steps[-1].terminated
        assert list(episode.infos["lives"])[-1] == recording.steps[-1].info["lives"]


def test_collect_with_a_scripted_harness_in_parallel_and_resume(tmp_path: Path) -> None:
    out = tmp_path / "agents"
    command = " ".join([*HARNESS, "{mcp_config}", "--repeat", "8"])
    first = cli(
        "collect",
        "atari",
        "--out",
        str(out),
        "--episodes",
        "2",
        "--concurrency",
        "2",
        "--agent",
        command,
        "--game",
        "breakout",
    )
    assert "episodes (this run)              2" in first.stdout
    assert "episode" in first.stderr and "100%" in first.stderr  # the progress bar
    # The agent profile writes a video of each episode beside its recording, for people.
    (video,) = (out / "episodes" / "agent-00000").glob("*.mp4")
    assert video.stat().st_size > 1000
    again = cli(
        "collect",
        "atari",
        "--out",
        str(out),
        "--episodes",
        "4",
        "--concurrency",
        "2",
        "--agent",
        command,
        "--game",
        "breakout",
        "--json",
    )
    summary = json.loads(again.stdout)
    assert summary["episodes"] == 2 and summary["skipped_already_collected"] == 2
    assert summary["collected_in_all"] == 4 and summary["finished"] == 2
    entries = [json.loads(line) for line in (out / "collect.jsonl").read_text().splitlines()]
    assert sorted(e["index"] for e in entries) == [0, 1, 2, 3]
    for entry in entries:
        (path,) = entry["recordings"]
        recording = read_recording(path)
        assert recording.finished and recording.start["seed"] == entry["seed"]
        assert recording.start["config"]["game"] == "breakout"
        assert recording.steps[0].call == {"tool": "step", "arguments": entry_args(recording)}
    config = json.loads((out / "mcp" / "agent-00000.json").read_text())
    assert "--profile" in config["mcpServers"]["openenv"]["args"]
    replayed = cli("replay", str(out / "episodes"))
    assert replayed.stdout.count("all match exactly") == 4


def entry_args(recording: Any) -> dict[str, Any]:
    return dict(recording.steps[0].call["arguments"])


def test_collect_with_a_python_policy(tmp_path: Path) -> None:
    done = cli(
        "collect",
        "echo",
        "--out",
        str(tmp_path),
        "--episodes",
        "5",
        "--concurrency",
        "3",
        "--policy",
        "tests.policies:say_bye_soon",
        "--json",
    )
    summary = json.loads(done.stdout)
    assert summary["episodes"] == 5 and summary["finished"] == 5
    assert summary["mean_steps"] == 3
    bad = cli("collect", "echo", "--out", str(tmp_path / "x"), "--agent", "true", check=False)
    assert bad.returncode == 2 and "{mcp_config}" in bad.stderr

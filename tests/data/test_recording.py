"""Every episode recorded (serve --record): what a file holds, how it ends, how it reads
back, replays and exports. In memory, with the echo env; Atari, SIGKILL, the CLI and the
real Minari package are in tests/data/test_episodes_as_data.py."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import numpy as np
import pytest
from fastmcp import Client

from openenv_mcp.client import MCPEnvClient
from openenv_mcp.data.export import export_jsonl
from openenv_mcp.errors import ArgumentError, RecordingFailed, ResetNeeded
from openenv_mcp.recording import (
    finish_videos,
    iter_frames,
    iter_recordings,
    read_recording,
    replay,
)
from openenv_mcp.server import ServerSettings, build_server, get_app
from tests.servers import CLI, ROOT, free_port, http_server

pytestmark = pytest.mark.anyio


def recorded_server(directory: Path, **options: Any) -> Any:
    settings = ServerSettings(
        record=str(directory),
        reward=["tests.rewards_for_tests:echo_with_trajectory"],
        **options.pop("settings", {}),
    )
    return build_server("echo", settings=settings, **options)


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_an_episode_is_recorded_as_it_happens_and_ends_with_why(tmp_path: Path) -> None:
    with anyio.fail_after(60):
        server = recorded_server(tmp_path)
        async with Client(server) as c:
            reset = (await c.call_tool("reset", {"seed": 7})).structured_content
            path = Path(reset["recording"])
            await c.call_tool("step", {"action": "hello please"})
            # Flushed per step: the file holds the step before the next call.
            assert [r["kind"] for r in lines(path)] == ["start", "step"]
            await c.call_tool("history", {})
            await c.call_tool("state", {})
            await c.call_tool("step", {"action": "bye"})
        start, step, history, state, last, end = lines(path)
        assert start["env"] == "echo" and start["seed"] == 7 and start["config"]["max_steps"]
        assert start["versions"]["openenv-mcp"] and start["versions"]["python"]
        assert start["rewards"] == ["tests.rewards_for_tests:echo_with_trajectory"]
        assert start["call"] == {"tool": "reset", "arguments": {"seed": 7, "options": None}}
        assert step["action"] == "hello please" and step["env_reward"] == pytest.approx(1.2)
        assert step["rewards"]["polite"] == 1.0 and step["reward"] == step["rewards"]["total"]
        assert step["call"] == {"tool": "step", "arguments": {"action": "hello please"}}
        assert (history["kind"], history["tool"], state["tool"]) == ("call", "history", "state")
        assert last["terminated"] is True
        assert end["status"] == "terminated" and end["steps"] == 2
        assert end["trajectory"]["scores"] == {"said_bye": 10.0, "words": 3.0}
        recording = read_recording(path)
        assert recording.complete and recording.finished
        assert [s.action for s in recording.steps] == ["hello please", "bye"]
        assert replay(path).ok


async def test_how_episodes_end_reset_closed_broken(tmp_path: Path) -> None:
    with anyio.fail_after(60):
        server = build_server(
            "echo",
            settings=ServerSettings(record=str(tmp_path), reward=["tests.rewards_for_tests:judge"]),
        )
        async with Client(server) as c:
            first = (await c.call_tool("reset", {"seed": 1})).structured_content
            await c.call_tool("step", {"action": "a"})
            second = (await c.call_tool("reset", {"seed": 2})).structured_content  # again
            await c.call_tool("step", {"action": "boom"}, raise_on_error=False)
            third = (await c.call_tool("reset", {"seed": 3})).structured_content
            await c.call_tool("close", {})
        ends = [lines(Path(v["recording"]))[-1] for v in (first, second, third)]
        assert [e["status"] for e in ends] == ["reset", "broken", "closed"]
        assert "RuntimeError" in ends[1]["error"]
        assert [e["kind"] for e in ends] == ["end"] * 3


async def test_frames_that_are_not_the_observation_are_recorded_and_make_a_video(
    tmp_path: Path,
) -> None:
    av = pytest.importorskip("av", reason="the [data] extra installs av")
    with anyio.fail_after(60):
        server = recorded_server(tmp_path, frame=True, settings={"record_video": True})
        async with Client(server) as c:
            path = Path((await c.call_tool("reset", {"seed": 0})).structured_content["recording"])
            for message in ("red", "green", "bye"):
                await c.call_tool("step", {"action": message})
        finish_videos()
        frames = list(iter_frames(path))
        assert len(frames) == 4 and frames[0].shape == (16, 16, 3)
        assert not np.array_equal(frames[1], frames[2])
        with av.open(str(path.with_suffix(".mp4"))) as video:
            assert sum(1 for _ in video.decode(video=0)) == 4


async def test_a_restored_episode_is_recorded_but_not_replayable(tmp_path: Path) -> None:
    with anyio.fail_after(60):
        async with Client(recorded_server(tmp_path)) as c:
            await c.call_tool("reset", {"seed": 0})
            await c.call_tool("step", {"action": "one"})
            snap = (await c.call_tool("snapshot", {})).structured_content["snapshot_id"]
            fork = await c.call_tool("reset", {"from_snapshot": snap, "new_episode": True})
            path = Path(fork.structured_content["recording"])
            await c.call_tool(
                "step", {"action": "two", "episode_id": fork.structured_content["episode_id"]}
            )
        start = lines(path)[0]
        assert start["from_snapshot"] is True and start["step"] == 1
        with pytest.raises(ArgumentError, match="snapshot"):
            replay(path)


async def test_replay_finds_a_tampered_recording(tmp_path: Path) -> None:
    with anyio.fail_after(60):
        async with Client(recorded_server(tmp_path)) as c:
            path = Path((await c.call_tool("reset", {"seed": 0})).structured_content["recording"])
            for message in ("a", "bb", "bye"):
                await c.call_tool("step", {"action": message})
        records = lines(path)
        records[2]["env_reward"] = 99.0
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
        report = replay(path)
        assert not report.ok and report.mismatch == "step 2: env_reward 0.2, recorded 99.0"
        assert report.steps == 1


def test_a_torn_last_line_reads_as_incomplete(tmp_path: Path) -> None:
    async def record() -> Path:
        async with Client(recorded_server(tmp_path)) as c:
            view = (await c.call_tool("reset", {"seed": 0})).structured_content
            await c.call_tool("step", {"action": "a"})
            await c.call_tool("step", {"action": "b"})
            return Path(view["recording"])

    path = anyio.run(record)
    text = path.read_bytes()
    path.write_bytes(text[: len(text) - 20])  # the last step half written
    recording = read_recording(path)
    assert not recording.complete and len(recording.steps) == 1
    assert "torn" in recording.problem
    with pytest.raises(ArgumentError, match="not an openenv-mcp recording"):
        (tmp_path / "other.jsonl").write_text('{"hello": 1}\n')
        read_recording(tmp_path / "other.jsonl")


async def test_jsonl_export_holds_the_tool_calls_and_rewards(tmp_path: Path) -> None:
    with anyio.fail_after(60):
        async with Client(recorded_server(tmp_path / "rec")) as c:
            await c.call_tool("reset", {"seed": 0})
            await c.call_tool("step", {"action": "hi please"})
            await c.call_tool("history", {})
            await c.call_tool("step", {"action": "bye"})
            await c.call_tool("reset", {"seed": 1})  # still running, no step yet: left out
        report = export_jsonl(tmp_path / "rec", tmp_path / "out.jsonl")
        assert (report.episodes, report.steps) == (1, 2)
        assert report.left_out == {"without a step": 1}
        (episode,) = [
            json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()
        ]
        assert episode["rewards"] == pytest.approx([2.95, 0.15 + 0.5])
        assert episode["trajectory"]["scores"]["said_bye"] == 10.0
        calls = [
            m["tool_calls"][0]["function"]["name"] for m in episode["messages"] if "tool_calls" in m
        ]
        assert calls == ["reset", "step", "history", "step"]
        result = json.loads(episode["messages"][3]["content"])
        assert result["observation"] == "hi please" and result["rewards"]["polite"] == 1.0


async def test_recordings_of_a_served_app_end_when_it_closes(tmp_path: Path) -> None:
    with anyio.fail_after(60):
        server = recorded_server(tmp_path)
        async with Client(server) as c:
            await c.call_tool("reset", {"seed": 0})
            await c.call_tool("step", {"action": "x"})
        await get_app(server).aclose()
        (recording,) = iter_recordings(tmp_path)
        assert recording.complete and recording.end is not None
        assert recording.end["status"] == "closed" and not recording.finished


# -- when recording fails --------------------------------------------------------------------


@contextlib.contextmanager
def small_tmpfs(path: Path, size: str = "48k", read_only: bool = False) -> Iterator[Path]:
    """A real tmpfs of ``size`` mounted at ``path`` (root only: CI runs as root)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (the suite runs as root in CI)")
    path.mkdir(parents=True, exist_ok=True)
    options = f"size={size},mode=0700" + (",ro" if read_only else "")
    subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


async def test_a_deleted_recording_is_found_at_the_next_write(tmp_path: Path) -> None:
    server = build_server("echo", settings=ServerSettings(record=str(tmp_path)))
    async with MCPEnvClient(server) as env:
        _, info = await env.reset(seed=0)
        Path(info["recording"]).unlink()
        with pytest.raises(RecordingFailed, match=r"was deleted while its episode was recorded"):
            await env.step("lost")
        with pytest.raises(ResetNeeded, match="its recording failed"):
            await env.step("after")
        _, info = await env.reset(seed=1)  # a new file: recording works again
        assert Path(info["recording"]).exists()
        assert get_app(server).table.recording_problem is None


@pytest.mark.integration  # mounts a tmpfs
def test_a_read_only_directory_is_refused_at_start(tmp_path: Path) -> None:
    with small_tmpfs(tmp_path / "ro", read_only=True) as directory:
        with pytest.raises(ArgumentError, match=r"read-only"):
            build_server("echo", settings=ServerSettings(record=str(directory)))
        done = subprocess.run(
            [
                *CLI,
                "serve",
                "echo",
                "--http",
                "--port",
                str(free_port()),
                "--record",
                str(directory),
            ],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            cwd=ROOT,
            timeout=120,
        )
    assert done.returncode != 0 and b"the file system is read-only" in done.stderr


@pytest.mark.integration  # a real HTTP server, recording onto a small tmpfs
@pytest.mark.parametrize("policy", ["refuse", "continue"])
async def test_a_full_disk_is_told_and_the_server_serves_on(tmp_path: Path, policy: str) -> None:
    with (
        small_tmpfs(tmp_path / "full") as directory,
        http_server("echo", "--record", str(directory), "--record-errors", policy) as url,
    ):
        health = f"{url.rsplit('/', 1)[0]}/healthz"
        async with MCPEnvClient(url) as env:
            await env.reset(seed=0)
            with anyio.fail_after(120):
                failed = None
                for _ in range(200):
                    try:
                        *_, info = await env.step("x" * 4000)
                    except RecordingFailed as exc:
                        failed = str(exc)
                        break
                    if "recording_failed" in info:
                        failed = info["recording_failed"]
                        break
            assert failed is not None and str(directory) in failed
            assert "the disk is full" in failed
            state = httpx.get(health, timeout=30).json()
            assert state["status"] == "degraded" and "the disk is full" in state["recording"]
            if policy == "refuse":
                with pytest.raises(ResetNeeded, match="its recording failed"):
                    await env.step("after")
                with pytest.raises(RecordingFailed, match="the disk is full"):
                    await env.reset(seed=1)  # new episodes are refused while it fails
            else:
                *_, info = await env.step("after")  # on it goes, unrecorded
                assert info["step"] > 1 and "recording_failed" not in info
            for made in directory.iterdir():  # room again: recording (and health) come back
                made.unlink()
            _, info = await env.reset(seed=2)
            assert Path(info["recording"]).parent == directory
            assert httpx.get(health, timeout=30).json()["status"] == "ok"

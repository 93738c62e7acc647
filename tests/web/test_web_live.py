"""The web page's event feed over real sockets: ``serve --http --web``, and the viewer
a stdio server opens with ``--web-port`` (the one an agent harness starts)."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from openenv_mcp.client import MCPEnvClient
from tests.servers import CLI, ROOT, free_port, http_server

pytestmark = pytest.mark.integration


def read_events(response: httpx.Response) -> Iterator[tuple[str, Any]]:
    """Server-sent events as ``(event, data)``, as they arrive."""
    event, data = "", []
    for line in response.iter_lines():
        if line.startswith("event: "):
            event = line[7:]
        elif line.startswith("data: "):
            data.append(line[6:])
        elif not line and data:
            yield event, json.loads("".join(data))
            event, data = "", []


def watch_until(base: str, watch_id: str, done: Any, timeout: float = 60.0) -> list[Any]:
    """Read ``watch_id``'s feed until ``done(seen)``; every event seen."""
    seen: list[tuple[str, Any]] = []
    deadline = time.monotonic() + timeout
    with (
        httpx.Client(timeout=httpx.Timeout(10.0, read=timeout)) as http,
        http.stream("GET", f"{base}/web/api/episodes/{watch_id}/events") as response,
    ):
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        for item in read_events(response):
            seen.append(item)
            if done(seen) or time.monotonic() > deadline:
                break
    return seen


def only_row(base: str) -> dict[str, Any]:
    (row,) = httpx.get(f"{base}/web/api/episodes", timeout=10).json()["episodes"]
    return dict(row)


def test_a_watcher_receives_the_steps_another_client_makes() -> None:
    with http_server("atari", "--game", "breakout", "--web") as url:
        base = url.removesuffix("/mcp")
        with MCPEnvClient(url).sync() as env:
            env.reset(seed=0)
            env.step("FIRE")
            watch_id = only_row(base)["watch_id"]
            stepping = threading.Event()

            def play() -> None:
                stepping.wait(30)
                for _ in range(20):
                    env.step("RIGHT")

            player = threading.Thread(target=play)
            player.start()
            try:

                def enough(seen: list[tuple[str, Any]]) -> bool:
                    stepping.set()  # the watcher is subscribed: start stepping
                    steps = [e["step"] for kind, d in seen if kind == "calls" for e in d["events"]]
                    return bool(steps) and max(steps) >= 21

                seen = watch_until(base, watch_id, enough)
            finally:
                player.join(60)
            kinds = [kind for kind, _ in seen]
            assert kinds[0] == "hello"
            hello = seen[0][1]
            assert [e["tool"] for e in hello["history"]] == ["reset", "step"]
            assert "frame" in kinds
            stepped = [e for kind, d in seen if kind == "calls" for e in d["events"]]
            assert [e["step"] for e in stepped] == list(range(2, 22))
            assert {e["tool"] for e in stepped} == {"step"}
            assert all(e["arguments"] == {"action": "RIGHT"} for e in stepped)
            frames = [d for kind, d in seen if kind == "frame"]
            assert all(f["image"].startswith("data:image/png;base64,") for f in frames)
            assert env.episode_id not in json.dumps(seen)


def test_a_stdio_server_opens_a_viewer_of_the_agent_playing() -> None:
    port = free_port()
    command = [*CLI, "serve", "atari", "--game", "breakout", "--stdio", "--web-port", str(port)]
    log = ROOT / ".pytest_cache" / f"viewer-{port}.log"
    log.parent.mkdir(exist_ok=True)
    with MCPEnvClient(command, server_log=str(log)).sync() as env:
        env.reset(seed=0)
        for _ in range(3):
            env.step("FIRE")
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:  # the viewer starts beside the stdio server, a moment later
            with contextlib.suppress(httpx.HTTPError):
                row = only_row(base)
                break
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        assert row["step"] == 3 and row["status"] == "running"
        page = httpx.get(f"{base}/web/", timeout=10)
        assert page.status_code == 200 and "Atari Breakout" in page.text
        seen = watch_until(base, row["watch_id"], lambda seen: any(k == "frame" for k, _ in seen))
        assert seen[0][0] == "hello" and len(seen[0][1]["history"]) == 4
        # Loopback only, the Host checked, as /mcp on loopback.
        assert httpx.get(f"{base}/web/", headers={"host": "evil.example"}).status_code == 421
    text = log.read_text()
    assert f"watch this server in a browser: http://127.0.0.1:{port}/web/" in text


def test_a_taken_viewer_port_leaves_the_stdio_server_serving() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        command = [*CLI, "serve", "echo", "--stdio", "--web-port", str(port)]
        log = ROOT / ".pytest_cache" / f"viewer-taken-{port}.log"
        log.parent.mkdir(exist_ok=True)
        with MCPEnvClient(command, server_log=str(log)).sync() as env:
            env.reset(seed=0)
            _, _, _, _, info = env.step("hi")
            assert info["step"] == 1
    assert "no web viewer: cannot listen on 127.0.0.1" in log.read_text()


def test_web_flags_say_which_transport_they_belong_to() -> None:
    for flags, expected in (
        (["--web"], "--web needs --transport http"),
        (["--http", "--web-port", "9"], "--web-port needs --transport stdio"),
    ):
        proc = subprocess.run(
            [*CLI, "serve", "echo", *flags],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        assert proc.returncode != 0 and expected in proc.stderr, proc.stderr


def test_the_readme_rollout_to_watch_runs_and_is_listed() -> None:
    with http_server("atari", "--game", "breakout", "--web") as url:
        proc = subprocess.run(
            [
                sys.executable,
                str(ROOT / "harness_examples" / "watch_rollout.py"),
                "--url",
                url,
                "--episodes",
                "2",
                "--fps",
                "0",
                "--max-steps",
                "40",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=ROOT,
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert proc.stdout.count("steps, return") == 2
        rows = httpx.get(f"{url.removesuffix('/mcp')}/web/api/episodes", timeout=10).json()
        (row,) = rows["episodes"]  # one client, one episode, reset twice, then closed
        assert row["status"] == "closed" and row["calls"] >= 2 + 2 * 1


def test_watching_episodes_held_in_worker_processes() -> None:
    with http_server("atari", "--game", "pong", "--web", "--workers", "2") as url:
        base = url.removesuffix("/mcp")
        with MCPEnvClient(url).sync() as env:
            env.reset(seed=0)
            for _ in range(5):
                env.step("FIRE")
            row = only_row(base)
            assert row["step"] == 5
            frame = httpx.get(f"{base}/web/api/episodes/{row['watch_id']}/frame", timeout=30)
            assert frame.status_code == 200 and frame.content[:4] == b"\x89PNG"
            seen = watch_until(base, row["watch_id"], lambda s: any(k == "frame" for k, _ in s))
            assert [e["step"] for e in seen[0][1]["history"]] == [0, 1, 2, 3, 4, 5]

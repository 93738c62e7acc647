"""``serve openenv --url`` against a hostile OpenEnv server (``tests/openenv_hostile.py``
under uvicorn): a PNG declaring gigapixels, an 80 MB pixel list, an answer of 16
million values, a ``/schema`` that drips or never ends, a message nobody asked for.
The bridge runs as users run it (``openenv-mcp serve openenv --url``, its own
process), driven by real MCP clients; each attack fails its call with an error
naming the server and the limit, the bridge's peak memory stays under 700 MiB, and
a well-behaved episode beside the attacked one keeps answering."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pybase64
import pytest
from fastmcp import Client

from openenv_mcp.codecs import encode_png
from openenv_mcp.server import build_server
from openenv_mcp_envs.openenv._described import Observed
from openenv_mcp_envs.openenv._images import TooLarge, find_images, find_pictures, to_rgb
from openenv_mcp_envs.openenv._remote import parse_reply
from tests.openenv_hostile import BOMB_SIDE, png_bomb
from tests.openenv_procs import wait_listening
from tests.servers import ROOT, free_port, start_http, stop

pytestmark = pytest.mark.anyio
integration = pytest.mark.integration

#: The bridge's peak resident memory under any attack, at most.
PEAK_MIB = 700
#: Longest a well-behaved episode's call may take while another one's answer is
#: refused or decoded: the issue's end state is 1 s; this bound is generous for a
#: busy 2-core machine, and the stall it guards against was 3.5 s.
STALL_BOUND = 2.0


@contextlib.contextmanager
def hostile_server(schema: str = "ok") -> Iterator[str]:
    """``uvicorn tests.openenv_hostile:app`` on a loopback port; yields its base URL."""
    port = free_port()
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "uvicorn",
                "tests.openenv_hostile:app",
                "--port",
                str(port),
                "--log-level",
                "warning",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            cwd=ROOT,
            env={**os.environ, "HOSTILE_SCHEMA": schema},
        )
        try:
            wait_listening(proc, port, log, 60)
            yield f"http://127.0.0.1:{port}"
        finally:
            stop(proc)


@pytest.fixture(scope="module")
def hostile() -> Iterator[str]:
    with hostile_server() as url:
        yield url


@contextlib.contextmanager
def bridge(url: str, *options: str) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """``openenv-mcp serve openenv --url URL --http``, fresh (so its peak memory is this
    test's): yields the process and its MCP URL."""
    proc, mcp_url = start_http("openenv", "--url", url, *options, timeout=120)
    try:
        yield proc, mcp_url
    finally:
        stop(proc)


def peak_mib(pid: int) -> float:
    """A running process's peak resident memory (VmHWM), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmHWM for {pid}")


def _text(result: Any) -> str:
    return str(result.content[0].text)


class Episode:
    """One episode of the bridge (over HTTP, each call names it)."""

    def __init__(self, client: Client[Any]) -> None:
        self.client = client
        self.id: str | None = None

    async def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        if self.id is not None:
            arguments = {"episode_id": self.id, **arguments}
        with anyio.fail_after(120):
            return await self.client.call_tool(tool, arguments, raise_on_error=False)

    async def reset(self, seed: int = 1) -> None:
        result = await self.call("reset", {"seed": seed})
        assert not result.is_error, _text(result)
        self.id = result.structured_content["episode_id"]

    async def step(self, message: str) -> Any:
        return await self.call("step", {"action": {"message": message}})


@contextlib.asynccontextmanager
async def episodes(mcp: str) -> AsyncIterator[tuple[Episode, Episode]]:
    """Two episodes on the bridge at ``mcp``, each reset: a good one and one to attack."""
    async with Client(mcp, timeout=120) as client:
        good, bad = Episode(client), Episode(client)
        await good.reset()
        await bad.reset()
        yield good, bad


async def _timed_while(good: Episode, attack: Callable[[], Awaitable[Any]]) -> tuple[Any, float]:
    """Run ``attack()``; meanwhile step the good episode again and again. Returns what the
    attack returned and the good episode's slowest step."""
    slowest = 0.0
    outcome: list[Any] = []
    done = anyio.Event()

    async def run() -> None:
        try:
            outcome.append(await attack())
        finally:
            done.set()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(run)
        while not done.is_set():
            start = time.monotonic()
            answer = await good.step("ping")
            slowest = max(slowest, time.monotonic() - start)
            assert not answer.is_error, _text(answer)
            assert answer.structured_content["observation"]["echoed"] == "ping"
    return outcome[0], slowest


@integration
async def test_a_png_declaring_gigapixels_is_refused_from_its_header(hostile: str) -> None:
    with bridge(hostile) as (proc, mcp):
        async with episodes(mcp) as (good, bad):
            refused, slowest = await _timed_while(good, lambda: bad.step("png-bomb"))
            assert refused.is_error
            assert _text(refused).startswith(
                f"EnvCrashed: the OpenEnv server at {hostile} sent a 13300x13300 image "
                "(176,890,000 pixels); the limit is 16,777,216 pixels (--max-frame-pixels); "
                "its session is closed"
            )
            assert slowest < STALL_BOUND
            # the episode starts over on a new session, and the bridge serves on
            await bad.reset(2)
            again = await bad.step("after")
            assert again.structured_content["observation"]["echoed"] == "after"
            assert peak_mib(proc.pid) < PEAK_MIB


@integration
async def test_an_80mb_pixel_list_is_refused_unread(hostile: str) -> None:
    with bridge(hostile) as (proc, mcp):
        async with episodes(mcp) as (good, bad):
            refused, slowest = await _timed_while(good, lambda: bad.step("pixels-80mb"))
            assert re.match(
                f"EnvCrashed: the OpenEnv server at {hostile} sent an answer of 79,[0-9]{{3}},"
                "[0-9]{3} bytes;",
                _text(refused),
            )
            assert (
                " bytes; the limit is 33,554,432 bytes (--max-reply-bytes); it was refused "
                "unread, and its session is closed; episode "
            ) in _text(refused)
            assert slowest < STALL_BOUND
            await bad.reset(2)
            assert not (await bad.step("after")).is_error
            assert peak_mib(proc.pid) < PEAK_MIB


@integration
async def test_answers_of_millions_of_values_are_refused_before_they_cost(hostile: str) -> None:
    with bridge(hostile) as (proc, mcp):
        async with episodes(mcp) as (good, bad):
            # 30 MB, under the byte limit: 10 million empty lists would take 1 GB parsed
            refused, slowest = await _timed_while(good, lambda: bad.step("values-bomb"))
            assert re.match(  # counted in its bytes, never parsed
                f"EnvCrashed: the OpenEnv server at {hostile} sent an answer of 30,000,0[0-9]{{2}} "
                "bytes holding up to 20,000,0[0-9]{2} JSON values; the limit is 4,194,304 values "
                r"\(--max-reply-values\); its session is closed; episode ",
                _text(refused),
            )
            assert slowest < STALL_BOUND
            # under that limit, parsed, but past what goes on to MCP clients as it came
            await bad.reset(2)
            refused, slowest = await _timed_while(good, lambda: bad.step("values-besides-pixels"))
            assert _text(refused).startswith(
                f"EnvCrashed: the OpenEnv server at {hostile} sent an answer of up to 4,188,0"
            )
            assert (
                " JSON values besides its pixel lists; the limit is 1,048,576 values "
                "(--max-observation-values); its session is closed"
            ) in _text(refused)
            assert slowest < STALL_BOUND
            # as many as go on
            await bad.reset(3)
            passed = await bad.step("values-passing")
            assert not passed.is_error, _text(passed)
            assert len(passed.structured_content["observation"]["junk"]) == 149_700
            assert peak_mib(proc.pid) < PEAK_MIB


@integration
async def test_limits_are_settings_and_an_honest_screenshot_passes(hostile: str) -> None:
    # OpenEnv's BrowserGym sends 1280x720 screenshots as nested lists (3.7 M values):
    # within every default limit, and the other episode answers meanwhile
    with bridge(hostile) as (proc, mcp):
        async with episodes(mcp) as (good, shot):
            taken, slowest = await _timed_while(good, lambda: shot.step("screenshot"))
            assert not taken.is_error, _text(taken)
            assert [c.type for c in taken.content] == ["text", "image"]
            screen = taken.structured_content["observation"]["screenshot"]
            assert screen["shape"] == [720, 1280, 3] and screen["encoding"] == "zstd"
            assert slowest < STALL_BOUND
            assert peak_mib(proc.pid) < PEAK_MIB
    with bridge(hostile, "--max-frame-pixels", "900000") as (_, mcp):
        async with episodes(mcp) as (_, shot):
            refused = await shot.step("screenshot")
            assert _text(refused).startswith(
                f"EnvCrashed: the OpenEnv server at {hostile} sent a 1280x720 pixel list in "
                "'screenshot' (921,600 pixels); the limit is 900,000 pixels"
                " (--max-frame-pixels); its session is closed"
            )


@integration
async def test_a_message_nobody_asked_for_closes_the_session(hostile: str) -> None:
    with bridge(hostile) as (_, mcp):
        async with episodes(mcp) as (_, episode):
            first = await episode.step("extra")
            assert first.structured_content["observation"]["echoed"] == "extra"
            # the server sent a second answer: this step's answer would be that one
            shifted = await episode.step("hello")
            assert _text(shifted).startswith(
                f"EnvCrashed: the OpenEnv server at {hostile} sent a message nobody asked for (b'"
            )
            assert "so its session is closed before the action (reset starts a new one)" in (
                _text(shifted)
            )
            # a new session: answers match requests again
            await episode.reset()
            for word in ("one", "two"):
                step = await episode.step(word)
                assert step.structured_content["observation"]["echoed"] == word
            state = await episode.call("state", {})
            assert state.structured_content["info"]["openenv_state"] == {"step_count": 2}


def _start_up(url: str, *options: str) -> tuple[subprocess.CompletedProcess[str], float, float]:
    """``openenv-mcp serve openenv --url URL`` against a server whose start-up attacks: the
    finished process, its wall time and its peak memory (MiB: its VmHWM as it exits; not
    its rusage, which counts the parent's pages it was forked with)."""
    report = (
        "import atexit, pathlib, sys\n"
        "status = pathlib.Path('/proc/self/status')\n"
        "atexit.register(lambda: print(*[line for line in status.read_text().splitlines()"
        " if line.startswith('VmHWM:')], file=sys.stderr))\n"
        "sys.argv[0] = 'openenv-mcp'\n"
        "from openenv_mcp._launch import main\n"
        "main()\n"
    )
    argv = [sys.executable, "-c", report, "serve", "openenv", "--url", url, *options]
    argv += ["--http", "--port", str(free_port())]  # not stdio: no client needed to start
    start = time.monotonic()
    # old code hung here forever: the timeout ends it (and fails the test)
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=120, cwd=ROOT, stdin=subprocess.DEVNULL
    )
    took = time.monotonic() - start
    peak = [line for line in done.stderr.splitlines() if line.startswith("VmHWM:")]
    assert peak, done.stderr[-2000:]
    return done, took, int(peak[-1].split()[1]) / 1024


@integration
def test_a_dripping_schema_meets_the_start_up_deadline() -> None:
    with hostile_server("drip") as url:
        done, took, peak = _start_up(url, "--startup-timeout", "3")
    assert done.returncode != 0
    assert re.search(
        f"the OpenEnv server at {url} did not finish its answer to /schema "
        r"\(it sent [0-9,]+ bytes of it\) within the start-up deadline: ",
        done.stderr,
    )
    assert (
        "3s for everything read at start-up, /schema, /metadata and its tools (--startup-timeout)"
    ) in done.stderr
    # the process starts in seconds; the deadline is 3 s of it, whatever the drip does
    assert took < 60
    assert peak < PEAK_MIB


@integration
def test_a_huge_schema_is_refused_past_its_cap() -> None:
    with hostile_server("huge") as url:
        done, _, peak = _start_up(url)
    assert done.returncode != 0
    assert (
        f"the OpenEnv server at {url} sent its answer to /schema past 8,388,608 bytes; the "
        "limit is 8,388,608 bytes (for what a server declares at start-up: /schema, "
        "/metadata, its tools)"
    ) in done.stderr
    assert peak < PEAK_MIB


# -- the limits themselves, in this process ----------------------------------------------


def _data_url(data: bytes) -> str:
    return "data:image/png;base64," + pybase64.b64encode(data).decode()


def test_encoded_pictures_are_measured_by_their_headers() -> None:
    bomb = png_bomb()
    assert len(bomb) < 32 * 1024  # 21 KiB declaring 176,890,000 pixels
    with pytest.raises(TooLarge, match=r"^a 13300x13300 image \(176,890,000 pixels\); the "):
        find_images({"screen_image": _data_url(bomb)})
    # inside an MCP tool result too
    content = {"content": [{"type": "image", "data": pybase64.b64encode(bomb).decode()}]}
    with pytest.raises(TooLarge):
        find_images({"result": content})
    # a GIF's header, and a format PIL reads (its header only)
    gif = b"GIF89a" + (40000).to_bytes(2, "little") * 2 + b"\x00" * 64
    with pytest.raises(TooLarge, match="a 40000x40000 image"):
        find_images({"frame": pybase64.b64encode(gif).decode()})
    small = encode_png(np.zeros((300, 200, 3), np.uint8))
    with pytest.raises(TooLarge, match=r"a 200x300 image \(60,000 pixels\); the limit is 59,999"):
        find_images({"frame": _data_url(small)}, max_pixels=59_999)
    _, frame = find_images({"frame": _data_url(small)}, max_pixels=60_000)
    assert isinstance(frame, bytes) and to_rgb(frame, 60_000) is not None
    # where it gets past all the same, it is not decoded
    assert to_rgb(bomb) is None and to_rgb(small, 59_999) is None
    assert BOMB_SIDE == 13300


def test_pixel_lists_are_measured_by_their_shapes_before_arrays_are_made() -> None:
    flat = {"screen": [0] * 48, "screen_shape": [4, 4, 3]}
    with pytest.raises(TooLarge, match=r"a 4x4 pixel list in 'screen' \(16 pixels\)"):
        find_images(flat, max_pixels=15)
    nested = {"pixels": [[[1, 2, 3]] * 5] * 2}
    with pytest.raises(TooLarge, match=r"a 5x2 pixel list in 'pixels' \(10 pixels\)"):
        find_images(nested, max_pixels=9)
    with pytest.raises(TooLarge, match=r"a 5x2 pixel array in 'pixels'"):
        find_images({"pixels": np.zeros((2, 5, 3), np.uint8)}, max_pixels=9)
    # what is not a picture is not measured as one
    assert find_images({"board": [[0, 1]] * 40}, max_pixels=4)[1] is None
    # the JSON values pixel lists held: H + H*W lists and numbers, H*W*C numbers
    _, _, arrays = find_pictures({**nested, **flat})
    assert arrays == (2 + 10 + 30) + 48
    observed = Observed.from_payload({"observation": nested})
    assert observed.array_values == 42


def test_values_are_counted_before_parsing() -> None:
    assert parse_reply(b'{"a": [1, 2, 3]}', 100) == {"a": [1, 2, 3]}
    # a string counts its quotes: 1 + 2 (the key) + ':' + '[' + 2 ','
    assert parse_reply(b'{"a": [1, 2, 3]}', 8) == {"a": [1, 2, 3]}
    with pytest.raises(TooLarge, match=r"^an answer of 16 bytes holding up to 8 JSON values; "):
        parse_reply(b'{"a": [1, 2, 3]}', 7)
    with pytest.raises(TooLarge, match=r"the limit is 1,000 values \(--max-reply-values\)"):
        parse_reply(b"[" + b"[]," * 999 + b"[]]", 1000)


async def test_an_environment_in_process_has_the_picture_limit_too() -> None:
    count = "tests.openenv_envs:CountEnvironment"
    async with Client(build_server("openenv", env=count, max_frame_pixels=15)) as client:
        reset = await client.call_tool("reset", {"seed": 1}, raise_on_error=False)
        assert _text(reset).startswith(
            f"EnvCrashed: the OpenEnv environment {count} sent a 4x4 pixel list in 'screen' "
            "(16 pixels); the limit is 15 pixels (--max-frame-pixels)"
        )
    async with Client(build_server("openenv", env=count, max_frame_pixels=16)) as client:
        reset = await client.call_tool("reset", {"seed": 1})
        assert [c.type for c in reset.content] == ["text", "image"]

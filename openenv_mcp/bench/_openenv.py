"""``openenv-mcp bench --vs openenv``: the bridge against OpenEnv's own client, in one run.

(``bench openenv`` alone, its first spelling, still runs it.)

Three OpenEnv-protocol servers run as processes:

* OpenEnv's echo: the environment ``openenv init`` scaffolds, unmodified, served by
  its own ``server/app.py`` (openenv-core's ``create_app``; one session at a time);
* an Atari server on OpenEnv's stack (:mod:`openenv_mcp_envs.openenv.reference_atari`: OpenEnv's
  own Atari environment is not on PyPI), sending what OpenEnv's Atari sends;
* ``openenv-mcp serve atari --http --openenv``: our Atari on OpenEnv's protocol.

and these sides step them, alternating repeat by repeat so the machine's noise
hits all of them (medians over repeats; resets are not timed):

* OpenEnv's ``GenericEnvClient`` on OpenEnv's echo, and MCP (``MCPEnvClient`` over
  stdio) on ``serve openenv --url`` mounted on the same server;
* the same two on the Atari server, every observation decoded to its array;
* ``GenericEnvClient`` on our Atari over ``--openenv``: as OpenEnv's Atari server
  answers (its models: the same payloads, the screen a flat list of numbers with its
  shape), and in our own form with zstd arrays (``frames="zstd"``).
"""

from __future__ import annotations

import contextlib
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import numpy as np

from openenv_mcp._util.interpreter import python_command
from openenv_mcp.bench._run import _environment_facts, _free_port, _listening, _Report, _stop
from openenv_mcp.codecs import decode_raw
from openenv_mcp.errors import DependencyNotInstalled, ServerDied

__all__ = ["OpenEnvBenchResult", "run_openenv_bench"]

Progress = Callable[[str], None]
#: openenv-core imports much at start; on a busy machine it takes many seconds.
START_TIMEOUT = 180.0
#: Atari on OpenEnv's wire runs tens of steps a second: its sides step this fraction.
ATARI_SHARE = 5


@dataclass
class OpenEnvBenchResult(_Report):
    """Steps/s of each side (medians over repeats), and the ratios the issue asks for."""

    steps: int
    atari_steps: int
    repeats: int
    sides: dict[str, float]
    repeats_of: dict[str, list[float]]
    ratios: dict[str, float]
    #: Each ratio within each repeat (the sides of one repeat ran back to back).
    ratios_repeats: dict[str, list[float]]
    facts: dict[str, Any] = field(default_factory=_environment_facts)

    def table(self) -> str:
        lines = [
            f"openenv-mcp bench --vs openenv: {self.steps} echo steps, {self.atari_steps} Atari "
            f"steps x {self.repeats} repeats (medians; every observation decoded)",
            f"  {'':<58}{'steps/s':>10}{'ms/step':>9}",
        ]
        for side, rate in self.sides.items():
            lines.append(f"  {side:<64}{rate:>10,.1f}{1000.0 / rate:>9.2f}")
        lines += [
            f"  {name}: {ratio:.2f} (per repeat: "
            + ", ".join(f"{r:.2f}" for r in self.ratios_repeats[name])
            + ")"
            for name, ratio in self.ratios.items()
        ]
        return "\n".join(lines)


def _openenv() -> Any:
    try:
        from openenv.core.generic_client import GenericEnvClient
    except ImportError as exc:
        raise DependencyNotInstalled(
            "bench --vs openenv drives OpenEnv's own client: pip install 'openenv-mcp[openenv]'"
        ) from exc
    return GenericEnvClient


@contextlib.asynccontextmanager
async def _process(argv: list[str], port: int, cwd: Path | None = None) -> AsyncIterator[None]:
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=cwd)
        try:
            with anyio.fail_after(START_TIMEOUT):
                while not _listening(port):
                    if proc.poll() is not None:
                        log.seek(0)
                        tail = log.read().decode("utf-8", "replace")[-2000:]
                        raise ServerDied(f"{' '.join(argv[:4])} exited:\n{tail}")
                    await anyio.sleep(0.1)
            yield
        except TimeoutError:
            raise ServerDied(f"{' '.join(argv)} did not listen within {START_TIMEOUT:g}s") from None
        finally:
            _stop(proc)


def _uvicorn(app: str, port: int) -> list[str]:
    return python_command("-m", "uvicorn", app, "--port", str(port), "--log-level", "warning")


def _scaffold(where: Path) -> Path:
    """OpenEnv's echo: ``openenv init bench_echo``, as it writes it."""
    openenv = Path(sys.executable).parent / "openenv"
    proc = subprocess.run(
        [str(openenv), "init", "bench_echo", "--output-dir", str(where)],
        capture_output=True,
        text=True,
        timeout=START_TIMEOUT,
        cwd=where,
    )
    if proc.returncode != 0:
        raise ServerDied(f"openenv init failed: {proc.stderr[-1000:]}")
    return where / "bench_echo"


Stepper = Callable[[int], Awaitable[bool]]


async def _timed(
    steps: int, warmup: int, start: Callable[[], Awaitable[None]], step: Stepper
) -> float:
    """Steps/s of ``step(i)`` over ``steps`` calls; ``start`` (a reset) is not timed, nor the
    resets after an episode ends (``step`` returns whether it ended)."""
    await start()
    for i in range(warmup):
        if await step(i):
            await start()
    elapsed = 0.0
    for i in range(steps):
        began = time.perf_counter()
        ended = await step(i)
        elapsed += time.perf_counter() - began
        if ended:
            await start()
    return steps / elapsed


async def _openenv_side(
    client_cls: Any, base: str, steps: int, warmup: int, action: Callable[[int], Any],
    decode: Callable[[dict[str, Any]], Any], reset: dict[str, Any],
) -> float:  # fmt: skip
    async with client_cls(base_url=base, message_timeout_s=300) as env:

        async def start() -> None:
            await env.reset(**reset)

        async def step(i: int) -> bool:
            result = await env.step(action(i))
            decode(result.observation)
            return bool(result.done)

        return await _timed(steps, warmup, start, step)


async def _mcp_side(
    client: Any, steps: int, warmup: int, action: Callable[[int], Any],
    decode: Callable[[Any], Any],
) -> float:  # fmt: skip
    episode = client.spawn()
    try:

        async def start() -> None:
            await episode.reset(seed=0)

        async def step(i: int) -> bool:
            obs, _, terminated, truncated, _ = await episode.step(action(i))
            decode(obs)
            return bool(terminated or truncated)

        return await _timed(steps, warmup, start, step)
    finally:
        # The scaffold serves one OpenEnv session at a time: give it back.
        await episode.close()


def _screen(obs: dict[str, Any]) -> np.ndarray:
    """OpenEnv Atari's screen as an array (a flat list from OpenEnv's client, a raw array
    through the bridge) in its shape."""
    screen = obs["screen"]
    flat = decode_raw(screen) if isinstance(screen, dict) else np.asarray(screen, dtype=np.uint8)
    return flat.reshape(obs["screen_shape"])


def _ours(obs: dict[str, Any]) -> np.ndarray:
    value = obs["observation"]
    if isinstance(value, dict):
        return decode_raw(value)
    return np.asarray(value, dtype=np.uint8).reshape(obs["observation_shape"])


async def _bench(steps: int, repeats: int, warmup: int, progress: Progress) -> OpenEnvBenchResult:
    from openenv_mcp.client import MCPEnvClient

    client_cls = _openenv()
    atari_steps = max(10, steps // ATARI_SHARE)
    stdio = python_command("-m", "openenv_mcp.cli", "serve", "openenv", "--stdio")
    echo_port, atari_port, ours_port = _free_port(), _free_port(), _free_port()
    async with contextlib.AsyncExitStack() as stack:
        where = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        progress("scaffolding OpenEnv's echo (openenv init) and starting three servers ...")
        echo_dir = _scaffold(where)
        await stack.enter_async_context(
            _process(_uvicorn("server.app:app", echo_port), echo_port, echo_dir)
        )
        # uvicorn looks for the app in its working directory first: ours, not the user's
        reference = _uvicorn("openenv_mcp_envs.openenv.reference_atari:app", atari_port)
        await stack.enter_async_context(_process(reference, atari_port, where))
        ours = python_command("-m", "openenv_mcp.cli", "serve", "atari", "--game", "pong")
        ours += ["--http", "--openenv", "--port", str(ours_port), "--log-level", "WARNING"]
        await stack.enter_async_context(_process(ours, ours_port))
        echo_base = f"http://127.0.0.1:{echo_port}"
        atari_base = f"http://127.0.0.1:{atari_port}"
        ours_base = f"http://127.0.0.1:{ours_port}/openenv"
        echo_mcp = await stack.enter_async_context(MCPEnvClient([*stdio, "--url", echo_base]))
        atari_mcp = await stack.enter_async_context(MCPEnvClient([*stdio, "--url", atari_base]))

        def say(i: int) -> dict[str, Any]:
            return {"message": "hello"}

        def press(i: int) -> dict[str, Any]:
            return {"action_id": i % 6}

        def ours_press(i: int) -> dict[str, Any]:
            return {"action": i % 6}

        sides: dict[str, Callable[[], Awaitable[float]]] = {
            "echo: OpenEnv's GenericEnvClient on OpenEnv's echo server": lambda: _openenv_side(
                client_cls, echo_base, steps, warmup, say, lambda o: o, {}
            ),
            "echo: MCP (stdio) via serve openenv --url, same server": lambda: _mcp_side(
                echo_mcp, steps, warmup, say, lambda o: o
            ),
            "atari: OpenEnv's GenericEnvClient on the OpenEnv Atari server": lambda: _openenv_side(
                client_cls, atari_base, atari_steps, warmup, press, _screen, {}
            ),
            "atari: MCP (stdio) via serve openenv --url, same server": lambda: _mcp_side(
                atari_mcp, atari_steps, warmup, press, _screen
            ),
            "atari: GenericEnvClient on our atari --openenv (Atari models)": lambda: _openenv_side(
                client_cls, ours_base, atari_steps, warmup, press, _screen, {"seed": 0}
            ),
            "atari: GenericEnvClient on our atari --openenv (frames=zstd)": lambda: _openenv_side(
                client_cls,
                ours_base,
                atari_steps,
                warmup,
                ours_press,
                _ours,
                {"seed": 0, "frames": "zstd"},
            ),
        }
        runs: dict[str, list[float]] = {name: [] for name in sides}
        order = list(sides)
        for repeat in range(repeats):
            for name in order if repeat % 2 == 0 else reversed(order):
                runs[name].append(await sides[name]())
                progress(f"repeat {repeat + 1}/{repeats}: {name}: {runs[name][-1]:,.1f} steps/s")
    medians = {name: float(statistics.median(values)) for name, values in runs.items()}
    names = list(medians)
    pairs = {
        "echo: MCP via the bridge / OpenEnv's client": (1, 0),
        "atari: MCP via the bridge / OpenEnv's client": (3, 2),
        "atari: our --openenv / the OpenEnv Atari server (both OpenEnv's client)": (4, 2),
        "atari: our --openenv with zstd frames / the OpenEnv Atari server": (5, 2),
    }
    ratios = {k: medians[names[a]] / medians[names[b]] for k, (a, b) in pairs.items()}
    each = {
        k: [x / y for x, y in zip(runs[names[a]], runs[names[b]], strict=True)]
        for k, (a, b) in pairs.items()
    }
    return OpenEnvBenchResult(steps, atari_steps, repeats, medians, runs, ratios, each)


def run_openenv_bench(
    steps: int, repeats: int, warmup: int, progress: Progress | None = None
) -> OpenEnvBenchResult:
    """Run the OpenEnv comparison (see the module's docstring)."""
    return anyio.run(_bench, steps, repeats, warmup, progress or (lambda message: None))

"""``openenv-mcp bench``: how fast is an environment over MCP, against itself in-process?

One run steps the same workload twice: the environment class instantiated in
this process ("raw"), and a server over MCP driven by :class:`MCPEnvClient`
(in memory, over stdio, or over Streamable HTTP). Both sides use the same seeds
and the same seeded random legal actions, and reset when an episode ends.
Only steps are timed: resets are left out on both sides, because a seeded
reset can cost hundreds of steps (ALE reloads the ROM, about 90 ms) and would
make each repeat's figure depend on whether an episode happened to end in it.
Repeats alternate between the two sides (raw, MCP, then MCP, raw, ...) so that
noise from the machine hits both; the figures are medians over repeats, and
the ratio is the median MCP steps/s over the median raw steps/s.

With ``batch=N``, N episodes are stepped: raw, N instances round-robin; over
MCP, N episodes on one connection, each step one ``step_batch`` call with N
items, or with ``concurrent=True`` N ``step`` calls all in flight at once (as a
GRPO group gathered with ``asyncio.gather`` makes them). Every returned
observation is decoded (PNG frames to arrays included): a trainer needs the
array.

:func:`run_live` is the scale check instead: it opens many episodes on one
server, reports the server's resident memory before and after, and checks
that every episode still answers a step. :func:`run_startup` times what a user
waits for before the first step: imports, a stdio server's start, a worker's.
"""

from __future__ import annotations

import contextlib
import gc
import math
import os
import platform
import signal
import socket
import statistics
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import anyio
import numpy as np
from gymnasium import spaces as gym_spaces
from pydantic import BaseModel

from openenv_mcp._util.interpreter import python_command
from openenv_mcp.client import Episode, MCPEnvClient, step_batch
from openenv_mcp.client._session import STEP_BATCH_TOOL
from openenv_mcp.codecs import BENCH_FRAMES, BenchFrames, check_frames
from openenv_mcp.environment import Environment
from openenv_mcp.errors import ArgumentError, OpenEnvError, ServerDied, error_from_wire
from openenv_mcp.options import make_config, parse_cli_options
from openenv_mcp.registry import get_env_class
from openenv_mcp.server import ServerSettings, build_server, get_app
from openenv_mcp.spaces import encode, is_array_space
from openenv_mcp.transports import TRANSPORTS, TransportName

__all__ = [
    "DEFAULT_REPEATS",
    "DEFAULT_STEPS",
    "BenchConfig",
    "BenchFrames",
    "BenchResult",
    "BenchTransport",
    "LiveResult",
    "StartupResult",
    "run_bench",
    "run_live",
    "run_startup",
]

#: Where the MCP side's server runs.
BenchTransport = TransportName
#: How observations come back over MCP (of the frames vocabulary, ``openenv_mcp.codecs``):
#: PNG decoded to an array, zstd-compressed or plain raw array, or not at all.

#: Environment steps per side per repeat: a few seconds a row for Atari over stdio.
DEFAULT_STEPS = 500
DEFAULT_REPEATS = 5
#: Untimed calls per side before the first repeat (imports, caches, JIT-ish warm paths).
DEFAULT_WARMUP = 20
#: Bounded wait for an HTTP server subprocess to listen.
HTTP_START_TIMEOUT = 60.0
_STOP_TIMEOUT = 10.0
_MIB = 1024.0 * 1024.0

Progress = Callable[[str], None]


@dataclass(frozen=True)
class BenchConfig:
    """What to benchmark.

    Attributes:
        env: a registered environment name (``"atari"``).
        env_args: its options in CLI form (``["--game", "pong"]``): passed as
            they are to a server subprocess, parsed for the in-process side.
        transport: ``"memory"`` (server object in this process), ``"stdio"``
            (a subprocess), ``"http"`` (a subprocess on a free loopback port) or
            ``"ray"`` (``replicas`` servers on a local Ray Serve cluster, one URL;
            the ``ray`` extra).
        frames: ``"png"`` (images, decoded to arrays by the client), ``"zstd"``
            (compressed arrays, the client's default), ``"raw"``
            (compact arrays) or ``"none"`` (the observation is not sent).
        batch: episodes stepped together (one ``step_batch`` call per step over MCP).
        concurrent: with ``batch`` N, N concurrent ``step`` calls per step instead
            of one ``step_batch`` call.
        workers: the server's worker processes (``serve --workers``; 0: none).
        steps: environment steps per side per repeat (rounded up to a multiple of ``batch``).
        repeats: timed repeats per side; the figures are medians.
        warmup: untimed calls per side before the first repeat.
        seed: seeds the episodes (``seed + i``) and the random actions.
        record: the MCP side's server records every episode into this directory
            (``serve --record``): the figures then include recording.
        replicas: with ``transport="ray"``, how many server replicas.
        servers: with ``--vs``, how many server processes the MCP side's episodes are
            spread over (``MCPVectorEnv(targets=[command] * servers)``).
    """

    env: str
    env_args: tuple[str, ...] = ()
    transport: BenchTransport = "stdio"
    frames: BenchFrames = "zstd"
    batch: int = 1
    concurrent: bool = False
    workers: int = 0
    steps: int = DEFAULT_STEPS
    repeats: int = DEFAULT_REPEATS
    warmup: int = DEFAULT_WARMUP
    seed: int = 0
    #: Record every MCP-side episode (``serve --record``) into this directory.
    record: str | None = None
    replicas: int = 1
    servers: int = 1

    def check(self) -> None:
        """Raise :class:`ArgumentError` for a value out of range."""
        for name in ("batch", "steps", "repeats"):
            if getattr(self, name) < 1:
                raise ArgumentError(f"--{name} must be at least 1, got {getattr(self, name)}")
        if self.concurrent and self.batch < 2:
            raise ArgumentError(
                f"--concurrent steps a batch of episodes with concurrent calls: it needs "
                f"--batch 2 or more, got --batch {self.batch}"
            )
        if self.warmup < 0:
            raise ArgumentError(f"--warmup must be 0 or more, got {self.warmup}")
        if self.workers < 0:
            raise ArgumentError(f"--workers must be 0 or more, got {self.workers}")
        if self.transport not in TRANSPORTS:
            raise ArgumentError(
                f"transport must be one of {', '.join(TRANSPORTS)}, got {self.transport!r}"
            )
        if self.servers < 1:
            raise ArgumentError(f"--servers must be at least 1, got {self.servers}")
        if self.replicas < 1 or (self.replicas > 1 and self.transport != "ray"):
            raise ArgumentError(
                f"--replicas {self.replicas}: replicas are for --transport ray (1 or more)"
            )
        check_frames(self.frames, BENCH_FRAMES)


def _median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def _environment_facts() -> dict[str, Any]:
    """Python, platform, CPUs, load and package versions: what makes figures comparable."""
    versions: dict[str, str | None] = {}
    for package in ("openenv-mcp", "fastmcp", "mcp", "ale-py", "numpy", "pybase64"):
        try:
            versions[package] = version(package)
        except PackageNotFoundError:
            versions[package] = None
    try:
        usable: int | None = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        usable = None
    try:
        load: list[float] | None = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = None
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        # Not platform.platform(): it runs `uname -p` in a subprocess.
        "platform": "-".join(
            (platform.system(), platform.release(), platform.machine(), *platform.libc_ver())
        ),
        "cpu_count": os.cpu_count(),
        "cpus_usable": usable,
        "load_average": load,
        "versions": versions,
        "timestamp": datetime.now(UTC).isoformat(timespec="seconds"),
    }


class _Report:
    """A result dataclass with a ``facts`` field, printed flat by ``--json``."""

    def as_dict(self) -> dict[str, Any]:
        """Every field as one flat JSON-able object (the facts merged in)."""
        data = asdict(self)  # type: ignore[call-overload]
        facts = data.pop("facts")
        return {**data, **facts}


@dataclass
class BenchResult(_Report):
    """The figures of one :func:`run_bench` run; :meth:`as_dict` is the ``--json`` form.

    Steps are environment steps (a batch of N counts N). Figures are medians
    over ``repeats``; the ``*_repeats`` lists hold each repeat's own figure.
    """

    env: str
    env_args: list[str]
    options: dict[str, Any]
    transport: BenchTransport
    frames: BenchFrames
    batch: int
    concurrent: bool
    workers: int
    steps: int
    repeats: int
    warmup: int
    seed: int
    raw_steps_per_s: float
    mcp_steps_per_s: float
    ratio: float
    raw_ms_per_step: float
    mcp_ms_per_step: float
    mcp_ms_per_call: float
    raw_steps_per_s_repeats: list[float]
    mcp_steps_per_s_repeats: list[float]
    ratio_repeats: list[float]
    #: Sums over the timed steps of each side; equal when the environment is
    #: deterministic, which shows both sides ran the same workload.
    raw_reward_total: float
    mcp_reward_total: float
    raw_episodes_ended: int
    mcp_episodes_ended: int
    #: The directory the MCP side recorded into (``--record``), and the bytes it wrote
    #: per recorded step.
    record: str | None = None
    recorded_bytes_per_step: float | None = None
    #: Server replicas behind the URL (``transport="ray"``).
    replicas: int = 1
    facts: dict[str, Any] = field(default_factory=_environment_facts)

    def table(self) -> str:
        """A short human-readable table of the figures."""
        lines = [
            f"openenv-mcp bench {' '.join([self.env, *self.env_args])}: "
            f"transport {self.transport}, frames {self.frames}, batch {self.batch}"
            f"{' (concurrent calls)' if self.concurrent else ''}, "
            f"{self.workers} workers, "
            + (f"{self.replicas} replicas, " if self.transport == "ray" else "")
            + f"{self.steps} steps x {self.repeats} repeats (medians)",
            f"  {'':<22}{'steps/s':>10}{'ms/step':>10}",
            f"  {'raw (in-process)':<22}{self.raw_steps_per_s:>10,.0f}"
            f"{self.raw_ms_per_step:>10.3f}",
            f"  {f'MCP ({self.transport})':<22}{self.mcp_steps_per_s:>10,.0f}"
            f"{self.mcp_ms_per_step:>10.3f}",
            f"  ratio MCP/raw: {self.ratio:.3f}  (per repeat: "
            f"{', '.join(f'{r:.3f}' for r in self.ratio_repeats)})",
        ]
        if self.record is not None:
            per = self.recorded_bytes_per_step
            lines.append(
                f"  recorded into {self.record}: "
                + ("nothing" if per is None else f"{per:,.0f} bytes per step")
            )
        return "\n".join(lines)


@dataclass
class LiveResult(_Report):
    """The figures of one :func:`run_live` scale check; :meth:`as_dict` is the ``--json`` form.

    ``rss_*`` are of the server process (stdio, http) or of this process
    (memory), with their worker processes, in MiB, read from
    ``/proc/PID/status`` (``None`` where there is no ``/proc``): before is after
    the first episode opened (which pays for lazy imports), so the figure per
    episode is over the other ``live_episodes - 1``.
    """

    env: str
    env_args: list[str]
    options: dict[str, Any]
    transport: BenchTransport
    live_episodes: int
    rss_of: str
    rss_before_mib: float | None
    rss_after_mib: float | None
    mib_per_episode: float | None
    answered: int
    failures: list[str]
    open_s: float
    step_check_s: float
    facts: dict[str, Any] = field(default_factory=_environment_facts)

    def table(self) -> str:
        """A short human-readable summary."""

        def mib(value: float | None) -> str:
            return "n/a" if value is None else f"{value:,.1f} MiB"

        per = "n/a" if self.mib_per_episode is None else f"{self.mib_per_episode:.2f} MiB"
        lines = [
            f"openenv-mcp bench {' '.join([self.env, *self.env_args])}: "
            f"{self.live_episodes} live episodes on one server over {self.transport}",
            f"  RSS of the {self.rss_of}: {mib(self.rss_before_mib)} before, "
            f"{mib(self.rss_after_mib)} after ({per} per episode)",
            f"  opened in {self.open_s:.1f} s; every episode answered a step: "
            f"{self.answered}/{self.live_episodes} ({self.step_check_s:.2f} s)",
        ]
        lines += [f"  failed: {failure}" for failure in self.failures[:5]]
        return "\n".join(lines)


# -- the workload ---------------------------------------------------------------------------


def _resolve(config: BenchConfig) -> tuple[type[Environment[Any]], BaseModel, dict[str, Any]]:
    """The environment class, its validated Config, and the options as keyword arguments."""
    env_cls = get_env_class(config.env)
    (options,) = parse_cli_options([env_cls.Config], list(config.env_args), where=config.env)
    return env_cls, make_config(env_cls.Config, options, env_cls.name), options


@dataclass(frozen=True)
class _Pick:
    """A random legal action of an env whose legal actions change with its state
    (``info["action_mask"]``): chosen where the episode is, by each side alike (the
    episodes are the same, seeds taking effect, so their masks are too)."""

    k: int
    start: int = 0

    def resolve(self, mask: Any) -> int:
        legal = np.flatnonzero(np.asarray(mask))
        if not len(legal):
            raise ArgumentError("the episode has no legal action (an all-zero action_mask)")
        return self.start + int(legal[self.k % len(legal)])


def _resolve_pick(action: Any, mask: Any) -> Any:
    return action.resolve(mask) if isinstance(action, _Pick) else action


def _sampler(env: Environment[Any], info: dict[str, Any]) -> Callable[[np.random.Generator], Any]:
    """Draw one random action (as it travels on the wire), from the seeded generator."""
    actions, space = env.action_set, env.action_space
    if info.get("action_mask") is not None and isinstance(space, gym_spaces.Discrete):
        start = int(space.start)
        return lambda rng: _Pick(int(rng.integers(2**31)), start)
    if actions is not None:
        return actions.sample
    if isinstance(space, gym_spaces.Text):
        # Short messages; never "bye", which would end echo's episodes early.
        return lambda rng: f"message {int(rng.integers(1_000_000))}"

    def sample(rng: np.random.Generator) -> Any:
        space.seed(int(rng.integers(2**31)))
        return encode(space, space.sample())

    return sample


class _Seeds:
    """Reset seeds: episode ``i`` starts with ``seed + i``, later resets count on from there."""

    def __init__(self, seed: int, first: int) -> None:
        self._next = seed + first

    def __call__(self) -> int:
        value = self._next
        self._next += 1
        return value % 2**31


@dataclass
class _Tally:
    reward: float = 0.0
    ended: int = 0


class _RawSide:
    """N environment instances in this process, stepped round-robin."""

    def __init__(self, env_cls: type[Environment[Any]], config: BaseModel, batch: int, seed: int):
        self.envs = [env_cls(config) for _ in range(batch)]
        self._seeds = _Seeds(seed, batch)
        self.elapsed = 0.0
        #: Each env's legal actions now, where it has a mask (picked actions need it).
        self.masks: list[Any] = []
        for i, env in enumerate(self.envs):
            _, info = env.reset(seed=seed + i)
            self.masks.append(info.get("action_mask"))

    def run(self, actions: list[Any], tally: _Tally) -> None:
        envs, n = self.envs, len(self.envs)
        # The server parses; untimed, except for actions picked where the episode is.
        picked = any(isinstance(a, _Pick) for a in actions)
        parsed = actions if picked else [envs[0].parse_action(a) for a in actions]
        gc.collect()
        paused = 0.0
        start = time.perf_counter()
        for k, action in enumerate(parsed):
            i = k % n
            env = envs[i]
            if picked:
                action = env.parse_action(_resolve_pick(action, self.masks[i]))
            result = env.step(action)
            tally.reward += result.reward
            self.masks[i] = result.info.get("action_mask")
            if result.terminated or result.truncated:
                tally.ended += 1
                began = time.perf_counter()
                _, info = env.reset(seed=self._seeds())
                self.masks[i] = info.get("action_mask")
                paused += time.perf_counter() - began
        self.elapsed = time.perf_counter() - start - paused

    def close(self) -> None:
        for env in self.envs:
            env.close()


class _McpSide:
    """N episodes on one MCP connection, stepped as a trainer would.

    batch 1: :meth:`MCPEnvClient.step` (frames zstd, raw or png), or the ``step`` tool
    with ``frames="none"`` through :meth:`MCPEnvClient.call` (the client itself
    always asks for the observation). batch N: :func:`step_batch`, one
    ``step_batch`` call per step over the connection, as :class:`MCPVectorEnv` does;
    or, ``concurrent``, one ``step`` call per episode, all in flight at once.
    """

    def __init__(
        self,
        root: MCPEnvClient,
        batch: int,
        frames: BenchFrames,
        seed: int,
        concurrent: bool = False,
    ) -> None:
        self.root = root
        self.concurrent = concurrent
        self.clients: list[Episode] = [root, *(root.spawn() for _ in range(batch - 1))]
        self.frames = frames
        self.seed = seed
        self._seeds = _Seeds(seed, batch)
        self.elapsed = 0.0
        self._paused = 0.0
        array = is_array_space(root.observation_space)
        # As the client does: only array observations travel as frames.
        self._wire_frames = frames if frames == "none" or array else "raw"
        if batch > 1 and not concurrent and STEP_BATCH_TOOL not in root.tool_names:
            raise ArgumentError(f"--batch {batch} needs a server with a {STEP_BATCH_TOOL} tool")

    async def start(self) -> None:
        self.masks: list[Any] = []
        for i, client in enumerate(self.clients):
            _, info = await client.reset(seed=self.seed + i)
            self.masks.append(info.get("action_mask"))

    async def run(self, actions: list[Any], tally: _Tally) -> None:
        n = len(self.clients)
        calls = [actions[k : k + n] for k in range(0, len(actions), n)]
        gc.collect()
        self._paused = 0.0
        start = time.perf_counter()
        for group in calls:
            group = [_resolve_pick(a, self.masks[i]) for i, a in enumerate(group)]
            if n > 1 and not self.concurrent:
                await self._step_batch(group, tally)
                continue
            if n == 1:
                views = [await self._step(self.root, group[0])]
            else:
                views = await self._step_concurrently(group)
            for i, (_, view) in enumerate(zip(self.clients, views, strict=True)):
                await self._count(i, view, tally)
        self.elapsed = time.perf_counter() - start - self._paused

    async def _step(self, client: Episode, action: Any) -> dict[str, Any]:
        """One ``step`` call; its reward and whether the episode ended."""
        if self.frames == "none":
            return await client.call("step", action=action, frames="none")
        _, reward, terminated, truncated, info = await client.step(action)
        return {"reward": reward, "ended": terminated or truncated, "info": info}

    async def _step_concurrently(self, actions: list[Any]) -> list[dict[str, Any]]:
        """One ``step`` call per episode, all in flight at once."""
        views: list[dict[str, Any]] = [{}] * len(actions)

        async def step(i: int) -> None:
            views[i] = await self._step(self.clients[i], actions[i])

        async with anyio.create_task_group() as calls:
            for i in range(len(actions)):
                calls.start_soon(step, i)
        return views

    async def _step_batch(self, actions: list[Any], tally: _Tally) -> None:
        if self._wire_frames != "none":
            transitions = await step_batch(self.clients, actions)
            for i, (_, (_, reward, terminated, truncated, info)) in enumerate(
                zip(self.clients, transitions, strict=True)
            ):
                await self._count(
                    i, {"reward": reward, "ended": terminated or truncated, "info": info}, tally
                )
            return
        # The client always asks for observations; "none" is the bare tool call.
        steps = [
            {"episode_id": c.episode_id, "action": a}
            for c, a in zip(self.clients, actions, strict=True)
        ]
        answer = await self.root.call(STEP_BATCH_TOOL, steps=steps, frames="none")
        for i, (_, view) in enumerate(zip(self.clients, answer["results"], strict=True)):
            if "error" in view:
                raise error_from_wire(str(view["error"]))
            await self._count(i, view, tally)

    async def _count(self, i: int, view: dict[str, Any], tally: _Tally) -> None:
        """Add episode ``i``'s step reward; reset (untimed) it if it ended."""
        tally.reward += float(view["reward"])
        self.masks[i] = (view.get("info") or {}).get("action_mask")
        if view.get("ended") or view.get("terminated") or view.get("truncated"):
            tally.ended += 1
            began = time.perf_counter()
            _, info = await self.clients[i].reset(seed=self._seeds())
            self.masks[i] = info.get("action_mask")
            self._paused += time.perf_counter() - began


# -- servers --------------------------------------------------------------------------------


def _serve_command(env: str, transport: str, env_args: Sequence[str], *extra: str) -> list[str]:
    # Warnings only: a log line per call (uvicorn's access log) would be timed too.
    return python_command(
        "-m",
        "openenv_mcp",
        "serve",
        env,
        f"--{transport}",
        "--log-level",
        "WARNING",
        *extra,
        *env_args,
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL after a bounded wait; always reaped."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(_STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(_STOP_TIMEOUT)


@contextlib.asynccontextmanager
async def _http_server(
    env: str, env_args: Sequence[str], extra: Sequence[str]
) -> AsyncIterator[tuple[str, int]]:
    """``openenv-mcp serve ENV --http`` on a free loopback port: yields its URL and PID."""
    port = _free_port()
    command = _serve_command(env, "http", env_args, "--port", str(port), *extra)
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        try:
            with anyio.fail_after(HTTP_START_TIMEOUT):
                while not _listening(port):
                    if proc.poll() is not None:
                        log.seek(0)
                        tail = log.read().decode("utf-8", "replace")[-2000:]
                        raise ServerDied(f"the HTTP server exited ({proc.returncode}):\n{tail}")
                    await anyio.sleep(0.05)
            yield f"http://127.0.0.1:{port}/mcp", proc.pid
        except TimeoutError:
            raise ServerDied(
                f"the HTTP server did not listen on port {port} within {HTTP_START_TIMEOUT:g}s"
            ) from None
        finally:
            _stop(proc)


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def _children(parent: int | None = None) -> set[int]:
    """PIDs of the children of ``parent`` (this process by default; Linux ``/proc``, else empty)."""
    me = os.getpid() if parent is None else parent
    found: set[int] = set()
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            with contextlib.suppress(OSError, ValueError, IndexError):
                with open(f"/proc/{entry.name}/stat", "rb") as stat:
                    # "pid (comm) state ppid ...": comm may hold spaces, so split after ")".
                    fields = stat.read().rsplit(b")", 1)[1].split()
                if int(fields[1]) == me:
                    found.add(int(entry.name))
    return found


def _rss_mib(pid: int | None, tree: bool = False) -> float | None:
    """Resident memory of ``pid`` in MiB (``VmRSS``), or ``None`` where it cannot be read.

    With ``tree``, of ``pid`` and its descendants (a server's worker processes).
    """
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/status") as status:
            kib = next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
    except (OSError, StopIteration):
        return None
    total = kib * 1024 / _MIB
    if tree:
        total += sum(_rss_mib(child, tree=True) or 0.0 for child in _children(pid))
    return total


@contextlib.asynccontextmanager
async def _connect(
    config: BenchConfig, options: dict[str, Any], frames: str, max_episodes: int | None = None
) -> AsyncIterator[tuple[MCPEnvClient, int | None]]:
    """A connected client over ``config.transport``, and the PID whose memory is the server's."""
    # One client holds every episode: its cap is the server's.
    extra = (
        ["--max-episodes", str(max_episodes), "--max-episodes-per-client", str(max_episodes)]
        if max_episodes
        else []
    )
    if config.workers:
        extra += ["--workers", str(config.workers)]
    if config.record:
        extra += ["--record", config.record]
    client_frames: Any = "zstd" if frames == "none" else frames
    connect = _CONNECTORS[config.transport]
    async with connect(config, options, extra, client_frames, max_episodes) as connected:
        yield connected


Connected = AsyncIterator[tuple[MCPEnvClient, int | None]]


@contextlib.asynccontextmanager
async def _connect_memory(
    config: BenchConfig, options: dict[str, Any], extra: list[str], frames: Any, most: int | None
) -> Connected:
    settings = ServerSettings(
        max_episodes=most or ServerSettings().max_episodes,
        workers=config.workers,
        record=config.record,
    )
    server = build_server(config.env, settings=settings, **options)
    try:
        async with MCPEnvClient(server, frames=frames) as client:
            yield client, os.getpid()
    finally:
        await get_app(server).aclose()


@contextlib.asynccontextmanager
async def _connect_stdio(
    config: BenchConfig, options: dict[str, Any], extra: list[str], frames: Any, most: int | None
) -> Connected:
    before = _children()
    command = _serve_command(config.env, "stdio", config.env_args, *extra)
    async with MCPEnvClient(command, frames=frames) as client:
        started = sorted(_children() - before)
        yield client, started[0] if len(started) == 1 else None


@contextlib.asynccontextmanager
async def _connect_http(
    config: BenchConfig, options: dict[str, Any], extra: list[str], frames: Any, most: int | None
) -> Connected:
    async with (
        _http_server(config.env, config.env_args, extra) as (url, pid),
        MCPEnvClient(url, frames=frames) as client,
    ):
        yield client, pid


@contextlib.asynccontextmanager
async def _connect_ray(
    config: BenchConfig, options: dict[str, Any], extra: list[str], frames: Any, most: int | None
) -> Connected:
    if extra:
        raise ArgumentError("--transport ray takes no --workers, --record or live episodes")
    from openenv_mcp.cluster import deploy

    deployment = await anyio.to_thread.run_sync(
        lambda: deploy(config.env, replicas=config.replicas, options=options, port=_free_port())
    )
    try:
        async with MCPEnvClient(deployment.url, frames=frames) as client:
            yield client, None
    finally:
        await anyio.to_thread.run_sync(deployment.shutdown)


#: How bench reaches a server over each transport (openenv_mcp.transports names them).
_CONNECTORS: dict[TransportName, Any] = {
    "memory": _connect_memory,
    "stdio": _connect_stdio,
    "http": _connect_http,
    "ray": _connect_ray,
}
assert set(_CONNECTORS) == set(TRANSPORTS)


# -- the runs -------------------------------------------------------------------------------


def _action_lists(
    sample: Callable[[np.random.Generator], Any], seed: int, *lengths: int
) -> Iterator[list[Any]]:
    """The same action lists for both sides: warm-up first, then one per repeat."""
    rng = np.random.default_rng(seed)
    for length in lengths:
        yield [sample(rng) for _ in range(length)]


async def _bench(config: BenchConfig, progress: Progress) -> BenchResult:
    config.check()
    env_cls, env_config, options = _resolve(config)
    batch = config.batch
    calls = math.ceil(config.steps / batch)
    steps = calls * batch
    raw = _RawSide(env_cls, env_config, batch, config.seed)
    try:
        sample = _sampler(raw.envs[0], {"action_mask": raw.masks[0]})
        lists = list(
            _action_lists(sample, config.seed, config.warmup * batch, *[steps] * config.repeats)
        )
        progress(f"starting the {config.transport} server for {config.env}...")
        async with _connect(config, options, config.frames) as (client, _pid):
            mcp = _McpSide(client, batch, config.frames, config.seed, config.concurrent)
            await mcp.start()
            warm_raw, warm_mcp = _Tally(), _Tally()
            raw.run(lists[0], warm_raw)
            await mcp.run(lists[0], warm_mcp)
            raw_rates: list[float] = []
            mcp_rates: list[float] = []
            raw_tally, mcp_tally = _Tally(), _Tally()
            for repeat, actions in enumerate(lists[1:]):
                # ABBA order: neither side always runs right after the other.
                if repeat % 2 == 0:
                    raw.run(actions, raw_tally)
                    await mcp.run(actions, mcp_tally)
                else:
                    await mcp.run(actions, mcp_tally)
                    raw.run(actions, raw_tally)
                raw_rates.append(steps / raw.elapsed)
                mcp_rates.append(steps / mcp.elapsed)
                progress(
                    f"repeat {repeat + 1}/{config.repeats}: raw {raw_rates[-1]:,.0f} steps/s, "
                    f"MCP {mcp_rates[-1]:,.0f} steps/s, ratio {mcp_rates[-1] / raw_rates[-1]:.3f}"
                )
    finally:
        raw.close()
    raw_median, mcp_median = _median(raw_rates), _median(mcp_rates)
    return BenchResult(
        env=config.env,
        env_args=list(config.env_args),
        options=env_config.model_dump(mode="json"),
        transport=config.transport,
        frames=config.frames,
        batch=batch,
        concurrent=config.concurrent,
        workers=config.workers,
        steps=steps,
        repeats=config.repeats,
        warmup=config.warmup,
        seed=config.seed,
        raw_steps_per_s=raw_median,
        mcp_steps_per_s=mcp_median,
        ratio=mcp_median / raw_median,
        raw_ms_per_step=1000.0 / raw_median,
        mcp_ms_per_step=1000.0 / mcp_median,
        mcp_ms_per_call=1000.0 * batch / mcp_median,
        raw_steps_per_s_repeats=raw_rates,
        mcp_steps_per_s_repeats=mcp_rates,
        ratio_repeats=[m / r for m, r in zip(mcp_rates, raw_rates, strict=True)],
        raw_reward_total=raw_tally.reward,
        mcp_reward_total=mcp_tally.reward,
        raw_episodes_ended=raw_tally.ended,
        mcp_episodes_ended=mcp_tally.ended,
        record=config.record,
        recorded_bytes_per_step=_recorded_bytes_per_step(config.record),
        replicas=config.replicas,
    )


def _recorded_bytes_per_step(directory: str | None) -> float | None:
    """The recordings' size over the steps they hold (start and end records included)."""
    if directory is None:
        return None
    files = list(Path(directory).rglob("*.jsonl"))
    steps = 0
    for path in files:
        with open(path, "rb") as f:
            steps += sum(1 for line in f if line.startswith(b'{"kind":"step"'))
    return sum(p.stat().st_size for p in files) / steps if steps else None


async def _live(config: BenchConfig, count: int, progress: Progress) -> LiveResult:
    config.check()
    if count < 1:
        raise ArgumentError(f"--live-episodes must be at least 1, got {count}")
    env_cls, env_config, options = _resolve(config)
    prototype = env_cls(env_config)
    try:
        sample = _sampler(prototype, prototype.reset(seed=config.seed)[1])
    finally:
        prototype.close()
    rng = np.random.default_rng(config.seed)
    progress(f"starting the {config.transport} server for {config.env}...")
    # Room for every episode, whatever the server's default limit.
    async with _connect(config, options, "raw", max_episodes=max(count, 1024)) as (root, pid):
        # The first episode pays for lazy imports (and starts any worker processes):
        # memory per episode is counted from after it.
        start = time.perf_counter()
        masks = [(await root.reset(seed=config.seed))[1].get("action_mask")]
        gc.collect()
        rss_before = _rss_mib(pid, tree=True)
        clients = [root, *(root.spawn() for _ in range(count - 1))]
        for i, client in enumerate(clients[1:], start=1):
            masks.append((await client.reset(seed=config.seed + i))[1].get("action_mask"))
            if (i + 1) % 100 == 0:
                took = time.perf_counter() - start
                progress(f"opened {i + 1}/{count} episodes ({took:.0f} s)")
        open_s = time.perf_counter() - start
        start = time.perf_counter()
        failures: list[str] = []
        for client, mask in zip(clients, masks, strict=True):
            try:
                action = _resolve_pick(sample(rng), mask)
                await client.call("step", action=action, frames="none")
            except OpenEnvError as exc:
                failures.append(f"{client.episode_id}: {type(exc).__name__}: {exc}")
        step_check_s = time.perf_counter() - start
        gc.collect()
        rss_after = _rss_mib(pid, tree=True)
        if config.transport == "memory":
            # The server lives in this process: free its episodes (a subprocess just exits).
            for client in clients[1:]:
                await client.close()
    per_episode = (
        None
        if rss_before is None or rss_after is None or count < 2
        else (rss_after - rss_before) / (count - 1)
    )
    return LiveResult(
        env=config.env,
        env_args=list(config.env_args),
        options=env_config.model_dump(mode="json"),
        transport=config.transport,
        live_episodes=count,
        rss_of=("this process" if config.transport == "memory" else "server process")
        + (" with its worker processes" if config.workers else ""),
        rss_before_mib=rss_before,
        rss_after_mib=rss_after,
        mib_per_episode=per_episode,
        answered=count - len(failures),
        failures=failures,
        open_s=open_s,
        step_check_s=step_check_s,
    )


def _quiet(message: str) -> None:
    return None


def run_bench(config: BenchConfig, progress: Progress | None = None) -> BenchResult:
    """Benchmark ``config.env`` in-process and over MCP, in one run.

    Args:
        config: what to run (see :class:`BenchConfig`).
        progress: called with a line of progress now and then (the CLI writes
            it to stderr).

    Returns:
        The medians, per-repeat figures and facts about the machine.

    Raises:
        OpenEnvError: a bad option, an unknown environment, or a server that
            failed (:class:`~openenv_mcp.errors.ServerDied`).
    """
    return anyio.run(_bench, config, progress or _quiet)


def run_live(config: BenchConfig, count: int, progress: Progress | None = None) -> LiveResult:
    """Open ``count`` episodes on one server over ``config.transport``; measure memory.

    Each episode is reset (seeded ``seed + i``), then every one is stepped once
    (``frames="none"``) to check it still answers. Memory is the server
    process's resident set (this process's for ``"memory"``) after connecting
    and after the step check.

    Raises:
        OpenEnvError: as :func:`run_bench`.
    """
    return anyio.run(_live, config, count, progress or _quiet)


# -- start-up -------------------------------------------------------------------------------

#: What ``--startup`` imports in fresh interpreters, each timed inside its interpreter.
IMPORTS = {
    "import openenv_mcp": "import openenv_mcp",
    "from openenv_mcp import MCPEnvClient": "from openenv_mcp import MCPEnvClient",
    "build_server (the server stack)": "from openenv_mcp.server import build_server",
}
_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "openenv-mcp-bench", "version": "0"},
    },
}
_INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
_TOOLS_LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


@dataclass
class StartupResult(_Report):
    """The figures of one :func:`run_startup` run (medians over repeats, in seconds).

    ``import_s`` maps each statement of :data:`IMPORTS` to its own time in a fresh
    interpreter (measured inside it, so never below zero), and ``import_modules``
    to the modules it left loaded. The stdio figures time ``serve ENV --stdio`` as a
    harness starts it: the first start with nothing kept from an earlier one
    (``stdio_first_*``), then ``repeats`` starts of each kind of stop, which answer
    the handshake and the tool list from what the first start answered
    (:mod:`openenv_mcp.server.transports._prelude`). The ``host_*`` figures time ``serve ENV
    --stdio --episode-host`` (:mod:`openenv_mcp.server.transports._host`): its first start, with
    nothing kept and no episode host running (``host_first_*``), then ``repeats``
    starts with no host running (``host_cold_*``: the host starts while the front
    answers the handshake) and with one running (``host_warm_*``).
    """

    env: str
    env_args: list[str]
    repeats: int
    python_s: float
    import_s: dict[str, float]
    import_modules: dict[str, int]
    stdio_first_initialize_s: float
    stdio_first_tools_list_s: float
    stdio_initialize_s: float
    stdio_tools_list_s: float
    stdio_first_reset_s: float
    #: Idle server: from the stop (stdin closed, SIGINT, SIGTERM) to the process gone.
    stdio_exit_s: dict[str, float]
    worker_ready_s: float
    worker_first_env_s: float
    stdio_initialize_s_repeats: list[float]
    stdio_tools_list_s_repeats: list[float]
    worker_ready_s_repeats: list[float]
    host_first_initialize_s: float
    host_first_tools_list_s: float
    host_first_reset_s: float
    host_cold_initialize_s: float
    host_cold_tools_list_s: float
    host_cold_first_reset_s: float
    host_warm_initialize_s: float
    host_warm_tools_list_s: float
    host_warm_first_reset_s: float
    host_cold_initialize_s_repeats: list[float]
    host_cold_tools_list_s_repeats: list[float]
    facts: dict[str, Any] = field(default_factory=_environment_facts)

    def table(self) -> str:
        """A short human-readable summary."""
        lines = [
            f"openenv-mcp bench {' '.join([self.env, *self.env_args])} --startup: medians of "
            f"{self.repeats} (seconds)",
            f"  python -c pass (spawn to exit)           {self.python_s:7.3f}",
        ]
        for what, took in self.import_s.items():
            lines.append(f"  {what:<40} {took:7.3f}  ({self.import_modules[what]} modules loaded)")
        lines += [
            f"  stdio, first start: spawn -> initialize  {self.stdio_first_initialize_s:7.3f}",
            f"  stdio, first start: spawn -> tools/list  {self.stdio_first_tools_list_s:7.3f}",
            f"  stdio: spawn -> initialize answered      {self.stdio_initialize_s:7.3f}",
            f"  stdio: spawn -> tools/list answered      {self.stdio_tools_list_s:7.3f}",
            f"  stdio: spawn -> first reset answered     {self.stdio_first_reset_s:7.3f}",
            *(
                f"  stdio: {how + ' -> exited':<33} {took:7.3f}"
                for how, took in self.stdio_exit_s.items()
            ),
            f"  worker: spawn -> ready                   {self.worker_ready_s:7.3f}",
            f"  worker: spawn -> first env made          {self.worker_first_env_s:7.3f}",
        ]
        hosts = {
            "first start": (self.host_first_initialize_s, self.host_first_tools_list_s),
            "cold": (self.host_cold_initialize_s, self.host_cold_tools_list_s),
            "warm": (self.host_warm_initialize_s, self.host_warm_tools_list_s),
        }
        resets = (
            self.host_first_reset_s,
            self.host_cold_first_reset_s,
            self.host_warm_first_reset_s,
        )
        for (kind, (initialized, listed)), reset in zip(hosts.items(), resets, strict=True):
            for what, took in (
                ("initialize", initialized),
                ("tools/list", listed),
                ("first reset", reset),
            ):
                label = f"host, {kind}: spawn -> {what}"
                lines.append(f"  {label:<40} {took:7.3f}")
        return "\n".join(lines)


def _timed_python(code: str) -> tuple[float, int]:
    """Seconds ``code`` takes in a fresh interpreter (timed there), and the modules it
    left loaded."""
    script = (
        "import sys, time\n_began = time.perf_counter()\n"
        f"{code}\n"
        "print(time.perf_counter() - _began, len(sys.modules))"
    )
    done = subprocess.run(
        python_command("-c", script), capture_output=True, text=True, timeout=120, check=True
    )
    took, modules = done.stdout.split()[-2:]
    return float(took), int(modules)


def _python_start() -> float:
    """Seconds from spawning ``python -c pass`` to its exit."""
    began = time.perf_counter()
    subprocess.run(python_command("-c", "pass"), check=True, timeout=120)
    return time.perf_counter() - began


#: How ``--startup`` stops an idle stdio server: as a harness would.
STOPS = ("stdin closed", "SIGINT", "SIGTERM")


@dataclass
class _StdioStart:
    initialized: float
    listed: float
    first_reset: float
    exited: float


def _stdio_start(
    config: BenchConfig, stop: str, answers: str, host_dir: str | None = None
) -> _StdioStart:
    """Seconds from spawning ``serve ENV --stdio`` to its initialize answer, its tool
    list and a reset's answer, and from ``stop`` (one of :data:`STOPS`) to its exit.
    ``answers`` is the directory of kept answers (``OPENENV_MCP_ANSWER_CACHE``); with
    ``host_dir`` the server is ``--episode-host``'s front, its hosts in that directory."""
    import json

    from openenv_mcp.server.transports._answers import CACHE_ENV
    from openenv_mcp.server.transports._host import HOST_DIR_ENV

    extra = ["--episode-host"] if host_dir is not None else []
    command = _serve_command(config.env, "stdio", config.env_args, *extra)
    env = {**os.environ, CACHE_ENV: answers}
    if host_dir is not None:
        env[HOST_DIR_ENV] = host_dir
    began = time.perf_counter()
    proc = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None

        def ask(*messages: dict[str, Any]) -> float:
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
            proc.stdin.flush()
            if b'"result"' not in proc.stdout.readline():
                raise ServerDied(f"{' '.join(command)} did not answer {messages[-1]['method']}")
            return time.perf_counter() - began

        initialized = ask(_INITIALIZE)
        listed = ask(_INITIALIZED, _TOOLS_LIST)
        reset = {"jsonrpc": "2.0", "id": 3, "method": "tools/call"}
        reset["params"] = {"name": "reset", "arguments": {"seed": 0, "frames": "none"}}
        first_reset = ask(reset)
        stopped = time.perf_counter()
        if stop == "stdin closed":
            proc.stdin.close()
        else:
            proc.send_signal(getattr(signal, stop))
        proc.wait(_STOP_TIMEOUT)
        return _StdioStart(initialized, listed, first_reset, time.perf_counter() - stopped)
    finally:
        _stop(proc)


def _hosts_in(directory: str) -> list[int]:
    """Episode host processes serving a socket in ``directory`` (their command line names it)."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            with contextlib.suppress(OSError):
                cmdline = (proc / "cmdline").read_bytes()
                if b"--episode-host-socket" in cmdline and directory.encode() in cmdline:
                    found.append(int(proc.name))
    return found


def _stop_hosts(directory: str) -> None:
    """Stop the episode hosts serving in ``directory`` (SIGTERM, SIGKILL after a bounded
    wait), and wait for their sockets to go: the next front finds no host."""
    hosts = _hosts_in(directory)
    for pid in hosts:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + _STOP_TIMEOUT
    while time.monotonic() < deadline and (_running(hosts) or any(Path(directory).glob("*.sock"))):
        time.sleep(0.02)
    for pid in _running(hosts):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    for sock in Path(directory).glob("*.sock"):
        sock.unlink(missing_ok=True)


def _running(pids: list[int]) -> list[int]:
    """Those of ``pids`` still running (not gone, not a zombie)."""
    live = []
    for pid in pids:
        with contextlib.suppress(OSError):
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
            if state != "Z":
                live.append(pid)
    return live


def _host_starts(config: BenchConfig, answers: str, repeats: int) -> dict[str, Any]:
    """The ``host_*`` figures of :class:`StartupResult`: ``serve ENV --stdio --episode-host``
    first with nothing kept and no host, then ``repeats`` times with no host running (cold)
    and with the one that start left running (warm)."""
    import shutil

    with contextlib.ExitStack() as stack:
        host_dir = tempfile.mkdtemp(prefix="oeh-")  # short: a socket path has 107 bytes
        stack.callback(shutil.rmtree, host_dir, True)
        stack.callback(_stop_hosts, host_dir)
        first = _stdio_start(config, STOPS[0], answers, host_dir)
        cold, warm = [], []
        for _ in range(repeats):
            _stop_hosts(host_dir)
            cold.append(_stdio_start(config, STOPS[0], answers, host_dir))
            warm.append(_stdio_start(config, STOPS[0], answers, host_dir))
    return {
        "host_first_initialize_s": first.initialized,
        "host_first_tools_list_s": first.listed,
        "host_first_reset_s": first.first_reset,
        "host_cold_initialize_s": _median([s.initialized for s in cold]),
        "host_cold_tools_list_s": _median([s.listed for s in cold]),
        "host_cold_first_reset_s": _median([s.first_reset for s in cold]),
        "host_warm_initialize_s": _median([s.initialized for s in warm]),
        "host_warm_tools_list_s": _median([s.listed for s in warm]),
        "host_warm_first_reset_s": _median([s.first_reset for s in warm]),
        "host_cold_initialize_s_repeats": [s.initialized for s in cold],
        "host_cold_tools_list_s_repeats": [s.listed for s in cold],
    }


async def _worker_start(
    env_cls: type[Environment[Any]], env_config: BaseModel
) -> tuple[float, float]:
    """Seconds from spawning a worker process to its ready, and to its first environment."""
    from openenv_mcp.server.episodes._workers import WorkerRuntime

    began = time.perf_counter()
    runtime = WorkerRuntime(env_cls, env_config, 1, call_timeout=120.0, start_timeout=120.0)
    try:
        await runtime.create("bench")
        made = time.perf_counter() - began
        ready = runtime.workers[0].start_seconds
        assert ready is not None
        return ready, made
    finally:
        await runtime.aclose()


async def _startup(config: BenchConfig, progress: Progress) -> StartupResult:
    env_cls, env_config, _ = _resolve(config)
    repeats = max(1, config.repeats)
    python = [_python_start() for _ in range(repeats)]
    imports: dict[str, float] = {}
    modules: dict[str, int] = {}
    for what, code in IMPORTS.items():
        runs = [_timed_python(code) for _ in range(repeats)]
        imports[what] = _median([t for t, _ in runs])
        modules[what] = runs[-1][1]
        progress(f"{what}: {imports[what]:.3f} s ({modules[what]} modules)")
    with tempfile.TemporaryDirectory(prefix="openenv-mcp-answers-") as answers:
        first = _stdio_start(config, STOPS[0], answers)
        progress(f"stdio first start: {first.initialized:.3f} s to initialize")
        stdio = [_stdio_start(config, stop, answers) for _ in range(repeats) for stop in STOPS]
        progress(f"stdio start: {_median([s.initialized for s in stdio]):.3f} s to initialize")
        hosts = _host_starts(config, answers, repeats)
    progress(
        f"episode host start: {hosts['host_cold_initialize_s']:.3f} s to initialize (cold), "
        f"{hosts['host_warm_initialize_s']:.3f} s (warm)"
    )
    exits = {
        stop: _median([s.exited for s in stdio[i :: len(STOPS)]]) for i, stop in enumerate(STOPS)
    }
    workers = [await _worker_start(env_cls, env_config) for _ in range(repeats)]
    progress(f"worker start: {_median([w[0] for w in workers]):.3f} s to ready")
    return StartupResult(
        env=config.env,
        env_args=list(config.env_args),
        repeats=repeats,
        python_s=_median(python),
        import_s=imports,
        import_modules=modules,
        stdio_first_initialize_s=first.initialized,
        stdio_first_tools_list_s=first.listed,
        stdio_initialize_s=_median([s.initialized for s in stdio]),
        stdio_tools_list_s=_median([s.listed for s in stdio]),
        stdio_first_reset_s=_median([s.first_reset for s in stdio]),
        stdio_exit_s=exits,
        worker_ready_s=_median([w[0] for w in workers]),
        worker_first_env_s=_median([w[1] for w in workers]),
        stdio_initialize_s_repeats=[s.initialized for s in stdio],
        stdio_tools_list_s_repeats=[s.listed for s in stdio],
        worker_ready_s_repeats=[w[0] for w in workers],
        **hosts,
    )


def run_startup(config: BenchConfig, progress: Progress | None = None) -> StartupResult:
    """Time what comes before the first step: imports, a stdio server's start, a worker's.

    Each figure is the median of ``config.repeats`` fresh starts.

    Raises:
        OpenEnvError: as :func:`run_bench`.
    """
    return anyio.run(_startup, config, progress or _quiet)

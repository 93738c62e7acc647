"""``openenv-mcp bench ENV --vs ...``: what a trainer feels, against the stacks it would use
without MCP, in one run.

``bench`` alone compares a server with its own environment class in-process. A trainer
compares with what it would run instead:

* ``--vs gymnasium-async`` (or ``gymnasium-sync``): :class:`MCPVectorEnv` with ``--batch
  N`` episodes against ``gymnasium.make_vec(..., N, vectorization_mode="async")`` of the
  same environment (``ALE/<Game>-v5`` with the server's options, or the gymnasium env's
  id; with ``--preprocess``, Gymnasium's ``AtariPreprocessing`` and
  ``FrameStackObservation`` in each sub-env). ``--servers K`` spreads the episodes over
  K stdio servers (``MCPVectorEnv(targets=[command] * K)``): K processes stepping at
  once, as the async vector env's processes do; ``--workers`` gives each server its own;
* ``--vs envpool``: the same against EnvPool's Atari (its threads, one per core), with its
  options set to the server's (its frame skip max-pools the last two frames, and it
  resizes: the same work as ``--preprocess``; without it, 210x160 frames);
* ``--vs sb3-ppo``: wall time of Stable-Baselines3's PPO (``MlpPolicy``, default
  hyperparameters, ``--batch`` envs in a ``DummyVecEnv``) learning ``--steps`` steps
  through :class:`MCPGymEnv` against the same on ``gymnasium.make``. torch runs on one
  thread on both sides (on a shared 2-core machine a second one fights the server). The
  runs are the same run (seeds take effect): their episode returns are compared.

Both sides step the same seeded random actions from the same seeds, autoresets included
(what a trainer's loop gets); repeats alternate the order (ABBA), and the ratio is MCP's
median rate over the other's (for PPO, the other's median time over MCP's).
"""

from __future__ import annotations

import contextlib
import gc
import os
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel

from openenv_mcp.bench._run import (
    BenchConfig,
    Progress,
    _environment_facts,
    _resolve,
    _serve_command,
)
from openenv_mcp.errors import ArgumentError, DependencyNotInstalled

__all__ = ["VERSUS", "Versus", "VersusResult", "run_versus"]

#: What ``--vs`` compares with.
Versus = Literal["gymnasium-async", "gymnasium-sync", "envpool", "sb3-ppo"]
VERSUS: tuple[Versus, ...] = ("gymnasium-async", "gymnasium-sync", "envpool", "sb3-ppo")


@dataclass
class VersusResult:
    """The figures of one ``--vs`` run; :meth:`as_dict` is the ``--json`` form.

    For vector workloads ``*_per_s`` are environment steps per second (a batch of N
    counts N); for ``sb3-ppo`` they are training steps per second of wall time.
    """

    env: str
    env_args: list[str]
    vs: Versus
    transport: str
    workers: int
    servers: int
    batch: int
    steps: int
    repeats: int
    seed: int
    other: str
    other_per_s: float
    mcp_per_s: float
    ratio: float
    other_per_s_repeats: list[float]
    mcp_per_s_repeats: list[float]
    ratio_repeats: list[float]
    #: Bytes of one observation as the trainer receives it.
    observation_bytes: int
    #: Whether both sides gave the same rewards, flags (and, for PPO, episode returns).
    same_run: bool | None = None
    notes: list[str] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=_environment_facts)

    def as_dict(self) -> dict[str, Any]:
        """Every field as one flat JSON-able object (the facts merged in)."""
        data = asdict(self)
        facts = data.pop("facts")
        return {**data, **facts}

    def table(self) -> str:
        """A short human-readable table."""
        unit = "steps/s (training)" if self.vs == "sb3-ppo" else "steps/s"
        lines = [
            f"openenv-mcp bench {' '.join([self.env, *self.env_args])} --vs {self.vs}: "
            f"{self.batch} envs, transport {self.transport}, {self.servers} server(s) with "
            f"{self.workers} workers, "
            f"{self.steps} steps x {self.repeats} repeats (medians); observation "
            f"{self.observation_bytes:,} bytes",
            f"  {'':<44}{unit:>20}",
            f"  {self.other:<44}{self.other_per_s:>20,.0f}",
            f"  {'openenv-mcp (MCP, ' + self.transport + ')':<44}{self.mcp_per_s:>20,.0f}",
            f"  ratio MCP/{self.vs}: {self.ratio:.3f}  (per repeat: "
            f"{', '.join(f'{r:.3f}' for r in self.ratio_repeats)})",
        ]
        if self.same_run is not None:
            lines.append(f"  same run both ways: {'yes' if self.same_run else 'NO'}")
        lines += [f"  note: {note}" for note in self.notes]
        return "\n".join(lines)


# -- the other side --------------------------------------------------------------------------


def _atari_kwargs(config: Any) -> dict[str, Any]:
    """``gymnasium.make("ALE/...-v5")`` keyword arguments for an atari env's config."""
    kwargs: dict[str, Any] = {
        "repeat_action_probability": config.repeat_action_probability,
        "full_action_space": config.full_action_space,
        "frameskip": 1 if config.preprocess else config.frameskip,
        "obs_type": "rgb" if config.preprocess else config.obs_type,
    }
    if config.mode is not None:
        kwargs["mode"] = config.mode
    if config.difficulty is not None:
        kwargs["difficulty"] = config.difficulty
    if config.max_episode_steps is not None and not config.preprocess:
        kwargs["max_episode_steps"] = config.max_episode_steps
    return kwargs


def _camel(game: str) -> str:
    """ALE's registered name of a rom id: ``space_invaders`` -> ``SpaceInvaders``."""
    return "".join(part.capitalize() for part in game.split("_"))


def gymnasium_maker(env: str, config: BaseModel) -> Callable[[], Any]:
    """A function making the Gymnasium env a server of ``env`` with ``config`` serves."""
    import gymnasium as gym

    if env == "gymnasium":
        gym_config: Any = config
        kwargs = dict(gym_config.kwargs)
        if gym_config.max_episode_steps is not None:
            kwargs["max_episode_steps"] = gym_config.max_episode_steps
        return lambda: gym.make(gym_config.id, **kwargs)
    if env != "atari":
        raise ArgumentError(
            f"--vs compares with Gymnasium's own env: it knows atari and gymnasium, not {env!r}"
        )
    import ale_py

    gym.register_envs(ale_py)
    atari: Any = config
    game_id, kwargs = f"ALE/{_camel(atari.game)}-v5", _atari_kwargs(atari)

    def make() -> Any:
        made = gym.make(game_id, **kwargs)
        if not atari.preprocess:
            return made
        from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation, TimeLimit

        made = AtariPreprocessing(
            made,
            noop_max=atari.noop_max,
            frame_skip=atari.frameskip,
            screen_size=atari.screen_size,
            terminal_on_life_loss=atari.terminal_on_life_loss,
            grayscale_obs=atari.obs_type == "grayscale",
        )
        if atari.frame_stack > 1:
            made = FrameStackObservation(made, atari.frame_stack)
        if atari.max_episode_steps is not None:
            made = TimeLimit(made, atari.max_episode_steps)
        return made

    return make


def _envpool(config: Any, n: int, seed: int) -> Any:
    try:
        import envpool
    except ImportError:
        raise DependencyNotInstalled("--vs envpool needs EnvPool: pip install envpool") from None
    task = f"{_camel(config.game)}-v5"
    pre = config.preprocess
    height, width = (config.screen_size, config.screen_size) if pre else (210, 160)
    return envpool.make(
        task,
        env_type="gymnasium",
        num_envs=n,
        batch_size=n,
        num_threads=os.cpu_count() or 1,
        seed=seed,
        stack_num=config.frame_stack if pre else 1,
        frame_skip=config.frameskip,
        noop_max=config.noop_max if pre else 1,
        gray_scale=config.obs_type == "grayscale",
        img_height=height,
        img_width=width,
        episodic_life=bool(pre and config.terminal_on_life_loss),
        reward_clip=False,
        use_fire_reset=False,
        repeat_action_probability=config.repeat_action_probability,
        full_action_space=config.full_action_space,
        **({"max_episode_steps": config.max_episode_steps} if config.max_episode_steps else {}),
    )


# -- vector workloads ------------------------------------------------------------------------


def _rates(
    sides: Sequence[Callable[[np.ndarray], float]],
    action_lists: Sequence[np.ndarray],
    repeats: int,
    progress: Progress,
    names: Sequence[str],
) -> list[list[float]]:
    """Each side's rate per repeat, alternating their order (ABBA)."""
    rates: list[list[float]] = [[] for _ in sides]
    for repeat in range(repeats):
        order = list(range(len(sides)))
        if repeat % 2:
            order.reverse()
        for i in order:
            rates[i].append(sides[i](action_lists[repeat]))
        progress(
            f"repeat {repeat + 1}/{repeats}: "
            + ", ".join(f"{names[i]} {rates[i][-1]:,.0f}/s" for i in range(len(sides)))
        )
    return rates


def _stepper(env: Any, tally: list[float]) -> Callable[[np.ndarray], float]:
    """Steps/s of a vector env over an ``(steps, n)`` action array; rewards and ends tallied."""

    def run(actions: np.ndarray) -> float:
        gc.collect()
        start = time.perf_counter()
        for row in actions:
            _, reward, terminated, truncated, _ = env.step(row)
            tally.append(float(np.sum(reward)) + 1e3 * float(np.sum(terminated | truncated)))
        return actions.size / (time.perf_counter() - start)

    return run


def _observation_bytes(space: Any) -> int:
    shape = getattr(space, "shape", None) or ()
    dtype = getattr(space, "dtype", None)
    itemsize = np.dtype(dtype).itemsize if dtype is not None else 8
    return int(np.prod(shape, dtype=np.int64)) * itemsize


@contextlib.contextmanager
def _mcp_vector(config: BenchConfig, n: int) -> Iterator[Any]:
    from openenv_mcp.client import MCPVectorEnv

    extra = ["--workers", str(config.workers)] if config.workers else []
    if config.transport != "stdio":
        raise ArgumentError(f"--vs runs the server over stdio, got --transport {config.transport}")
    command = _serve_command(config.env, "stdio", config.env_args, *extra)
    env = MCPVectorEnv(targets=[command] * config.servers, num_envs=n)
    try:
        yield env
    finally:
        env.close()


def _other_side(
    config: BenchConfig, vs: Versus, env_config: BaseModel
) -> tuple[Callable[[], Any], str, list[str]]:
    """What to compare with: a maker of it, its name, notes. Checked before any server
    starts (an env it cannot compare with is refused at once)."""
    import gymnasium as gym

    n, seed = config.batch, config.seed
    if vs == "envpool":
        atari: Any = env_config
        if not hasattr(atari, "preprocess"):
            raise ArgumentError("--vs envpool compares Atari envs: bench atari --game ...")
        threads = os.cpu_count() or 1
        notes = [
            "EnvPool's frame skip max-pools the last two frames and its noop/fire options "
            "are its own: the same work, not the same episodes"
        ]
        return lambda: _envpool(atari, n, seed), f"EnvPool ({threads} threads)", notes
    mode = vs.removeprefix("gymnasium-")
    # What make_vec(id, n, vectorization_mode=mode) makes, for a wrapped env too.
    vector = gym.vector.AsyncVectorEnv if mode == "async" else gym.vector.SyncVectorEnv
    maker = gymnasium_maker(config.env, env_config)
    return lambda: vector([maker] * n), f"gymnasium {vector.__name__}", []


def _vector(config: BenchConfig, vs: Versus, progress: Progress) -> VersusResult:
    _, env_config, _ = _resolve(config)
    n, seed = config.batch, config.seed
    calls = max(1, config.steps // n)
    make_other, name, notes = _other_side(config, vs, env_config)
    with contextlib.ExitStack() as stack:
        other = make_other()
        stack.callback(other.close)
        mcp = stack.enter_context(_mcp_vector(config, n))
        space = mcp.single_action_space
        rng = np.random.default_rng(seed)
        lists = [rng.integers(space.n, size=(calls, n)) for _ in range(config.repeats + 1)]
        mcp.reset(seed=seed)
        if vs == "envpool":
            other.reset()  # its seed is fixed when made
        else:
            other.reset(seed=seed)
        mcp_tally: list[float] = []
        other_tally: list[float] = []
        # Warm-up: imports, caches, pipes' first wake-ups.
        warm = lists[0][: max(1, config.warmup)]
        _stepper(mcp, mcp_tally)(warm)
        _stepper(other, other_tally)(warm)
        other_rates, mcp_rates = _rates(
            [_stepper(other, other_tally), _stepper(mcp, mcp_tally)],
            lists[1:],
            config.repeats,
            progress,
            [vs, "MCP"],
        )
        same = mcp_tally == other_tally if vs != "envpool" else None
        obs_bytes = _observation_bytes(mcp.single_observation_space)
    return _result(config, vs, name, other_rates, mcp_rates, calls * n, obs_bytes, same, notes)


def _result(
    config: BenchConfig,
    vs: Versus,
    name: str,
    other: list[float],
    mcp: list[float],
    steps: int,
    obs_bytes: int,
    same: bool | None,
    notes: list[str],
) -> VersusResult:
    other_median, mcp_median = statistics.median(other), statistics.median(mcp)
    return VersusResult(
        env=config.env,
        env_args=list(config.env_args),
        vs=vs,
        transport=config.transport,
        workers=config.workers,
        servers=config.servers,
        batch=config.batch,
        steps=steps,
        repeats=config.repeats,
        seed=config.seed,
        other=name,
        other_per_s=other_median,
        mcp_per_s=mcp_median,
        ratio=mcp_median / other_median,
        other_per_s_repeats=other,
        mcp_per_s_repeats=mcp,
        ratio_repeats=[m / o for m, o in zip(mcp, other, strict=True)],
        observation_bytes=obs_bytes,
        same_run=same,
        notes=notes,
    )


# -- SB3 PPO ---------------------------------------------------------------------------------


def _ppo(config: BenchConfig, progress: Progress) -> VersusResult:
    try:
        import torch
        from stable_baselines3 import PPO
        from stable_baselines3.common.env_util import make_vec_env
    except ImportError:
        raise DependencyNotInstalled(
            "--vs sb3-ppo needs Stable-Baselines3 and torch: pip install stable-baselines3"
        ) from None
    from openenv_mcp.client import MCPGymEnv

    _, env_config, _ = _resolve(config)
    local = gymnasium_maker(config.env, env_config)
    extra = ["--workers", str(config.workers)] if config.workers else []
    command = _serve_command(config.env, "stdio", config.env_args, *extra)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)

    def train(make: Callable[[], Any]) -> tuple[float, list[float]]:
        venv = make_vec_env(make, n_envs=config.batch, seed=config.seed)
        try:
            model = PPO("MlpPolicy", venv, seed=config.seed, device="cpu")
            gc.collect()
            start = time.perf_counter()
            model.learn(config.steps)
            took = time.perf_counter() - start
            returns = [r for rs in venv.env_method("get_episode_rewards") for r in rs]
            return config.steps / took, returns
        finally:
            venv.close()

    try:
        runs: list[list[tuple[float, list[float]]]] = [[], []]
        for repeat in range(config.repeats):
            order = [0, 1] if repeat % 2 == 0 else [1, 0]
            for i in order:
                runs[i].append(train(local if i == 0 else (lambda: MCPGymEnv(command))))
            progress(
                f"repeat {repeat + 1}/{config.repeats}: gymnasium {runs[0][-1][0]:,.0f}/s, "
                f"MCP {runs[1][-1][0]:,.0f}/s"
            )
    finally:
        torch.set_num_threads(threads)
    same = all(a[1] == b[1] for a, b in zip(*runs, strict=True))
    space = local().observation_space
    return _result(
        config,
        "sb3-ppo",
        f"SB3 PPO on gymnasium.make ({config.batch} envs)",
        [r[0] for r in runs[0]],
        [r[0] for r in runs[1]],
        config.steps,
        _observation_bytes(space),
        same,
        ["torch on one thread on both sides"],
    )


def run_versus(config: BenchConfig, vs: Versus, progress: Progress | None = None) -> VersusResult:
    """Run ``config``'s workload through MCP against ``vs`` (see the module's docstring).

    Raises:
        ArgumentError: an env ``vs`` cannot compare with, or a bad option.
        DependencyNotInstalled: EnvPool or SB3 is missing.
    """
    config.check()
    if vs not in VERSUS:
        raise ArgumentError(f"--vs must be one of {', '.join(VERSUS)}, got {vs!r}")
    say = progress or (lambda message: None)
    if vs == "sb3-ppo":
        return _ppo(config, say)
    return _vector(config, vs, say)

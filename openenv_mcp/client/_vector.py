"""``MCPVectorEnv``: Gymnasium's ``VectorEnv`` over N episodes of one or more servers.

Episodes are stepped with one batched ``step_batch`` call per server (per replica,
behind a sharded server's one URL) per step where the server lists that tool, else
with one ``step`` call each, all in flight together. That choice is made in one
place: :meth:`Session.step_batch`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from gymnasium import spaces as gym_spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array, iterate

from openenv_mcp.client._gym import RENDER_FPS, split_reset_options
from openenv_mcp.client._loop import EventLoopThread
from openenv_mcp.client._session import Episode, Session, Target, Transition
from openenv_mcp.errors import (
    ArgumentError,
    OpenEnvError,
    ResetNeeded,
    UnknownEpisode,
    UnknownSnapshot,
)
from openenv_mcp.tasks import TASK_OPTIONS

__all__ = ["MCPVectorEnv"]


class MCPVectorEnv(VectorEnv[Any, Any, Any]):
    """N episodes of openenv-mcp servers as one Gymnasium ``VectorEnv``.

    ::

        envs = MCPVectorEnv("openenv-mcp serve atari --game pong", num_envs=8)
        obs, infos = envs.reset(seed=0)          # seeds 0..7
        obs, rewards, terminations, truncations, infos = envs.step(envs.action_space.sample())

    Episodes live on one server (``target``) or are spread round-robin over
    several (``targets=[url1, url2]``); each server is one :class:`Session`.

    **Autoreset** follows Gymnasium 1.x's :class:`~gymnasium.vector.AutoresetMode`:

    * ``NEXT_STEP`` (the default, as in Gymnasium): when an episode ends, the
      next ``step`` resets it instead of acting, returning its first
      observation with reward 0 and ``terminated = truncated = False``.
    * ``SAME_STEP``: the ending step resets at once and returns the new first
      observation; the last one is in ``infos["final_obs"]`` and its info in
      ``infos["final_info"]``.
    * ``DISABLED``: nothing resets itself; call ``reset(options={"reset_mask": mask})``.

    Seeds follow Gymnasium exactly: ``reset(seed=s)`` seeds episode ``i`` with ``s + i``
    (a list gives each its own; any non-negative integers); later resets without a
    seed, autoresets included, continue each episode's own random stream on its
    server, so the same seeds and actions give what ``gymnasium.make_vec`` gives.
    ``reset(options={"from_snapshot": handle})`` starts every (masked) episode from one
    snapshot: a GRPO group.

    Args:
        target: one server (a FastMCP server, a command, or a URL).
        num_envs: number of episodes (default: one per target).
        targets: several servers instead of ``target``.
        autoreset_mode: see above.
        render_mode: ``"rgb_array"`` (``render()`` returns each episode's frame) or ``None``.
        batch: use a server's ``step_batch`` tool where it lists one.
        recover: what a step does for an episode its server no longer holds (its replica
            died: :class:`~openenv_mcp.errors.EpisodeLost`, see ``serve --ray``; or the
            server restarted or evicted it: ``UnknownEpisode``): ``"reset"``
            (the default) ends it as ``truncated`` with ``infos["episode_lost"]``, and
            autoreset starts a new one on a live replica; ``"replay"`` rebuilds it on a
            live replica from its seed and actions (exactly: seeds take effect), then
            takes the step, with ``infos["episode_recovered"]``. Episodes started from
            a snapshot cannot be replayed and are reset. To be replayable, every reset
            then sends a seed: a reset without one draws it from a generator seeded by
            the last seed given (so a run still repeats, but differs from Gymnasium's).
        **client_options: passed to each :class:`Session` (``frames``, ``timeout``...).
    """

    def __init__(
        self,
        target: Target | None = None,
        num_envs: int | None = None,
        *,
        targets: Sequence[Target] | None = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        render_mode: str | None = None,
        batch: bool = True,
        recover: Literal["reset", "replay"] = "reset",
        **client_options: Any,
    ) -> None:
        if recover not in ("reset", "replay"):
            raise ArgumentError(f"recover must be 'reset' or 'replay', got {recover!r}")
        self.recover = recover
        if (target is None) == (targets is None):
            raise ArgumentError("give one server as target, or several as targets=[...]")
        servers = [target] if targets is None else list(targets)
        if not servers:
            raise ArgumentError("targets is empty: give at least one server")
        count = len(servers) if num_envs is None else num_envs
        if count < 1:
            raise ArgumentError(f"num_envs must be at least 1, got {count}")
        self.autoreset_mode = AutoresetMode(autoreset_mode)
        self.num_envs = count
        self._batch = batch
        self._loop = EventLoopThread()
        self.sessions = [Session(server, **client_options) for server in servers[:count]]
        try:
            self.episodes: list[Episode] = self._loop.run(self._open, count)
        except BaseException:
            self._loop.stop()
            raise
        self._loop.adopt(self, _bind(_close_all, self.episodes, self.sessions))
        first = self.sessions[0].server_spec
        for session in self.sessions[1:]:
            other = session.server_spec
            if (other.action_space, other.observation_space) != (
                first.action_space,
                first.observation_space,
            ):
                self.close()
                raise ArgumentError(
                    f"the servers differ: {first.name} has {first.action_space} and "
                    f"{first.observation_space}, {other.name} has {other.action_space} "
                    f"and {other.observation_space}"
                )
        self.single_action_space = first.action_space
        self.single_observation_space = first.observation_space
        self.action_space = batch_space(self.single_action_space, count)
        self.observation_space = batch_space(self.single_observation_space, count)
        has_frame = first.has_frame
        self.metadata = {
            "autoreset_mode": self.autoreset_mode,
            "render_modes": ["rgb_array"] if has_frame else [],
            "render_fps": RENDER_FPS,
        }
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            self.close()
            raise ArgumentError(f"render_mode {render_mode!r} is not available for {first.name}")
        self.render_mode = render_mode
        #: With recover="replay": where each episode's unseeded resets draw a seed from.
        self._replay_rngs: list[np.random.Generator | None] = [None] * count
        #: Each episode's seed, options and actions since its reset (recover="replay"),
        #: or ``None`` where it cannot be replayed (started from a snapshot).
        self._replay_logs: list[_ReplayLog | None] = [None] * count
        self._autoreset = np.zeros(count, dtype=np.bool_)
        # Each episode's latest observation: a masked reset returns the others' as they are.
        self._obs: list[Any] = [None] * count

    async def _open(self, count: int) -> list[Episode]:
        try:
            await MCPVectorEnv._gather([session.connect for session in self.sessions])
        except BaseException:
            for session in self.sessions:
                await session.close()
            raise
        return [self.sessions[i % len(self.sessions)].episode() for i in range(count)]

    # -- Gymnasium's API -----------------------------------------------------------------

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset every episode (or those in ``options["reset_mask"]``).

        Options that start a task (:mod:`openenv_mcp.tasks`) may give one ``index`` or
        ``task`` per episode (``options={"split": "test", "index": [0, 1, 2, 3]}``); an
        episode that starts a task takes the task's seed, not one from ``seed``.
        """
        super().reset(seed=seed if isinstance(seed, int) else None)
        seeds = self._seed_list(seed)
        env_options, snapshot = split_reset_options(dict(options) if options else None)
        mask = np.ones(self.num_envs, dtype=np.bool_)
        if env_options and "reset_mask" in env_options:
            mask = np.asarray(env_options.pop("reset_mask"), dtype=np.bool_)
            if mask.shape != (self.num_envs,) or not mask.any():
                raise ArgumentError(
                    f"reset_mask must be {self.num_envs} booleans, at least one True; got {mask}"
                )
            env_options = env_options or None
        indices = [i for i in range(self.num_envs) if mask[i]]
        per_env = self._per_env_options(env_options)
        for i in indices:
            # A task fixes its own seed (its episodes replay from the task alone).
            named_task = per_env[i] is not None and any(k in per_env[i] for k in TASK_OPTIONS)  # type: ignore[operator]
            seeds[i] = self._next_seed(i, seeds[i]) if snapshot is None and not named_task else None
        results = self._loop.run(self._reset_many, indices, seeds, per_env, snapshot)
        self._autoreset[mask] = False
        for i in indices:
            self._obs[i] = results[i][0]
        infos = self._batch_infos([(i, results[i][1]) for i in indices])
        return self._batch_obs(), infos

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every episode concurrently; autoreset as :attr:`autoreset_mode` says."""
        action_list = list(iterate(self.action_space, actions))
        results = self._loop.run(self._step_all, action_list)
        rewards = np.zeros(self.num_envs, dtype=np.float64)
        terminations = np.zeros(self.num_envs, dtype=np.bool_)
        truncations = np.zeros(self.num_envs, dtype=np.bool_)
        for i in range(self.num_envs):
            obs, reward, terminated, truncated, _ = results[i]
            self._obs[i] = obs
            rewards[i], terminations[i], truncations[i] = reward, terminated, truncated
        infos = self._batch_infos([(i, results[i][4]) for i in range(self.num_envs)])
        self._autoreset = terminations | truncations
        if self.autoreset_mode == AutoresetMode.SAME_STEP:
            self._autoreset[:] = False
        return self._batch_obs(), rewards, terminations, truncations, infos

    def render(self) -> tuple[Any, ...] | None:
        """Each episode's current frame (``render_mode="rgb_array"``), else ``None``."""
        if self.render_mode is None:
            return None
        return tuple(self._loop.run(self._gather, [e.render for e in self.episodes]))

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Call server tool ``name`` for every episode (with its ``episode_id``)."""
        if args:
            raise ArgumentError("tools take keyword arguments only")

        def caller(episode: Episode) -> Any:
            async def call() -> dict[str, Any]:
                return await episode.call(name, **kwargs)

            return call

        return tuple(self._loop.run(self._gather, [caller(e) for e in self.episodes]))

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """Attribute ``name`` of each :class:`Episode` (``episode_id``...)."""
        return tuple(getattr(e, name) for e in self.episodes)

    def snapshot(self, index: int = 0) -> str:
        """Snapshot episode ``index``; ``reset(options={"from_snapshot": handle})`` forks it."""
        return self._loop.run(self.episodes[index].snapshot)

    def close_extras(self, **kwargs: Any) -> None:
        """Close every episode, then every session (and stdio server).

        Envs never closed are closed the same way at interpreter exit, or when collected.
        """
        self._loop.stop()

    # -- the async work ------------------------------------------------------------------

    def _seed_list(self, seed: int | list[int | None] | None) -> list[int | None]:
        if seed is None:
            return [None] * self.num_envs
        if isinstance(seed, int):
            return [seed + i for i in range(self.num_envs)]
        if len(seed) != self.num_envs:
            raise ArgumentError(f"expected {self.num_envs} seeds, got {len(seed)}")
        return list(seed)

    def _batch_obs(self) -> Any:
        # A fresh batch every call: callers keep what they are given.
        if any(obs is None for obs in self._obs):
            raise ResetNeeded("some episodes have no observation yet: reset them all first")
        space = self.single_observation_space
        if type(space) is gym_spaces.Box:  # the common case, in one copy
            return np.stack(self._obs)
        out: Any = create_empty_array(space, self.num_envs, fn=np.zeros)
        return concatenate(space, self._obs, out)

    def _batch_infos(self, infos: list[tuple[int, dict[str, Any]]]) -> dict[str, Any]:
        """What Gymnasium's ``_add_info`` makes of each ``(index, info)`` in turn, built a
        key at a time (one array per key, not one pass per episode and key)."""
        columns: dict[str, list[tuple[int, Any]]] = {}
        for i, info in infos:
            for key, value in info.items():
                columns.setdefault(key, []).append((i, value))
        batched: dict[str, Any] = {}
        n = self.num_envs
        for key, present in columns.items():
            values = [value for _, value in present]
            if key == "final_obs" or any(isinstance(value, dict) for value in values):
                for i, value in present:  # objects, and dicts recurse: Gymnasium's own way
                    batched = self._add_info(batched, {key: value}, i)
                continue
            first = values[0]
            kind = type(first)
            if kind in (int, float, bool) or issubclass(kind, np.number):
                dtype: Any = kind
            elif isinstance(first, np.ndarray):
                dtype = first.dtype
            else:
                dtype = None  # objects, one by one (a list value must not become a row)
            rows = [i for i, _ in present]
            if dtype is not None and len(rows) == n and rows == list(range(n)):
                array = np.array(values, dtype=dtype)  # every episode has it: one call
            else:
                array = (
                    np.full(n, fill_value=None, dtype=object)
                    if dtype is None
                    else np.zeros((n, *np.shape(first)), dtype=dtype)
                )
                for i, value in present:
                    array[i] = value
            mask = np.zeros(n, dtype=np.bool_)
            mask[rows] = True
            batched[key], batched[f"_{key}"] = array, mask
        return batched

    @staticmethod
    async def _gather(funcs: list[Callable[[], Awaitable[Any]]]) -> list[Any]:
        """Run ``funcs`` concurrently to the end; their results in order, or the first error.

        One episode's error does not cancel the others' calls (their steps would
        happen on the server unseen here), and it is raised as itself: callers
        catch InvalidAction or ServerDied, not a group of them. Plain asyncio: the
        client runs on it, and a task group per step cost a fifth of a batch's client time.
        """
        if len(funcs) == 1:
            return [await funcs[0]()]
        outcomes = await asyncio.gather(*(func() for func in funcs), return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException) and not isinstance(outcome, Exception):
                raise outcome  # cancellation and the like, as themselves
        errors = [outcome for outcome in outcomes if isinstance(outcome, Exception)]
        if errors:
            raise errors[0]
        return list(outcomes)

    def _per_env_options(self, options: dict[str, Any] | None) -> list[dict[str, Any] | None]:
        """Each episode's reset options: the same for all, except that ``index`` and
        ``task`` (:mod:`openenv_mcp.tasks`) may be a sequence with one per episode, so
        each episode starts a task of its own."""
        if not options:
            return [options] * self.num_envs
        spread = {
            key: list(value)
            for key in ("index", "task")
            if isinstance(value := options.get(key), (list, tuple, np.ndarray))
        }
        for key, values in spread.items():
            if len(values) != self.num_envs:
                raise ArgumentError(
                    f"reset option {key!r} as a list needs one per episode ({self.num_envs}), "
                    f"got {len(values)}"
                )
        if not spread:
            return [options] * self.num_envs
        return [
            {
                **options,
                **{
                    key: (int(values[i]) if key == "index" else values[i])
                    for key, values in spread.items()
                },
            }
            for i in range(self.num_envs)
        ]

    async def _reset_many(
        self,
        indices: list[int],
        seeds: list[int | None],
        options: list[dict[str, Any] | None],
        snapshot: str | None,
    ) -> dict[int, tuple[Any, dict[str, Any]]]:
        def resetter(i: int) -> Any:
            async def reset() -> tuple[Any, dict[str, Any]]:
                return await self.episodes[i].reset(
                    seed=seeds[i], options=options[i], from_snapshot=snapshot
                )

            return reset

        done = await self._gather([resetter(i) for i in indices])
        for i in indices:
            self._replay_logs[i] = (
                None if snapshot is not None else _ReplayLog(seeds[i], options[i])
            )
        return dict(zip(indices, done, strict=True))

    def _next_seed(self, i: int, seed: int | None) -> int | None:
        """Episode ``i``'s next seed: as given (Gymnasium's rule: ``None`` continues the
        episode's stream); with ``recover="replay"`` always one, so a lost episode can
        be rebuilt exactly."""
        if self.recover != "replay":
            return seed
        if seed is not None:
            self._replay_rngs[i] = np.random.default_rng(seed)
            return seed
        rng = self._replay_rngs[i]
        if rng is None:
            rng = self._replay_rngs[i] = np.random.default_rng()
        return int(rng.integers(2**63))

    async def _step_all(self, actions: list[Any]) -> dict[int, Transition]:
        autoreset = [i for i in range(self.num_envs) if self._autoreset[i]]
        if self.autoreset_mode == AutoresetMode.DISABLED and autoreset:
            raise ArgumentError(
                f"episodes {autoreset} have ended and autoreset is DISABLED: reset them with "
                "reset(options={'reset_mask': mask})"
            )
        stepping = [i for i in range(self.num_envs) if i not in autoreset]
        results: dict[int, Transition] = {}

        async def step_groups() -> None:
            groups: dict[int, list[int]] = {}  # by session
            for i in stepping:
                groups.setdefault(id(self.episodes[i].session), []).append(i)
            await self._gather(
                [_bind(self._step_group, results, members, actions) for members in groups.values()]
            )

        async def autoreset_one(i: int) -> None:  # NEXT_STEP: this step resets instead of acting
            seed = self._next_seed(i, None)
            obs, info = await self.episodes[i].reset(seed=seed)
            self._replay_logs[i] = _ReplayLog(seed, None)
            results[i] = (obs, 0.0, False, False, info)

        if autoreset:
            await self._gather([step_groups, *(_bind(autoreset_one, i) for i in autoreset)])
        else:
            await step_groups()
        if self.autoreset_mode == AutoresetMode.SAME_STEP:
            ended = [i for i in stepping if results[i][2] or results[i][3]]
            seeds: list[int | None] = [None] * self.num_envs
            for i in ended:
                seeds[i] = self._next_seed(i, None)
            for i, (obs, info) in (
                await self._reset_many(ended, seeds, [None] * self.num_envs, None)
            ).items():
                last_obs, reward, terminated, truncated, last_info = results[i]
                info = {**info, "final_obs": last_obs, "final_info": last_info}
                results[i] = (obs, reward, terminated, truncated, info)
        return results

    async def _step_group(
        self,
        results: dict[int, Transition],
        indices: list[int],
        actions: list[Any],
    ) -> None:
        """Step the episodes that share one session (see :meth:`Session.step_batch`).

        Every episode that stepped is recorded before the first error is raised.
        """
        group = [self.episodes[i] for i in indices]
        outcomes = await group[0].session.step_batch(
            group,
            [actions[i] for i in indices],
            return_exceptions=True,
            use_tool=self._batch,
        )
        first_error: OpenEnvError | None = None
        for i, outcome in zip(indices, outcomes, strict=True):
            if isinstance(outcome, OpenEnvError) and await self._was_lost(i, outcome):
                results[i] = await self._recover(i, actions[i], outcome)
            elif isinstance(outcome, OpenEnvError):
                first_error = first_error or outcome
            else:
                results[i] = outcome
                log = self._replay_logs[i]
                if log is not None:
                    log.actions.append(actions[i])
        if first_error is not None:
            raise first_error

    async def _was_lost(self, i: int, error: OpenEnvError) -> bool:
        """Whether episode ``i``'s step failed because the server no longer holds it: it
        said :class:`EpisodeLost` (its replica died) or :class:`UnknownEpisode` (a
        restarted server, an idle episode evicted), or the call failed in flight and the
        episode now says so."""
        if isinstance(error, UnknownEpisode) and not isinstance(error, UnknownSnapshot):
            return True
        if type(error) is not OpenEnvError:  # an answer from a live env (InvalidAction...)
            return False
        try:
            await self.episodes[i].state()
        except UnknownEpisode:
            return True
        except OpenEnvError:
            return False
        return False

    async def _recover(self, i: int, action: Any, error: OpenEnvError) -> Transition:
        """Episode ``i`` is lost: rebuild it and take the step (``"replay"``), or end it."""
        episode = self.episodes[i]
        lost = episode.episode_id
        log = self._replay_logs[i]
        if self.recover == "replay" and log is not None:
            try:
                episode.forget()
                await episode.reset(seed=log.seed, options=log.options)
                for earlier in log.actions:
                    await episode.step(earlier)
                obs, reward, terminated, truncated, info = await episode.step(action)
            except OpenEnvError as exc:
                error = exc
            else:
                log.actions.append(action)
                info = {**info, "episode_recovered": True, "lost_episode_id": lost}
                return obs, reward, terminated, truncated, info
        episode.forget()
        self._replay_logs[i] = None
        info = {"episode_lost": True, "lost_episode_id": lost, "error": str(error)}
        return self._obs[i], 0.0, False, True, info


@dataclass
class _ReplayLog:
    """How to rebuild an episode: its reset's seed and options, and every action since."""

    seed: int | None
    options: dict[str, Any] | None
    actions: list[Any] = field(default_factory=list)


async def _close_all(episodes: list[Episode], sessions: list[Session]) -> None:
    try:
        for episode in episodes:
            await episode.close()
    finally:
        for session in sessions:
            await session.close()


def _bind(func: Callable[..., Awaitable[None]], *args: Any) -> Callable[[], Awaitable[None]]:
    async def bound() -> None:
        await func(*args)

    return bound

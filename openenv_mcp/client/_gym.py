"""``MCPGymEnv``: a real :class:`gymnasium.Env` whose every call is an MCP call."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Sequence
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium.envs.registration import EnvSpec

from openenv_mcp.client._ale import ALEProxy
from openenv_mcp.client._session import Session, Target
from openenv_mcp.client._spec import ServerSpec
from openenv_mcp.client._sync import SyncEnvClient
from openenv_mcp.errors import ArgumentError
from openenv_mcp.options import serve_command
from openenv_mcp.registry import serve_name
from openenv_mcp.wire.rng import generator_from_wire, rng_to_wire

__all__ = [
    "MCPGymEnv",
    "SameServer",
    "gym_spec",
    "portable_target",
    "split_reset_options",
]

#: Nominal; servers declare no frame rate, and Gymnasium wants one with render modes.
RENDER_FPS = 30
#: The extra an env serves if it has an emulator behind it for ``unwrapped.ale`` to read.
_ALE_EXTRA = "screen_grayscale"


def split_reset_options(options: dict[str, Any] | None) -> tuple[dict[str, Any] | None, str | None]:
    """Separate ``from_snapshot`` from the environment's own reset options.

    Gymnasium's ``reset`` has no snapshot argument, so adapters take it as the
    option ``"from_snapshot"``.
    """
    if not options or "from_snapshot" not in options:
        return options, None
    rest = {k: v for k, v in options.items() if k != "from_snapshot"}
    return rest or None, str(options["from_snapshot"])


class SameServer(list[str]):
    """An ``MCPGymEnv`` spec's target where the server is an object in this process.

    ``gym.make(env.spec)`` here connects to that same object (Gymnasium deep-copies
    spec arguments; this is never copied). Serialised (``EnvSpec.to_json``, a Minari
    dataset's metadata) it is what it holds as a list: the command that serves the
    same environment, with the same config and rewards, which any process can start.
    """

    def __init__(self, command: Iterable[str] = (), server: Any = None) -> None:
        super().__init__(command)
        self.server = server

    def __deepcopy__(self, memo: dict[int, Any]) -> SameServer:
        return self


#: Session options a spec leaves out: a log file is this process's, and headers may
#: hold a token, which must not end up in a dataset (pass ``headers=`` to ``gym.make``).
_UNPORTABLE_OPTIONS = ("server_log", "headers")


def gym_spec(env_name: str, target: Any, **kwargs: Any) -> EnvSpec:
    """The Gymnasium spec of an :class:`MCPGymEnv` on ``target`` (a command, a URL or
    a :class:`SameServer`): ``gym.make(spec)`` makes one; ``spec.to_json()`` works."""
    return EnvSpec(
        id=f"openenv_mcp/{env_name}-v0",
        entry_point="openenv_mcp.client:MCPGymEnv",
        kwargs={"target": target, **kwargs},
    )


def portable_target(target: Target, spec: ServerSpec) -> Any:
    """``target`` as JSON can hold it: a command or URL as it is; a server object (or a
    transport) as a :class:`SameServer` naming the command that serves the same env."""
    if isinstance(target, str):
        return target
    if isinstance(target, Sequence) and all(isinstance(a, str) for a in target):
        return list(target)
    name = spec.name
    with contextlib.suppress(ImportError, TypeError):
        from openenv_mcp.server import get_app

        name = serve_name(get_app(target).env_cls)
    return SameServer(serve_command(name, spec.config, spec.settings.get("reward") or ()), target)


class MCPGymEnv(gym.Env[Any, Any]):
    """An openenv-mcp server episode as a :class:`gymnasium.Env`.

    Passes :func:`gymnasium.utils.env_checker.check_env`. Its spaces are exactly
    the environment's (any Gymnasium space: ``Box`` actions, ``Tuple`` or ``Dict``
    observations...); observations are members of them; ``info`` holds every
    structured field of the server's answer. ``render()`` returns the current frame
    (``render_mode="rgb_array"``, for environments with frames).

    Seeds are Gymnasium's: any non-negative integer; ``reset()`` without one continues
    the episode's own random stream on the server, as ``gymnasium.make``'s env does, so
    the same seeds and actions give the same run. ``np_random`` mirrors the server env's
    generator (wrappers draw no-op starts from ``env.unwrapped.np_random``; what they
    draw is sent back with the next reset). For Atari, ``unwrapped.ale`` answers what
    SB3's and Gymnasium's Atari wrappers read (lives, screens: :class:`ALEProxy`) and
    ``unwrapped._frameskip`` is the server's frameskip.

    Reset accepts the option ``"from_snapshot"`` (a handle from
    ``env.client.snapshot()``) besides the environment's own options.

    Args:
        target: a FastMCP server, a command, or an ``http(s)://`` URL (see
            :class:`MCPEnvClient`).
        render_mode: ``"rgb_array"`` or ``None``.
        **client_options: passed to the :class:`Session` (``frames``, ``timeout``...).
    """

    metadata: dict[str, Any] = {"render_modes": ["rgb_array"], "render_fps": RENDER_FPS}  # noqa: RUF012

    def __init__(
        self, target: Target, *, render_mode: str | None = None, **client_options: Any
    ) -> None:
        if isinstance(target, SameServer) and target.server is not None:
            target = target.server
        self._adopt(SyncEnvClient.start(Session(target, **client_options)), render_mode)

    @classmethod
    def from_client(cls, client: SyncEnvClient, render_mode: str | None = None) -> MCPGymEnv:
        """An adapter over a connected sync client; closing the adapter closes the client."""
        env = cls.__new__(cls)
        env._adopt(client, render_mode)
        return env

    def _adopt(self, client: SyncEnvClient, render_mode: str | None) -> None:
        self._client = client
        self._np_random = None
        #: The generator state the server last sent (what the mirror started from).
        self._mirrored: dict[str, Any] | None = None
        self._ale: ALEProxy | None = None
        self.action_space = client.action_space
        self.observation_space = client.observation_space
        has_frame = client.server_spec.has_frame
        self.metadata = {
            "render_modes": ["rgb_array"] if has_frame else [],
            "render_fps": RENDER_FPS,
        }
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            client.close()
            raise ArgumentError(
                f"render_mode {render_mode!r} is not available for {client.env_name}; "
                f"render modes: {self.metadata['render_modes'] or 'none (it has no frame)'}"
            )
        self.render_mode = render_mode
        options = client.session.options
        self.spec = gym_spec(
            client.env_name,
            portable_target(client.session.target, client.server_spec),
            render_mode=render_mode,
            **{k: v for k, v in options.items() if k not in _UNPORTABLE_OPTIONS},
        )

    @property
    def client(self) -> SyncEnvClient:
        """The sync client underneath: ``call``, ``snapshot``, action meanings..."""
        return self._client

    def get_action_meanings(self) -> list[str]:
        """Action names in index order (as ALE's)."""
        return self._client.get_action_meanings()

    @property
    def ale(self) -> ALEProxy:
        """What Atari wrappers read of the emulator (:class:`ALEProxy`).

        Raises:
            AttributeError: the server's environment has no emulator behind it.
        """
        if _ALE_EXTRA not in self._client.server_spec.extras:
            raise AttributeError(
                f"'MCPGymEnv' object has no attribute 'ale': {self._client.env_name} has no "
                "Atari emulator behind it"
            )
        if self._ale is None:
            self._ale = ALEProxy(self._client.episode, self._client.state)
        return self._ale

    @property
    def _frameskip(self) -> int:
        """Emulator frames per step of an Atari env (``AtariEnv._frameskip``, which
        Gymnasium's ``AtariPreprocessing`` checks)."""
        spec = self._client.server_spec
        frameskip = spec.config.get("frameskip")
        if _ALE_EXTRA not in spec.extras or not isinstance(frameskip, int):
            raise AttributeError("'MCPGymEnv' object has no attribute '_frameskip'")
        return frameskip

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Start an episode: seeded, or without a seed continuing the env's own stream."""
        super().reset(seed=seed)  # Gymnasium's checks of the seed
        env_options, snapshot = split_reset_options(options)
        if snapshot is not None:
            result = self._client.reset(options=env_options, from_snapshot=snapshot)
        else:
            result = self._client.reset(seed=seed, options=env_options, np_random=self._drawn(seed))
        self._mirror()
        return result

    def _drawn(self, seed: int | None) -> dict[str, Any] | None:
        """The mirror's state, where wrappers drew from it since the server sent it."""
        if seed is not None or self._np_random is None or self._mirrored is None:
            return None
        state = rng_to_wire(self._np_random)
        return state if state != self._mirrored else None

    def _mirror(self) -> None:
        state = self._client.episode.np_random_state
        if state is not None:
            self._np_random = generator_from_wire(state)
            self._mirrored = state

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        """Take one action; returns the Gymnasium five."""
        return self._client.step(action)

    def render(self) -> np.ndarray | None:  # type: ignore[override]
        """The current frame (``HxWx3`` uint8) in ``"rgb_array"`` mode, else ``None``."""
        if self.render_mode is None:
            gym.logger.warn("render() without a render_mode: make it with render_mode='rgb_array'")
            return None
        return self._client.render()

    def close(self) -> None:
        """Close the episode and the connection (a stdio server is stopped). Idempotent."""
        self._client.close()

"""The server's static description (its ``openenv://ENV/spec`` resource), read by the client.

A server publishes it so a client knows the environment's spaces and actions
before the first ``reset``; the spaces are rebuilt exactly
(:func:`openenv_mcp.spaces.space_from_json`), so ``action_space`` and
``observation_space`` here equal the environment's own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gymnasium import spaces

from openenv_mcp.environment import ActionSet
from openenv_mcp.errors import OpenEnvError
from openenv_mcp.spaces import space_from_json

__all__ = ["ServerSpec"]


@dataclass(frozen=True)
class ServerSpec:
    """An environment server's static description.

    Attributes:
        env: the registered environment name (``"atari"``).
        title: what is served (``"Atari Breakout"``).
        description: one line about the environment.
        action_space: the Gymnasium action space.
        observation_space: the Gymnasium observation space.
        actions: names of the discrete actions, or ``None``.
        action_schema: JSON schema of ``step``'s ``action`` argument.
        has_frame: whether the server can return frames (PNG images).
        frame_is_observation: whether the observation is the RGB frame itself.
        reset_options: JSON schema ``properties`` of per-episode reset options.
        supports_snapshots: whether ``snapshot`` and ``reset(from_snapshot=...)`` work.
        config: the environment's construction options.
        settings: the server's limits and options.
        extras: the arrays a call may ask for beside the observation (an Atari env's
            screens and RAM).
    """

    env: str
    title: str
    description: str
    action_space: spaces.Space[Any]
    observation_space: spaces.Space[Any]
    actions: ActionSet | None
    action_schema: dict[str, Any]
    has_frame: bool
    frame_is_observation: bool
    reset_options: dict[str, Any]
    supports_snapshots: bool
    config: dict[str, Any]
    settings: dict[str, Any]
    extras: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ServerSpec:
        """Parse the JSON of the ``spec`` resource.

        Raises:
            OpenEnvError: it lacks what an openenv-mcp server publishes.
        """
        try:
            actions = data.get("actions")
            return cls(
                env=str(data["env"]),
                title=str(data.get("title") or data["env"]),
                description=str(data.get("description", "")),
                action_space=space_from_json(data["action_space"]),
                observation_space=space_from_json(data["observation_space"]),
                actions=ActionSet.from_json(actions) if actions else None,
                action_schema=dict(data.get("action_schema") or {}),
                has_frame=bool(data.get("has_frame", False)),
                frame_is_observation=bool(data.get("frame_is_observation", False)),
                reset_options=dict(data.get("reset_options") or {}),
                supports_snapshots=bool(data.get("supports_snapshots", False)),
                config=dict(data.get("config") or {}),
                settings=dict(data.get("settings") or {}),
                extras=tuple(str(name) for name in data.get("extras") or ()),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise OpenEnvError(
                f"the server's spec resource is not one this client reads ({exc!r}); "
                "is the server an older or newer openenv-mcp?"
            ) from None

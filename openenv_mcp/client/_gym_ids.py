"""Gymnasium ids for the adapters: ``gym.make("openenv_mcp/<env>-v0", target=...)``.

One id per registered environment name (the ``openenv_mcp.envs`` entry points),
the id :func:`~openenv_mcp.client._gym.gym_spec` gives an :class:`MCPGymEnv`'s spec:

* ``gym.make(id, target=...)`` makes an :class:`MCPGymEnv` (any keyword it takes);
  without ``target``, the environment served over stdio with its defaults
  (``openenv-mcp serve <env>``), for trainers that call ``gym.make(env_id)`` alone;
* ``gym.make_vec(id, num_envs=N, target=...)`` makes an :class:`MCPVectorEnv`: N
  episodes of one server, stepped in one call (``vectorization_mode="sync"`` or
  ``"async"`` gives Gymnasium's vector envs of N :class:`MCPGymEnv`, a server each).

Gymnasium 1.x loads no plugins: ids exist once a module registering them is imported.
Importing :mod:`openenv_mcp.client` registers these, so a string id works as
``"openenv_mcp.client:openenv_mcp/echo-v0"`` (Gymnasium imports the module before the
lookup), or as ``"openenv_mcp/echo-v0"`` after ``import openenv_mcp.client``.

Registering reads entry-point names only: no environment, extra or emulator is imported.
"""

from __future__ import annotations

from importlib.metadata import entry_points

from gymnasium.envs.registration import register, registry
from gymnasium.error import Error as GymnasiumError

from openenv_mcp.registry import ENTRY_POINT_GROUP

__all__ = ["ENTRY_POINT", "VECTOR_ENTRY_POINT", "gym_id", "register_gym_ids"]

ENTRY_POINT = "openenv_mcp.client:MCPGymEnv"
VECTOR_ENTRY_POINT = "openenv_mcp.client:MCPVectorEnv"


def gym_id(env_name: str) -> str:
    """The Gymnasium id of ``env_name``'s adapter."""
    return f"openenv_mcp/{env_name}-v0"


def register_gym_ids() -> None:
    """Register :func:`gym_id` of every environment name in the ``openenv_mcp.envs``
    entry points with Gymnasium.

    Safe to call again: an id already registered (by an earlier call, or by the user)
    is left as it is. A name Gymnasium cannot take as an id is skipped.
    """
    for name in sorted({ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)}):
        env_id = gym_id(name)
        if env_id in registry:
            continue
        try:
            register(
                id=env_id,
                entry_point=ENTRY_POINT,
                vector_entry_point=VECTOR_ENTRY_POINT,
                kwargs={"target": ["openenv-mcp", "serve", name]},
            )
        except GymnasiumError:  # a malformed id: an odd name must not break the import
            continue

"""The trainer's side: openenv-mcp environments driven over MCP, Gymnasium-shaped.

* :class:`Session`: one connection to a server; hands out episodes, steps them in batches;
* :class:`Episode`: one episode of a session (``reset``, ``step``, ``state``...);
* :class:`MCPEnvClient`: a session and its first episode, in one object;
* :class:`SyncEnvClient`: the same without ``await`` (``MCPEnvClient(...).sync()``);
* :class:`MCPGymEnv`: a :class:`gymnasium.Env` (``client.as_gym()``);
* :class:`MCPVectorEnv`: a Gymnasium ``VectorEnv`` over N episodes;
* :class:`Seat` / :class:`SyncSeat`: one seat of a game of several players
  (``client.seat(handle)``, on a server of seats: ``serve ENV --seats``);
* :class:`MCPPettingZooEnv` / :class:`MCPPettingZooParallelEnv`: PettingZoo's AEC and
  Parallel envs over every seat of a game (``client.as_pettingzoo()``, the
  ``pettingzoo`` extra);
* :func:`step_batch`: step episodes of one session in one call.

Importing this package loads none of the server stack; each name loads on first use.
It registers the Gymnasium ids ``openenv_mcp/<env>-v0`` (``gym.make`` / ``make_vec`` by
id; ``"openenv_mcp.client:openenv_mcp/<env>-v0"`` from a process that imported nothing
of ours): see :mod:`openenv_mcp.client._gym_ids`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openenv_mcp._util.lazy import lazy_exports
from openenv_mcp.client._gym_ids import register_gym_ids as _register_gym_ids

__all__ = [
    "Episode",
    "MCPEnvClient",
    "MCPGymEnv",
    "MCPPettingZooEnv",
    "MCPPettingZooParallelEnv",
    "MCPVectorEnv",
    "Seat",
    "ServerSpec",
    "Session",
    "SyncEnvClient",
    "SyncEpisode",
    "SyncSeat",
    "ToolAnswer",
    "step_batch",
]

_EXPORTS = {
    "Episode": "openenv_mcp.client._session",
    "MCPEnvClient": "openenv_mcp.client._client",
    "Session": "openenv_mcp.client._session",
    "ToolAnswer": "openenv_mcp.client._session",
    "step_batch": "openenv_mcp.client._session",
    "MCPGymEnv": "openenv_mcp.client._gym",
    "MCPVectorEnv": "openenv_mcp.client._vector",
    "MCPPettingZooEnv": "openenv_mcp.client._pettingzoo",
    "MCPPettingZooParallelEnv": "openenv_mcp.client._pettingzoo",
    "Seat": "openenv_mcp.client._seat",
    "SyncSeat": "openenv_mcp.client._sync",
    "ServerSpec": "openenv_mcp.client._spec",
    "SyncEnvClient": "openenv_mcp.client._sync",
    "SyncEpisode": "openenv_mcp.client._sync",
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

_register_gym_ids()

if TYPE_CHECKING:
    from openenv_mcp.client._client import MCPEnvClient
    from openenv_mcp.client._gym import MCPGymEnv
    from openenv_mcp.client._pettingzoo import MCPPettingZooEnv, MCPPettingZooParallelEnv
    from openenv_mcp.client._seat import Seat
    from openenv_mcp.client._session import Episode, Session, ToolAnswer, step_batch
    from openenv_mcp.client._spec import ServerSpec
    from openenv_mcp.client._sync import SyncEnvClient, SyncEpisode, SyncSeat
    from openenv_mcp.client._vector import MCPVectorEnv

"""The trainer's side: openenv-mcp environments driven over MCP, Gymnasium-shaped.

* :class:`MCPEnvClient`: async, one episode (``spawn()`` for more), any transport;
* :class:`SyncEnvClient`: the same without ``await`` (``MCPEnvClient(...).sync()``);
* :class:`MCPGymEnv`: a :class:`gymnasium.Env` (``client.as_gym()``);
* :class:`MCPVectorEnv`: a Gymnasium ``VectorEnv`` over N episodes;
* :func:`step_batch`: step a client and its ``spawn()`` siblings in one call.
"""

from openenv_mcp.client._client import MCPEnvClient, step_batch
from openenv_mcp.client._gym import MCPGymEnv
from openenv_mcp.client._spaces import ServerSpec
from openenv_mcp.client._sync import SyncEnvClient
from openenv_mcp.client._vector import MCPVectorEnv

__all__ = [
    "MCPEnvClient",
    "MCPGymEnv",
    "MCPVectorEnv",
    "ServerSpec",
    "SyncEnvClient",
    "step_batch",
]

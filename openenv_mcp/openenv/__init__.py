"""The OpenEnv bridge: one server, two protocols.

Each part sits at its floor (the framework never imports an environment; a face is a
room of the server; what an environment author imports stays cheap and low):

* :mod:`.models` (here): ``OpenEnvModels``, how an environment that is the namesake of
  one of OpenEnv's (``atari_env``, ``chess_env``...) answers that env's typed client;
  authors import it, and it needs nothing beyond pydantic;
* :mod:`openenv_mcp.server.faces._openenv` (with ``_openenv_wire`` and
  ``_openenv_namesake``): ``serve ENV --http --openenv``, OpenEnv's routes
  under ``/openenv`` over the server's episodes;
* :mod:`openenv_mcp_envs.openenv`: ``serve openenv --url URL`` (a running OpenEnv server
  mounted over MCP) or ``--env module:Class`` (its class in process, ``[openenv]``);
* :mod:`openenv_mcp.bench._openenv`: ``bench --vs openenv``, both directions against
  OpenEnv's own client and servers.
"""

from openenv_mcp.openenv.models import (
    OpenEnvAction,
    OpenEnvModels,
    OpenEnvObservation,
    OpenEnvState,
    OpenEnvTool,
    View,
)

__all__ = [
    "OpenEnvAction",
    "OpenEnvModels",
    "OpenEnvObservation",
    "OpenEnvState",
    "OpenEnvTool",
    "View",
]

"""Many server replicas on Ray Serve, every episode pinned to the replica that holds it.

Needs the ``ray`` extra (``pip install 'openenv-mcp[ray]'``); nothing else in
openenv-mcp imports Ray. ``openenv-mcp serve ENV --transport ray --replicas N`` runs
:func:`deploy`; a Serve config (KubeRay's RayService) names :func:`build_app`.

Each replica is the ordinary Streamable HTTP server of the env with
``ServerSettings.shard`` set to its Ray replica id, so its handles say where they
live (``ep_...@SHARD``) and its tools mark the parameter calls are routed on;
:class:`~openenv_mcp.cluster._router.ShardRouter` routes on that header.

A client (its address, which Ray's proxy hands on to the replica) holds at most
``max_episodes_per_client`` episodes across all replicas, not that many on each:
:class:`~openenv_mcp.cluster._ledger.ClientLedger`, one more deployment of the
application, counts them (default: a quarter of ``replicas * max_episodes``).

A long call run as an MCP task lives on the replica that ran it, but a client's
``tasks/get`` and ``tasks/cancel`` name no shard, so they reach any replica:
:class:`~openenv_mcp.cluster._tasks.TaskLedger`, one more deployment, holds each task as
its replica publishes it, so any replica answers it and records a cancel its owner takes.
"""

from __future__ import annotations

from openenv_mcp.cluster._deploy import (
    DEFAULT_MAX_ONGOING,
    Deployment,
    build_app,
    deploy,
    replica_shards,
)

__all__ = ["DEFAULT_MAX_ONGOING", "Deployment", "build_app", "deploy", "replica_shards"]

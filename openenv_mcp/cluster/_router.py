"""The request router: every call reaches the replica holding its episode.

Ray Serve's proxy hands a router the value of one request header as the
request's ``session_id`` (``RAY_SERVE_SESSION_ID_HEADER_KEY``, which
:func:`~openenv_mcp.cluster.deploy` sets to ``Mcp-Param-Route``: the header MCP
clients mirror from the parameter a sharded server marks). A value naming a
shard goes to that shard's replica and only there: if it is busy the router
waits (Serve backs off and asks again), never spilling the call to a replica
that does not hold the episode. A call with no shard (a new episode) goes to the
least loaded replica, counting live episodes from the replicas' routing stats
plus what this router placed since each replica's last report, so a burst of
resets spreads evenly before any report arrives. A shard with no live replica
(it died) goes to any live replica, which answers ``EpisodeLost`` at once.
"""

from __future__ import annotations

from typing import Any

from ray.serve.request_router import PendingRequest, ReplicaID, RequestRouter, RunningReplica

from openenv_mcp.sharding import route_shard

__all__ = ["ShardRouter"]


class ShardRouter(RequestRouter):  # type: ignore[misc]  # Ray's API is Any to mypy
    """Route by shard; place new episodes on the least loaded replica."""

    def initialize_state(self, **kwargs: Any) -> None:
        #: New episodes sent to each replica since its last routing-stats report.
        self._placed: dict[ReplicaID, int] = {}
        #: The report each count is relative to (its sequence number).
        self._report: dict[ReplicaID, Any] = {}

    def _load(self, replica: RunningReplica) -> int:
        stats = replica.routing_stats or {}
        report = stats.get("seq")
        if self._report.get(replica.replica_id) != report:
            self._report[replica.replica_id] = report
            self._placed[replica.replica_id] = 0
        return int(stats.get("episodes", 0)) + self._placed.get(replica.replica_id, 0)

    async def choose_replicas(
        self,
        candidate_replicas: list[RunningReplica],
        pending_request: PendingRequest | None = None,
    ) -> list[list[RunningReplica]]:
        route = pending_request.metadata.session_id if pending_request is not None else ""
        shard = route_shard(route) if route else None
        if shard is not None:
            for replica in candidate_replicas:
                if replica.replica_id.unique_id == shard:
                    return [[replica]]
        if not candidate_replicas:
            return []
        ranked = sorted(candidate_replicas, key=self._load)
        if shard is None:  # a new episode (or a call that names none): count it now
            first = ranked[0].replica_id
            self._placed[first] = self._placed.get(first, 0) + 1
        return [[replica] for replica in ranked]

    def update_replicas(self, replicas: list[RunningReplica]) -> None:
        super().update_replicas(replicas)
        live = {replica.replica_id for replica in replicas}
        for gone in [r for r in self._placed if r not in live]:
            self._placed.pop(gone, None)
            self._report.pop(gone, None)

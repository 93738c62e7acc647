"""The request router: every call reaches the replica holding its episode.

Ray Serve's proxy hands a router the value of one request header as the
request's ``session_id`` (``RAY_SERVE_SESSION_ID_HEADER_KEY``, which
:func:`~openenv_mcp.cluster.deploy` sets to ``Mcp-Param-Route``: the header MCP
clients mirror from the parameter a sharded server marks). A value naming a
shard goes to that shard's replica and only there: if it is busy the router
waits (Serve backs off and asks again), never spilling the call to a replica
that does not hold the episode. A shard with no live replica (it died) goes to
any live replica, which answers ``EpisodeLost`` at once.

A call naming no shard (a new episode; ``tools/list``) goes to the least loaded
replica. Load is a replica's live episodes as of its last routing-stats report,
plus the unrouted calls sent to it since that report was taken: each replica
also reports how many unrouted calls it has received, so what this router sent
beyond that is still on its way (reports arrive a second or more late; a burst of
resets must not all go to the replica whose report is oldest). Several proxies
(one per node) each count only their own calls; the estimate then leans on the
reports alone, never below them.
"""

from __future__ import annotations

from typing import Any

from ray.serve.request_router import PendingRequest, ReplicaID, RequestRouter, RunningReplica

from openenv_mcp.sharding import route_shard

__all__ = ["ShardRouter"]


class ShardRouter(RequestRouter):  # type: ignore[misc]  # Ray's API is Any to mypy
    """Route by shard; place new episodes on the least loaded replica."""

    def initialize_state(self, **kwargs: Any) -> None:
        #: Unrouted calls this router sent to each replica.
        self._sent: dict[ReplicaID, int] = {}
        #: Each replica's count of unrouted calls received, less what this router had
        #: sent, when first seen (a router may start after its replicas).
        self._base: dict[ReplicaID, int] = {}
        #: Unrouted calls chosen for a replica but not yet sent (by request id).
        self._choosing: dict[str, ReplicaID] = {}

    def _load(self, replica: RunningReplica) -> int:
        rid = replica.replica_id
        stats = replica.routing_stats or {}
        received = int(stats.get("unrouted", 0))
        sent = self._sent.get(rid, 0)
        base = self._base.setdefault(rid, received - sent)
        in_flight = max(0, sent - (received - base))
        choosing = sum(1 for chosen in self._choosing.values() if chosen == rid)
        return int(stats.get("episodes", 0)) + in_flight + choosing

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
        if pending_request is not None and shard is None:
            self._choosing.pop(pending_request.metadata.internal_request_id, None)
        ranked = sorted(candidate_replicas, key=self._load)
        if pending_request is not None and shard is None:
            self._choosing[pending_request.metadata.internal_request_id] = ranked[0].replica_id
        return [[replica] for replica in ranked]

    def on_request_routed(
        self, pending_request: PendingRequest, replica_id: ReplicaID, result: Any
    ) -> None:
        if self._choosing.pop(pending_request.metadata.internal_request_id, None) is not None:
            self._sent[replica_id] = self._sent.get(replica_id, 0) + 1

    def update_replicas(self, replicas: list[RunningReplica]) -> None:
        super().update_replicas(replicas)
        live = {replica.replica_id for replica in replicas}
        for gone in [r for r in self._sent if r not in live]:
            self._sent.pop(gone, None)
            self._base.pop(gone, None)

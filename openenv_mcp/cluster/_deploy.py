"""The replica deployment, the Serve application, and deploying it (a local cluster or
an existing one)."""

from __future__ import annotations

import contextlib
import logging
import math
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import ray
from ray import serve
from ray.serve.config import RequestRouterConfig

from openenv_mcp.errors import ArgumentError, OpenEnvError
from openenv_mcp.server.transports._http import TOKEN_ENV
from openenv_mcp.sharding import ROUTE_HEADER, route_shard

__all__ = ["DEFAULT_MAX_ONGOING", "Deployment", "build_app", "deploy", "replica_shards"]

#: The proxy hands the router this header's value as the request's session id.
SESSION_HEADER_ENV = "RAY_SERVE_SESSION_ID_HEADER_KEY"
#: Calls one replica takes at once (Serve's default, 5, would queue a trainer's
#: concurrent episodes behind each other; one replica serves many episodes).
DEFAULT_MAX_ONGOING = 1024
#: Seconds between a replica's routing-stats reports (its live episodes).
STATS_PERIOD = 1.0
DEPLOYMENT_NAME = "EnvServer"
#: Calls the client ledger takes at once (each replica's asks before new episodes).
LEDGER_MAX_ONGOING = 100_000


class EnvServer:
    """One replica: the env's Streamable HTTP server, sharded by this replica's id."""

    def __init__(
        self,
        env: str,
        options: dict[str, Any],
        settings: dict[str, Any],
        auth_token: str | None,
        allowed_hosts: Sequence[str],
        ledger: Any,
        client_cap: int,
        replicas: int,
        task_ledger: Any = None,
    ) -> None:
        from openenv_mcp.cluster._ledger import attach_ledger
        from openenv_mcp.cluster._tasks import attach_task_ledger
        from openenv_mcp.server import build_server, get_app
        from openenv_mcp.server._settings import ServerSettings

        logging.basicConfig(level=logging.WARNING)
        self.shard = serve.get_replica_context().replica_id.unique_id
        server_settings = ServerSettings.model_validate({**settings, "shard": self.shard})
        self.mcp_server = build_server(env, settings=server_settings, **options)
        self.env_app = get_app(self.mcp_server)
        # One client's cap holds across the replicas: counted at the ledger.
        self.table = attach_ledger(
            self.env_app.table, ledger=ledger, shard=self.shard, cap=client_cap, replicas=replicas
        )
        # A client's tasks/get and tasks/cancel name no shard: any replica answers them.
        if task_ledger is not None:
            attach_task_ledger(self.env_app.jobs, ledger=task_ledger, shard=self.shard)
        self.env_app.prototype.check_exposure(True)  # every replica serves HTTP
        self.auth_token = auth_token
        self.allowed_hosts = list(allowed_hosts)
        #: Calls received that named no shard (what the router counts as placements).
        self.unrouted = 0

    def __serve_build_asgi_app__(self) -> Any:
        from openenv_mcp.server.transports._http import guarded_app, mount_health

        mount_health(self.mcp_server, self.env_app)
        direct = None
        if self.env_app.settings.fast_path:
            direct = self.env_app.direct_calls(self.mcp_server, "streamable-http")
        # The proxy checks nothing of ours: every replica guards itself as `serve --http`
        # does (Host/Origin, token, body size). Off loopback a token is required.
        host = "127.0.0.1" if self.auth_token is None else "0.0.0.0"
        app = guarded_app(self.mcp_server, host, self.auth_token, direct, self.allowed_hosts)
        route_key = ROUTE_HEADER.encode()

        async def counted(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "http":
                route = dict(scope["headers"]).get(route_key)
                if route is None or route_shard(route.decode("latin-1")) is None:
                    self.unrouted += 1
            await app(scope, receive, send)

        return counted

    def record_routing_stats(self) -> dict[str, Any]:
        """What the router places new episodes by: live episodes, and the calls naming no
        shard received so far (so it can tell which of its own are still on their way)."""
        return {"episodes": len(self.env_app.table.episodes), "unrouted": self.unrouted}

    async def __del__(self) -> None:
        # Serve's ingress wrapper calls this at shutdown, after ending the app's lifespan.
        await self.table.detach()
        await self.env_app.aclose()


def build_app(args: dict[str, Any]) -> Any:
    """The Serve application for a config file (``import_path:
    openenv_mcp.cluster:build_app``), from its ``args``: ``env``, ``replicas``,
    ``options`` (the env's), ``settings`` (the server's), ``auth_token``,
    ``allowed_hosts``, ``replica_cpus``, ``max_ongoing_requests``."""
    known = {
        "env",
        "replicas",
        "options",
        "settings",
        "auth_token",
        "allowed_hosts",
        "replica_cpus",
        "max_ongoing_requests",
    }
    unknown = sorted(set(args) - known)
    if unknown or "env" not in args:
        raise ArgumentError(
            f"openenv_mcp.cluster:build_app takes args {sorted(known)} (env required); "
            f"got {sorted(args)}"
        )
    return _application(
        env=str(args["env"]),
        replicas=int(args.get("replicas", 1)),
        options=dict(args.get("options") or {}),
        settings=dict(args.get("settings") or {}),
        auth_token=args.get("auth_token") or os.environ.get(TOKEN_ENV),
        allowed_hosts=list(args.get("allowed_hosts") or []),
        replica_cpus=float(args.get("replica_cpus", 1.0)),
        max_ongoing_requests=int(args.get("max_ongoing_requests", DEFAULT_MAX_ONGOING)),
    )


def _application(
    *,
    env: str,
    replicas: int,
    options: dict[str, Any],
    settings: dict[str, Any],
    auth_token: str | None,
    allowed_hosts: Sequence[str],
    replica_cpus: float,
    max_ongoing_requests: int,
) -> Any:
    from openenv_mcp.cluster._ledger import LEDGER_NAME, ClientLedger, deployment_cap
    from openenv_mcp.cluster._router import ShardRouter
    from openenv_mcp.cluster._tasks import TASK_LEDGER_NAME, TaskLedger
    from openenv_mcp.server._settings import ServerSettings

    if replicas < 1:
        raise ArgumentError(f"replicas must be at least 1, got {replicas}")
    if "shard" in settings:
        raise ArgumentError("settings: each replica's shard is its Ray replica id; leave it out")
    # A bad setting fails here, not in every replica.
    checked = ServerSettings.model_validate(settings)
    client_cap = deployment_cap(checked.max_episodes_per_client, checked.max_episodes, replicas)
    # Counts each client's episodes on every replica (its cap is the deployment's): one
    # replica, no CPU reserved, every replica's asks at once.
    ledger = serve.deployment(
        ClientLedger,
        name=LEDGER_NAME,
        num_replicas=1,
        max_ongoing_requests=LEDGER_MAX_ONGOING,
        ray_actor_options={"num_cpus": 0},
        health_check_period_s=1.0,
        graceful_shutdown_timeout_s=1.0,
    )
    # Every replica's MCP tasks, read and cancelled from any replica: a room of its own,
    # so results held for their ttl never slow the episode counts.
    task_ledger = serve.deployment(
        TaskLedger,
        name=TASK_LEDGER_NAME,
        num_replicas=1,
        max_ongoing_requests=LEDGER_MAX_ONGOING,
        ray_actor_options={"num_cpus": 0},
        health_check_period_s=1.0,
        graceful_shutdown_timeout_s=1.0,
    )
    deployment = serve.deployment(
        serve.ingress()(EnvServer),
        name=DEPLOYMENT_NAME,
        num_replicas=replicas,
        max_ongoing_requests=max_ongoing_requests,
        ray_actor_options={"num_cpus": replica_cpus},
        request_router_config=RequestRouterConfig(
            request_router_class=ShardRouter,
            request_routing_stats_period_s=STATS_PERIOD,
        ),
        health_check_period_s=1.0,
        health_check_timeout_s=10.0,
        graceful_shutdown_timeout_s=5.0,
    )
    return deployment.bind(
        env,
        options,
        settings,
        auth_token,
        list(allowed_hosts),
        ledger.bind(),
        client_cap,
        replicas,
        task_ledger.bind(),
    )


@dataclass(frozen=True)
class Deployment:
    """A running deployment: the one URL clients use, and where it runs."""

    url: str
    app_name: str
    replicas: int
    #: Whether :func:`deploy` started the cluster (so :meth:`shutdown` stops it).
    local_cluster: bool

    def shutdown(self) -> None:
        """Delete the application (its episodes end); stop the cluster if it was ours."""
        serve.delete(self.app_name)
        if self.local_cluster:
            serve.shutdown()
            ray.shutdown()


def replica_shards(app_name: str = "openenv-mcp") -> list[str]:
    """The shards (replica ids) of a running application's live replicas."""
    status = serve.status().applications.get(app_name)
    if status is None:
        return []
    replicas = ray.util.list_named_actors(all_namespaces=True)
    prefix = replica_actor_name(app_name, "")
    return sorted(a["name"][len(prefix) :] for a in replicas if a["name"].startswith(prefix))


def replica_actor_name(app_name: str, shard: str) -> str:
    """The Ray actor name (namespace ``serve``) of the replica whose id is ``shard``."""
    return f"SERVE_REPLICA::{app_name}#{DEPLOYMENT_NAME}#{shard}"


def deploy(
    env: str,
    *,
    replicas: int,
    options: dict[str, Any] | None = None,
    settings: dict[str, Any] | None = None,
    address: str | None = None,
    host: str = "127.0.0.1",
    port: int = 8765,
    auth_token: str | None = None,
    allowed_hosts: Sequence[str] = (),
    replica_cpus: float = 1.0,
    max_ongoing_requests: int = DEFAULT_MAX_ONGOING,
    app_name: str = "openenv-mcp",
    timeout: float = 180.0,
) -> Deployment:
    """Deploy ``replicas`` servers of ``env`` on Ray Serve behind one URL.

    Without ``address`` a local cluster is started in this process (or the one
    already started here is used); with one, that cluster is joined, and it must
    have been started with ``RAY_SERVE_SESSION_ID_HEADER_KEY=mcp-param-route``
    (checked: calls are made through the proxy before this returns).

    Raises:
        ArgumentError: a bad option, an unsafe bind, or more CPUs asked than the
            cluster has (where Serve itself would wait forever).
        OpenEnvError: the replicas did not start within ``timeout`` seconds, or the
            cluster's proxy does not route on the shard header.
    """
    from openenv_mcp.server.transports._http import http_run_options

    http_run_options(host, auth_token, allowed_hosts=list(allowed_hosts))  # refuse unsafe binds
    application = _application(
        env=env,
        replicas=replicas,
        options=options or {},
        settings=settings or {},
        auth_token=auth_token,
        allowed_hosts=allowed_hosts,
        replica_cpus=replica_cpus,
        max_ongoing_requests=max_ongoing_requests,
    )
    local = False
    if not ray.is_initialized():
        local = address is None
        if local:
            # The proxy (a process this cluster starts) reads it at its start.
            os.environ[SESSION_HEADER_ENV] = ROUTE_HEADER
            ray.init(
                num_cpus=max(os.cpu_count() or 1, math.ceil(replicas * replica_cpus)),
                include_dashboard=False,
                object_store_memory=128 * 1024 * 1024,
                logging_level=logging.WARNING,
                log_to_driver=False,
                configure_logging=False,
            )
        else:
            ray.init(address=address, logging_level=logging.WARNING, log_to_driver=False)
    url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{port}/mcp"
    deployment = Deployment(url=url, app_name=app_name, replicas=replicas, local_cluster=local)
    try:
        needed = replicas * replica_cpus
        total = ray.cluster_resources().get("CPU", 0.0)
        if needed > total:
            raise ArgumentError(
                f"{replicas} replicas x {replica_cpus:g} CPU need {needed:g} CPUs; the cluster "
                f"has {total:g}: lower --replica-cpus or --replicas (Serve would wait forever)"
            )
        serve.start(http_options={"host": host, "port": port})
        _run_with_deadline(application, app_name, timeout)
        if replicas > 1:
            _check_routing(url, auth_token, 2 * replicas)
    except BaseException:
        if local:  # leave nothing behind
            with contextlib.suppress(Exception):
                deployment.shutdown()
        raise
    return deployment


def _check_routing(url: str, auth_token: str | None, episodes: int) -> None:
    """Open ``episodes`` episodes through the proxy, one after another, and use and close
    each: a proxy that does not hand the router the shard header sends those calls to
    any replica. One at a time, as this client's cap may be as low as one."""
    import asyncio

    from openenv_mcp.client._session import Session

    async def check() -> None:
        headers = {"Authorization": f"Bearer {auth_token}"} if auth_token else {}
        async with Session(url, headers=headers) as session:
            for _ in range(episodes):
                episode = session.episode()
                try:
                    await episode.reset(seed=0)
                    await episode.state()
                finally:
                    with contextlib.suppress(OpenEnvError):
                        await episode.close()

    failure: list[BaseException] = []
    thread = threading.Thread(target=lambda: _capture(failure, lambda: asyncio.run(check())))
    thread.start()
    thread.join()
    if failure:
        raise OpenEnvError(
            f"calls through the Serve proxy at {url} did not reach the replica holding their "
            f"episode ({failure[0]}): the cluster must run with {SESSION_HEADER_ENV}="
            f"{ROUTE_HEADER} (set it before `ray start` or ray.init)"
        ) from failure[0]


def _capture(failure: list[BaseException], func: Any) -> None:
    try:
        func()
    except BaseException as exc:
        failure.append(exc)


def _run_with_deadline(application: Any, app_name: str, timeout: float) -> None:
    """``serve.run`` with a deadline: it waits with none for replicas that cannot start."""
    failure: list[BaseException] = []
    thread = threading.Thread(
        target=_capture,
        args=(failure, lambda: serve.run(application, name=app_name, route_prefix="/")),
        name="openenv-mcp-serve-run",
        daemon=True,
    )
    thread.start()
    thread.join(timeout)
    if failure:
        raise OpenEnvError(f"deploying {app_name} failed: {failure[0]}") from failure[0]
    if thread.is_alive():
        status = serve.status().applications.get(app_name)
        raise OpenEnvError(
            f"the replicas of {app_name} did not start within {timeout:g}s "
            f"(Serve says: {status.status if status else 'no such application'}: "
            f"{status.message if status else ''})"
        )

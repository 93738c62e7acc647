"""Many replicas on a real Ray Serve cluster: pinning, capacity, balance, replica death.

One local cluster for the whole module, started the way the README says
(``openenv-mcp serve echo --ray``, a subprocess); the tests join it as a Ray driver
to redeploy with other replica counts and to kill replicas. Every wait is bounded.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from openenv_mcp.client import MCPEnvClient, MCPVectorEnv
from openenv_mcp.client._session import Session
from openenv_mcp.errors import EpisodeLost, OpenEnvError
from openenv_mcp.server import build_server
from openenv_mcp.sharding import ROUTE_HEADER, shard_of
from tests.figures import record_figure
from tests.servers import CLI, ROOT, free_port, sessionless_call, sessionless_meta, stop

ray = pytest.importorskip("ray", reason="the [ray] extra is not installed (./dev test installs it)")
serve = pytest.importorskip("ray.serve")

from openenv_mcp.cluster import deploy, replica_shards  # noqa: E402
from openenv_mcp.cluster._deploy import replica_actor_name  # noqa: E402
from openenv_mcp.cluster._ledger import LEDGER_NAME  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.ray]

APP = "openenv-mcp"
#: Logical CPUs per replica: four replicas fit the two-core cluster the CLI starts.
CPUS = 0.5


#: The README's command (its port and CPU reservation set for this machine).
README_COMMAND = ["serve", "atari", "--game", "pong", "--ray", "--replicas", "4"]


@pytest.fixture(scope="module")
def cluster() -> Iterator[dict[str, Any]]:
    """The README's `openenv-mcp serve atari --game pong --ray --replicas 4`: its URL, and
    this process joined to its cluster."""
    port = free_port()
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            [*CLI, *README_COMMAND, "--replica-cpus", str(CPUS), "--port", str(port)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log,
            cwd=ROOT,
        )
        try:
            assert proc.stdout is not None
            url = _first_line(proc, log, timeout=240)
            assert url == f"http://127.0.0.1:{port}/mcp"
            ray.init(address="auto", logging_level="WARNING", log_to_driver=False)
            # What the README's command deployed is played now, before any test redeploys
            # (tests run in any order): its test checks what was seen here.
            played = _play_eight_episodes(url)
            yield {"url": url, "port": port, "proc": proc, "readme": played}
        finally:
            if ray.is_initialized():
                ray.shutdown()
            code = stop(proc, timeout=60)
            log.seek(0)
            tail = log.read().decode(errors="replace")[-3000:]
        assert code == 0, tail
        # The cluster's processes exit on their own once the CLI has stopped it.
        wait_for(lambda: not ray_processes(), 60, "Ray processes to exit")


def ray_processes() -> list[str]:
    """This machine's Ray processes (a raylet, the GCS, replicas), by their command lines."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if entry.name.isdigit() and any(
            name in cmdline for name in (b"raylet", b"gcs_server", b"ServeReplica")
        ):
            found.append(entry.name)
    return found


def delete_app() -> None:
    """Delete the application; its replicas are gone from Serve when this returns."""
    serve.delete(APP)
    wait_for(lambda: not replica_shards(APP), 60, "the old replicas to stop")


def _first_line(proc: subprocess.Popen[bytes], log: Any, timeout: float) -> str:
    """The URL the CLI prints once every replica is up (read with a deadline)."""
    assert proc.stdout is not None
    line: list[bytes] = []

    def read() -> None:
        assert proc.stdout is not None
        line.append(proc.stdout.readline())

    import threading

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout)
    if not line or not line[0]:
        log.seek(0)
        raise AssertionError(
            f"serve --ray printed no URL within {timeout:g}s: {log.read().decode()[-3000:]}"
        )
    return line[0].decode().strip()


def redeploy(
    cluster: dict[str, Any],
    env: str,
    replicas: int,
    settings: dict[str, Any] | None = None,
    **options: Any,
) -> str:
    """Replace the application with ``replicas`` servers of ``env`` (same URL)."""
    delete_app()
    deployment = deploy(
        env,
        replicas=replicas,
        options=options,
        settings=settings,
        port=cluster["port"],
        replica_cpus=CPUS,
        app_name=APP,
    )
    assert len(replica_shards(APP)) == replicas
    return deployment.url


def replica_memory() -> list[float]:
    """Resident memory (MiB) of each live replica's process (asked of the replica)."""
    found = []
    for shard in replica_shards(APP):
        actor = ray.get_actor(replica_actor_name(APP, shard), namespace="serve")
        pid = ray.get(actor.__ray_call__.remote(lambda _: os.getpid()), timeout=30)
        status = Path(f"/proc/{pid}/status").read_text()
        rss_kib = next(
            int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")
        )
        found.append(rss_kib / 1024)
    return found


def kill_replica(shard: str) -> None:
    actor = ray.get_actor(replica_actor_name(APP, shard), namespace="serve")
    ray.kill(actor, no_restart=True)


def wait_for(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout:g}s")
        time.sleep(0.2)


def _play_eight_episodes(url: str) -> dict[str, Any]:
    """Reset and step eight Pong episodes through ``url``; what was seen."""
    with MCPEnvClient(url, frames="zstd").sync() as root:
        meanings = root.get_action_meanings()
        group = [root, *(root.spawn() for _ in range(7))]
        shapes = [episode.reset(seed=i)[0].shape for i, episode in enumerate(group)]
        steps = [episode.step(1)[4]["step"] for episode in group]
        shards = {shard_of(e.episode_id or "") for e in group}
    return {
        "meanings": meanings,
        "shapes": shapes,
        "steps": steps,
        "shards": shards,
        "replicas": set(replica_shards(APP)),
    }


def test_the_readme_command_serves_atari_from_four_replicas(cluster: dict[str, Any]) -> None:
    played = cluster["readme"]
    assert played["meanings"][1] == "FIRE"
    assert played["shapes"] == [(210, 160, 3)] * 8 and played["steps"] == [1] * 8
    assert played["shards"] == played["replicas"] and len(played["shards"]) == 4


def test_every_call_reaches_the_replica_holding_its_episode(cluster: dict[str, Any]) -> None:
    """3 replicas, 300 episodes x 20 steps through MCPVectorEnv."""
    url = redeploy(cluster, "echo", 3)
    started = time.monotonic()
    envs = MCPVectorEnv(url, num_envs=300, timeout=120)
    try:
        _, infos = envs.reset(seed=0)
        shards = Counter(shard_of(h) for h in infos["episode_id"])
        assert set(shards) == set(replica_shards(APP))  # every replica holds episodes
        for step in range(1, 21):
            # Any UnknownEpisode (a call on the wrong replica) would raise here.
            _, rewards, terminated, truncated, infos = envs.step(["ab"] * 300)
            assert (infos["step"] == step).all() and np.allclose(rewards, 0.2)
            assert not terminated.any() and not truncated.any()
        elapsed = time.monotonic() - started
    finally:
        envs.close()
    record_figure(
        f"ray: 3 replicas, 300 episodes x 20 steps through MCPVectorEnv (one step_batch per "
        f"replica per step): 0 errors, episodes per replica {sorted(shards.values())}; "
        f"{elapsed:.1f} s"
    )


def test_capacity_and_balance_over_four_replicas(cluster: dict[str, Any]) -> None:
    """4 replicas x 500 echo episodes, reset in one concurrent burst, each answering a step."""
    # One client holds all 2,000 episodes: past the default per-client cap (a quarter of
    # what the four replicas hold, 1,024; the cap is the deployment's, not each
    # replica's), so raised to what they hold.
    url = redeploy(cluster, "echo", 4, settings={"max_episodes_per_client": 4096})
    before = replica_memory()

    async def burst() -> tuple[Counter[str | None], float, list[Any]]:
        async with Session(url, timeout=120) as session:
            group = [session.episode() for _ in range(2000)]
            started = time.monotonic()
            await asyncio.gather(*(e.reset(seed=i) for i, e in enumerate(group)))
            elapsed = time.monotonic() - started
            counts = Counter(shard_of(e.episode_id or "") for e in group)
            outcomes = await session.step_batch(group, ["x"] * 2000, return_exceptions=True)
            return counts, elapsed, outcomes

    counts, elapsed, outcomes = asyncio.run(burst())
    errors = [o for o in outcomes if isinstance(o, Exception)]
    assert errors == []
    assert all(o[4]["step"] == 1 for o in outcomes)
    assert len(counts) == 4 and sum(counts.values()) == 2000
    balance = max(counts.values()) / (2000 / 4)
    assert balance <= 1.3, counts
    after = replica_memory()
    assert len(after) == 4
    record_figure(
        f"ray: 4 replicas x 500 echo episodes = 2,000 live, reset in one burst in {elapsed:.1f} s "
        f"and each answering a step: 0 errors; per replica {sorted(counts.values())} "
        f"(max/mean {balance:.2f}); replica RSS {', '.join(f'{m:.0f}' for m in sorted(after))} "
        f"MiB (idle: {', '.join(f'{m:.0f}' for m in sorted(before))} MiB)"
    )


def test_a_replica_dies_mid_run(cluster: dict[str, Any]) -> None:
    """Survivors see no error, lost episodes answer EpisodeLost fast, the call in flight
    fails fast, Serve restores the replica count and new episodes land on the new one."""
    # Each step blocks its replica for 50 ms, so a held action (repeat=32) is in flight
    # for 1.6 s: long enough to kill its replica under it.
    url = redeploy(cluster, "echo", 3, step_delay=0.05, max_steps=100000)
    vector = MCPVectorEnv(url, num_envs=6, timeout=60)

    async def run() -> dict[str, Any]:
        async with Session(url, timeout=60) as session:
            group = [session.episode() for _ in range(30)]
            for i, episode in enumerate(group):
                await episode.reset(seed=i)
            victim = shard_of(group[0].episode_id or "")
            lost = [e for e in group if shard_of(e.episode_id or "") == victim]
            survivors = [e for e in group if e not in lost]
            assert lost and survivors
            in_flight = asyncio.ensure_future(
                lost[0].session.call(
                    "step", {"episode_id": lost[0].episode_id, "action": "x", "repeat": 32}
                )
            )
            await asyncio.sleep(0.4)
            killed = time.monotonic()
            await asyncio.to_thread(kill_replica, victim or "")
            try:
                await in_flight
                raise AssertionError("the call in flight on the killed replica succeeded")
            except OpenEnvError as exc:
                in_flight_error = exc
            in_flight_s = time.monotonic() - killed
            survivor_errors = [
                o
                for o in await asyncio.gather(
                    *(e.step("still here") for e in survivors), return_exceptions=True
                )
                if isinstance(o, BaseException)
            ]
            lost_s = []
            for episode in lost:
                asked = time.monotonic()
                with pytest.raises(EpisodeLost, match="which is gone"):
                    await episode.step("hello?")
                lost_s.append(time.monotonic() - asked)
            return {
                "victim": victim,
                "in_flight_s": in_flight_s,
                "in_flight_error": in_flight_error,
                "survivor_errors": survivor_errors,
                "survivors": len(survivors),
                "lost_s": lost_s,
            }

    try:
        vector.reset(seed=0)
        found = asyncio.run(run())
        assert found["survivor_errors"] == []
        assert found["in_flight_s"] <= 2.0, found
        assert max(found["lost_s"]) <= 1.0, found
        # The vector env: its lost episodes end truncated, the rest step on.
        lost_mask = np.array(
            [shard_of(h) == found["victim"] for h in vector.get_attr("episode_id")]
        )
        _, _, _, truncated, infos = vector.step(["go"] * 6)
        assert (truncated == lost_mask).all()
        assert (infos.get("episode_lost", np.zeros(6, bool)) == lost_mask).all()
        # Serve replaces the replica; new episodes go to it (it holds the fewest).
        shards_before = set(replica_shards(APP))
        wait_for(
            lambda: (
                len(replica_shards(APP)) == 3
                and serve.status().applications[APP].status == "RUNNING"
            ),
            90,
            "Serve back to 3 replicas",
        )
        new_shard = (set(replica_shards(APP)) - shards_before) or (
            set(replica_shards(APP)) - {found["victim"]}
        )
        _, _, _, _, infos = vector.step(["again"] * 6)  # autoreset: a new episode each
        relocated = [h for h, lost in zip(infos["episode_id"], lost_mask, strict=True) if lost]
        assert all(shard_of(h) != found["victim"] for h in relocated)

        async def place() -> list[str | None]:
            async with Session(url) as session:
                fresh = [session.episode() for _ in range(6)]
                for episode in fresh:
                    await episode.reset()
                return [shard_of(e.episode_id or "") for e in fresh]

        placed = asyncio.run(place())
        assert new_shard & set(placed), (new_shard, placed)
    finally:
        vector.close()
    record_figure(
        f"ray: a replica killed mid-run (3 replicas, 30 episodes): the call in flight on it "
        f"failed after {found['in_flight_s']:.2f} s ({type(found['in_flight_error']).__name__}); "
        f"{found['survivors']} episodes on survivors stepped with 0 errors; "
        f"{len(found['lost_s'])} lost episodes answered EpisodeLost in at most "
        f"{max(found['lost_s']) * 1000:.0f} ms; Serve back to 3 replicas; new episodes on the "
        "new replica"
    )


def test_a_lost_episode_is_replayed_exactly(cluster: dict[str, Any]) -> None:
    """recover="replay": after its replica dies, an Atari episode is rebuilt on a live one
    from its seed and actions; its frames equal a local run's, before and after."""
    url = redeploy(cluster, "atari", 2, game="pong")
    remote = MCPVectorEnv(url, num_envs=4, recover="replay", frames="zstd", timeout=60)
    local = MCPVectorEnv(build_server("atari", game="pong"), num_envs=4, frames="zstd")
    rng = np.random.default_rng(0)
    try:
        obs, _ = remote.reset(seed=7)
        ref, _ = local.reset(seed=7)
        assert np.array_equal(obs, ref)
        for _ in range(15):
            actions = rng.integers(0, 6, size=4)
            obs, *_ = remote.step(actions)
            ref, *_ = local.step(actions)
            assert np.array_equal(obs, ref)
        handles = remote.get_attr("episode_id")
        victim = shard_of(handles[0])
        lost = np.array([shard_of(h) == victim for h in handles])
        kill_replica(victim or "")
        for step in range(5):
            actions = rng.integers(0, 6, size=4)
            obs, rewards, _, truncated, infos = remote.step(actions)
            ref, ref_rewards, *_ = local.step(actions)
            assert np.array_equal(obs, ref), f"step {16 + step}: frames differ after replay"
            assert np.array_equal(rewards, ref_rewards) and not truncated.any()
            if step == 0:
                assert (infos["episode_recovered"] == lost).all()
        assert all(shard_of(h) != victim for h in remote.get_attr("episode_id"))
    finally:
        remote.close()
        local.close()
    record_figure(
        f"ray: recover='replay': {int(lost.sum())} of 4 Atari Pong episodes lost with their "
        "replica after 15 steps were rebuilt on the survivor from seed and actions; every "
        "frame and reward after equal to a local run's"
    )


def test_a_gone_shard_is_never_stepped_elsewhere(cluster: dict[str, Any]) -> None:
    """A call naming a shard that does not exist answers EpisodeLost (from whichever
    replica the router sent it to), never a step on another episode."""
    url = redeploy(cluster, "echo", 2)

    async def run() -> None:
        async with Session(url) as session:
            episode = session.episode()
            await episode.reset(seed=1)
            handle = episode.episode_id or ""
            gone = handle.rsplit("@", 1)[0] + "@zzzzzzzz"
            with pytest.raises(EpisodeLost):
                await session.call("step", {"episode_id": gone, "action": "x"})
            _, _, _, _, info = await episode.step("x")
            assert info["step"] == 1

    asyncio.run(run())


def test_the_kuberay_config_deploys(cluster: dict[str, Any]) -> None:
    """docs/deploy/rayservice.yaml: its Serve application (import path and args) runs on
    a real cluster, token required; its pods set the header the router reads."""
    import yaml

    from openenv_mcp.cluster import build_app

    service = yaml.safe_load((ROOT / "docs" / "deploy" / "rayservice.yaml").read_text())
    head = service["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]
    env = {e["name"]: e.get("value") for e in head["containers"][0]["env"]}
    assert env["RAY_SERVE_SESSION_ID_HEADER_KEY"] == ROUTE_HEADER
    config = yaml.safe_load(service["spec"]["serveConfigV2"])
    (application,) = config["applications"]
    assert application["import_path"] == "openenv_mcp.cluster:build_app"
    # As written, but two replicas on this machine and a known token.
    args = {**application["args"], "replicas": 2, "replica_cpus": CPUS, "auth_token": "k8s-t0k3n"}
    delete_app()
    serve.run(build_app(args), name=APP, route_prefix=application["route_prefix"])

    async def play() -> list[str | None]:
        with pytest.raises(OpenEnvError, match="401"):
            async with Session(cluster["url"]) as anonymous:
                await anonymous.connect()
        headers = {"Authorization": "Bearer k8s-t0k3n"}
        async with Session(cluster["url"], headers=headers) as session:
            assert session.server_spec.name == "atari"
            # Ray's router picks a replica per request, so on a busy machine four resets
            # may all land on one: reset until every replica holds one (16 at most).
            group, replicas = [], set(replica_shards(APP))
            while len(group) < 16 and {shard_of(e.episode_id or "") for e in group} != replicas:
                episode = session.episode()
                await episode.reset(seed=len(group))
                group.append(episode)
            await session.step_batch(group, [1] * len(group))
            return [shard_of(e.episode_id or "") for e in group]

    shards = asyncio.run(play())
    assert set(shards) == set(replica_shards(APP))


def ledger_holdings() -> dict[str, dict[str, int]]:
    """What the client ledger counts: each client's live episodes per shard."""
    handle = serve.get_deployment_handle(LEDGER_NAME, APP)
    holdings: dict[str, dict[str, int]] = handle.holdings.remote().result(timeout_s=30)
    return holdings


def held_by(client: str) -> int:
    return sum(counts.get(client, 0) for counts in ledger_holdings().values())


def call(
    port: int, tool: str, arguments: dict[str, Any], source: str = "127.0.0.1"
) -> dict[str, Any]:
    """A sessionless (2026-07-28) MCP ``tools/call`` through Ray's proxy from loopback
    address ``source`` (as ``tests/server/http_attacks.call``; this cluster has no
    token), its routing parameter (a handle, or ``reset``'s shard) mirrored in
    ``Mcp-Param-Route``; its JSON-RPC result."""
    mcp_headers, body = sessionless_call(tool, arguments, client="ray-test")
    route = arguments.get("episode_id") or arguments.get("shard")
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        **mcp_headers,
        **({ROUTE_HEADER: route} if route else {}),
    }
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30, source_address=(source, 0))
    try:
        conn.request("POST", "/mcp", json.dumps(body), headers)
        response = conn.getresponse()
        text = response.read().decode()
    finally:
        conn.close()
    assert response.status == 200, (response.status, text)
    result: dict[str, Any] = json.loads(text)["result"]
    return result


def new_episode(port: int, source: str, shard: str) -> dict[str, Any]:
    """A sessionless ``reset`` (a new episode) from address ``source``, on replica
    ``shard`` (routed there: which replica a client's episodes land on is the
    client's to choose)."""
    return call(port, "reset", {"new_episode": True, "shard": shard}, source=source)


def test_one_address_holds_its_cap_across_all_replicas(cluster: dict[str, Any]) -> None:
    """Issue 32: a client (its address, which Ray's proxy hands on to the replica in the
    request's scope) holds at most max_episodes_per_client episodes in all, not that many
    on each replica; another address is another client."""
    cap = 2
    redeploy(cluster, "echo", 3, settings={"max_episodes_per_client": cap})
    port = cluster["port"]
    shards = replica_shards(APP)
    # One episode on each of two replicas, then one more on the third, which holds none
    # of this client's (its own table alone would take it).
    held = [new_episode(port, "127.0.0.2", shard) for shard in shards[:cap]]
    assert [r["isError"] for r in held] == [False] * cap, held
    handles = [r["structuredContent"]["episode_id"] for r in held]
    assert [shard_of(h) for h in handles] == shards[:cap]
    refused = new_episode(port, "127.0.0.2", shards[2])
    assert refused["isError"] is True, refused
    text = refused["content"][0]["text"]
    assert text.startswith("ServerFull:"), text
    assert "address 127.0.0.2" in text and f"max_episodes_per_client={cap}" in text
    assert "--max-episodes-per-client" in text
    other = new_episode(port, "127.0.0.3", shards[2])
    assert other["isError"] is False, other
    assert held_by("127.0.0.2") == cap and held_by("127.0.0.3") == 1
    # Closing one makes room at once, on another replica too.
    closed = call(port, "close", {"episode_id": handles[0]}, source="127.0.0.2")
    assert closed["isError"] is False, closed
    again = new_episode(port, "127.0.0.2", shards[2])
    assert again["isError"] is False, again
    assert new_episode(port, "127.0.0.2", shards[0])["isError"] is True
    assert held_by("127.0.0.2") == cap


def test_a_client_at_its_cap_gets_room_from_its_idle_episodes_on_any_replica(
    cluster: dict[str, Any],
) -> None:
    """A client refused at its cap has its idle episodes closed on every replica (as one
    server closes them at the cap), not only on the replica the refused call reached."""
    idle = 2.0
    redeploy(cluster, "echo", 3, settings={"max_episodes_per_client": 2, "idle_timeout": idle})
    port = cluster["port"]
    shards = replica_shards(APP)
    held = [new_episode(port, "127.0.0.4", shard) for shard in shards[:2]]
    assert [r["isError"] for r in held] == [False, False], held
    time.sleep(idle + 0.5)
    # The third replica holds none of them: refused at first, then the other two close
    # theirs (idle past idle_timeout) at their next report, and there is room.
    first = new_episode(port, "127.0.0.4", shards[2])
    assert first["isError"] is True and "max_episodes_per_client=2" in first["content"][0]["text"]
    refused_at = time.monotonic()
    while (answer := new_episode(port, "127.0.0.4", shards[2]))["isError"]:
        assert "max_episodes_per_client=2" in answer["content"][0]["text"], answer
        assert time.monotonic() - refused_at < 20, "the idle episodes were not closed in 20 s"
        time.sleep(0.25)
    waited = time.monotonic() - refused_at
    wait_for(lambda: held_by("127.0.0.4") == 1, 20, "the ledger to count only the new one")
    for r in held:
        state = call(port, "state", {"episode_id": r["structuredContent"]["episode_id"]})
        assert state["isError"] is True, state
    record_figure(
        f"ray: a client at its cap (2) with idle episodes on two replicas, refused on a "
        f"third: room {waited:.1f} s later (each closes that client's idle episodes at its "
        "next report to the client ledger)"
    )


def _echo_back(observation: Any, info: dict[str, Any]) -> str:
    """Echo's tasks, solved: the greeting back, then "bye"."""
    return str(observation) if info["step"] == 0 else "bye"


def test_an_eval_runs_through_the_router(cluster: dict[str, Any]) -> None:
    """`eval --server URL` of a Ray Serve deployment: the tasks listed through the router,
    every run's calls at the replica holding its episode, every task judged."""
    from openenv_mcp.evals import CallablePolicy, evaluate_sync

    url = redeploy(cluster, "echo", 2)
    report = evaluate_sync(
        url, split="test", samples=2, k=(1, 2), policy=CallablePolicy(_echo_back, "echo back")
    )
    scores = report.scores()
    assert (scores["pass@2"], scores["success_rate"], scores["error_rate"]) == (1.0, 1.0, 0.0)
    assert len(report.runs) == 8 and scores["reproducible"] is True


# -- MCP tasks through the router ----------------------------------------------------------

#: The tasks extension declared in a request's client capabilities.
TASKS_META = {
    **sessionless_meta("tasks-client"),
    "io.modelcontextprotocol/clientCapabilities": {
        "extensions": {"io.modelcontextprotocol/tasks": {}}
    },
}


def ask(
    port: int,
    method: str,
    params: dict[str, Any],
    *,
    route: str | None = None,
    source: str = "127.0.0.1",
) -> dict[str, Any]:
    """One sessionless JSON-RPC request through Ray's proxy, a new connection each, as a
    generic tasks client sends it: the task id in the body and in ``Mcp-Name``, no routing
    header (unless ``route``: a shard the request is sent to); the whole answer."""
    name = params.get("name") or params.get("taskId")
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": TASKS_META["io.modelcontextprotocol/protocolVersion"],
        "mcp-method": method,
        **({"mcp-name": name} if name else {}),
        **({ROUTE_HEADER: route} if route else {}),
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": TASKS_META}}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60, source_address=(source, 0))
    try:
        conn.request("POST", "/mcp", json.dumps(body), headers)
        response = conn.getresponse()
        text = response.read().decode()
    finally:
        conn.close()
    if text.startswith(("event:", "data:")):
        text = next(line[5:] for line in text.splitlines() if line.startswith("data:"))
    # A JSON-RPC error comes with 400 (a sessionless request refused), a result with 200.
    assert response.status in (200, 400), (response.status, text)
    answer: dict[str, Any] = json.loads(text)
    assert (response.status == 200) == ("result" in answer), (response.status, answer)
    return answer


def task_answers() -> dict[str, int]:
    """Answers the task ledger gave replicas not holding the task, per asking replica."""
    from openenv_mcp.cluster._tasks import TASK_LEDGER_NAME

    handle = serve.get_deployment_handle(TASK_LEDGER_NAME, APP)
    answers: dict[str, int] = handle.answers.remote().result(timeout_s=30)
    return answers


def tasks_app(cluster: dict[str, Any]) -> list[str]:
    """Two echo replicas for the task tests (deployed once for both, whatever ran
    between: a redeploy makes new replica ids); their shards."""
    shards = replica_shards(APP)
    if cluster.get("tasks_shards") != shards:
        redeploy(cluster, "echo", 2)
        cluster["tasks_shards"] = shards = replica_shards(APP)
    return shards


def start_evaluate(port: int, arguments: dict[str, Any]) -> dict[str, Any]:
    task = ask(port, "tools/call", {"name": "evaluate", "arguments": arguments})["result"]
    assert task["resultType"] == "task" and task["status"] == "working", task
    return task


def test_a_task_is_read_from_any_replica_through_the_router(cluster: dict[str, Any]) -> None:
    """An `evaluate` run as an MCP task on one replica: a generic client's tasks/get, which
    names no shard and so reaches either replica, reads it working then completed with the
    call's result, from new connections; the replica not holding it answers from the task
    ledger; another client is told there is no such task."""
    shards, port = tasks_app(cluster), cluster["port"]
    before = task_answers()
    task = start_evaluate(port, {"split": "test", "samples": 2, "k": [1, 2], "max_steps": 50})
    owner = shard_of(task["taskId"])
    assert owner in shards
    (other,) = set(shards) - {owner}
    seen, deadline = [], time.monotonic() + 120
    while not seen or seen[-1]["status"] == "working":
        assert time.monotonic() < deadline, seen[-3:]
        seen.append(ask(port, "tasks/get", {"taskId": task["taskId"]})["result"])
        time.sleep(0.1)
    done = seen[-1]
    assert done["status"] == "completed", done
    assert "pass@2" in done["result"]["content"][0]["text"]
    assert "success_rate" in done["result"]["structuredContent"]["scores"]
    assert {s["status"] for s in seen} <= {"working", "completed"}
    # Read again, kept for ttlMs: from any replica (a dozen unrouted asks, spread by the
    # router), and from the one that does not hold it.
    for _ in range(12):
        assert ask(port, "tasks/get", {"taskId": task["taskId"]})["result"] == done
    routed = [ask(port, "tasks/get", {"taskId": task["taskId"]}, route=other) for _ in range(3)]
    assert [r["result"] for r in routed] == [done] * 3
    answered = task_answers()
    assert set(answered) <= {other}, answered  # the owner answers its own tasks
    unrouted_there = answered.get(other, 0) - before.get(other, 0) - 3
    assert unrouted_there >= 1, (answered, before)  # some unrouted asks reached `other`
    stranger = ask(port, "tasks/get", {"taskId": task["taskId"]}, route=other, source="127.0.0.5")
    assert stranger["error"]["code"] == -32602 and "no task" in stranger["error"]["message"]
    record_figure(
        f"ray: an evaluate task read through the router (2 replicas), a new connection per "
        f"tasks/get naming no shard: {len(seen)} polls to completion and 12 reads after; "
        f"{unrouted_there} of those {len(seen) + 12} reached the replica not holding it, "
        "which answered from the task ledger; every read of the result equal"
    )


def test_a_task_is_cancelled_from_the_replica_not_holding_it(cluster: dict[str, Any]) -> None:
    """A long `evaluate` task cancelled by a tasks/cancel sent to the replica that does not
    hold it: the owner takes the cancel from the task ledger and stops; a generic client
    reads `cancelled` within 3 s (the issue's bound); its episodes are closed."""
    shards, port = tasks_app(cluster), cluster["port"]
    task = start_evaluate(port, {"split": "test", "samples": 100, "k": [1], "max_steps": 1000})
    owner = shard_of(task["taskId"])
    (other,) = set(shards) - {owner}
    deadline = time.monotonic() + 60
    while True:  # under way: a published progress
        working = ask(port, "tasks/get", {"taskId": task["taskId"]}, route=other)["result"]
        assert working["status"] == "working", working
        if not working["statusMessage"].startswith("evaluate: 0"):
            break
        assert time.monotonic() < deadline, working
        time.sleep(0.2)
    asked = time.monotonic()
    cancelled = ask(port, "tasks/cancel", {"taskId": task["taskId"]}, route=other)
    assert cancelled["result"]["resultType"] == "complete", cancelled
    while (ended := ask(port, "tasks/get", {"taskId": task["taskId"]})["result"])[
        "status"
    ] == "working":
        assert time.monotonic() - asked < 30, ended
        time.sleep(0.05)
    took = time.monotonic() - asked
    assert ended["status"] == "cancelled" and "result" not in ended, ended
    assert took < 3, f"cancelled {took:.2f}s after the cancel"  # the bound
    health = _health(port, owner or "")
    assert health["episodes"] == 0, health
    record_figure(
        f"ray: a long evaluate task cancelled through the router at the replica not holding "
        f"it: read cancelled {took:.2f} s after the cancel (the owner takes cancels from the "
        "task ledger every 0.5 s), its episodes closed"
    )


def _health(port: int, shard: str) -> dict[str, Any]:
    """``GET /healthz`` of the replica ``shard`` (routed there)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", "/healthz", headers={ROUTE_HEADER: shard})
        found: dict[str, Any] = json.loads(conn.getresponse().read())
    finally:
        conn.close()
    return found

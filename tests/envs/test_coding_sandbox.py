"""The coding sandbox as an attacker and a fault injector try it: isolation from the server and
from other episodes, expected answers out of reach whatever the install, per-episode limits,
special files, and work dirs that never outlive their server.

Real bubblewrap, a real non-root user (made here when the suite runs as root, as in CI: the
shipped container's situation), real tmpfs work dirs, real memory cgroups where this process
may make them (else the real watchdog), real stdio and HTTP servers. Limits are small, so
nothing here can hurt the machine.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from openenv_mcp.client import MCPEnvClient
from openenv_mcp.errors import InvalidAction, ServerFull
from openenv_mcp.narration import narration_of
from openenv_mcp.server import ServerSettings, build_server, get_app
from openenv_mcp_envs.coding import CodingConfig, CodingEnv
from tests.envs.test_coding import SOLUTIONS, bwrap, sandbox_pids  # noqa: F401
from tests.envs.unprivileged import User, unprivileged_user
from tests.figures import record_figure
from tests.servers import CLI, INITIALIZE, ROOT, RawStdio, call, start_http, stdio_command, stop

#: Four processes, each holding 80 MiB (each under its own RLIMIT_AS): 320 MiB together.
FOUR_PROCESSES = """
import os, time
kids = []
for i in range(4):
    pid = os.fork()
    if pid == 0:
        block = bytearray(80 << 20)
        for j in range(0, len(block), 4096):
            block[j] = 1
        time.sleep(2)
        os._exit(0)
    kids.append(pid)
print([os.waitpid(k, 0)[1] for k in kids])
"""
MEMORY_MIB = 192
#: The page that states these guarantees: its commands run below, as written.
PAGE = (ROOT / "docs" / "security-sandbox.md").read_text()


def page_commands(prefix: str) -> list[list[str]]:
    """The page's shell commands that start with ``prefix`` (comments dropped)."""
    blocks = re.findall(r"```bash\n(.*?)```", PAGE, re.S)
    lines = [line for block in blocks for line in block.splitlines()]
    return [shlex.split(line, comments=True) for line in lines if line.startswith(prefix)]


def image_command() -> list[str]:
    """What the page's ``docker run`` runs in the project's image: its ENTRYPOINT, then the
    arguments after the image name."""
    (docker,) = page_commands("docker run")
    dockerfile = (ROOT / "Dockerfile").read_text()
    entry = re.search(r"^ENTRYPOINT (\[.*\])$", dockerfile, re.M)
    assert entry is not None
    return [*json.loads(entry[1]), *docker[docker.index("openenv-mcp") + 1 :]]


@pytest.fixture(scope="module")
def user() -> Iterator[User]:
    with unprivileged_user() as made:
        yield made


def scratch_dir() -> str:
    """A directory every sandbox uid can traverse (pytest's tmp_path is private to root)."""
    path = tempfile.mkdtemp(prefix="openenv-coding-test-")
    os.chmod(path, 0o755)
    return path


# -- 1. an unprivileged server isolates code ---------------------------------------------------


@pytest.fixture(scope="module")
def unprivileged_server(bwrap: str, user: User) -> Iterator[dict[str, Any]]:  # noqa: F811
    """The image's command for the coding environment (the page's ``docker run``) as the
    non-root user, on every address, holding a token: the container's situation."""
    token = secrets.token_urlsafe(24)
    image = image_command()
    assert image[:3] == ["openenv-mcp", "serve", "coding"] and "--http" in image
    command = user.wrap(
        [*user.cli, *image[1:]], OPENENV_MCP_AUTH_TOKEN=token, OPENENV_MCP_HOST="0.0.0.0"
    )
    options = ["--memory-mib", str(MEMORY_MIB), "--wall-seconds", "8", "--max-steps", "100"]
    proc, url = start_http("coding", *options, command=command, timeout=120)
    try:
        yield {
            "url": url,
            "pid": proc.pid,
            "token": token,
            "headers": {"Authorization": f"Bearer {token}"},
        }
    finally:
        stop(proc)


ATTACK = r"""
import glob, os, signal, socket, sys
sys.stdout.reconfigure(line_buffering=True)
server, port = {pid}, {port}
print("uid inside", os.getuid())
for path in [f"/proc/{{server}}/environ", *glob.glob("/proc/*/environ")]:
    try:
        print(path, open(path, "rb").read())
    except OSError as exc:
        print(path, type(exc).__name__)
patterns = ("/tmp/**/mine.txt", "/tmp/openenv-coding-*/mine.txt", "/proc/*/root/tmp/*/mine.txt")
for pattern in patterns:
    for path in glob.glob(pattern, recursive=True):
        print("found", path, open(path).read())
for target in (server, -1):
    try:
        os.kill(target, signal.SIGKILL)
        print("killed", target)
    except OSError as exc:
        print("kill", target, type(exc).__name__)
try:
    socket.create_connection(("127.0.0.1", port), timeout=1)
    print("reached the server")
except OSError as exc:
    print("connect", type(exc).__name__)
"""


@pytest.mark.integration
def test_an_unprivileged_server_isolates_code(unprivileged_server: dict[str, Any]) -> None:
    served = unprivileged_server
    status = Path(f"/proc/{served['pid']}/status").read_text()
    server_uid = int(status.split("Uid:")[1].split()[0])
    assert server_uid != 0  # as in the image: no root anywhere
    port = int(served["url"].split(":")[-1].split("/")[0])
    headers = served["headers"]
    with (
        MCPEnvClient(served["url"], headers=headers).sync() as mine,
        MCPEnvClient(served["url"], headers=headers).sync() as attacker,
    ):
        mine.reset(options={"task": "fizzbuzz"})
        mine.step({"write": {"path": "mine.txt", "content": "a private file"}})
        _, info = attacker.reset(options={"task": "fizzbuzz"})
        assert info["sandbox"] == "bwrap"
        obs, *_ = attacker.step(ATTACK.format(pid=served["pid"], port=port))
        seen = obs["stdout"] + obs["stderr"]
        assert "uid inside 1000" in seen, seen[-2000:]
        assert served["token"] not in seen  # not in any environ it could read
        assert "OPENENV_MCP_AUTH_TOKEN" not in seen
        assert "a private file" not in seen and "found" not in seen
        assert f"kill {served['pid']} ProcessLookupError" in seen  # not even visible
        assert "connect ConnectionRefusedError" in seen  # its own network: no server there
        assert mine.call("read_file", path="mine.txt")["content"] == "a private file"
        health = httpx.get(served["url"].replace("/mcp", "/healthz"), timeout=10)
        assert health.status_code == 200
        obs, *_ = attacker.step("print(6 * 7)")
        assert obs["stdout"] == "42\n"


@pytest.mark.integration
def test_an_unprivileged_server_bounds_an_episodes_memory(
    unprivileged_server: dict[str, Any],
) -> None:
    served = unprivileged_server
    with MCPEnvClient(served["url"], headers=served["headers"]).sync() as client:
        client.reset(options={"task": "fizzbuzz"})
        obs, *_ = client.step(FOUR_PROCESSES)
        last = client.call("last_output")
        assert last["memory_limited"], (obs, last)
        assert obs["exit_code"] == -9
        peak = last["memory_peak_mib"]
        # killed before the four held 320 MiB: at the limit plus what they could touch
        # between two looks of the watchdog
        assert peak is not None and MEMORY_MIB < peak < 4 * 80, peak
        record_figure(
            f"coding, non-root (watchdog): 4 processes x 80 MiB under a {MEMORY_MIB} MiB "
            f"episode limit peaked at {peak:.0f} MiB, then were killed"
        )
        obs, *_ = client.step("print(6 * 7)")
        assert obs["stdout"] == "42\n"


@pytest.mark.integration
def test_the_pages_serve_commands_run_as_written(bwrap: str) -> None:  # noqa: F811
    local, exposed = page_commands("openenv-mcp serve")
    with MCPEnvClient([*CLI, *local[1:], "--log-level", "WARNING"]).sync() as client:
        _, info = client.reset(options={"task": "fizzbuzz"})
        assert info["sandbox"] == "unsafe-rlimits"
    assert exposed[:4] == ["openenv-mcp", "serve", "coding", "--http"]
    proc, url = start_http("coding", *exposed[4:])
    try:
        with MCPEnvClient(url).sync() as client:
            config = client.server_spec.config
            assert (config["memory_mib"], config["workdir_quota_mib"]) == (256, 16)
            assert config["max_files"] == 2000
    finally:
        stop(proc)


# -- the unisolated fallback, as a non-root user ------------------------------------------------


#: A client's first message: a stdio server whose stdin ends before any message exits 0
#: at once, starting nothing (so refusing nothing).
PING = '{"jsonrpc": "2.0", "id": 1, "method": "ping"}\n'


@pytest.mark.integration
def test_the_unsafe_fallback_as_a_non_root_user(bwrap: str, user: User) -> None:  # noqa: F811
    canary = secrets.token_hex(8)
    for exposed in (["--http", "--port", "0"], ["--stdio", "--web-port", "0"]):
        refused = subprocess.run(
            user.serve("coding", "--sandbox", "unsafe-rlimits", *exposed, CANARY=canary),
            capture_output=True,
            text=True,
            timeout=120,
            input=PING,
            check=False,
        )
        assert refused.returncode != 0, refused.stderr
        assert "refused on a server that others can reach" in refused.stderr
    if os.geteuid() == 0:
        # where no user namespace can be made (a container's seccomp profile, a sysctl):
        # auto refuses and names the fix; the named fallback still runs, over stdio only
        refused = subprocess.run(
            user.serve_without_userns("coding", "--stdio"),
            capture_output=True,
            text=True,
            timeout=120,
            input=PING,  # something to serve: the server starts, then refuses
            check=False,
        )
        assert refused.returncode != 0
        assert "cannot isolate code here" in refused.stderr
        assert "apt-get install bubblewrap" in refused.stderr and "unsafe-rlimits" in refused.stderr
        launch = user.serve_without_userns(
            "coding", "--stdio", "--sandbox", "unsafe-rlimits", CANARY=canary
        )
    else:
        launch = user.serve("coding", "--stdio", "--sandbox", "unsafe-rlimits", CANARY=canary)
    with MCPEnvClient(launch).sync() as client:
        _, info = client.reset(options={"task": "fizzbuzz"})
        assert info["sandbox"] == "unsafe-rlimits"
        peek = "import os; print(os.getuid(), open(f'/proc/{os.getppid()}/environ').read())"
        obs, *_ = client.step(peek)
        # what the name says: the code reads its server's environment (where a token
        # would be), which is why an exposed server refuses this mode
        assert canary in obs["stdout"], obs
        assert obs["stdout"].split()[0] != "0"
        obs, *_ = client.step("x = bytearray(1 << 30)")
        assert "MemoryError" in obs["stderr"]  # its limits still hold, per process
        obs, reward, terminated, *_ = client.step({"solution": SOLUTIONS["fizzbuzz"]})
        assert reward == 1.0 and terminated


# -- 2. expected answers never enter the sandbox, whatever the install -------------------------

LOOKUP = r"""
import glob, json, os, sys
TABLE = {}
FOUND = set()
prefixes = {os.path.dirname(os.path.dirname(os.path.realpath(sys.executable))), sys.prefix,
            sys.base_prefix, "/usr", "/usr/local", "/opt/conda"}
for prefix in prefixes:  # every layout pip, venv, Debian and conda install into
    for pattern in ("lib*/python*/*-packages", "lib/python3/dist-packages"):
        tasks = "openenv_mcp_envs/coding/tasks/*.json"
        FOUND.update(glob.glob(os.path.join(prefix, pattern, tasks)))
for entry in sys.path:  # and wherever the interpreter would import from
    if entry.startswith("/"):
        pattern = os.path.join(entry, "**", "openenv_mcp_envs", "coding", "tasks", "*.json")
        FOUND.update(glob.glob(pattern, recursive=True))
for path in FOUND:
    try:
        data = json.load(open(path))
        tasks = data.get("tasks", [data]) if isinstance(data, dict) else data
        for task in [t for t in tasks if t["entry_point"] == "fizzbuzz"]:
            for test in task["tests"]:
                key = json.dumps([test.get("args", []), test.get("kwargs", {})])
                TABLE[key] = test["expected"]
    except Exception:
        pass
print("task files found:", len(FOUND), sorted(FOUND)[:3], flush=True)


def fizzbuzz(*args, **kwargs):
    return TABLE.get(json.dumps([list(args), kwargs]))
"""


@pytest.fixture(scope="module")
def copied_install(bwrap: str) -> Iterator[Path]:  # noqa: F811
    """This checkout installed non-editably (``pip install .`` of a copy of the tree) into a
    ``venv --copies``, its dependencies taken from the test's own environment."""
    where = Path(scratch_dir())
    try:
        tree = where / "tree"
        tree.mkdir()
        for name in ("pyproject.toml", "README.md"):
            shutil.copy(ROOT / name, tree / name)
        for name in ("openenv_mcp", "envs"):
            shutil.copytree(ROOT / name, tree / name, ignore=shutil.ignore_patterns("__pycache__"))
        venv = where / "venv"
        # a base interpreter every uid can run (a root server runs code as a random uid,
        # which cannot reach an interpreter under /root)
        system = f"/usr/bin/python{sys.version_info[0]}.{sys.version_info[1]}"
        base = system if os.access(system, os.X_OK) else sys.executable
        subprocess.run(
            [base, "-m", "venv", "--copies", "--without-pip", str(venv)],
            check=True,
            capture_output=True,
            timeout=300,
        )
        python = venv / "bin" / "python"
        pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q"]
        subprocess.run(
            [*pip, "--no-deps", "--no-cache-dir", str(tree)],
            check=True,
            capture_output=True,
            timeout=600,
        )
        site = subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        # the dependencies from here, as plain paths (this checkout's editable finder is not
        # installed there, so openenv_mcp and openenv_mcp_envs.coding come from the copy only)
        Path(site, "deps.pth").write_text(f"{Path(httpx.__file__).parent.parent}\n")
        shutil.rmtree(tree)
        yield python
    finally:
        shutil.rmtree(where, ignore_errors=True)


@pytest.mark.integration
def test_a_lookup_table_earns_nothing_from_a_copied_install(copied_install: Path) -> None:
    python = str(copied_install)
    where = subprocess.run(
        [python, "-c", "import openenv_mcp_envs.coding; print(openenv_mcp_envs.coding.__file__)"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert where.startswith(str(copied_install.parent.parent)), where  # the copy, installed
    # the copied interpreter runs the code too: its prefix holds the installed package
    argv = [python, "-m", "openenv_mcp", "serve", "coding", "--stdio", "--python", python]
    with MCPEnvClient([*argv, "--log-level", "WARNING"]).sync() as client:
        client.reset(options={"task": "fizzbuzz"})
        obs, reward, terminated, *_ = client.step({"solution": LOOKUP})
        assert "task files found: 0 []" in obs["stdout"], obs
        assert reward == 0.0 and obs["tests_passed"] == 0 and not terminated
        probe = "import openenv_mcp_envs"
        obs, *_ = client.step(probe)
        assert "No module named 'openenv_mcp_envs'" in obs["stderr"]
        obs, reward, *_ = client.step({"solution": SOLUTIONS["fizzbuzz"]})
        assert reward == 1.0  # the interpreter itself works: only packages are hidden


# -- 4. per-episode limits -----------------------------------------------------------------------


@pytest.mark.integration
def test_an_episodes_memory_is_bounded_as_a_whole(bwrap: str) -> None:  # noqa: F811
    env = CodingEnv(CodingConfig(memory_mib=MEMORY_MIB, wall_seconds=10, cpu_seconds=10))
    try:
        env.reset(options={"task": "fizzbuzz"})
        result = env.step(env.parse_action(FOUR_PROCESSES))
        last = env._last
        assert last["memory_limited"], result.observation
        peak = last["memory_peak_mib"]
        how = env.sandbox.memory_bound
        assert peak is not None and peak < 4 * 80
        if how.startswith("cgroup"):
            assert peak <= MEMORY_MIB  # the kernel holds it exactly
        events = narration_of(env).step_events({}, result)
        assert f"the episode's {MEMORY_MIB} MiB memory limit" in events[0]
        record_figure(
            f"coding ({how}): 4 processes x 80 MiB under a {MEMORY_MIB} MiB episode limit "
            f"peaked at {peak:.0f} MiB"
        )
        again = env.step(env.parse_action("print(6 * 7)"))
        assert again.observation["stdout"] == "42\n"
    finally:
        env.close()


@pytest.mark.integration
def test_disk_bytes_and_files_are_bounded_while_code_runs(bwrap: str) -> None:  # noqa: F811
    env = CodingEnv(CodingConfig(workdir_quota_mib=2, max_files=64, max_steps=50))
    try:
        env.reset(options={"task": "fizzbuzz"})
        write = (
            "written = 0\ntry:\n    for i in range(1000):\n"
            "        with open(f'chunk{i}', 'wb') as f:\n"
            "            f.write(b'x' * (256 << 10))\n            written += 256 << 10\n"
            "except OSError as exc:\n    print(written, exc.strerror)\n"
        )
        obs = env.step(env.parse_action(write)).observation
        written, why = obs["stdout"].split(" ", 1)
        assert int(written) <= 2 << 20 and why.strip() == "No space left on device", obs
        env.step(env.parse_action("import os\nfor f in os.listdir():\n    os.remove(f)"))
        make = (
            "n = 0\ntry:\n    while True:\n        open(f'e{n}', 'w').close()\n        n += 1\n"
            "except OSError as exc:\n    print(n, exc.strerror)\n"
        )
        obs = env.step(env.parse_action(make)).observation
        made, why = obs["stdout"].split(" ", 1)
        assert int(made) <= 64 and why.strip() == "No space left on device", obs
        assert len(env.state()["files"]) <= 64
        record_figure(
            f"coding work dir: {int(written) >> 10} KiB written before a 2 MiB quota stopped "
            f"the run; {made} files before a 64-file limit did"
        )
    finally:
        env.close()


@pytest.mark.integration
def test_snapshots_are_bounded_in_bytes(bwrap: str) -> None:  # noqa: F811
    server = build_server("coding", settings=ServerSettings(max_snapshot_mib=1))
    with MCPEnvClient(server).sync() as client:
        client.reset(options={"task": "fizzbuzz"})
        client.step("open('big.bin', 'wb').write(b'x' * 600_000)")
        first = client.snapshot()
        with pytest.raises(ServerFull, match=r"max_snapshot_mib"):
            client.snapshot()
        client.release_snapshot(first)
        client.snapshot()
        assert get_app(server).table.snapshot_bytes < 1 << 20


def test_a_snapshot_past_the_budget_is_refused_for_any_env() -> None:
    server = build_server("echo", settings=ServerSettings(max_snapshot_mib=0))
    with MCPEnvClient(server).sync() as client:
        client.reset()
        with pytest.raises(ServerFull, match=r"at most 0 MiB \(max_snapshot_mib\)"):
            client.snapshot()


@pytest.mark.integration
def test_other_episodes_answer_while_many_runs_are_slow(bwrap: str) -> None:  # noqa: F811
    # more slow runs than the default thread pool has threads (40)
    slow = 44
    proc, url = start_http("coding", "--wall-seconds", "30", "--max-steps", "100")
    try:

        async def main() -> None:
            # one client keeps at most 32 calls in flight: the slow ones come from two
            async with (
                MCPEnvClient(url) as one,
                MCPEnvClient(url) as two,
                MCPEnvClient(url) as other,
            ):
                await other.reset(options={"task": "fizzbuzz"})
                busy = [(one, two)[i % 2].spawn() for i in range(slow)]
                for episode in busy:
                    await episode.reset(options={"task": "fizzbuzz"})
                async with anyio.create_task_group() as group:
                    for episode in busy:
                        group.start_soon(episode.step, "import time; time.sleep(8)")
                    group.start_soon(busy[0].step, "import time; time.sleep(8)")  # queued
                    await anyio.sleep(2)  # the runs are under way
                    for _ in range(3):
                        with anyio.fail_after(1):
                            await other.call("state")
                            await other.call("read_file", path="solution.py")
                    group.cancel_scope.cancel()

        anyio.run(main)
    finally:
        stop(proc)


# -- 5. special files, and work dirs that never outlive their server ---------------------------


@pytest.mark.integration
@pytest.mark.anyio
async def test_special_files_never_hang_the_file_tools(bwrap: str) -> None:  # noqa: F811
    server = build_server("coding")
    async with MCPEnvClient(server) as client:
        await client.reset(options={"task": "fizzbuzz"})
        plant = (
            "import os, socket\nos.mkfifo('pipe')\nos.symlink('/etc/passwd', 'out')\n"
            "s = socket.socket(socket.AF_UNIX)\ns.bind('sock')\nos.mkdir('dir')\n"
        )
        await client.step(plant)
        for path, kind in [
            ("pipe", r"a FIFO \(named pipe\)"),
            ("out", "a symbolic link"),
            ("sock", "a socket"),
            ("dir", "a directory"),
        ]:
            with anyio.fail_after(5), pytest.raises(InvalidAction, match=f"is {kind}, not a"):
                await client.call("read_file", path=path)
        app = get_app(server)
        assert app.runtime.abandoned_calls() == 0  # no thread left behind
        snapshot = await client.snapshot()  # reads every regular file, skips the rest
        await client.release_snapshot(snapshot)
        obs, *_ = await client.step("import os; print(sorted(os.listdir()))")
        assert obs["stdout"] == "['dir', 'out', 'pipe', 'sock', 'solution.py']\n"


def live_workdirs(root: str) -> list[str]:
    return sorted(os.listdir(root))


@pytest.mark.integration
@pytest.mark.parametrize("how", ["close and SIGTERM", "SIGKILL"])
def test_work_dirs_never_outlive_their_server(bwrap: str, how: str) -> None:  # noqa: F811
    root = scratch_dir()
    server = RawStdio(stdio_command("coding", "--workdir-root", root))
    try:
        server.send(INITIALIZE)
        server.until(lambda seen: bool(seen))
        server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        handles = []
        for i in range(2):
            server.send(call(f"reset{i}", "reset", {"new_episode": True}))
            (answer,) = server.until(lambda seen: bool(seen))
            handles.append(answer["result"]["structuredContent"]["episode_id"])
        fifo = {"episode_id": handles[0], "action": "import os; os.mkfifo('p')"}
        server.send(call("fifo", "step", fifo))
        server.until(lambda seen: bool(seen))
        server.send(call("read", "read_file", {"episode_id": handles[0], "path": "p"}))
        (answer,) = server.until(lambda seen: bool(seen))
        assert "is a FIFO (named pipe), not a regular file" in str(answer["result"]["content"])
        assert len(live_workdirs(root)) == 2
        if how == "SIGKILL":
            server.proc.kill()  # no clean-up of its own: the keepers see it go
        else:
            server.send(call("close", "close", {"episode_id": handles[1]}))
            server.until(lambda seen: bool(seen))
            assert len(live_workdirs(root)) == 1
            server.proc.send_signal(signal.SIGTERM)
        server.proc.wait(timeout=60)
        deadline = time.monotonic() + 30
        while live_workdirs(root) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert live_workdirs(root) == []
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait()
        shutil.rmtree(root, ignore_errors=True)

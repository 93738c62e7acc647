"""The coding env: programming tasks with hidden tests, every run in a real sandbox.

Real bubblewrap (Debian's package, installed by scripts/ensure_debian.sh where missing) and
real resource limits throughout. Every escape attempt runs through a server (in memory),
which answers a normal step right after it; none leaves a process behind. Limits are small
(1 s of CPU, 3 s of wall clock, 8 processes, 256 MiB, 1 MiB files) so nothing here can hurt
the machine: the fork bombs only run after a bounded one has shown the process limit holds.
Network attempts only ever try 127.0.0.1 and 203.0.113.1 (TEST-NET-3, never routed), with a
1 s timeout, and only where the sandbox has no network.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openenv_mcp.authoring.testing import check_env
from openenv_mcp.client import MCPEnvClient
from openenv_mcp.environment import parse_options
from openenv_mcp.errors import (
    ArgumentError,
    DependencyNotInstalled,
    InvalidAction,
    UnsupportedOption,
)
from openenv_mcp.narration import narration_of
from openenv_mcp.options import parse_cli_options
from openenv_mcp.server import ServerSettings, build_server, get_app
from openenv_mcp_envs.coding import CodingConfig, CodingEnv, builtin_tasks, load_task_file
from openenv_mcp_envs.coding._files import check_path, list_files, usage, write_file
from openenv_mcp_envs.coding._problems import same_value
from openenv_mcp_envs.coding._sandbox import UID_BASE, UID_SPAN
from tests.server.test_fuzz import FUZZ, Target, fuzz_target, run_case
from tests.servers import ROOT, ensure_installed, http_server, stdio_command
from tests.test_independent_clients import call, http_target, inspector, node_tools  # noqa: F401

SMALL: dict[str, Any] = {
    "wall_seconds": 3.0,
    "cpu_seconds": 1,
    "max_processes": 8,
    "memory_mib": 256,
    "file_size_mib": 1,
    "output_bytes": 4096,
    "workdir_quota_mib": 2,
    "max_steps": 1000,
}

#: Reference solutions of every built-in task (each must score 1.0).
SOLUTIONS = {
    "fizzbuzz": "def fizzbuzz(n):\n    return ['FizzBuzz' if i % 15 == 0 else 'Fizz' if i % 3 == 0"
    " else 'Buzz' if i % 5 == 0 else str(i) for i in range(1, n + 1)]\n",
    "reverse_words": "def reverse_words(s):\n    return ' '.join(reversed(s.split()))\n",
    "is_prime": "def is_prime(n):\n"
    "    return n > 1 and all(n % d for d in range(2, int(n ** 0.5) + 1))\n",
    "two_sum": "def two_sum(nums, target):\n    seen = {}\n    for i, x in enumerate(nums):\n"
    "        if target - x in seen:\n            return [seen[target - x], i]\n"
    "        seen[x] = i\n",
    "run_length_encode": "import itertools\ndef rle(s):\n"
    "    return ''.join(f'{len(list(g))}{k}' for k, g in itertools.groupby(s))\n",
    "balanced_brackets": "def balanced(s):\n    stack = []\n    for c in s:\n"
    "        if c in '([{':\n            stack.append(c)\n        elif c in ')]}':\n"
    "            if not stack or '([{'[')]}'.index(c)] != stack.pop():\n"
    "                return False\n"
    "    return not stack\n",
    "is_palindrome": "def is_palindrome(s):\n    t = [c.lower() for c in s if c.isalnum()]\n"
    "    return t == t[::-1]\n",
    "to_roman": "def to_roman(n):\n    out = ''\n"
    "    for v, s in [(1000, 'M'), (900, 'CM'), (500, 'D'), (400, 'CD'), (100, 'C'),"
    " (90, 'XC'), (50, 'L'), (40, 'XL'), (10, 'X'), (9, 'IX'), (5, 'V'),"
    " (4, 'IV'), (1, 'I')]:\n        while n >= v:\n            out += s\n            n -= v\n"
    "    return out\n",
    "merge_intervals": "def merge_intervals(iv):\n    out = []\n    for a, b in sorted(iv):\n"
    "        if out and a <= out[-1][1]:\n            out[-1][1] = max(out[-1][1], b)\n"
    "        else:\n            out.append([a, b])\n    return out\n",
    "max_subarray": "def max_subarray(a):\n    best = cur = a[0]\n    for x in a[1:]:\n"
    "        cur = max(x, cur + x)\n        best = max(best, cur)\n    return best\n",
    "flatten": "def flatten(items):\n    out = []\n    for v in items:\n"
    "        out += flatten(v) if isinstance(v, list) else [v]\n    return out\n",
    "word_count": "import collections\ndef word_count(text):\n"
    "    return dict(collections.Counter(text.lower().split()))\n",
    "caesar_cipher": "def caesar(text, shift):\n    out = []\n    for c in text:\n"
    "        if c.isascii() and c.isalpha():\n            base = 65 if c.isupper() else 97\n"
    "            c = chr((ord(c) - base + shift) % 26 + base)\n        out.append(c)\n"
    "    return ''.join(out)\n",
}


# -- unit tier: tasks, paths, comparisons (no process, no socket) -------------------------------


def test_builtin_tasks_are_a_small_valid_set() -> None:
    tasks = builtin_tasks()
    assert 8 <= len(tasks) <= 15
    assert {t.name for t in tasks} == set(SOLUTIONS)
    for task in tasks:
        assert task.entry_point in task.signature and len(task.prompt) <= 300
        assert len(task.tests) >= 5


def test_task_file_errors_say_what_was_expected(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"name": "x"}')
    with pytest.raises(ArgumentError, match="expected an object with name, prompt"):
        load_task_file(str(bad))
    bad.write_text("{nope")
    with pytest.raises(ArgumentError, match="not valid JSON"):
        load_task_file(str(bad))
    with pytest.raises(ArgumentError, match="cannot be read"):
        load_task_file(str(tmp_path / "missing.json"))
    twice = {"name": "a", "prompt": "p", "entry_point": "f", "tests": [{"expected": 1}]}
    bad.write_text(json.dumps([twice, twice]))
    with pytest.raises(ArgumentError, match="unique"):
        load_task_file(str(bad))


def test_values_compare_strictly() -> None:
    assert same_value([1, 2.0000000001], [1, 2])
    assert not same_value(1, True) and not same_value(True, 1)
    assert not same_value([0, 1], (0, 1))  # the sandbox sends JSON: tuples arrive as lists
    assert not same_value({"a": 1}, {"a": 1, "b": 2})
    assert same_value({"a": [None, "x"]}, {"a": [None, "x"]})


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/etc/passwd", "absolute"),
        ("../x", "no '..'"),
        ("a/../../x", "no '..'"),
        ("", "1..200"),
        ("a\x00b", "NUL"),
        ("/".join("d" * 9), "deep"),
        (7, "string"),
    ],
)
def test_paths_stay_inside(path: Any, message: str) -> None:
    with pytest.raises(InvalidAction, match=message):
        check_path(path)


def test_server_writes_never_follow_links(tmp_path: Path) -> None:
    target = tmp_path / "precious"
    target.write_text("keep me")
    work = tmp_path / "work"
    work.mkdir()
    (work / "solution.py").symlink_to(target)
    (work / "d").symlink_to(tmp_path)
    write_file(work, ("solution.py",), b"new", None)
    assert target.read_text() == "keep me" and (work / "solution.py").read_bytes() == b"new"
    with pytest.raises(InvalidAction, match="not a directory"):
        write_file(work, ("d", "precious"), b"x", None)
    assert target.read_text() == "keep me"
    assert list_files(work) == ["d (link)", "solution.py"]


# -- integration tier: real sandboxes ----------------------------------------------------------


@pytest.fixture(scope="session")
def bwrap() -> str:
    out = ensure_installed("ensure_debian.sh", "bubblewrap", "bubblewrap", "bwrap")
    return out.strip().split("=", 1)[1]


def sandbox_pids(uids: Collection[int] = ()) -> list[int]:
    """Live processes of sandboxes this process started: any with a sandbox uid that descends
    from it, runs under one of ``uids`` (random per episode: this test's), or sits in a
    memory cgroup this process made. Another process's sandboxes (a parallel test worker's,
    another program's) are theirs to check, even when their dying processes show up here."""
    parents: dict[int, int] = {}
    candidates = []
    mine = f"/openenv-coding-{os.getpid()}-"
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
            cgroups = Path(f"/proc/{entry}/cgroup").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        pid = int(entry)
        parents[pid] = int(fields.get("PPid", "0").split()[0] or 0)
        uid = int(fields.get("Uid", "0").split()[0])
        if UID_BASE <= uid < UID_BASE + UID_SPAN and "Z" not in fields.get("State", ""):
            if uid in uids or mine in cgroups:
                candidates.append(pid)
            else:
                candidates.append(-pid)  # ours only if it descends from this process
    me = os.getpid()

    def descends(pid: int) -> bool:
        seen = set()
        while pid not in seen and pid > 1:
            seen.add(pid)
            pid = parents.get(pid, 0)
            if pid == me:
                return True
        return False

    return [abs(pid) for pid in candidates if pid > 0 or descends(-pid)]


def uids_of(server: Any) -> set[int]:
    """The sandbox uids of a server's prototype and live episodes (built in this process)."""
    app = get_app(server)
    envs = [app.prototype] + [app.local_env(episode) for episode in app.table.episodes]
    return {env.sandbox.uid for env in envs if env.sandbox.uid is not None}


def describe_pids(pids: list[int]) -> list[str]:
    """What is known of each process (it may be gone by now)."""
    found = []
    for pid in pids:
        try:
            found.append(Path(f"/proc/{pid}/status").read_text()[:300])
        except OSError:
            found.append(f"{pid}: gone")
    return found


@pytest.fixture(scope="module")
def made_envs(bwrap: str) -> Iterator[dict[str, CodingEnv]]:
    """One environment per sandbox mode, made once for the module (a probe each)."""
    made = {
        "bwrap": CodingEnv(CodingConfig(sandbox="bwrap", **SMALL)),  # type: ignore[arg-type]
        "unsafe-rlimits": CodingEnv(CodingConfig(sandbox="unsafe-rlimits", **SMALL)),  # type: ignore[arg-type]
    }
    yield made
    for env in made.values():
        env.close()


@pytest.fixture
def envs(made_envs: dict[str, CodingEnv]) -> dict[str, CodingEnv]:
    """Those environments, each at a fresh fizzbuzz episode (tests run in any order)."""
    for env in made_envs.values():
        env.reset(options={"task": "fizzbuzz"})
    return made_envs


@pytest.fixture(scope="module")
def made_clients(bwrap: str) -> Iterator[dict[str, Any]]:
    """One in-memory server per sandbox mode and a client of each, made once."""
    made: dict[str, Any] = {}
    stack = []
    for mode in ("bwrap", "unsafe-rlimits"):
        server = build_server("coding", sandbox=mode, **SMALL)
        client = MCPEnvClient(server).sync()
        stack.append(client)
        made[mode] = client
        made[f"{mode} server"] = server
    yield made
    for client in stack:
        client.close()


@pytest.fixture
def clients(made_clients: dict[str, Any]) -> dict[str, Any]:
    """Those clients, each at a fresh seeded fizzbuzz episode (tests run in any order)."""
    for mode in ("bwrap", "unsafe-rlimits"):
        made_clients[mode].reset(seed=0, options={"task": "fizzbuzz"})
    return made_clients


def step(client: Any, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
    obs, reward, terminated, truncated, info = client.step(action)
    return obs, float(reward), terminated, truncated, info


def still_serves(client: Any, uids: Collection[int] = ()) -> None:
    obs, *_ = step(client, "print(6 * 7)")
    assert obs["stdout"] == "42\n" and obs["exit_code"] == 0
    left = sandbox_pids(uids)
    assert left == [], describe_pids(left)


Check = Callable[[dict[str, Any], dict[str, Any]], None]


def denied(path: str) -> Check:
    def check(obs: dict[str, Any], info: dict[str, Any]) -> None:
        assert obs["exit_code"] == 1 and obs["stdout"] == ""
        assert "FileNotFoundError" in obs["stderr"] or "PermissionError" in obs["stderr"]
        assert path in obs["stderr"]

    return check


def in_stderr(*words: str, code: int | None = 1) -> Check:
    def check(obs: dict[str, Any], info: dict[str, Any]) -> None:
        for word in words:
            assert word in obs["stderr"], obs["stderr"][-500:]
        if code is not None:
            assert obs["exit_code"] == code

    return check


def timed_out(obs: dict[str, Any], info: dict[str, Any]) -> None:
    assert info["timed_out"] and obs["exit_code"] == -9


def cpu_or_wall(obs: dict[str, Any], info: dict[str, Any]) -> None:
    # RLIMIT_CPU (SIGXCPU, -24) or, on a busy machine, the wall clock first
    assert obs["exit_code"] in (-24, -9), obs


def capped(obs: dict[str, Any], info: dict[str, Any]) -> None:
    assert len(obs["stdout"]) <= 4096 + 200 and "[stdout truncated:" in obs["stdout"]


def output_flood(obs: dict[str, Any], info: dict[str, Any]) -> None:
    capped(obs, info)
    assert obs["exit_code"] == -9  # killed for its output, or at the wall clock


def stdout_is(text: str) -> Check:
    def check(obs: dict[str, Any], info: dict[str, Any]) -> None:
        assert obs["stdout"] == text, (obs["stdout"], obs["stderr"][-300:])

    return check


BACKGROUND = (
    "import os, subprocess, time\n"
    "subprocess.Popen(['sleep', '60'], start_new_session=True)\n"
    "if os.fork() == 0:\n"
    "    os.setsid()\n"
    "    if os.fork() == 0:\n"
    "        time.sleep(60)\n"
    "    os._exit(0)\n"
    "print('left two behind')\n"
)
SERVER_PID = os.getpid()  # the in-memory server is this process
KILL_PARENT = (
    "import os, signal\n"
    "for pid in (os.getppid(), {pid}, 1):\n"
    "    try:\n"
    "        os.kill(pid, signal.SIGKILL)\n"
    "        print('sent', pid)\n"
    "    except OSError as exc:\n"
    "        print(type(exc).__name__, pid)\n"
    "try:\n"
    "    os.kill(-1, signal.SIGKILL)\n"
    "except OSError as exc:\n"
    "    print(type(exc).__name__, -1)\n"
)


def kill_parent_checked(mode: str) -> Check:
    def check(obs: dict[str, Any], info: dict[str, Any]) -> None:
        lines = obs["stdout"].splitlines()
        if mode == "bwrap":
            # PID namespace: the parent is the namespace's init (immune to its members'
            # SIGKILL) and the server's pid names nothing in there
            assert f"ProcessLookupError {SERVER_PID}" in lines or f"sent {SERVER_PID}" in lines
        else:
            assert f"PermissionError {SERVER_PID}" in lines, lines

    return check


def escapes(mode: str) -> list[tuple[str, Any, Check]]:
    """``(name, action, check)``: every attempt, with what containing it looks like."""
    common: list[tuple[str, Any, Check]] = [
        ("read /etc/shadow", "print(open('/etc/shadow').read())", denied("/etc/shadow")),
        ("list /root", "import os; print(os.listdir('/root'))", denied("/root")),
        (
            "kill the parent and the server",
            KILL_PARENT.format(pid=SERVER_PID),
            kill_parent_checked(mode),
        ),
        ("infinite loop (CPU)", "while True: pass", cpu_or_wall),
        ("sleep forever (wall clock)", "import time; time.sleep(600)", timed_out),
        ("10 MB of output", "print('x' * 10_000_000)", capped),
        ("endless output", "while True: print('y' * 1000)", output_flood),
        ("1 GiB of memory", "x = bytearray(1 << 30)", in_stderr("MemoryError")),
        (
            "a 2 MiB file (limit 1 MiB)",
            "open('big', 'wb').write(b'x' * (2 << 20))",
            in_stderr("File too large"),
        ),
        ("background processes", BACKGROUND, stdout_is("left two behind\n")),
        (
            "the server's memory",
            f"open('/proc/{SERVER_PID}/mem', 'rb').read(1)",
            in_stderr(f"/proc/{SERVER_PID}/mem"),
        ),
    ]
    if mode == "bwrap":
        common += [
            (
                "read the project README",
                "print(open('/work/main/README.md').read())",
                denied("/work/main/README.md"),
            ),
            (
                "read the project by its real path",
                f"print(open({str(ROOT / 'README.md')!r}).read())",
                denied(str(ROOT / "README.md")),
            ),
            ("list /home", "import os; print(os.listdir('/home'))", denied("/home")),
            (
                "connect to 127.0.0.1",
                "import socket; socket.create_connection(('127.0.0.1', 22), timeout=1)",
                in_stderr("ConnectionRefusedError"),
            ),
            (
                "connect to a public address",
                "import socket; socket.create_connection(('203.0.113.1', 80), timeout=1)",
                in_stderr("Network is unreachable"),
            ),
        ]
    return common


@pytest.mark.integration
@pytest.mark.parametrize("mode", ["bwrap", "unsafe-rlimits"])
def test_escape_attempts_are_contained(clients: dict[str, Any], mode: str) -> None:
    client = clients[mode]
    for name, action, check in escapes(mode):
        obs, reward, terminated, _, info = step(client, action)
        try:
            check(obs, info)
        except AssertionError as exc:
            raise AssertionError(f"{mode}: {name}: {exc}") from None
        assert reward == 0.0 and not terminated
        still_serves(client, uids_of(clients[f"{mode} server"]))


@pytest.mark.integration
@pytest.mark.parametrize("mode", ["bwrap", "unsafe-rlimits"])
def test_fork_bombs_are_contained(clients: dict[str, Any], mode: str) -> None:
    client = clients[mode]
    # First a bounded bomb: it proves RLIMIT_NPROC binds before a real one runs.
    bounded = (
        "import os, time\nn = 0\ntry:\n    for _ in range(64):\n        if os.fork() == 0:\n"
        "            time.sleep(5)\n            os._exit(0)\n        n += 1\n"
        "except OSError as exc:\n    print('stopped after', n, type(exc).__name__)\n"
    )
    obs, *_ = step(client, bounded)
    words = obs["stdout"].split()
    assert words[:2] == ["stopped", "after"] and words[3] == "BlockingIOError", obs
    assert int(words[2]) <= 8  # max_processes: what a run may start
    uids = uids_of(clients[f"{mode} server"])
    still_serves(client, uids)
    bomb = (
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    )
    obs, *_ = step(client, bomb)
    assert obs["exit_code"] in (-9, -24)
    still_serves(client, uids)


@pytest.mark.integration
def test_links_planted_by_code_are_never_followed(
    envs: dict[str, CodingEnv], tmp_path: Path
) -> None:
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    target.chmod(0o666)  # even a file the sandbox's uid could write, were it reachable
    for env in envs.values():
        env.step(
            env.parse_action(
                f"import os; os.remove('solution.py'); os.symlink({str(target)!r}, 'solution.py')"
            )
        )
        with pytest.raises(
            InvalidAction, match=r"'solution\.py' is a symbolic link, not a regular"
        ):
            env._read_view("solution.py")  # the read_file tool
        result = env.step(env.parse_action({"write": {"path": "solution.py", "content": "x"}}))
        assert result.info["files"] == ["solution.py"]
        assert target.read_text() == "keep me"
        env.step(env.parse_action(f"import os; os.symlink({str(tmp_path)!r}, 'd')"))
        with pytest.raises(InvalidAction, match="not a directory"):
            env.step(env.parse_action({"write": {"path": "d/precious.txt", "content": "x"}}))
        assert target.read_text() == "keep me"
        assert "d/precious.txt" not in env.snapshot().files


@pytest.mark.integration
def test_quota_holds_during_the_run_and_unisolated_after_it(envs: dict[str, CodingEnv]) -> None:
    fill = "for i in range(4):\n    open(f'f{i}', 'wb').write(b'x' * 900_000)\n"
    env = envs["bwrap"]
    result = env.step(env.parse_action(fill))
    # the tmpfs says no at the write that would pass 2 MiB: nothing beyond it was written
    assert "No space left on device" in result.observation["stderr"]
    assert "f0" in result.info["files"] and "f3" not in result.info["files"]
    assert env.workdir is not None and usage(env.workdir) <= 2 << 20
    env.step(env.parse_action("import os\nfor f in os.listdir():\n    os.remove(f)"))
    env = envs["unsafe-rlimits"]  # a plain directory: checked only after the run
    result = env.step(env.parse_action(fill))
    events = narration_of(env).step_events({}, result)
    assert any("past its 2 MiB quota: it was emptied" in e for e in events)
    assert result.info["files"] == []


@pytest.mark.integration
def test_every_builtin_task_is_solvable(envs: dict[str, CodingEnv]) -> None:
    env = envs["bwrap"]
    for task in env.tasks:
        env.reset(options={"task": task.name})
        result = env.step(env.parse_action({"solution": SOLUTIONS[task.name]}))
        assert result.reward == 1.0 and result.terminated, (task.name, result.observation)
        assert result.observation["tests_passed"] == result.observation["tests_total"]


@pytest.mark.integration
def test_a_half_right_solution_earns_its_fraction(envs: dict[str, CodingEnv]) -> None:
    env = envs["bwrap"]
    env.reset(options={"task": "is_prime"})
    task = env.task
    assert task is not None
    wrong = "def is_prime(n):\n    return n % 2 == 1\n"
    expected = sum((t.args[0] % 2 == 1) == t.expected for t in task.tests) / len(task.tests)
    assert 0 < expected < 1
    env.step(env.parse_action({"write": {"path": "solution.py", "content": wrong}}))
    result = env.step(env.parse_action({"test": True}))
    assert result.reward == pytest.approx(expected) and not result.terminated
    assert result.info["score"] == pytest.approx(expected)
    report = result.observation["report"]
    assert report.startswith(f"Tests: {result.observation['tests_passed']}/{len(task.tests)}")
    assert "FAIL is_prime(2): returned false" in report and "expected" not in report
    again = env.step(env.parse_action({"test": True}))
    assert again.reward == 0.0  # improvement: the same score earns nothing twice
    right = env.step(env.parse_action({"solution": SOLUTIONS["is_prime"]}))
    assert right.reward == pytest.approx(1 - expected) and right.terminated


@pytest.mark.integration
def test_reports_and_forged_values(envs: dict[str, CodingEnv]) -> None:
    env = envs["bwrap"]
    env.reset(options={"task": "two_sum"})
    # a tuple travels as a list; an object that equals everything is not a JSON value
    cheat = (
        "class Any:\n    def __eq__(self, other):\n        return True\n"
        "def two_sum(nums, target):\n    return Any()\n"
    )
    result = env.step(env.parse_action({"solution": cheat}))
    assert (
        result.reward == 0.0 and "returned a Any, not a JSON value" in result.observation["report"]
    )
    # forged report lines: expected values never enter the sandbox, so they must be right
    forge = (
        "import os\nfor fd in range(3, 20):\n    try:\n"
        '        os.write(fd, b\'{"i": 0, "value": [0, 1]}\\n{"i": 1, "value": [9, 9]}\\n\')\n'
        "    except OSError:\n        pass\n"
        "def two_sum(nums, target):\n    raise ValueError('no')\n"
    )
    result = env.step(env.parse_action({"solution": forge}))
    assert result.observation["tests_passed"] <= 1  # only a correct forged value counts
    result = env.step(env.parse_action({"solution": "import sys\nsys.exit(0)\n"}))
    assert "No test ran: importing solution.py raised SystemExit" in result.observation["report"]
    result = env.step(env.parse_action({"solution": "def two_sum(:\n"}))
    assert "SyntaxError" in result.observation["stderr"] and result.reward == 0.0
    result = env.step(env.parse_action({"solution": "x = 1\n"}))
    assert "defines no function two_sum" in result.observation["report"]


@pytest.mark.integration
def test_files_persist_and_runs_see_them(envs: dict[str, CodingEnv]) -> None:
    env = envs["bwrap"]
    env.reset(options={"task": "fizzbuzz"})
    env.step(env.parse_action({"write": {"path": "lib/helper.py", "content": "X = 41\n"}}))
    env.step(env.parse_action("open('made.txt', 'w').write('by code')"))
    result = env.step(
        env.parse_action("from lib.helper import X; print(X + 1, open('made.txt').read())")
    )
    assert result.observation["stdout"] == "42 by code\n"
    assert result.info["files"] == ["lib/helper.py", "made.txt", "solution.py"]
    assert env._read_view("made.txt")["content"] == "by code"
    fresh = CodingEnv(CodingConfig(persist_files=False, **SMALL))  # type: ignore[arg-type]
    try:
        fresh.reset(options={"task": "fizzbuzz"})
        fresh.step(fresh.parse_action("open('made.txt', 'w').write('gone')"))
        result = fresh.step(fresh.parse_action("import os; print(sorted(os.listdir()))"))
        assert result.observation["stdout"] == "['solution.py']\n"
    finally:
        fresh.close()


@pytest.mark.integration
def test_bad_actions_and_options_fail_clearly(envs: dict[str, CodingEnv]) -> None:
    env = envs["bwrap"]
    cases = [
        ({"tset": True}, "Did you mean"),
        ({"test": 1}, 'expected {"test": true}'),
        ({"code": "x", "test": True}, "exactly one of"),
        ({"write": {"path": "a"}}, '"path": "...", "content"'),
        ({"write": {"path": "/etc/x", "content": ""}}, "absolute"),
        ("x" * 30_001, "at most 30000 characters"),
        (7, "expected Python source"),
    ]
    for action, message in cases:
        with pytest.raises(InvalidAction, match=message):
            env.parse_action(action)
    with pytest.raises(UnsupportedOption, match="Did you mean 'fizzbuzz'"):
        env.reset(options=parse_options(env, {"task": "fizbuzz"}))
    with pytest.raises(UnsupportedOption, match="cannot be set per episode"):
        parse_options(env, {"level": 2})
    with pytest.raises(ArgumentError, match="Did you mean"):
        CodingEnv(CodingConfig(task="two_summ"))


@pytest.mark.integration
def test_seeds_choose_the_task(bwrap: str) -> None:
    first, second = CodingEnv(CodingConfig()), CodingEnv(CodingConfig())
    try:
        names = [first.reset(seed=s)[0]["task"] for s in range(12)]
        assert names == [second.reset(seed=s)[0]["task"] for s in range(12)]
        assert len(set(names)) > 3
        obs, info = first.reset(seed=5, options={"task": "to_roman"})
        assert (
            obs["task"] == "to_roman"
            and obs["kind"] == "reset"
            and info["files"] == ["solution.py"]
        )
    finally:
        first.close()
        second.close()


@pytest.mark.integration
def test_task_file(bwrap: str, tmp_path: Path) -> None:
    file = tmp_path / "tasks.json"
    task = {
        "name": "add",
        "title": "Add",
        "prompt": "Return a + b.",
        "entry_point": "add",
        "signature": "def add(a: int, b: int) -> int:",
        "tests": [
            {"args": [1, 2], "expected": 3},
            {"args": [-1], "kwargs": {"b": 1}, "expected": 0},
        ],
    }
    file.write_text(json.dumps({"tasks": [task]}))
    env = CodingEnv(CodingConfig(task_file=str(file)))
    try:
        obs, _ = env.reset(seed=123)
        assert obs["task"] == "add" and obs["tests_total"] == 2
        result = env.step(env.parse_action({"solution": "def add(a, b):\n    return a + b\n"}))
        assert result.reward == 1.0 and result.terminated
    finally:
        env.close()
    (options,) = parse_cli_options([CodingEnv.Config], ["--task-file", str(file)], where="coding")
    assert options == {"task_file": str(file)}


@pytest.mark.integration
def test_truncated_after_max_steps(bwrap: str) -> None:
    env = CodingEnv(CodingConfig(max_steps=2))
    try:
        env.reset(seed=0)
        assert not env.step(env.parse_action({"write": {"path": "a", "content": ""}})).truncated
        last = env.step(env.parse_action({"test": True}))
        assert last.truncated and not last.terminated
    finally:
        env.close()


@pytest.mark.integration
def test_no_silent_fallback(bwrap: str, tmp_path: Path) -> None:
    missing = str(tmp_path / "no-bwrap")
    for mode in ("auto", "bwrap"):  # auto never falls back: it refuses, naming the fix
        with pytest.raises(DependencyNotInstalled) as refused:
            CodingEnv(CodingConfig(sandbox=mode, bwrap=missing))  # type: ignore[arg-type]
        text = str(refused.value)
        assert "cannot isolate code here" in text and "apt-get install bubblewrap" in text
        assert "unprivileged_userns_clone" in text and "unsafe-rlimits" in text
    unsafe = CodingEnv(CodingConfig(sandbox="unsafe-rlimits"))
    try:
        assert unsafe.sandbox.mode == "unsafe-rlimits"
        assert "WARNING: sandbox: --sandbox unsafe-rlimits" in narration_of(unsafe).instructions()
        assert "WITHOUT isolation" in (unsafe.metadata()["sandbox_warning"] or "")
        unsafe.check_exposure(False)  # one local client over stdio: the operator's choice
        with pytest.raises(ArgumentError, match="refused on a server that others can reach"):
            unsafe.check_exposure(True)
    finally:
        unsafe.close()
    isolated = CodingEnv(CodingConfig())
    isolated.check_exposure(True)
    assert "WARNING" not in narration_of(isolated).instructions()
    assert isolated.metadata()["sandbox_warning"] is None


@pytest.mark.integration
def test_check_env(bwrap: str) -> None:
    check_env(CodingEnv, steps=3, wall_seconds=3.0, cpu_seconds=1)


@pytest.mark.integration
def test_agent_profile_tools(bwrap: str) -> None:
    import anyio
    from fastmcp import Client

    server = build_server("coding", settings=ServerSettings(profile="agent"))

    async def names() -> list[str]:
        async with Client(server) as client:
            return sorted(t.name for t in await client.list_tools())

    assert anyio.run(names) == [
        "last_output",
        "list_tasks",
        "read_file",
        "reset",
        "state",
        "step",
        "task",
    ]


@pytest.mark.integration
def test_seeded_episode_through_the_client_over_stdio(bwrap: str) -> None:
    with MCPEnvClient(stdio_command("coding", "--wall-seconds", "5")).sync() as client:
        obs, info = client.reset(seed=3)
        name = obs["task"]
        assert info["sandbox"] == "bwrap"
        text = client.call("task")
        assert text["task"] == name and text["files"] == ["solution.py"]
        obs, reward, terminated, _, info = client.step("print('hello from the sandbox')")
        assert obs["stdout"] == "hello from the sandbox\n" and reward == 0.0
        assert client.call("last_output")["stdout"] == "hello from the sandbox\n"
        obs, reward, terminated, truncated, info = client.step({"solution": SOLUTIONS[name]})
        assert reward == 1.0 and terminated and not truncated
        assert obs["report"].startswith("Tests: ") and info["best_score"] == 1.0
    with MCPEnvClient(stdio_command("coding")).sync() as client:
        assert client.reset(seed=3)[0]["task"] == name  # same seed, same task


@pytest.mark.integration
def test_seeded_episode_through_the_inspector_over_http(node_tools: dict[str, str]) -> None:  # noqa: F811
    with http_server("coding") as url:
        target = http_target(url)
        names = {t["name"] for t in inspector(node_tools, target, "tools/list")["tools"]}
        assert {"reset", "step", "state", "task", "read_file", "last_output"} <= names
        reset = inspector(node_tools, target, "tools/call", *call("reset", {"seed": 3}))
        eid = reset["structuredContent"]["episode_id"]
        name = reset["structuredContent"]["observation"]["task"]
        run = inspector(
            node_tools,
            target,
            "tools/call",
            *call("step", {"episode_id": eid, "action": {"code": "print(2 ** 10)"}}),
        )
        assert run["structuredContent"]["observation"]["stdout"] == "1024\n"
        read = inspector(
            node_tools,
            target,
            "tools/call",
            *call("read_file", {"episode_id": eid, "path": "solution.py"}),
        )
        assert read["structuredContent"]["content"].endswith("raise NotImplementedError\n")
        done = inspector(
            node_tools,
            target,
            "tools/call",
            *call("step", {"episode_id": eid, "action": {"solution": SOLUTIONS[name]}}),
        )
        view = done["structuredContent"]
        assert view["reward"] == 1.0 and view["terminated"] and view["status"] == "ended"
        assert "Tests: " in done["content"][0]["text"]


def test_harness_config_serves_coding_for_an_agent() -> None:
    data = json.loads((ROOT / "harness_examples" / "coding.mcp.json").read_text())
    server = data["mcpServers"]["coding"]
    assert server["command"] == "/ABSOLUTE/PATH/TO/openenv-mcp/dev"
    # ./dev run, the agent profile over stdio (its episodes in the episode host)
    assert server["args"][:4] == ["run", "serve", "coding", "--agent"]


# -- fuzz ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def coding_target(bwrap: str) -> Iterator[Target]:
    actions = st.one_of(
        st.sampled_from(
            [
                {"test": True},
                {"code": "print(1)"},
                "print('hi')",
                {"write": {"path": "a.txt", "content": "x"}},
                {"write": {"path": "../a", "content": "x"}},
                {"write": {"path": "/etc/passwd", "content": "x"}},
                {"solution": "def fizzbuzz(n):\n    return []\n"},
                {"test": False},
                {"code": 5},
                {"tset": True},
                {},
            ]
        ),
        st.dictionaries(
            st.sampled_from(["code", "write", "test", "solution", "x"]),
            st.text(max_size=8),
            max_size=2,
        ),
        st.text(max_size=20),
    )
    canary = {"write": {"path": "canary.txt", "content": "ok"}}
    with fuzz_target("coding", actions, canary, ["task"], wall_seconds=2.0, max_steps=50) as target:
        yield target


@pytest.mark.integration
@given(data=st.data())
@settings(FUZZ, max_examples=150)
def test_fuzz_coding(coding_target: Target, data: st.DataObject) -> None:
    run_case(coding_target, data)
    assert sandbox_pids() == []  # its episodes' uids come and go: their cgroups say whose

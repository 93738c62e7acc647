"""Two tiers of tests.

* The **unit tier** (``./dev test -m unit``): everything in memory; no subprocess,
  no socket. A test is in it unless it is marked ``integration``, and while it
  runs, starting a process or opening a network socket fails the test (so the
  tier stays what it says).
* The **integration tier** (``-m integration``): real stdio subprocesses, HTTP on
  loopback, worker processes, independent clients (Node), harness commands.

``./dev test`` runs both.

Episode hosts (``--episode-host``) started anywhere in the session live in a private
directory of the session's (``OPENENV_MCP_HOST_DIR``, set for the whole run, so every
process a test starts inherits it), never in the user's own, and are stopped at its end.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from openenv_mcp.server.transports._host import HOST_DIR_ENV
from tests.figures import FIGURES_ENV

#: OpenEnv's env packages vendored in ``tests/openenv_packages`` (its typed clients).
OPENENV_PACKAGES = ("atari_env", "chess_env", "coding_env", "echo_env", "openspiel_env")

#: The session's private directory of episode hosts (the controller's, under xdist).
_session_hosts: Path | None = None
#: Seconds a host has to close its episodes after SIGTERM, before SIGKILL.
_HOST_GRACE = 10.0


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("integration") is None:
            item.add_marker(pytest.mark.unit)


def _refuse(what: str) -> Any:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(
            f"a unit-tier test {what}; mark it @pytest.mark.integration (tests/conftest.py)"
        )

    return refuse


@pytest.fixture(autouse=True)
def _unit_tier_stays_in_memory(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    if request.node.get_closest_marker("integration") is None:
        monkeypatch.setattr(subprocess.Popen, "__init__", _refuse("started a process"))
        monkeypatch.setattr(asyncio, "create_subprocess_exec", _refuse("started a process"))
        monkeypatch.setattr(socket.socket, "connect", _refuse("opened a network connection"))
        monkeypatch.setattr(socket.socket, "bind", _refuse("bound a socket"))
    yield


@pytest.fixture(autouse=True)
def _sandboxed_envs_have_their_sandbox(request: pytest.FixtureRequest) -> None:
    """A test parametrized with an env whose runs are sandboxed (coding) gets Debian's
    bubblewrap installed first, in any order (its own tests install it too)."""
    from tests.servers import PROCESS_ENVS, ensure_sandbox

    callspec = getattr(request.node, "callspec", None)
    if callspec is not None and PROCESS_ENVS & {
        v for v in callspec.params.values() if isinstance(v, str)
    }:
        ensure_sandbox()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def openenv_packages(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """OpenEnv's five env packages (``tests/openenv_packages``), installed by pip as a user
    would, from copies (pip builds in place), into a target folder: put it on a
    subprocess's ``PYTHONPATH`` (:func:`tests.servers.with_pythonpath`); this venv stays
    as it is."""
    from tests.servers import ROOT

    root = tmp_path_factory.mktemp("openenv_packages")
    target = root / "site"
    copies = []
    for name in OPENENV_PACKAGES:
        shutil.copytree(ROOT / "tests" / "openenv_packages" / name, root / name)
        copies.append(str(root / name))
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index"]
    proc = subprocess.run(
        [*pip, "--no-build-isolation", "--target", str(target), *copies],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    yield target


def pytest_configure(config: pytest.Config) -> None:
    global _session_hosts
    # matplotlib (reasoning-gym imports it) asks fontconfig for the system's fonts, a
    # process, the first time it is imported on a machine: here, before any test, not in
    # whichever unit-tier test happens to import it first on a fresh machine.
    with contextlib.suppress(ImportError):
        import matplotlib.font_manager  # noqa: F401
    if os.environ.get("PYTEST_XDIST_WORKER") is None:  # the controller (or a plain run)
        handle, path = tempfile.mkstemp(prefix="openenv-mcp-figures-", suffix=".txt")
        os.close(handle)
        os.environ[FIGURES_ENV] = path  # xdist's workers inherit it
        # Whatever the user's shell says: their own hosts are never the tests'.
        _session_hosts = session_host_dir()
        os.environ[HOST_DIR_ENV] = str(_session_hosts)


def pytest_unconfigure(config: pytest.Config) -> None:
    if _session_hosts is not None:
        stop_hosts(_session_hosts)
        shutil.rmtree(_session_hosts, ignore_errors=True)


def session_host_dir() -> Path:
    """A new private (0700) directory for the session's hosts, short enough for their Unix
    sockets (``<16 hex>.sock`` inside, 107 bytes in all): under the temporary directory,
    else ``/tmp`` where that is too long."""
    made = Path(tempfile.mkdtemp(prefix="oeh-session-"))
    if len(os.fsencode(made)) + len("/0123456789abcdef.sock") <= 107:
        return made
    made.rmdir()
    return Path(tempfile.mkdtemp(prefix="oeh-session-", dir="/tmp"))


def stop_hosts(directory: Path) -> list[int]:
    """Stop every episode host serving in ``directory``: SIGTERM (it closes its episodes),
    then SIGKILL for any still running after a bounded grace. The hosts found."""
    from tests.servers import episode_hosts

    handles: dict[int, int] = {}
    for pid in episode_hosts(directory):
        with contextlib.suppress(OSError):  # already gone
            handles[pid] = os.pidfd_open(pid)  # a handle no reused pid can fool
            signal.pidfd_send_signal(handles[pid], signal.SIGTERM)
    try:
        left = _running_after(handles.values(), _HOST_GRACE)
        for fd in left:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(fd, signal.SIGKILL)
        _running_after(left, _HOST_GRACE)
    finally:
        for fd in handles.values():
            os.close(fd)
    return sorted(handles)


def _running_after(pidfds: Iterable[int], seconds: float) -> set[int]:
    """Those of ``pidfds`` whose process is still running after waiting up to ``seconds``
    for them to exit (a pidfd reads as ready once its process has)."""
    left = set(pidfds)
    deadline = time.monotonic() + seconds
    while left and (remaining := deadline - time.monotonic()) > 0:
        left -= set(select.select(list(left), [], [], remaining)[0])
    return left


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    path = os.environ.get(FIGURES_ENV)
    if os.environ.get("PYTEST_XDIST_WORKER") is not None or path is None:
        return
    with contextlib.suppress(OSError):
        lines = Path(path).read_text(encoding="utf-8").splitlines()
        os.unlink(path)
        if lines:
            terminalreporter.section("openenv-mcp figures")
            for line in lines:
                terminalreporter.write_line(line)

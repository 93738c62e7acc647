"""Two tiers of tests.

* The **unit tier** (``./dev test -m unit``): everything in memory; no subprocess,
  no socket. A test is in it unless it is marked ``integration``, and while it
  runs, starting a process or opening a network socket fails the test (so the
  tier stays what it says).
* The **integration tier** (``-m integration``): real stdio subprocesses, HTTP on
  loopback, worker processes, independent clients (Node), harness commands.

``./dev test`` runs both.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.figures import FIGURES_ENV


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


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER") is None:  # the controller (or a plain run)
        handle, path = tempfile.mkstemp(prefix="openenv-mcp-figures-", suffix=".txt")
        os.close(handle)
        os.environ[FIGURES_ENV] = path  # xdist's workers inherit it


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

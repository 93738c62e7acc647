"""Real OpenEnv server processes for the bridge's integration tests: OpenEnv's own
``create_app`` under uvicorn (``tests/openenv_apps.py``, or an ``openenv init``
scaffold), every wait bounded, every process stopped and reaped."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from tests.servers import ROOT, free_port, stop

#: openenv-core imports gradio and more at start: seconds, on a busy machine many.
OPENENV_START_TIMEOUT = 120.0
BIN = Path(sys.executable).parent


def wait_listening(proc: subprocess.Popen[bytes], port: int, log: object, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            log.seek(0)  # type: ignore[attr-defined]
            raise RuntimeError(f"server exited early: {log.read().decode()[-2000:]}")  # type: ignore[attr-defined]
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"server did not listen within {timeout}s")
        time.sleep(0.05)


@contextlib.contextmanager
def openenv_server(
    app: str,
    cwd: Path = ROOT,
    port: int | None = None,
    *,
    python: str | os.PathLike[str] = sys.executable,
    env: dict[str, str] | None = None,
    timeout: float = OPENENV_START_TIMEOUT,
) -> Iterator[str]:
    """``uvicorn APP`` (``module:app``) on a loopback port, run by ``python`` with the
    environment ``env`` (this process's by default); yields its base URL."""
    port = port or free_port()
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            [str(python), "-m", "uvicorn", app, "--port", str(port), "--log-level", "warning"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            cwd=cwd,
            env=env,
        )
        try:
            wait_listening(proc, port, log, timeout)
            yield f"http://127.0.0.1:{port}"
        finally:
            stop(proc)


class Restartable:
    """An OpenEnv server that a test can kill mid-episode and start again on its port."""

    def __init__(self, app: str) -> None:
        self.app = app
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._stack: contextlib.ExitStack | None = None

    def start(self) -> None:
        self._stack = contextlib.ExitStack()
        self._stack.enter_context(openenv_server(self.app, port=self.port))

    def kill(self) -> None:
        if self._stack is not None:
            self._stack.close()
            self._stack = None


def openenv_cli(
    *args: str, cwd: Path = ROOT, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """OpenEnv's own command line (``openenv ...``, from openenv-core)."""
    return subprocess.run(
        [str(BIN / "openenv"), *args], capture_output=True, text=True, timeout=timeout, cwd=cwd
    )

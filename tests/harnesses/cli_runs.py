"""Running a harness CLI (Codex, Gemini CLI) to its end, as its tests do: bounded, in a
process group of its own, and every stdio server it started gone shortly after (the
episode host, by design, outlives it)."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import pytest


def run_cli(
    argv: Sequence[str], *, cwd: Path, env: dict[str, str], home: Path, timeout: float
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` (its HOME is ``home``) to its end within ``timeout`` seconds; fail the
    test if it runs past, or if a stdio server it started outlives it by 15 s."""
    name = Path(argv[0]).name
    proc = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate(timeout=30)
        pytest.fail(f"{name} {shlex.join(argv[1:])} ran past {timeout} s:\n{stderr[-3000:]}")
    left = stdio_servers(home, wait=15)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert not left, f"stdio servers left running after {name} exited: {left}"
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def stdio_servers(home: Path, wait: float) -> list[int]:
    """Our stdio servers started with this HOME, once they are gone or ``wait`` s passed."""
    marker = f"HOME={home}".encode()
    deadline = time.monotonic() + wait
    while True:
        found = []
        for proc in Path("/proc").iterdir():
            if proc.name.isdigit():
                with contextlib.suppress(OSError):
                    cmdline = (proc / "cmdline").read_bytes().split(b"\0")
                    if b"--stdio" in cmdline and marker in (proc / "environ").read_bytes():
                        found.append(int(proc.name))
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.1)

"""Harness CLIs (Claude Code, Codex, Gemini CLI) as their tests use them: installed from
npm into a cache outside the repository (:func:`npm_cli`), and run to their end
(:func:`run_cli`): bounded, in a process group of their own, and every stdio server they
started gone shortly after (the episode host, by design, outlives it)."""

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


def npm_cli(folder: str, spec: str, what: str, installed: str, *flags: str) -> Path:
    """Install npm package ``spec`` into ``~/.cache/openenv-mcp/FOLDER`` once (``installed``,
    a path in it, shows it is there) and return that folder; skip the test, saying why,
    where the install cannot happen here."""
    cache = Path(os.environ.get("HOME", "/root")) / ".cache" / "openenv-mcp" / folder
    if not (cache / installed).exists():
        cache.mkdir(parents=True, exist_ok=True)
        (cache / "package.json").write_text(f'{{"name": "{folder}", "private": true}}')
        try:
            proc = subprocess.run(
                ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", *flags, spec],
                cwd=cache, capture_output=True, text=True, timeout=600,
                env={**os.environ, "npm_config_update_notifier": "false"},
            )  # fmt: skip
        except (OSError, subprocess.TimeoutExpired) as exc:
            pytest.skip(f"{what} could not be installed from npm: {exc}")
        if proc.returncode != 0 or not (cache / installed).exists():
            pytest.skip(f"{what} could not be installed: {proc.stderr[-500:]}")
    return cache


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

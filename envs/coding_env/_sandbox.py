"""Run untrusted Python: a separate process under resource limits, in bubblewrap namespaces.

Each run is one process tree:

* started in a new session (its own process group) as a user of its own: where the server
  runs as root, a random unprivileged uid per environment instance, because the kernel
  never enforces ``RLIMIT_NPROC`` on uid 0, not even inside a user namespace;
* under ``RLIMIT_CPU``, ``RLIMIT_AS``, ``RLIMIT_FSIZE``, ``RLIMIT_NPROC`` (and no core
  files), set by the first code the sandbox runs (:mod:`coding_env._boot`), before any of
  the agent's;
* inside bubblewrap: new user, PID, network, IPC, UTS and cgroup namespaces; a read-only
  root holding only ``/usr`` (and the ``/bin``, ``/lib*`` links), the interpreter's prefix
  and a fresh ``/proc``; a size-limited ``/tmp``; the episode's working directory at
  ``/sandbox``; nothing of ``/home``, ``/root``, ``/work``, ``/etc`` or the project. The
  network namespace has only a loopback device, so every connection fails at once;
* killed, with everything it started, at the wall-clock limit (SIGKILL to its process
  group; bubblewrap's PID namespace takes every descendant with it, and as root every
  process left with the sandbox's uid is killed too).

Where bubblewrap cannot run, the ``rlimits`` fallback keeps the limits, the separate uid
(as root) and the throwaway directory, without namespaces: the code can then read what
that uid may read and use the network. The server says so when it starts.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from coding_env._boot import BOOT

__all__ = ["Limits", "RunResult", "Sandbox", "SandboxMode", "default_python", "find_bwrap"]

log = logging.getLogger(__name__)

SandboxMode = Literal["bwrap", "rlimits"]
#: Inside the sandbox: the working directory's path, and the uid/gid code sees.
INSIDE_DIR = "/sandbox"
INSIDE_UID = 1000
#: Random uids for sandboxes start here (far above any real user's).
UID_BASE = 2_000_000_000
UID_SPAN = 100_000_000


@dataclass(frozen=True)
class Limits:
    """What one run may use."""

    cpu_seconds: int = 5
    wall_seconds: float = 10.0
    memory_mib: int = 512
    file_size_mib: int = 16
    max_processes: int = 32
    output_bytes: int = 65536
    tmp_mib: int = 32

    def boot_config(self) -> str:
        return json.dumps(
            {
                "cpu": self.cpu_seconds,
                "memory": self.memory_mib << 20,
                "fsize": self.file_size_mib << 20,
                "nproc": self.max_processes,
            }
        )


@dataclass
class RunResult:
    """What one run did."""

    stdout: str
    stderr: str
    exit_code: int
    timed_out: bool = False
    output_limited: bool = False
    report: list[dict[str, object]] = field(default_factory=list)
    seconds: float = 0.0


def find_bwrap() -> str | None:
    """bubblewrap's path, or ``None``."""
    found = shutil.which("bwrap")
    if found:
        return found
    return "/usr/bin/bwrap" if os.access("/usr/bin/bwrap", os.X_OK) else None


def default_python() -> str:
    """The system's Python 3 (stdlib only is needed), else this interpreter."""
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if os.access(candidate, os.X_OK):
            return candidate
    return os.path.realpath(sys.executable)


def _decode(data: bytes, total: int, limit: int, what: str) -> str:
    text = data[:limit].decode("utf-8", errors="replace")
    if total > limit:
        text += f"\n[{what} truncated: {total} bytes written, the first {limit} shown]"
    return text


def _kill_uid(uid: int, deadline: float) -> None:
    """SIGKILL every live process whose real uid is ``uid`` until none is left (or the
    deadline). Zombies are skipped: they hold nothing, and their parent reaps them."""
    while True:
        found = False
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/status") as f:
                    status = f.read()
            except OSError:
                continue
            fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
            try:
                owner = int(fields["Uid"].split()[0])
                zombie = fields["State"].split()[0] in ("Z", "X")
            except (KeyError, ValueError, IndexError):
                continue
            if owner == uid and not zombie:
                found = True
                with contextlib.suppress(OSError):
                    os.kill(int(entry), signal.SIGKILL)
        if not found or time.monotonic() > deadline:
            return
        time.sleep(0.01)


class Sandbox:
    """Runs code for one environment instance (its own uid where the server is root)."""

    def __init__(
        self,
        mode: Literal["auto", "bwrap", "rlimits"],
        limits: Limits,
        python: str | None = None,
    ) -> None:
        self.limits = limits
        self.python = python or default_python()
        self.root = os.geteuid() == 0
        # A uid of its own: RLIMIT_NPROC counts (and binds) per uid, never for root, and
        # leftover processes are found by it.
        self.uid: int | None = (
            UID_BASE + int.from_bytes(os.urandom(4), "big") % UID_SPAN if self.root else None
        )
        self.bwrap = find_bwrap()
        self.warning: str | None = None
        if mode == "rlimits":
            self.mode: SandboxMode = "rlimits"
            self.warning = (
                "sandbox: rlimits only (--sandbox rlimits): resource limits, a separate "
                "process group and working directory, but no filesystem, PID or network "
                "isolation"
            )
            _warn_once(self.warning)
            return
        problem = (
            "bubblewrap (bwrap) is not installed (Debian: apt-get install bubblewrap)"
            if self.bwrap is None
            else _probe(self.bwrap, self.python, self.root)
        )
        if problem is None:
            self.mode = "bwrap"
            return
        if mode == "bwrap":
            from openenv_mcp.errors import DependencyNotInstalled

            raise DependencyNotInstalled(f"--sandbox bwrap: {problem}")
        self.mode = "rlimits"
        self.warning = (
            f"sandbox: falling back to rlimits only, since {problem}: resource limits, a "
            "separate process group and working directory, but NO filesystem, PID or network "
            "isolation (the code can read what its user may read, and reach the network)"
        )
        _warn_once(self.warning)

    # -- the command line ---------------------------------------------------------------

    def _bwrap_args(self, workdir: Path) -> list[str]:
        assert self.bwrap is not None
        return _bwrap_argv(self.bwrap, self.python, self.limits.tmp_mib, str(workdir))

    def command(self, workdir: Path, payload: list[str]) -> list[str]:
        """The argv of one run: ``payload`` is what follows the boot program's config."""
        python = [self.python, "-s", "-B", "-c", BOOT, self.limits.boot_config(), *payload]
        if self.mode == "bwrap":
            return self._bwrap_args(workdir) + python
        return python

    # -- a run ------------------------------------------------------------------------

    def run(self, workdir: Path, payload: list[str], report_fd: bool = False) -> RunResult:
        """Run the boot program with ``payload`` in ``workdir``; every process is gone after.

        With ``report_fd`` a pipe's write end is passed and its number appended to
        ``payload`` position 1 (the test report); its lines come back in ``report``.
        """
        read_end = write_end = -1
        if report_fd:
            read_end, write_end = os.pipe()
            payload = [payload[0], str(write_end), *payload[1:]]
        argv = self.command(workdir, payload)
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": "/tmp",
            "LANG": "C.UTF-8",
            "PYTHONHASHSEED": "0",
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        started = time.monotonic()
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=workdir,
                env=env,
                start_new_session=True,
                close_fds=True,
                pass_fds=(write_end,) if report_fd else (),
                user=self.uid,
                group=self.uid,
                extra_groups=[] if self.uid is not None else None,
            )
        finally:
            if report_fd:
                os.close(write_end)
        try:
            result = self._collect(proc, read_end if report_fd else None, started)
        finally:
            self._reap(proc)
            if report_fd:
                os.close(read_end)
        result.seconds = time.monotonic() - started
        if self.mode == "bwrap" and result.exit_code > 128 and not result.timed_out:
            result.exit_code = -(result.exit_code - 128)  # bwrap reports a signal as 128+N
        return result

    def _collect(
        self, proc: subprocess.Popen[bytes], report: int | None, started: float
    ) -> RunResult:
        limits = self.limits
        assert proc.stdout is not None and proc.stderr is not None
        streams = {proc.stdout.fileno(): "stdout", proc.stderr.fileno(): "stderr"}
        if report is not None:
            streams[report] = "report"
        kept = {name: bytearray() for name in streams.values()}
        totals = dict.fromkeys(streams.values(), 0)
        caps = {"stdout": limits.output_bytes, "stderr": limits.output_bytes, "report": 4 << 20}
        kill_at = 64 * limits.output_bytes  # past this much output, stop the run
        deadline = started + limits.wall_seconds
        timed_out = output_limited = False
        selector = selectors.DefaultSelector()
        for fd in streams:
            os.set_blocking(fd, False)
            selector.register(fd, selectors.EVENT_READ)
        exited_at: float | None = None
        try:
            while selector.get_map():
                now = time.monotonic()
                if exited_at is None and proc.poll() is not None:
                    exited_at = now
                    self._kill_rest(proc)
                if exited_at is not None and now > exited_at + 1.0:
                    break  # a leftover holding a pipe: it was killed; stop waiting
                if exited_at is None and now > deadline:
                    timed_out = True
                    self._kill(proc)
                    exited_at = now
                wait = 0.05 if exited_at is not None else min(0.05, max(0.0, deadline - now))
                for key, _ in selector.select(wait):
                    fd = int(key.fd)  # type: ignore[call-overload]
                    try:
                        chunk = os.read(fd, 65536)
                    except BlockingIOError:
                        continue
                    except OSError:
                        chunk = b""
                    if not chunk:
                        selector.unregister(fd)
                        continue
                    name = streams[fd]
                    totals[name] += len(chunk)
                    room = caps[name] - len(kept[name])
                    if room > 0:
                        kept[name] += chunk[:room]
                if exited_at is None and totals["stdout"] + totals["stderr"] > kill_at:
                    output_limited = True
                    self._kill(proc)
                    exited_at = time.monotonic()
        finally:
            selector.close()
        if proc.poll() is None:
            self._kill(proc)
        code = proc.wait(timeout=10)
        records: list[dict[str, object]] = []
        if report is not None:
            for line in bytes(kept["report"]).decode("utf-8", errors="replace").splitlines():
                with contextlib.suppress(ValueError):
                    record = json.loads(line)
                    if isinstance(record, dict):
                        records.append(record)
        out_cap = limits.output_bytes
        return RunResult(
            stdout=_decode(bytes(kept["stdout"]), totals["stdout"], out_cap, "stdout"),
            stderr=_decode(bytes(kept["stderr"]), totals["stderr"], out_cap, "stderr"),
            exit_code=code,
            timed_out=timed_out,
            output_limited=output_limited,
            report=records,
        )

    def _kill(self, proc: subprocess.Popen[bytes]) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        self._kill_rest(proc)

    def _kill_rest(self, proc: subprocess.Popen[bytes]) -> None:
        """Everything the run left behind: its process group, and (as root) its uid."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        if self.uid is not None:
            _kill_uid(self.uid, time.monotonic() + 5.0)

    def _reap(self, proc: subprocess.Popen[bytes]) -> None:
        if proc.poll() is None:
            self._kill(proc)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()

    # -- the working directory ------------------------------------------------------

    def make_workdir(self, parent: str | None) -> Path:
        """A fresh, private working directory owned by the sandbox's user."""
        path = Path(tempfile.mkdtemp(prefix="openenv-coding-", dir=parent))
        if self.uid is not None:
            os.chown(path, self.uid, self.uid)
        path.chmod(0o700)
        return path


def _bwrap_argv(bwrap: str, python: str, tmp_mib: int, workdir: str) -> list[str]:
    """bwrap up to ``--``: the sandbox, with ``workdir`` as its writable working directory
    (the one the probe checks is the one runs use)."""
    return [
        *_bwrap_prefix(bwrap, python, tmp_mib),
        "--bind",
        workdir,
        INSIDE_DIR,
        "--chdir",
        INSIDE_DIR,
        "--remount-ro",
        "/",
        "--",
    ]


def _bwrap_prefix(bwrap: str, python: str, tmp_mib: int) -> list[str]:
    args = [
        bwrap,
        "--unshare-all",  # user, ipc, pid, net, uts, cgroup
        "--unshare-user",
        "--uid",
        str(INSIDE_UID),
        "--gid",
        str(INSIDE_UID),
        "--hostname",
        "sandbox",
        "--die-with-parent",
        "--new-session",
        "--clearenv",
        "--setenv",
        "PATH",
        "/usr/bin:/bin",
        "--setenv",
        "HOME",
        "/tmp",
        "--setenv",
        "LANG",
        "C.UTF-8",
        "--setenv",
        "PYTHONHASHSEED",
        "0",
        "--setenv",
        "PYTHONDONTWRITEBYTECODE",
        "1",
        "--ro-bind",
        "/usr",
        "/usr",
    ]
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = f"/{name}"
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    real = os.path.realpath(python)
    if not real.startswith("/usr/"):
        # e.g. a pyenv build under /root: only its own prefix, read-only
        prefix = os.path.dirname(os.path.dirname(real))
        args += ["--ro-bind", prefix, prefix]
    size = str(tmp_mib << 20)
    return [
        *args,
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--size",
        size,
        "--tmpfs",
        "/dev/shm",
        "--remount-ro",
        "/dev",
        "--size",
        size,
        "--tmpfs",
        "/tmp",
    ]


_probe_lock = threading.Lock()


@functools.cache
def _probe_cached(bwrap: str, python: str, root: bool) -> str | None:
    uid = UID_BASE + UID_SPAN + 1 if root else None  # an unprivileged uid, as runs use
    with tempfile.TemporaryDirectory(prefix="openenv-coding-probe-") as tmp:
        if uid is not None:
            os.chown(tmp, uid, uid)
        argv = [
            *_bwrap_argv(bwrap, python, 1, tmp),
            python,
            "-s",
            "-B",
            "-c",
            "import os; open('probe', 'w').write('ok')",
        ]
        try:
            proc = subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=30,
                check=False,
                start_new_session=True,
                user=uid,
                group=uid,
                extra_groups=[] if uid is not None else None,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"bubblewrap could not run here ({exc})"
        if proc.returncode != 0 or not (Path(tmp) / "probe").is_file():
            why = proc.stderr.decode(errors="replace").strip().splitlines()
            return (
                f"bubblewrap could not run here (exit {proc.returncode}: "
                f"{why[-1] if why else 'no message'})"
            )
    return None


def _probe(bwrap: str, python: str, root: bool) -> str | None:
    """Why bubblewrap cannot run ``python`` here, or ``None`` where it can (once a process)."""
    with _probe_lock:
        problem = _probe_cached(bwrap, python, root)
    return problem


_warned: set[str] = set()


def _warn_once(message: str) -> None:
    """Say on stderr (the log), once a process, that runs are not isolated."""
    with _probe_lock:
        if message in _warned:
            return
        _warned.add(message)
    log.warning("coding %s", message)

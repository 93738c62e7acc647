"""Run untrusted Python: a separate process tree, isolated by bubblewrap, under per-episode limits.

Each run is one process tree:

* started in a new session as a user of its own: where the server runs as root, a random
  unprivileged uid per episode, because the kernel never enforces ``RLIMIT_NPROC`` on uid 0,
  not even inside a user namespace; an unprivileged server needs no privilege at all (user
  namespaces);
* under ``RLIMIT_CPU``, ``RLIMIT_AS``, ``RLIMIT_FSIZE``, ``RLIMIT_NPROC`` (and no core files),
  set by the first code the sandbox runs (:mod:`._boot`), before any of the agent's;
* inside bubblewrap (:mod:`._bwrap`): new user, PID, network, IPC, UTS and cgroup
  namespaces, no capabilities; a read-only root holding ``/usr`` and the interpreter's
  standard library, never an installed package (the tasks' expected values among them); a
  fresh ``/proc``; size-limited ``/tmp`` and ``/dev/shm``; the episode's working directory at
  ``/sandbox``, a tmpfs bounded in bytes and files (:mod:`._workdir`); a network
  namespace with only loopback;
* with the episode's memory bounded as a whole (:mod:`._memory`: a cgroup, or a
  watchdog);
* killed, with everything it started, at the wall-clock limit.

Nothing runs without that isolation unless the operator says so by name
(``--sandbox unsafe-rlimits``: limits per process, own directory, no namespaces), and even
then never on a server that others can reach (:meth:`Sandbox.check_exposure`).
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

from openenv_mcp.errors import ArgumentError, DependencyNotInstalled
from openenv_mcp_envs.coding._boot import BOOT
from openenv_mcp_envs.coding._bwrap import (
    INSIDE_DIR,
    RUN_ENV,
    InterpreterView,
    bwrap_argv,
    interpreter_view,
    probe_payload,
    secrets_visible,
)
from openenv_mcp_envs.coding._memory import (
    WATCH_SECONDS,
    EpisodeCgroup,
    cgroup_parent,
    namespace_rss,
)
from openenv_mcp_envs.coding._workdir import Workdir, find_tool

__all__ = [
    "INSIDE_DIR",
    "UNSAFE",
    "Limits",
    "RunResult",
    "Sandbox",
    "SandboxMode",
    "default_python",
    "find_bwrap",
]

log = logging.getLogger(__name__)

#: The one mode that runs code without isolation; its name says so.
UNSAFE: Final = "unsafe-rlimits"
SandboxMode = Literal["bwrap", "unsafe-rlimits"]
#: Random uids for sandboxes start here (far above any real user's).
UID_BASE = 2_000_000_000
UID_SPAN = 100_000_000
#: How to make isolation possible: said whenever a server cannot isolate code.
FIX = (
    "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap util-linux) and let "
    "unprivileged users create user namespaces (sysctl kernel.unprivileged_userns_clone=1; "
    "Ubuntu 24.04+: kernel.apparmor_restrict_unprivileged_userns=0; in Docker: docker run "
    "--security-opt seccomp=unconfined --security-opt apparmor=unconfined --security-opt "
    "systempaths=unconfined); see docs/security-sandbox.md. Only on a trusted machine, for "
    "one local client over stdio, --sandbox unsafe-rlimits runs code without isolation"
)
#: Holds a run until the server has moved it into the episode's cgroup (its stdin says go).
_GATE = 'read _ || exit 125; exec "$@" </dev/null'


@dataclass(frozen=True)
class Limits:
    """What one episode's runs may use."""

    cpu_seconds: int = 5
    wall_seconds: float = 10.0
    memory_mib: int = 512
    file_size_mib: int = 16
    max_processes: int = 32
    output_bytes: int = 65536
    tmp_mib: int = 32
    quota_mib: int = 64
    max_files: int = 10_000

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
    #: Killed for the episode's memory (by its cgroup, or by the watchdog).
    memory_limited: bool = False
    #: The most memory the episode's processes held at once, in bytes, where known.
    memory_peak: int | None = None
    report: list[dict[str, object]] = field(default_factory=list)
    seconds: float = 0.0


def find_bwrap() -> str | None:
    """bubblewrap's path, or ``None``."""
    return find_tool("bwrap")


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
    """Runs one episode's code (its own uid where the server is root).

    Args:
        mode: ``auto`` or ``bwrap`` (isolate with bubblewrap, or refuse to start:
            :class:`DependencyNotInstalled` naming the fix), or ``unsafe-rlimits``.
        limits: what the episode's runs may use.
        python: the interpreter runs use (default: :func:`default_python`).
        bwrap: bubblewrap's path (default: ``bwrap`` on ``PATH``).
        secrets: paths whose content must never be visible inside (the tasks' files).
    """

    def __init__(
        self,
        mode: Literal["auto", "bwrap", "unsafe-rlimits"],
        limits: Limits,
        python: str | None = None,
        bwrap: str | None = None,
        secrets: Sequence[str] = (),
    ) -> None:
        self.limits = limits
        self.python = python or default_python()
        self.root = os.geteuid() == 0
        # A uid of its own: RLIMIT_NPROC counts (and binds) per uid, never for root, and
        # leftover processes are found by it.
        self.uid: int | None = (
            UID_BASE + int.from_bytes(os.urandom(4), "big") % UID_SPAN if self.root else None
        )
        self.cgroup_parent = cgroup_parent()
        self._cgroup: EpisodeCgroup | None = None
        self.warning: str | None = None
        self.bwrap: str | None = None
        self.view: InterpreterView | None = None
        if mode == UNSAFE:
            self.mode: SandboxMode = "unsafe-rlimits"
            who = "a separate uid" if self.root else "the server's own user"
            self.warning = (
                f"sandbox: --sandbox {UNSAFE}: submitted code runs WITHOUT isolation, as "
                f"{who}, under resource "
                "limits per process: it can read what that user may read (this server's "
                "environment and token among it) and reach the network; refused on a server "
                "that others can reach"
            )
            _warn_once(self.warning)
            return
        self.bwrap = bwrap or find_bwrap()
        problem: str | None
        if self.bwrap is None:
            problem = "bubblewrap (bwrap) is not installed"
        else:
            try:
                self.view = interpreter_view(self.python, tuple(secrets))
            except RuntimeError as exc:
                problem = str(exc)
            else:
                problem = _probe(self.bwrap, self.view, self.root, tuple(secrets))
        if problem is not None:
            raise DependencyNotInstalled(
                f"--sandbox {mode}: the coding sandbox cannot isolate code here: {problem}. "
                f"To fix it: {FIX}"
            )
        self.mode = "bwrap"

    @property
    def memory_bound(self) -> str:
        """How the episode's memory is bounded as a whole, in words."""
        if self.cgroup_parent is not None:
            return f"cgroup v{self.cgroup_parent.version}"
        if self.mode == "bwrap":
            return "watchdog"
        return "per process only (RLIMIT_AS)"

    def check_exposure(self, exposed: bool) -> None:
        """Refuse to run unisolated code on a server that others can reach.

        Raises:
            ArgumentError: ``exposed`` and the mode is ``unsafe-rlimits``.
        """
        if exposed and self.mode == UNSAFE:
            raise ArgumentError(
                f"--sandbox {UNSAFE} runs submitted code without isolation (as the server's "
                "own user: it could read its token and environment, reach the network and "
                "stop the server), so it is refused on a server that others can reach (HTTP, "
                "an auth token or a web port). Serve over stdio for one local client, or "
                f"isolate code with bubblewrap (--sandbox auto). To isolate here: {FIX}"
            )

    # -- the working directory ------------------------------------------------------

    def make_workdir(self, parent: str | None) -> Workdir:
        """A fresh, private working directory owned by the sandbox's user (bounded in bytes
        and files while code runs, under bubblewrap)."""
        return Workdir(
            parent,
            self.uid,
            quota_bytes=self.limits.quota_mib << 20,
            max_files=self.limits.max_files,
            bounded=self.mode == "bwrap",
        )

    # -- a run ------------------------------------------------------------------------

    def _episode_cgroup(self) -> EpisodeCgroup | None:
        if self.cgroup_parent is not None and self._cgroup is None:
            self._cgroup = EpisodeCgroup(self.cgroup_parent, self.limits.memory_mib << 20)
        return self._cgroup

    def command(self, workdir: Workdir, payload: list[str], info_fd: int | None) -> list[str]:
        """The argv of one run: ``payload`` is what follows the boot program's config."""
        python = self.view.python if self.view is not None else self.python
        # -c's working directory is the agent's: the boot drops it from sys.path first thing
        boot = [python, "-s", "-B", "-c", BOOT, self.limits.boot_config(), *payload]
        if self.mode != "bwrap":
            return boot
        assert self.bwrap is not None and self.view is not None
        sandbox = bwrap_argv(self.bwrap, self.view, self.limits.tmp_mib, workdir.host, info_fd)
        return [*workdir.enter(), *sandbox, *boot]

    def run(self, workdir: Workdir, payload: list[str], report_fd: bool = False) -> RunResult:
        """Run the boot program with ``payload`` in ``workdir``; every process is gone after.

        With ``report_fd`` a pipe's write end is passed and its number appended to
        ``payload`` position 1 (the test report); its lines come back in ``report``.
        """
        workdir.check()
        cgroup = self._episode_cgroup()
        pipes: dict[str, tuple[int, int]] = {}
        if report_fd:
            pipes["report"] = os.pipe()
            payload = [payload[0], str(pipes["report"][1]), *payload[1:]]
        if self.mode == "bwrap":
            pipes["info"] = os.pipe()
        info = pipes["info"][1] if "info" in pipes else None
        argv = self.command(workdir, payload, info)
        if cgroup is not None:
            argv = ["/bin/sh", "-c", _GATE, "sh", *argv]
        # unisolated as root: the random uid from the start; under bubblewrap nsenter
        # takes it on (after entering the work dir's mount namespace, which needs root)
        user = self.uid if self.mode != "bwrap" else None
        oom_before = cgroup.oom_kills() if cgroup is not None else 0
        started = time.monotonic()
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE if cgroup is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=workdir.host if self.mode != "bwrap" else "/",
                env=RUN_ENV,
                start_new_session=True,
                close_fds=True,
                pass_fds=tuple(w for _r, w in pipes.values()),
                user=user,
                group=user,
                extra_groups=[] if user is not None else None,
            )
        except BaseException:
            for r, w in pipes.values():
                os.close(r)
                os.close(w)
            raise
        for _r, w in pipes.values():
            os.close(w)
        try:
            if cgroup is not None:
                self._release(proc, cgroup)
            result = self._collect(
                proc,
                pipes["report"][0] if report_fd else None,
                pipes["info"][0] if "info" in pipes else None,
                started,
                watch=cgroup is None and self.mode == "bwrap",
            )
        finally:
            self._reap(proc)
            for r, _w in pipes.values():
                os.close(r)
        result.seconds = time.monotonic() - started
        if cgroup is not None:
            result.memory_peak = cgroup.peak()
            if cgroup.oom_kills() > oom_before:
                result.memory_limited = True
        if self.mode == "bwrap" and result.exit_code > 128 and not result.timed_out:
            result.exit_code = -(result.exit_code - 128)  # bwrap reports a signal as 128+N
        return result

    def _release(self, proc: subprocess.Popen[bytes], cgroup: EpisodeCgroup) -> None:
        """Move the gated run into the episode's cgroup, then let it go."""
        assert proc.stdin is not None
        try:
            cgroup.attach(proc.pid)
            proc.stdin.write(b"go\n")
        except OSError:
            self._kill(proc)
            raise
        finally:
            with contextlib.suppress(OSError):
                proc.stdin.close()

    def _collect(
        self,
        proc: subprocess.Popen[bytes],
        report: int | None,
        info: int | None,
        started: float,
        watch: bool,
    ) -> RunResult:
        limits = self.limits
        assert proc.stdout is not None and proc.stderr is not None
        streams = {proc.stdout.fileno(): "stdout", proc.stderr.fileno(): "stderr"}
        if report is not None:
            streams[report] = "report"
        if info is not None:
            streams[info] = "info"
        kept = {name: bytearray() for name in streams.values()}
        totals = dict.fromkeys(streams.values(), 0)
        caps = {
            "stdout": limits.output_bytes,
            "stderr": limits.output_bytes,
            "report": 4 << 20,
            "info": 4096,
        }
        kill_at = 64 * limits.output_bytes  # past this much output, stop the run
        deadline = started + limits.wall_seconds
        budget = limits.memory_mib << 20
        timed_out = output_limited = memory_limited = False
        init: tuple[int, int] | None = None
        peak = 0
        selector = selectors.DefaultSelector()
        for fd in streams:
            os.set_blocking(fd, False)
            selector.register(fd, selectors.EVENT_READ)
        exited_at: float | None = None
        tick = WATCH_SECONDS if watch else 0.05
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
                if watch and exited_at is None and init is not None:
                    used = namespace_rss(*init)
                    if used is not None:
                        peak = max(peak, used)
                        if used > budget:
                            memory_limited = True
                            self._kill(proc)
                            exited_at = time.monotonic()
                wait = tick if exited_at is not None else min(tick, max(0.0, deadline - now))
                for key, _ in selector.select(wait):
                    fd = int(key.fd)  # type: ignore[call-overload]
                    try:
                        chunk = os.read(fd, 65536)
                    except BlockingIOError:
                        continue
                    except OSError:
                        chunk = b""
                    name = streams[fd]
                    if not chunk:
                        selector.unregister(fd)
                        if name == "info":
                            init = _child_pid(bytes(kept["info"]))
                        continue
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
        if init is not None:
            # bubblewrap's outer process reports the exit status before the namespace's
            # init has finished exiting: wait for it, so nothing of the run outlives the step
            _await_exit(init[0], time.monotonic() + 5.0)
        if self.uid is not None:
            _kill_uid(self.uid, time.monotonic() + 5.0)
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
            memory_limited=memory_limited,
            memory_peak=peak if watch and peak else None,
            report=records,
        )

    def _kill(self, proc: subprocess.Popen[bytes]) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        self._kill_rest(proc)

    def _kill_rest(self, proc: subprocess.Popen[bytes]) -> None:
        """Everything the run left behind: its process group, its cgroup, (as root) its uid."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        deadline = time.monotonic() + 5.0
        if self._cgroup is not None:
            self._cgroup.kill_all(deadline)
        if self.uid is not None:
            _kill_uid(self.uid, deadline)

    def _reap(self, proc: subprocess.Popen[bytes]) -> None:
        if proc.poll() is None:
            self._kill(proc)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    def close(self) -> None:
        """Release the episode's cgroup (every process in it is killed first)."""
        if self._cgroup is not None:
            self._cgroup.close()
            self._cgroup = None


def _await_exit(pid: int, deadline: float) -> None:
    """Wait until process ``pid`` has exited (a zombie, or reaped), killing it meanwhile."""
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            return
        if state in (b"Z", b"X"):
            return
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
        time.sleep(0.002)


def _child_pid(info: bytes) -> tuple[int, int] | None:
    """The PID namespace's init and the namespace's inode, from bubblewrap's ``--info-fd``."""
    with contextlib.suppress(ValueError, TypeError, AttributeError):
        data = json.loads(info)
        pid, ns = data.get("child-pid"), data.get("pid-namespace")
        return (pid, ns) if isinstance(pid, int) and isinstance(ns, int) else None
    return None


_probe_lock = threading.Lock()


@functools.cache
def _probe_cached(
    bwrap: str, view: InterpreterView, root: bool, secrets: tuple[str, ...]
) -> str | None:
    uid = UID_BASE + UID_SPAN + 1 if root else None  # an unprivileged uid, as runs use
    with tempfile.TemporaryDirectory(prefix="openenv-coding-probe-") as tmp:
        if uid is not None:
            os.chown(tmp, uid, uid)  # bubblewrap, as that uid, must reach the work dir
        # bubblewrap alone first: where namespaces are refused, its message says so best
        plain = [*bwrap_argv(bwrap, view, 1, tmp), view.python, "-I", "-c", "pass"]
        problem = _run_probe(plain, uid)
        if problem is not None:
            return problem
        try:
            workdir = Workdir(tmp, uid, quota_bytes=1 << 20, max_files=16, bounded=True)
        except OSError as exc:
            return str(exc)
        try:
            argv = [
                *workdir.enter(),
                *bwrap_argv(bwrap, view, 1, workdir.host),
                *probe_payload(view.python, secrets),
            ]
            problem = _run_probe(argv, None)
            answer = workdir.path / "probe"
            if problem is None and not answer.is_file():
                problem = "bubblewrap ran, but the probe's file never reached the work dir"
            if problem is not None:
                return problem
            seen = secrets_visible(answer.read_text())
        finally:
            workdir.close()
    if seen:
        return (
            "the tasks' expected values would be readable inside the sandbox "
            f"({', '.join(seen)}): install the package where no bound directory holds it"
        )
    return None


def _run_probe(argv: list[str], uid: int | None) -> str | None:
    """Why ``argv`` (a sandboxed probe) failed, or ``None``."""
    try:
        proc = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=30,
            check=False,
            start_new_session=True,
            cwd="/",
            env=RUN_ENV,
            user=uid,
            group=uid,
            extra_groups=[] if uid is not None else None,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap could not run here ({exc})"
    if proc.returncode != 0:
        why = proc.stderr.decode(errors="replace").strip().splitlines()
        return (
            f"bubblewrap could not run here (exit {proc.returncode}: "
            f"{why[-1] if why else 'no message'})"
        )
    return None


def _probe(bwrap: str, view: InterpreterView, root: bool, secrets: tuple[str, ...]) -> str | None:
    """Why bubblewrap cannot isolate ``view.python`` here, or ``None`` (once a process)."""
    with _probe_lock:
        return _probe_cached(bwrap, view, root, secrets)


_warned: set[str] = set()


def _warn_once(message: str) -> None:
    """Say on stderr (the log), once a process, that runs are not isolated."""
    with _probe_lock:
        if message in _warned:
            return
        _warned.add(message)
    log.warning("coding %s", message)

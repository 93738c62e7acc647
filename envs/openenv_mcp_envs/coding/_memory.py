"""The memory of an episode's runs, all their processes together.

Where the server can make memory cgroups it gives each episode one (``memory.max`` in
cgroup v2, ``memory.limit_in_bytes`` in v1; no swap): the kernel holds the total, files the
runs write into the tmpfs work dir and ``/tmp`` included, and kills inside the cgroup when it
is reached. The server can where its cgroup (v2) or its parent delegates the memory
controller to it (systemd ``Delegate=``/``DelegateSubgroup=``, a root server on most hosts),
or where a v1 memory hierarchy is writable (root on a hybrid host).

Elsewhere (an unprivileged container, most often) a watchdog does: every
:data:`WATCH_SECONDS` it sums the resident memory of every process in the run's PID
namespace (read from outside, through ``/proc/<its init>/root/proc``) and kills the run
past the limit. It can overshoot by what the processes allocate within one interval; and
every process is also under ``RLIMIT_AS`` of the same size, so no single one ever passes it.
"""

from __future__ import annotations

import contextlib
import functools
import os
import secrets
import signal
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["WATCH_SECONDS", "EpisodeCgroup", "cgroup_parent", "namespace_rss"]

#: How often the watchdog sums a run's memory.
WATCH_SECONDS = 0.02
_PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class CgroupParent:
    """Where episode cgroups are made, and in which cgroup version."""

    version: int
    path: Path


def _read(path: Path) -> str:
    return path.read_text(encoding="ascii", errors="replace")


def _mounts() -> list[tuple[str, str, str, list[str]]]:
    """``(root, mount point, fs type, super options)`` of every cgroup mount."""
    found = []
    with contextlib.suppress(OSError):
        for line in _read(Path("/proc/self/mountinfo")).splitlines():
            left, _, right = line.partition(" - ")
            fields, tail = left.split(), right.split()
            if len(fields) >= 5 and len(tail) >= 3 and tail[0] in ("cgroup", "cgroup2"):
                found.append((fields[3], fields[4], tail[0], tail[2].split(",")))
    return found


def _own(controller: str | None) -> str | None:
    """This process's cgroup path in the v1 hierarchy of ``controller`` (``None``: v2)."""
    with contextlib.suppress(OSError):
        for line in _read(Path("/proc/self/cgroup")).splitlines():
            hid, controllers, path = line.split(":", 2)
            if controller is None and hid == "0" and controllers == "":
                return path
            if controller is not None and controller in controllers.split(","):
                return path
    return None


def _under_mount(point: str, root: str, path: str) -> Path:
    relative = os.path.relpath(path, root) if path.startswith(root) else path.lstrip("/")
    return Path(point) / ("" if relative == "." else relative)


def _usable(parent: Path, version: int) -> bool:
    """Whether a child cgroup with a memory limit can be made (and removed) here."""
    probe = parent / f"openenv-probe-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        probe.mkdir()
    except OSError:
        return False
    try:
        limit = "memory.max" if version == 2 else "memory.limit_in_bytes"
        return (probe / limit).exists()
    finally:
        with contextlib.suppress(OSError):
            probe.rmdir()


@functools.cache
def cgroup_parent() -> CgroupParent | None:
    """Where this server can make episode memory cgroups, or ``None`` (then: the watchdog)."""
    mounts = _mounts()
    own2 = _own(None)
    for root, point, kind, _options in mounts:
        if kind != "cgroup2" or own2 is None:
            continue
        mine = _under_mount(point, root, own2)
        for candidate in (mine, mine.parent):  # our own (the root), or a delegating parent
            with contextlib.suppress(OSError):
                enabled = _read(candidate / "cgroup.subtree_control").split()
                writable = os.access(candidate, os.W_OK)
                if "memory" in enabled and writable and _usable(candidate, 2):
                    return CgroupParent(2, candidate)
    own1 = _own("memory")
    for root, point, kind, options in mounts:
        if kind == "cgroup" and "memory" in options and own1 is not None:
            mine = _under_mount(point, root, own1)
            if os.access(mine, os.W_OK) and _usable(mine, 1):
                return CgroupParent(1, mine)
    return None


class EpisodeCgroup:
    """One episode's memory cgroup: every process of its runs, limited together."""

    def __init__(self, parent: CgroupParent, limit_bytes: int) -> None:
        self.version = parent.version
        self.path = parent.path / f"openenv-coding-{os.getpid()}-{secrets.token_hex(6)}"
        self.path.mkdir()
        try:
            if self.version == 2:
                self._write("memory.max", str(limit_bytes))
                self._write("memory.swap.max", "0", optional=True)
                self._write("memory.oom.group", "1", optional=True)  # the whole run goes
            else:
                self._write("memory.limit_in_bytes", str(limit_bytes))
                self._write("memory.memsw.limit_in_bytes", str(limit_bytes), optional=True)
        except BaseException:
            self.close()
            raise

    def _write(self, name: str, value: str, optional: bool = False) -> None:
        try:
            (self.path / name).write_text(value)
        except OSError:
            if not optional:
                raise

    def attach(self, pid: int) -> None:
        """Move process ``pid`` (not yet running the run's code) into the cgroup."""
        self._write("cgroup.procs", str(pid))

    def oom_kills(self) -> int:
        """Processes the kernel has killed here for memory, so far."""
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        with contextlib.suppress(OSError, ValueError):
            for line in _read(self.path / name).splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        return 0

    def peak(self) -> int | None:
        """The most memory the episode's processes have held at once, in bytes."""
        name = "memory.peak" if self.version == 2 else "memory.max_usage_in_bytes"
        with contextlib.suppress(OSError, ValueError):
            return int(_read(self.path / name).strip())
        return None

    def pids(self) -> list[int]:
        with contextlib.suppress(OSError, ValueError):
            return [int(p) for p in _read(self.path / "cgroup.procs").split()]
        return []

    def kill_all(self, deadline: float) -> None:
        """SIGKILL every process in the cgroup, until none is left (or the deadline)."""
        if self.version == 2 and (self.path / "cgroup.kill").exists():
            with contextlib.suppress(OSError):
                self._write("cgroup.kill", "1")
        while True:
            left = self.pids()
            for pid in left:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            if not left or time.monotonic() > deadline:
                return
            time.sleep(0.005)

    def close(self) -> None:
        """Kill what is left and remove the cgroup."""
        deadline = time.monotonic() + 5.0
        if self.path.exists():
            self.kill_all(deadline)
        while True:
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                if time.monotonic() > deadline:
                    return
                time.sleep(0.01)


def namespace_rss(init_pid: int, pid_ns: int) -> int | None:
    """Resident bytes of every process in the PID namespace ``pid_ns`` (an inode number)
    whose init is ``init_pid``, or ``None`` while that cannot be read (the sandbox is still
    being set up, or gone). Pages shared between processes count once per process."""
    proc = f"/proc/{init_pid}/root/proc"
    try:
        # until bubblewrap has switched to the sandbox's root, this is the host's /proc
        if os.stat(f"{proc}/1/ns/pid").st_ino != pid_ns:
            return None
        entries = os.listdir(proc)
    except OSError:
        return None
    total = 0
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            fd = os.open(f"{proc}/{entry}/statm", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            total += int(os.read(fd, 256).split()[1]) * _PAGE
        except (OSError, ValueError, IndexError):
            pass
        finally:
            os.close(fd)
    return total

"""An episode's working directory: a tmpfs whose bytes and files are bounded while code runs.

Under bubblewrap the directory is a ``tmpfs`` mounted with ``size=`` (the quota, in bytes)
and ``nr_inodes=`` (the most files and directories), so a run that writes too much gets
``ENOSPC`` the moment it does, not after. bubblewrap's own ``--tmpfs`` takes no inode limit
and lasts one run, so each episode has a *keeper*: a small process (``unshare``, ``sh``,
``cat``) that mounts the tmpfs in a mount namespace of its own and holds it for the episode.
Runs enter that namespace (``nsenter``) before starting bubblewrap; the server reads and
writes the files through ``/proc/<keeper>/root``. As a non-root server the keeper's mount
namespace belongs to a user namespace of its own (no privilege needed); as root it needs
none.

The keeper lives exactly as long as the episode: its stdin is a pipe from the server, and
when that closes (the episode closed, or the server exited, however it ended: SIGTERM,
SIGKILL, a crash) it unmounts the tmpfs (the files go with it) and removes the empty
directory. Without isolation (``--sandbox unsafe-rlimits``) the directory is a plain one.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from openenv_mcp_envs.coding._files import collect_files, restore_files

__all__ = ["Workdir", "WorkdirGone", "find_tool"]

_KEEPER = r"""
mount -t tmpfs -o "$2" openenv-coding "$1" || exit 97
echo ready
cat >/dev/null
umount "$1" 2>/dev/null || umount -l "$1" 2>/dev/null
rmdir "$1" 2>/dev/null
exit 0
"""
_TOOL_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"


class WorkdirGone(RuntimeError):
    """The episode's working directory went away (its keeper process died)."""


def find_tool(name: str) -> str | None:
    """A util-linux program's path (``unshare``, ``nsenter``), or ``None``."""
    found = shutil.which(name) or shutil.which(name, path=_TOOL_PATH)
    return found


class Workdir:
    """One episode's working directory.

    Args:
        parent: where the directory is made (default: the temp dir).
        owner: the uid that owns it (the sandbox's uid where the server is root).
        quota_bytes: the most bytes its files may hold (enforced while code runs where
            ``bounded``, else checked after each run by the environment).
        max_files: the most files and directories it may hold (where ``bounded``).
        bounded: a keeper's tmpfs (bubblewrap) rather than a plain directory.
    """

    def __init__(
        self,
        parent: str | None,
        owner: int | None,
        *,
        quota_bytes: int,
        max_files: int,
        bounded: bool,
    ) -> None:
        self.owner = owner
        self.host = tempfile.mkdtemp(prefix="openenv-coding-", dir=parent)
        self._lock = threading.Lock()
        self._closed = False
        self.keeper: subprocess.Popen[bytes] | None = None
        try:
            if owner is not None:
                os.chown(self.host, owner, owner)
            os.chmod(self.host, 0o700)
            if bounded:
                self.keeper = self._start_keeper(quota_bytes, max_files)
        except BaseException:
            self.close()
            raise
        #: Where the server reads and writes the files.
        self.path = (
            Path(f"/proc/{self.keeper.pid}/root{self.host}") if self.keeper else Path(self.host)
        )

    def _start_keeper(self, quota_bytes: int, max_files: int) -> subprocess.Popen[bytes]:
        unshare = find_tool("unshare")
        if unshare is None:
            raise OSError("util-linux's unshare is not installed (apt-get install util-linux)")
        options = f"size={quota_bytes},nr_inodes={max_files + 1},mode=0700,nosuid,nodev"
        if self.owner is not None:
            spaces = ["--mount"]
            options += f",uid={self.owner},gid={self.owner}"
        else:
            spaces = ["--user", "--map-root-user", "--mount"]
        script = ["sh", "-c", _KEEPER, "sh", self.host, options]
        keeper = subprocess.Popen(
            [unshare, *spaces, "--propagation", "private", "--", *script],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={"PATH": _TOOL_PATH, "LANG": "C.UTF-8"},
            cwd="/",
            # its own session: a Ctrl-C for the server's process group must not take the
            # files before the server has closed its episodes
            start_new_session=True,
        )
        assert keeper.stdout is not None and keeper.stderr is not None
        ready, _, _ = select.select([keeper.stdout], [], [], 30.0)
        line = keeper.stdout.readline() if ready else b""
        if line.strip() != b"ready":
            with contextlib.suppress(OSError):
                keeper.kill()
            keeper.wait(10)
            why = keeper.stderr.read().decode(errors="replace").strip().splitlines()
            keeper.stdout.close()
            keeper.stderr.close()
            if keeper.stdin is not None:
                keeper.stdin.close()
            raise OSError(
                "the working directory's tmpfs could not be mounted in a namespace of its own "
                f"(exit {keeper.returncode}: {why[-1] if why else 'no message'})"
            )
        keeper.stdout.close()
        keeper.stderr.close()
        return keeper

    def enter(self) -> list[str]:
        """The argv prefix that runs a program in the keeper's mount namespace (empty for
        a plain directory), as the sandbox's uid."""
        if self.keeper is None:
            return []
        nsenter = find_tool("nsenter")
        if nsenter is None:
            raise OSError("util-linux's nsenter is not installed (apt-get install util-linux)")
        target = f"--target={self.keeper.pid}"
        if self.owner is not None:
            return [nsenter, target, "--mount", f"--setuid={self.owner}", f"--setgid={self.owner}"]
        return [nsenter, target, "--user", "--mount", "--preserve-credentials"]

    def check(self) -> None:
        """Raise :class:`WorkdirGone` if the keeper (and so every file) is gone."""
        if self.keeper is not None and self.keeper.poll() is not None:
            raise WorkdirGone(
                f"the working directory's keeper process exited (status "
                f"{self.keeper.returncode}): its files are gone"
            )

    def close(self, keep: bool = False) -> None:
        """Remove the directory (``keep``: leave its files in a plain directory instead).

        Idempotent; safe at interpreter exit.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
        keeper = self.keeper
        if keeper is None:
            if not keep:
                shutil.rmtree(self.host, ignore_errors=True)
            return
        if keep and keeper.poll() is None:
            # into the plain directory under the tmpfs, before the keeper lets the tmpfs go
            # (its rmdir then finds the directory not empty and leaves it)
            with contextlib.suppress(OSError):
                restore_files(Path(self.host), collect_files(self.path), self.owner)
        if keeper.stdin is not None:
            with contextlib.suppress(OSError):
                keeper.stdin.close()
        try:
            keeper.wait(10)
        except subprocess.TimeoutExpired:
            keeper.kill()
            keeper.wait(10)
        if not keep:
            deadline = time.monotonic() + 1.0
            while os.path.lexists(self.host) and time.monotonic() < deadline:
                shutil.rmtree(self.host, ignore_errors=True)  # in case the keeper could not

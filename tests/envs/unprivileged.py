"""A real non-root user to run servers as (the shipped container's situation), and a launcher
that runs a command where no user namespace can be made (a container whose seccomp profile
forbids them).

The suite runs as root in CI: the user is made here (``useradd``), once per machine, and
commands run as it through ``setpriv``. Run as a non-root user already, the suite runs them
as itself. Either way the interpreter is one that user can execute (this one, else the
system's Python of the same version), with this checkout's packages importable.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.servers import ROOT

#: The account the tests make (never a real person's).
NAME = "openenv-sandbox-test"

#: Run as root: ``python no_userns.py UID GID ARGV...`` runs ARGV as UID:GID in a user
#: namespace that maps every id to itself and allows no further user namespace.
NO_USERNS = r"""
import ctypes, os, sys
uid, gid, argv = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
libc = ctypes.CDLL(None, use_errno=True)
go_r, go_w = os.pipe()
done_r, done_w = os.pipe()
helper = os.fork()
if helper == 0:  # writes the maps (privileged, from outside) once the namespace exists
    os.read(go_r, 1)
    for name in ("uid_map", "gid_map"):
        with open(f"/proc/{os.getppid()}/{name}", "w") as f:
            f.write("0 0 4294967295\n")
    os.write(done_w, b"x")
    os._exit(0)
if libc.unshare(0x10000000) != 0:  # CLONE_NEWUSER
    raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWUSER)")
os.write(go_w, b"x")
os.read(done_r, 1)
os.waitpid(helper, 0)
with open("/proc/sys/user/max_user_namespaces", "w") as f:
    f.write("0")
os.setgroups([])
os.setgid(gid)
os.setuid(uid)
os.execvp(argv[0], argv)
"""

#: Starts the CLI with this checkout's site-packages (and its editable install) importable.
BOOTSTRAP = """
import runpy, site, sys
site.addsitedir({site!r})
sys.argv[0] = "openenv-mcp"
runpy.run_module("openenv_mcp", run_name="__main__", alter_sys=True)
"""


@dataclass(frozen=True)
class User:
    """A non-root user and how to run this checkout's CLI as it."""

    uid: int
    gid: int
    #: A directory it owns (its HOME, and where its files go).
    home: str
    #: ``python bootstrap.py``: the CLI, as that user can run it (after :meth:`wrap`).
    cli: tuple[str, ...]

    def command(self, argv: list[str], **env: str) -> list[str]:
        """``argv`` with a clean environment plus ``env`` (run by this user: :meth:`wrap`)."""
        clean = [
            "env",
            "-i",
            "PATH=/usr/local/bin:/usr/bin:/bin",
            "LANG=C.UTF-8",
            f"HOME={self.home}",
            *(f"{k}={v}" for k, v in env.items()),
        ]
        return [*clean, *argv]

    def wrap(self, argv: list[str], **env: str) -> list[str]:
        """``argv`` run as this user, with a clean environment plus ``env``."""
        if os.geteuid() != 0:
            return self.command(argv, **env)
        who = [f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups"]
        return ["setpriv", *who, *self.command(argv, **env)]

    def serve(self, env: str, *options: str, **environ: str) -> list[str]:
        """``openenv-mcp serve ENV OPTIONS`` as this user."""
        return self.wrap([*self.cli, "serve", env, *options], **environ)

    def serve_without_userns(self, env: str, *options: str, **environ: str) -> list[str]:
        """:meth:`serve`, where no user namespace can be made (needs root)."""
        launcher = [sys.executable, "-c", NO_USERNS, str(self.uid), str(self.gid)]
        return [*launcher, *self.command([*self.cli, "serve", env, *options], **environ)]


def _account() -> tuple[int, int]:
    if os.geteuid() != 0:
        return os.getuid(), os.getgid()
    try:
        entry = pwd.getpwnam(NAME)
    except KeyError:
        if shutil.which("useradd") is None:
            pytest.skip("running as root without useradd: no non-root user can be made")
        # several test processes may race to make it: whoever loses finds it made
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", NAME],
            capture_output=True,
            check=False,
        )
        entry = pwd.getpwnam(NAME)
    return entry.pw_uid, entry.pw_gid


def _python_for(uid: int, gid: int, home: str) -> str:
    """An interpreter of this Python's version that the user can execute."""
    candidates = [sys.executable, f"/usr/bin/python{sys.version_info[0]}.{sys.version_info[1]}"]
    for python in candidates:
        if not os.access(python, os.X_OK):
            continue
        probe = ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups"]
        probe = probe if os.geteuid() == 0 else []
        check = [*probe, "env", "-i", f"HOME={home}", python, "-c", "import json"]
        if subprocess.run(check, capture_output=True, check=False).returncode == 0:
            return python
    pytest.skip(
        f"no Python {sys.version_info[0]}.{sys.version_info[1]} the non-root test user can run "
        f"(tried {candidates}): install the system's python3"
    )


@contextlib.contextmanager
def unprivileged_user() -> Iterator[User]:
    """A non-root user with a home of its own and this checkout's CLI."""
    uid, gid = _account()
    home = tempfile.mkdtemp(prefix="openenv-unprivileged-")
    try:
        os.chmod(home, 0o755)
        if os.geteuid() == 0:
            os.chown(home, uid, gid)
        site_dir = sysconfig.get_paths()["purelib"]
        bootstrap = Path(home) / "bootstrap.py"
        bootstrap.write_text(BOOTSTRAP.format(site=site_dir))
        python = _python_for(uid, gid, home)
        user = User(uid, gid, home, (python, str(bootstrap)))
        check = subprocess.run(
            user.wrap([*user.cli, "--help"]), capture_output=True, text=True, check=False, cwd=ROOT
        )
        if check.returncode != 0:
            pytest.fail(f"the test user cannot run this checkout's CLI: {check.stderr[-800:]}")
        yield user
    finally:
        shutil.rmtree(home, ignore_errors=True)

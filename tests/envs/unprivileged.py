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
from importlib.metadata import distribution
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

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

#: Starts the CLI with this checkout's packages importable: its sources (``front``, ahead
#: of everything) and a site directory (its site-packages, or a copy).
BOOTSTRAP = """
import runpy, site, sys
site.addsitedir({site!r})
sys.path[:0] = {front!r}
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
        """``argv`` with a clean environment plus ``env``, in the user's home (run by this
        user: :meth:`wrap`; the checkout may sit where the user cannot enter)."""
        clean = [
            "env",
            "-i",
            f"--chdir={self.home}",
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
        bootstrap = Path(home) / "bootstrap.py"
        bootstrap.write_text(BOOTSTRAP.format(site=sysconfig.get_paths()["purelib"], front=[]))
        python = _python_for(uid, gid, home)
        user = User(uid, gid, home, (python, str(bootstrap)))
        check = _runs(user)
        if check.returncode != 0:
            # A clone under a directory only root may enter (mktemp -d, /root): the user
            # gets a copy of the sources and of the serving tier's packages instead.
            site_dir, front = _copy_for_user(Path(home))
            bootstrap.write_text(BOOTSTRAP.format(site=str(site_dir), front=front))
            check = _runs(user)
        if check.returncode != 0:
            pytest.fail(f"the test user cannot run this checkout's CLI: {check.stderr[-800:]}")
        yield user
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _runs(user: User) -> subprocess.CompletedProcess[str]:
    command = user.wrap([*user.cli, "--help"])
    return subprocess.run(command, capture_output=True, text=True, check=False, cwd=user.home)


def _copy_for_user(home: Path) -> tuple[Path, list[str]]:
    """This checkout's sources and the installed distributions serving needs (the
    package's own requirements, then theirs, with the extras each one names), copied
    under ``home`` where the user can read them: (the site directory, the sources)."""
    site_dir = home / "site-packages"
    todo: list[tuple[str, str]] = [("openenv-mcp", "")]  # (distribution, extra)
    seen: set[tuple[str, str]] = set()
    copied: set[str] = set()
    while todo:
        name, extra = todo.pop()
        name = canonicalize_name(name)
        if (name, extra) in seen:
            continue
        seen.add((name, extra))
        dist = distribution(name)
        for line in dist.requires or []:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": extra}):
                todo += [(requirement.name, e) for e in ("", *requirement.extras)]
        if name == "openenv-mcp" or name in copied:  # editable: its sources are copied below
            continue
        copied.add(name)
        for file in dist.files or []:
            source = Path(str(dist.locate_file(file)))
            target = site_dir / file
            if ".." in file.parts or not source.is_file():  # scripts in bin/, missing files
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    # The entry points (which env is where) come from the package's metadata.
    meta = distribution("openenv-mcp")
    info = site_dir / f"openenv_mcp-{meta.version}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    for name in ("METADATA", "entry_points.txt"):
        text = meta.read_text(name)
        if text is not None:
            (info / name).write_text(text)
    sources = home / "src"
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "openenv_mcp", sources / "openenv_mcp", ignore=ignore)
    shutil.copytree(ROOT / "envs", sources / "envs", ignore=ignore)
    for tree in (site_dir, sources):
        for path in (tree, *tree.rglob("*")):
            path.chmod(0o755 if path.is_dir() or path.stat().st_mode & 0o100 else 0o644)
    return site_dir, [str(sources), str(sources / "envs")]

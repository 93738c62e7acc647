"""What a run sees: bubblewrap's command line, and the interpreter's files it binds.

The sandbox's root holds ``/usr`` (and the ``/bin``, ``/lib*`` links) read-only, plus, for an
interpreter outside ``/usr`` (pyenv, conda, a ``venv --copies``), only what that interpreter
needs: its executable, its ``pyvenv.cfg`` and its standard library's ``lib`` directory. Every
``site-packages`` and ``dist-packages`` directory inside what is bound is replaced by an empty
one, and so is anything else that holds the tasks' expected values (the package's ``tasks``
folder, a ``--task-file``) wherever it was installed: the probe checks, at start, that none of
them can be read from inside (:func:`secrets_visible`), and the server refuses to start if one
can.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["INSIDE_DIR", "INSIDE_UID", "InterpreterView", "bwrap_argv", "interpreter_view"]

#: Inside the sandbox: the working directory's path, and the uid/gid code sees.
INSIDE_DIR = "/sandbox"
INSIDE_UID = 1000
#: Directory names that hold installed packages (never bound into a sandbox).
PACKAGE_DIRS = frozenset({"site-packages", "dist-packages"})
#: How deep below a bound directory package directories are looked for.
_MASK_DEPTH = 8
_ROOT_LINKS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")

#: Run outside the sandbox with ``python -I``: what the interpreter itself needs.
_DESCRIBE = r"""
import json, os, sys
print(json.dumps({"stdlib": os.path.dirname(os.__file__), "path": [p for p in sys.path if p]}))
"""


@dataclass(frozen=True)
class InterpreterView:
    """What a sandbox binds for one interpreter, and what it hides."""

    #: The executable runs start (its real path).
    python: str
    #: Read-only binds beyond ``/usr`` and the root's links (files or directories).
    binds: tuple[str, ...]
    #: Directories and files replaced by an empty one inside the sandbox.
    masks: tuple[str, ...]


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _package_dirs(root: str) -> list[str]:
    """Every ``site-packages``/``dist-packages`` directory below ``root`` (links unfollowed)."""
    found: list[str] = []
    base = root.rstrip("/").count("/")
    for top, dirs, _files in os.walk(root):
        keep = []
        for name in dirs:
            path = os.path.join(top, name)
            if name in PACKAGE_DIRS:
                found.append(os.path.realpath(path))  # a link's target is what gets hidden
            elif top.count("/") - base < _MASK_DEPTH and not os.path.islink(path):
                keep.append(name)
        dirs[:] = keep
    return found


@functools.cache
def interpreter_view(python: str, secrets: tuple[str, ...] = ()) -> InterpreterView:
    """The binds and masks for ``python``; ``secrets`` are paths that must stay hidden.

    Raises:
        RuntimeError: the interpreter could not describe itself (why is in the message).
    """
    try:
        proc = subprocess.run(
            [python, "-I", "-c", _DESCRIBE],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=60,
            check=False,
            env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
        )
        described = json.loads(proc.stdout)
    except (OSError, subprocess.TimeoutExpired, ValueError) as exc:
        raise RuntimeError(f"the interpreter {python} could not describe itself ({exc})") from None
    real = os.path.realpath(python)
    roots = ["/usr"] + [f"/{n}" for n in _ROOT_LINKS if os.path.isdir(f"/{n}")]
    roots = [r for r in roots if not os.path.islink(r)]
    binds: list[str] = []

    def bind(path: str) -> None:
        if os.path.exists(path) and not any(_under(path, r) for r in roots + binds):
            binds.append(path)

    bind(real)
    for cfg in (os.path.dirname(real), os.path.dirname(os.path.dirname(real))):
        bind(os.path.join(cfg, "pyvenv.cfg"))  # where a venv's interpreter finds its home
    # the standard library's parent (``lib``) also holds libpython and the libraries its
    # extension modules link; any site-packages in it is masked below
    bind(os.path.dirname(os.path.realpath(described["stdlib"])))
    for entry in described["path"]:
        real_entry = os.path.realpath(entry)
        if not any(name in PACKAGE_DIRS for name in real_entry.split("/")):
            bind(real_entry)
    masks: list[str] = []
    for root in roots + binds:
        if os.path.isdir(root):
            masks += [
                d
                for d in _package_dirs(root)
                if os.path.isdir(d) and any(_under(d, r) for r in roots + binds)
            ]
    for secret in secrets:
        path = os.path.realpath(secret)
        visible = any(_under(path, r) for r in roots + binds)
        if visible and not any(_under(path, m) for m in masks):
            masks.append(path)
    return InterpreterView(real, tuple(binds), tuple(sorted(set(masks))))


def _mask_args(path: str) -> list[str]:
    if os.path.isdir(path):
        return ["--size", "4096", "--tmpfs", path, "--remount-ro", path]
    return ["--ro-bind", "/dev/null", path]


def bwrap_argv(
    bwrap: str,
    view: InterpreterView,
    tmp_mib: int,
    workdir: str,
    info_fd: int | None = None,
) -> list[str]:
    """bwrap up to ``--``: the sandbox, with ``workdir`` as its writable ``/sandbox``."""
    size = str(tmp_mib << 20)
    args = [
        bwrap,
        "--unshare-all",  # user, ipc, pid, net, uts, cgroup
        "--unshare-user",
        "--uid",
        str(INSIDE_UID),
        "--gid",
        str(INSIDE_UID),
        # run as uid 0 of a user namespace (the episode's keeper), bwrap would keep every
        # capability for the sandbox: drop them all, always
        "--cap-drop",
        "ALL",
        "--hostname",
        "sandbox",
        "--die-with-parent",
        "--new-session",
        "--clearenv",
        *_env_args(),
        # first the fresh mounts, so binds of an interpreter under /tmp land on top of them
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
        "--ro-bind",
        "/usr",
        "/usr",
    ]
    for name in _ROOT_LINKS:
        path = f"/{name}"
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for path in view.binds:
        args += ["--ro-bind", path, path]
    for path in view.masks:
        args += _mask_args(path)
    args += [
        "--bind",
        workdir,
        INSIDE_DIR,
        "--chdir",
        INSIDE_DIR,
        "--remount-ro",
        "/",
    ]
    if info_fd is not None:
        args += ["--info-fd", str(info_fd)]
    return [*args, "--"]


def _env_args() -> list[str]:
    out: list[str] = []
    for key, value in RUN_ENV.items():
        out += ["--setenv", key, value]
    return out


#: The whole environment of a run.
RUN_ENV = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/tmp",
    "LANG": "C.UTF-8",
    "PYTHONHASHSEED": "0",
    "PYTHONDONTWRITEBYTECODE": "1",
}

#: Run in the sandbox by the probe: which of the paths in argv[1] (JSON) can be seen.
SEEN = r"""
import json, os, sys
seen = [p for p in json.loads(sys.argv[1]) if os.path.exists(p)]
try:
    import openenv_mcp_envs
    seen.append("import openenv_mcp_envs")
except ImportError:
    pass
open("probe", "w").write(json.dumps(seen))
"""


def secrets_visible(found: str) -> list[str]:
    """The secrets the probe program (:data:`SEEN`) saw, from what it wrote."""
    seen = json.loads(found)
    return [str(s) for s in seen] if isinstance(seen, list) else ["(unreadable probe answer)"]


def probe_payload(python: str, secrets: Sequence[str]) -> list[str]:
    """The probe's program: what it finds of ``secrets`` goes to the file ``probe``."""
    return [python, "-I", "-B", "-c", SEEN, json.dumps(list(secrets))]

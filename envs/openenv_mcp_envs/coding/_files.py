"""The episode's working directory, as the server touches it: never following a link.

Code in the sandbox may leave symbolic links (``solution.py -> /etc/shadow``), hard links,
FIFOs or sockets behind. The server (possibly root) only ever walks the directory through
directory file descriptors opened with ``O_NOFOLLOW``, opens files with ``O_NONBLOCK`` (a
FIFO with no writer would block an ``open`` forever) and reads only what ``fstat`` of the
opened descriptor calls a regular file, and replaces a file (unlink, then create
exclusively) rather than writing through whatever is there. No sandboxed process is alive
while it does (every run's processes are gone before ``step`` returns), so nothing can swap
a path under it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

from openenv_mcp.errors import InvalidAction

__all__ = [
    "check_path",
    "collect_files",
    "empty_dir",
    "list_files",
    "read_file",
    "restore_files",
    "usage",
    "write_file",
]

MAX_PATH = 200
MAX_DEPTH = 8
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
#: How the server opens a file to read it: never through a link, never blocking (a FIFO).
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_KINDS = {
    stat.S_IFDIR: "a directory",
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFLNK: "a symbolic link",
}


def kind_of(mode: int) -> str:
    """What a file of this ``st_mode`` is, in words."""
    return _KINDS.get(stat.S_IFMT(mode), "not a regular file")


def check_path(path: object) -> tuple[str, ...]:
    """The parts of a relative path inside the working directory.

    Raises:
        InvalidAction: for anything else (absolute, ``..``, empty, too long or deep).
    """
    if not isinstance(path, str):
        raise InvalidAction(f"expected a file path string, got {type(path).__name__}")
    if not path or len(path) > MAX_PATH or "\x00" in path:
        raise InvalidAction(
            f"expected a relative file path of 1..{MAX_PATH} characters (no NUL), "
            f"got {path[:60]!r}" + ("..." if len(path) > 60 else "")
        )
    if path.startswith("/"):
        raise InvalidAction(
            f"expected a path relative to the working directory, got the absolute {path[:60]!r}"
        )
    parts = tuple(p for p in path.split("/") if p not in ("", "."))
    if not parts or ".." in parts:
        raise InvalidAction(
            f"expected a path inside the working directory (no '..'), got {path[:60]!r}"
        )
    if len(parts) > MAX_DEPTH:
        raise InvalidAction(f"expected at most {MAX_DEPTH} directories deep, got {len(parts)}")
    return parts


@contextlib.contextmanager
def _dir(fd: int) -> Iterator[int]:
    try:
        yield fd
    finally:
        os.close(fd)


def _open_parent(root: Path, parts: tuple[str, ...], create: bool, owner: int | None) -> int:
    """A descriptor of the directory holding ``parts[-1]`` (made where ``create``)."""
    fd = os.open(root, _DIR_FLAGS)
    try:
        for part in parts[:-1]:
            if create:
                try:
                    os.mkdir(part, 0o755, dir_fd=fd)
                    if owner is not None:
                        os.chown(part, owner, owner, dir_fd=fd, follow_symlinks=False)
                except FileExistsError:
                    pass
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError:
                raise InvalidAction(
                    f"{'/'.join(parts)!r}: {part!r} is not a directory of the working directory"
                ) from None
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def write_file(root: Path, parts: tuple[str, ...], data: bytes, owner: int | None) -> None:
    """Replace (or create) the file ``parts`` under ``root`` with ``data``."""
    with _dir(_open_parent(root, parts, True, owner)) as fd:
        name = parts[-1]
        try:
            mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
        except FileNotFoundError:
            mode = None
        if mode is not None:
            if stat.S_ISDIR(mode):
                raise InvalidAction(f"{'/'.join(parts)!r} is a directory, not a file")
            os.unlink(name, dir_fd=fd)  # a link or a file: replaced, never written through
        out = os.open(
            name,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o644,
            dir_fd=fd,
        )
        try:
            if owner is not None:
                os.fchown(out, owner, owner)
            view = memoryview(data)
            while view:
                view = view[os.write(out, view) :]
        finally:
            os.close(out)


def read_file(root: Path, parts: tuple[str, ...], limit: int) -> tuple[bytes, int] | None:
    """The first ``limit`` bytes of a regular file and its size, or ``None`` if there is none.

    Raises:
        InvalidAction: the path is a FIFO, socket, device, directory or symbolic link (said at
            once: nothing here waits for a writer).
    """
    try:
        parent = _open_parent(root, parts, False, None)
    except InvalidAction:
        return None
    with _dir(parent) as fd:
        name = "/".join(parts)
        try:
            handle = os.open(parts[-1], _READ_FLAGS, dir_fd=fd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            try:
                mode = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False).st_mode
            except OSError:
                return None
            raise InvalidAction(
                f"{name!r} is {kind_of(mode)}, not a regular file: only regular files can be "
                f"read ({exc.strerror})"
            ) from None
        try:
            info = os.fstat(handle)
            if not stat.S_ISREG(info.st_mode):
                raise InvalidAction(
                    f"{name!r} is {kind_of(info.st_mode)}, not a regular file: only regular "
                    "files can be read"
                )
            return os.read(handle, limit), info.st_size
        finally:
            os.close(handle)


def _walk(root: Path) -> Iterator[tuple[str, os.stat_result, int]]:
    """``(relative path, lstat, parent fd)`` of every entry below ``root``, links unfollowed."""
    for top, dirs, files, fd in os.fwalk(root, follow_symlinks=False):
        rel = os.path.relpath(top, root)
        for name in sorted(files) + sorted(dirs):
            with contextlib.suppress(OSError):
                info = os.stat(name, dir_fd=fd, follow_symlinks=False)
                yield (name if rel == "." else f"{rel}/{name}"), info, fd


def list_files(root: Path, limit: int = 100) -> list[str]:
    """Relative paths of the files below ``root`` (links marked ``name -> link``), sorted."""
    found: list[str] = []
    for path, info, _fd in _walk(root):
        if stat.S_ISREG(info.st_mode):
            found.append(path)
        elif stat.S_ISLNK(info.st_mode):
            found.append(f"{path} (link)")
    found.sort()
    return found[:limit] + ([f"... {len(found) - limit} more"] if len(found) > limit else [])


def usage(root: Path) -> int:
    """Bytes of the regular files below ``root``."""
    return sum(info.st_size for _p, info, _fd in _walk(root) if stat.S_ISREG(info.st_mode))


def collect_files(root: Path) -> dict[str, bytes]:
    """Every regular file below ``root`` by relative path (links and special files skipped)."""
    out: dict[str, bytes] = {}
    for path, info, fd in _walk(root):
        if not stat.S_ISREG(info.st_mode):
            continue
        try:
            handle = os.open(path.rsplit("/", 1)[-1], _READ_FLAGS, dir_fd=fd)
        except OSError:
            continue
        try:
            if not stat.S_ISREG(os.fstat(handle).st_mode):
                continue  # swapped since the walk: skipped like any special file
            chunks = []
            while chunk := os.read(handle, 1 << 20):
                chunks.append(chunk)
            out[path] = b"".join(chunks)
        finally:
            os.close(handle)
    return out


def restore_files(root: Path, files: dict[str, bytes], owner: int | None) -> None:
    """Write ``files`` (from :func:`collect_files`) under an empty ``root``."""
    for path, data in sorted(files.items()):
        write_file(root, check_path(path), data, owner)


def empty_dir(root: Path) -> None:
    """Remove everything below ``root`` (links removed, never followed)."""
    with os.scandir(root) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)

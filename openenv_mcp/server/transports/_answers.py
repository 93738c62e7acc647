"""What a stdio server answered before, kept so that its next start answers at once.

A stdio server's handshake (``initialize``, or the 2026-07-28 ``server/discover``)
and its lists (tools, prompts, resources) depend only on the command line that
started it and the code it runs, but producing them takes the whole MCP stack:
about 1.5 s of imports before the first byte. The answers that stack gave are
kept here, one small JSON file per command line (and working directory,
interpreter and ``OPENENV_MCP_*`` variables; an episode host's front's, whose
answers are the host's, in every directory), and
:mod:`openenv_mcp.server.transports._prelude` answers from them while the stack loads.

A book names the code it was written from: the files under its watched paths
(openenv-mcp itself and the environment's package) with their sizes and times,
and the interpreter's site-packages directories (an install or upgrade changes
them). Any change there and the book is empty. Its answers are also checked
against the stack's own once the stack is up, and rewritten where they differ.

Everything here is the standard library and orjson: it runs before anything
heavy is imported. ``OPENENV_MCP_ANSWER_CACHE`` moves the books (a directory)
or turns them off (``off``).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import site
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from openenv_mcp._util.version import __version__

__all__ = ["CACHE_ENV", "AnswerBook", "cache_dir", "fingerprint", "package_path"]

#: Where the books live (a directory), or ``off``.
CACHE_ENV = "OPENENV_MCP_ANSWER_CACHE"
_FORMAT = 1
_SKIP_DIRS = {"__pycache__", "node_modules"}
#: openenv-mcp's own package directory: always watched.
_PACKAGE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def cache_dir() -> Path | None:
    """The books' directory, or ``None`` when they are turned off."""
    chosen = os.environ.get(CACHE_ENV, "")
    if chosen.lower() in ("off", "0", "false", "no"):
        return None
    if chosen:
        return Path(chosen)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "openenv-mcp" / "answers"


def package_path(module_name: str) -> str | None:
    """The directory of ``module_name``'s top-level package (or its one file), if loaded."""
    module = sys.modules.get(module_name.partition(".")[0])
    file: str | None = getattr(module, "__file__", None)
    if not file:
        return None
    return os.path.dirname(file) if os.path.basename(file) == "__init__.py" else file


def fingerprint(paths: Sequence[str]) -> str:
    """A digest of the files under ``paths`` (names, sizes, times) and of site-packages."""
    entries: list[tuple[str, int, int]] = []
    for top in paths:
        if os.path.isfile(top):
            stat = os.stat(top)
            entries.append((top, stat.st_size, stat.st_mtime_ns))
            continue
        for folder, dirs, files in os.walk(top):
            dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
            for name in sorted(files):
                if name.endswith((".pyc", ".pyo")):
                    continue
                path = os.path.join(folder, name)
                with contextlib.suppress(OSError):
                    stat = os.stat(path)
                    entries.append((path, stat.st_size, stat.st_mtime_ns))
    for packages in site.getsitepackages():
        with contextlib.suppress(OSError):
            entries.append((packages, 0, os.stat(packages).st_mtime_ns))
    return hashlib.sha256(orjson.dumps(entries)).hexdigest()


def _command_key(argv: Sequence[str], per_directory: bool = True) -> str:
    variables = sorted((k, v) for k, v in os.environ.items() if k.startswith("OPENENV_MCP_"))
    where = os.getcwd() if per_directory else None
    identity = [_FORMAT, __version__, sys.executable, where, list(argv), variables]
    return hashlib.sha256(orjson.dumps(identity)).hexdigest()[:40]


class AnswerBook:
    """The answers kept for one command line.

    ``answers`` maps a scope (``"legacy:2025-06-18"``: the handshake era and the
    protocol version; ``"modern:2026-07-28"``) to ``{method: result}``.
    """

    def __init__(self, path: Path | None, watch: list[str], answers: dict[str, Any]) -> None:
        self.path = path
        self.watch = watch
        self.answers: dict[str, dict[str, Any]] = answers

    @classmethod
    def open(cls, argv: Sequence[str], per_directory: bool = True) -> AnswerBook:
        """The book for the command line ``argv`` (empty where none is kept or it is stale),
        and, ``per_directory``, the working directory (an episode host's answers are the
        same from every directory: it is one host)."""
        folder = cache_dir()
        if folder is None:
            return cls(None, [], {})
        path = folder / f"{_command_key(argv, per_directory)}.json"
        try:
            kept = orjson.loads(path.read_bytes())
            watch = [str(p) for p in kept["watch"]]
            if kept.get("fingerprint") != fingerprint(watch):
                return cls(path, watch, {})
            return cls(path, watch, dict(kept["answers"]))
        except (OSError, ValueError, KeyError, TypeError):
            return cls(path, [], {})

    def get(self, scope: str, method: str) -> Any:
        """The kept result of ``method`` in ``scope``, or ``None``."""
        return self.answers.get(scope, {}).get(method)

    def put(self, scope: str, method: str, result: Any) -> bool:
        """Keep ``result``; whether it differs from what was kept."""
        kept = self.answers.setdefault(scope, {})
        if kept.get(method) == result:
            return False
        kept[method] = result
        return True

    def save(self, watch: Sequence[str]) -> None:
        """Write the book atomically (a failure to write is not an error: it is a cache)."""
        if self.path is None:
            return
        self.watch = [_PACKAGE, *watch]
        record = {
            "format": _FORMAT,
            "command": sys.argv,
            "watch": self.watch,
            "fingerprint": fingerprint(self.watch),
            "answers": self.answers,
        }
        with contextlib.suppress(OSError):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, temporary = tempfile.mkstemp(dir=self.path.parent, suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as out:
                    out.write(orjson.dumps(record))
                os.replace(temporary, self.path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
                raise

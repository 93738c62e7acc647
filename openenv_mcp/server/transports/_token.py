"""Where the HTTP bearer token comes from: an environment variable or a file, not argv.

A command line is public on a shared machine (``ps``, ``/proc/PID/cmdline``); the
environment and a 0600 file are the owner's alone. This module is light (the CLI
imports it to declare its options); :mod:`._http` re-exports :data:`TOKEN_ENV`.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from openenv_mcp.errors import ArgumentError

__all__ = ["ARGV_WARNING", "TOKEN_ENV", "read_token_file"]

#: Environment variable holding the bearer token (the way to pass it; see ``--auth-token-file``).
TOKEN_ENV = "OPENENV_MCP_AUTH_TOKEN"

#: Logged when the token was given on the command line.
ARGV_WARNING = (
    "--auth-token on the command line is visible to every local user (ps, "
    f"/proc/PID/cmdline); set {TOKEN_ENV} or use --auth-token-file PATH instead"
)


def read_token_file(path: str | os.PathLike[str]) -> tuple[str, str | None]:
    """The token in ``path`` (its first line, trimmed), and a warning if others may read it.

    Raises:
        ArgumentError: the file cannot be read, or holds no token.
    """
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
        mode = file.stat().st_mode
    except (OSError, UnicodeDecodeError) as exc:
        raise ArgumentError(f"--auth-token-file {file}: cannot read it ({exc})") from None
    lines = text.splitlines()
    token = lines[0].strip() if lines else ""
    if not token:
        raise ArgumentError(f"--auth-token-file {file}: the file is empty; write the token in it")
    warning = None
    if mode & (stat.S_IRGRP | stat.S_IROTH):
        warning = (
            f"--auth-token-file {file} is readable by other users (mode "
            f"{stat.S_IMODE(mode):o}); chmod 600 it"
        )
    return token, warning

"""The ``openenv-mcp`` command's entry point: a stdio server's prelude first, then the CLI.

The CLI (typer, pydantic, the option models) and the server stack take well over
a second to import. A command line that serves over stdio starts its prelude
(:mod:`openenv_mcp.server.transports._prelude`) before importing any of them, so a harness
gets its ``initialize`` answer while they load; with ``--episode-host`` it only
relays to this user's episode host (:mod:`openenv_mcp.server.transports._host`), which is
already up after the first start.

A start that fails (the environment cannot be built, an option is wrong) is told to
the client too, not only on stderr, which harnesses do not show: the prelude answers
the handshake with the reason and the command that fixes it
(:meth:`~openenv_mcp.server.transports._prelude.Prelude.explain`).

Every Python process openenv-mcp starts runs
:func:`openenv_mcp._interpreter.python_command`: nothing is imported from the directory
it runs in.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

__all__ = ["main", "serves_stdio"]


#: Flags after which ``serve`` does not serve over stdio (or not through the prelude's path).
_NOT_STDIO = frozenset({"--http", "--ray", "--help", "-h", "--no-fast-path"})


def serves_stdio(argv: Sequence[str]) -> bool:
    """Whether the command line ``argv`` (without the program) serves over stdio."""
    return bool(argv) and argv[0] == "serve" and _NOT_STDIO.isdisjoint(argv[1:])


#: Flags of the stdio front that the episode host it relays to does not take.
_FRONT_ONLY = frozenset({"--stdio", "--episode-host"})


def relays(argv: Sequence[str]) -> bool:
    """Whether ``argv`` (without the program) is a stdio front of an episode host:
    ``--episode-host``, or ``--agent`` (the agent profile and, over stdio, the host)."""
    return (
        serves_stdio(argv)
        and not {"--episode-host", "--agent"}.isdisjoint(argv)
        and "--episode-host-socket" not in argv
    )


def host_argv(argv: Sequence[str]) -> list[str]:
    """The ``serve`` arguments a front passes its episode host: ``--agent`` spelled out as
    ``--profile agent`` (so both spellings share one host), the front's own flags dropped."""
    env, *rest = argv[1:] or [""]
    spelled = (["--profile", "agent"] if arg == "--agent" else [arg] for arg in rest)
    return [env, *(arg for args in spelled for arg in args if arg not in _FRONT_ONLY)]


def _env_file_readable() -> None:
    """FastMCP's settings read ``.env`` from the working directory when it is imported,
    and a ``PermissionError`` there ends the process: a server started (by a service
    manager, ``sudo -u``, a harness) in a directory its user may not search died before
    serving. There the file FastMCP reads is the null device instead (as if none)."""
    if "FASTMCP_ENV_FILE" in os.environ:
        return
    try:
        os.stat(".env")
    except FileNotFoundError:
        return
    except OSError:
        os.environ["FASTMCP_ENV_FILE"] = os.devnull


def main() -> None:
    """Run the ``openenv-mcp`` command."""
    _env_file_readable()
    argv = sys.argv[1:]
    if relays(argv):
        # A thin front: it relays to this user's episode host, importing nothing heavy.
        from openenv_mcp.server.transports._host import relay

        sys.exit(relay(host_argv(argv)))
    if not serves_stdio(argv):
        from openenv_mcp.cli import main as cli_main

        cli_main()
        return
    from openenv_mcp.server.transports._prelude import exit_status, start, why_not_started

    prelude = start(argv[1:])
    env = argv[1] if len(argv) > 1 else ""
    try:
        from openenv_mcp.cli import main as cli_main

        cli_main()
    except SystemExit as exc:
        if exit_status(exc.code) != 0 and (why := why_not_started(exc, env)) is not None:
            prelude.explain(*why)
        raise
    except Exception as exc:  # a bug, or a broken install: the traceback goes to stderr
        sys.excepthook(type(exc), exc, exc.__traceback__)
        if (why := why_not_started(exc, env)) is not None:
            prelude.explain(*why)
        raise SystemExit(1) from None

"""The ``openenv-mcp`` command's entry point: a stdio server's prelude first, then the CLI.

The CLI (typer, pydantic, the option models) and the server stack take well over
a second to import. A command line that serves over stdio starts its prelude
(:mod:`openenv_mcp.server.transports._prelude`) before importing any of them, so a harness
gets its ``initialize`` answer while they load; with ``--episode-host`` (or ``--agent``)
it only relays to this user's episode host (:mod:`openenv_mcp.server.transports._host`),
which is already up after the first start.

What a command line serves over, and what that means here, is read from the transports
table (:data:`openenv_mcp.transports.TRANSPORTS`: each transport's flags, whether the
prelude applies, which flags make a relay), the same table the CLI checks typer's parse
against: one list of flags, no second parser. Parsing with click itself would cost its
import (typer and click: 25-40 ms), as much as the whole relay path.

A start that fails (the environment cannot be built, an option is wrong) is told to
the client too, not only on stderr, which harnesses do not show: the prelude answers
the handshake with the reason and the command that fixes it
(:meth:`~openenv_mcp.server.transports._prelude.Prelude.explain`).

Every Python process openenv-mcp starts runs
:func:`openenv_mcp._util.interpreter.python_command`: nothing is imported from the directory
it runs in.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from openenv_mcp.transports import TRANSPORTS, host_argv, served_transport

__all__ = ["main", "relays", "serves_stdio"]


_STDIO = TRANSPORTS["stdio"]
_HELP = frozenset({"--help", "-h"})


def serves_stdio(argv: Sequence[str]) -> bool:
    """Whether the command line ``argv`` (without the program) serves over stdio through
    the prelude: the transport it names (:func:`~openenv_mcp.transports.served_transport`)
    and that transport's own entry in the table decide, not a list kept here."""
    if not argv or argv[0] != "serve" or not _HELP.isdisjoint(argv):
        return False
    served = served_transport(argv[1:])
    if served is None:
        return False
    transport = TRANSPORTS[served]
    return transport.prelude and set(transport.prelude_off).isdisjoint(argv)


def relays(argv: Sequence[str]) -> bool:
    """Whether ``argv`` (without the program) is a stdio front of an episode host:
    ``--episode-host``, or ``--agent`` (the agent profile and, over stdio, the host)."""
    return (
        serves_stdio(argv)
        and not set(_STDIO.relay_flags).isdisjoint(argv)
        and "--episode-host-socket" not in argv
    )


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
    from openenv_mcp.server.transports._prelude import start
    from openenv_mcp.server.transports._unready import exit_status, why_not_started

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

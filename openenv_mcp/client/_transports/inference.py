"""Where to connect follows from the target alone: the one place it is decided
(fastmcp's ``client/transports/inference.py`` in our shape)."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from openenv_mcp._util.interpreter import python_command
from openenv_mcp.client._transports.base import Transport
from openenv_mcp.client._transports.http import HttpTransport
from openenv_mcp.client._transports.memory import MemoryTransport
from openenv_mcp.client._transports.sdk import SdkTransport
from openenv_mcp.client._transports.stdio import StdioTransport
from openenv_mcp.errors import ArgumentError

if TYPE_CHECKING:
    from fastmcp import FastMCP
    from fastmcp.client.transports import ClientTransport

__all__ = ["Target", "describe_target", "is_command", "transport_for"]

#: What a client connects to: a server object (FastMCP), a command (string or
#: list), an ``http(s)://`` URL, a FastMCP ``ClientTransport``, or a :class:`Transport`.
Target = Any


def _fastmcp_types() -> tuple[type[FastMCP[Any]], type[ClientTransport]] | None:
    """FastMCP's server and client-transport classes, if FastMCP is loaded at all.

    A target can only be a FastMCP object if FastMCP was imported to make it,
    so this never imports it.
    """
    if "fastmcp" not in sys.modules:
        return None
    from fastmcp import FastMCP
    from fastmcp.client.transports import ClientTransport

    return FastMCP, ClientTransport


def describe_target(target: Target) -> str:
    """A short human description of a target, for error messages."""
    if isinstance(target, str):
        return target
    found = _fastmcp_types()
    if found is not None and isinstance(target, found[0]):
        return f"in-memory server {target.name!r}"
    if isinstance(target, Sequence):
        return shlex.join(str(a) for a in target)
    return repr(target)


def _command(target: str | Sequence[str]) -> list[str]:
    argv = shlex.split(target) if isinstance(target, str) else [str(a) for a in target]
    if not argv:
        raise ArgumentError("expected a command to run the server, got an empty one")
    # A trainer's venv may not be on PATH (a notebook kernel, `venv/bin/python x.py`);
    # the openenv-mcp installed beside this client is then the one meant.
    if argv[0] == "openenv-mcp" and shutil.which("openenv-mcp") is None:
        argv = python_command("-m", "openenv_mcp", *argv[1:])
    return argv


def transport_for(
    target: Target,
    *,
    server_log: Path | TextIO | None = None,
    headers: dict[str, str] | None = None,
    connect_timeout: float = 120.0,
) -> Transport:
    """Pick the transport for ``target``: the one place this is decided.

    Args:
        target: a FastMCP server made by ``build_server`` (in memory); an
            ``http://`` or ``https://`` URL (Streamable HTTP); a command as a
            string (split like a shell would) or a list of arguments (a stdio
            subprocess, stopped and reaped when the session closes); a FastMCP
            ``ClientTransport`` (through FastMCP's client); or a
            :class:`Transport`, used as is.
        server_log: where a stdio server's stderr goes.
        headers: extra HTTP headers (``Authorization: Bearer ...``).
        connect_timeout: the handshake bound of a FastMCP client.

    Raises:
        ArgumentError: for anything else, or an empty command.
    """
    if isinstance(target, Transport):
        return target
    found = _fastmcp_types()
    if found is not None:
        fastmcp_server, client_transport = found
        if isinstance(target, fastmcp_server):
            if getattr(target, "_openenv_app", None) is not None:
                return MemoryTransport(target)
            from fastmcp.client.transports import FastMCPTransport

            return SdkTransport(FastMCPTransport(target), connect_timeout)
        if isinstance(target, client_transport):
            return SdkTransport(target, connect_timeout)
    if isinstance(target, str) and target.startswith(("http://", "https://")):
        return HttpTransport(target, headers)
    if isinstance(target, str) or (
        isinstance(target, Sequence) and all(isinstance(a, str) for a in target)
    ):
        return StdioTransport(_command(target), dict(os.environ), server_log)
    raise ArgumentError(
        "expected a FastMCP server, a command (string or list of strings) or an "
        f"http(s):// URL, got {type(target).__name__} {target!r}"
    )


def is_command(target: Target) -> bool:
    if isinstance(target, str):
        return not target.startswith(("http://", "https://"))
    return isinstance(target, Sequence) and all(isinstance(a, str) for a in target)

"""A stdio server that cannot serve its environment still answers, and says why.

Harnesses (Codex, Gemini CLI) show none of a stdio MCP server's stderr at their
default verbosity: a server that exits at start is "connection closed", or
"Disconnected", and the reason is lost. So a server that cannot start answers the
MCP handshake anyway, and tells the model and the user what went wrong and what to
run: :class:`Unready` answers ``initialize`` with instructions saying it, lists one
tool (:data:`TOOL`) whose description says it, and answers a call of that tool (or
of any tool) with an error result saying it. ``server/discover`` (the 2026-07-28
era's probe) gets a JSON-RPC error naming the reason, so a client of both eras falls
back to the handshake, and openenv-mcp's own client reports the server as dead,
quoting its stderr.

Where the client already got a working server's handshake (the prelude answered it
from what an earlier start answered), :func:`serve` answers the first request that
needed the server with the reason, then ends: tools were listed, and each call of
them would fail the same way.

What the client is told comes from the error the start ended with
(:func:`why_not_started`: the error behind the CLI's exit) and the kind of failure
(:func:`fix_for`: the command installing a missing extra, the command line to
correct, or the cause to fix).

The standard library only: ``./dev run`` runs this file with the system's Python
when nothing is set up yet (``scripts/not_set_up.py``), and the server's prelude
(:mod:`openenv_mcp.server.transports._prelude`) when its start fails.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

__all__ = [
    "DEV_ENV",
    "TOOL",
    "Unready",
    "exit_status",
    "fix_for",
    "install_command",
    "main",
    "serve",
    "why_not_started",
]

#: The one tool a server that cannot serve lists.
TOOL = "setup_needed"
#: Protocol versions of the ``initialize`` handshake (the newest last).
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
_METHOD_NOT_FOUND = -32601
_PARSE_ERROR = -32700
_INVALID_REQUEST = -32600
#: Requests answered with an empty result: nothing to say, nothing that needs the server.
_EMPTY: dict[str, dict[str, Any]] = {
    "ping": {},
    "logging/setLevel": {},
    "prompts/list": {"prompts": []},
    "resources/list": {"resources": []},
    "resources/templates/list": {"resourceTemplates": []},
}
_CHUNK = 1 << 16


class Unready:
    """What a server that cannot serve answers.

    Args:
        reason: what went wrong, as a sentence (the error the start ended with).
        fix: what to do about it, with the exact command where there is one.
        version: the server's version (``serverInfo``).
    """

    def __init__(self, reason: str, fix: str, version: str = "unknown") -> None:
        self.reason = reason.strip()
        self.fix = fix.strip()
        self.version = version

    @property
    def text(self) -> str:
        """The reason and the fix, for the model and the user."""
        return f"openenv-mcp cannot serve its environment: {self.reason}\nTo fix it: {self.fix}"

    @property
    def instructions(self) -> str:
        return (
            f"{self.text}\nUntil then this server has no environment tools; its one tool, "
            f"{TOOL}, says the same. Tell the user what to run."
        )

    def tool(self) -> dict[str, Any]:
        """The one tool listed: its description is the reason and the fix."""
        return {
            "name": TOOL,
            "description": f"{self.text}\n(Calling this tool returns the same.)",
            "inputSchema": {"type": "object", "properties": {}},
            "annotations": {"readOnlyHint": True, "openWorldHint": False},
        }

    def failure(self, request: dict[str, Any]) -> dict[str, Any]:
        """The answer to a request that needs the server: a tool call's is an error result
        (the model reads it), any other request's a JSON-RPC error."""
        if request.get("method") == "tools/call":
            result = {"content": [{"type": "text", "text": self.text}], "isError": True}
            return _reply(request["id"], result)
        return _error(request["id"], _METHOD_NOT_FOUND, self.text)

    def answer(self, message: Any) -> dict[str, Any] | None:
        """The answer to one parsed message (``None`` for a notification or a response)."""
        if not isinstance(message, dict) or not isinstance(message.get("method"), str):
            if isinstance(message, dict) and ("result" in message or "error" in message):
                return None  # a response (to nothing we asked): dropped
            return _error(_id_of(message), _INVALID_REQUEST, "not a JSON-RPC 2.0 request")
        if "id" not in message:
            return None  # a notification
        method, params = message["method"], message.get("params")
        if method == "initialize":
            requested = params.get("protocolVersion") if isinstance(params, dict) else None
            version = requested if requested in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1]
            return _reply(
                message["id"],
                {
                    "protocolVersion": version,
                    "capabilities": {"tools": {"listChanged": False}},
                    "serverInfo": {"name": "openenv-mcp", "version": self.version},
                    "instructions": self.instructions,
                },
            )
        if method == "tools/list":
            return _reply(message["id"], {"tools": [self.tool()]})
        if method in _EMPTY:
            return _reply(message["id"], _EMPTY[method])
        return self.failure(message)


def _reply(request_id: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def _error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _id_of(message: Any) -> Any:
    found = message.get("id") if isinstance(message, dict) else None
    ok = isinstance(found, str) or (isinstance(found, int) and not isinstance(found, bool))
    return found if ok else None


def serve(
    in_fd: int,
    out_fd: int,
    unready: Unready,
    *,
    lines: Iterable[bytes] = (),
    rest: bytes = b"",
    eof: bool = False,
    kept: Callable[[dict[str, Any]], Any] | None = None,
) -> None:
    """Answer the client on ``in_fd``/``out_fd`` until its input ends: ``lines`` (read
    before, complete) first, then ``rest`` (the start of the next line) and what follows.

    With ``kept`` the client already got a working server's handshake: a request
    ``kept`` answers (a kept list: its result, else ``None``) is answered so, and once a
    request that needs the server has had the reason (with every line read alongside
    it), this returns.
    """
    for batch in itertools.chain([list(lines)], _batches(in_fd, rest, eof)):
        needed = False
        for line in batch:
            answer, needs_server = _respond(line, unready, kept)
            if answer is not None and not _write(out_fd, answer):
                return  # the client went away
            needed = needed or needs_server
        if needed and kept is not None:
            return


def _respond(
    line: bytes, unready: Unready, kept: Callable[[dict[str, Any]], Any] | None
) -> tuple[dict[str, Any] | None, bool]:
    """The answer to one line, and whether it was a request that needs the server."""
    if not line.strip():
        return None, False
    try:
        message = json.loads(line)
    except ValueError:
        return _error(None, _PARSE_ERROR, "not JSON"), False
    if not (isinstance(message, dict) and "id" in message and "method" in message):
        return unready.answer(message), False
    if kept is not None:
        result = kept(message)
        if result is not None:
            return _reply(message["id"], result), False
    needs = message["method"] not in ("initialize", "tools/list", *_EMPTY)
    return unready.answer(message), needs


def _batches(in_fd: int, rest: bytes, eof: bool) -> Iterator[list[bytes]]:
    """The complete lines of each read from ``in_fd`` (after ``rest``), then a last line
    without its newline."""
    held = bytearray(rest)
    while not eof:
        try:
            chunk = os.read(in_fd, _CHUNK)
        except OSError:
            chunk = b""
        if not chunk:
            break
        held += chunk
        *complete, tail = bytes(held).split(b"\n")
        held[:] = tail
        yield [line + b"\n" for line in complete]
    if held.strip():
        yield [bytes(held)]


def _write(out_fd: int, message: dict[str, Any]) -> bool:
    """Write one message; whether the client is still there to read it."""
    data = memoryview(json.dumps(message, separators=(",", ":")).encode() + b"\n")
    try:
        while data:
            data = data[os.write(out_fd, data) :]
    except OSError:
        return False
    return True


# -- why a start failed, and what fixes it ------------------------------------------------------

#: Set by ``./dev run`` to its own path: a server that cannot start names its commands.
DEV_ENV = "OPENENV_MCP_DEV"
_RESTART = "then restart this MCP server (or the harness)"


def exit_status(code: object) -> int:
    """The exit status ``sys.exit(code)`` ends with."""
    if code is None or isinstance(code, int):
        return code or 0
    return 1


def why_not_started(exc: BaseException, env: str) -> tuple[str, str] | None:
    """Why a server of ``env`` did not start, as the exception ``exc`` ending it says (the
    error the CLI printed, found behind its exit), and what fixes it; ``None`` when it was
    stopped (an interrupt), not failed."""
    cause = _cause(exc)
    if isinstance(cause, KeyboardInterrupt):
        return None
    format_message = getattr(cause, "format_message", None)
    if cause is None:
        reason = f"it exited at start (status {exit_status(getattr(exc, 'code', 1))})."
    elif callable(format_message):
        reason = str(format_message())  # a usage error (click's)
    elif _is_our_error(cause):
        reason = str(cause)
    else:
        reason = f"{type(cause).__name__}: {cause}"
    if isinstance(cause, ImportError):
        kind = "missing"
    elif callable(format_message) or (
        _is_our_error(cause) and isinstance(cause, (ValueError, LookupError))
    ):
        kind = "usage"  # an option, an environment's name
    else:
        kind = "other"
    return reason, fix_for(env, kind)


def fix_for(env: str, kind: str) -> str:
    """What fixes a server of ``env`` that did not start, by the ``kind`` of failure: a
    dependency that did not import (``missing``: the command installing ``env``'s extra,
    where it has one), its command line (``usage``), anything else (``other``)."""
    install = install_command(env) if kind == "missing" else None
    if install is not None:
        return f"run `{install}` once in a terminal, {_RESTART}."
    import shlex

    command = shlex.join(["openenv-mcp", *sys.argv[1:]])
    correct = (
        "correct this MCP server's command line in the harness's settings "
        f"(it ran: {command}), {_RESTART}."
    )
    if kind == "usage":
        return correct
    if kind == "missing":
        return f"install the missing module (into {sys.executable}'s environment), or {correct}"
    return f"fix the cause above, {_RESTART} (it ran: {command})."


def _cause(exc: BaseException) -> BaseException | None:
    """The error behind ``exc``: the CLI prints an error and exits (``typer.Exit``, then
    ``SystemExit``), each raised while handling the one before."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        exiting = isinstance(current, SystemExit) or type(current).__name__ in ("Exit", "Abort")
        if not exiting:
            return current
        current = current.__cause__ or current.__context__
    return None


def _is_our_error(exc: BaseException | None) -> bool:
    errors = sys.modules.get("openenv_mcp.errors")
    return errors is not None and isinstance(exc, errors.OpenEnvError)


def install_command(env: str) -> str | None:
    """The command that installs ``env``'s extra (``openenv-mcp[chess]``), where it has
    one: ``./dev setup ENV`` where ``./dev`` started this server (:data:`DEV_ENV` says
    where it is), else pip."""
    try:
        from openenv_mcp.registry import env_extra

        extra = env_extra(env)
    except Exception:  # the registry itself may be what is broken
        return None
    if extra is None:
        return None
    dev = os.environ.get(DEV_ENV)
    if dev:
        return f"{dev} setup {env}"
    import shlex

    return f"{shlex.quote(sys.executable)} -m pip install {shlex.quote(f'{extra[0]}[{extra[1]}]')}"


def main(argv: Sequence[str] | None = None) -> int:
    """Answer on stdin/stdout with the reason and fix given, until stdin ends (status 1:
    this server served nothing)."""
    import argparse

    parser = argparse.ArgumentParser(description="An MCP stdio server that says why not.")
    parser.add_argument("--reason", required=True, help="What went wrong, as a sentence.")
    parser.add_argument("--fix", required=True, help="What to do, with the exact command.")
    parser.add_argument("--version", default="unknown", help="openenv-mcp's version.")
    options = parser.parse_args(argv)
    if os.isatty(0):
        return 1  # a person at a terminal read the line on stderr
    serve(0, 1, Unready(options.reason, options.fix, options.version))
    return 1


if __name__ == "__main__":
    sys.exit(main())

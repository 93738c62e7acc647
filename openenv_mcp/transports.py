"""The transports, in one table: what each means for a server's episodes, how
``serve`` and ``bench`` name it, and what the ``openenv-mcp`` launcher needs to know
before anything heavy is imported.

A server speaks stdio (one client: the process that started it) or Streamable HTTP
(many clients, so calls name their episode); ``memory`` is a server object in this
process (tests, notebooks), ``ray`` many HTTP replicas behind one URL. Each
transport's code lives in its own file on each side (``server/transports/_stdio.py``,
``server/transports/_http.py``, ``client/_transports/``), and the objects that serve
each one (their settings groups and ``serve()``) in ``openenv_mcp/serving/``;
this table is what they share, cheap to import (the launcher reads it before typer,
pydantic or the server stack load).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, get_args

__all__ = [
    "SERVED",
    "TRANSPORTS",
    "ServedName",
    "Transport",
    "TransportName",
    "host_argv",
    "is_shared",
    "served_transport",
]

TransportName = Literal["memory", "stdio", "http", "ray"]
#: What ``serve --transport`` takes.
ServedName = Literal["stdio", "http", "ray"]


@dataclass(frozen=True)
class Transport:
    """One transport.

    Attributes:
        name: how ``bench --transport`` and ``serve --transport`` name it (``serve`` also
            takes ``--NAME``, the older spelling).
        shared: many clients share one server, so a call without a handle has no
            default episode (``EpisodeRequired``).
        aliases: the names FastMCP's context gives it.
        summary: one line for help texts.
        panel: the ``serve --help`` panel holding its options.
        flags: the ``serve`` flags that only this transport takes, each with what it is
            for; given with another transport, they are refused.
        prelude: a stdio server: the launcher starts its prelude (which answers the
            handshake while the server stack loads) unless one of ``prelude_off`` is given.
        prelude_off: flags after which the prelude does not apply.
        relay_flags: any of them makes the process a thin front relaying to this user's
            episode host.
        front_flags: the front's own flags, which the episode host it relays to does not
            take.
    """

    name: TransportName
    shared: bool
    aliases: tuple[str, ...]
    summary: str
    panel: str = ""
    flags: Mapping[str, str] = field(default_factory=dict)
    prelude: bool = False
    prelude_off: tuple[str, ...] = ()
    relay_flags: tuple[str, ...] = ()
    front_flags: tuple[str, ...] = ()

    @property
    def alias_flag(self) -> str:
        """``--stdio``, ``--http``, ``--ray``: the older spelling of ``--transport NAME``."""
        return f"--{self.name}"


TRANSPORTS: dict[TransportName, Transport] = {
    t.name: t
    for t in (
        Transport("memory", False, ("memory",), "a server object in this process"),
        Transport(
            "stdio",
            False,
            ("stdio",),
            "a server subprocess the client owns",
            panel="Stdio (--transport stdio, the default)",
            flags={
                "--web-port": "it serves the page beside a stdio server; over HTTP use --web",
                "--episode-host": "over HTTP, episodes already outlive each call",
            },
            prelude=True,
            prelude_off=("--no-fast-path",),
            relay_flags=("--episode-host", "--agent"),
            front_flags=("--stdio", "--episode-host"),
        ),
        Transport(
            "http",
            True,
            ("http", "streamable-http", "sse"),
            "Streamable HTTP",
            panel="HTTP (--transport http; --transport ray serves the same way)",
            flags={
                "--web": "it serves the page beside /mcp over HTTP; over stdio use --web-port",
                "--openenv": "it serves OpenEnv's protocol beside /mcp over HTTP",
            },
        ),
        Transport(
            "ray",
            True,
            (),
            "server replicas on Ray Serve behind one URL",
            panel="Ray Serve (--transport ray)",
            flags={
                "--replicas": "it is how many Ray Serve replicas serve",
                "--ray-address": "it names the Ray cluster the replicas join",
                "--replica-cpus": "it is what each Ray Serve replica reserves",
            },
        ),
    )
}
assert tuple(TRANSPORTS) == get_args(TransportName)
#: The transports ``serve`` serves over, the default first.
SERVED: tuple[ServedName, ...] = get_args(ServedName)

_SHARED = {alias for t in TRANSPORTS.values() if t.shared for alias in t.aliases}


def is_shared(name: str | None) -> bool:
    """Whether a server reached over transport ``name`` (ours, or FastMCP's name for it)
    is shared by many clients."""
    return name in _SHARED


def served_transport(args: Sequence[str]) -> ServedName | None:
    """The transport a ``serve`` command line (after ``serve``) names: ``--transport
    NAME``, ``--transport=NAME`` or ``--NAME``; stdio when it names none.

    ``None`` when it names two, or one ``serve`` does not know: the CLI then says what
    was expected and what came. The launcher decides with this before typer loads;
    the CLI checks the same choice with typer's parse.
    """
    named: set[str] = set()
    for i, arg in enumerate(args):
        if arg == "--transport":
            named.add(args[i + 1] if i + 1 < len(args) else "")
        elif arg.startswith("--transport="):
            named.add(arg.partition("=")[2])
        elif arg in _ALIASES:
            named.add(_ALIASES[arg])
    if not named:
        return SERVED[0]
    (name,) = named if len(named) == 1 else ("",)
    return next((t for t in SERVED if t == name), None)


_ALIASES = {TRANSPORTS[t].alias_flag: t for t in SERVED}


def host_argv(argv: Sequence[str]) -> list[str]:
    """The ``serve`` arguments (``argv`` without the program) a stdio front passes the
    episode host it relays to: ``--agent`` spelled out as
    ``--profile agent`` (so both spellings share one host), the front's own flags dropped."""
    env, *rest = argv[1:] or [""]
    kept: list[str] = []
    skip = False
    for arg in rest:
        if skip or arg in _FRONT or arg.startswith("--transport="):
            skip = False
        elif arg == "--transport":
            skip = True  # and its value: a front's, like --stdio
        else:
            kept += ["--profile", "agent"] if arg == "--agent" else [arg]
    return [env, *kept]


_FRONT = TRANSPORTS["stdio"].front_flags

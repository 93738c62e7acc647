"""The transports, in one table: what each means for a server's episodes and how
``serve``, ``bench`` and the handlers name it.

A server speaks stdio (one client: the process that started it) or Streamable HTTP
(many clients, so calls name their episode); ``memory`` is a server object in this
process (tests, notebooks), ``ray`` many HTTP replicas behind one URL. Each
transport's code lives in its own file on each side (``server/transports/_stdio.py``,
``server/transports/_http.py``, ``client/_transports/``); this table is what they share.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

__all__ = ["TRANSPORTS", "Transport", "TransportName", "is_shared"]

TransportName = Literal["memory", "stdio", "http", "ray"]


@dataclass(frozen=True)
class Transport:
    """One transport.

    Attributes:
        name: how ``bench --transport`` and ``serve --NAME`` name it.
        shared: many clients share one server, so a call without a handle has no
            default episode (``EpisodeRequired``).
        aliases: the names FastMCP's context gives it.
        summary: one line for help texts.
    """

    name: TransportName
    shared: bool
    aliases: tuple[str, ...]
    summary: str


TRANSPORTS: dict[TransportName, Transport] = {
    t.name: t
    for t in (
        Transport("memory", False, ("memory",), "a server object in this process"),
        Transport("stdio", False, ("stdio",), "a server subprocess the client owns"),
        Transport("http", True, ("http", "streamable-http", "sse"), "Streamable HTTP"),
        Transport("ray", True, (), "server replicas on Ray Serve behind one URL"),
    )
}
assert tuple(TRANSPORTS) == get_args(TransportName)

_SHARED = {alias for t in TRANSPORTS.values() if t.shared for alias in t.aliases}


def is_shared(name: str | None) -> bool:
    """Whether a server reached over transport ``name`` (ours, or FastMCP's name for it)
    is shared by many clients."""
    return name in _SHARED

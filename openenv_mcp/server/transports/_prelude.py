"""A stdio server's first second: the handshake answered before the MCP stack is imported.

Harnesses give a stdio server a few seconds to answer ``initialize``
(pydantic-ai and ADK: 5 s; Codex: 10 s), and importing FastMCP and the MCP SDK
alone takes about 1.5 s here, more on a busy machine. So ``openenv-mcp serve
--stdio`` starts a :class:`Prelude` first, before any heavy import: a thread
that owns the process's stdin and stdout, reads the client's messages, and
answers the handshake (``initialize``, or the 2026-07-28 ``server/discover``)
and the lists (tools, prompts, resources) from the answers this command line's
server gave before (:mod:`openenv_mcp.server.transports._answers`). Everything else waits,
in order, for the stack.

When the stack is up it takes over (:meth:`Prelude.hand_over`): it is fed
everything the client sent, in order, with each request the prelude answered
replayed under a private id, so its protocol state (the era, the negotiated
version, an initialized session) is exactly what serving those requests itself
would have left. Its answers to the replayed requests reach the
:class:`Recorder`, not the client: the recorder compares them with what the
prelude said, keeps them for the next start, and, where a list the client got
was stale, tells the client it changed (``notifications/*/list_changed``,
handshake era only). On a first start, with nothing kept, the prelude answers
nothing and the recorder keeps what the stack answers the client.

Why a kept answer, and not the lean path answering from the tool catalog: the
handshake's instructions and the tool list come from the environment's own code,
and importing that alone (Atari: numpy, ale-py) takes about 0.4 s, the catalog with
it about 1.3 s, where a harness's next start answers from the book within 0.05 s
of its spawn. The replay is what puts the stack in the state the client believes
(the 2025 handshake's negotiated version and initialized session; the stack refuses
anything else before them), and what checks the book against the code it came from.

The prelude also notices a client that left before saying anything (stdin at
EOF, or ``/dev/null``), so the server can exit at once.

A start that fails (the environment cannot be built, an option is wrong) never
hands over: :meth:`Prelude.explain` answers the client instead
(:mod:`openenv_mcp.server.transports._unready`), so the reason reaches the harness's model and
user, who see no stderr. Where the prelude already gave the kept handshake, the
first request that needed the server gets the reason, then the process ends.

An episode host's front (:func:`openenv_mcp.server.transports._host.relay`) runs a prelude
too while it starts its host: the host's answers, kept, answer the handshake before a
cold host listens, and the host takes over as the stack does. A host already
listening answers at once, so its front runs none.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from openenv_mcp._util.version import __version__
from openenv_mcp.server.transports._answers import AnswerBook, package_path
from openenv_mcp.server.transports._unready import Unready
from openenv_mcp.server.transports._unready import serve as serve_unready

__all__ = [
    "Answerer",
    "Handover",
    "Prelude",
    "Recorder",
    "current",
    "is_private",
    "start",
]

log = logging.getLogger("openenv_mcp.server")

#: What the prelude may answer from a book (each request's params being only ``_meta``).
ANSWERABLE = frozenset(
    {"initialize", "server/discover", "tools/list", "prompts/list", "resources/list"}
)
#: A list method and the notification that says its list changed.
_LIST_CHANGED = {
    "tools/list": "notifications/tools/list_changed",
    "prompts/list": "notifications/prompts/list_changed",
    "resources/list": "notifications/resources/list_changed",
}
#: Ids of replayed requests start with this; a client's ids never reach the stack under it.
PRIVATE_ID = "openenv-mcp/prelude/"
_VERSION_META = "io.modelcontextprotocol/protocolVersion"
_CAPABILITIES_META = "io.modelcontextprotocol/clientCapabilities"
_CLIENT_INFO_META = "io.modelcontextprotocol/clientInfo"
#: The prelude stops reading (and the stack reads the rest) past this much of one line.
_MAX_HELD = 1 << 20
_CHUNK = 1 << 16


def hold_wire() -> tuple[int, int]:
    """Take stdin and stdout privately, as (in, out) descriptors of their own, and point
    fd 1 at stderr and fd 0 at the null device: from then on a stray ``print`` (in an
    import, in an environment) lands in the log, not in the protocol."""
    wire = os.dup(0), os.dup(1)
    os.dup2(2, 1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    return wire


@dataclass
class Handover:
    """What the prelude passes to the stack.

    Attributes:
        lines: every complete line the client sent, in order (answered requests
            under private ids).
        rest: the bytes of a line not finished yet.
        eof: stdin has ended: read nothing more.
    """

    lines: list[bytes] = field(default_factory=list)
    rest: bytes = b""
    eof: bool = False


def is_private(request_id: Any) -> bool:
    """Whether ``request_id`` is a replayed request's (never a client's)."""
    return isinstance(request_id, str) and request_id.startswith(PRIVATE_ID)


def _scope(era: str, version: str) -> str:
    return f"{era}:{version}"


def _only_meta(params: Any) -> bool:
    return params is None or (isinstance(params, dict) and set(params) <= {"_meta"})


def _declares_extensions(params: Any, method: str) -> bool:
    """Whether a request declares client extensions (MCP Apps, tasks): the answers to it
    may differ from the kept ones, which are a plain client's, so the stack answers it
    and nothing of it is kept. Modern requests declare them in ``_meta``; the legacy
    handshake in ``initialize``'s capabilities, for its whole session."""
    if not isinstance(params, dict):
        return False
    if method == "initialize":
        caps = params.get("capabilities")
    else:
        meta = params.get("_meta")
        caps = meta.get(_CAPABILITIES_META) if isinstance(meta, dict) else None
    declared = caps.get("extensions") if isinstance(caps, dict) else None
    return bool(declared)


def _envelope_version(params: Any) -> str | None:
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(_VERSION_META) if isinstance(meta, dict) else None
    return version if isinstance(version, str) else None


def _implementation(value: Any) -> bool:
    """Whether ``value`` is a well-formed ``Implementation`` (``clientInfo``)."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("name"), str)
        and isinstance(value.get("version"), str)
    )


def _well_formed(method: str, params: Any) -> bool:
    """Whether the stack would accept ``params`` as they are, so a kept answer is the
    answer; anything odd is left to the stack, which says what is wrong."""
    if method == "initialize":
        return (
            isinstance(params, dict)
            and isinstance(params.get("protocolVersion"), str)
            and isinstance(params.get("capabilities"), dict)
            and _implementation(params.get("clientInfo"))
        )
    meta = params.get("_meta") if isinstance(params, dict) else None
    if meta is None or _envelope_version(params) is None:
        return meta is None or (isinstance(meta, dict) and _VERSION_META not in meta)
    return isinstance(meta.get(_CAPABILITIES_META), dict) and (
        _CLIENT_INFO_META not in meta or _implementation(meta[_CLIENT_INFO_META])
    )


class Answerer:
    """Decides what the prelude answers: a kept answer to a request the stack would
    answer the same way, given what the client said before.

    Args:
        book: the answers kept for this command line.
    """

    def __init__(self, book: AnswerBook) -> None:
        self.book = book
        #: The era and version the client opened with (``None`` until it sent a request).
        self.era: str | None = None
        self.version: str | None = None
        #: The client's handshake declared extensions: nothing kept answers its session.
        self.extended = False

    def answer(self, message: Any) -> tuple[str, Any] | None:
        """The kept answer to ``message``, as (scope, result), or ``None``."""
        if not isinstance(message, dict) or "id" not in message:
            return None
        method, params = message.get("method"), message.get("params")
        if method not in ANSWERABLE or not isinstance(message["id"], str | int):
            return None
        if isinstance(message["id"], bool) or not _well_formed(method, params):
            return None
        if self.extended or _declares_extensions(params, method):
            self.extended = self.extended or method == "initialize"
            return None
        if method == "initialize":
            requested = params.get("protocolVersion") if isinstance(params, dict) else None
            if self.era is not None or not isinstance(requested, str):
                return None
            result = self.book.get(_scope("legacy", requested), method)
            if not isinstance(result, dict) or not isinstance(result.get("protocolVersion"), str):
                return None
            self.era, self.version = "legacy", result["protocolVersion"]
            return _scope("legacy", requested), result
        if not _only_meta(params):
            return None  # a cursor, or anything else the kept answer did not see
        envelope = _envelope_version(params)
        if envelope is not None and self.era in (None, "modern"):
            scope = _scope("modern", envelope)
            result = self.book.get(scope, method)
            if result is None:
                return None
            self.era, self.version = "modern", envelope
            return scope, result
        if self.era == "legacy" and envelope is None and method != "server/discover":
            assert self.version is not None
            scope = _scope("legacy", self.version)
            result = self.book.get(scope, method)
            return None if result is None else (scope, result)
        return None


class Prelude:
    """Owns stdin and stdout from the process's start until the stack takes over.

    Args:
        book: the answers kept for this command line.
    """

    def __init__(self, book: AnswerBook) -> None:
        self.book = book
        # The wire, held privately from here on: fd 1 points at stderr and fd 0 at
        # the null device, so a stray print during the imports cannot corrupt it.
        self.in_fd, self.out_fd = hold_wire()
        self._wake_read, self._wake_write = os.pipe()
        self._held = b""
        self._lines: list[bytes] = []
        self._eof = False
        self.answerer = Answerer(book)
        self._answering = True
        self._heard = False
        self._replayed = 0
        #: Private id -> (scope, method, the result the client got).
        self.answered: dict[str, tuple[str, str, Any]] = {}
        self._thread = threading.Thread(target=self._run, name="openenv-mcp-prelude", daemon=True)
        #: Whether the stack has taken over.
        self.handed = False

    def start(self) -> None:
        self._thread.start()

    @property
    def silent_eof(self) -> bool:
        """Whether stdin ended before the client sent anything at all."""
        return self._eof and not self._heard and not self._held.strip()

    # -- the reader thread -------------------------------------------------------------------

    def _run(self) -> None:
        poller = select.poll()
        poller.register(self.in_fd, select.POLLIN | select.POLLHUP)
        poller.register(self._wake_read, select.POLLIN)
        try:
            while True:
                ready = {fd for fd, _ in poller.poll()}
                if self._wake_read in ready:
                    return
                chunk = os.read(self.in_fd, _CHUNK)
                if not chunk:
                    self._eof = True
                    return
                self._held += chunk
                while (end := self._held.find(b"\n")) >= 0:
                    line, self._held = self._held[: end + 1], self._held[end + 1 :]
                    self._take(line)
                if len(self._held) > _MAX_HELD:
                    return  # a huge line: the stack reads it, with its own limits
        except OSError as exc:
            log.debug("prelude stopped reading: %s", exc)

    def _take(self, line: bytes) -> None:
        if not line.strip():
            return
        self._heard = True
        try:
            message = orjson.loads(line)
        except orjson.JSONDecodeError:
            message = None
        answer = self.answerer.answer(message) if self._answering else None
        if answer is None:
            if isinstance(message, dict) and "id" in message:
                self._answering = False  # from the first request it cannot answer, in order
            self._lines.append(line)
            return
        scope, result = answer
        assert isinstance(message, dict)
        self._write({"jsonrpc": "2.0", "id": message["id"], "result": result})
        self._replayed += 1
        private = f"{PRIVATE_ID}{self._replayed}"
        self.answered[private] = (scope, message["method"], result)
        self._lines.append(orjson.dumps({**message, "id": private}) + b"\n")

    def _write(self, message: dict[str, Any]) -> None:
        data = memoryview(orjson.dumps(message) + b"\n")
        try:
            while data:
                data = data[os.write(self.out_fd, data) :]
        except OSError:
            log.warning("client went away; dropping a reply")

    # -- the hand-over ---------------------------------------------------------------------------

    def hand_over(self) -> Handover:
        """Stop reading and give the stack everything read so far (once)."""
        if self.handed:
            return Handover()
        self.handed = True
        with contextlib.suppress(OSError):
            os.write(self._wake_write, b"x")
        self._thread.join()
        for fd in (self._wake_read, self._wake_write):
            with contextlib.suppress(OSError):
                os.close(fd)
        return Handover(self._lines, self._held, self._eof)

    def explain(self, reason: str, fix: str) -> None:
        """The stack will never take over: the start failed for ``reason`` (``fix`` says
        what to run). Answer the client with them until it leaves, or, where it got the
        kept handshake (its tools listed), until a request that needed the server has
        had them. Nothing is answered to a client that left without a word, or on a
        terminal (the person there read stderr)."""
        if self.handed:
            return
        lead = self.hand_over()
        if self.silent_eof or os.isatty(self.in_fd):
            return
        told = self.answerer.era is not None

        def kept(message: dict[str, Any]) -> Any:
            answer = self.answerer.answer(message)
            return None if answer is None else answer[1]

        serve_unready(
            self.in_fd,
            self.out_fd,
            Unready(reason, fix, __version__),
            # The requests the prelude answered (kept, under private ids) are done with.
            lines=[line for line in lead.lines if not _replayed(line)],
            rest=lead.rest,
            eof=lead.eof,
            kept=kept if told else None,
        )

    def recorder(self, env_module: str) -> Recorder:
        """The recorder for the stack's answers, for a server of ``env_module``'s environment."""
        watched = package_path(env_module)
        return Recorder(self, [watched] if watched else [])


def _replayed(line: bytes) -> bool:
    """Whether ``line`` is a request the prelude answered, kept for the stack's replay."""
    if PRIVATE_ID.encode() not in line:
        return False
    try:
        message = orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return isinstance(message, dict) and is_private(message.get("id"))


class Recorder:
    """Watches the stack's traffic: keeps its answers and checks the prelude's.

    ``inbound`` sees every request the stack is sent; ``outbound`` every response
    it gives, and says which ones the client must not see (those to replayed
    requests). ``send`` writes a message to the client (set by the connection).
    """

    def __init__(self, prelude: Prelude, watch: Sequence[str]) -> None:
        self._book = prelude.book
        self._watch = list(watch)
        self.send: Callable[[dict[str, Any]], object] | None = None
        self._era, self._version = prelude.answerer.era, prelude.answerer.version
        #: Request id -> (method, the scope when known at the request).
        self._pending: dict[Any, tuple[str, str | None]] = {}
        #: What this process has kept or checked: a server's first answers are its
        #: start's, the ones the next start gives (a list may change later on).
        self._seen: set[tuple[str, str]] = set()
        #: The client's handshake declared extensions: nothing of its session is kept.
        self._extended = prelude.answerer.extended

    @property
    def pending(self) -> int:
        """Requests seen whose answers are still to come."""
        return len(self._pending)

    def inbound(self, message: dict[str, Any]) -> None:
        method, request_id = message.get("method"), message.get("id")
        if method not in ANSWERABLE or request_id is None:
            return
        params = message.get("params")
        if method != "initialize" and not _only_meta(params):
            return
        if self._extended or _declares_extensions(params, method):
            self._extended = self._extended or method == "initialize"
            return
        envelope = _envelope_version(params) if method != "initialize" else None
        scope = _scope("modern", envelope) if envelope is not None else None
        if method == "initialize":
            requested = params.get("protocolVersion") if isinstance(params, dict) else None
            scope = _scope("legacy", requested) if isinstance(requested, str) else None
            if scope is None:
                return
        self._pending[(type(request_id).__name__, request_id)] = (method, scope)

    def outbound(self, request_id: Any, data: bytes) -> bool:
        """Note the stack's response ``data`` to ``request_id``; whether to keep it from
        the client."""
        pending = self._pending.pop((type(request_id).__name__, request_id), None)
        private = is_private(request_id)
        if pending is None:
            return private
        method, scope = pending
        result = orjson.loads(data).get("result")
        if result is None:
            return private  # an error is not kept
        if method == "initialize" and isinstance(result.get("protocolVersion"), str):
            self._era, self._version = "legacy", result["protocolVersion"]
        if scope is None:
            if self._era != "legacy" or self._version is None:
                return private
            scope = _scope("legacy", self._version)
        if (scope, method) in self._seen:
            return private
        self._seen.add((scope, method))
        changed = self._book.put(scope, method, result)
        if private and changed:
            self._stale(method, scope)
        if changed:
            self._book.save(self._watch)
        return private

    def _stale(self, method: str, scope: str) -> None:
        log.info("the kept answer to %s (%s) was stale; kept the new one", method, scope)
        notification = _LIST_CHANGED.get(method)
        if notification is not None and scope.startswith("legacy:") and self.send is not None:
            self.send({"jsonrpc": "2.0", "method": notification})


_current: Prelude | None = None


def start(argv: Sequence[str]) -> Prelude:
    """Start this process's prelude for the ``serve`` command line ``argv``."""
    global _current
    prelude = Prelude(AnswerBook.open(argv))
    prelude.start()
    _current = prelude
    return prelude


def current() -> Prelude | None:
    """This process's prelude, if it started one."""
    return _current

"""What the server's logs may say: secrets redacted, and no flood a stranger can cause.

Two filters a serving process puts on its log handlers:

* :class:`SecretsFilter` takes the bearer token and live episode handles out of
  every record (message, arguments, traceback) before any handler formats it. A
  handle is a capability (whoever holds it may drive or close the episode), so a
  log line names an episode by its :func:`~openenv_mcp.wire.handles.public_id`.
  uvicorn's access log prints the query string (the web page is opened as
  ``/web/?token=T``), so every ``token=`` value goes too, right or wrong.
* :class:`Throttle` writes one line per kind of event and interval, counting the
  rest, for events anyone who reaches the port can cause (connections refused,
  descriptors exhausted, malformed requests): one line per event is a log that
  grows as fast as the attacker sends.
"""

from __future__ import annotations

import contextlib
import logging
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

from openenv_mcp.wire.handles import HANDLE_PATTERN, public_id

__all__ = ["SecretsFilter", "Throttle", "ThrottleFilter", "redacting", "throttling"]

#: How often one kind of attacker-driven event may write a line (seconds).
INTERVAL = 10.0
_HANDLE = re.compile(HANDLE_PATTERN)
_QUERY_TOKEN = re.compile(r"(?i)(\btoken=)[^&\s\"']+")


class SecretsFilter(logging.Filter):
    """Redacts the token and episode handles from records (on handlers: every logger's
    records pass through them)."""

    def __init__(self, token: str | None) -> None:
        super().__init__()
        self.token = token

    def redact(self, text: str) -> str:
        """``text`` with the token and every handle replaced."""
        if self.token and self.token in text:
            text = text.replace(self.token, "[token]")
        if "=" in text:
            text = _QUERY_TOKEN.sub(r"\1[token]", text)
        if "_" in text:
            text = _HANDLE.sub(lambda m: public_id(m.group(0)), text)
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = self.redact(record.msg)
        if isinstance(record.args, tuple):
            # The shape stays (uvicorn's access formatter unpacks its arguments).
            record.args = tuple(self.redact(a) if isinstance(a, str) else a for a in record.args)
        elif isinstance(record.args, dict):
            record.args = {
                k: self.redact(v) if isinstance(v, str) else v for k, v in record.args.items()
            }
        if record.exc_info and not record.exc_text:
            # Formatters use exc_text when it is set: format the traceback once, redacted.
            record.exc_text = self.redact(logging.Formatter().formatException(record.exc_info))
        elif record.exc_text:
            record.exc_text = self.redact(record.exc_text)
        if record.stack_info:
            record.stack_info = self.redact(record.stack_info)
        return True


def _handlers() -> list[logging.Handler]:
    """Where every record ends: the root's handlers (uvicorn's loggers propagate to them,
    as ``serve`` configures it), uvicorn's own if a caller gave it some, and the
    handler of last resort."""
    found: list[logging.Handler] = []
    for name in ("", "uvicorn", "uvicorn.error", "uvicorn.access"):
        found += logging.getLogger(name).handlers
    if logging.lastResort is not None:
        found.append(logging.lastResort)
    return list(dict.fromkeys(found))


@contextlib.contextmanager
def redacting(token: str | None) -> Iterator[SecretsFilter]:
    """Redact ``token`` and handles from every log line while serving."""
    secrets_filter = SecretsFilter(token)
    handlers = _handlers()
    for handler in handlers:
        handler.addFilter(secrets_filter)
    try:
        yield secrets_filter
    finally:
        for handler in handlers:
            handler.removeFilter(secrets_filter)


class Throttle:
    """At most one line per kind of event every ``interval`` seconds; the next line
    says how many were left out."""

    def __init__(
        self,
        logger: logging.Logger,
        interval: float = INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.logger = logger
        self.interval = interval
        self.clock = clock
        self._seen: dict[str, tuple[float, int]] = {}

    def allow(self, kind: str) -> int | None:
        """``None`` when a line of ``kind`` must wait; else how many were left out."""
        now = self.clock()
        last, dropped = self._seen.get(kind, (-self.interval, 0))
        if now - last < self.interval:
            self._seen[kind] = (last, dropped + 1)
            return None
        self._seen[kind] = (now, 0)
        return dropped

    def log(self, level: int, kind: str, message: str, *args: Any) -> None:
        """Log ``message % args`` unless a line of ``kind`` was written lately."""
        dropped = self.allow(kind)
        if dropped is None:
            return
        if dropped:
            message += f" ({dropped} more since the last such line)"
        self.logger.log(level, message, *args)


class ThrottleFilter(logging.Filter):
    """Throttles a logger's warnings per message template: uvicorn writes one per
    malformed request ("Invalid HTTP request received.") or refused upgrade."""

    def __init__(self, throttle: Throttle) -> None:
        super().__init__()
        self.throttle = throttle

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        dropped = self.throttle.allow(str(record.msg))
        if dropped is None:
            return False
        if dropped and isinstance(record.msg, str) and not record.args:
            record.msg += f" ({dropped} more since the last such line)"
        return True


@contextlib.contextmanager
def throttling(logger_name: str, interval: float = INTERVAL) -> Iterator[None]:
    """Throttle ``logger_name``'s own warnings (those it logs itself) while serving."""
    logger = logging.getLogger(logger_name)
    throttle_filter = ThrottleFilter(Throttle(logger, interval))
    logger.addFilter(throttle_filter)
    try:
        yield
    finally:
        logger.removeFilter(throttle_filter)

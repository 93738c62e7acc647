"""A local stand-in for OpenAI's Responses API, for driving a real agent CLI in tests.

Codex (and any client of ``POST {base_url}/responses`` with ``stream: true``) talks to
it as to a model: each request is answered from a script, as the server-sent events
the real API streams (``response.created``, ``response.output_item.added`` and
``.done`` per output item, ``response.completed``), and every request is kept, so a
test can read what the agent sent the "model": its tools, and the tool results it
carried back.

Only loopback: it listens on 127.0.0.1, on a port of its own choosing.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "Request",
    "Script",
    "StandinModel",
    "function_call",
    "function_outputs",
    "message",
    "tool_names",
]

#: The longest request body read (Codex sends the whole conversation, images included).
MAX_BODY = 64 * 1024 * 1024


@dataclass
class Request:
    """One request the stand-in received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any = None


#: The script: given the ``/responses`` requests so far (the newest last), the output
#: items of the next answer.
Script = Callable[[list[dict[str, Any]]], list[dict[str, Any]]]


def function_call(
    name: str, arguments: dict[str, Any], call_id: str, namespace: str | None = None
) -> dict[str, Any]:
    """An output item calling the tool ``name`` (of ``namespace``, where the request
    offers it inside one), as the request's ``tools`` name it."""
    item = {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "call_id": call_id,
        "name": name,
        "arguments": json.dumps(arguments),
        "status": "completed",
    }
    if namespace is not None:
        item["namespace"] = namespace
    return item


def message(text: str) -> dict[str, Any]:
    """An output item: the assistant's text."""
    return {
        "type": "message",
        "id": "msg_standin",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def tool_names(body: dict[str, Any]) -> list[tuple[str | None, str]]:
    """The function tools a request offers, as ``(namespace, name)`` (``None``: none)."""
    names: list[tuple[str | None, str]] = []
    for tool in body.get("tools") or []:
        if tool.get("type") == "function":
            names.append((None, str(tool.get("name"))))
        elif tool.get("type") == "namespace":
            names += [(str(tool.get("name")), str(t.get("name"))) for t in tool.get("tools") or []]
    return names


def function_outputs(body: dict[str, Any]) -> dict[str, Any]:
    """``call_id`` -> the output a request carries back for that call."""
    return {
        item["call_id"]: item.get("output")
        for item in body.get("input") or []
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    }


@dataclass
class StandinModel:
    """The stand-in, serving on loopback while entered; ``requests`` holds every request,
    ``responses`` the bodies of the ``/responses`` ones."""

    script: Script
    requests: list[Request] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _ids: Iterator[int] = field(default_factory=itertools.count)

    @property
    def base_url(self) -> str:
        """What a client takes as the API's base URL (``.../v1``)."""
        assert self._server is not None, "not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def responses(self) -> list[dict[str, Any]]:
        with self._lock:
            return [
                r.body
                for r in self.requests
                if r.method == "POST" and r.path.endswith("/responses") and isinstance(r.body, dict)
            ]

    def __enter__(self) -> StandinModel:
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"  # one request per connection, ended by closing it

            def log_message(self, format: str, *args: Any) -> None:
                return None

            def do_GET(self) -> None:
                model._record(self, None)
                if self.path.rstrip("/").endswith("/models"):
                    self._json(200, {"object": "list", "data": [], "models": []})
                else:
                    self._json(404, {"error": {"message": f"no {self.path} here"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length > MAX_BODY:
                    self._json(413, {"error": {"message": "too large"}})
                    return
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"null")
                except ValueError:
                    body = None
                model._record(self, body)
                if not (self.path.endswith("/responses") and isinstance(body, dict)):
                    self._json(404, {"error": {"message": f"no {self.path} here"}})
                    return
                try:
                    items = model.script(model.responses)
                except Exception as exc:  # the script failing is the test's to see
                    self._json(500, {"error": {"message": f"script failed: {exc!r}"}})
                    return
                self._stream(items)

            def _json(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, items: list[dict[str, Any]]) -> None:
                response_id = f"resp_{next(model._ids)}"
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()
                self._event(
                    {
                        "type": "response.created",
                        "response": {"id": response_id, "status": "in_progress", "output": []},
                    }
                )
                for index, item in enumerate(items):
                    added = {**item, "status": "in_progress"}
                    if item.get("type") == "message":
                        added["content"] = []
                    self._event(
                        {"type": "response.output_item.added", "output_index": index, "item": added}
                    )
                    if item.get("type") == "message":
                        text = "".join(c.get("text", "") for c in item["content"])
                        self._event(
                            {
                                "type": "response.output_text.delta",
                                "item_id": item["id"],
                                "output_index": index,
                                "content_index": 0,
                                "delta": text,
                            }
                        )
                    self._event(
                        {"type": "response.output_item.done", "output_index": index, "item": item}
                    )
                usage = {
                    "input_tokens": 10,
                    "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens": 10,
                    "output_tokens_details": {"reasoning_tokens": 0},
                    "total_tokens": 20,
                }
                self._event(
                    {
                        "type": "response.completed",
                        "response": {
                            "id": response_id,
                            "status": "completed",
                            "output": items,
                            "usage": usage,
                        },
                    }
                )
                self.wfile.flush()

            def _event(self, event: dict[str, Any]) -> None:
                data = json.dumps(event)
                self.wfile.write(f"event: {event['type']}\ndata: {data}\n\n".encode())

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None and self._thread is not None
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    def _record(self, handler: BaseHTTPRequestHandler, body: Any) -> None:
        request = Request(handler.command, handler.path, dict(handler.headers.items()), body)
        with self._lock:
            self.requests.append(request)

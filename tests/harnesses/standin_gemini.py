"""A local stand-in for the Gemini API, for driving the real Gemini CLI in tests.

Gemini CLI (npm ``@google/gemini-cli``) talks to the Gemini API through
``@google/genai``; ``GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:PORT`` points it here.
Any ``GEMINI_API_KEY`` will do, with the API key auth chosen in the settings
(``security.auth.selectedType: "gemini-api-key"``): left to choose from the
environment, a headless CLI 0.61 picks its "gateway" auth for a base URL and then
refuses it ("Invalid auth method selected."). The model's turns come from a
script, not a model:

* a request that declares the tools of the script (``tools[].functionDeclarations``:
  Gemini CLI names an MCP server's tool ``mcp_<server>_<tool>``) is answered, turn
  by turn, with one function call each: the script's calls in order (the reset
  tool, then actions), then a final text answer;
* a request that declares none of them is answered with text at once
  (``NO_TOOLS_ANSWER``): nothing was there to call;
* a request for JSON (``responseMimeType: application/json``: the CLI's model
  router, when no ``--model`` is given) gets the plainest object its schema allows.

Which call comes next is read from the request itself (how many function calls
the conversation holds already), so the stand-in keeps no per-session state.
Every request is recorded (``requests``), so a test can see what the model was
shown: the declared tools, and the tool results as ``functionResponse`` parts,
frames as ``inlineData`` images.

    with StandinGemini([("reset", {"seed": 0}), ("fire", {})]) as model:
        env["GOOGLE_GEMINI_BASE_URL"] = model.url
        ...
    model.requests  # every request, in order

Run it alone (``python tests/harnesses/standin_gemini.py``) to point a
Gemini CLI at it by hand; it prints its URL and logs each request's path.
"""

from __future__ import annotations

import contextlib
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

FINAL_ANSWER = "I reset the game and played two moves."
NO_TOOLS_ANSWER = "No game tools were declared to me."


@dataclass
class Request:
    """One request Gemini CLI sent: ``/v1beta/models/{model}:{method}`` and its JSON body."""

    path: str
    model: str
    method: str
    body: dict[str, Any]
    answer: dict[str, Any] = field(default_factory=dict)

    def declared(self) -> list[str]:
        """The function names the request declares to the model."""
        return [
            d["name"]
            for tool in self.body.get("tools") or []
            for d in tool.get("functionDeclarations") or []
        ]

    def parts(self) -> list[dict[str, Any]]:
        """Every part of the conversation the request carries, in order."""
        return [p for c in self.body.get("contents") or [] for p in c.get("parts") or []]


def function_responses(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p["functionResponse"] for p in parts if "functionResponse" in p]


def inline_images(value: Any) -> list[dict[str, Any]]:
    """Every ``inlineData`` image anywhere in ``value`` (a part, a response, a body)."""
    found: list[dict[str, Any]] = []
    if isinstance(value, dict):
        data = value.get("inlineData")
        if isinstance(data, dict) and str(data.get("mimeType", "")).startswith("image/"):
            found.append(data)
        for item in value.values():
            found += inline_images(item)
    elif isinstance(value, list):
        for item in value:
            found += inline_images(item)
    return found


class StandinGemini:
    """The stand-in server, on a free loopback port, in a thread of this process.

    ``script``: the function calls to make, as (tool, arguments); ``tool`` is the
    MCP tool's own name, matched against the declared names by their ending
    (``reset`` matches ``mcp_atari_reset``).
    """

    def __init__(self, script: list[tuple[str, dict[str, Any]]], answer: str = FINAL_ANSWER):
        self.script = script
        self.answer = answer
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        standin = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._send(404, {"error": {"code": 404, "message": "not here"}})

            def do_POST(self) -> None:
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # CLI gone
                    self._answer()

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"raw": raw.decode(errors="replace")}
                path = urlsplit(self.path).path
                model, _, method = path.rsplit("/", 1)[-1].partition(":")
                request = Request(self.path, model, method, body)
                with standin._lock:
                    standin.requests.append(request)
                if method == "countTokens":
                    self._send(200, {"totalTokens": len(raw) // 4})
                elif method in ("generateContent", "streamGenerateContent"):
                    request.answer = standin.respond(request)
                    if "alt=sse" in self.path:
                        self._send_sse(request.answer)
                    else:
                        self._send(200, request.answer)
                else:
                    self._send(404, {"error": {"code": 404, "message": f"no {method} here"}})

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _send_sse(self, payload: dict[str, Any]) -> None:
                data = f"data: {json.dumps(payload)}\r\n\r\n".encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> StandinGemini:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    # -- the model's side ------------------------------------------------------------------

    def resolve(self, declared: list[str], tool: str) -> str | None:
        """The declared name of the script's ``tool`` (``reset`` -> ``mcp_atari_reset``)."""
        for name in declared:
            if name == tool or name.endswith(f"_{tool}"):
                return name
        return None

    def respond(self, request: Request) -> dict[str, Any]:
        """The model's next turn for a (generate or stream) request."""
        config = request.body.get("generationConfig") or {}
        if config.get("responseMimeType") == "application/json":  # a utility call (routing)
            schema = config.get("responseJsonSchema") or config.get("responseSchema") or {}
            return text_turn(json.dumps(schema_instance(schema)))
        declared = request.declared()
        names = [self.resolve(declared, tool) for tool, _ in self.script]
        if not declared or None in names:
            return text_turn(NO_TOOLS_ANSWER if self.script else self.answer)
        made = sum(1 for p in request.parts() if "functionCall" in p)
        if made < len(self.script):
            return call_turn(str(names[made]), self.script[made][1])
        return text_turn(self.answer)

    def main_requests(self) -> list[Request]:
        """The requests of the agent loop (those that declared tools)."""
        return [r for r in self.requests if r.body.get("tools")]


def schema_instance(schema: dict[str, Any]) -> Any:
    """The plainest value a JSON schema (OpenAPI or JSON Schema spelling) accepts: what
    the CLI's utility calls (its model router's classifier) parse."""
    if "enum" in schema:
        return schema["enum"][0]
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        properties = schema.get("properties") or {}
        return {
            name: schema_instance(sub)
            for name, sub in properties.items()
            if name in schema.get("required", properties)
        }
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    if kind == "boolean":
        return False
    return "standin"


def usage() -> dict[str, int]:
    return {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}


def text_turn(text: str) -> dict[str, Any]:
    return {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": text}]},
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": usage(),
        "modelVersion": "standin",
    }


def call_turn(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [{"functionCall": {"name": name, "args": args}}],
                },
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": usage(),
        "modelVersion": "standin",
    }


if __name__ == "__main__":
    import time

    with StandinGemini([("reset", {"seed": 0}), ("fire", {}), ("right", {})]) as standin:
        print(f"GOOGLE_GEMINI_BASE_URL={standin.url}", flush=True)
        seen = 0
        try:
            while True:
                time.sleep(0.2)
                for r in standin.requests[seen:]:
                    print(r.path, r.declared()[:8], flush=True)
                seen = len(standin.requests)
        except KeyboardInterrupt:
            pass

"""A hostile OpenEnv server, for ``uvicorn tests.openenv_hostile:app`` in a test's
subprocess: it speaks as much of OpenEnv's protocol as ``serve openenv --url`` uses
(``GET /schema``, ``/metadata``, ``/health``; reset, step, state and close on
``/ws``), and attacks the bridge where a test asks it to.

At start-up (``HOSTILE_SCHEMA``): ``ok``, a plain schema; ``drip``, ``/schema``
sent a byte every half second, forever; ``huge``, a 1.5 GB ``/schema``, streamed.

In a session, the step's ``message`` picks the answer: ``png-bomb``, a 21 KiB PNG
declaring 13300x13300 pixels (as a ``data:`` URL in ``screen_image``);
``pixels-80mb``, an 80 MB pixel list; ``values-bomb``, 30 MB of empty lists (under
the bridge's byte limit: 20 million values); ``values-besides-pixels``, 4.19 million
values, none of them pixels (under its value limit); ``values-passing``, as many as
it passes on (1.05 million); ``screenshot``, an honest 1280x720 screenshot as nested
lists (OpenEnv's BrowserGym sends them so); ``extra``, its answer and then one more
message nobody asked for; anything else is echoed.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import struct
import zlib
from collections.abc import AsyncIterator
from functools import cache
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

#: The picture's side: 176,890,000 pixels, just under twice PIL's MAX_IMAGE_PIXELS (PIL
#: only warns), 530 MB as RGB, from 21 KiB of PNG.
BOMB_SIDE = 13300
PIXELS_80MB = 40_000_000  # "0," each: 80 MB of JSON
EMPTY_LISTS = 10_000_000  # "[]," each: 30 MB of JSON, 20 million values
HUGE_SCHEMA = 1536 * 1024 * 1024
SCREENSHOT = (720, 1280, 3)
#: Answers within the bridge's byte and value limits, as large as they may be (each
#: ``item`` ``count`` times), and what the bridge counts in them: 4.19 M values, past
#: --max-observation-values (none are pixels); 1.05 M, just within it.
NEAR_CAP_ATTACKS = {
    "values-besides-pixels": ('{"a":[1]}', 698_000),  # 6 values each (quotes count)
    "values-passing": ('{"a":"bc"}', 149_700),  # 7 values each
}

SCHEMA: dict[str, Any] = {
    "action": {
        "title": "HostileAction",
        "type": "object",
        "properties": {"message": {"type": "string"}},
        "required": ["message"],
    },
    "observation": {
        "title": "HostileObservation",
        "type": "object",
        "properties": {
            "echoed": {"type": "string"},
            "step": {"type": "integer"},
            "screen_image": {"type": "string"},
            "screen": {"type": "array", "items": {"type": "integer"}},
            "screen_shape": {"type": "array", "items": {"type": "integer"}},
            "screenshot": {"type": "array"},
            "junk": {"type": "array"},
        },
    },
    "state": {"type": "object", "properties": {"step_count": {"type": "integer"}}},
}


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


@cache
def png_bomb() -> bytes:
    """A 1-bit PNG of BOMB_SIDE x BOMB_SIDE black pixels: 21 KiB."""
    row = b"\x00" * (1 + (BOMB_SIDE + 7) // 8)  # filter byte, then the packed bits
    packer = zlib.compressobj(9)
    idat = b"".join(packer.compress(row) for _ in range(BOMB_SIDE)) + packer.flush()
    header = struct.pack(">IIBBBBB", BOMB_SIDE, BOMB_SIDE, 1, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", idat)
        + _chunk(b"IEND", b"")
    )


def _observation(fields: dict[str, Any], step: int) -> str:
    body = {"observation": {**fields, "step": step}, "reward": 0.0, "done": False}
    return json.dumps({"type": "observation", "data": body})


@cache
def _pixels_80mb() -> str:
    side = int((PIXELS_80MB // 3) ** 0.5)
    count = side * side * 3
    pixels = "[" + "0," * (count - 1) + "0]"
    data = f'{{"observation": {{"screen": {pixels}, "screen_shape": [{side}, {side}, 3]}}}}'
    return '{"type": "observation", "data": ' + data + "}"


@cache
def _values_bomb() -> str:
    junk = "[" + "[]," * (EMPTY_LISTS - 1) + "[]]"
    return '{"type": "observation", "data": {"observation": {"junk": ' + junk + "}}}"


@cache
def _near_cap(item: str, count: int) -> str:
    """An observation of ``item`` ``count`` times."""
    junk = "[" + ",".join([item] * count) + "]"
    return '{"type": "observation", "data": {"observation": {"junk": ' + junk + "}}}"


@cache
def _screenshot() -> str:
    height, width, _ = SCREENSHOT
    row = [[(x * 7) % 256, (x * 3) % 256, 128] for x in range(width)]
    return _observation({"screenshot": [row] * height}, 1)


async def schema(request: Request) -> Response:
    mode = os.environ.get("HOSTILE_SCHEMA", "ok")
    if mode == "drip":

        async def drip() -> AsyncIterator[bytes]:
            yield b'{"action": '
            while True:
                await asyncio.sleep(0.5)
                yield b" "

        return StreamingResponse(drip(), media_type="application/json")
    if mode == "huge":

        async def huge() -> AsyncIterator[bytes]:
            yield b'{"action": {"description": "'
            block = b"x" * (1024 * 1024)
            for _ in range(HUGE_SCHEMA // len(block)):
                yield block
            yield b'"}, "observation": {}}'

        return StreamingResponse(huge(), media_type="application/json")
    return JSONResponse(SCHEMA)


async def metadata(request: Request) -> Response:
    return JSONResponse({"name": "hostile", "description": "An OpenEnv server that attacks."})


async def health(request: Request) -> Response:
    return JSONResponse({"status": "healthy"})


async def session(ws: WebSocket) -> None:
    await ws.accept()
    steps = 0
    try:
        while True:
            message = json.loads(await ws.receive_text())
            kind = message.get("type")
            if kind == "close":
                await ws.close()
                return
            if kind == "state":
                await ws.send_text(json.dumps({"type": "state", "data": {"step_count": steps}}))
                continue
            if kind == "reset":
                steps = 0
                await ws.send_text(_observation({"echoed": ""}, steps))
                continue
            steps += 1
            said = str((message.get("data") or {}).get("message", ""))
            if said == "png-bomb":
                url = "data:image/png;base64," + base64.b64encode(png_bomb()).decode()
                await ws.send_text(_observation({"screen_image": url}, steps))
            elif said == "pixels-80mb":
                await ws.send_text(_pixels_80mb())
            elif said == "values-bomb":
                await ws.send_text(_values_bomb())
            elif said in NEAR_CAP_ATTACKS:
                await ws.send_text(_near_cap(*NEAR_CAP_ATTACKS[said]))
            elif said == "screenshot":
                await ws.send_text(_screenshot())
            elif said == "extra":
                await ws.send_text(_observation({"echoed": "extra"}, steps))
                await ws.send_text(_observation({"echoed": "nobody asked"}, steps))
            else:
                await ws.send_text(_observation({"echoed": said}, steps))
    except WebSocketDisconnect:
        return


@contextlib.asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    """Every answer made before the port opens: making them while a test times the
    bridge would stall this server's loop, not the bridge."""
    if os.environ.get("HOSTILE_SCHEMA", "ok") == "ok":
        for make in (png_bomb, _pixels_80mb, _values_bomb, _screenshot):
            make()
        for item, count in NEAR_CAP_ATTACKS.values():
            _near_cap(item, count)
    yield


app = Starlette(
    lifespan=lifespan,
    routes=[
        Route("/schema", schema),
        Route("/metadata", metadata),
        Route("/health", health),
        WebSocketRoute("/ws", session),
    ],
)

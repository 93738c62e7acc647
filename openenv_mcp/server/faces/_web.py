"""The web page: play, watch live episodes, inspect the tools, replay recordings.

The page (``openenv_mcp/web/``: static HTML, JS and CSS, no build step, nothing
from a CDN) is just another MCP client: it plays and inspects through ``/mcp``
like any client, each tab with episodes of its own. What it adds is read-only:

* ``GET /web/`` the page, ``GET /web/static/{file}`` its script and style;
* ``GET /web/api/info``: the environment's spec and how the server is served;
* ``GET /web/api/episodes``: the live (and recently closed) episodes, by watch id
  (on a server of seats, each row also names its seat and its game by a label: the
  seats of one game share it, and it is neither the game's handle nor a seat's);
* ``GET /web/api/episodes/{watch_id}/events``: one episode's calls as server-sent
  events, with its frame at most :data:`FRAME_RATE` times a second;
* ``GET /web/api/recordings`` (with ``--record``), ``.../{rid}`` and
  ``.../{rid}/frames/{i}``: recorded episodes, step by step, frame by frame.

Watching never needs an episode handle and never yields one (see :mod:`._feed`);
recordings are named by a hash of their path (unique across subdirectories).
These routes sit behind the same Host/Origin guard, bearer token and loopback
default as ``/mcp``; a browser that opened ``/web/?token=T`` gets a cookie that
carries the token for the page's own requests (see
:class:`openenv_mcp.server.transports._http.GuardMiddleware`).
"""

from __future__ import annotations

import contextlib
import hashlib
import html
import logging
import math
import socket
import time
from collections.abc import AsyncIterator, Iterator
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
import orjson
import pybase64
import uvicorn
from fastmcp import FastMCP
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from openenv_mcp._util.version import __version__
from openenv_mcp.codecs import encode_png
from openenv_mcp.errors import ArgumentError
from openenv_mcp.server.faces._feed import Feed, Watched

if TYPE_CHECKING:
    from openenv_mcp.server._app import EnvApp

__all__ = [
    "FRAME_RATE",
    "TOKEN_COOKIE",
    "WEB_PATH",
    "WebPage",
    "bind_viewer",
    "mount_web",
    "recording_files",
    "run_viewer",
]

log = logging.getLogger("openenv_mcp.server")

#: Where the page is served.
WEB_PATH = "/web"
#: The cookie that carries the bearer token for the page's own requests.
TOKEN_COOKIE = "openenv_mcp_token"
#: Most frames a second sent to one watcher.
FRAME_RATE = 15
#: Seconds between keep-alive comments on a quiet event stream.
HEARTBEAT = 15.0
#: Most recordings listed (the newest).
MAX_LISTED = 500
#: The page's files (and only these are served).
STATIC = {"app.js": "text/javascript", "app.css": "text/css"}
#: No inline script or style, nothing from elsewhere: the page's own files only.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
}


def _json(value: Any, status: int = 200) -> Response:
    body = orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY, default=repr)
    return Response(
        body,
        status,
        media_type="application/json",
        headers={**_HEADERS, "cache-control": "no-store"},
    )


def _error(status: int, message: str) -> Response:
    return _json({"error": message}, status)


def _asset(name: str) -> bytes:
    return resources.files("openenv_mcp").joinpath("web", name).read_bytes()


def _sse(event: str, data: Any) -> bytes:
    return b"event: " + event.encode() + b"\ndata: " + orjson.dumps(data, default=repr) + b"\n\n"


class WebPage:
    """The web routes of one served environment."""

    def __init__(self, app: EnvApp, token: str | None) -> None:
        self.app = app
        self.token = token
        if app.table.feed is None:
            app.table.feed = Feed()
        self.feed: Feed = app.table.feed
        record = app.settings.record
        self.record_dir = None if record is None else Path(record).resolve()
        self._index = _asset("index.html").decode()
        #: Each watched seat's game label and seat, kept past its close (seats only).
        self._seats: dict[str, tuple[str, str]] = {}

    def routes(self) -> list[Route]:
        """Every route of the page (each also behind the server's HTTP guard)."""
        api = f"{WEB_PATH}/api"
        return [
            Route(WEB_PATH, self.redirect, methods=["GET"]),
            Route(f"{WEB_PATH}/", self.index, methods=["GET"]),
            Route(f"{WEB_PATH}/static/{{name}}", self.static, methods=["GET"]),
            Route(f"{api}/info", self.info, methods=["GET"]),
            Route(f"{api}/episodes", self.episodes, methods=["GET"]),
            Route(f"{api}/episodes/{{watch_id}}", self.episode, methods=["GET"]),
            Route(f"{api}/episodes/{{watch_id}}/events", self.events, methods=["GET"]),
            Route(f"{api}/episodes/{{watch_id}}/frame", self.frame, methods=["GET"]),
            Route(f"{api}/recordings", self.recordings, methods=["GET"]),
            Route(f"{api}/recordings/{{rid}}", self.recording, methods=["GET"]),
            Route(f"{api}/recordings/{{rid}}/frames/{{index:int}}", self.recorded_frame),
        ]

    # -- the page ----------------------------------------------------------------------------

    async def redirect(self, request: Request) -> Response:
        query = request.url.query
        return RedirectResponse(f"{WEB_PATH}/" + (f"?{query}" if query else ""), 307)

    async def index(self, request: Request) -> Response:
        # The guard let this request in, so it holds the token (when one is set): the
        # page carries it to /mcp in an Authorization header, and its own static and
        # feed requests in a cookie that no other site's page can send (SameSite).
        token = self.token or ""
        page = self._index.replace("{{token}}", html.escape(token, quote=True))
        page = page.replace("{{title}}", html.escape(self.app.spec.title))
        response = Response(
            page, media_type="text/html", headers={**_HEADERS, "cache-control": "no-store"}
        )
        if token:
            response.set_cookie(
                TOKEN_COOKIE, token, path=WEB_PATH, httponly=True, samesite="strict"
            )
        return response

    async def static(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in STATIC:
            return _error(404, f"no file {name!r}; the page's files are {sorted(STATIC)}")
        return Response(
            _asset(name), media_type=STATIC[name], headers={**_HEADERS, "cache-control": "no-cache"}
        )

    async def info(self, request: Request) -> Response:
        app = self.app
        return _json(
            {
                "server": f"openenv-{app.env_cls.name}",
                "version": __version__,
                "spec": app.spec_json(),
                "instructions": app.instructions(),
                "recording": self.record_dir is not None,
                "mcp_path": "/mcp",
                "frame_rate": FRAME_RATE,
                "seats": self._seats_info(),
            }
        )

    def _seats_info(self) -> dict[str, Any] | None:
        """How the page takes a seat: the seats clients drive, every player, the turn
        timeout (``None``: this server serves no seats)."""
        tables = self.app.handlers.tables
        if tables is None:
            return None
        return {
            "clients": list(tables.clients),
            "players": list(tables.agents),
            "turn_timeout": self.app.settings.turn_timeout,
        }

    # -- watching ----------------------------------------------------------------------------

    async def episodes(self, request: Request) -> Response:
        rows = self.feed.rows()
        if self.app.handlers.tables is not None:
            for row in rows:
                game, seat = self._seat_of(row["watch_id"])
                row["game"], row["seat"] = game, seat
        return _json({"episodes": rows})

    def _seat_of(self, watch_id: str) -> tuple[str | None, str | None]:
        """A watched seat's game label and seat (``None``s: not a seat's episode)."""
        known = self._seats.get(watch_id)
        if known is not None:
            return known
        tables, watched = self.app.handlers.tables, self.feed.get(watch_id)
        found = None if tables is None or watched is None else tables.of_episode(watched.episode_id)
        if found is None:
            return None, None
        table, seat = found
        # A label, not the handle: a watcher may group seats by it and join nothing with it.
        label = "game-" + hashlib.blake2b(table.id.encode(), digest_size=6).hexdigest()
        self._seats[watch_id] = (label, seat)
        if len(self._seats) > 4 * (len(self.feed.by_watch) + 64):
            live = set(self.feed.by_watch)
            self._seats = {w: v for w, v in self._seats.items() if w in live}
        return label, seat

    def _watched(self, request: Request) -> Watched | Response:
        """The episode a watcher's request names, or the 404 that says why not."""
        watch_id = request.path_params["watch_id"]
        watched = self.feed.get(watch_id)
        if watched is None:
            return _error(
                404,
                f"no episode to watch with id {watch_id!r}: it closed a while ago or never "
                "existed; GET /web/api/episodes lists them",
            )
        return watched

    async def episode(self, request: Request) -> Response:
        watched = self._watched(request)
        if isinstance(watched, Response):
            return watched
        return _json({"episode": watched.row(), "history": list(watched.history)})

    async def frame(self, request: Request) -> Response:
        watched = self._watched(request)
        if isinstance(watched, Response):
            return watched
        png = await self._frame_of(watched)
        if png is None:
            return _error(404, "this episode has no frame to show (not reset yet, or closed)")
        return Response(
            png, media_type="image/png", headers={**_HEADERS, "cache-control": "no-store"}
        )

    async def _frame_of(self, watched: Watched) -> bytes | None:
        episode = self.app.table.episodes.get(watched.episode_id)
        return None if episode is None else await self.app.table.peek_frame(episode)

    async def events(self, request: Request) -> Response:
        watched = self._watched(request)
        if isinstance(watched, Response):
            return watched
        try:
            after = int(request.query_params.get("after", "0"))
        except ValueError:
            return _error(
                400, f"after must be an event number, got {request.query_params['after']!r}"
            )
        return StreamingResponse(
            self._stream(watched, after),
            media_type="text/event-stream",
            headers={**_HEADERS, "cache-control": "no-store", "x-accel-buffering": "no"},
        )

    async def _stream(self, watched: Watched, after: int) -> AsyncIterator[bytes]:
        """One watcher's events: what it missed, then each call as it happens, batched
        (at most every 50 ms), and the frame whenever it changed (at most FRAME_RATE/s)."""
        interval = 1.0 / FRAME_RATE
        async with self.feed.watch(watched) as receive:
            history = [e for e in watched.history if e["seq"] > after]
            yield _sse("hello", {"episode": watched.row(), "history": history})
            framed, framed_at, quiet_since = -1, 0.0, time.monotonic()
            while True:
                now = time.monotonic()
                if watched.seq != framed and now - framed_at >= interval:
                    framed, framed_at = watched.seq, now
                    png = await self._frame_of(watched)
                    if png is not None:
                        image = "data:image/png;base64," + pybase64.b64encode(png).decode()
                        yield _sse("frame", {"seq": framed, "step": watched.step, "image": image})
                wait = (
                    HEARTBEAT if watched.seq == framed else max(0.0, interval - (now - framed_at))
                )
                batch: list[dict[str, Any]] = []
                ended = False
                with anyio.move_on_after(wait):
                    try:
                        batch.append(await receive.receive())
                        while len(batch) < 1000:
                            batch.append(receive.receive_nowait())
                    except anyio.WouldBlock:
                        pass
                    except anyio.EndOfStream:
                        ended = True
                if batch:
                    quiet_since = time.monotonic()
                    yield _sse("calls", {"events": batch, "dropped": watched.dropped})
                if ended:
                    yield _sse("closed", {"episode": watched.row()})
                    return
                if not batch and time.monotonic() - quiet_since >= HEARTBEAT:
                    quiet_since = time.monotonic()
                    yield b": keep-alive\n\n"
                await anyio.sleep(0.05)

    # -- recordings --------------------------------------------------------------------------

    def _recording_files(self) -> dict[str, Path]:
        return recording_files(self.record_dir)

    def _recording_path(self, request: Request) -> Path | Response:
        """The recording a request names, or the 404 that says why not."""
        if self.record_dir is None:
            return _error(404, "this server records nothing: serve it with --record DIR")
        rid = request.path_params["rid"]
        path = self._recording_files().get(rid)
        if path is None:
            return _error(404, f"no recording {rid!r}; GET /web/api/recordings lists them")
        return path

    async def recordings(self, request: Request) -> Response:
        if self.record_dir is None:
            return _json({"recording": False, "recordings": []})
        listed = await anyio.to_thread.run_sync(self._list_recordings)
        return _json({"recording": True, "recordings": listed})

    def _list_recordings(self) -> list[dict[str, Any]]:
        from openenv_mcp.recording import read_recording

        listed = []
        for rid, path in self._recording_files().items():
            try:
                rec = read_recording(path, observations=False)
            except (ArgumentError, OSError, ValueError, KeyError):
                continue  # not a recording (collect's index), or being written
            listed.append(
                {
                    "id": rid,
                    "env": rec.start.get("env"),
                    "title": rec.start.get("title"),
                    "seed": rec.start.get("seed"),
                    "started": rec.start.get("time"),
                    "steps": len(rec.steps),
                    "episode_return": rec.episode_return,
                    "status": rec.end.get("status") if rec.end else "incomplete",
                }
            )
        return listed

    async def recording(self, request: Request) -> Response:
        path = self._recording_path(request)
        if isinstance(path, Response):
            return path
        return _json(await anyio.to_thread.run_sync(self._read, path))

    def _read(self, path: Path) -> dict[str, Any]:
        from openenv_mcp.recording import iter_frames, read_recording

        rec = read_recording(path, observations=False)
        actions = self.app.prototype.action_set
        total = 0.0
        steps = []
        for s in rec.steps:
            total += s.reward
            name = None
            if actions is not None:
                try:
                    name = actions.by_id(actions.resolve(s.action)).name
                except Exception:  # an action of another env's recording
                    name = None
            steps.append(
                {
                    "step": s.index,
                    "action": s.action if name is None else name,
                    "reward": s.reward,
                    "episode_return": total,
                    "rewards": s.rewards,
                    "terminated": s.terminated,
                    "truncated": s.truncated,
                    "info": {
                        k: v
                        for k, v in s.info.items()
                        if isinstance(v, bool | int | str)
                        or (isinstance(v, float) and math.isfinite(v))
                    },
                }
            )
        frames = sum(1 for _ in iter_frames(path))
        return {
            "env": rec.start.get("env"),
            "title": rec.start.get("title"),
            "seed": rec.start.get("seed"),
            "options": rec.start.get("options"),
            "status": rec.end.get("status") if rec.end else "incomplete",
            "problem": rec.problem,
            "steps": steps,
            "frames": frames,
        }

    async def recorded_frame(self, request: Request) -> Response:
        path = self._recording_path(request)
        if isinstance(path, Response):
            return path
        index = request.path_params["index"]
        png = await anyio.to_thread.run_sync(self._frame_at, path, index)
        if png is None:
            return _error(404, f"no frame {index} in this recording")
        return Response(
            png, media_type="image/png", headers={**_HEADERS, "cache-control": "max-age=3600"}
        )

    @staticmethod
    def _frame_at(path: Path, index: int) -> bytes | None:
        from openenv_mcp.recording import iter_frames

        for k, frame in enumerate(iter_frames(path)):
            if k == index:
                return encode_png(frame)
        return None


def recording_files(root: Path | None) -> dict[str, Path]:
    """The newest recorded files under ``root`` by id (a hash of the path, unique across
    subdirectories): what the web page and the MCP App's view list and open."""
    if root is None or not root.is_dir():
        return {}
    files = sorted(root.rglob("*.jsonl"), key=lambda p: p.stat().st_mtime, reverse=True)
    return {hashlib.sha256(str(p).encode()).hexdigest()[:20]: p for p in files[:MAX_LISTED]}


def mount_web(server: FastMCP, app: EnvApp, token: str | None) -> None:
    """Serve the page beside ``/mcp`` on ``server``'s HTTP app (and switch its feed on)."""
    for route in WebPage(app, token).routes():
        server.custom_route(route.path, methods=sorted(route.methods or ["GET"]))(route.endpoint)


class _Viewer(uvicorn.Server):
    """uvicorn for the viewer beside a stdio server: the stdio server owns the signals."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def bind_viewer(port: int) -> socket.socket | None:
    """A loopback socket for a stdio server's viewer, or ``None`` (and why, logged)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as exc:
        sock.close()
        log.error("no web viewer: cannot listen on 127.0.0.1:%d (%s); serving on", port, exc)
        return None
    sock.listen(64)
    sock.setblocking(False)
    return sock


async def run_viewer(server: FastMCP, app: EnvApp, sock: socket.socket) -> None:
    """Serve the page (and ``/mcp``) on ``sock`` while a stdio server runs; a person
    watches the agent that is playing over stdio. Loopback only, no token (as ``/mcp``
    on loopback), Host and Origin checked."""
    from openenv_mcp.server.transports._http import guarded_app

    mount_web(server, app, None)
    http = guarded_app(server, "127.0.0.1", None, app.direct_calls(server, "streamable-http"))
    port = sock.getsockname()[1]
    log.warning("watch this server in a browser: http://127.0.0.1:%d%s/", port, WEB_PATH)
    from openenv_mcp.server.transports._limits import http_limits, uvicorn_options

    options = uvicorn_options(http_limits(app.settings))
    viewer = _Viewer(uvicorn.Config(http, lifespan="on", access_log=False, **options))
    try:
        await viewer.serve(sockets=[sock])
    finally:
        viewer.should_exit = True

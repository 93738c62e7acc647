"""OpenEnv's protocol beside ``/mcp`` (``serve ENV --http --openenv``), over the same episodes.

OpenEnv's clients (``EnvClient``, ``GenericEnvClient``, and the trainers built on
them) and its runtime validator (``openenv validate --url``) reach a server by a
base URL and append their paths. Here that base is ``/openenv``:

* ``GET  /openenv/health``, ``/metadata``, ``/schema``, ``/state``, ``/openapi.json``;
* ``POST /openenv/reset``, ``/step`` (stateful: ``/reset`` answers an ``episode_id``
  that ``/step`` and ``/state`` take; OpenEnv's own HTTP routes forget each call);
* ``WS   /openenv/ws``: OpenEnv's session protocol (``reset``/``step``/``state``/
  ``close`` messages), one episode per socket, closed with the socket;
* ``POST /openenv/mcp``: OpenEnv's plain JSON-RPC route (``tools/list``,
  ``tools/call`` of this server's tools; anything else a JSON-RPC error, 200);
* OpenEnv's Task API (``/openenv/list_environments``, ``/openenv/{env}/splits``,
  ``/tasks``, ``/num_tasks``, ``/task``, ``/task_range``): the env's task set
  (:mod:`._openenv_tasks`); ``reset(split=..., index=...)`` starts a task.

Why under ``/openenv`` and not at the root: OpenEnv's validator POSTs ``{}`` to
``BASE/mcp`` and wants 200 with a JSON-RPC body, while the standard ``/mcp``
(Streamable HTTP) must refuse such a request; OpenEnv's clients take any base URL.

Observations travel as OpenEnv clients decode them with no code of ours: JSON.
An array observation (a frame) is a flat list of numbers beside its shape
(``observation`` and ``observation_shape``), as OpenEnv's own Atari server sends
its ``screen`` and ``screen_shape``: a flat list of small integers parses about
twice as fast as nested rows, and makes no list per row for the client's
garbage collector. A client that can do better asks at reset: ``frames="zstd"``
or ``"raw"`` (our compact arrays), or ``"png"`` (a ``data:`` URL in ``frame``).

Where the served env is the namesake of one of OpenEnv's (it sets ``openenv_models``:
atari, chess, coding, openspiel), a session speaks that env's models exactly unless its
reset asks ``frames`` (:mod:`._openenv_namesake`), so OpenEnv's typed clients run
unchanged; ``list_tools``/``call_tool`` steps (OpenEnv's ``MCPToolClient``) are answered
in either form, with OpenEnv's echo tools on our echo.

Every episode operation goes through :class:`Episodes`, the one narrow use of
the server's handlers here. HTTP routes sit behind the server's Host/Origin
guard and token like ``/mcp``, and the socket's handshake meets the same rules in
:class:`openenv_mcp.server.transports._http.GuardMiddleware` (Host, Origin, token, the
per-client caps). OpenEnv's clients cannot set headers, so a token may also come as
HTTP Basic credentials (``http://any:TOKEN@host``).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from openenv_mcp._util.version import __version__
from openenv_mcp.codecs import Frames
from openenv_mcp.errors import (
    ArgumentError,
    EpisodeRequired,
    OpenEnvError,
    ResetNeeded,
    UnknownEpisode,
)
from openenv_mcp.server.episodes._handlers import direct_transport
from openenv_mcp.server.faces import _openenv_wire as wire
from openenv_mcp.server.faces._openenv_namesake import (
    TOOL_CALLS,
    Namesake,
    decoded,
    done,
    tool_error,
    tool_result,
)
from openenv_mcp.server.faces._openenv_tasks import TaskRoutes, session_routes
from openenv_mcp.server.tools._results import error_text
from openenv_mcp.server.transports._http import OPENENV_PATH
from openenv_mcp.spaces import is_array_space
from openenv_mcp.wire.exactjson import loads_exact

if TYPE_CHECKING:
    from fastmcp import FastMCP

    from openenv_mcp.openenv import OpenEnvTool
    from openenv_mcp.server._app import EnvApp

__all__ = ["Episodes", "OpenEnvRoutes", "mount_openenv"]

# -- the episodes, through the server's handlers ------------------------------------------


@dataclass
class _ResetCall:
    """``reset``'s arguments, as the handlers read them."""

    episode_id: str | None
    seed: int | None
    options: dict[str, Any] | None
    frames: Frames
    new_episode: bool = False
    shard: str | None = None


@dataclass
class _EpisodeCall:
    episode_id: str
    frames: Frames = "none"


class Episodes:
    """The server's episodes as OpenEnv's routes use them: reset, step, state, close.

    Calls run as calls over HTTP do (a shared transport: every call names its
    episode), so these episodes are the ones ``/mcp`` sees, and the other way round.
    """

    def __init__(self, app: EnvApp) -> None:
        self.app = app

    async def _call(self, fn: Any, *args: Any) -> dict[str, Any]:
        token = direct_transport.set("streamable-http")
        try:
            reply = await fn(*args)
        finally:
            direct_transport.reset(token)
        view: dict[str, Any] = dict(reply.structured or {})
        png = next((c["data"] for c in reply.content if c.get("type") == "image"), None)
        if png is not None:
            view["_png"] = png
        return view

    async def reset(
        self,
        episode_id: str | None,
        seed: int | None,
        options: dict[str, Any] | None,
        form: str,
        *,
        reclaimable: bool = False,
    ) -> dict[str, Any]:
        """Start a new episode (``episode_id`` ``None``) or restart one; a
        ``reclaimable`` one may be closed to make room for its client's next
        (:attr:`~openenv_mcp.server.episodes._episodes.Episode.reclaimable`)."""
        frames: Frames = "png" if form == "png" else "raw"  # the models' form: arrays
        call = _ResetCall(episode_id, seed, options or None, frames)
        view = await self._call(self.app.handlers.reset, call)
        episode = self.app.table.episodes.get(view["episode_id"])
        if reclaimable and episode is not None:
            episode.reclaimable = True
        return view

    async def step(self, episode_id: str, action: Any, form: str) -> dict[str, Any]:
        """One action."""
        frames: Frames = "png" if form == "png" else "raw"
        return await self._call(self.app.handlers.step, episode_id, action, frames, 1)

    async def state(self, episode_id: str) -> dict[str, Any]:
        """The episode's view, with its environment's state fields in ``info``."""
        return await self._call(self.app.handlers.state, _EpisodeCall(episode_id))

    async def close(self, episode_id: str) -> None:
        """Close it (an episode already gone is no error here)."""
        with contextlib.suppress(UnknownEpisode):
            await self._call(self.app.handlers.close, _EpisodeCall(episode_id))


# -- the routes --------------------------------------------------------------------------------


class OpenEnvRoutes:
    """OpenEnv's routes over one served environment."""

    def __init__(self, app: EnvApp) -> None:
        self.app = app
        self.episodes = Episodes(app)
        spec = app.spec
        self.array_obs = is_array_space(spec.observation_space)
        self.action_schema = {
            "type": "object",
            "title": f"{app.env_cls.__name__}Action",
            "description": "One action: its value under 'action' (metadata is accepted).",
            "properties": {
                "action": spec.action_schema,
                "metadata": {"type": "object", "additionalProperties": True},
            },
            "required": ["action"],
            "additionalProperties": False,
        }
        self.observation_schema = wire.observation_schema(app)
        made = app.env_cls.openenv_models
        self.namesake = Namesake(made(spec, app.config)) if made is not None else None
        #: The form a session speaks where it asks no ``frames``.
        self.default_form = (
            wire.MODELS if self.namesake is not None and self.namesake.speaks else "list"
        )

    def routes(self) -> list[BaseRoute]:
        return [
            Route("/health", self.health, methods=["GET"]),
            Route("/metadata", self.metadata, methods=["GET"]),
            Route("/schema", self.schema, methods=["GET"]),
            Route("/openapi.json", self.openapi, methods=["GET"]),
            Route("/reset", self.reset, methods=["POST"]),
            Route("/step", self.step, methods=["POST"]),
            Route("/state", self.state, methods=["GET"]),
            Route("/mcp", self.jsonrpc, methods=["POST"]),
            WebSocketRoute("/ws", self.websocket),
            *TaskRoutes(self.app).routes(),
        ]

    async def health(self, request: Request) -> Response:
        return wire.json_response({"status": "healthy"})

    async def metadata(self, request: Request) -> Response:
        return wire.json_response(
            {
                "name": self.app.spec.title,
                "description": self.app.env_cls.description,
                "version": __version__,
                "readme_content": None,
                "author": None,
                "documentation_url": None,
            }
        )

    def _schemas(self) -> dict[str, Any]:
        if self.default_form == wire.MODELS:
            assert self.namesake is not None
            return self.namesake.schemas()
        return {
            "action": self.action_schema,
            "observation": self.observation_schema,
            "state": wire.STATE_SCHEMA,
        }

    async def schema(self, request: Request) -> Response:
        return wire.json_response(self._schemas())

    async def openapi(self, request: Request) -> Response:
        schemas = self._schemas()
        return wire.json_response(wire.openapi(self.app, schemas["action"], schemas["observation"]))

    def speaker(self, form: str) -> Namesake | _Ours:
        """Who writes a session's actions, observations and states in ``form``: the
        namesake's models, or our own form."""
        if form == wire.MODELS:
            assert self.namesake is not None
            return self.namesake
        return _Ours(form, self.array_obs)

    async def _body(self, request: Request) -> dict[str, Any]:
        raw = await request.body()
        if not raw.strip():
            return {}
        try:
            body = loads_exact(raw)
        except ValueError as exc:
            raise wire.BadBody(f"expected a JSON object as the body, got no JSON ({exc})") from None
        if not isinstance(body, dict):
            raise wire.BadBody(f"expected a JSON object as the body, got {type(body).__name__}")
        return body

    async def reset(self, request: Request) -> Response:
        try:
            body = await self._body(request)
            seed, form, options = wire.split_reset(body, self.default_form)
            speaker = self.speaker(form)
            options = speaker.reset_options(options)
            view = await self.episodes.reset(None, seed, options, form, reclaimable=True)
        except OpenEnvError as exc:
            return wire.error_response(exc)
        answer = speaker.observation(view)
        if form == wire.MODELS:  # the models have no place for it: beside them
            answer["episode_id"] = view["episode_id"]
        return wire.json_response(answer)

    async def step(self, request: Request) -> Response:
        try:
            body = await self._body(request)
            episode_id = body.get("episode_id")
            if not isinstance(episode_id, str):
                raise EpisodeRequired(
                    "POST /step needs the episode_id that POST /reset answered (in its "
                    "observation), or use the /ws session, which keeps its own"
                )
            form = wire.form_of(body, self.default_form)
            speaker = self.speaker(form)
            view = await self.episodes.step(episode_id, speaker.action(body.get("action")), form)
        except OpenEnvError as exc:
            return wire.error_response(exc)
        return wire.json_response(speaker.observation(view))

    async def state(self, request: Request) -> Response:
        episode_id = request.query_params.get("episode_id")
        try:
            speaker = self.speaker(wire.form_of(dict(request.query_params), self.default_form))
            view = None if episode_id is None else await self.episodes.state(episode_id)
            return wire.json_response(speaker.state(view))
        except OpenEnvError as exc:
            return wire.error_response(exc)

    async def jsonrpc(self, request: Request) -> Response:
        """OpenEnv's plain JSON-RPC route: this server's tools, listed and called."""
        try:
            message = loads_exact(await request.body() or b"null")
        except ValueError:
            return wire.json_response(
                wire.rpc_error(None, -32700, "Parse error: the body is not JSON")
            )
        rid = message.get("id") if isinstance(message, dict) else None
        method = message.get("method") if isinstance(message, dict) else None
        if not (isinstance(message, dict) and message.get("jsonrpc") == "2.0" and method):
            return wire.json_response(
                wire.rpc_error(
                    rid,
                    -32600,
                    "Invalid Request: expected a JSON-RPC 2.0 request (tools/list or "
                    "tools/call). This is OpenEnv's JSON-RPC route; the standard MCP "
                    "endpoint (Streamable HTTP) is /mcp",
                )
            )
        tools = {t.name: t for t in self.app.tools}
        if method == "tools/list":
            listed = [
                {
                    "name": t.name,
                    "description": t.description or "",
                    "inputSchema": t.parameters,
                    "annotations": t.wire_annotations(),
                }
                for t in tools.values()
            ]
            return wire.json_response({"jsonrpc": "2.0", "id": rid, "result": {"tools": listed}})
        if method == "tools/call":
            params = message.get("params") or {}
            tool = tools.get(str(params.get("name"))) if isinstance(params, dict) else None
            if tool is None:
                return wire.json_response(
                    wire.rpc_error(rid, -32602, f"no tool {params.get('name')!r}")
                )
            token = direct_transport.set("streamable-http")
            try:
                reply = await tool.reply(params.get("arguments") or {})
            finally:
                direct_transport.reset(token)
            return wire.json_response({"jsonrpc": "2.0", "id": rid, "result": reply.wire()})
        return wire.json_response(
            wire.rpc_error(
                rid,
                -32601,
                f"Method not found: {method!r}; this route answers tools/list and "
                "tools/call (the full MCP protocol is at /mcp)",
            )
        )

    async def websocket(self, websocket: WebSocket) -> None:
        await websocket.accept()
        session = _Session(self, websocket)
        try:
            await session.run()
        except WebSocketDisconnect:
            pass
        finally:
            await session.end()


class _Session:
    """One OpenEnv socket: at most one episode, made at its first reset, closed with it."""

    def __init__(self, routes: OpenEnvRoutes, websocket: WebSocket) -> None:
        self.routes = routes
        self.websocket = websocket
        self.episode_id: str | None = None
        self.form = routes.default_form
        self.speaker = routes.speaker(self.form)

    async def run(self) -> None:
        while True:
            raw = await self.websocket.receive_text()
            try:
                message = loads_exact(raw.encode())
            except ValueError as exc:
                await self._send_error(f"Invalid JSON: {exc}", "INVALID_JSON")
                continue
            kind = message.get("type") if isinstance(message, dict) else None
            if kind == "close":
                return
            try:
                answer = await self._answer(kind, message)
            except OpenEnvError as exc:
                await self._send_error(error_text(exc), wire.error_code(exc))
                continue
            await self.websocket.send_text(wire.dumps(answer).decode())

    async def _answer(self, kind: Any, message: dict[str, Any]) -> dict[str, Any]:
        episodes, data = self.routes.episodes, message.get("data") or {}
        if kind == "reset":
            if not isinstance(data, dict):
                raise ArgumentError("reset's data must be an object of keyword arguments")
            seed, form, options = wire.split_reset(data, self.routes.default_form)
            speaker = self.routes.speaker(form)
            view = await episodes.reset(self.episode_id, seed, speaker.reset_options(options), form)
            self.episode_id, self.form, self.speaker = view["episode_id"], form, speaker
            return {"type": "observation", "data": speaker.observation(view)}
        if kind == "step":
            if isinstance(data, dict) and data.get("type") in TOOL_CALLS:
                return {"type": "observation", "data": await self._tool_call(data)}
            if self.episode_id is None:
                raise ResetNeeded("step before reset: send a reset message first")
            view = await episodes.step(self.episode_id, self.speaker.action(data), self.form)
            return {"type": "observation", "data": self.speaker.observation(view)}
        if kind == "state":
            state = None if self.episode_id is None else await episodes.state(self.episode_id)
            return {"type": "state", "data": self.speaker.state(state)}
        if kind == "mcp":
            raise ArgumentError(
                "MCP over this socket is not served: use the standard MCP endpoint, /mcp"
            )
        raise ArgumentError(f"Unknown message type: {kind!r} (reset, step, state, close)")

    async def _tool_call(self, data: dict[str, Any]) -> dict[str, Any]:
        """OpenEnv's MCP actions: the namesake's tools where it has them (each one step of
        this socket's episode, made at the first call if there is none), else this
        server's own tools (on this socket's episode, unless a call names another)."""
        namesake = self.routes.namesake
        tools = namesake.tools if namesake is not None and namesake.tools else None
        if data["type"] == "list_tools":
            listed = (
                [(t.name, t.description, t.input_schema) for t in tools.values()]
                if tools is not None
                else [(t.name, t.description or "", t.parameters) for t in self.routes.app.tools]
            )
            names = ("name", "description", "input_schema")
            return _no_step({"tools": [dict(zip(names, t, strict=True)) for t in listed]})
        name, arguments = str(data.get("tool_name", "")), data.get("arguments") or {}
        if not isinstance(arguments, dict):
            return _no_step(tool_error(name, "invalid_args", "arguments must be an object"))
        if tools is not None:
            return await self._namesake_tool(tools, name, arguments)
        return await self._our_tool(name, arguments)

    async def _our_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        ours = {t.name: t for t in self.routes.app.tools}
        tool = ours.get(name)
        if tool is None:
            known = ", ".join(ours)
            return _no_step(tool_error(name, "tool_not_found", f"no tool {name!r}; tools: {known}"))
        if self.episode_id is not None and "episode_id" in tool.parameters.get("properties", {}):
            arguments = {"episode_id": self.episode_id, **arguments}
        token = direct_transport.set("streamable-http")
        try:
            reply = await tool.reply(arguments)
        finally:
            direct_transport.reset(token)
        if reply.is_error:
            message = " ".join(c.get("text", "") for c in reply.content).strip()
            return _no_step(tool_error(name, "execution_error", message))
        structured = reply.structured or {}
        if name == "reset" and isinstance(structured.get("episode_id"), str):
            self.episode_id = structured["episode_id"]  # the socket's episode from now on
        observation = tool_result(name, structured, structured, reply.content)
        return {"observation": observation, "reward": structured.get("reward"), "done": False}

    async def _namesake_tool(
        self, tools: dict[str, OpenEnvTool], name: str, arguments: dict[str, Any]
    ) -> dict[str, Any]:
        tool = tools.get(name)
        if tool is None:
            known = ", ".join(tools)
            return _no_step(tool_error(name, "tool_not_found", f"no tool {name!r}; tools: {known}"))
        missing = [k for k in tool.input_schema.get("required", []) if k not in arguments]
        if missing:
            return _no_step(tool_error(name, "invalid_args", f"{name} needs {', '.join(missing)}"))
        episodes = self.routes.episodes
        try:
            if self.episode_id is None:
                self.episode_id = (await episodes.reset(None, None, None, self.form))["episode_id"]
            view = decoded(await episodes.step(self.episode_id, tool.action(arguments), "raw"))
        except OpenEnvError as exc:  # the tool's failure, told as OpenEnv's tools tell it
            kind = "invalid_args" if isinstance(exc, ArgumentError) else "execution_error"
            return _no_step(tool_error(name, kind, error_text(exc)))
        return {
            "observation": tool_result(name, tool.result(view)),
            "reward": view.get("reward"),
            "done": done(view),
        }

    async def _send_error(self, message: str, code: str) -> None:
        error = {"type": "error", "data": {"message": message, "code": code}}
        await self.websocket.send_text(wire.dumps(error).decode())

    async def end(self) -> None:
        if self.episode_id is not None:
            await self.routes.episodes.close(self.episode_id)
            self.episode_id = None


def _no_step(observation: dict[str, Any]) -> dict[str, Any]:
    return {"observation": observation, "reward": None, "done": False}


@dataclass(frozen=True)
class _Ours:
    """Our own form (any env, or one asked with ``frames``): the action as the value under
    ``action``, observations and states as the server's views."""

    form: str
    array_obs: bool

    def action(self, data: Any) -> Any:
        return wire.action_of(data)

    def observation(self, view: dict[str, Any]) -> dict[str, Any]:
        return wire.observation_of(view, self.form, self.array_obs)

    def state(self, view: dict[str, Any] | None) -> dict[str, Any]:
        return wire.state_of(view)

    def reset_options(self, options: dict[str, Any]) -> dict[str, Any]:
        return options


def mount_openenv(server: FastMCP, app: EnvApp) -> None:
    """Serve OpenEnv's routes under ``/openenv`` (:data:`..transports._http.OPENENV_PATH`)
    on ``server``'s HTTP app."""
    from openenv_mcp.wire.sdk import add_http_route

    routes = OpenEnvRoutes(app)
    add_http_route(server, Mount(OPENENV_PATH, routes=routes.routes()))
    for route in session_routes():  # the openreward client's, at the root: see there
        add_http_route(server, route)

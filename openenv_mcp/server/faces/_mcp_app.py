"""The game view as an MCP App (extension ``io.modelcontextprotocol/ui``, SEP-1865).

For a client that announces the extension (in each request's ``_meta``
``io.modelcontextprotocol/clientCapabilities``, or in a 2025 handshake's
capabilities) with ``text/html;profile=mcp-app`` among its ``mimeTypes``:

* ``resources/list`` has ``ui://openenv-mcp/{env}/view.html``, one self-contained
  HTML page (:file:`openenv_mcp/web/view.html`, its script and style inlined here)
  whose ``_meta.ui`` declares no outside domain: the host renders it in a sandboxed
  frame beside a tool's result;
* ``reset``, ``step``, ``state``, ``legal_actions`` and the per-action tools carry
  ``_meta.ui.resourceUri`` naming it;
* their results carry a compact view model in the result's ``_meta``
  (:data:`VIEW_META`): the episode, counters, lives and score, the legal actions, a
  board game's board. The content (the text and frame a model reads) is untouched;
* with ``--record``, ``view_replay`` (``_meta.ui.visibility: ["app"]``: for the view,
  never the model) plays a recorded episode back in the same view.

A client that does not announce it gets exactly what it got before: no ``ui://``
resource, no ``_meta.ui``, no ``view_replay``, byte-identical results. The decision
is per request, in one middleware (:class:`AppView`); the transports' direct paths,
which answer tool calls without FastMCP's middleware, leave a call that announces
the extension to the standard stack (``EnvApp.extension_ids``).

Served in the agent profile (``serve --profile agent``/``--agent``): a person in a
chat client watching a model play, and taking over where they like.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.to_thread
import mcp_types
from fastmcp.exceptions import NotFoundError
from fastmcp.resources import Resource, ResourceContent, ResourceResult
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools.base import Tool, ToolResult

from openenv_mcp.errors import ArgumentError, OpenEnvError
from openenv_mcp.server.episodes._handlers import _caller
from openenv_mcp.server.faces._web import recording_files
from openenv_mcp.server.tools._results import error_result, image_block, text_block

if TYPE_CHECKING:
    from fastmcp import FastMCP

    from openenv_mcp.server._app import EnvApp

__all__ = [
    "APP_MIME",
    "EXTENSION_ID",
    "REPLAY_TOOL",
    "VIEW_META",
    "AppView",
    "announces_apps",
    "mount_mcp_app",
    "view_html",
    "view_uri",
]

#: The MCP Apps extension (the same string as ``mcp.server.apps.EXTENSION_ID``).
EXTENSION_ID = "io.modelcontextprotocol/ui"
#: What a host renders a ``ui://`` resource as, and only as.
APP_MIME = "text/html;profile=mcp-app"
#: Where a result's view model travels (the result's ``_meta``; never its content).
VIEW_META = "openenv-mcp/view"
#: The app-only tool that reads a recording back for the view.
REPLAY_TOOL = "view_replay"
_CAPABILITIES_META = "io.modelcontextprotocol/clientCapabilities"
#: The episode tools whose results the view shows (with the per-action tools).
_VIEW_TOOLS = frozenset({"reset", "step", "state", "legal_actions"})
#: Environments whose ``info["text"]`` is a board, shown as one.
_BOARD_GAMES = frozenset({"chess", "openspiel", "pettingzoo"})
#: A handle in a result's text (an agent-profile reset names its episode there).
_HANDLE = re.compile(r"\bep_[A-Za-z0-9_-]{8,}(?:@[A-Za-z0-9_.-]+)?")
#: Most legal actions sent as buttons; most characters of a board.
_MAX_ACTIONS = 256
_MAX_BOARD = 4000
#: Most frames a replay sends (a longer episode is sampled evenly).
_MAX_REPLAY_FRAMES = 600
_DEFAULT_REPLAY_FRAMES = 240
#: Most recordings listed for the view.
_MAX_LISTED = 50


def view_uri(env: str) -> str:
    """The view's resource URI for environment ``env``."""
    return f"ui://openenv-mcp/{env}/view.html"


# -- the page ------------------------------------------------------------------------------


def _web_file(name: str) -> str:
    return resources.files("openenv_mcp").joinpath("web", name).read_text(encoding="utf-8")


def _csp_hash(text: str) -> str:
    digest = base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()
    return f"'sha256-{digest}'"


def view_html() -> str:
    """The view as one document: :file:`view.html` with the web page's stylesheet, the
    view's own and its script inlined, and a CSP allowing exactly those (by hash) and
    ``data:`` images, nothing from anywhere else."""
    style = f"{_web_file('app.css')}\n{_web_file('view.css')}"
    script = _web_file("view.js")
    csp = (
        "default-src 'none'; img-src data:; "
        f"style-src {_csp_hash(style)}; script-src {_csp_hash(script)}; "
        "connect-src 'none'; form-action 'none'; base-uri 'none'"
    )
    page = _web_file("view.html")
    for marker, value in (("{{csp}}", csp), ("{{style}}", style), ("{{script}}", script)):
        page = page.replace(marker, value, 1)
    return page


# -- who announces the extension -------------------------------------------------------------


def _settings_of(capabilities: Any) -> Any:
    if isinstance(capabilities, Mapping):
        extensions = capabilities.get("extensions")
    else:
        extensions = getattr(capabilities, "extensions", None)
    return extensions.get(EXTENSION_ID) if isinstance(extensions, Mapping) else None


def announces_apps(context: MiddlewareContext[Any]) -> bool:
    """Whether the request being served comes from a client that renders MCP Apps: its
    ``_meta`` capabilities (2026-07-28), else its session's handshake (2025), announce
    the extension with ``text/html;profile=mcp-app`` among its ``mimeTypes``."""
    ctx = context.fastmcp_context
    request = ctx.request_context if ctx is not None else None
    if request is None:
        return False
    meta = request.meta or {}
    settings = _settings_of(meta.get(_CAPABILITIES_META))
    if settings is None and _CAPABILITIES_META not in meta:
        settings = _settings_of(getattr(request.session, "client_capabilities", None))
    if not isinstance(settings, Mapping):
        return False
    mimes = settings.get("mimeTypes")
    return isinstance(mimes, list | tuple) and APP_MIME in mimes


# -- the view model ----------------------------------------------------------------------------


def _number(value: Any) -> float | int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value if math.isfinite(value) else None


def _legal_actions(app: EnvApp, info: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The actions legal now, as ``{id, name}``: the env's named actions (less those its
    ``action_mask`` rules out), or chess's legal moves."""
    actions = app.prototype.action_set
    if actions is not None:
        mask = info.get("action_mask")
        legal = [
            {"id": a.id, "name": a.name}
            for a in actions
            if not isinstance(mask, Sequence)
            or not (0 <= a.id - actions.start < len(mask))
            or mask[a.id - actions.start]
        ]
        return legal[:_MAX_ACTIONS]
    moves = info.get("legal_moves")
    if isinstance(moves, list):
        return [{"id": m, "name": m} for m in moves[:_MAX_ACTIONS] if isinstance(m, str)]
    return []


def view_model(app: EnvApp, tool: str, view: Mapping[str, Any]) -> dict[str, Any]:
    """What the view shows of one result, from the structured view the full profile sends
    (the agent profile's is kept with its episode)."""
    info = view.get("info")
    info = info if isinstance(info, Mapping) else {}
    status = view.get("status", "running")
    model: dict[str, Any] = {
        "env": app.env_cls.name,
        "title": app.spec.title,
        "tool": tool,
        "episode_id": view.get("episode_id"),
        "status": status,
        "step": view.get("step", 0),
        "reward": view.get("reward", 0.0),
        "return": view.get("episode_return", 0.0),
        "terminated": bool(view.get("terminated", False)),
        "truncated": bool(view.get("truncated", False)),
        "done": status != "running",
        "events": list(view.get("events") or [])[:16],
        "legal_actions": _legal_actions(app, info),
    }
    for key in ("lives", "score"):
        value = _number(info.get(key))
        if value is not None:
            model[key] = value
    board = info.get("text")
    if app.env_cls.name in _BOARD_GAMES and isinstance(board, str):
        model["board"] = board[:_MAX_BOARD]
    recording = view.get("recording")
    record_dir = app.settings.record
    if isinstance(recording, str) and record_dir is not None:
        with contextlib.suppress(ValueError):  # a file outside it: not named to the view
            model["recording"] = str(Path(recording).resolve().relative_to(_root(record_dir)))
    return model


def _root(record: str) -> Path:
    return Path(record).expanduser().resolve()


def _episode_view(
    app: EnvApp, arguments: Mapping[str, Any], result: ToolResult
) -> Mapping[str, Any] | None:
    """The structured view behind ``result``: its own (full profile), else the one its
    episode keeps, found by the handle the call passed, the one its text names (a reset),
    or the caller's default episode."""
    structured = result.structured_content
    if isinstance(structured, Mapping) and "episode_id" in structured:
        return structured
    episodes = app.table.episodes
    handles = [arguments.get("episode_id")]
    text = next((b.text for b in result.content if isinstance(b, mcp_types.TextContent)), "")
    handles += _HANDLE.findall(text)
    for handle in handles:
        episode = episodes.get(handle) if isinstance(handle, str) else None
        if episode is not None:
            return episode.last_view
    try:
        return app.table.resolve(None, _caller(app.table)).last_view
    except OpenEnvError:
        return None


# -- replay --------------------------------------------------------------------------------------


def _find_recording(root: Path, name: str) -> Path:
    """The recording ``name`` means (an id, or a path under the record directory): only
    ever one of the files listed, so no name reaches a file outside it."""
    files = recording_files(root)
    if name in files:
        return files[name]
    try:
        wanted = (root / name).resolve()
    except (OSError, ValueError):
        wanted = None
    for path in files.values():
        if wanted is not None and path.resolve() == wanted:
            return path
    raise ArgumentError(
        f"{REPLAY_TOOL}: no recording {name[:200]!r} under the record directory; call "
        f"{REPLAY_TOOL} without recording to list them (ids, or paths inside it)"
    )


def _list(app: EnvApp, root: Path) -> ToolResult:
    from openenv_mcp.recording import read_recording

    listed = []
    for rid, path in list(recording_files(root).items())[:_MAX_LISTED]:
        try:
            rec = read_recording(path, observations=False)
        except (ArgumentError, OSError, ValueError, KeyError):
            continue  # not a recording (collect's index), or being written
        listed.append(
            {
                "id": rid,
                "path": str(path.relative_to(root)),
                "title": rec.start.get("title"),
                "seed": rec.start.get("seed"),
                "steps": len(rec.steps),
                "return": rec.episode_return,
            }
        )
    text = f"{len(listed)} recorded episodes of {app.spec.title}"
    return ToolResult(
        content=[mcp_types.TextContent(type="text", text=text)],
        meta={VIEW_META: {"env": app.env_cls.name, "recordings": listed}},
    )


def _replay(app: EnvApp, path: Path, max_frames: int, root: Path) -> ToolResult:
    """A recording as the view plays it: every step, and its frames (PNG, sampled evenly
    down to ``max_frames``) as the result's images, which steps name by index."""
    from openenv_mcp.codecs import encode_png
    from openenv_mcp.recording import iter_frames, read_recording

    rec = read_recording(path, observations=False)
    total = len(rec.steps) + 1
    stride = max(1, math.ceil(total / max_frames))
    images: list[dict[str, Any]] = []
    shown: dict[int, int] = {}
    for index, frame in enumerate(iter_frames(path)):
        if index % stride == 0 or index == total - 1:
            shown[index] = len(images)
            images.append(image_block(encode_png(frame)))
    actions = app.prototype.action_set
    steps: list[dict[str, Any]] = [
        {"step": 0, "action": None, "reward": 0.0, "return": 0.0, "image": shown.get(0)}
    ]
    running = 0.0
    for number, s in enumerate(rec.steps, 1):
        running += s.reward
        action: Any = s.action
        if actions is not None:
            try:
                action = actions.by_id(actions.resolve(s.action)).name
            except Exception:  # an action of another env's recording: shown as it is
                action = s.action
        steps.append(
            {
                "step": number,
                "action": action if isinstance(action, str | int | float) else str(action),
                "reward": s.reward,
                "return": running,
                "terminated": s.terminated,
                "truncated": s.truncated,
                "image": shown.get(number),
            }
        )
    title = rec.start.get("title") or app.spec.title
    text = f"Replay of {title}, seed {rec.start.get('seed')}: {len(rec.steps)} steps"
    reply_content = [text_block(text), *images]
    model = {
        "env": app.env_cls.name,
        "title": title,
        "recording": str(path.relative_to(root)),
        "replay": steps,
    }
    return ToolResult.model_construct(
        content=[_block(b) for b in reply_content],
        structured_content=None,
        meta={VIEW_META: model},
        is_error=False,
    )


def _block(block: dict[str, Any]) -> mcp_types.TextContent | mcp_types.ImageContent:
    if block["type"] == "image":
        return mcp_types.ImageContent(type="image", data=block["data"], mime_type=block["mimeType"])
    return mcp_types.TextContent(type="text", text=block["text"])


def _replay_tool(app: EnvApp, uri: str, record: str) -> Tool:
    root = _root(record)

    async def view_replay(recording: str | None = None, max_frames: int = 240) -> ToolResult:
        """A recorded episode for the game view to play back (its steps and frames), or,
        without ``recording``, the recordings there are. For the view, not the model."""
        try:
            if not 1 <= max_frames <= _MAX_REPLAY_FRAMES:
                raise ArgumentError(
                    f"{REPLAY_TOOL}: max_frames must be 1-{_MAX_REPLAY_FRAMES}, got {max_frames}"
                )
            if recording is None:
                return await anyio.to_thread.run_sync(_list, app, root)
            path = await anyio.to_thread.run_sync(_find_recording, root, recording)
            return await anyio.to_thread.run_sync(_replay, app, path, max_frames, root)
        except OpenEnvError as exc:
            return error_result(exc).tool_result()
        except (OSError, ValueError) as exc:
            return error_result(
                OpenEnvError(f"{REPLAY_TOOL}: cannot read that recording ({type(exc).__name__})")
            ).tool_result()

    return Tool.from_function(
        view_replay,
        name=REPLAY_TOOL,
        meta={"ui": {"resourceUri": uri, "visibility": ["app"]}},
    )


# -- the middleware ----------------------------------------------------------------------------


class AppView(Middleware):
    """Show the App to the clients that announce the extension, and nothing of it to others.

    Args:
        app: the environment served.
        uri: the view's resource URI.
        tools: the tools whose results the view shows.
    """

    def __init__(self, app: EnvApp, uri: str, tools: frozenset[str]) -> None:
        self.app = app
        self.uri = uri
        self.tools = tools

    async def on_list_tools(
        self,
        context: MiddlewareContext[mcp_types.ListToolsRequest],
        call_next: CallNext[mcp_types.ListToolsRequest, Sequence[Tool]],
    ) -> Sequence[Tool]:
        listed = await call_next(context)
        if not announces_apps(context):
            return [t for t in listed if t.name != REPLAY_TOOL]
        ui = {"resourceUri": self.uri}
        return [
            t.model_copy(update={"meta": {**(t.meta or {}), "ui": ui}})
            if t.name in self.tools
            else t
            for t in listed
        ]

    async def on_list_resources(
        self,
        context: MiddlewareContext[mcp_types.ListResourcesRequest],
        call_next: CallNext[mcp_types.ListResourcesRequest, Sequence[Resource]],
    ) -> Sequence[Resource]:
        listed = await call_next(context)
        if announces_apps(context):
            return listed
        return [r for r in listed if str(r.uri) != self.uri]

    async def on_read_resource(
        self,
        context: MiddlewareContext[mcp_types.ReadResourceRequestParams],
        call_next: CallNext[mcp_types.ReadResourceRequestParams, ResourceResult],
    ) -> ResourceResult:
        uri = str(context.message.uri)
        if uri == self.uri and not announces_apps(context):
            raise NotFoundError(f"Unknown resource: {uri!r}")  # as before the App
        return await call_next(context)

    async def on_call_tool(
        self,
        context: MiddlewareContext[mcp_types.CallToolRequestParams],
        call_next: CallNext[mcp_types.CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        name = context.message.name
        if name == REPLAY_TOOL and not announces_apps(context):
            raise NotFoundError(f"Unknown tool: {name!r}")  # as before the App
        result = await call_next(context)
        if not isinstance(result, ToolResult):
            return result  # a call answered as an MCP task: its result comes by tasks/get
        if name not in self.tools or result.is_error or not announces_apps(context):
            return result
        view = _episode_view(self.app, context.message.arguments or {}, result)
        if view is None:
            return result
        meta = {**(result.meta or {}), VIEW_META: view_model(self.app, name, view)}
        return ToolResult.model_construct(
            content=result.content,
            structured_content=result.structured_content,
            meta=meta,
            is_error=result.is_error,
        )


def mount_mcp_app(server: FastMCP, app: EnvApp) -> None:
    """Serve the game view as an MCP App on ``server`` (the agent profile only)."""
    if app.settings.shape.name != "agent":
        return
    name = app.env_cls.name
    uri = view_uri(name)
    html = view_html()
    # data: for the frames' PNGs: the Inspector turns an empty list into img-src 'none'.
    ui_meta = {"csp": {"connectDomains": [], "resourceDomains": ["data:"]}, "prefersBorder": True}

    @server.resource(
        uri,
        name=f"{name}-view",
        title=f"{app.spec.title}: the game view",
        description="The game as an MCP App: the frame, counters and the legal actions.",
        mime_type=APP_MIME,
        meta={"ui": ui_meta},
    )
    def view_resource() -> ResourceResult:
        return ResourceResult([ResourceContent(html, mime_type=APP_MIME, meta={"ui": ui_meta})])

    names = {t.name for t in app.tools}
    actions = app.prototype.action_set
    shown = set(_VIEW_TOOLS) | (
        {actions.tool_name(a) for a in actions} if actions is not None else set()
    )
    if app.settings.record is not None:
        server.add_tool(_replay_tool(app, uri, app.settings.record))
    server.add_middleware(AppView(app, uri, frozenset(shown & names)))

    # The transports' direct paths leave a call that declares the extension to the
    # standard stack, where AppView runs.
    app.extension_ids.add(EXTENSION_ID)

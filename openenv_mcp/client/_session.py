"""Sessions and episodes: the client's two concepts.

A :class:`Session` is one MCP connection to an environment server: it owns the
transport, knows the server's spec and tools, hands out :class:`Episode`
objects, and steps several of them in one batched call. An :class:`Episode` is
one episode on a session, driven like a Gymnasium environment.
``MCPEnvClient`` (:mod:`._client`) is the convenience most code wants: a session
and its first episode in one object.

Where to connect follows from the target alone (:func:`transport_for`, the one
place this is decided). Every failure of the link itself (the server exited,
the connection closed, no answer within the timeout) becomes
:class:`~openenv_mcp.errors.ServerDied`, and the session stays dead: later
calls fail at once instead of waiting.
"""

from __future__ import annotations

import asyncio
import json
import logging
import operator
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypedDict, Unpack

import anyio
import numpy as np

from openenv_mcp.client._spec import ServerSpec
from openenv_mcp.client._transports import (
    RpcError,
    Target,
    Transport,
    describe_target,
    is_command,
    transport_for,
)
from openenv_mcp.codecs import (
    CLIENT_FRAMES,
    ClientFrames,
    check_frames,
    decode_raw,
    png_from_b64,
)
from openenv_mcp.environment import ActionSet
from openenv_mcp.errors import (
    ERROR_META,
    ArgumentError,
    OpenEnvError,
    ResetNeeded,
    ServerDied,
    UnknownEpisode,
    UnknownSnapshot,
    UnknownTask,
    UnsupportedOption,
    did_you_mean,
    error_from_wire,
)
from openenv_mcp.sharding import shard_of
from openenv_mcp.spaces import decode, is_array_space
from openenv_mcp.tasks import Task

if TYPE_CHECKING:
    from gymnasium import spaces

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_TIMEOUT",
    "STEP_BATCH_TOOL",
    "Episode",
    "ServerLog",
    "Session",
    "SessionOptions",
    "Target",
    "ToolAnswer",
    "Transition",
    "step_batch",
    "transport_for",
]

log = logging.getLogger("openenv_mcp.client")

#: Where a stdio server's stderr goes: a file's path, or an open file.
ServerLog = str | os.PathLike[str] | TextIO
Transition = tuple[Any, float, bool, bool, dict[str, Any]]

#: Above the server's default per-call timeout (60 s), so a slow environment call
#: reports the server's own EnvCallTimeout before this side gives up on the server.
DEFAULT_TIMEOUT = 90.0
#: Starting a Python server (imports, ROMs) takes seconds on a busy machine.
DEFAULT_CONNECT_TIMEOUT = 120.0
#: The server tool that steps many episodes in one call.
STEP_BATCH_TOOL = "step_batch"
#: The server tool that lists the actions legal now (every action, before a reset).
LEGAL_ACTIONS_TOOL = "legal_actions"

_SPEC_SUFFIX = "/spec"
_TAIL_BYTES = 2000
# Teardown of a dead link must not hang either.
_CLOSE_TIMEOUT = 10.0
# Failures of the link itself, as the transports raise them.
_LINK_ERRORS = (
    EOFError,  # asyncio.IncompleteReadError: a reply cut off mid-way
    anyio.ClosedResourceError,
    anyio.BrokenResourceError,
    anyio.EndOfStream,
    ConnectionError,
    OSError,
)


# -- answers --------------------------------------------------------------------------------


class ToolAnswer:
    """A tool's result as it came: content blocks (dicts), structured content, error flag."""

    __slots__ = ("content", "error_code", "is_error", "structured")

    def __init__(self, result: dict[str, Any]) -> None:
        self.content: list[dict[str, Any]] = list(result.get("content") or [])
        self.structured: dict[str, Any] | None = result.get("structuredContent")
        self.is_error = bool(result.get("isError", False))
        meta = result.get("_meta")
        code = meta.get(ERROR_META) if isinstance(meta, dict) else None
        #: The error's class name, as the server sends it (``_meta["openenv_mcp/error"]``).
        self.error_code: str | None = code if isinstance(code, str) else None

    @property
    def text(self) -> str:
        """The text blocks, joined by spaces."""
        return " ".join(str(c.get("text", "")) for c in self.content if c.get("type") == "text")

    @property
    def images(self) -> list[dict[str, Any]]:
        """The image blocks (``data`` is base64, ``mimeType`` says what)."""
        return [c for c in self.content if c.get("type") == "image"]

    def __repr__(self) -> str:
        return f"<ToolAnswer error={self.is_error} text={self.text[:80]!r}>"


def _frame(images: Sequence[dict[str, Any]]) -> np.ndarray | None:
    for block in images:
        frame = png_from_b64(block["data"])
        # PIL hands out read-only arrays; callers may scale frames in place.
        return frame if frame.flags.writeable else frame.copy()
    return None


def wire_action(action: Any) -> Any:
    """An action as JSON: numpy scalars and arrays become Python values, tuples lists."""
    if isinstance(action, np.generic):
        return action.item()
    if isinstance(action, np.ndarray):
        return action.tolist()
    if isinstance(action, (tuple, list)):
        return [wire_action(a) for a in action]
    if isinstance(action, dict):
        return {k: wire_action(v) for k, v in action.items()}
    return action


# -- the session ------------------------------------------------------------------------------


class SessionOptions(TypedDict, total=False):
    """The options of a :class:`Session` (and so of ``MCPEnvClient``), by keyword."""

    frames: ClientFrames
    timeout: float
    connect_timeout: float
    check_results: bool
    server_log: ServerLog | None
    headers: dict[str, str] | None


class Session:
    """One MCP connection to an openenv-mcp server, shared by the episodes opened on it.

    ::

        async with Session("openenv-mcp serve atari --game pong") as session:
            group = [session.episode() for _ in range(8)]
            for k, episode in enumerate(group):
                await episode.reset(seed=k)
            transitions = await session.step_batch(group, [0] * 8)

    Args:
        target: what to connect to (see :func:`transport_for`).
        frames: how array observations travel; episodes always hand out numpy
            arrays. ``"zstd"`` (the default: the array's bytes zstd-compressed,
            a few hundred bytes for an Atari frame, the fastest), ``"raw"`` (the
            bytes as they are) or ``"png"`` (images; only for observations
            that are the frame).
        timeout: seconds one call may take; past it the server counts as hung
            and :class:`~openenv_mcp.errors.ServerDied` is raised.
        connect_timeout: seconds to start the server and connect.
        check_results: validate every structured result against the tool's
            output schema (off by default: it costs time on every step).
        server_log: where a stdio server's stderr goes (a path, appended to,
            or an open file); by default a temporary file whose tail is quoted
            in :class:`~openenv_mcp.errors.ServerDied`.
        headers: extra HTTP headers, e.g. ``{"Authorization": "Bearer TOKEN"}``.

    Raises:
        ArgumentError: for a target of the wrong type or a bad option.
    """

    def __init__(self, target: Target, **options: Unpack[SessionOptions]) -> None:
        known = SessionOptions.__optional_keys__
        for name in options:
            if name not in known:
                raise ArgumentError(
                    f"unknown option {name!r}.{did_you_mean(name, known)} "
                    f"Options: {', '.join(sorted(known))}"
                )
        frames = check_frames(options.get("frames", "zstd"), CLIENT_FRAMES)
        timeout = options.get("timeout", DEFAULT_TIMEOUT)
        connect_timeout = options.get("connect_timeout", DEFAULT_CONNECT_TIMEOUT)
        if timeout <= 0 or connect_timeout <= 0:
            raise ArgumentError(
                "timeouts must be positive, got "
                f"timeout={timeout} connect_timeout={connect_timeout}"
            )
        server_log = options.get("server_log")
        self._options = SessionOptions(
            frames=frames,
            timeout=timeout,
            connect_timeout=connect_timeout,
            check_results=options.get("check_results", False),
            server_log=server_log,
            headers=options.get("headers"),
        )
        self.target = target
        self.frames: ClientFrames = frames
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.check_results = self._options["check_results"]
        self.description = describe_target(target)
        if isinstance(server_log, (str, os.PathLike)):
            server_log = Path(server_log)
        self._log_capture: TextIO | None = None
        if server_log is None and is_command(target):
            # Lives as long as the session (closed in close), so no `with`.
            self._log_capture = tempfile.TemporaryFile("w+", prefix="openenv-mcp-server-")  # noqa: SIM115
            server_log = self._log_capture
        self._server_log = server_log
        self._transport = transport_for(
            target,
            server_log=server_log,
            headers=self._options["headers"],
            connect_timeout=connect_timeout,
        )
        self._spec: ServerSpec | None = None
        self.tools: dict[str, dict[str, Any]] = {}
        self._dead: ServerDied | None = None
        self._opened = False
        self._closed = False

    @property
    def options(self) -> SessionOptions:
        """The options this session was made with (to make another like it)."""
        return SessionOptions(**self._options)

    @property
    def transport(self) -> Transport:
        """The transport underneath."""
        return self._transport

    # -- lifecycle -----------------------------------------------------------------------

    async def __aenter__(self) -> Session:
        await self.connect()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    @property
    def connected(self) -> bool:
        """Whether :meth:`connect` succeeded and :meth:`close` has not run."""
        return self._opened and not self._closed and self._spec is not None

    async def connect(self) -> None:
        """Connect, then read the server's spec and tool list. Idempotent.

        Raises:
            ServerDied: the server did not start or answer within ``connect_timeout``.
            ArgumentError: the server is not an openenv-mcp environment server, or
                ``frames="png"`` cannot carry its observations.
        """
        if self._opened:
            return
        self._opened = True
        try:
            with anyio.fail_after(self.connect_timeout):
                await self._transport.connect()
                spec_uri = await self._spec_uri()
                read = await self._transport.request("resources/read", {"uri": spec_uri})
                text = next(c["text"] for c in read.get("contents", []) if "text" in c)
                spec = self._read_spec(spec_uri, text)
                listed = await self._transport.request("tools/list")
                self.tools = {t["name"]: t for t in listed.get("tools", [])}
                self._transport.learn_tools(self.tools)
            if (
                self.frames == "png"
                and is_array_space(spec.observation_space)
                and not spec.frame_is_observation
            ):
                raise ArgumentError(
                    f"frames='png' needs observations that are frames, but {spec.name}'s "
                    f"observation is {spec.observation_space}; use frames='zstd'"
                )
            self._spec = spec
        except TimeoutError:
            error: OpenEnvError = ServerDied(
                f"{self.description} did not start and answer within {self.connect_timeout:g}s"
                + self._log_tail()
            )
        except OpenEnvError as exc:
            error = exc
        except Exception as exc:
            error = ServerDied(f"could not connect to {self.description}: {exc}" + self._log_tail())
            error.__cause__ = exc
        else:
            return
        await self.close()
        raise error

    async def _spec_uri(self) -> str:
        listed = await self._transport.request("resources/list")
        uris = [str(r.get("uri")) for r in listed.get("resources", [])]
        for uri in uris:
            if uri.startswith("openenv://") and uri.endswith(_SPEC_SUFFIX):
                return uri
        raise ArgumentError(
            f"{self.description} is an MCP server but not an openenv-mcp environment server: "
            f"it has no openenv://ENV/spec resource (resources: {uris or 'none'})"
        )

    def _read_spec(self, uri: str, text: str) -> ServerSpec:
        try:
            return ServerSpec.from_json(json.loads(text))
        except (ValueError, ArgumentError) as exc:  # not JSON, or not a spec
            raise ArgumentError(
                f"{self.description}'s {uri} is not a spec this client reads: {exc} "
                "(is the server a much older or newer openenv-mcp?)"
            ) from None

    async def close(self) -> None:
        """Disconnect; a stdio subprocess is stopped and reaped. Idempotent, bounded."""
        if self._closed:
            return
        self._closed = True
        with anyio.CancelScope(shield=True), anyio.move_on_after(_CLOSE_TIMEOUT):
            try:
                await self._transport.close()
            except Exception as exc:  # the link may already be gone; nothing left to save
                log.debug("closing %s: %r", self.description, exc)
        if self._log_capture is not None:
            self._log_capture.close()

    # -- what the server is --------------------------------------------------------------

    @property
    def server_spec(self) -> ServerSpec:
        """The server's static description (its ``openenv://ENV/spec`` resource)."""
        if self._spec is None:
            raise OpenEnvError("not connected: use `async with` or connect() first")
        return self._spec

    @property
    def tool_names(self) -> list[str]:
        """Every tool the server lists."""
        return sorted(self.tools)

    def require_tool(self, name: str) -> dict[str, Any]:
        """The listed tool ``name``.

        Raises:
            ArgumentError: naming the tools there are.
        """
        tool = self.tools.get(name)
        if tool is None:
            raise ArgumentError(
                f"the server has no tool {name!r}.{did_you_mean(name, self.tools)} "
                f"Tools: {', '.join(sorted(self.tools))}"
            )
        return tool

    # -- tasks (:mod:`openenv_mcp.tasks`) ---------------------------------------------------

    @property
    def splits(self) -> list[dict[str, Any]]:
        """The env's task splits (``{"name", "type", "tasks"}``; ``[]``: it has no tasks)."""
        return [dict(split) for split in self.server_spec.splits]

    async def read_json(self, uri: str) -> Any:
        """The JSON of resource ``uri``.

        Raises:
            ArgumentError: the server refused it (its message says why).
        """
        try:
            read = await self._transport.request("resources/read", {"uri": uri})
        except RpcError as exc:
            raise ArgumentError(f"{uri}: {exc.message}") from None
        text = next((c["text"] for c in read.get("contents", []) if "text" in c), None)
        if text is None:
            raise ArgumentError(f"{uri}: the server sent no text")
        return json.loads(text)

    async def tasks(self, split: str) -> list[Task]:
        """Every task of split ``split``, in order (read a page of 100 at a time from the
        ``openenv://ENV/tasks/SPLIT/PAGE`` resources).

        Raises:
            UnknownTask: the env has no tasks, or no such split (naming its splits).
        """
        splits = self.splits
        names = [str(s["name"]) for s in splits]
        if split not in names:
            listed = ", ".join(f"{s['name']} ({s['tasks']} tasks)" for s in splits)
            have = f"Splits: {listed}" if names else "It publishes no tasks."
            raise UnknownTask(
                f"{self.server_spec.name} has no split {split!r}."
                f"{did_you_mean(str(split), names)} {have}"
            )
        tasks: list[Task] = []
        uri: str | None = f"openenv://{self.server_spec.name}/tasks/{split}/0"
        while uri is not None:
            page = await self.read_json(uri)
            tasks.extend(Task.from_json(task) for task in page["tasks"])
            uri = page.get("next")
        return tasks

    async def task_stats(self) -> dict[str, Any]:
        """Each task's ended episodes and successes on the server
        (``{"tasks": {id: {"n", "successes"}}, ...}``)."""
        return dict(await self.read_json(f"openenv://{self.server_spec.name}/task-stats"))

    def episode(self) -> Episode:
        """A new episode on this session; it is created on the server by its first reset."""
        if not self.connected:
            raise OpenEnvError("episode() needs a connected session: connect it first")
        return Episode(self)

    # -- calls ---------------------------------------------------------------------------

    async def call(self, tool: str, args: dict[str, Any]) -> ToolAnswer:
        """Call a tool; return its answer, or raise its typed error.

        Raises:
            OpenEnvError: the server's error, as its class (``InvalidAction``, ...).
            ServerDied: the link failed, or no answer came within ``timeout``.
        """
        if self._dead is not None:
            raise ServerDied(str(self._dead))
        if not self.connected:
            raise ServerDied(f"the connection to {self.description} is closed")
        try:
            # asyncio's own timeout: anyio's cancel scope costs ~40 us a call, a tenth of
            # a CartPole step's round trip (the client runs on asyncio in any case).
            async with asyncio.timeout(self.timeout):
                result = await self._transport.request(
                    "tools/call", {"name": tool, "arguments": args}
                )
        except TimeoutError:
            raise self._die(
                f"{self.description} did not answer {tool} within {self.timeout:g}s "
                "(hung or overloaded)"
            ) from None
        except RpcError as exc:
            raise OpenEnvError(f"{tool}: {exc.message}") from exc
        except _LINK_ERRORS as exc:
            raise self._die(f"lost {self.description} during {tool}: {exc!r}") from exc
        except RuntimeError as exc:  # FastMCP's client's own checks on an answer
            raise OpenEnvError(f"{tool}: {exc}") from exc
        answer = ToolAnswer(result)
        if answer.is_error:
            raise error_from_wire(answer.text or "tool error without a message", answer.error_code)
        if self.check_results:
            self._check(tool, answer)
        return answer

    def _check(self, tool: str, answer: ToolAnswer) -> None:
        schema = self.tools.get(tool, {}).get("outputSchema")
        if schema is None:
            return
        import jsonschema

        try:
            jsonschema.validate(answer.structured, schema)
        except jsonschema.ValidationError as exc:
            raise OpenEnvError(
                f"{tool} answered outside its outputSchema: {exc.message} "
                f"(at {'/'.join(map(str, exc.absolute_path)) or 'the top'})"
            ) from None

    def _die(self, message: str) -> ServerDied:
        self._dead = ServerDied(message + self._log_tail())
        return self._dead

    def _log_tail(self) -> str:
        """The end of the server's stderr, where this session kept it."""
        log_file = self._log_capture
        path = self._server_log if isinstance(self._server_log, Path) else None
        try:
            if log_file is not None and not log_file.closed:
                fd = log_file.fileno()
                size = os.fstat(fd).st_size
                data = os.pread(fd, _TAIL_BYTES, max(0, size - _TAIL_BYTES))
                text = data.decode("utf-8", "replace")
            elif path is not None:
                text = path.read_text("utf-8", "replace")[-_TAIL_BYTES:]
            else:
                return ""
        except OSError:
            return ""
        text = text.strip()
        return f"\nserver stderr (last lines):\n{text}" if text else ""

    # -- reading answers -----------------------------------------------------------------

    def wire_frames(self) -> str:
        """The ``frames`` argument episodes send: only array observations travel as frames."""
        if is_array_space(self.server_spec.observation_space):
            return self.frames
        # Any other observation travels as JSON anyway (its array leaves in the raw
        # form asked for); not asking for "png" spares the server a PNG encode.
        return "zstd" if self.frames == "zstd" else "raw"

    def read_view(
        self, view: dict[str, Any] | None, images: Sequence[dict[str, Any]] = ()
    ) -> tuple[Any, dict[str, Any]]:
        """Observation and info from an episode view (``reset``/``step``/``state``'s answer)."""
        if view is None:
            raise OpenEnvError("the server sent an episode result without structured content")
        spec = self.server_spec
        if "observation" in view:
            obs = decode(spec.observation_space, view["observation"], check=False)
        elif spec.frame_is_observation:
            obs = _frame(images)
        else:
            obs = None
        # The environment's fields, then the episode's (which win a name clash).
        info: dict[str, Any] = dict(view.get("info") or {})
        if "action_mask" in info:  # as Gymnasium's sample(mask=...) takes it
            info["action_mask"] = np.asarray(info["action_mask"], dtype=np.int8)
        for key in ("episode_id", "status", "step", "reward", "episode_return"):
            info[key] = view[key]
        # Served rewards: the breakdown, the trajectory scores and credit, the recording;
        # the task the episode plays (judged at its end).
        for key in ("rewards", "trajectory", "recording", "recording_failed", "task"):
            if key in view:
                info[key] = view[key]
        info["terminated"] = bool(view["terminated"])
        info["truncated"] = bool(view["truncated"])
        return obs, info

    async def step_batch(
        self,
        episodes: Sequence[Episode],
        actions: Sequence[Any],
        *,
        return_exceptions: bool = False,
        use_tool: bool = True,
    ) -> list[Any]:
        """Step several episodes of this session together, in one ``step_batch`` call.

        Where the server does not list ``step_batch`` (or with ``use_tool=False``),
        each episode gets its own ``step`` call, all in flight together. Either
        way every episode that stepped is recorded before an error is raised,
        so no step happens on the server unseen here.

        Returns:
            One ``(observation, reward, terminated, truncated, info)`` per
            episode, in order (with ``return_exceptions``, an episode's error in
            its place).

        Raises:
            OpenEnvError: the first episode's error (an illegal action, an ended
                episode...), unless ``return_exceptions``.
            ArgumentError: ``episodes`` and ``actions`` differ in length, or an
                episode is not of this session.
        """
        if len(episodes) != len(actions):
            raise ArgumentError(
                f"step_batch: one action per episode, got {len(actions)} actions "
                f"for {len(episodes)} episodes"
            )
        if any(e.session is not self for e in episodes):
            raise ArgumentError("step_batch: the episodes must be of this session")
        if not episodes:
            return []
        outcomes: list[Any] = [None] * len(episodes)
        if use_tool and STEP_BATCH_TOOL in self.tools:
            # One call per shard (a sharded server's replicas each hold their own
            # episodes), all in flight together; a call that fails is each of its
            # episodes' error, and the other calls' steps are still recorded.
            shards: dict[str | None, list[int]] = {}
            if self.sharded:
                for i, episode in enumerate(episodes):
                    shards.setdefault(shard_of(episode.require_episode("step")), []).append(i)
            else:
                shards[None] = list(range(len(episodes)))

            async def batch(shard: str | None, indices: list[int]) -> None:
                try:
                    await self._step_batch_call(shard, indices, episodes, actions, outcomes)
                except OpenEnvError as exc:
                    for i in indices:
                        outcomes[i] = exc

            if len(shards) == 1:
                await batch(*next(iter(shards.items())))
            else:
                async with anyio.create_task_group() as group:
                    for shard, indices in shards.items():
                        group.start_soon(batch, shard, indices)
        else:

            async def step_one(i: int) -> None:
                try:
                    outcomes[i] = await episodes[i].step(actions[i])
                except OpenEnvError as exc:
                    outcomes[i] = exc

            async with anyio.create_task_group() as group:
                for i in range(len(episodes)):
                    group.start_soon(step_one, i)
        if not return_exceptions:
            for outcome in outcomes:
                if isinstance(outcome, OpenEnvError):
                    raise outcome
        return outcomes

    async def _step_batch_call(
        self,
        shard: str | None,
        indices: list[int],
        episodes: Sequence[Episode],
        actions: Sequence[Any],
        outcomes: list[Any],
    ) -> None:
        """One ``step_batch`` call for ``episodes[indices]`` (all on ``shard``)."""
        steps = [
            {"episode_id": episodes[i].require_episode("step"), "action": wire_action(actions[i])}
            for i in indices
        ]
        args: dict[str, Any] = {"steps": steps, "frames": self.wire_frames()}
        if shard is not None:
            args["shard"] = shard
        answer = await self.call(STEP_BATCH_TOOL, args)
        views = (answer.structured or {}).get("results")
        if not isinstance(views, list) or len(views) != len(steps):
            raise OpenEnvError(f"{STEP_BATCH_TOOL} answered {views!r:.200} for {len(steps)} steps")
        images = answer.images
        for i, view in zip(indices, views, strict=True):
            if "error" in view:
                outcomes[i] = error_from_wire(str(view["error"]))
            else:
                own = [images[view["image"]]] if "image" in view else []
                outcomes[i] = episodes[i].absorb_step(view, own)

    @property
    def sharded(self) -> bool:
        """Whether the server is sharded (replicas behind one address): its ``reset``
        and ``step_batch`` take the ``shard`` their calls are routed on."""
        reset = self.tools.get("reset", {}).get("inputSchema", {})
        return "shard" in reset.get("properties", {})

    def shard_of(self, handle: str | None) -> str | None:
        """The shard a handle lives on, where the server is sharded (else ``None``)."""
        return shard_of(handle) if handle is not None and self.sharded else None

    def __repr__(self) -> str:
        state = "connected" if self.connected else "closed" if self._closed else "not connected"
        return f"<Session {self.description!r} {state}>"


# -- an episode --------------------------------------------------------------------------------


class Episode:
    """One episode of a :class:`Session`, driven like a Gymnasium environment.

    The episode is created on the server by its first :meth:`reset` and named
    by its handle afterwards. Every call is an MCP tool call.
    """

    def __init__(self, session: Session) -> None:
        self.session = session
        self._episode_id: str | None = None
        self._observation: Any = None
        self._closed = False
        #: The env's random generator as the last reset answered it (``None``: it has none).
        self.np_random_state: dict[str, Any] | None = None
        #: The extras every call asks for (see :attr:`ServerSpec.extras`), by name.
        self.wanted_extras: tuple[str, ...] = ()
        #: The extras of the last answer, decoded.
        self.extras: dict[str, np.ndarray] = {}
        #: The ``info`` of the last answer.
        self.info: dict[str, Any] = {}

    # -- what the server is (the session's) ---------------------------------------------

    @property
    def server_spec(self) -> ServerSpec:
        """The server's static description."""
        return self.session.server_spec

    @property
    def env_name(self) -> str:
        """The environment's registered name (``"atari"``)."""
        return self.server_spec.name

    @property
    def actions(self) -> ActionSet | None:
        """The named discrete actions (ids, names, meanings), or ``None``."""
        return self.server_spec.action_set

    def get_action_meanings(self) -> list[str]:
        """Action names in value order (as ALE's ``get_action_meanings``).

        Raises:
            UnsupportedOption: for actions without names.
        """
        actions = self.server_spec.action_set
        if actions is None:
            raise UnsupportedOption(f"{self.env_name}'s actions have no names")
        return actions.names

    @property
    def action_space(self) -> spaces.Space[Any]:
        """The Gymnasium action space, exactly the environment's."""
        return self.server_spec.action_space

    @property
    def observation_space(self) -> spaces.Space[Any]:
        """The Gymnasium observation space, exactly the environment's."""
        return self.server_spec.observation_space

    @property
    def tool_names(self) -> list[str]:
        """Every tool the server lists."""
        return self.session.tool_names

    @property
    def frames(self) -> ClientFrames:
        """How array observations travel (``"zstd"``, ``"raw"`` or ``"png"``)."""
        return self.session.frames

    @property
    def connected(self) -> bool:
        """Whether the session is connected and this episode not closed."""
        return self.session.connected and not self._closed

    @property
    def splits(self) -> list[dict[str, Any]]:
        """The env's task splits (:attr:`Session.splits`)."""
        return self.session.splits

    async def tasks(self, split: str) -> list[Task]:
        """Every task of split ``split`` (:meth:`Session.tasks`)."""
        return await self.session.tasks(split)

    async def task_stats(self) -> dict[str, Any]:
        """Each task's ended episodes and successes on the server (:meth:`Session.task_stats`)."""
        return await self.session.task_stats()

    @property
    def episode_id(self) -> str | None:
        """This episode's handle (``None`` until the first :meth:`reset`)."""
        return self._episode_id

    # -- the episode ---------------------------------------------------------------------

    def require_episode(self, what: str) -> str:
        """This episode's handle, for a call that needs one.

        Raises:
            ResetNeeded: before the first reset, or after :meth:`close`.
        """
        if self._closed:
            raise ResetNeeded(f"{what}: this episode is closed")
        if self._episode_id is None:
            raise ResetNeeded(f"{what} before reset: call reset() first")
        return self._episode_id

    async def _call(self, tool: str, args: dict[str, Any]) -> ToolAnswer:
        if self._closed:
            raise ResetNeeded(f"{tool}: this episode is closed")
        return await self.session.call(tool, args)

    def _absorb(self, answer: ToolAnswer) -> tuple[Any, dict[str, Any]]:
        return self.absorb(answer.structured, answer.images)

    def absorb(
        self, view: dict[str, Any] | None, images: Sequence[dict[str, Any]] = ()
    ) -> tuple[Any, dict[str, Any]]:
        """Take an episode view the server sent for this episode: observation and info."""
        obs, info = self.session.read_view(view, images)
        self._episode_id = str(info["episode_id"])
        self._observation = obs
        self.info = info
        assert view is not None  # read_view refuses None
        extras = view.get("extras")
        self.extras = (
            {name: decode_raw(value) for name, value in extras.items()}
            if isinstance(extras, dict)
            else {}
        )
        if "np_random" in view:
            self.np_random_state = view["np_random"]
        return obs, info

    def absorb_step(
        self, view: dict[str, Any] | None, images: Sequence[dict[str, Any]] = ()
    ) -> Transition:
        """Take a step's view for this episode: the Gymnasium five."""
        obs, info = self.absorb(view, images)
        return obs, float(info["reward"]), info["terminated"], info["truncated"], info

    async def reset(
        self,
        *,
        seed: int | None = None,
        options: dict[str, Any] | None = None,
        from_snapshot: str | None = None,
        np_random: dict[str, Any] | None = None,
    ) -> tuple[Any, dict[str, Any]]:
        """Start a new episode (creating it on the server the first time).

        Args:
            seed: reproduces the episode exactly (any non-negative integer, as
                Gymnasium takes); ``None`` continues the episode's own random
                stream, as a Gymnasium env's ``reset()`` does (a new episode
                draws fresh entropy).
            options: the environment's per-episode options.
            from_snapshot: continue from a :meth:`snapshot` handle instead
                (not combinable with ``seed`` or ``options``).
            np_random: without a seed, the state to continue the env's generator
                from (:attr:`np_random_state` as a copy of it drew on).

        Returns:
            ``(observation, info)``; ``info`` holds every structured field the
            server sent (``episode_id``, ``step``, ``episode_return``, the
            environment's own fields...).
        """
        args: dict[str, Any] = {"frames": self.session.wire_frames()}
        if seed is not None:
            try:
                args["seed"] = int(operator.index(seed))  # numpy integers and bools too
            except TypeError:
                raise ArgumentError(
                    f"seed must be a non-negative integer, got {type(seed).__name__} {seed!r:.60}"
                ) from None
        if options:
            args["options"] = options
        if np_random is not None:
            args["np_random"] = np_random
        if self.wanted_extras:
            args["extras"] = list(self.wanted_extras)
        session = self.session
        if from_snapshot is not None:
            args["from_snapshot"] = from_snapshot
            # On a sharded server a fork runs where its snapshot is (a GRPO group together).
            pin = session.shard_of(from_snapshot)
            if pin is not None:
                args["shard"] = pin
        if self._episode_id is None:
            return self._absorb(await self._call("reset", {**args, "new_episode": True}))
        restart = {**args, "episode_id": self._episode_id}
        shard = session.shard_of(self._episode_id)
        if shard is not None:
            restart.setdefault("shard", shard)
        try:
            answer = await self._call("reset", restart)
        except UnknownEpisode as exc:
            if isinstance(exc, UnknownSnapshot) or from_snapshot is not None:
                raise
            # The server evicted the idle episode (or restarted, or its shard is gone):
            # a reset starts afresh anyway, so start it as a new one.
            log.info("episode %s is gone (%s); starting a new one", self._episode_id, exc)
            self._episode_id = None
            answer = await self._call("reset", {**args, "new_episode": True})
        return self._absorb(answer)

    async def step(self, action: Any) -> Transition:
        """Take one action: a value (or a name, for named actions) of the action space.

        Returns:
            ``(observation, reward, terminated, truncated, info)``.

        Raises:
            ResetNeeded: before the first :meth:`reset`, or after the episode ended.
            InvalidAction: the server's message names what is legal.
        """
        args = {
            "episode_id": self.require_episode("step"),
            "action": wire_action(action),
            "frames": self.session.wire_frames(),
        }
        if self.wanted_extras:
            args["extras"] = list(self.wanted_extras)
        answer = await self._call("step", args)
        return self.absorb_step(answer.structured, answer.images)

    async def state(self) -> tuple[Any, dict[str, Any]]:
        """The current observation and info, without acting."""
        args: dict[str, Any] = {
            "episode_id": self.require_episode("state"),
            "frames": self.session.wire_frames(),
        }
        if self.wanted_extras:
            args["extras"] = list(self.wanted_extras)
        return self._absorb(await self._call("state", args))

    async def render(self) -> np.ndarray | None:
        """The current frame as an ``HxWx3`` uint8 array, or ``None`` without one.

        Where the observation is the frame this costs no call.
        """
        spec = self.server_spec
        if not spec.has_frame:
            return None
        if spec.frame_is_observation and isinstance(self._observation, np.ndarray):
            return np.array(self._observation)
        answer = await self._call(
            "state", {"episode_id": self.require_episode("render"), "frames": "png"}
        )
        return _frame(answer.images)

    async def call(self, tool: str, **args: Any) -> dict[str, Any]:
        """Call any tool of the server, such as an environment's own (``legal_actions``).

        This episode's handle is passed to tools that take an ``episode_id``; before
        the first reset only ``legal_actions`` may be called (it lists every action).

        Returns:
            The tool's structured result (or ``{"text": ...}`` for a text-only one).
        """
        listed = self.session.require_tool(tool)
        takes_episode = "episode_id" in listed.get("inputSchema", {}).get("properties", {})
        if takes_episode and "episode_id" not in args:
            if self.episode_id is not None:
                args["episode_id"] = self.episode_id
            elif tool != LEGAL_ACTIONS_TOOL:
                self.require_episode(tool)
        answer = await self._call(tool, {k: wire_action(v) for k, v in args.items()})
        if answer.structured is not None:
            return dict(answer.structured)
        return {"text": answer.text}

    def forget(self) -> None:
        """Drop this episode's handle without closing it (its server lost it): the next
        :meth:`reset` starts a new episode."""
        self._episode_id = None

    async def snapshot(self) -> str:
        """Save this episode's full state; returns a handle for ``reset(from_snapshot=...)``."""
        answer = await self._call("snapshot", {"episode_id": self.require_episode("snapshot")})
        return str((answer.structured or {})["snapshot_id"])

    async def release_snapshot(self, snapshot_id: str) -> None:
        """Free a snapshot on the server."""
        await self._call("release_snapshot", {"snapshot_id": snapshot_id})

    def spawn(self) -> Episode:
        """Another episode on this session (its own handle, created by its first reset)."""
        return self.session.episode()

    async def close(self) -> None:
        """Close the episode on the server. Idempotent; never hangs on a dead server."""
        if self._closed:
            return
        self._closed = True
        episode, self._episode_id = self._episode_id, None
        if episode is not None and self.session.connected:
            # Closed even when the caller is being cancelled (an eval stopped mid-run): the
            # server's episode and its recording end now, not at its idle timeout.
            with anyio.CancelScope(shield=True), anyio.move_on_after(_CLOSE_TIMEOUT):
                try:
                    await self.session.call("close", {"episode_id": episode})
                except OpenEnvError as exc:  # already gone, or the server is: nothing to free
                    log.debug("closing episode %s: %s", episode, exc)

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<Episode {self._episode_id} of {self.session.description!r} ({state})>"


async def step_batch(
    episodes: Sequence[Episode],
    actions: Sequence[Any],
    *,
    return_exceptions: bool = False,
    use_tool: bool = True,
) -> list[Any]:
    """Step episodes of one session together (:meth:`Session.step_batch`).

    ``episodes`` share a session (a client and its :meth:`~Episode.spawn` siblings,
    each reset); ``actions`` holds one action for each::

        group = [root, *(root.spawn() for _ in range(15))]
        ...
        transitions = await step_batch(group, actions)
    """
    if not episodes:
        if actions:
            raise ArgumentError(f"step_batch: one action per episode, got {len(actions)} for 0")
        return []
    return await episodes[0].session.step_batch(
        episodes, actions, return_exceptions=return_exceptions, use_tool=use_tool
    )

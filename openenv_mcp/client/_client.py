"""``MCPEnvClient``: one episode of an environment server, Gymnasium-shaped, over MCP."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import anyio
import mcp_types
import numpy as np
from gymnasium import spaces

from openenv_mcp.client._connect import Connection, ServerLog, Target
from openenv_mcp.client._spaces import ServerSpec, action_space, observation_space
from openenv_mcp.codecs import decode_raw, is_raw, png_from_b64
from openenv_mcp.environment import ActionSet
from openenv_mcp.errors import (
    ArgumentError,
    OpenEnvError,
    ResetNeeded,
    UnknownEpisode,
    UnknownSnapshot,
    UnsupportedOption,
    error_from_wire,
)

if TYPE_CHECKING:
    from openenv_mcp.client._gym import MCPGymEnv
    from openenv_mcp.client._sync import SyncEnvClient

__all__ = ["STEP_BATCH_TOOL", "ClientFrames", "MCPEnvClient", "step_batch"]

log = logging.getLogger("openenv_mcp.client")

#: How array observations travel: zstd-compressed or plain bytes, or PNG images;
#: all decoded here to arrays.
ClientFrames = Literal["zstd", "raw", "png"]

#: Above the server's default per-call timeout (60 s), so a slow environment call
#: reports the server's own EnvCallTimeout before this side gives up on the server.
DEFAULT_TIMEOUT = 90.0
#: Starting a Python server (imports, ROMs) takes seconds on a busy machine.
DEFAULT_CONNECT_TIMEOUT = 120.0

Transition = tuple[Any, float, bool, bool, dict[str, Any]]

#: The server tool that steps many episodes in one call.
STEP_BATCH_TOOL = "step_batch"


def wire_action(action: Any) -> Any:
    """An action as JSON: numpy scalars and arrays become Python values."""
    if isinstance(action, np.generic):
        return action.item()
    if isinstance(action, np.ndarray):
        return action.tolist()
    return action


class MCPEnvClient:
    """One episode of an openenv-mcp server, driven like a Gymnasium environment.

    Every call is an MCP tool call. The transport follows from ``target``: a
    FastMCP server object (in memory), a command such as
    ``"openenv-mcp serve atari --game pong"`` (a stdio subprocess this client
    starts, owns and reaps), or an ``http(s)://`` URL (Streamable HTTP)::

        async with MCPEnvClient("openenv-mcp serve atari --game pong") as env:
            obs, info = await env.reset(seed=0)
            obs, reward, terminated, truncated, info = await env.step("FIRE")

    The episode is created on the server by the first :meth:`reset` and named by
    its handle afterwards. :meth:`spawn` opens more episodes on the same
    connection (a GRPO group); :meth:`sync` gives the same API without ``await``.

    Args:
        target: what to connect to (see above).
        frames: how array observations travel; the client always hands out
            numpy arrays. ``"zstd"`` (the default: the array's bytes
            zstd-compressed, a few hundred bytes for an Atari frame, the
            fastest), ``"raw"`` (the bytes as they are) or ``"png"`` (images;
            only for observations that are the frame).
        timeout: seconds one call may take; past it the server counts as hung
            and :class:`~openenv_mcp.errors.ServerDied` is raised.
        connect_timeout: seconds to start the server and connect.
        check_results: re-validate every result against the tool's output
            schema (the MCP SDK's default; off by default for speed).
        server_log: where a stdio server's stderr goes (a path, appended to,
            or an open file); by default it is kept in a temporary file and its tail is
            quoted in :class:`~openenv_mcp.errors.ServerDied`.
        headers: extra HTTP headers, e.g. ``{"Authorization": "Bearer TOKEN"}``
            for a server started with ``--auth-token``.

    Raises:
        ArgumentError: for a target of the wrong type.
    """

    def __init__(
        self,
        target: Target,
        *,
        frames: ClientFrames = "zstd",
        timeout: float = DEFAULT_TIMEOUT,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        check_results: bool = False,
        server_log: ServerLog | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        if frames not in ("zstd", "raw", "png"):
            raise ArgumentError(f"frames must be 'zstd', 'raw' or 'png', got {frames!r}")
        options: dict[str, Any] = {
            "frames": frames,
            "timeout": timeout,
            "connect_timeout": connect_timeout,
            "check_results": check_results,
            "server_log": server_log,
            "headers": headers,
        }
        connection = Connection(
            target,
            timeout=timeout,
            connect_timeout=connect_timeout,
            check_results=check_results,
            server_log=server_log,
            headers=headers,
        )
        self._setup(connection, owner=True, options=options)

    def _setup(self, connection: Connection, *, owner: bool, options: dict[str, Any]) -> None:
        self._conn = connection
        self._owner = owner
        self._options = options
        self.frames: ClientFrames = options["frames"]
        self._episode_id: str | None = None
        self._observation: Any = None
        self._closed = False
        self._action_space: spaces.Space[Any] | None = None
        self._observation_space: spaces.Space[Any] | None = None

    @classmethod
    def _sibling(cls, parent: MCPEnvClient) -> MCPEnvClient:
        child = cls.__new__(cls)
        child._setup(parent._conn, owner=False, options=parent._options)
        return child

    # -- connection ----------------------------------------------------------------------

    async def __aenter__(self) -> MCPEnvClient:
        return await self.connect()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def connect(self) -> MCPEnvClient:
        """Connect and read the server's spec (``async with`` does this). Idempotent.

        Raises:
            ServerDied: the server did not start or answer in time.
            ArgumentError: the target is not an openenv-mcp environment server,
                or ``frames="png"`` cannot carry its observations.
        """
        await self._conn.open()
        spec = self.spec
        obs = spec.observation
        if self.frames == "png" and obs.kind == "array" and not obs.frame_is_observation:
            await self.close()
            raise ArgumentError(
                f"frames='png' needs observations that are frames, but {spec.env}'s "
                f"observation is a {obs.dtype} {list(obs.shape or ())} array; use frames='zstd'"
            )
        return self

    @property
    def connected(self) -> bool:
        """Whether the connection is open (and this client not closed)."""
        return self._conn.is_open and not self._closed

    @property
    def target(self) -> Target:
        """What this client connects to."""
        return self._conn.target

    @property
    def spec(self) -> ServerSpec:
        """The server's static description (its ``openenv://ENV/spec`` resource)."""
        if self._conn.spec is None:
            raise OpenEnvError("not connected: use `async with MCPEnvClient(...)` or connect()")
        return self._conn.spec

    @property
    def env_name(self) -> str:
        """The environment's registered name (``"atari"``)."""
        return self.spec.env

    @property
    def actions(self) -> ActionSet | None:
        """The discrete actions (ids, names, meanings), or ``None`` for free-form actions."""
        return self.spec.actions

    def get_action_meanings(self) -> list[str]:
        """Action names in index order (as ALE's ``get_action_meanings``).

        Raises:
            UnsupportedOption: for free-form actions.
        """
        if self.spec.actions is None:
            raise UnsupportedOption(f"{self.env_name} has free-form actions, not named ones")
        return self.spec.actions.names

    @property
    def action_space(self) -> spaces.Space[Any]:
        """The Gymnasium action space, built from the server's spec."""
        if self._action_space is None:
            self._action_space = action_space(self.spec)
        return self._action_space

    @property
    def observation_space(self) -> spaces.Space[Any]:
        """The Gymnasium observation space, built from the server's spec."""
        if self._observation_space is None:
            self._observation_space = observation_space(self.spec)
        return self._observation_space

    @property
    def tool_names(self) -> list[str]:
        """Every tool the server lists."""
        return sorted(self._conn.tools)

    @property
    def episode_id(self) -> str | None:
        """This client's episode handle (``None`` until the first :meth:`reset`)."""
        return self._episode_id

    # -- the episode ---------------------------------------------------------------------

    def _wire_frames(self) -> str:
        # Only array observations travel as frames; asking for "raw" elsewhere
        # (where it means the JSON observation) spares the server a PNG encode.
        return self.frames if self.spec.observation.kind == "array" else "raw"

    def _observe(self, result: mcp_types.CallToolResult) -> tuple[Any, dict[str, Any]]:
        """Observation and info from an episode tool's result."""
        return self._absorb(result.structured_content, result.content)

    def _absorb(
        self, data: dict[str, Any] | None, content: Sequence[mcp_types.ContentBlock] = ()
    ) -> tuple[Any, dict[str, Any]]:
        """Observation and info from an episode view (``reset``/``step``/``state``'s answer)."""
        if data is None:
            raise OpenEnvError("the server sent an episode result without structured content")
        self._episode_id = str(data["episode_id"])
        if "observation" in data:
            value = data["observation"]
            obs = decode_raw(value) if is_raw(value) else value
        else:
            obs = self._frame(content)
        self._observation = obs
        # The environment's fields, then the episode's (which win a name clash).
        info: dict[str, Any] = dict(data.get("info") or {})
        for key in ("episode_id", "status", "step", "reward", "episode_return"):
            info[key] = data[key]
        info["terminated"] = bool(data["terminated"])
        info["truncated"] = bool(data["truncated"])
        return obs, info

    def _frame(self, content: Sequence[mcp_types.ContentBlock]) -> np.ndarray | None:
        for block in content:
            if isinstance(block, mcp_types.ImageContent):
                frame = png_from_b64(block.data)
                # PIL hands out read-only arrays; callers may scale frames in place.
                return frame if frame.flags.writeable else frame.copy()
        return None

    async def reset(
        self,
        *,
        seed: int | None = None,
        options: dict[str, Any] | None = None,
        from_snapshot: str | None = None,
    ) -> tuple[Any, dict[str, Any]]:
        """Start a new episode (creating it on the server the first time).

        Args:
            seed: reproduces the episode exactly (``0..2**31-1``); ``None``
                draws fresh entropy on the server.
            options: the environment's per-episode options.
            from_snapshot: continue from a :meth:`snapshot` handle instead
                (not combinable with ``seed`` or ``options``).

        Returns:
            ``(observation, info)``; ``info`` holds every structured field the
            server sent (``episode_id``, ``step``, ``episode_return``, the
            environment's own fields...).
        """
        args: dict[str, Any] = {"frames": self._wire_frames()}
        if seed is not None:
            args["seed"] = int(seed)
        if options:
            args["options"] = options
        if from_snapshot is not None:
            args["from_snapshot"] = from_snapshot
        if self._episode_id is None:
            result = await self._call("reset", {**args, "new_episode": True})
        else:
            try:
                result = await self._call("reset", {**args, "episode_id": self._episode_id})
            except UnknownEpisode as exc:
                if isinstance(exc, UnknownSnapshot):
                    raise
                # The server evicted the idle episode (or restarted it): a reset
                # starts afresh anyway, so start it in a new slot.
                log.info("episode %s is gone (%s); starting a new one", self._episode_id, exc)
                self._episode_id = None
                result = await self._call("reset", {**args, "new_episode": True})
        return self._observe(result)

    async def step(self, action: Any) -> Transition:
        """Take one action: an index or a name for discrete actions, a message for text.

        Returns:
            ``(observation, reward, terminated, truncated, info)``.

        Raises:
            ResetNeeded: before the first :meth:`reset`, or after the episode ended.
            InvalidAction: the server's message names what is legal.
        """
        episode = self._require_episode("step")
        args = {"episode_id": episode, "action": wire_action(action), "frames": self._wire_frames()}
        return self._transition(await self._call("step", args))

    def _transition(self, result: mcp_types.CallToolResult) -> Transition:
        return self._transition_of(result.structured_content, result.content)

    def _transition_of(
        self, data: dict[str, Any] | None, content: Sequence[mcp_types.ContentBlock] = ()
    ) -> Transition:
        obs, info = self._absorb(data, content)
        return obs, float(info["reward"]), info["terminated"], info["truncated"], info

    async def state(self) -> tuple[Any, dict[str, Any]]:
        """The current observation and info, without acting."""
        episode = self._require_episode("state")
        result = await self._call("state", {"episode_id": episode, "frames": self._wire_frames()})
        return self._observe(result)

    async def render(self) -> np.ndarray | None:
        """The current frame as an ``HxWx3`` uint8 array, or ``None`` without one.

        Where the observation is the frame this costs no call.
        """
        obs_spec = self.spec.observation
        if not obs_spec.has_frame:
            return None
        if obs_spec.frame_is_observation and isinstance(self._observation, np.ndarray):
            return np.array(self._observation)
        episode = self._require_episode("render")
        result = await self._call("state", {"episode_id": episode, "frames": "png"})
        return self._frame(result.content)

    async def call(self, tool: str, **args: Any) -> dict[str, Any]:
        """Call any tool of the server, such as an environment's own (``legal_actions``).

        This client's episode is passed for tools that take an ``episode_id``.

        Returns:
            The tool's structured result (or ``{"text": ...}`` for a text-only one).
        """
        spec = self._conn.require_tool(tool)
        if "episode_id" in spec.input_schema.get("properties", {}) and "episode_id" not in args:
            args["episode_id"] = self._require_episode(tool)
        result = await self._call(tool, {k: wire_action(v) for k, v in args.items()})
        if result.structured_content is not None:
            return dict(result.structured_content)
        text = " ".join(c.text for c in result.content if isinstance(c, mcp_types.TextContent))
        return {"text": text}

    async def snapshot(self) -> str:
        """Save this episode's full state; returns a handle for ``reset(from_snapshot=...)``."""
        episode = self._require_episode("snapshot")
        result = await self._call("snapshot", {"episode_id": episode})
        data = result.structured_content or {}
        return str(data["snapshot_id"])

    async def release_snapshot(self, snapshot_id: str) -> None:
        """Free a snapshot on the server."""
        await self._call("release_snapshot", {"snapshot_id": snapshot_id})

    def spawn(self) -> MCPEnvClient:
        """Another client on this connection, with an episode of its own.

        Its episode is created by its first :meth:`reset`; closing it closes
        that episode only. Closing this (owning) client closes the connection.
        """
        if not self.connected:
            raise OpenEnvError("spawn() needs a connected client: connect it first")
        return MCPEnvClient._sibling(self)

    async def close(self) -> None:
        """Close the episode on the server, then (for the owning client) the connection.

        Idempotent; never hangs on a dead server.
        """
        if self._closed:
            return
        self._closed = True
        episode, self._episode_id = self._episode_id, None
        try:
            if episode is not None and self._conn.is_open:
                await self._conn.call("close", {"episode_id": episode})
        except OpenEnvError as exc:  # already gone, or the server is: nothing to free
            log.debug("closing episode %s: %s", episode, exc)
        finally:
            if self._owner:
                await self._conn.aclose()

    # -- helpers -------------------------------------------------------------------------

    def _require_episode(self, what: str) -> str:
        if self._closed:
            raise ResetNeeded(f"{what}: this client is closed")
        if self._episode_id is None:
            raise ResetNeeded(f"{what} before reset: call reset() first")
        return self._episode_id

    async def _call(self, tool: str, args: dict[str, Any]) -> mcp_types.CallToolResult:
        if self._closed:
            raise ResetNeeded(f"{tool}: this client is closed")
        return await self._conn.call(tool, args)

    # -- other faces -----------------------------------------------------------------------

    def sync(self) -> SyncEnvClient:
        """The same client without ``await``: for scripts, notebooks and sync trainers.

        It runs on an event loop of its own (a background thread), so it works
        in a plain script and inside a running event loop alike. Call it on a
        client that is not connected yet; it connects.
        """
        from openenv_mcp.client._sync import SyncEnvClient

        return SyncEnvClient.start(self)

    def as_gym(self, render_mode: str | None = None) -> MCPGymEnv:
        """A :class:`gymnasium.Env` over this client (see :class:`MCPGymEnv`)."""
        from openenv_mcp.client._gym import MCPGymEnv

        return MCPGymEnv.from_client(self.sync(), render_mode=render_mode)

    def __repr__(self) -> str:
        state = "connected" if self.connected else "closed" if self._closed else "not connected"
        return f"<MCPEnvClient {self._conn.description!r} {state} episode={self._episode_id}>"


async def step_batch(
    clients: Sequence[MCPEnvClient],
    actions: Sequence[Any],
    *,
    return_exceptions: bool = False,
    use_tool: bool = True,
) -> list[Any]:
    """Step several episodes of one server together, in one ``step_batch`` call.

    ``clients`` share a connection (a client and its :meth:`~MCPEnvClient.spawn`
    siblings, each reset); ``actions`` holds one action for each::

        group = [root, *(root.spawn() for _ in range(15))]
        ...
        transitions = await step_batch(group, actions)

    Where the server does not list ``step_batch`` (or with ``use_tool=False``),
    each episode gets its own ``step`` call, all in flight together. Either way
    every episode that stepped is recorded in its client before an error is
    raised, so no step happens on the server unseen here.

    Returns:
        One ``(observation, reward, terminated, truncated, info)`` per client,
        in order (with ``return_exceptions``, an episode's error in its place).

    Raises:
        OpenEnvError: the first episode's error (an illegal action, an ended
            episode...), unless ``return_exceptions``.
        ArgumentError: ``clients`` and ``actions`` differ in length, or the
            clients are not on one connection.
    """
    if len(clients) != len(actions):
        raise ArgumentError(
            f"step_batch: one action per client, got {len(actions)} actions "
            f"for {len(clients)} clients"
        )
    if not clients:
        return []
    conn = clients[0]._conn
    if any(c._conn is not conn for c in clients):
        raise ArgumentError(
            "step_batch: the clients must share one connection (a client and its spawn()s)"
        )
    outcomes: list[Any] = [None] * len(clients)
    if use_tool and STEP_BATCH_TOOL in conn.tools:
        steps = [
            {"episode_id": c._require_episode("step"), "action": wire_action(a)}
            for c, a in zip(clients, actions, strict=True)
        ]
        answer = await conn.call(
            STEP_BATCH_TOOL, {"steps": steps, "frames": clients[0]._wire_frames()}
        )
        views = (answer.structured_content or {}).get("results")
        if not isinstance(views, list) or len(views) != len(steps):
            raise OpenEnvError(f"{STEP_BATCH_TOOL} answered {views!r:.200} for {len(steps)} steps")
        images = [c for c in answer.content if isinstance(c, mcp_types.ImageContent)]
        for i, (client, view) in enumerate(zip(clients, views, strict=True)):
            if "error" in view:
                outcomes[i] = error_from_wire(str(view["error"]))
            else:
                content = [images[view["image"]]] if "image" in view else []
                outcomes[i] = client._transition_of(view, content)
    else:

        async def step_one(i: int) -> None:
            try:
                outcomes[i] = await clients[i].step(actions[i])
            except OpenEnvError as exc:
                outcomes[i] = exc

        async with anyio.create_task_group() as group:
            for i in range(len(clients)):
                group.start_soon(step_one, i)
    if not return_exceptions:
        for outcome in outcomes:
            if isinstance(outcome, OpenEnvError):
                raise outcome
    return outcomes

"""What an OpenEnv environment declares, and what one of its answers holds.

Both ways of reaching an OpenEnv environment (a running server, a class in this
process) end here: a :class:`Described` (its Action / Observation / State
schemas, its name, its MCP tools) and, per reset or step, an :class:`Observed`
(OpenEnv's ``{observation, reward, done}``, with image-like fields found).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from openenv_mcp.spaces import RAW_ARRAY_SCHEMA, ToolCall
from openenv_mcp_envs.openenv._images import MAX_FRAME_PIXELS, find_pictures

__all__ = [
    "MAX_OBSERVATION_VALUES",
    "MAX_REPLY_BYTES",
    "MAX_REPLY_VALUES",
    "OBSERVATION_ENVELOPE",
    "STARTUP_TIMEOUT",
    "Described",
    "Limits",
    "Observed",
    "ToolCall",
    "action_fields_schema",
    "is_tool_call_schema",
    "observation_fields_schema",
]

#: What OpenEnv's wire form takes out of an Observation model (``serialize_observation``).
OBSERVATION_ENVELOPE = ("reward", "done", "metadata")

#: Largest answer taken from an OpenEnv server, in bytes (one WebSocket message):
#: ``--max-reply-bytes``. Refused from its frame's length, before it is read.
MAX_REPLY_BYTES = 32 * 1024 * 1024
#: Most JSON values one answer may hold (a string counts its two quotes besides):
#: ``--max-reply-values``. Counted in its bytes before it is parsed; parsed, a value so
#: counted takes at most ~60 bytes, 4 Mi of them 250 MB, and under 0.3 s of parsing
#: (holding Python's lock). An OpenEnv BrowserGym screenshot of 1280x720 as nested lists
#: is 3.7 Mi.
MAX_REPLY_VALUES = 4 * 1024 * 1024
#: Of those, the most that go on to MCP clients as they came (all but pixel lists,
#: which become compact arrays): ``--max-observation-values``. Each one costs the
#: server memory and time on its way to the client (1 Mi of them, ~170 MB).
MAX_OBSERVATION_VALUES = 1024 * 1024
#: Seconds for everything read from an OpenEnv server at start-up, together
#: (``/schema``, ``/metadata``, its tools): ``--startup-timeout``.
STARTUP_TIMEOUT = 30.0


@dataclass(frozen=True)
class Limits:
    """What is taken from an OpenEnv environment (see the constants for each)."""

    reply_bytes: int = MAX_REPLY_BYTES
    reply_values: int = MAX_REPLY_VALUES
    observation_values: int = MAX_OBSERVATION_VALUES
    frame_pixels: int = MAX_FRAME_PIXELS
    startup_timeout: float = STARTUP_TIMEOUT


def is_tool_call_schema(schema: dict[str, Any]) -> bool:
    """Whether an Action schema is OpenEnv's ``CallToolAction`` (an MCP environment)."""
    properties = schema.get("properties") or {}
    return "tool_name" in properties and "arguments" in properties


@dataclass(frozen=True)
class Described:
    """An OpenEnv environment, as it declares itself.

    Attributes:
        origin: its base URL, or its class as ``module:Class``.
        name, description: from its ``/metadata`` (``get_metadata()``).
        action_schema, observation_schema, state_schema: its models' JSON schemas.
        tools: an MCP environment's tools (``None`` for any other).
        has_rubric: it carries an OpenEnv rubric (in this process only).
        reset_schema: the JSON schema of its reset's keyword arguments, where it publishes
            one (``/schema``'s ``reset``: OpenEnv's own servers publish none).
        takes_seed: whether its reset takes a seed: ``True`` it names one, ``False`` a seed
            is dropped (OpenEnv passes a reset only the arguments it names, unless it takes
            ``**kwargs``), ``None`` not known (a running server that publishes no reset
            schema; a reset taking ``**kwargs``).
    """

    origin: str
    name: str
    description: str
    action_schema: dict[str, Any]
    observation_schema: dict[str, Any]
    state_schema: dict[str, Any]
    tools: list[ToolCall] | None = None
    has_rubric: bool = False
    reset_schema: dict[str, Any] | None = None
    takes_seed: bool | None = None


def action_fields_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The Action model's schema as a tool argument: its fields, without the ``metadata``
    every OpenEnv Action carries (accepted, never asked for)."""
    shown = copy.deepcopy(schema)
    properties = shown.get("properties") or {}
    properties.pop("metadata", None)
    if "required" in shown:
        shown["required"] = [r for r in shown["required"] if r != "metadata"]
    shown["additionalProperties"] = False
    return shown


def observation_fields_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The Observation model's schema as its fields travel to MCP clients: without
    ``reward``/``done``/``metadata`` (they become the result's own fields), with
    every array field also taking a raw array (pixels travel compact), and nothing
    required: a reset's observation often lacks fields of a step's (an MCP
    environment's ``tool_name``)."""
    shown = copy.deepcopy(schema)
    properties = shown.get("properties") or {}
    for key in OBSERVATION_ENVELOPE:
        properties.pop(key, None)
    for key, prop in properties.items():
        if isinstance(prop, dict) and "array" in (prop.get("type"), *_types(prop)):
            properties[key] = {"anyOf": [prop, RAW_ARRAY_SCHEMA]}
    shown.pop("required", None)
    shown.pop("additionalProperties", None)
    return shown


def _types(prop: dict[str, Any]) -> list[Any]:
    return [b.get("type") for b in prop.get("anyOf", []) if isinstance(b, dict)]


@dataclass
class Observed:
    """One answer of an OpenEnv environment (to a reset or a step).

    Attributes:
        observation: the Observation's fields (OpenEnv's wire form), pixel arrays
            among them as numpy arrays.
        reward: its reward (``None`` as 0).
        done: its ``done``.
        metadata: its ``metadata`` (in this process only: OpenEnv's wire drops it).
        rubric: each named rubric's last score (in this process only).
        frame: the first image-like field: an ``HxWxC`` array, or encoded image bytes.
        array_values: how many JSON values its pixel lists held (now arrays).
    """

    observation: dict[str, Any]
    reward: float
    done: bool
    metadata: dict[str, Any] = field(default_factory=dict)
    rubric: dict[str, float] = field(default_factory=dict)
    frame: np.ndarray | bytes | None = None
    array_values: int = 0

    @classmethod
    def from_payload(
        cls,
        payload: dict[str, Any],
        metadata: dict[str, Any] | None = None,
        rubric: dict[str, float] | None = None,
        max_pixels: int = MAX_FRAME_PIXELS,
    ) -> Observed:
        """From OpenEnv's ``{observation, reward, done}`` (``serialize_observation``).

        Raises:
            TooLarge: a picture in it has more than ``max_pixels`` pixels.
        """
        observation = payload.get("observation")
        if not isinstance(observation, dict):
            observation = {"value": observation}
        observation, frame, arrays = find_pictures(observation, max_pixels)
        reward = payload.get("reward")
        return cls(
            observation=observation,
            reward=float(reward) if isinstance(reward, (int, float)) else 0.0,
            done=bool(payload.get("done", False)),
            metadata=dict(metadata or {}),
            rubric=dict(rubric or {}),
            frame=frame,
            array_values=arrays,
        )

    @property
    def truncated(self) -> bool:
        """Whether the episode was cut short, where the environment says so (OpenEnv has
        only ``done``: some environments add ``truncated`` to their metadata or fields)."""
        return bool(self.metadata.get("truncated") or self.observation.get("truncated") is True)

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

from openenv_env._images import find_images
from openenv_mcp.spaces import RAW_ARRAY_SCHEMA, ToolCall

__all__ = [
    "OBSERVATION_ENVELOPE",
    "Described",
    "Observed",
    "ToolCall",
    "action_fields_schema",
    "is_tool_call_schema",
    "observation_fields_schema",
]

#: What OpenEnv's wire form takes out of an Observation model (``serialize_observation``).
OBSERVATION_ENVELOPE = ("reward", "done", "metadata")


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
    """

    origin: str
    name: str
    description: str
    action_schema: dict[str, Any]
    observation_schema: dict[str, Any]
    state_schema: dict[str, Any]
    tools: list[ToolCall] | None = None
    has_rubric: bool = False


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
    """

    observation: dict[str, Any]
    reward: float
    done: bool
    metadata: dict[str, Any] = field(default_factory=dict)
    rubric: dict[str, float] = field(default_factory=dict)
    frame: np.ndarray | bytes | None = None

    @classmethod
    def from_payload(
        cls,
        payload: dict[str, Any],
        metadata: dict[str, Any] | None = None,
        rubric: dict[str, float] | None = None,
    ) -> Observed:
        """From OpenEnv's ``{observation, reward, done}`` (``serialize_observation``)."""
        observation = payload.get("observation")
        if not isinstance(observation, dict):
            observation = {"value": observation}
        observation, frame = find_images(observation)
        reward = payload.get("reward")
        return cls(
            observation=observation,
            reward=float(reward) if isinstance(reward, (int, float)) else 0.0,
            done=bool(payload.get("done", False)),
            metadata=dict(metadata or {}),
            rubric=dict(rubric or {}),
            frame=frame,
        )

    @property
    def truncated(self) -> bool:
        """Whether the episode was cut short, where the environment says so (OpenEnv has
        only ``done``: some environments add ``truncated`` to their metadata or fields)."""
        return bool(self.metadata.get("truncated") or self.observation.get("truncated") is True)

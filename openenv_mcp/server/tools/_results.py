"""Tool results: the one mapping of errors, JSON answers, and the shared output schema.

Every answer is a :class:`~openenv_mcp.pipeline.view.Reply`, the wire form the
episode pipeline's view writes for episode operations. Every episode tool
(``reset``, ``step``, ``state``, action tools) answers with the same shape,
:func:`episode_output_schema`, so clients parse one thing.
"""

from __future__ import annotations

import json
from typing import Any

from openenv_mcp.errors import ERROR_META, OpenEnvError
from openenv_mcp.pipeline.view import Reply, image_block, text_block
from openenv_mcp.spaces import RAW_ARRAY_SCHEMA, is_array_space, value_schema
from openenv_mcp.spec import EnvSpec
from openenv_mcp.wire.rng import RNG_STATE_SCHEMA

__all__ = [
    "Reply",
    "episode_output_schema",
    "error_result",
    "error_text",
    "image_block",
    "json_reply",
    "text_block",
]

#: Longest error text sent to a client (its head and tail are kept): a message
#: that quotes a megabyte argument must not send the megabyte back.
MAX_ERROR_TEXT = 2000
_ERROR_TAIL = 500


def json_reply(data: dict[str, Any]) -> Reply:
    """A small structured answer, with its JSON as the text."""
    return Reply([text_block(json.dumps(data))], data)


def error_text(exc: OpenEnvError) -> str:
    """``"Name: message"``, cut in the middle when an echoed argument made it huge."""
    text = f"{exc.code}: {exc}"
    if len(text) <= MAX_ERROR_TEXT:
        return text
    head = MAX_ERROR_TEXT - _ERROR_TAIL
    cut = len(text) - head - _ERROR_TAIL
    return f"{text[:head]} [... {cut} characters cut ...] {text[-_ERROR_TAIL:]}"


def error_result(exc: OpenEnvError) -> Reply:
    """The one mapping from our errors to an MCP tool error (``isError: true``)."""
    return Reply([text_block(error_text(exc))], None, True, {ERROR_META: exc.code})


def _observation_schema(spec: EnvSpec) -> dict[str, Any]:
    space = spec.observation_space
    if is_array_space(space):
        return {
            **RAW_ARRAY_SCHEMA,
            "description": f"The observation ({space}) as a raw array; sent when the call "
            "asks for frames 'raw', 'zstd' or 'both'.",
        }
    return {**value_schema(space, raw=True), "description": f"The observation: a value of {space}."}


def episode_output_schema(spec: EnvSpec) -> dict[str, Any]:
    """The ``outputSchema`` shared by ``reset``, ``step``, ``state`` and action tools."""
    return {
        "type": "object",
        "properties": {
            "episode_id": {"type": "string", "description": "Handle to pass to later calls."},
            "status": {
                "type": "string",
                "enum": ["running", "ended", "broken"],
                "description": "broken: the environment failed; reset starts over.",
            },
            "step": {"type": "integer", "description": "Steps taken in this episode."},
            "reward": {"type": "number", "description": "Reward of the last step."},
            "episode_return": {"type": "number", "description": "Sum of rewards so far."},
            "terminated": {"type": "boolean"},
            "truncated": {"type": "boolean"},
            "observation": _observation_schema(spec),
            "summary": {
                "type": "string",
                "description": "What happened, for a model: the step, reward, return, lives, "
                "events, and what to do next (also the result's text).",
            },
            "events": {
                "type": "array",
                "items": {"type": "string"},
                "description": "What happened this step, in words: a life lost, a point scored "
                "or conceded, the episode's end.",
            },
            "repeated": {"type": "integer", "description": "Steps this call took (repeat)."},
            "legal_actions": {
                "type": "array",
                "items": {"type": "string"},
                "description": "The action names (on reset).",
            },
            "rewards": {
                "type": "object",
                "additionalProperties": {"type": "number"},
                "description": "With served rewards (--reward): each named part of this "
                "call's reward, and env, the environment's own.",
            },
            "trajectory": {
                "type": "object",
                "properties": {
                    "scores": {"type": "object", "additionalProperties": {"type": "number"}},
                    "credit": {
                        "type": "object",
                        "additionalProperties": {"type": "array", "items": {"type": "number"}},
                    },
                },
                "description": "At the episode's end, with trajectory rewards: each one's "
                "score and its credit for every step.",
            },
            "recording": {
                "type": "string",
                "description": "With --record (on reset): the file this episode is recorded in.",
            },
            "recording_failed": {
                "type": "string",
                "description": "With --record-errors continue: why this call went unrecorded "
                "(the episode is not recorded until its next reset).",
            },
            "task": {
                "type": "object",
                "properties": {
                    "id": {"type": "string"},
                    "split": {"type": "string"},
                    "index": {"type": "integer"},
                    "difficulty": {"type": "string"},
                    "group": {"type": "string"},
                    "data": {"type": "object"},
                    "success": {"type": "boolean"},
                    "scores": {"type": "object", "additionalProperties": {"type": "number"}},
                },
                "required": ["id", "split", "index"],
                "description": "The task this episode plays (reset with options split and "
                "index, or task): on reset, on state, and at the end with success, judged "
                "by the environment's rule.",
            },
            "np_random": {
                **RNG_STATE_SCHEMA,
                "description": "On reset: the state of the environment's random generator "
                "(Gymnasium's env.np_random), for a client to mirror.",
            },
            "extras": {
                "type": "object",
                "additionalProperties": RAW_ARRAY_SCHEMA,
                "description": "The arrays the call asked for (extras), by name.",
            },
            "info": {
                "type": "object",
                "properties": spec.info,
                "description": "Environment-specific fields.",
            },
        },
        "required": [
            "episode_id",
            "status",
            "step",
            "reward",
            "episode_return",
            "terminated",
            "truncated",
            "info",
            "summary",
            "events",
        ],
    }

"""OpenEnv's wire forms for :mod:`._openenv`: observations, states, errors, the schemas
and OpenAPI document its clients and validator read.

Nothing here touches an episode: :mod:`._openenv` drives them and writes what they
answer in these forms.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson
from starlette.responses import Response

from openenv_mcp.codecs import decode_raw, encode_raw, is_raw
from openenv_mcp.errors import (
    ArgumentError,
    EpisodeRequired,
    OpenEnvError,
    ServerFull,
    UnknownEpisode,
)
from openenv_mcp.server.tools._results import error_text
from openenv_mcp.spaces import value_schema

if TYPE_CHECKING:
    from openenv_mcp.server._app import EnvApp

__all__ = [
    "FORMS",
    "MODELS",
    "STATE_SCHEMA",
    "BadBody",
    "action_of",
    "dumps",
    "error_code",
    "error_response",
    "form_of",
    "json_response",
    "observation_of",
    "observation_schema",
    "openapi",
    "rpc_error",
    "split_reset",
    "state_of",
]

#: The forms an OpenEnv client may ask observations in (``reset(frames=...)``).
FORMS = ("list", "raw", "zstd", "png")
#: The form of an env's namesake among OpenEnv's (its own models), where it has one and
#: no ``frames`` is asked: :mod:`openenv_mcp.openenv.models`.
MODELS = "models"
STATE_SCHEMA = {
    "type": "object",
    "properties": {
        "episode_id": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "step_count": {"type": "integer", "minimum": 0},
    },
    "additionalProperties": True,
}


def dumps(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY, default=repr)


def json_response(value: Any, status: int = 200) -> Response:
    return Response(dumps(value), status, media_type="application/json")


# -- OpenEnv's wire forms --------------------------------------------------------------------


def observation_of(view: dict[str, Any], form: str, space_is_array: bool) -> dict[str, Any]:
    """A view as OpenEnv's ``{observation, reward, done}``."""
    value: Any = view.get("observation")
    shape = None
    if form == "list" and space_is_array and is_raw(value):
        array = decode_raw(value)
        value, shape = array.ravel().tolist(), list(array.shape)
    elif form == "list" and value is not None:
        value = _listed(value)
    elif form == "zstd" and is_raw(value):
        value = encode_raw(decode_raw(value), compress=True)
    fields: dict[str, Any] = {
        "observation": None if form == "png" and space_is_array else value,
    }
    if shape is not None:
        fields["observation_shape"] = shape
    fields |= {
        "episode_id": view.get("episode_id"),
        "step": view.get("step", 0),
        "terminated": view.get("terminated", False),
        "truncated": view.get("truncated", False),
        "info": view.get("info", {}),
        "text": view.get("summary", ""),
    }
    if "legal_actions" in view:
        fields["legal_actions"] = view["legal_actions"]
    if "rewards" in view:
        fields["rewards"] = view["rewards"]
    if "task" in view:  # the task a reset(split=, index=) started; its success at the end
        fields["task"] = view["task"]
    if "_png" in view:
        fields["frame"] = "data:image/png;base64," + view["_png"]
    done = bool(fields["terminated"] or fields["truncated"])
    return {"observation": fields, "reward": view.get("reward"), "done": done}


def _listed(value: Any) -> Any:
    """Raw arrays in a value as arrays, written as nested JSON lists (orjson writes them
    straight from the array: no Python list per row for the collector to chase)."""
    if is_raw(value):
        return np.ascontiguousarray(decode_raw(value))
    if isinstance(value, dict):
        return {k: _listed(v) for k, v in value.items()}
    if isinstance(value, list) and value and isinstance(value[0], (dict, list)):
        return [_listed(v) for v in value]
    return value


def state_of(view: dict[str, Any] | None) -> dict[str, Any]:
    """A view as OpenEnv's ``State`` (``episode_id``, ``step_count``, then the rest)."""
    if view is None:
        return {"episode_id": None, "step_count": 0}
    state = {"episode_id": view.get("episode_id"), "step_count": view.get("step", 0)}
    for key in ("status", "episode_return", "terminated", "truncated", "info"):
        if key in view:
            state[key] = view[key]
    return state


def error_code(exc: OpenEnvError) -> str:
    """OpenEnv's error code for one of ours."""
    if isinstance(exc, ServerFull):
        return "CAPACITY_REACHED"
    if isinstance(exc, ArgumentError):
        return "VALIDATION_ERROR"
    return "EXECUTION_ERROR"


def split_reset(
    data: dict[str, Any], default: str = "list"
) -> tuple[int | None, str, dict[str, Any]]:
    """OpenEnv's reset keyword arguments: the seed, the observation form (``frames``, else
    ``default``: :data:`MODELS` where the env has a namesake among OpenEnv's), the env's
    options.

    ``episode_id`` (OpenEnv's label for an episode) is dropped: episodes here are
    named by the server.

    Raises:
        ArgumentError: a seed that is not a non-negative integer, an unknown form.
    """
    options = {k: v for k, v in data.items() if k not in ("seed", "frames", "episode_id")}
    seed = data.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise ArgumentError(f"seed must be a non-negative integer, got {seed!r}")
    return seed, form_of(data, default), options


def form_of(data: Any, default: str) -> str:
    """The observation form a request asks (its ``frames``), else ``default``."""
    if not isinstance(data, dict) or "frames" not in data:
        return default
    form = data["frames"]
    if form not in FORMS:
        raise ArgumentError(f"frames must be one of {', '.join(FORMS)}, got {form!r}")
    return str(form)


def action_of(data: Any) -> Any:
    """The action in OpenEnv's ``{"action": ..., "metadata": {...}}`` form."""
    if not isinstance(data, dict) or "action" not in data:
        raise ArgumentError(
            f"expected an action as {{'action': VALUE}} (see /schema), got {str(data)[:80]}"
        )
    extra = sorted(set(data) - {"action", "metadata"})
    if extra:
        raise ArgumentError(f"unknown action fields {extra}; the action is {{'action': VALUE}}")
    return data["action"]


class BadBody(ArgumentError):
    """A request body that is not a JSON object (malformed, nested too deep): HTTP 400,
    as ``/mcp`` answers it; its wire code stays ``ArgumentError``."""

    @property
    def code(self) -> str:
        return "ArgumentError"


def error_response(exc: OpenEnvError) -> Response:
    status = 422 if isinstance(exc, ArgumentError) else 409
    if isinstance(exc, BadBody):
        status = 400
    elif isinstance(exc, ServerFull):
        status = 503
    elif isinstance(exc, UnknownEpisode):
        status = 404
    elif isinstance(exc, EpisodeRequired):
        status = 400
    return json_response({"detail": error_text(exc), "code": exc.code}, status)


def rpc_error(rid: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}


def observation_schema(app: EnvApp) -> dict[str, Any]:
    spec = app.spec
    value = value_schema(spec.observation_space, raw=True)
    return {
        "type": "object",
        "title": f"{app.env_cls.__name__}Observation",
        "description": "One observation: the environment's value (arrays as nested lists, or "
        "as asked at reset), the episode's handle and step, terminated/truncated (done is "
        "either), info, the summary a model reads, and a PNG data URL where frames='png'.",
        "properties": {
            "observation": value,
            "observation_shape": {
                "type": "array",
                "items": {"type": "integer"},
                "description": "The shape of an array observation sent flat (frames='list').",
            },
            "episode_id": {"type": "string"},
            "step": {"type": "integer"},
            "terminated": {"type": "boolean"},
            "truncated": {"type": "boolean"},
            "info": {"type": "object", "properties": spec.info},
            "text": {"type": "string"},
            "legal_actions": {"type": "array", "items": {"type": "string"}},
            "rewards": {"type": "object", "additionalProperties": {"type": "number"}},
            "frame": {"type": "string", "description": "data:image/png;base64,..."},
            "task": {
                "type": "object",
                "description": "The task reset(split=, index=) started: id, split, index, "
                "and at the episode's end success (and scores).",
            },
            "done": {"type": "boolean"},
            "reward": {"anyOf": [{"type": "number"}, {"type": "null"}]},
            "metadata": {"type": "object"},
        },
    }


def openapi(app: EnvApp, action: dict[str, Any], observation: dict[str, Any]) -> dict[str, Any]:
    """An OpenAPI document of these routes (what OpenEnv's validator reads the mode from)."""

    def body(schema: dict[str, Any]) -> dict[str, Any]:
        return {"content": {"application/json": {"schema": schema}}}

    result = {
        "type": "object",
        "properties": {
            "observation": observation,
            "reward": {"anyOf": [{"type": "number"}, {"type": "null"}]},
            "done": {"type": "boolean"},
        },
    }
    ok = {"200": {"description": "OK", **body(result)}}
    return {
        "openapi": "3.1.0",
        "info": {
            "title": f"openenv-mcp {app.env_cls.name}: OpenEnv HTTP API",
            "version": "1.0.0",
            "description": "OpenEnv's protocol over openenv-mcp's episodes (also at /mcp).",
        },
        "paths": {
            "/reset": {
                "post": {
                    "summary": "Start a new episode (seed, frames, and the env's options)",
                    "requestBody": body({"type": "object", "additionalProperties": True}),
                    "responses": ok,
                }
            },
            "/step": {
                "post": {
                    "summary": "One action in the episode /reset answered",
                    "requestBody": body(
                        {
                            "type": "object",
                            "properties": {"action": action, "episode_id": {"type": "string"}},
                            "required": ["action", "episode_id"],
                        }
                    ),
                    "responses": ok,
                }
            },
            "/state": {"get": {"summary": "An episode's state", "responses": ok}},
            "/schema": {"get": {"summary": "Action, observation and state schemas"}},
            "/metadata": {"get": {"summary": "Name and description"}},
            "/health": {"get": {"summary": "Health"}},
            "/mcp": {"post": {"summary": "JSON-RPC: tools/list, tools/call"}},
            **_task_paths(body),
        },
    }


def _task_paths(body: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
    """The Task API's paths (:mod:`._openenv_tasks`), as OpenEnv 0.10 declares them."""
    env = [{"name": "env_name", "in": "path", "required": True, "schema": {"type": "string"}}]
    split = {"type": "string", "description": "Task split name"}
    index = {"type": "integer", "description": "Task index within the split"}
    bound = {"anyOf": [{"type": "integer"}, {"type": "null"}]}

    def post(summary: str, fields: dict[str, Any], required: list[str]) -> dict[str, Any]:
        schema = {
            "type": "object",
            "properties": fields,
            "required": required,
            "additionalProperties": False,
        }
        return {
            "post": {
                "tags": ["Task API"],
                "summary": summary,
                "parameters": env,
                "requestBody": {"required": True, **body(schema)},
            }
        }

    return {
        "/list_environments": {
            "get": {"tags": ["Task API"], "summary": "The environment's name, in a list"}
        },
        "/{env_name}/splits": {
            "get": {"tags": ["Task API"], "summary": "Its splits", "parameters": env}
        },
        "/{env_name}/tasks": post("A split's tasks", {"split": split}, ["split"]),
        "/{env_name}/num_tasks": post("How many tasks a split has", {"split": split}, ["split"]),
        "/{env_name}/task": post("One task", {"split": split, "index": index}, ["split", "index"]),
        "/{env_name}/task_range": post(
            "Tasks [start, stop) (slice bounds)",
            {"split": split, "start": bound, "stop": bound},
            ["split"],
        ),
    }

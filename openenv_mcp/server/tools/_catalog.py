"""The tool catalog: which tools a server lists, for its profile, with the schemas only
the served environment knows (its actions, its options, its info)."""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from pydantic import BaseModel, ConfigDict

from openenv_mcp.environment import EnvTool
from openenv_mcp.server._settings import ServerSettings
from openenv_mcp.server.episodes._handlers import Handlers
from openenv_mcp.server.tools._args import (
    MAX_BATCH,
    ActionArgs,
    AgentActionArgs,
    AgentResetArgs,
    AgentStepArgs,
    EpisodeArgs,
    EpisodeId,
    FramesArg,
    ReleaseArgs,
    ResetArgs,
    SnapshotResetArgs,
    StateArgs,
    StepArgs,
    StepBatchArgs,
    env_tool_args,
)
from openenv_mcp.server.tools._evaluate import evaluate_tool
from openenv_mcp.server.tools._results import episode_output_schema
from openenv_mcp.server.tools._rollouts import rollout_tools
from openenv_mcp.server.tools._seats import seat_output_schema, seat_tools
from openenv_mcp.server.tools._tools import ACTS, LOOKS, TIDIES, Handler, Hints, ModelTool
from openenv_mcp.sharding import ROUTE_TOKEN
from openenv_mcp.spaces import NamedDiscrete, ToolCalls
from openenv_mcp.spec import EnvSpec
from openenv_mcp.wire.rng import RNG_STATE_SCHEMA

__all__ = ["build_tools", "env_tool_hints", "reaching"]

log = logging.getLogger("openenv_mcp.server")


def reaching(hints: Hints, spec: EnvSpec) -> Hints:
    """``hints`` for a tool that runs the environment's code: it reaches whatever the
    environment reaches (outside the process unless it declares ``offline``; the
    OpenEnv bridge's remote server, for one)."""
    return dataclasses.replace(hints, open_world=not spec.serving.offline)


def build_tools(spec: EnvSpec, handlers: Handlers, settings: ServerSettings) -> list[ModelTool]:
    """Every tool a server of ``spec``'s environment lists, for its profile."""
    profile = settings.shape
    output = episode_output_schema(spec) if profile.structured else None
    if output is not None and handlers.tables is not None:
        output = seat_output_schema(output)
    tools = _episode_tools(spec, handlers, output, trainer=profile.trainer_tools)
    if handlers.rewarded or (profile.trainer_tools and settings.record is not None):
        tools.append(_summary_tool(handlers))
    if profile.trainer_tools and spec.splits:
        tools.append(evaluate_tool(spec, handlers))
    if profile.trainer_tools and handlers.tables is None:  # seats take turns from clients
        tools += rollout_tools(spec, handlers, _options_schema(spec))
    taken = {t.name for t in tools}
    tools += [_env_tool(tool, handlers, spec) for tool in spec.tools if tool.name not in taken]
    taken = {t.name for t in tools}
    tools += _tool_call_tools(spec, handlers, taken, output, profile.trainer_tools)
    if _lists_legal_actions(spec) and "legal_actions" not in {t.name for t in tools}:
        tools.append(_legal_actions_tool(spec, handlers))
    actions = spec.action_set
    limit = profile.tool_limit
    if (
        actions is not None
        and settings.action_tools
        and spec.serving.action_tools
        and (limit is None or len(tools) + actions.n <= limit)
    ):
        args = ActionArgs if profile.trainer_tools else AgentActionArgs
        tools += _per_action_tools(spec, handlers, {t.name for t in tools}, output, args)
    if handlers.tables is not None:
        tools = seat_tools(tools, spec, handlers)
    for tool in tools:
        _mark_route(tool.parameters, sharded=settings.shard is not None)
        _trainer_fields(tool.parameters, spec)
    return tools


def _trainer_fields(parameters: dict[str, Any], spec: EnvSpec) -> None:
    """List ``extras`` (as the env's names) and ``np_random`` only where the env has them."""
    properties = parameters.get("properties", {})
    if "extras" in properties:
        if spec.extras:
            properties["extras"] = {
                **properties["extras"],
                "anyOf": [
                    {"type": "array", "items": {"enum": list(spec.extras)}, "maxItems": 16},
                    {"type": "null"},
                ],
            }
        else:
            del properties["extras"]
    if "np_random" in properties:
        if spec.np_random:
            properties["np_random"] = {
                **properties["np_random"],
                "anyOf": [RNG_STATE_SCHEMA, {"type": "null"}],
            }
        else:
            del properties["np_random"]


def _episode_tools(
    spec: EnvSpec, handlers: Handlers, output: dict[str, Any] | None, *, trainer: bool
) -> list[ModelTool]:
    """reset, step and state; for trainers also step_batch, close and snapshots."""
    title, actions = spec.title, _action_text(spec)
    briefing = f" {spec.briefing}" if spec.briefing else ""
    options = {"options": _options_schema(spec)}
    action = {"action": spec.action_schema}
    if not trainer:
        return [
            ModelTool.build(
                "reset",
                f"Start a new game of {title}: returns the first frame and what to do. Pass "
                "seed to replay a game exactly." + briefing + actions,
                AgentResetArgs,
                handlers.reset,
                None,
                hints=reaching(ACTS, spec),
                schema_patch=options,
            ),
            ModelTool.build(
                "step",
                f"Take an action in {title} (held for repeat steps); returns the new frame, "
                "the reward, and what happened." + actions,
                AgentStepArgs,
                lambda a: handlers.step(a.episode_id, a.action, None, a.repeat),
                None,
                hints=reaching(ACTS, spec),
                schema_patch=action,
            ),
            ModelTool.build(
                "state",
                "Look at the game without acting: the current frame, step, return and status.",
                EpisodeArgs,
                handlers.state,
                None,
                hints=reaching(LOOKS, spec),
            ),
        ]
    snapshots = spec.supports_snapshots
    tools = [
        ModelTool.build(
            "reset",
            f"Start a new episode of {title} and return its first observation and "
            "its episode_id. Pass episode_id to restart that episode, seed to reproduce one"
            + (", from_snapshot to continue a saved state" if snapshots else "")
            + "."
            + briefing
            + actions,
            SnapshotResetArgs if snapshots else ResetArgs,
            handlers.reset,
            output,
            hints=reaching(ACTS, spec),
            schema_patch=options,
        ),
        ModelTool.build(
            "step",
            f"Take one action in an episode of {title} (held for repeat steps); returns "
            "the observation, reward, terminated and truncated." + actions,
            StepArgs,
            lambda a: handlers.step(
                a.episode_id, a.action, a.frames, a.repeat, tuple(a.extras or ())
            ),
            output,
            hints=reaching(ACTS, spec),
            schema_patch=action,
        ),
        ModelTool.build(
            "step_batch",
            "Step many episodes at once, one action each (for trainers running "
            "vectorised rollouts); returns one result per item, in order, each like "
            "step's structuredContent or {episode_id, error}.",
            StepBatchArgs,
            handlers.step_batch,
            None if output is None else _batch_output_schema(output),
            hints=reaching(ACTS, spec),
            schema_patch={"steps": _batch_steps_schema(spec)},
        ),
        ModelTool.build(
            "state",
            "Look at an episode without acting: its observation, step count, return and status.",
            StateArgs,
            handlers.state,
            output,
            hints=reaching(LOOKS, spec),
        ),
        ModelTool.build(
            "close",
            "End an episode and free its resources (and its snapshots).",
            EpisodeArgs,
            handlers.close,
            None,
            hints=reaching(TIDIES, spec),  # the env's close: the bridge's session ends
        ),
    ]
    if snapshots:
        tools += [
            ModelTool.build(
                "snapshot",
                "Save the full state of an episode (RNG included) and return a "
                "snapshot_id; reset(from_snapshot=...) starts identical episodes from it "
                "(GRPO groups).",
                EpisodeArgs,
                handlers.snapshot,
                None,
                hints=reaching(ACTS, spec),
            ),
            ModelTool.build(
                "release_snapshot",
                "Free a snapshot.",
                ReleaseArgs,
                handlers.release_snapshot,
                None,
                hints=TIDIES,  # the server's own table: no env code runs
            ),
        ]
    return tools


def _summary_tool(handlers: Handlers) -> ModelTool:
    return ModelTool.build(
        "episode_summary",
        "How an episode stands: steps, return, the env's own return, and at its end each "
        "trajectory reward's score and per-step credit; with --record, its file.",
        EpisodeArgs,
        handlers.episode_summary,
        None,
        hints=LOOKS,  # from the server's own records: no env code runs
    )


def _env_tool(tool: EnvTool, handlers: Handlers, spec: EnvSpec) -> ModelTool:
    return ModelTool.build(
        tool.name,
        tool.description,
        env_tool_args(tool),
        handlers.env_tool(tool),
        None,
        hints=env_tool_hints(tool, spec),
    )


def env_tool_hints(tool: EnvTool, spec: EnvSpec) -> Hints:
    """What an environment's own tool does: as it declares, the rest derived (a look
    is idempotent, an act is not; it reaches what its environment reaches)."""
    return Hints(
        read_only=tool.read_only,
        destructive=tool.destructive,
        idempotent=tool.read_only if tool.idempotent is None else tool.idempotent,
        open_world=not spec.serving.offline if tool.open_world is None else tool.open_world,
    )


def _lists_legal_actions(spec: EnvSpec) -> bool:
    """Whether the actions have names (fixed, or the env's per state) worth listing."""
    return spec.action_set is not None or isinstance(spec.action_space, NamedDiscrete)


def _legal_actions_tool(spec: EnvSpec, handlers: Handlers) -> ModelTool:
    return ModelTool.build(
        "legal_actions",
        f"The actions legal now in {spec.title}: each one's number, name and what it does "
        "(every action, before the first reset). step takes the number or the name.",
        EpisodeArgs,
        handlers.legal_actions,
        None,
        hints=reaching(LOOKS, spec),
    )


def _per_action_tools(
    spec: EnvSpec,
    handlers: Handlers,
    taken: set[str],
    output: dict[str, Any] | None,
    args_model: type[BaseModel],
) -> list[ModelTool]:
    actions = spec.action_set
    assert actions is not None
    tools = []
    for action in actions:
        name = actions.tool_name(action)
        if name in taken:
            name = f"act_{name}"
        meaning = f": {action.meaning}" if action.meaning else ""
        tools.append(
            ModelTool.build(
                name,
                f"Take action {action.id} {action.name}{meaning}.",
                args_model,
                _action_handler(handlers, action.id),
                output,
                hints=reaching(ACTS, spec),
            )
        )
    return tools


class _CallArgs(BaseModel):
    """A tool call's own arguments (checked by the env against the tool's schema), and ours."""

    model_config = ConfigDict(extra="allow")
    episode_id: EpisodeId = None


class _CallFramesArgs(_CallArgs):
    frames: FramesArg = None


def _tool_call_tools(
    spec: EnvSpec,
    handlers: Handlers,
    taken: set[str],
    output: dict[str, Any] | None,
    frames: bool,
) -> list[ModelTool]:
    """Where the actions are calls of named tools (:class:`~openenv_mcp.spaces.ToolCalls`:
    an OpenEnv MCP environment), one MCP tool per tool, its arguments its own: each call
    is a step of its episode (reward, terminated, recorded), as an action tool is."""
    space = spec.action_space
    if not isinstance(space, ToolCalls):
        return []
    model = _CallFramesArgs if frames else _CallArgs
    tools = []
    for call in space.tools.values():
        properties = dict(call.schema.get("properties") or {})
        clash = set(properties) & set(model.model_fields)
        if clash:
            log.warning("tool %r is reachable through step only: its %s", call.name, clash)
            continue
        tool = ModelTool.build(
            call.name if call.name not in taken else f"call_{call.name}",
            call.description or f"Call {call.name} (one step).",
            model,
            _call_handler(handlers, call.name),
            output,
            hints=reaching(ACTS, spec),
            schema_patch=properties,
        )
        tool.parameters["required"] = list(call.schema.get("required") or [])
        tool.parameters["additionalProperties"] = call.schema.get("additionalProperties", False)
        tools.append(tool)
    return tools


def _call_handler(handlers: Handlers, name: str) -> Handler:
    return lambda args: handlers.step(
        args.episode_id,
        {"tool": name, "arguments": dict(args.model_extra or {})},
        getattr(args, "frames", None),
        1,
    )


def _action_handler(handlers: Handlers, action_id: int) -> Handler:
    return lambda args: handlers.step(
        args.episode_id, action_id, getattr(args, "frames", None), args.repeat
    )


# -- schemas only the served environment knows ---------------------------------------------


def _action_text(spec: EnvSpec) -> str:
    actions = spec.action_set
    if actions is None:
        return ""
    named = ", ".join(
        f"{a.id}={a.name}" + (f" ({a.meaning})" if a.meaning else "") for a in actions
    )
    return f" Legal actions: {named}."


def _options_schema(spec: EnvSpec) -> dict[str, Any]:
    properties = dict(spec.options)
    described = "Per-episode options of this environment."
    if spec.splits:
        names = [str(split["name"]) for split in spec.splits]
        properties.update(
            split={
                "type": "string",
                "enum": names,
                "description": "Start a task: its split (with index).",
            },
            index={
                "type": "integer",
                "minimum": 0,
                "description": "Start a task: its index in the split.",
            },
            task={"type": "string", "maxLength": 200, "description": "Start a task by its id."},
        )
        sizes = ", ".join(f"{split['name']} ({split['tasks']})" for split in spec.splits)
        described += f" Start a task with {{split, index}} or {{task: ID}}; splits: {sizes}."
    return {
        "anyOf": [
            {"type": "object", "properties": properties, "additionalProperties": False},
            {"type": "null"},
        ],
        "description": described,
    }


def _batch_steps_schema(spec: EnvSpec) -> dict[str, Any]:
    """``steps`` of step_batch, inline (no ``$ref``), each action typed as step's is."""
    return {
        "type": "array",
        "minItems": 1,
        "maxItems": MAX_BATCH,
        "description": "One step per episode.",
        "items": {
            "type": "object",
            "properties": {
                "episode_id": {
                    "type": "string",
                    "maxLength": 128,
                    "description": "An episode handle.",
                },
                "action": spec.action_schema,
            },
            "required": ["episode_id", "action"],
            "additionalProperties": False,
        },
    }


def _batch_output_schema(item: dict[str, Any]) -> dict[str, Any]:
    """``outputSchema`` of step_batch: per item, a step view or an error."""
    error = {
        "type": "object",
        "properties": {"episode_id": {"type": "string"}, "error": {"type": "string"}},
        "required": ["episode_id", "error"],
    }
    view = {**item, "properties": {**item["properties"], "image": {"type": "integer"}}}
    return {
        "type": "object",
        "properties": {"results": {"type": "array", "items": {"anyOf": [view, error]}}},
        "required": ["results"],
    }


#: Which parameter a call is routed on, where a tool has several: the first present.
#: The parameters a call is routed on, the first a tool has (a seat's handle is its
#: episode's: pass it as ``episode_id`` through a router; ``join`` routes on its game).
_ROUTED_PARAMS = ("shard", "episode_id", "snapshot_id", "table_id")


def _mark_route(parameters: dict[str, Any], sharded: bool) -> None:
    """On a sharded server, mark the parameter a tool's calls are routed on for the
    ``Mcp-Param-Route`` header (MCP's ``x-mcp-header``: a top-level string property,
    so not ``anyOf`` with null: leaving it out is what no value means); unsharded,
    there is no shard to choose."""
    properties = parameters.get("properties", {})
    if not sharded:
        properties.pop("shard", None)
        return
    for name in _ROUTED_PARAMS:
        schema = properties.get(name)
        if schema is None:
            continue
        string: dict[str, Any] = next(
            (s for s in schema.get("anyOf", [schema]) if s.get("type") == "string"), {}
        )
        properties[name] = {
            **string,
            "type": "string",
            "description": schema.get("description", ""),
            "x-mcp-header": ROUTE_TOKEN,
        }
        return

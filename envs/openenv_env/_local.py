"""An OpenEnv ``Environment`` subclass, run in this process (no FastAPI app, no socket).

:func:`describe_local` imports the class and finds its Action and Observation
models (given, or from the type hints of its ``step``); :class:`LocalSession`
is one instance of it, driven as OpenEnv's own server drives one: reset keyword
arguments filtered by its ``reset`` signature, actions validated by the Action
model, observations serialized as OpenEnv serializes them. What OpenEnv's wire
drops, this keeps: the observation's ``metadata`` and the rubric's scores.
"""

from __future__ import annotations

import inspect
import typing
from typing import Any

from openenv_env._described import Described, Observed, ToolCall, is_tool_call_schema
from openenv_env._images import MAX_FRAME_PIXELS, TooLarge
from openenv_mcp.errors import ArgumentError, DependencyNotInstalled, EnvCrashed, InvalidAction
from openenv_mcp.registry import load_reference

__all__ = ["LocalSession", "describe_local", "load_local"]


def _openenv() -> Any:
    try:
        from openenv.core.env_server import interfaces
    except ImportError as exc:
        raise DependencyNotInstalled(
            "serving an OpenEnv Environment class needs openenv-core: "
            "pip install 'openenv-mcp[openenv]'"
        ) from exc
    return interfaces


class Loaded:
    """The class, its Action type (a model or a union of them) and its Observation model."""

    def __init__(self, env_cls: type[Any], action: Any, observation: type[Any]) -> None:
        from pydantic import TypeAdapter

        self.env_cls = env_cls
        self.action = action
        self.observation = observation
        self.adapter: Any = TypeAdapter(action)


def _hints(env_cls: type[Any]) -> tuple[Any, Any]:
    """The Action and Observation types its ``step`` is annotated with."""
    try:
        hints = typing.get_type_hints(env_cls.step)
    except Exception:  # unresolvable annotations: the caller asks for --action
        return None, None
    return hints.get("action"), hints.get("return")


def _is_model(kind: Any) -> bool:
    from pydantic import BaseModel

    if isinstance(kind, type):
        return issubclass(kind, BaseModel)
    return all(_is_model(a) for a in typing.get_args(kind)) if typing.get_args(kind) else False


def _first_model(kind: Any) -> Any:
    """A union's first model that is not one of OpenEnv's MCP actions/observations."""
    args = typing.get_args(kind)
    if not args:
        return kind
    plain = [
        a for a in args if not getattr(a, "__name__", "").startswith(("ListTools", "CallTool"))
    ]
    return (plain or list(args))[0]


def load_local(env: str, action: str | None, observation: str | None) -> Loaded:
    """Import ``env`` (``module:Class``) and find its models.

    Raises:
        ArgumentError: not an OpenEnv Environment subclass, or models not found (naming
            the flag that gives them).
    """
    interfaces = _openenv()
    env_cls = load_reference(env, "--env")
    if not (isinstance(env_cls, type) and issubclass(env_cls, interfaces.Environment)):
        raise ArgumentError(
            f"--env {env!r} is a {type(env_cls).__name__}, not a subclass of OpenEnv's "
            "Environment (openenv.core.env_server.interfaces.Environment)"
        )
    hinted_action, hinted_observation = _hints(env_cls)
    action_type = load_reference(action, "--action") if action else hinted_action
    observation_type = (
        load_reference(observation, "--observation") if observation else hinted_observation
    )
    for kind, flag in ((action_type, "--action"), (observation_type, "--observation")):
        if kind is None or not _is_model(kind):
            raise ArgumentError(
                f"could not find the {flag[2:]} model of {env}: its step() annotation names "
                f"{kind!r}; pass {flag} module:Class (an OpenEnv {flag[2:].title()} subclass)"
            )
    return Loaded(env_cls, action_type, _first_model(observation_type))


def describe_local(loaded: Loaded) -> Described:
    """What the class declares, as its server's ``/schema`` and ``/metadata`` would."""
    from openenv.core.env_server.mcp_types import ListToolsAction, ListToolsObservation
    from openenv.core.env_server.types import State

    instance = loaded.env_cls()
    try:
        meta = instance.get_metadata()
        action_schema = loaded.adapter.json_schema()
        tools = None
        if is_tool_call_schema(action_schema) or hasattr(instance, "mcp_client"):
            listed = instance.step(ListToolsAction())
            if isinstance(listed, ListToolsObservation):
                tools = [
                    ToolCall(t.name, t.description, dict(t.input_schema)) for t in listed.tools
                ]
        try:  # the state property's annotation is its model
            fget = type(instance).state.fget
            state_model = typing.get_type_hints(fget).get("return", State)
        except Exception:
            state_model = State
        has_rubric = getattr(instance, "rubric", None) is not None
    finally:
        instance.close()
    cls = loaded.env_cls
    return Described(
        origin=f"{cls.__module__}:{cls.__qualname__}",
        name=meta.name,
        description=meta.description or (inspect.getdoc(cls) or "").split("\n\n")[0],
        action_schema=action_schema,
        observation_schema=loaded.observation.model_json_schema(),
        state_schema=_schema_of(state_model),
        tools=tools,
        has_rubric=has_rubric,
    )


def _schema_of(model: Any) -> dict[str, Any]:
    try:
        schema: dict[str, Any] = model.model_json_schema()
    except AttributeError:
        return {"type": "object"}
    return schema


class LocalSession:
    """One instance of the class, made at the first reset, closed with the episode."""

    def __init__(self, loaded: Loaded, max_pixels: int = MAX_FRAME_PIXELS) -> None:
        self.loaded = loaded
        self.max_pixels = max_pixels
        self.env: Any = None

    def _instance(self) -> Any:
        if self.env is None:
            self.env = self.loaded.env_cls()
        return self.env

    def reset(self, kwargs: dict[str, Any]) -> Observed:
        """Reset with the keyword arguments its ``reset`` takes (OpenEnv's rule: others
        are dropped; ``info["ignored"]`` names them)."""
        env = self._instance()
        parameters = inspect.signature(env.reset).parameters
        takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
        taken = {k: v for k, v in kwargs.items() if takes_any or k in parameters}
        observed = self._observed(env.reset(**taken))
        ignored = sorted(set(kwargs) - set(taken))
        if ignored:
            observed.metadata = {**observed.metadata, "ignored_reset_arguments": ignored}
        return observed

    def step(self, action: dict[str, Any]) -> Observed:
        """Validate ``action`` with the Action model (a union: by its ``type``) and step."""
        from pydantic import ValidationError

        env = self._instance()
        try:
            parsed = self._parse(action)
        except ValidationError as exc:
            raise InvalidAction(f"the Action model refused the action: {_brief(exc)}") from None
        return self._observed(env.step(parsed))

    def _parse(self, action: dict[str, Any]) -> Any:
        from openenv.core.env_server.serialization import deserialize_action

        kind = self.loaded.action
        if isinstance(kind, type):
            return deserialize_action(action, kind)
        return self.loaded.adapter.validate_python(action)

    def state(self) -> dict[str, Any]:
        """Its ``state`` property, as JSON."""
        if self.env is None:
            return {}
        state = self.env.state
        dumped: dict[str, Any] = state.model_dump() if hasattr(state, "model_dump") else dict(state)
        return dumped

    def _observed(self, observation: Any) -> Observed:
        from openenv.core.env_server.serialization import serialize_observation

        rubric: dict[str, float] = {}
        top = getattr(self.env, "rubric", None)
        if top is not None:
            if isinstance(top.last_score, (int, float)):
                rubric[""] = float(top.last_score)
            for name, part in top.named_rubrics():
                if isinstance(part.last_score, (int, float)):
                    rubric[name] = float(part.last_score)
        metadata = getattr(observation, "metadata", None) or {}
        try:
            return Observed.from_payload(
                serialize_observation(observation), metadata, rubric, self.max_pixels
            )
        except TooLarge as exc:
            cls = self.loaded.env_cls
            raise EnvCrashed(
                f"the OpenEnv environment {cls.__module__}:{cls.__qualname__} sent {exc}"
            ) from None

    def close(self) -> None:
        """Close the instance."""
        env, self.env = self.env, None
        if env is not None:
            env.close()


def _brief(exc: Any) -> str:
    parts = []
    for error in exc.errors()[:5]:
        where = ".".join(str(p) for p in error.get("loc", ()))
        parts.append(f"{where}: {error.get('msg')}" if where else str(error.get("msg")))
    return "; ".join(parts)

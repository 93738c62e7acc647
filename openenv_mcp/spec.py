"""An environment's static description: one spec, read by every face of the server.

In EnvPool's manner the static spec stands apart from the stepping object: the
tool catalog, the ``openenv://ENV/spec`` resource (which the client reads back as
:class:`~openenv_mcp.client.ServerSpec`), the manifest, the web page and
``check`` all read an :class:`EnvSpec`, made once from a prototype instance,
rather than asking the environment piecemeal.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gymnasium import spaces
from pydantic import BaseModel

from openenv_mcp.environment import (
    ActionSet,
    Environment,
    EnvTool,
    Serving,
    has_frame,
    supports_snapshots,
)
from openenv_mcp.narration import Narration, narration_of
from openenv_mcp.portability import portable
from openenv_mcp.spaces import space_to_json, value_schema

__all__ = ["EnvSpec", "action_schema", "model_properties"]


def model_properties(model: type[BaseModel] | None) -> dict[str, Any]:
    """JSON schema ``properties`` of a pydantic model (``Options``, ``Info``), inline."""
    if model is None:
        return {}
    schema = model.model_json_schema()
    defs = schema.get("$defs", {})
    properties: dict[str, Any] = schema.get("properties", {})
    return {name: portable(_inline(prop, defs)) for name, prop in properties.items()}


def _inline(schema: Any, defs: Mapping[str, Any]) -> Any:
    """``schema`` with its ``$ref``s replaced by what they name (clients differ on refs)."""
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            return _inline(
                {
                    **defs[ref.removeprefix("#/$defs/")],
                    **{k: v for k, v in schema.items() if k != "$ref"},
                },
                defs,
            )
        return {k: _inline(v, defs) for k, v in schema.items()}
    if isinstance(schema, list):
        return [_inline(v, defs) for v in schema]
    return schema


def action_schema(env: Environment[Any], narration: Narration[Any] | None = None) -> dict[str, Any]:
    """JSON schema of ``step``'s ``action`` argument: the action space's (by name too,
    where an action set names its values), with the narration's words in front."""
    actions = env.action_set
    schema = actions.json_schema() if actions is not None else value_schema(env.action_space)
    words = (narration or narration_of(env)).action_description()
    if words:
        known = schema.get("description")
        schema["description"] = f"{words} {known}" if known else words
    return schema


@dataclass(frozen=True)
class EnvSpec:
    """Everything static about an environment, as built with one config.

    Attributes:
        name: the registered name (``"atari"``).
        entry_point: ``module:Class``.
        title: what is served (``"Atari Breakout"``), from the narration.
        description: the class's one line.
        instructions: the rules for a model, from the narration.
        briefing: the goal and how to start, in a few sentences, from the narration.
        config: the construction options, as JSON.
        action_space: the Gymnasium action space.
        observation_space: the Gymnasium observation space.
        action_set: names of the discrete actions, or ``None``.
        action_schema: JSON schema of ``step``'s ``action``.
        options: JSON schema ``properties`` of the per-episode options.
        info: JSON schema ``properties`` of ``info``.
        has_frame: whether ``render`` draws frames.
        frame_is_observation: whether the observation is the RGB frame itself.
        supports_snapshots: whether snapshots work.
        serving: the env's serving hints.
        metadata: static facts the env publishes.
        tools: the env's own tools (static ones run on the instance the spec was made of).
        extras: the arrays a call may ask for beside the observation (``extra_names``).
        np_random: whether the env has a random generator that clients mirror.
    """

    name: str
    entry_point: str
    title: str
    description: str
    instructions: str
    briefing: str
    config: dict[str, Any]
    action_space: spaces.Space[Any]
    observation_space: spaces.Space[Any]
    action_set: ActionSet | None
    action_schema: dict[str, Any]
    options: dict[str, Any]
    info: dict[str, Any]
    has_frame: bool
    frame_is_observation: bool
    supports_snapshots: bool
    serving: Serving
    metadata: dict[str, Any]
    tools: tuple[EnvTool, ...]
    extras: tuple[str, ...] = ()
    np_random: bool = False

    @classmethod
    def of(cls, env: Environment[Any]) -> EnvSpec:
        """The spec of ``env`` (an instance no episode runs on)."""
        env_cls = type(env)
        narration = narration_of(env)
        return cls(
            name=env_cls.name,
            entry_point=f"{env_cls.__module__}:{env_cls.__qualname__}",
            title=narration.title,
            description=env_cls.description,
            instructions=narration.instructions(),
            briefing=narration.briefing(),
            config=env.config.model_dump(mode="json"),
            action_space=env.action_space,
            observation_space=env.observation_space,
            action_set=env.action_set,
            action_schema=action_schema(env, narration),
            options=model_properties(env.Options),
            info=model_properties(env_cls.Info),
            has_frame=has_frame(env),
            frame_is_observation=env.frame_is_observation,
            supports_snapshots=supports_snapshots(env_cls),
            serving=env.serving,
            metadata=env.metadata(),
            tools=tuple(env.tools()),
            extras=tuple(env.extra_names),
            np_random=env.np_random is not None,
        )

    def to_json(self) -> dict[str, Any]:
        """What a client reads before any episode (the ``spec`` resource, less the
        server's settings): see :class:`openenv_mcp.client.ServerSpec`."""
        actions = self.action_set
        return {
            "env": self.name,
            "title": self.title,
            "description": self.description,
            "config": self.config,
            "action_space": space_to_json(self.action_space),
            "observation_space": space_to_json(self.observation_space),
            "actions": actions.to_json() if actions is not None else None,
            "action_schema": self.action_schema,
            "has_frame": self.has_frame,
            "frame_is_observation": self.frame_is_observation,
            "reset_options": self.options,
            "supports_snapshots": self.supports_snapshots,
            "extras": list(self.extras),
        }

"""An environment's static description: one spec type for both sides of the wire.

In EnvPool's manner the static spec stands apart from the stepping object. A
server makes an :class:`EnvSpec` once, from a prototype instance
(:meth:`EnvSpec.of`), and every face of it reads that: the tool catalog, the
``openenv://ENV/spec`` resource (:meth:`EnvSpec.to_json`), ``describe``, the web
page, the manifest and ``check``. A client reads the resource back into the same
type (:meth:`EnvSpec.from_json`; :class:`openenv_mcp.client.ServerSpec` is this
class under the client's older name for it), so one vocabulary names an
environment on both sides: the contract's
(:class:`~openenv_mcp.environment.Environment`'s ``name``, ``action_set``,
``Options``).

Resources published before the two types were one named three fields otherwise
(``env``, ``actions``, ``reset_options``, :data:`OLD_KEYS`); :meth:`EnvSpec.from_json`
reads those too, so an older server's spec, or one saved from it, still loads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gymnasium import spaces
from pydantic import BaseModel, ValidationError

from openenv_mcp._util.version import __version__
from openenv_mcp.environment import (
    ActionSet,
    Environment,
    EnvTool,
    Serving,
    has_frame,
    supports_snapshots,
)
from openenv_mcp.errors import ArgumentError
from openenv_mcp.narration import Narration, narration_of
from openenv_mcp.spaces import space_from_json, space_to_json, value_schema
from openenv_mcp.wire.portability import portable

__all__ = ["EnvSpec", "action_schema", "model_properties"]

#: The wire keys of the fields the client's spec once named otherwise (new: old).
OLD_KEYS: Mapping[str, str] = {"name": "env", "action_set": "actions", "options": "reset_options"}
#: The wire key of :attr:`EnvSpec.version` (the package that published the spec).
VERSION_KEY = "openenv_mcp"
#: Longest value quoted in an error: the message names what came without echoing a page.
_QUOTE = 80


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

    Made by a server from its environment (:meth:`of`), or by a client from the
    server's ``spec`` resource (:meth:`from_json`); :meth:`to_json` is that resource.
    The fields a resource does not carry (the environment's side only) keep their
    defaults in a spec read from one.

    Attributes:
        name: the registered name (``"atari"``).
        title: what is served (``"Atari Breakout"``), from the narration.
        description: the class's one line.
        action_space: the Gymnasium action space.
        observation_space: the Gymnasium observation space.
        entry_point: ``module:Class``.
        action_set: names of the discrete actions, or ``None``.
        action_schema: JSON schema of ``step``'s ``action``.
        options: JSON schema ``properties`` of the per-episode (``reset``) options.
        info: JSON schema ``properties`` of ``info``.
        config: the construction options, as JSON.
        has_frame: whether ``render`` draws frames (a server can return PNG images).
        frame_is_observation: whether the observation is the RGB frame itself.
        supports_snapshots: whether ``snapshot`` and ``reset(from_snapshot=...)`` work.
        extras: the arrays a call may ask for beside the observation (``extra_names``:
            an Atari env's screens and RAM).
        np_random: whether the env has a random generator that clients mirror.
        splits: the task set's splits (``{"name", "type", "tasks"}``, ``tasks`` their
            sizes); empty where the env publishes no tasks (:mod:`openenv_mcp.tasks`).
        seats: every seat of the game, where the server serves seats (``--seats``:
            :mod:`openenv_mcp.seats`); empty otherwise.
        settings: the server's limits and options, where a server published the spec
            (empty in a spec made from an environment alone).
        version: the openenv-mcp version that made the spec (``""`` if it did not say).
        instructions: the rules for a model, from the narration (environment side only).
        briefing: the goal and how to start, in a few sentences, from the narration
            (environment side only).
        serving: the env's serving hints (environment side only).
        metadata: static facts the env publishes (environment side only: a server
            publishes them as the ``openenv://ENV/metadata`` resource).
        tools: the env's own tools; static ones run on the instance the spec was made
            of (environment side only: a client lists tools with ``tools/list``).
    """

    name: str
    title: str
    description: str
    action_space: spaces.Space[Any]
    observation_space: spaces.Space[Any]
    entry_point: str = ""
    action_set: ActionSet | None = None
    action_schema: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    has_frame: bool = False
    frame_is_observation: bool = False
    supports_snapshots: bool = False
    extras: tuple[str, ...] = ()
    np_random: bool = False
    splits: tuple[dict[str, Any], ...] = ()
    seats: tuple[str, ...] = ()
    settings: dict[str, Any] = field(default_factory=dict)
    version: str = ""
    instructions: str = ""
    briefing: str = ""
    serving: Serving = field(default_factory=Serving)
    metadata: dict[str, Any] = field(default_factory=dict)
    tools: tuple[EnvTool, ...] = ()

    @classmethod
    def of(cls, env: Environment[Any], *, settings: Mapping[str, Any] | None = None) -> EnvSpec:
        """The spec of ``env`` (an instance no episode runs on), served with ``settings``
        (a server's, as JSON) where given."""
        env_cls = type(env)
        narration = narration_of(env)
        return cls(
            name=env_cls.name,
            title=narration.title,
            description=env_cls.description,
            action_space=env.action_space,
            observation_space=env.observation_space,
            entry_point=f"{env_cls.__module__}:{env_cls.__qualname__}",
            action_set=env.action_set,
            action_schema=action_schema(env, narration),
            options=model_properties(env.Options),
            info=model_properties(env_cls.Info),
            config=env.config.model_dump(mode="json"),
            has_frame=has_frame(env),
            frame_is_observation=env.frame_is_observation,
            supports_snapshots=supports_snapshots(env_cls),
            extras=tuple(env.extra_names),
            np_random=env.np_random is not None,
            splits=_splits(env),
            settings=dict(settings or {}),
            version=__version__,
            instructions=narration.instructions(),
            briefing=narration.briefing(),
            serving=env.serving,
            metadata=env.metadata(),
            tools=tuple(env.tools()),
        )

    # -- the names the client's spec had; kept so code written against them runs --------

    @property
    def env(self) -> str:
        """:attr:`name`, by the client's older name for it."""
        return self.name

    @property
    def actions(self) -> ActionSet | None:
        """:attr:`action_set`, by the client's older name for it."""
        return self.action_set

    @property
    def reset_options(self) -> dict[str, Any]:
        """:attr:`options`, by the client's older name for it."""
        return self.options

    # -- the wire ------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """The spec as a server publishes it (its ``openenv://ENV/spec`` resource): every
        field but the environment side's, under the fields' own names (the version
        under ``"openenv_mcp"``). :meth:`from_json` reads it back."""
        actions = self.action_set
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "entry_point": self.entry_point,
            "config": self.config,
            "action_space": space_to_json(self.action_space),
            "observation_space": space_to_json(self.observation_space),
            "action_set": actions.to_json() if actions is not None else None,
            "action_schema": self.action_schema,
            "options": self.options,
            "info": self.info,
            "has_frame": self.has_frame,
            "frame_is_observation": self.frame_is_observation,
            "supports_snapshots": self.supports_snapshots,
            "extras": list(self.extras),
            "np_random": self.np_random,
            "splits": list(self.splits),
            "seats": list(self.seats),
            "settings": self.settings,
            VERSION_KEY: self.version,
        }

    @classmethod
    def from_json(cls, data: Any) -> EnvSpec:
        """Read a spec as :meth:`to_json` writes it, or as an older server wrote it (the
        older keys, :data:`OLD_KEYS`, where the new are absent). Only ``name``,
        ``action_space`` and ``observation_space`` are required; a field missing
        takes its default.

        Raises:
            ArgumentError: ``data`` is not a JSON object, or a field is missing or not
                what it should be (the message names the field, what it should be and
                what came).
        """
        if not isinstance(data, Mapping):
            raise ArgumentError(f"a spec should be a JSON object, got {_what(data)}")
        read = _Reader(data)
        name = read.text("name", required=True)
        return cls(
            name=name,
            title=read.text("title") or name,
            description=read.text("description"),
            action_space=read.space("action_space"),
            observation_space=read.space("observation_space"),
            entry_point=read.text("entry_point"),
            action_set=read.action_set("action_set"),
            action_schema=read.object("action_schema"),
            options=read.object("options"),
            info=read.object("info"),
            config=read.object("config"),
            has_frame=read.flag("has_frame"),
            frame_is_observation=read.flag("frame_is_observation"),
            supports_snapshots=read.flag("supports_snapshots"),
            extras=read.names("extras"),
            np_random=read.flag("np_random"),
            splits=read.splits("splits"),
            seats=read.names("seats"),
            settings=read.object("settings"),
            version=read.text(VERSION_KEY),
        )


class _Reader:
    """A spec's JSON, field by field, each held to its type, the older keys read too."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.data = data

    def key(self, key: str) -> str:
        """The key ``key``'s value is under: its own, else its older one where only that is."""
        old = OLD_KEYS.get(key)
        return old if key not in self.data and old is not None and old in self.data else key

    def get(self, key: str) -> Any:
        """The value under ``key`` (or its older key); ``None`` where neither is."""
        return self.data.get(self.key(key))

    def wrong(self, key: str, expected: str, value: Any) -> ArgumentError:
        return ArgumentError(
            f"the spec's {self.key(key)!r} should be {expected}, got {_what(value)}"
        )

    def missing(self, key: str, expected: str) -> ArgumentError:
        old = OLD_KEYS.get(key)
        named = f"{key!r} (or the older {old!r})" if old else repr(key)
        keys = ", ".join(sorted(map(str, self.data))) or "none"
        return ArgumentError(f"the spec has no {named}: {expected} expected (its keys: {keys})")

    def text(self, key: str, *, required: bool = False) -> str:
        value = self.get(key)
        if value is None:
            if required:
                raise self.missing(key, "a name")
            return ""
        if not isinstance(value, str) or (required and not value):
            raise self.wrong(key, "a name" if required else "a string", value)
        return value

    def flag(self, key: str) -> bool:
        value = self.get(key)
        if value is None:
            return False
        if not isinstance(value, bool):
            raise self.wrong(key, "true or false", value)
        return value

    def object(self, key: str) -> dict[str, Any]:
        value = self.get(key)
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise self.wrong(key, "a JSON object", value)
        return dict(value)

    def names(self, key: str) -> tuple[str, ...]:
        value = self.get(key)
        if value is None:
            return ()
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.wrong(key, "a list of names", value)
        return tuple(value)

    def splits(self, key: str) -> tuple[dict[str, Any], ...]:
        value = self.get(key)
        if value is None:
            return ()
        if not isinstance(value, list) or not all(
            isinstance(v, Mapping) and isinstance(v.get("name"), str) for v in value
        ):
            raise self.wrong(key, 'a list of splits ({"name": "test", "type": "test", ...})', value)
        return tuple(dict(v) for v in value)

    def space(self, key: str) -> spaces.Space[Any]:
        expected = 'a space\'s JSON object ({"type": "Discrete", ...})'
        value = self.get(key)
        if value is None:
            raise self.missing(key, expected)
        if not isinstance(value, Mapping):
            raise self.wrong(key, expected, value)
        try:
            return space_from_json(value)
        except ArgumentError as exc:
            raise ArgumentError(f"the spec's {self.key(key)!r}: {exc}") from None

    def action_set(self, key: str) -> ActionSet | None:
        value = self.get(key)
        if value is None or value == []:
            return None
        expected = 'a list of actions ({"id": 0, "name": "NOOP", "meaning": ...})'
        if not isinstance(value, list) or not all(isinstance(a, Mapping) for a in value):
            raise self.wrong(key, expected, value)
        try:
            return ActionSet.from_json(value)
        except (ValidationError, TypeError, ValueError) as exc:
            detail = str(exc).splitlines()[0]
            raise ArgumentError(
                f"the spec's {self.key(key)!r} should be {expected}: {detail}"
            ) from None


def _splits(env: Environment[Any]) -> tuple[dict[str, Any], ...]:
    """The env's task splits with their sizes, for the spec (none without tasks)."""
    task_set = env.task_set()
    if task_set is None:
        return ()
    return tuple(
        {**split.to_json(), "tasks": len(task_set.tasks(split.name))} for split in task_set.splits()
    )


def _what(value: Any) -> str:
    text = repr(value)
    quoted = text if len(text) <= _QUOTE else f"{text[: _QUOTE - 3]}... ({len(text)} chars)"
    return f"{type(value).__name__} {quoted}"

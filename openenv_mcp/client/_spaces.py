"""The server's static description, and the Gymnasium spaces built from it.

A server publishes its description as the ``openenv://ENV/spec`` resource, so a
client knows its actions and observations before the first ``reset``.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces

from openenv_mcp.environment import Action, ActionSet, ObservationSpec
from openenv_mcp.errors import OpenEnvError

__all__ = ["AnyText", "JsonSpace", "ServerSpec", "action_space", "observation_space"]

# Text observations have no declared bound; this one keeps Text.sample() sane.
_TEXT_LIMIT = 1 << 16
_PRINTABLE = string.ascii_letters + string.digits + string.punctuation + " "


class AnyText(spaces.Text):
    """A :class:`gymnasium.spaces.Text` that contains every string within its lengths.

    Gymnasium's ``Text`` contains only strings over its charset, but a free-form
    message action (or its echo) may hold any character; the charset here only
    shapes :meth:`sample`.
    """

    def contains(self, x: Any) -> bool:
        """Whether ``x`` is a string of an allowed length (any characters)."""
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length


class JsonSpace(spaces.Space[Any]):
    """Any JSON value: the space of observations a server declares as ``"json"``.

    The server says no more than that (a wrapped Gymnasium env's ``Tuple``, a
    board as nested lists...), so this contains every JSON value and cannot
    be sampled.
    """

    def __init__(self, description: str = "") -> None:
        super().__init__()
        self.description = description

    @property
    def is_np_flattenable(self) -> bool:
        """JSON values have no fixed flat form."""
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> Any:
        """Unsupported: the server declares no distribution over its JSON values."""
        raise NotImplementedError("a JSON observation space cannot be sampled")

    def contains(self, x: Any) -> bool:
        """Whether ``x`` is a JSON value (None, bool, number, string, list, dict)."""
        if x is None or isinstance(x, (bool, int, float, str)):
            return True
        if isinstance(x, (list, tuple)):
            return all(self.contains(v) for v in x)
        if isinstance(x, dict):
            return all(isinstance(k, str) and self.contains(v) for k, v in x.items())
        return False

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JsonSpace)

    def __hash__(self) -> int:
        return hash(JsonSpace)

    def __repr__(self) -> str:
        return "JsonSpace()"


@dataclass(frozen=True)
class ServerSpec:
    """An environment server's static description (its ``spec`` resource).

    Attributes:
        env: the registered environment name (``"atari"``).
        description: one line about the environment.
        actions: the discrete actions, or ``None`` for free-form actions.
        action_schema: JSON schema of ``step``'s ``action`` argument.
        observation: what observations look like.
        reset_options: JSON schema ``properties`` of per-episode reset options.
        supports_snapshots: whether ``snapshot`` and ``reset(from_snapshot=...)`` work.
        config: the environment's construction options.
        settings: the server's limits and options.
    """

    env: str
    description: str
    actions: ActionSet | None
    action_schema: dict[str, Any]
    observation: ObservationSpec
    reset_options: dict[str, Any]
    supports_snapshots: bool
    config: dict[str, Any]
    settings: dict[str, Any]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ServerSpec:
        """Parse the JSON of the ``spec`` resource."""
        actions = data.get("actions")
        return cls(
            env=str(data["env"]),
            description=str(data.get("description", "")),
            actions=ActionSet([Action(**a) for a in actions]) if actions else None,
            action_schema=dict(data.get("action_schema") or {}),
            observation=ObservationSpec(**data["observation"]),
            reset_options=dict(data.get("reset_options") or {}),
            supports_snapshots=bool(data.get("supports_snapshots", False)),
            config=dict(data.get("config") or {}),
            settings=dict(data.get("settings") or {}),
        )


def action_space(spec: ServerSpec) -> spaces.Space[Any]:
    """The action space: ``Discrete`` for named actions, ``Text`` for messages.

    Raises:
        OpenEnvError: when the action schema has no Gymnasium counterpart.
    """
    if spec.actions is not None:
        return spaces.Discrete(spec.actions.n)
    schema = spec.action_schema
    if schema.get("type") == "string":
        return AnyText(
            max_length=int(schema.get("maxLength", _TEXT_LIMIT)),
            min_length=int(schema.get("minLength", 0)),
            charset=_PRINTABLE,
        )
    if schema.get("type") == "integer" and "minimum" in schema and "maximum" in schema:
        low, high = int(schema["minimum"]), int(schema["maximum"])
        return spaces.Discrete(high - low + 1, start=low)
    raise OpenEnvError(f"{spec.env}: no Gymnasium space for the action schema {schema}")


def observation_space(spec: ServerSpec) -> spaces.Space[Any]:
    """The observation space: ``Box`` for arrays, ``Text`` for text, :class:`JsonSpace` for JSON.

    Raises:
        OpenEnvError: for an array observation without shape or dtype.
    """
    obs = spec.observation
    if obs.kind == "text":
        return AnyText(max_length=_TEXT_LIMIT, min_length=0, charset=_PRINTABLE)
    if obs.kind == "array":
        if obs.shape is None or obs.dtype is None:
            raise OpenEnvError(f"{spec.env}: array observation without shape or dtype")
        dtype = np.dtype(obs.dtype)
        low, high = _bounds(dtype, obs.low, obs.high)
        return spaces.Box(low=low, high=high, shape=tuple(obs.shape), dtype=dtype.type)
    return JsonSpace(obs.description)


def _bounds(dtype: np.dtype[Any], low: float | None, high: float | None) -> tuple[Any, Any]:
    """Declared bounds, or the dtype's own range where the server declared none."""
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return (info.min if low is None else int(low)), (info.max if high is None else int(high))
    if dtype == np.bool_:
        return 0, 1
    return (-np.inf if low is None else low), (np.inf if high is None else high)

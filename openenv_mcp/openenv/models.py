"""How an environment answers OpenEnv's typed client of its namesake (``--openenv``).

OpenEnv ships env packages (``atari_env``, ``chess_env``, ``coding_env``, ``echo_env``,
``openspiel_env``) whose typed clients send their own action model and parse their
own observation and state models, some refusing any field they do not know. An
environment here that is the namesake of one sets ``openenv_models`` to a subclass of
:class:`OpenEnvModels`, and ``serve ENV --http --openenv`` then speaks those models
exactly: the client's action payload becomes this env's action, and each of this
env's replies (the view the server's tools answer) becomes that env's observation and
state. An MCP environment of OpenEnv's (its echo) lists ``tools`` instead, each one step
of the episode here.

The models are written out here, field for field, from OpenEnv's: serving needs none
of OpenEnv's packages, and the suite runs OpenEnv's own clients against them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from openenv_mcp.spec import EnvSpec

__all__ = [
    "OpenEnvAction",
    "OpenEnvModels",
    "OpenEnvObservation",
    "OpenEnvState",
    "OpenEnvTool",
    "View",
]

#: One reply of this env as the ``--openenv`` face has it: the server's view of the
#: episode (``episode_id``, ``step``, ``reward``, ``terminated``, ``truncated``, ``info``,
#: ``legal_actions`` where sent) with ``observation`` decoded (an array, not raw).
View = Mapping[str, Any]


class OpenEnvAction(BaseModel):
    """OpenEnv's ``Action``: unknown fields refused, ``metadata`` allowed."""

    model_config = ConfigDict(extra="forbid")
    metadata: dict[str, Any] = {}


class OpenEnvObservation(BaseModel):
    """OpenEnv's ``Observation``: its fields travel without ``done``/``reward``/``metadata``
    (the reply's own fields), as OpenEnv's server sends them."""

    model_config = ConfigDict(extra="forbid")


class OpenEnvState(BaseModel):
    """OpenEnv's ``State``: ``episode_id`` and ``step_count``, then the env's own."""

    model_config = ConfigDict(extra="allow")
    episode_id: str | None = None
    step_count: int = 0


@dataclass(frozen=True)
class OpenEnvTool:
    """A tool of an OpenEnv MCP environment that is one step of the episode here."""

    name: str
    description: str
    input_schema: dict[str, Any]
    #: The tool's arguments as this env's action.
    action: Callable[[dict[str, Any]], Any]
    #: The step's view as the tool's result (what ``call_tool`` returns to the client).
    result: Callable[[View], Any]


class OpenEnvModels:
    """An environment's namesake among OpenEnv's: its models, and the mapping both ways.

    A subclass sets :attr:`Action` (``None`` for an MCP environment: :attr:`tools`),
    :attr:`Observation` and :attr:`State`, and writes :meth:`action`,
    :meth:`observation` and :meth:`state`. It is made once per server from the served
    environment's spec and config (what it serves: the game, the frame skip).
    """

    Action: ClassVar[type[OpenEnvAction] | None] = None
    Observation: ClassVar[type[OpenEnvObservation]] = OpenEnvObservation
    State: ClassVar[type[OpenEnvState]] = OpenEnvState
    #: OpenEnv's package of the same env (``"atari_env"``), named in messages.
    package: ClassVar[str] = ""
    tools: ClassVar[tuple[OpenEnvTool, ...]] = ()

    def __init__(self, spec: EnvSpec, config: BaseModel) -> None:
        self.spec = spec
        self.config: Any = config  # the env's own Config

    def action(self, action: Any) -> Any:
        """The client's action (an instance of :attr:`Action`, checked) as this env's."""
        raise NotImplementedError

    def reset_options(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """The client's reset keyword arguments (beyond ``seed``) as this env's options."""
        return kwargs

    def observation(self, view: View) -> dict[str, Any]:
        """A reply as the fields of :attr:`Observation`."""
        return {}

    def state(self, view: View) -> dict[str, Any]:
        """A reply as the fields of :attr:`State` beyond ``episode_id`` and ``step_count``."""
        return {}

    def step_count(self, view: View) -> int:
        """The episode's step count as OpenEnv's env counts it (the agent's steps here)."""
        return int(view.get("step", 0))

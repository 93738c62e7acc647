"""The games' FastAPI apps, as OpenEnv's ``envs/*/server/app.py`` make them with
openenv-core's ``create_app``: for ``uvicorn tests.openenv_games.server.app:NAME`` in a
test's subprocess, and for ``serve openenv --env tests.openenv_games.server.app:NAME``
(the app names its environment, a class or a factory, and its models).

* ``textarena``: :func:`~.environments.create_textarena_environment` (a factory, its game
  from ``TEXTARENA_ENV_ID``), as OpenEnv's TextArena app;
* ``reasoning_gym``: reset's ``dataset_name``/``dataset_config``/``seed``/``size`` choose
  the questions (OpenEnv's own client passes them);
* ``reasoning_gym_published``: the same, its ``/schema`` also publishing its reset's
  keyword arguments (as no OpenEnv server does yet);
* ``connect4`` and ``chess``: classes whose ``step`` does not name the Observation.
"""

from __future__ import annotations

import inspect
import typing
from typing import Any

from fastapi import FastAPI
from openenv.core.env_server.http_server import create_app
from pydantic import ConfigDict, create_model

from tests.openenv_games.models import (
    ChessAction,
    ChessObservation,
    Connect4Action,
    Connect4Observation,
    ReasoningGymAction,
    ReasoningGymObservation,
    TextArenaAction,
    TextArenaObservation,
)
from tests.openenv_games.server.environments import (
    ChessEnvironment,
    Connect4Environment,
    ReasoningGymEnvironment,
    create_textarena_environment,
)

textarena = create_app(
    create_textarena_environment,
    TextArenaAction,
    TextArenaObservation,
    env_name="textarena_env",
    max_concurrent_envs=4,
)
reasoning_gym = create_app(
    ReasoningGymEnvironment,
    ReasoningGymAction,
    ReasoningGymObservation,
    env_name="reasoning_gym",
    max_concurrent_envs=4,
)
connect4 = create_app(
    Connect4Environment, Connect4Action, Connect4Observation, env_name="connect4_env"
)
chess = create_app(ChessEnvironment, ChessAction, ChessObservation, env_name="chess_env")


def _publishing_reset(app: FastAPI, env_cls: type[Any]) -> FastAPI:
    """``app`` with its ``/schema`` publishing its reset's keyword arguments too (``reset``:
    a JSON schema of them, from ``env_cls.reset``'s signature), as no OpenEnv server
    does yet: what ``serve openenv --url`` types reset's options from where it can."""
    hints = typing.get_type_hints(env_cls.reset)
    fields: dict[str, Any] = {
        name: (hints.get(name, Any), None if p.default is p.empty else p.default)
        for name, p in inspect.signature(env_cls.reset).parameters.items()
        if name not in ("self", "episode_id") and p.kind is not p.VAR_KEYWORD
    }
    published = create_model("ResetArguments", __config__=ConfigDict(extra="forbid"), **fields)
    original = next(r for r in app.router.routes if getattr(r, "path", "") == "/schema")
    app.router.routes.remove(original)

    @app.get("/schema")
    async def schema() -> dict[str, Any]:
        declared = await original.endpoint()  # type: ignore[attr-defined]
        return {**declared.model_dump(), "reset": published.model_json_schema()}

    return app


#: Reasoning Gym, its ``/schema`` publishing its reset's arguments (``dataset_name``...).
reasoning_gym_published = _publishing_reset(
    create_app(
        ReasoningGymEnvironment,
        ReasoningGymAction,
        ReasoningGymObservation,
        env_name="reasoning_gym",
        max_concurrent_envs=4,
    ),
    ReasoningGymEnvironment,
)

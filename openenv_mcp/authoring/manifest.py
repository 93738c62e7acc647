"""The manifest: what a registry or a deployer needs to know about an environment.

One versioned format (:data:`FORMAT`), one dialect, JSON, with a published JSON
Schema (``openenv_mcp/authoring/manifest.schema.json``, the :class:`Manifest` model's own).
It is *derived*, never written by hand: the static facts come from the class and
an instance of it (name, spaces, actions, frames, options), the deployment facts
from what the class declares (its ``serving``: reward range, resources, offline), and
the package from the installed distribution. So it cannot drift from the code;
``openenv-mcp check`` holds the code to it (rewards inside ``reward_range``,
the entry point importable, the server within its limits).

``openenv-mcp describe ENV --manifest`` prints it; ``--json`` carries it too.
"""

from __future__ import annotations

import importlib.metadata
import math
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from openenv_mcp.environment import Environment
from openenv_mcp.spaces import space_to_json
from openenv_mcp.spec import EnvSpec

__all__ = ["FORMAT", "Manifest", "build_manifest", "manifest_schema"]

#: The manifest format this openenv-mcp writes and reads.
FORMAT: Final = "openenv-mcp.manifest/1"
#: The port and path a served environment answers on (``serve --http``'s defaults).
PORT = 8765


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FramesInfo(_Model):
    """Whether and how the environment shows frames."""

    has_frame: bool = Field(description="Whether results carry the screen as an image.")
    format: Literal["png"] | None = Field(description="The image format sent to clients.")
    frame_is_observation: bool = Field(
        description="Whether the observation is the RGB frame itself."
    )


class ResourcesInfo(_Model):
    """What one server needs (the environment's declaration, ``serving.resources``)."""

    cpu: float = Field(gt=0, description="Cores one server uses when busy.")
    memory_mib: int = Field(gt=0, description="Memory of one server with `episodes` live.")
    episodes: int = Field(ge=1, description="The live episodes memory_mib is for.")
    episode_timeout_s: float = Field(gt=0, description="Longest one episode may take.")


class ConcurrencyInfo(_Model):
    """How many episodes one server holds and how they may be spread."""

    max_episodes: int = Field(ge=1, description="Live episodes one server holds (its default).")
    snapshots: bool = Field(description="Whether episodes can be saved and forked.")
    worker_processes: bool = Field(
        description="Whether `serve --workers N` may hold episodes in worker processes."
    )


class ServeInfo(_Model):
    """How to run one server of it over HTTP (what a container runs)."""

    command: list[str] = Field(description="The command line of one HTTP server.")
    port: int = Field(description="The port it listens on.")
    mcp_path: str = Field(description="Where MCP is answered.")
    health_path: str = Field(description="A GET that answers 200 while the server is up.")
    token_env: str = Field(description="The variable that holds the bearer token it requires.")


class Manifest(_Model):
    """An environment's manifest (format :data:`FORMAT`)."""

    format: Literal["openenv-mcp.manifest/1"] = FORMAT
    name: str = Field(pattern=r"^[a-z][a-z0-9_]{0,63}$", description="Its registry name.")
    title: str = Field(min_length=1, description="What is served, for people and models.")
    description: str = Field(min_length=1, description="One line.")
    entry_point: str = Field(
        pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$", description="module:Class of the environment."
    )
    package: str | None = Field(description="The distribution that ships it, if installed.")
    version: str | None = Field(description="That distribution's version.")
    openenv_mcp: str = Field(description="The openenv-mcp version that wrote this manifest.")
    action_space: dict[str, Any] = Field(description="Gymnasium action space, as JSON.")
    observation_space: dict[str, Any] = Field(description="Gymnasium observation space, as JSON.")
    actions: list[str] | None = Field(description="Names of the discrete actions, if named.")
    frames: FramesInfo
    reward_range: tuple[float | None, float | None] = Field(
        description="Least and greatest reward of one step (null: unbounded)."
    )
    concurrency: ConcurrencyInfo
    resources: ResourcesInfo
    offline: bool = Field(description="Whether it runs with no network at all.")
    options: dict[str, Any] = Field(description="JSON Schema of its construction options.")
    serve: ServeInfo


def _bound(value: float) -> float | None:
    return None if math.isinf(value) else float(value)


def _package(module: str) -> tuple[str | None, str | None]:
    """The installed distribution that ships ``module``, and its version."""
    top = module.split(".", 1)[0]
    names = importlib.metadata.packages_distributions().get(top) or []
    for name in names:
        try:
            return name, importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None, None


def build_manifest(env_cls: type[Environment[Any]], config: BaseModel | None = None) -> Manifest:
    """The manifest of ``env_cls`` (built with ``config``, its defaults if ``None``).

    Raises:
        pydantic.ValidationError: the class declares something no manifest may hold
            (a name that is not a lower-case identifier, an empty description, a
            negative resource), each field named.
    """
    from openenv_mcp._util.version import __version__
    from openenv_mcp.server._settings import ServerSettings
    from openenv_mcp.server.transports._http import TOKEN_ENV

    config = config if config is not None else env_cls.Config()
    env = env_cls(config)
    try:
        package, version = _package(env_cls.__module__)
        low, high = env_cls.serving.reward_range
        declared = env_cls.serving.resources
        spec = EnvSpec.of(env)
        actions = env.action_set
        return Manifest(
            name=env_cls.name,
            title=spec.title,
            description=env_cls.description,
            entry_point=f"{env_cls.__module__}:{env_cls.__qualname__}",
            package=package,
            version=version,
            openenv_mcp=__version__,
            action_space=space_to_json(env.action_space),
            observation_space=space_to_json(env.observation_space),
            actions=actions.names if actions is not None else None,
            frames=FramesInfo(
                has_frame=spec.has_frame,
                format="png" if spec.has_frame else None,
                frame_is_observation=spec.frame_is_observation,
            ),
            reward_range=(_bound(low), _bound(high)),
            concurrency=ConcurrencyInfo(
                max_episodes=ServerSettings().max_episodes,
                snapshots=spec.supports_snapshots,
                worker_processes=True,
            ),
            resources=ResourcesInfo(
                cpu=declared.cpu,
                memory_mib=declared.memory_mib,
                episodes=declared.episodes,
                episode_timeout_s=declared.episode_timeout_s,
            ),
            offline=env_cls.serving.offline,
            options=env_cls.Config.model_json_schema(),
            serve=ServeInfo(
                command=[
                    "openenv-mcp",
                    "serve",
                    env_cls.name,
                    "--http",
                    "--host",
                    "0.0.0.0",
                    "--port",
                    str(PORT),
                ],
                port=PORT,
                mcp_path="/mcp",
                health_path="/healthz",
                token_env=TOKEN_ENV,
            ),
        )
    finally:
        env.close()


def manifest_schema() -> dict[str, Any]:
    """The manifest's JSON Schema (what ``openenv_mcp/authoring/manifest.schema.json`` holds)."""
    schema = Manifest.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://openenv-mcp.dev/schemas/manifest-1.json"
    return schema

"""Environment names -> environment classes.

Environments are referred to by ``"module:Class"`` strings (as Gymnasium's
registration does), found through the entry point group ``openenv_mcp.envs``,
so the framework never imports an environment until it is asked for one and
another package can add its own::

    [project.entry-points."openenv_mcp.envs"]
    myenv = "my_package:MyEnv"
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import TYPE_CHECKING

from openenv_mcp.errors import DependencyNotInstalled, UnknownEnv, did_you_mean

if TYPE_CHECKING:
    from openenv_mcp.environment import Environment

__all__ = ["ENTRY_POINT_GROUP", "EnvSpec", "env_names", "get_env_class", "get_spec", "register"]

ENTRY_POINT_GROUP = "openenv_mcp.envs"

_extra: dict[str, str] = {}


@dataclass(frozen=True)
class EnvSpec:
    """A registered environment: its name and ``"module:Class"`` reference."""

    name: str
    reference: str

    def load(self) -> type[Environment]:
        """Import and return the environment class."""
        module_name, _, attr = self.reference.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise DependencyNotInstalled(
                f"environment {self.name!r} ({self.reference}) could not be imported: {exc}"
            ) from exc
        cls: type[Environment] | None = getattr(module, attr, None)
        if cls is None:
            raise DependencyNotInstalled(
                f"environment {self.name!r}: module {module_name!r} has no {attr!r}"
            )
        return cls


def register(name: str, reference: str) -> None:
    """Register an environment in this process (tests, notebooks).

    Args:
        name: the name to serve it under.
        reference: ``"module:Class"``.
    """
    _extra[name] = reference


def _specs() -> dict[str, EnvSpec]:
    specs = {ep.name: EnvSpec(ep.name, ep.value) for ep in entry_points(group=ENTRY_POINT_GROUP)}
    specs.update({name: EnvSpec(name, ref) for name, ref in _extra.items()})
    return specs


def env_names() -> list[str]:
    """Every registered environment name, sorted."""
    return sorted(_specs())


def get_spec(name: str) -> EnvSpec:
    """The spec registered under ``name``.

    Raises:
        UnknownEnv: with a "did you mean" hint and the registered names.
    """
    specs = _specs()
    if name in specs:
        return specs[name]
    raise UnknownEnv(
        f"no environment named {name!r}.{did_you_mean(name, specs)} "
        f"Registered: {', '.join(sorted(specs)) or 'none'}."
    )


def get_env_class(name: str) -> type[Environment]:
    """Import and return the environment class registered under ``name``."""
    return get_spec(name).load()

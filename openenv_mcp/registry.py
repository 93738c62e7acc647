"""Environment names -> environment classes.

Environments are referred to by ``"module:Class"`` strings (as Gymnasium's
registration does), found through the entry point group ``openenv_mcp.envs``,
so the framework never imports an environment until it is asked for one and
another package can add its own::

    [project.entry-points."openenv_mcp.envs"]
    myenv = "my_package:MyEnv"

A reference can also be used directly where a name is expected
(``openenv-mcp serve my_package.envs:MyEnv``): no entry point, no reinstall.
"""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

from openenv_mcp.errors import ArgumentError, DependencyNotInstalled, UnknownEnv, did_you_mean

if TYPE_CHECKING:
    from openenv_mcp.environment import Environment

__all__ = [
    "ENTRY_POINT_GROUP",
    "EnvEntry",
    "env_extra",
    "env_names",
    "get_entry",
    "get_env_class",
    "is_reference",
    "load_reference",
    "register",
    "serve_name",
]

ENTRY_POINT_GROUP = "openenv_mcp.envs"

_extra: dict[str, str] = {}


def is_reference(name: str) -> bool:
    """Whether ``name`` is a ``"module:Class"`` reference rather than a registered name."""
    module, sep, attr = name.partition(":")
    return bool(sep and module and attr)


def load_reference(reference: str, what: str) -> Any:
    """The object a ``package.module:name`` reference names (``--reward``, ``--policy``).

    A module not found on ``sys.path`` is looked for in the current directory too,
    as ``python -m`` would (``--reward harness_examples.rewards:breakout`` from the
    repository's root).

    Raises:
        ArgumentError: naming ``what`` (the option), the reference and what failed.
    """
    module_name, _, attr = reference.partition(":")
    if not is_reference(reference):
        raise ArgumentError(f"{what} takes package.module:name, got {reference!r}")
    try:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError:
            here = os.getcwd()
            if here in sys.path:
                raise
            sys.path.append(here)
            module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ArgumentError(f"{what} {reference!r}: {exc}") from None
    if not hasattr(module, attr):
        names = [n for n in vars(module) if not n.startswith("_")]
        raise ArgumentError(
            f"{what} {reference!r}: module {module_name!r} has no {attr!r}."
            f"{did_you_mean(attr, names)}"
        )
    return getattr(module, attr)


@dataclass(frozen=True)
class EnvEntry:
    """A registered environment: its name and ``"module:Class"`` reference."""

    name: str
    reference: str

    def load(self) -> type[Environment[Any]]:
        """Import and return the environment class.

        Raises:
            DependencyNotInstalled: the module does not import, lacks the
                attribute, or the attribute is not an Environment class.
        """
        from openenv_mcp.environment import Environment

        module_name, _, attr = self.reference.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            reason = str(exc).rstrip(".")
            raise DependencyNotInstalled(
                f"environment {self.name!r} ({self.reference}) could not be imported: {reason}."
                f"{_extra_hint(self.name)}"
            ) from exc
        cls = getattr(module, attr, None)
        if cls is None:
            names = [n for n in vars(module) if not n.startswith("_")]
            raise DependencyNotInstalled(
                f"environment {self.name!r}: module {module_name!r} has no {attr!r}."
                f"{did_you_mean(attr, names)}"
            )
        if not (isinstance(cls, type) and issubclass(cls, Environment)):
            raise DependencyNotInstalled(
                f"environment {self.name!r}: {self.reference} is a {type(cls).__name__}, "
                "not a subclass of openenv_mcp.Environment"
            )
        return cls


def env_extra(name: str) -> tuple[str, str] | None:
    """The distribution and extra that install ``name``'s dependencies, where the
    distribution registering it declares an extra of that name (``openenv-mcp[chess]``)."""
    for ep in entry_points(group=ENTRY_POINT_GROUP, name=name):
        dist = ep.dist
        if dist is not None and name in (dist.metadata.get_all("Provides-Extra") or []):
            return dist.metadata["Name"], name
    return None


def _extra_hint(name: str) -> str:
    found = env_extra(name)
    if found is None:
        return ""
    package, extra = found
    return (
        f" Install its extra: pip install '{package}[{extra}]' (in a clone of openenv-mcp: "
        f"./dev setup {name})."
    )


def register(name: str, reference: str) -> None:
    """Register an environment in this process (tests, notebooks).

    Args:
        name: the name to serve it under.
        reference: ``"module:Class"``.
    """
    _extra[name] = reference


def _entries() -> dict[str, EnvEntry]:
    found = {ep.name: EnvEntry(ep.name, ep.value) for ep in entry_points(group=ENTRY_POINT_GROUP)}
    found.update({name: EnvEntry(name, ref) for name, ref in _extra.items()})
    return found


def env_names() -> list[str]:
    """Every registered environment name, sorted."""
    return sorted(_entries())


def get_entry(name: str) -> EnvEntry:
    """The entry registered under ``name``, or one for a ``"module:Class"`` reference.

    Raises:
        UnknownEnv: with a "did you mean" hint and the registered names.
    """
    if is_reference(name):
        return EnvEntry(name, name)
    entries = _entries()
    if name in entries:
        return entries[name]
    raise UnknownEnv(
        f"no environment named {name!r}.{did_you_mean(name, entries)} "
        f"Registered: {', '.join(sorted(entries)) or 'none'} (or give one as module:Class)."
    )


def get_env_class(name: str) -> type[Environment[Any]]:
    """Import and return the environment registered under ``name`` (or referenced by it)."""
    return get_entry(name).load()


def serve_name(cls: type[Environment[Any]]) -> str:
    """How another process's ``openenv-mcp serve`` names ``cls``: its entry-point name
    where that entry point loads this very class, else ``"module:Class"`` (a class
    registered only in this process, or not at all)."""
    name = getattr(cls, "name", "")
    installed = {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}
    if name in installed:
        try:
            if EnvEntry(name, installed[name]).load() is cls:
                return str(name)
        except DependencyNotInstalled:
            pass
    return f"{cls.__module__}:{cls.__qualname__}"

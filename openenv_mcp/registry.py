"""Environment names -> environment classes.

Environments are referred to by ``"module:Class"`` strings (as Gymnasium's
registration does), found through the entry point group ``openenv_mcp.envs``,
so the framework never imports an environment until it is asked for one and
another package can add its own::

    [project.entry-points."openenv_mcp.envs"]
    myenv = "my_package:MyEnv"

A reference can also be used directly where a name is expected
(``openenv-mcp serve my_package.envs:MyEnv``): no entry point, no reinstall.

**References read from data** (a recording's environment class, its ``--reward``
references, references in its recorded config) are not the user's own words: a
shared folder of recordings can name any module, and hold it beside them. They are
resolved by :func:`get_data_env_class` and :func:`load_data_reference` (and by
:func:`load_reference` inside :func:`reading_data`): only among the registered
environments (entry points in ``openenv_mcp.envs``, their packages) and installed
modules, never imported from the current directory or the data's folder, and checked
before anything is imported. A module the user names (``--allow-module``) is imported
as asked.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.machinery
import importlib.util
import os
import re
import sys
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

from openenv_mcp.errors import ArgumentError, DependencyNotInstalled, UnknownEnv, did_you_mean

if TYPE_CHECKING:
    from openenv_mcp.environment import Environment

__all__ = [
    "ENTRY_POINT_GROUP",
    "EnvEntry",
    "check_data_reference",
    "env_extra",
    "env_names",
    "get_data_env_class",
    "get_entry",
    "get_env_class",
    "is_reference",
    "load_data_reference",
    "load_reference",
    "reading_data",
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
    repository's root). Inside :func:`reading_data` (a reference read from a
    recording) it is resolved as :func:`load_data_reference` does instead.

    Raises:
        ArgumentError: naming ``what`` (the option), the reference and what failed.
    """
    origin = _reading.get()
    if origin is not None:
        return load_data_reference(
            reference, what, source=origin.source, allow=origin.allow, folders=origin.folders
        )
    if not is_reference(reference):
        raise ArgumentError(f"{what} takes package.module:name, got {reference!r}")
    return _attribute(reference, what, _import_here(reference, what))


def _import_here(reference: str, what: str) -> Any:
    """Import a reference's module from ``sys.path``, else from the current directory."""
    module_name = reference.partition(":")[0]
    try:
        try:
            return importlib.import_module(module_name)
        except ModuleNotFoundError:
            here = os.getcwd()
            if here in sys.path:
                raise
            sys.path.append(here)
            return importlib.import_module(module_name)
    except ImportError as exc:
        raise ArgumentError(f"{what} {reference!r}: {exc}") from None


def _attribute(reference: str, what: str, module: Any) -> Any:
    module_name, _, attr = reference.partition(":")
    if not hasattr(module, attr):
        names = [n for n in vars(module) if not n.startswith("_")]
        raise ArgumentError(
            f"{what} {reference!r}: module {module_name!r} has no {attr!r}."
            f"{did_you_mean(attr, names)}"
        )
    return getattr(module, attr)


# -- references read from data (recordings) ---------------------------------------------------


@dataclass(frozen=True)
class _DataOrigin:
    """Where references being resolved were read: not typed by the user, so resolved only
    among registered environments and installed modules.

    Attributes:
        source: the file they were read from (named in every refusal).
        allow: modules the user allowed by name (``--allow-module``), imported as asked
            (with their submodules).
        folders: the data's folders: nothing is imported from there.
    """

    source: str
    allow: tuple[str, ...] = ()
    folders: tuple[str, ...] = ()


_reading: ContextVar[_DataOrigin | None] = ContextVar("openenv_mcp_reading_data", default=None)


def _origin(
    source: str | os.PathLike[str],
    allow: Iterable[str],
    folders: Iterable[str | os.PathLike[str]],
) -> _DataOrigin:
    return _DataOrigin(
        str(source),
        tuple(a.strip() for a in allow if a.strip()),
        tuple(os.path.realpath(f) for f in folders),
    )


@contextlib.contextmanager
def reading_data(
    source: str | os.PathLike[str],
    *,
    allow: Iterable[str] = (),
    folders: Iterable[str | os.PathLike[str]] = (),
) -> Iterator[None]:
    """Resolve every :func:`load_reference` of this thread (and its tasks) as read from
    ``source`` (a recording): an environment's recorded config may name classes too."""
    token = _reading.set(_origin(source, allow, folders))
    try:
        yield
    finally:
        _reading.reset(token)


def _allowed(module_name: str, origin: _DataOrigin) -> bool:
    return any(module_name == a or module_name.startswith(f"{a}.") for a in origin.allow)


def _refusal(origin: _DataOrigin, what: str, reference: str, module_name: str, why: str) -> str:
    """Why a reference read from data is refused, what is resolved, and the flag that
    allows it."""
    return (
        f"{origin.source} names {what} {reference!r}, whose module {module_name!r} {why}. "
        "References read from recordings are resolved only among the registered "
        f"environments (entry points in {ENTRY_POINT_GROUP!r}) and installed modules, and "
        "never imported from the current directory or the recording's folder. If you "
        f"trust this recording, allow its module by name: --allow-module {module_name}"
    )


def _within(path: str, folder: str) -> bool:
    try:
        return os.path.commonpath([os.path.realpath(path), folder]) == folder
    except ValueError:  # another drive
        return False


def _locations(spec: importlib.machinery.ModuleSpec) -> list[str]:
    found = list(spec.submodule_search_locations or [])
    if spec.has_location and spec.origin:
        found.append(spec.origin)
    return found


def _place(entry: str | None, spec: importlib.machinery.ModuleSpec, folders: Iterable[str]) -> str:
    """Where a module found through sys.path ``entry`` (``None``: another finder) would
    come from, in words, when that is somewhere references from data never import from;
    else ``""``."""
    if entry is not None:
        if entry in ("", ".") or (not os.path.isabs(entry) and os.path.isdir(entry)):
            return "the current directory"  # a relative entry is found from there
        if os.path.isabs(entry) and os.path.realpath(entry) == os.path.realpath(os.getcwd()):
            return "the current directory"
    if any(_within(p, f) for p in _locations(spec) for f in folders):
        return "the recording's folder"
    return ""


def _is_namespace(spec: importlib.machinery.ModuleSpec) -> bool:
    return spec.origin in (None, "namespace") and spec.submodule_search_locations is not None


def _top_level_place(name: str, folders: Iterable[str]) -> str | None:
    """Where ``import name`` (a top-level name not yet imported) would take it from, as
    the import system would find it: ``""`` from an installed location, a place in words
    (:func:`_place`) from one never imported from, ``None`` from nowhere. Nothing is
    imported: finders are asked in sys.meta_path's order, sys.path's entries one at a time."""
    folders = list(folders)
    for finder in sys.meta_path:
        if finder is importlib.machinery.PathFinder:
            portions: list[str] = []
            for entry in list(sys.path):
                if not isinstance(entry, str):
                    continue
                try:
                    spec = importlib.machinery.PathFinder.find_spec(name, [entry])
                except (ImportError, ValueError, OSError):
                    continue
                if spec is None:
                    continue
                place = _place(entry, spec, folders)
                if not _is_namespace(spec):
                    return place  # the first module or package found is the one imported
                portions.append(place)
            if portions:  # a namespace package: every portion is on its __path__
                return next((p for p in portions if p), "")
            continue
        find = getattr(finder, "find_spec", None)
        if find is None:
            continue
        try:
            spec = find(name, None)
        except Exception:  # a finder that fails here fails the import too
            continue
        if spec is not None:
            return _place(None, spec, folders)
    return None


def _missing_place(name: str, folders: Iterable[str]) -> str:
    """Where a module no installed location has is all the same (the current directory,
    the data's folder), in words; else ``""``."""
    for folder, place in [(os.getcwd(), "the current directory")] + [
        (f, "the recording's folder") for f in folders
    ]:
        with contextlib.suppress(ImportError, ValueError, OSError):
            if importlib.machinery.PathFinder.find_spec(name, [folder]) is not None:
                return place
    return ""


def _check_data_module(module_name: str, what: str, reference: str, origin: _DataOrigin) -> None:
    """Refuse, before anything is imported, a module read from data that would not come
    from an installed location.

    Raises:
        ArgumentError: the module would be imported from the current directory or the
            data's folder, or is in the standard library (no reward, env or model is).
        DependencyNotInstalled: no installed location has it (nor the places above).
    """
    parts = module_name.split(".")
    top = parts[0]
    if top in sys.stdlib_module_names:
        raise ArgumentError(
            _refusal(
                origin,
                what,
                reference,
                module_name,
                f"is in the standard library, which holds no {what.lstrip('-')}",
            )
        )
    if module_name in sys.modules:
        return  # imported already by this process: resolving it imports nothing
    if top not in sys.modules:
        place = _top_level_place(top, origin.folders)
        there = "" if top == module_name else f" (its package {top!r} is there)"
        if place is None:
            place = _missing_place(top, origin.folders)
            if place:
                why = f"is not installed; a module of that name is in {place}"
                if top != module_name:
                    why = f"is not installed; a module {top!r} is in {place}"
                raise ArgumentError(_refusal(origin, what, reference, module_name, why))
            raise DependencyNotInstalled(
                f"{origin.source} names {what} {reference!r}, whose module "
                f"{module_name!r} is not installed here"
            )
        if place:
            why = f"would be imported from {place}{there}"
            raise ArgumentError(_refusal(origin, what, reference, module_name, why))
    for depth in range(2, len(parts) + 1):  # each package on the way, its parent checked
        name = ".".join(parts[:depth])
        if name in sys.modules:
            continue
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        if spec is None:
            return  # the import says what is missing
        place = _place(None, spec, origin.folders)
        if place:
            raise ArgumentError(
                _refusal(origin, what, reference, module_name, f"would be imported from {place}")
            )


#: The bundled environments' packages before they moved under ``openenv_mcp_envs`` (their
#: old top-level names are OpenEnv's env packages' too): what recordings made before name.
_MOVED = {
    f"{name}_env": f"openenv_mcp_envs.{name}"
    for name in ("atari", "chess", "coding", "echo", "gymnasium", "openenv", "openspiel", "trading")
}


def moved_reference(reference: str) -> str:
    """``reference`` with a bundled environment's old package name (``atari_env.env:AtariEnv``)
    replaced by where it lives now (``openenv_mcp_envs.atari.env:AtariEnv``): recordings made
    before the move replay and export as they did."""
    top = re.split(r"[.:]", reference, maxsplit=1)[0]
    return _MOVED[top] + reference[len(top) :] if top in _MOVED else reference


def check_data_reference(
    reference: str,
    what: str,
    *,
    source: str | os.PathLike[str],
    allow: Iterable[str] = (),
    folders: Iterable[str | os.PathLike[str]] = (),
) -> None:
    """Check, importing nothing of it, that a ``package.module:name`` reference read from
    data (a recording's ``--reward``, which an export names in a dataset) would resolve as
    :func:`load_data_reference` resolves it.

    Raises:
        ArgumentError: as :func:`load_data_reference`.
        DependencyNotInstalled: the module is not installed here.
    """
    reference = moved_reference(reference)
    origin = _origin(source, allow, folders)
    if not is_reference(reference):
        raise ArgumentError(f"{origin.source}: {what} takes package.module:name, got {reference!r}")
    module_name = reference.partition(":")[0]
    if not _allowed(module_name, origin):
        _check_data_module(module_name, what, reference, origin)


def load_data_reference(
    reference: str,
    what: str,
    *,
    source: str | os.PathLike[str],
    allow: Iterable[str] = (),
    folders: Iterable[str | os.PathLike[str]] = (),
) -> Any:
    """The object a ``package.module:name`` reference read from data names (a recording's
    ``--reward``), resolved only from installed modules (or one this process has imported
    already): never from the current directory or the data's ``folders``. A module in
    ``allow`` (the user's ``--allow-module``) is imported as :func:`load_reference` would.

    Raises:
        ArgumentError: naming the reference, ``source``, why not and the flag that allows it.
        DependencyNotInstalled: the module is not installed here.
    """
    reference = moved_reference(reference)
    check_data_reference(reference, what, source=source, allow=allow, folders=folders)
    module_name = reference.partition(":")[0]
    if _allowed(module_name, _origin(source, allow, folders)):
        return _attribute(reference, what, _import_here(reference, what))
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise DependencyNotInstalled(f"{source} names {what} {reference!r}: {exc}") from None
    return _attribute(reference, what, module)


def get_data_env_class(
    reference: str,
    name: str = "",
    *,
    source: str | os.PathLike[str],
    allow: Iterable[str] = (),
    folders: Iterable[str | os.PathLike[str]] = (),
) -> type[Environment[Any]]:
    """The environment class a recording names (``reference``, its ``env_class``; ``name``,
    the name it was served under), resolved only among the registered environments: an
    entry point's class, or a class of a registered environment's package, from an
    installed location. A class of a module in ``allow`` (``--allow-module``), or of one
    this process has imported already, is taken as it is.

    Raises:
        ArgumentError: naming the class, ``source``, what is allowed and the flag that
            allows it.
        DependencyNotInstalled: a registered environment that does not import here.
    """
    reference = moved_reference(reference)
    origin = _origin(source, allow, folders)
    if not is_reference(reference):
        raise ArgumentError(
            f"{origin.source}: the environment class is package.module:Class, got {reference!r}"
        )
    what = "the environment class"
    module_name = reference.partition(":")[0]
    if _allowed(module_name, origin):
        _import_here(reference, what)  # from where the user said, the current directory too
        return EnvEntry(name or reference, reference).load()
    if module_name in sys.modules:  # nothing is imported
        return EnvEntry(name or reference, reference).load()
    entries = _entries()
    packages = {e.reference.partition(":")[0].split(".")[0] for e in entries.values()}
    if module_name.split(".")[0] in packages:
        _check_data_module(module_name, what, reference, origin)
        return EnvEntry(name or reference, reference).load()
    served = entries.get(name)
    if served is not None:  # the class its registered name loads, defined elsewhere
        _check_data_module(served.reference.partition(":")[0], what, served.reference, origin)
        cls = served.load()
        if f"{cls.__module__}:{cls.__qualname__}" == reference:
            return cls
    if _top_level_place(module_name.split(".")[0], origin.folders) is None and not _missing_place(
        module_name.split(".")[0], origin.folders
    ):
        raise DependencyNotInstalled(
            f"{origin.source} names the environment class {reference!r}, whose module is not "
            "installed here"
        )
    raise ArgumentError(
        _refusal(
            origin,
            what,
            reference,
            module_name,
            "is no registered environment's (registered here: "
            f"{', '.join(sorted(entries)) or 'none'})",
        )
    )


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

"""An OpenEnv environment run in this process (no FastAPI app, no socket).

:func:`load_local` finds what ``--env`` names (an ``Environment`` subclass, a factory
returning one, or an app openenv-core's ``create_app`` made), makes one instance with
the constructor arguments (``--kwargs``) and finds its Action and Observation models:
given (``--action``/``--observation``), its app's, the type hints of its ``step``, else
the ones its package declares (the env module's own names, its package's ``models``
module, its ``app``). :class:`LocalSession` is one instance of it, driven as OpenEnv's
own server drives one: reset keyword arguments filtered by its ``reset`` signature,
actions validated by the Action model, observations serialized as OpenEnv serializes
them. What OpenEnv's wire drops, this keeps: the observation's ``metadata`` and the
rubric's scores.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
import typing
from collections.abc import Callable
from typing import Any

from openenv_mcp.errors import (
    ArgumentError,
    DependencyNotInstalled,
    EnvCrashed,
    InvalidAction,
    OpenEnvError,
    did_you_mean,
)
from openenv_mcp.registry import load_reference
from openenv_mcp_envs.openenv._described import Described, Observed, ToolCall, is_tool_call_schema
from openenv_mcp_envs.openenv._images import MAX_FRAME_PIXELS, TooLarge

__all__ = ["LocalSession", "describe_local", "load_local", "seed_taken"]

#: What ``--env`` takes, for errors.
_TAKES = (
    "an OpenEnv Environment subclass (module:Class), a function returning an instance of "
    "one (module:function, the factory create_app takes), or an app create_app made "
    "(module:app)"
)


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
    """The environment: how to make one (``make``), its class, its Action type (a model or
    a union of them) and its Observation model; ``prototype`` is the instance made while
    loading (:func:`describe_local` reads it, then closes it)."""

    def __init__(
        self,
        env_cls: type[Any],
        action: Any,
        observation: type[Any],
        make: Callable[[], Any] | None = None,
        prototype: Any = None,
        origin: str = "",
    ) -> None:
        from pydantic import TypeAdapter

        self.env_cls = env_cls
        self.action = action
        self.observation = observation
        self.make: Callable[[], Any] = make or env_cls
        self.prototype = prototype
        self.origin = origin or f"{env_cls.__module__}:{env_cls.__qualname__}"
        self.adapter: Any = TypeAdapter(action)


def seed_taken(reset: Callable[..., Any]) -> bool | None:
    """Whether a ``reset`` takes a seed: ``True`` where it names ``seed``, ``False`` where
    OpenEnv drops one (it names no ``seed`` and takes no ``**kwargs``), ``None`` where it
    goes into ``**kwargs`` (used or not: nothing says)."""
    try:
        parameters = inspect.signature(reset).parameters
    except (TypeError, ValueError):
        return None
    if "seed" in parameters:
        return True
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return None
    return False


def _hints(env_cls: type[Any]) -> tuple[Any, Any]:
    """The Action and Observation models its ``step`` is annotated with: its own
    ``step``'s, else the nearest base class's that names models (an override without
    annotations takes what it overrides)."""
    action: Any = None
    observation: Any = None
    for klass in env_cls.__mro__:
        step = vars(klass).get("step")
        if step is None:
            continue
        try:
            hints = typing.get_type_hints(step)
        except Exception:  # unresolvable annotations: look further
            continue
        if action is None and _is_model(hints.get("action")):
            action = hints["action"]
        if observation is None and _is_model(hints.get("return")):
            observation = hints["return"]
        if action is not None and observation is not None:
            break
    return action, observation


def _is_model(kind: Any) -> bool:
    from pydantic import BaseModel

    if kind is None:
        return False
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


def _app_server(obj: Any) -> Any:
    """The ``HTTPEnvServer`` behind an app ``create_app`` made (its routes' handlers hold
    it), or ``None`` for anything else."""
    routes = getattr(obj, "routes", None)
    if not isinstance(routes, list):
        return None
    for route in routes:
        endpoint = getattr(route, "endpoint", None)
        for cell in getattr(endpoint, "__closure__", None) or ():
            try:
                held = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            if all(hasattr(held, a) for a in ("_env_factory", "action_cls", "observation_cls")):
                return held
    return None


def _make(env: str, factory: Callable[..., Any], kwargs: dict[str, Any], interfaces: Any) -> Any:
    """One instance: ``factory(**kwargs)``, checked to be an OpenEnv Environment.

    Raises:
        ArgumentError: an argument it does not take (naming those it does), or making
            it failed, or it made something else (naming what it made).
    """
    try:
        signature: inspect.Signature | None = inspect.signature(factory)
    except (TypeError, ValueError):
        signature = None
    what = "its constructor" if isinstance(factory, type) else "the factory"
    if signature is not None:
        parameters = {
            name: p
            for name, p in signature.parameters.items()
            if p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.POSITIONAL_ONLY)
        }
        takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
        named = [n for n, p in parameters.items() if p.kind is not inspect.Parameter.VAR_KEYWORD]
        for key in kwargs:
            if key not in named and not takes_any:
                takes = f"takes {', '.join(named)}" if named else "takes no arguments"
                raise ArgumentError(
                    f"--env {env!r}: {what} has no argument {key!r}"
                    f"{did_you_mean(key, named)} ({what} {takes}; --kwargs gave "
                    f"{sorted(kwargs)})"
                )
        missing = [
            n
            for n, p in parameters.items()
            if p.default is inspect.Parameter.empty
            and p.kind is not inspect.Parameter.VAR_KEYWORD
            and n not in kwargs
        ]
        if missing:
            example = ",".join(f"{n}=..." for n in missing)
            raise ArgumentError(
                f"--env {env!r}: {what} needs {', '.join(missing)}: pass --kwargs "
                f"{example} (key=value pairs, or a JSON object)"
            )
    try:
        instance = factory(**kwargs)
    except OpenEnvError:
        raise
    except Exception as exc:
        given = f" with --kwargs {kwargs}" if kwargs else ""
        hint = ""
        if isinstance(exc, ImportError):
            hint = " (install what the environment needs)"
        raise ArgumentError(
            f"--env {env!r}: making the environment{given} failed: {_said(exc)}{hint}"
        ) from None
    if not isinstance(instance, interfaces.Environment):
        raise ArgumentError(
            f"--env {env!r} made a {type(instance).__name__}, not an OpenEnv Environment: "
            f"--env takes {_TAKES}"
        )
    return instance


def _said(exc: BaseException) -> str:
    """An exception in one line: its type and the start of its message (some libraries
    say a page, NLTK's boxed in asterisks)."""
    words = " ".join(w for w in str(exc).split() if w.strip("*")) or "no message"
    return f"{type(exc).__name__}: {words if len(words) <= 300 else words[:297] + '...'}"


def _candidates(namespace: dict[str, Any], base: type[Any]) -> list[type[Any]]:
    """``base``'s subclasses among ``namespace``'s values, OpenEnv's own left out."""
    found: dict[str, type[Any]] = {}
    for value in namespace.values():
        if (
            isinstance(value, type)
            and issubclass(value, base)
            and value is not base
            and not value.__module__.startswith("openenv.")
        ):
            found[f"{value.__module__}:{value.__qualname__}"] = value
    return list(found.values())


def _stem(name: str, *suffixes: str) -> str:
    for suffix in suffixes:
        if name.endswith(suffix) and name != suffix:
            return name[: -len(suffix)]
    return name


def _pick(found: list[type[Any]], stems: list[str]) -> type[Any] | list[type[Any]] | None:
    """The one model ``found`` holds, or the one named after the environment (``Chess`` in
    ``ChessEnvironment``: ``ChessObservation``); several: all of them; none: ``None``."""
    if len(found) <= 1:
        return found[0] if found else None
    for stem in stems:
        if not stem:
            continue
        named = [f for f in found if f.__name__.lower().startswith(stem.lower())]
        if len(named) == 1:
            return named[0]
    return found


def _near_modules(module_name: str) -> list[tuple[str, str]]:
    """Where an OpenEnv environment's package declares its models, from its module's name
    (``pkg.server.my_environment``): ``pkg.server.models``, ``pkg.models``, then the apps
    (``pkg.server.app``, ``pkg.app``); as ``(module, kind)``."""
    parts = module_name.split(".")[:-1]
    prefixes = [".".join(parts[:i]) for i in range(len(parts), -1, -1)]
    near = [(f"{p}.models" if p else "models", "models") for p in prefixes]
    near += [(f"{p}.app" if p else "app", "app") for p in prefixes if p]
    return near


def _module(name: str) -> Any:
    """The module ``name``, imported as ``--env`` references are (a recording's only where
    allowed), or ``None`` where there is none or it does not import."""
    if name in sys.modules:
        return sys.modules[name]
    try:
        if importlib.util.find_spec(name) is None:
            return None
    except (ImportError, ValueError):
        return None
    try:
        return importlib.import_module(load_reference(f"{name}:__name__", "--env"))
    except (OpenEnvError, Exception):
        return None


def _discover(env_cls: type[Any], interfaces: Any, action: Any) -> tuple[Any, Any, list[str]]:
    """The Action and Observation models the environment's package declares (see
    :func:`_near_modules`; first the names its own module holds), and where it looked."""
    from openenv.core.env_server.types import Action, Observation

    stems = [_stem(env_cls.__name__, "Environment", "Env")]
    if isinstance(action, type):
        stems.append(_stem(action.__name__, "Action"))
    looked: list[str] = []
    found_action: Any = None
    found_observation: Any = None
    sources: list[tuple[str, str]] = [(env_cls.__module__, "module")]
    sources += _near_modules(env_cls.__module__)
    for name, kind in sources:
        module = _module(name)
        if module is None:
            continue
        looked.append(name)
        if kind == "app":
            server = _app_server(getattr(module, "app", None))
            if server is None:
                continue
            pair = (server.action_cls, server.observation_cls)
        else:
            namespace = vars(module)
            pair = (
                _pick(_candidates(namespace, Action), stems),
                _pick(_candidates(namespace, Observation), stems),
            )
        found_action = _better(found_action, pair[0])
        found_observation = _better(found_observation, pair[1])
        if isinstance(found_action, type):
            stems.append(_stem(found_action.__name__, "Action"))
        if isinstance(found_action, type) and isinstance(found_observation, type):
            break
    return found_action, found_observation, looked


def _better(known: Any, new: Any) -> Any:
    """One model found beats several (kept, to name them), and several beat none."""
    if isinstance(known, type) or new is None:
        return known
    if isinstance(new, type) or known is None:
        return new
    return known


def load_local(
    env: str,
    action: str | None,
    observation: str | None,
    kwargs: dict[str, Any] | None = None,
) -> Loaded:
    """Import ``env`` (``module:Class``, ``module:function`` or ``module:app``), make one
    instance with ``kwargs`` and find its models.

    Raises:
        ArgumentError: not one of those, making it failed, or its models not found,
            naming what was expected, what came and the flag that gives it.
    """
    interfaces = _openenv()
    kwargs = dict(kwargs or {})
    try:
        target = load_reference(env, "--env")
    except OpenEnvError:
        raise
    except Exception as exc:  # the module raised on import
        raise ArgumentError(
            f"--env {env!r}: importing {env.partition(':')[0]} failed: {_said(exc)}"
        ) from None
    from_app: tuple[Any, Any] = (None, None)
    server = _app_server(target)
    if server is not None:
        target = server._env_factory
        from_app = (server.action_cls, server.observation_cls)
    if isinstance(target, type) and not issubclass(target, interfaces.Environment):
        raise ArgumentError(
            f"--env {env!r} is the class {target.__module__}.{target.__qualname__}, not a "
            f"subclass of OpenEnv's Environment: --env takes {_TAKES}"
        )
    if not callable(target):
        raise ArgumentError(f"--env {env!r} is a {type(target).__name__}: --env takes {_TAKES}")
    prototype = _make(env, target, kwargs, interfaces)
    env_cls = type(prototype)
    try:
        action_type = load_reference(action, "--action") if action else from_app[0]
        observation_type = (
            load_reference(observation, "--observation") if observation else from_app[1]
        )
        hinted_action, hinted_observation = _hints(env_cls)
        action_type = action_type or hinted_action
        observation_type = observation_type or hinted_observation
        looked: list[str] = []
        if action_type is None or observation_type is None:
            found_action, found_observation, looked = _discover(env_cls, interfaces, action_type)
            action_type = action_type or found_action
            observation_type = observation_type or found_observation
        for kind, flag in ((action_type, "--action"), (observation_type, "--observation")):
            if not _is_model(kind):
                raise ArgumentError(_not_found(env, env_cls, kind, flag, looked))
    except BaseException:
        prototype.close()
        raise
    make = (lambda: target(**kwargs)) if kwargs else target
    return Loaded(
        env_cls,
        action_type,
        _first_model(observation_type),
        make=make,
        prototype=prototype,
        origin=env,
    )


def _not_found(env: str, env_cls: type[Any], kind: Any, flag: str, looked: list[str]) -> str:
    noun = flag[2:]
    where = f" or in {', '.join(looked)}" if looked else ""
    if isinstance(kind, list):
        names = ", ".join(f"{k.__module__}:{k.__qualname__}" for k in kind)
        return (
            f"could not tell the {noun} model of {env}: its step() is not annotated with "
            f"one, and its package declares several ({names}); pass {flag} module:Class "
            "(one of them)"
        )
    return (
        f"could not find the {noun} model of {env} ({env_cls.__qualname__}): none in its "
        f"step() annotation{where}; pass {flag} module:Class (an OpenEnv {noun.title()} "
        "subclass)"
    )


def describe_local(loaded: Loaded) -> Described:
    """What the environment declares, as its server's ``/schema`` and ``/metadata`` would
    (read off the instance made while loading, which is closed then)."""
    from openenv.core.env_server.mcp_types import ListToolsAction, ListToolsObservation
    from openenv.core.env_server.types import State

    instance, loaded.prototype = loaded.prototype, None
    if instance is None:
        instance = loaded.make()
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
        origin=loaded.origin,
        name=meta.name,
        description=meta.description or (inspect.getdoc(cls) or "").split("\n\n")[0],
        action_schema=action_schema,
        observation_schema=loaded.observation.model_json_schema(),
        state_schema=_schema_of(state_model),
        tools=tools,
        has_rubric=has_rubric,
        takes_seed=seed_taken(cls.reset),
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
            self.env = self.loaded.make()
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

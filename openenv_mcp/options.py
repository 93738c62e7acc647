"""Options of environments and servers: one parser for the CLI, bench and tests, and
one formatter of validation errors.

An environment's ``Config`` fields are its options: ``--game breakout`` on a
command line, ``game="breakout"`` in Python. :func:`parse_cli_options` turns the
first form into the second (values stay strings; the model converts them), and
:func:`make_config` validates either, with errors that say which option, what
was expected and what came.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar, get_origin

from pydantic import BaseModel, ValidationError, ValidatorFunctionWrapHandler, WrapValidator

from openenv_mcp.errors import ArgumentError, did_you_mean

__all__ = [
    "cli_args",
    "flag",
    "format_validation_error",
    "kwargs_checks",
    "make_config",
    "parse_cli_options",
    "parse_pairs",
    "serve_command",
]

M = TypeVar("M", bound=BaseModel)

_QUOTE = 80


def flag(name: str) -> str:
    """The command-line flag of a field: ``max_episode_steps`` -> ``--max-episode-steps``."""
    return f"--{name.replace('_', '-')}"


def cli_args(options: Mapping[str, Any]) -> list[str]:
    """Options as command-line arguments, the inverse of :func:`parse_cli_options`.

    Booleans become ``--flag`` / ``--no-flag``, lists a repeated flag, objects JSON
    (as ``--kwargs`` and ``--game-params`` take them), other values their text.
    ``None`` is left out: it is the default of every optional field, and a command
    line has no way to say it.
    """
    args: list[str] = []
    for name, value in options.items():
        if value is None:
            continue
        if isinstance(value, bool):
            args.append(flag(name) if value else flag(f"no_{name}"))
        elif isinstance(value, list | tuple):
            for item in value:
                args += [flag(name), _cli_value(item)]
        else:
            args += [flag(name), _cli_value(value)]
    return args


def _cli_value(value: Any) -> str:
    return json.dumps(value) if isinstance(value, dict | list) else str(value)


def serve_command(env: str, config: Mapping[str, Any], rewards: Sequence[str] = ()) -> list[str]:
    """The command that serves ``env`` (a name or ``module:Class``) with ``config`` and
    these ``--reward`` compositions over stdio: what a recording or a client's server
    was, as another process can start it again.

    ``openenv-mcp`` at its head is the one installed beside the client that runs it
    (see :class:`~openenv_mcp.client.Session`), on ``PATH`` or not.
    """
    return ["openenv-mcp", "serve", env, *cli_args(config), *cli_args({"reward": list(rewards)})]


def _describe_input(value: Any) -> str:
    text = repr(value)
    if len(text) > _QUOTE:
        text = text[: _QUOTE - 3] + "..."
    return f"{text} ({type(value).__name__})"


def format_validation_error(
    where: str, exc: ValidationError, *, noun: str = "argument", known: Iterable[str] = ()
) -> str:
    """One sentence per problem: which field, what was expected, what came.

    Args:
        where: what was being validated (a tool name, an environment name).
        exc: pydantic's error.
        noun: what a field is called here (``"argument"``, ``"option"``).
        known: the valid field names, for "did you mean" on unknown ones.
    """
    known = list(known)
    problems = []
    for err in exc.errors(include_url=False):
        name = ".".join(str(p) for p in err["loc"]) or f"{noun}s"
        kind = err["type"]
        if kind == "missing":
            problems.append(f"{noun} {name!r} is required.")
        elif kind == "extra_forbidden":
            hint = did_you_mean(name, known)
            listed = f" {noun.capitalize()}s: {', '.join(known)}." if known else ""
            problems.append(f"unknown {noun} {name!r}.{hint}{listed}")
        else:
            # A validator's own ValueError reads better without pydantic's prefix; one
            # written as whole sentences already says what came.
            message = err["msg"].removeprefix("Value error, ")
            if kind != "value_error" or not message.endswith((".", "?", "!")):
                message = f"{message}, got {_describe_input(err.get('input'))}."
            problems.append(f"{noun} {name!r}: {message}")
    # The first sentence follows "where:"; the others start sentences of their own.
    sentences = [problems[0], *(p[:1].upper() + p[1:] for p in problems[1:])]
    return f"{where}: " + " ".join(sentences)


def make_config(model: type[M], options: Mapping[str, Any], where: str) -> M:
    """Validate ``options`` against ``model`` (an environment's ``Config``, server settings).

    Raises:
        ArgumentError: naming each bad option, what was expected and what came.
    """
    try:
        return model.model_validate(dict(options))
    except ValidationError as exc:
        message = format_validation_error(where, exc, noun="option", known=model.model_fields)
        raise ArgumentError(message) from None


def _is_bool(model: type[BaseModel], name: str) -> bool:
    return model.model_fields[name].annotation in (bool, bool | None)


def _is_list(model: type[BaseModel], name: str) -> bool:
    return get_origin(model.model_fields[name].annotation) in (list, tuple)


def parse_cli_options(
    models: Sequence[type[BaseModel]], args: Sequence[str], *, where: str = ""
) -> list[dict[str, Any]]:
    """Split ``--name value`` arguments among ``models`` by field name.

    ``--flag`` / ``--no-flag`` set booleans; a list field's flag may repeat;
    ``--name=value`` and ``--name value`` both work. A name belongs to the first
    model that has it. Values stay strings: the models convert them when validated
    (:func:`make_config`).

    Returns:
        One dict of options per model, in order.

    Raises:
        ArgumentError: an unknown option (with "did you mean" and the list), a
            missing value, or a stray argument.
    """
    owners: dict[str, int] = {}
    for index, model in enumerate(models):
        for name in model.model_fields:
            owners.setdefault(name, index)
    flags = [flag(name) for name in owners]
    found: list[dict[str, Any]] = [{} for _ in models]
    i = 0
    while i < len(args):
        token = args[i]
        if not token.startswith("--"):
            raise ArgumentError(f"unexpected argument {token!r}: options look like --name value.")
        key, eq, value = token[2:].partition("=")
        name = key.replace("-", "_")
        negated = name.startswith("no_") and name[3:] in owners
        if negated:
            name = name[3:]
        if name not in owners:
            given = token.split("=")[0]
            see = f" `openenv-mcp describe {where}` explains each." if where else ""
            raise ArgumentError(
                f"unknown option {given!r}{' for ' + repr(where) if where else ''}."
                f"{did_you_mean(given, flags)} Options: {' '.join(flags)}.{see}"
            )
        model = models[owners[name]]
        if _is_bool(model, name) and not eq:
            found[owners[name]][name] = not negated
            i += 1
            continue
        if not eq:
            if i + 1 >= len(args):
                raise ArgumentError(f"option {token!r} needs a value.")
            value = args[i + 1]
            i += 1
        if _is_list(model, name):  # repeatable: --reward a --reward b
            found[owners[name]].setdefault(name, []).append(value)
        else:
            found[owners[name]][name] = value
        i += 1
    return found


def _split_pairs(text: str) -> list[str]:
    """Split ``a=1,b=[1,2],c="x,y",d=go(board_size=9)`` at top-level commas."""
    parts, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            if ch == quote and text[i - 1] != "\\":
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def parse_pairs(
    text: str,
    what: str,
    example: str,
    read_value: Callable[[str], Any],
    *,
    identifiers: bool = True,
) -> dict[str, Any]:
    """Options given on one command line as a JSON object or as ``key=value`` pairs
    separated by commas (``gymnasium --kwargs``, ``openspiel --game-params``).

    Args:
        what: what the options are, for errors (``"kwargs"``).
        example: a valid ``key=value`` line, for errors.
        read_value: turns a pair's value (as written, stripped) into the option's value.
        identifiers: keys must be Python identifiers (else any non-empty key).

    Raises:
        ValueError: saying which part could not be read and what was expected.
    """
    text = text.strip()
    if not text:
        return {}
    if text.startswith("{"):
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{what}: not valid JSON ({exc.msg} at column {exc.colno})") from None
        if not isinstance(value, dict):
            raise ValueError(f"{what} must be a JSON object, got {type(value).__name__}")
        return value
    found: dict[str, Any] = {}
    for pair in _split_pairs(text):
        key, eq, raw = pair.partition("=")
        key = key.strip()
        if not eq or not (key.isidentifier() if identifiers else key):
            raise ValueError(
                f"expected {what} as key=value pairs separated by commas ({example}) or a "
                f"JSON object, got {pair!r}"
            )
        found[key] = read_value(raw.strip())
    return found


def kwargs_checks(
    parse: Callable[[str], dict[str, Any]], managed: Mapping[str, str]
) -> WrapValidator:
    """What a ``kwargs`` option (keyword arguments passed through to the env's maker)
    checks, as ``Annotated[dict[str, Any], kwargs_checks(parse, managed)]``: text (a
    command line's) is read with ``parse`` (a :func:`parse_pairs` of the env's), and a key
    the env sets itself (``managed``: key -> why) is refused, saying why.
    """

    def check(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        if isinstance(value, str):
            value = parse(value)
        kwargs = handler(value)
        for key, why in managed.items():
            if key in kwargs:
                raise ValueError(f"{key!r} cannot be passed through kwargs: {why}")
        return kwargs

    return WrapValidator(check)

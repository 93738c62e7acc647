"""One error hierarchy for openenv-mcp.

Every error a caller can cause or see is an :class:`OpenEnvError` subclass. The
server turns them into MCP tool errors in one place
(:func:`openenv_mcp.server.tools._results.error_result`), prefixing the message with
the class name (``"InvalidAction: ..."``); the client maps that name back to the
same class (:func:`error_from_wire`), so a trainer catches exactly what the
server raised.

Messages say what was expected and what came, and what to do next.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = [
    "ERROR_META",
    "ArgumentError",
    "DependencyNotInstalled",
    "EnvCallTimeout",
    "EnvCrashed",
    "EpisodeLost",
    "EpisodeRequired",
    "InvalidAction",
    "NotYourTurn",
    "OpenEnvError",
    "RecordingFailed",
    "ResetNeeded",
    "RewardFailed",
    "ServerDied",
    "ServerFull",
    "UnknownEnv",
    "UnknownEpisode",
    "UnknownSnapshot",
    "UnknownTask",
    "UnknownTool",
    "UnsupportedOption",
    "did_you_mean",
    "error_from_wire",
]

#: Where a tool error's class travels: the result's ``_meta[ERROR_META]`` holds its name.
ERROR_META = "openenv_mcp/error"


class OpenEnvError(Exception):
    """Base class of every openenv-mcp error."""

    @property
    def code(self) -> str:
        """The wire name of this error: its class name."""
        return type(self).__name__


class ArgumentError(OpenEnvError, ValueError):
    """A tool or constructor argument has the wrong type, value or name."""


class InvalidAction(ArgumentError):
    """The action is not one of the environment's legal actions."""


class UnknownTool(ArgumentError):
    """The server has no tool of this name (it serves another environment?)."""


class UnknownTask(ArgumentError):
    """No task of this id, split or index (the message names what there is)."""


class UnsupportedOption(ArgumentError):
    """An option cannot take effect where it was given (e.g. per episode)."""


class ResetNeeded(OpenEnvError):
    """``step`` was called before ``reset`` or after the episode ended."""


class UnknownEpisode(OpenEnvError, KeyError):
    """No live episode has this handle (never existed, closed or evicted)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class EpisodeLost(UnknownEpisode):
    """The episode (or snapshot) lived on a shard that is gone (its server replica died):
    its state went with it. Start a new episode; a client that kept the seed and
    actions can rebuild it exactly (``MCPVectorEnv(recover="replay")``)."""


class UnknownSnapshot(UnknownEpisode):
    """No live snapshot has this handle."""


class EpisodeRequired(OpenEnvError):
    """The transport serves many clients, so the call must name its episode."""


class NotYourTurn(OpenEnvError):
    """A seat acted out of turn and its turn did not come within the wait (the message
    says whose turn it is); nothing was applied."""


class ServerFull(OpenEnvError):
    """A server limit (live episodes, snapshots) is reached."""


class EnvCrashed(OpenEnvError):
    """The environment raised inside a call; the episode is broken until reset."""


class RecordingFailed(OpenEnvError):
    """Recording an episode failed (``serve --record``): the disk is full, the directory
    read-only, the file deleted. The message names the directory and the cause."""


class RewardFailed(EnvCrashed):
    """A served reward raised or timed out (:mod:`openenv_mcp.rewards`): the step's reward
    is unknown, so the episode is broken until reset, as when the environment raises."""


class EnvCallTimeout(EnvCrashed):
    """An environment call ran past the per-call timeout."""


class UnknownEnv(OpenEnvError, LookupError):
    """No registered environment has this name."""


class DependencyNotInstalled(OpenEnvError, ImportError):
    """An environment needs a package that is not installed."""


class ServerDied(OpenEnvError, ConnectionError):
    """The client lost its server (exited, hung past the timeout, or unreachable)."""


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """Return ``" Did you mean 'x'?"`` for the closest choice, or ``""``."""
    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return f" Did you mean {close[0]!r}?" if close else ""


def _all_subclasses(cls: type[OpenEnvError]) -> dict[str, type[OpenEnvError]]:
    found: dict[str, type[OpenEnvError]] = {cls.__name__: cls}
    for sub in cls.__subclasses__():
        found.update(_all_subclasses(sub))
    return found


def error_from_wire(text: str, code: str | None = None) -> OpenEnvError:
    """Rebuild the typed error of a tool error: its class from ``code`` (what the server
    sends in the result's ``_meta["openenv_mcp/error"]``), its message from the text
    (``"Name: message"``).

    Without a code (a server that sends none), the class is read from the text; a name
    that is no known error gives a plain :class:`OpenEnvError`.
    """
    name, sep, message = text.partition(": ")
    known = _all_subclasses(OpenEnvError)
    if code is not None:
        cls = known.get(code, OpenEnvError)
        return cls(message if sep and name == code else text)
    found = known.get(name) if sep else None
    if found is None:
        return OpenEnvError(text)
    return found(message)

"""Everything a model reads about a bridged OpenEnv environment: its narration.

The title, the instructions, and each observation in words
(:class:`openenv_mcp.narration.Narration`), apart from the environment's core.

A model acts on text, so what it needs to act is given whole: the question, the
prompt, the game's messages (those new since its last answer: "The target number is
higher"), the legal moves however many, a board as rows. An answer has two parts:

* the observation's line (``observation_text``): each field in a few words, short ones
  as they are (``current_player_id=0``), the others by their size
  (``question=<383 chars>``), pictures by their shape;
* the whole of what is long: on a reset after the line (the narration's briefing), on
  a step before it (the step's events), one paragraph per field.

Only what a model does not act on is summarised: pictures (the image shows them),
blobs of base64, text past :data:`_TEXT` characters, lists past :data:`_ITEMS` items,
messages older than the :data:`_MESSAGES` latest, a long value unchanged since the
last answer, and any value past :data:`_SHOWN` characters in all.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import orjson

from openenv_mcp.codecs import is_raw
from openenv_mcp.environment import StepResult
from openenv_mcp.narration import Narrated, Narration
from openenv_mcp_envs.openenv._images import IMAGE_HINTS

if TYPE_CHECKING:
    from openenv_mcp_envs.openenv._described import Described, Observed

__all__ = ["OpenEnvNarration", "OpenEnvView", "told"]

#: A value whose text is at most this long (and one line) stands in the observation's line.
_INLINE = 80
#: Most characters of one text field given (a longer one: its start, and how much more).
_TEXT = 16_000
#: Most items of a list given.
_ITEMS = 1_000
#: Most messages given at once (the latest).
_MESSAGES = 20
#: Most characters given of one field, however it is written (a dict, a grid...).
_SHOWN = 16_000
#: Where a field is long, the observation's line says how long in this many characters.
_LINE = 600
#: Keys of a message's text, and of who sent it.
_TEXT_KEYS = ("content", "text", "message")
_ROLE_KEYS = ("role", "name", "sender")
_BASE64 = re.compile(r"[A-Za-z0-9+/=_-]+")


def _array(value: Any) -> str | None:
    if isinstance(value, np.ndarray):
        return f"<{'x'.join(map(str, value.shape))} array>"
    if is_raw(value):
        return f"<{'x'.join(map(str, value['shape']))} array>"
    return None


def _blob(name: str, value: str) -> bool:
    """A picture or other bytes written as text: nothing a model reads."""
    if value.startswith("data:"):
        return True
    if len(value) < 256 or not _BASE64.fullmatch(value[:1024]):
        return False
    return any(h in name.lower() for h in IMAGE_HINTS) or len(value) >= 1024


def _inline(value: Any) -> str | None:
    """``value`` as it stands in the observation's line, where it is short (measured as
    JSON first: a long list's ``repr`` is not made)."""
    if isinstance(value, str):
        short = len(value) <= _INLINE and "\n" not in value
    else:
        short = len(_json(value, _INLINE + 1)) <= _INLINE
    if not short:
        return None
    text = repr(value)
    return text if len(text) <= _INLINE + 20 and "\n" not in text else None


def _json(value: Any, limit: int) -> str:
    """``value`` as compact JSON (anything else as its text), cut at ``limit`` characters."""
    try:
        text = orjson.dumps(value, default=str, option=orjson.OPT_NON_STR_KEYS).decode()
    except (TypeError, orjson.JSONEncodeError):
        text = repr(value)
    if len(text) > limit:
        return text[: max(0, limit - 3)] + "..."
    return text


def _cut(text: str, limit: int = _TEXT) -> str:
    text = text.strip("\n")
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n... ({len(text) - limit:,} more characters not shown)"


def _scalars(value: list[Any]) -> bool:
    return all(isinstance(v, (str, int, float, bool)) or v is None for v in value)


def _grid(value: list[Any]) -> bool:
    """Rows of numbers or short strings, all as long: a board."""
    if not value or not all(isinstance(row, list) and row and _scalars(row) for row in value):
        return False
    width = len(value[0])
    return len(value) <= 100 and width <= 100 and all(len(row) == width for row in value)


def _message_text(item: Any) -> str | None:
    """A message's text (with who sent it, where it says), or ``None`` for no message."""
    if isinstance(item, str):
        return item
    if not isinstance(item, dict):
        return None
    text = next((item[k] for k in _TEXT_KEYS if isinstance(item.get(k), str)), None)
    if text is None:
        return None
    role = next((item[k] for k in _ROLE_KEYS if isinstance(item.get(k), str)), None)
    return f"{role}: {text}" if role else text


def _messages(value: list[Any]) -> list[str] | None:
    """A list of messages as their texts, or ``None`` where it is not one."""
    if not value or not all(isinstance(v, (str, dict)) for v in value):
        return None
    texts = [_message_text(v) for v in value]
    if any(t is None for t in texts) or all(isinstance(v, str) for v in value):
        return None  # plain strings are a list (legal moves), not messages
    return [t for t in texts if t is not None]


def _new_messages(now: list[str], before: Any) -> tuple[list[str], str]:
    """The messages new since ``before`` (the previous answer's list), and how they
    are named: those past the old ones, or what was added to the last one (TextArena
    sends its whole transcript as one growing message)."""
    old = _messages(before) if isinstance(before, list) else None
    if old is None:
        latest = now[-_MESSAGES:]
        told = f"the latest {len(latest)} of {len(now)}" if len(latest) < len(now) else ""
        return latest, told
    if now[: len(old)] == old:
        return now[len(old) :], "new since the last answer"
    if len(now) == len(old) and old and now[-1].startswith(old[-1]) and now[:-1] == old[:-1]:
        return [now[-1][len(old[-1]) :]], "new since the last answer"
    latest = now[-_MESSAGES:]
    return latest, f"the latest {len(latest)} of {len(now)}"


def _summary(value: Any) -> str:
    """A long value in a few words, for the observation's line."""
    if isinstance(value, str):
        return f"<{len(value):,} chars>"
    if isinstance(value, list):
        messages = _messages(value)
        if messages is not None:
            return f"<{len(value)} message{'s' * (len(value) != 1)}>"
        if _grid(value):
            return f"<{len(value)}x{len(value[0])} grid>"
        return f"<list of {len(value):,}>"
    if isinstance(value, dict):
        return f"<{len(value):,} keys>"
    return f"<{type(value).__name__}>"


def _whole(name: str, value: Any, before: Any, shown: list[str]) -> str | None:
    """A long field given whole (what is new of it, where it grew), as a paragraph;
    ``None`` where it is not given (a blob, unchanged, nothing new, or already given)."""
    if isinstance(value, str):
        if _blob(name, value):
            return None
        if isinstance(before, str) and before and value.startswith(before):
            if value == before:
                return None
            return f"{name}, new since the last answer:\n{_cut(value[len(before) :])}"
        if value.strip() in shown:
            return None
        shown.append(value.strip())
        return f"{name}:\n{_cut(value)}"
    if isinstance(value, list):
        messages = _messages(value)
        if messages is not None:
            new, told = _new_messages(messages, before)
            new = [m for m in new if m.strip() and m.strip() not in shown]
            if not new:
                return None
            shown.extend(m.strip() for m in new)
            label = f"{name}, {told}" if told else name
            return f"{label}:\n" + "\n".join(_cut(m, _TEXT // len(new)) for m in new)
        if _grid(value):
            rows = "\n".join(" ".join(str(v) for v in row) for row in value)
            return f"{name} ({len(value)}x{len(value[0])}):\n{_cut(rows, _SHOWN)}"
        if _scalars(value):
            items = ", ".join(str(v) for v in value[:_ITEMS])
            more = f" ... ({len(value) - _ITEMS:,} more)" if len(value) > _ITEMS else ""
            return f"{name} ({len(value):,}): {_cut(items, _SHOWN)}{more}"
    if value == before:
        return None
    return f"{name}: {_json(value, _SHOWN)}"


def _fields(observation: dict[str, Any]) -> list[tuple[str, Any]]:
    return [(k, v) for k, v in observation.items() if _array(v) is None]


def observation_line(observation: dict[str, Any], before: dict[str, Any] | None) -> str:
    """The observation's line: short fields as they are, long ones by their size."""
    parts = []
    for name, value in observation.items():
        shown = _array(value)
        if shown is None:
            shown = _inline(value)
        if shown is None:
            if isinstance(value, str) and _blob(name, value):
                shown = f"<{len(value):,} chars of encoded data>"
            else:
                shown = _summary(value)
                if before is not None and before.get(name) == value:
                    shown = shown[:-1] + ", unchanged>"
        parts.append(f"{name}={shown}")
    text = ", ".join(parts) or "no fields"
    return text if len(text) <= _LINE else text[: _LINE - 3] + "..."


def told(observation: Any, before: dict[str, Any] | None) -> list[str]:
    """The long fields of ``observation`` given whole, one paragraph each: what a model
    reads besides the observation's line (``before``: the previous answer's observation,
    for what is new; ``None`` on a reset)."""
    if not isinstance(observation, dict):
        return []
    if "tool_name" in observation:
        whole = _tool_whole(observation)
        return ["\n" + whole] if whole else []
    shown: list[str] = []
    paragraphs = []
    for name, value in _fields(observation):
        if _inline(value) is not None:
            continue
        previous = before.get(name) if before is not None else None
        paragraph = _whole(name, value, previous, shown)
        if paragraph:
            # each on a line of its own (the answer joins its sentences with ". ")
            paragraphs.append("\n" + paragraph)
    return paragraphs


def _tool_result(observation: dict[str, Any]) -> Any:
    """What an MCP tool returned: its texts, else its data, else the result."""
    result = observation.get("result")
    if isinstance(result, dict):
        blocks = result.get("content") or []
        texts = [b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("text")]
        if texts:
            return " ".join(texts)
        if "data" in result:
            return result["data"]
    return result


def _tool_text(observation: dict[str, Any]) -> str | None:
    """A ``CallToolObservation`` in words: what the tool returned, or its error."""
    if "tool_name" not in observation:
        return None
    tool = observation["tool_name"]
    error = observation.get("error")
    if error:
        message = error.get("message") if isinstance(error, dict) else error
        short = _inline(str(message))
        return f"{tool} failed: {message}" if short is not None else f"{tool} failed (below)"
    result = observation.get("result")
    if isinstance(result, dict):
        blocks = result.get("content") or []
        texts = [b for b in blocks if isinstance(b, dict) and b.get("text")]
        images = sum(1 for b in blocks if isinstance(b, dict) and b.get("type") == "image")
        if images and not texts:
            return f"{tool} returned {images} image(s) (shown)"
    returned = _tool_result(observation)
    short = _inline(returned)
    return f"{tool} returned {short if short is not None else _summary(returned)}"


def _tool_whole(observation: dict[str, Any]) -> str | None:
    """A tool's long answer (or error), whole."""
    tool = observation["tool_name"]
    error = observation.get("error")
    if error:
        message = str(error.get("message") if isinstance(error, dict) else error)
        return None if _inline(message) is not None else f"{tool} failed:\n{_cut(message)}"
    returned = _tool_result(observation)
    if _inline(returned) is not None:
        return None
    if isinstance(returned, str):
        return f"{tool} returned:\n{_cut(returned)}"
    return f"{tool} returned: {_json(returned, _SHOWN)}"


class OpenEnvView(Narrated, Protocol):
    """What the narration reads of :class:`~openenv_mcp_envs.openenv.env.OpenEnvEnv`, the
    last observations included (named here, so this module need not import the env's,
    which imports it)."""

    @property
    def described(self) -> Described: ...

    @property
    def seed_words(self) -> str: ...

    @property
    def _last(self) -> Observed | None: ...

    @property
    def _previous(self) -> dict[str, Any] | None: ...


class OpenEnvNarration(Narration[OpenEnvView]):
    """The words a model reads of :class:`~openenv_mcp_envs.openenv.env.OpenEnvEnv`."""

    @property
    def title(self) -> str:
        """The OpenEnv environment's own name."""
        return f"OpenEnv {self.env.described.name}"

    def instructions(self) -> str:
        """What it is (its own description) and how to act in it (its Action's fields)."""
        described = self.env.described
        lines = [f"{self.title}: {described.description or 'an OpenEnv environment'}"]
        if described.tools is not None:
            names = ", ".join(t.name for t in described.tools) or "none"
            lines.append(
                f"It is an MCP environment: act by calling its tools ({names}); each call is "
                "one step, with its reward and whether the episode is done."
            )
        else:
            properties = (described.action_schema.get("properties") or {}).items()
            fields = [
                f"{name} ({p.get('description') or p.get('type', 'value')})"
                for name, p in properties
                if name != "metadata" and isinstance(p, dict)
            ]
            lines.append(
                "Act with step(action={...}): the action's fields are "
                + ("; ".join(fields) or "none")
                + "."
            )
        lines.append(f"Served from {described.origin}.")
        return "\n\n".join(lines)

    def briefing(self) -> str:
        """On a reset: what became of its seed, where it may not have been used, and the
        long fields of the first observation, whole (the question, the prompt...)."""
        last = self.env._last
        if last is None:  # the tools' descriptions, before any episode
            return ""
        parts = [self.env.seed_words] if self.env.seed_words else []
        parts += told(last.observation, None)
        return ".\n".join(p.rstrip(".") for p in parts)

    def step_events(self, info_before: dict[str, Any], result: StepResult) -> list[str]:
        """What the step brought that a model acts on, whole: the game's new messages, a
        new question, the legal moves..."""
        return told(result.observation, self.env._previous)

    def observation_text(self, observation: Any) -> str | None:
        """The observation's fields in one line: the short ones as they are, the long ones
        by their size (given whole beside it), pictures by their shape."""
        if not isinstance(observation, dict):
            return None
        said = _tool_text(observation)
        if said is not None:
            return said
        before = self.env._previous if self.env._last is not None else None
        return observation_line(observation, before)

"""Everything a model reads about a bridged OpenEnv environment: its narration.

The title, the instructions and the observation in one line
(:class:`openenv_mcp.narration.Narration`), apart from the environment's core.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from openenv_mcp.codecs import is_raw
from openenv_mcp.narration import Narration

if TYPE_CHECKING:
    from openenv_env.env import OpenEnvEnv  # noqa: F401  (the narration's env, named as a string)

__all__ = ["OpenEnvNarration"]

_FIELD_TEXT = 200
_LINE = 600


def _field(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"<{'x'.join(map(str, value.shape))} array>"
    if is_raw(value):
        return f"<{'x'.join(map(str, value['shape']))} array>"
    if isinstance(value, str):
        if len(value) > _FIELD_TEXT:
            return repr(value[:_FIELD_TEXT]) + f"... ({len(value)} chars)"
        return repr(value)
    if isinstance(value, list) and len(value) > 20:
        return f"<list of {len(value)}>"
    text = repr(value)
    return text if len(text) <= _FIELD_TEXT else text[: _FIELD_TEXT - 3] + "..."


def _tool_text(observation: dict[str, Any]) -> str | None:
    """A ``CallToolObservation`` in words: what the tool returned, or its error."""
    if "tool_name" not in observation:
        return None
    error = observation.get("error")
    if error:
        message = error.get("message") if isinstance(error, dict) else error
        return f"{observation['tool_name']} failed: {message}"
    result = observation.get("result")
    if isinstance(result, dict):
        blocks = result.get("content") or []
        texts = [b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("text")]
        images = sum(1 for b in blocks if isinstance(b, dict) and b.get("type") == "image")
        if images and not texts:
            return f"{observation['tool_name']} returned {images} image(s) (shown)"
        if texts:
            result = " ".join(texts)
        elif "data" in result:
            result = result["data"]
    return f"{observation['tool_name']} returned {_field(result)}"


class OpenEnvNarration(Narration["OpenEnvEnv"]):
    """The words a model reads of :class:`~openenv_env.env.OpenEnvEnv`."""

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

    def observation_text(self, observation: Any) -> str | None:
        """The observation's fields in one line (pixels and long values summarized)."""
        if not isinstance(observation, dict):
            return None
        told = _tool_text(observation)
        if told is not None:
            return told
        text = ", ".join(f"{k}={_field(v)}" for k, v in observation.items()) or "no fields"
        return text if len(text) <= _LINE else text[: _LINE - 3] + "..."

"""Tool results: structured content, the text line, the image, and errors.

Every episode tool (``reset``, ``step``, ``state``, action tools) answers with
the same shape, :func:`episode_output_schema`, so clients parse one thing.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from fastmcp.tools.base import ToolResult
from mcp_types import ImageContent, TextContent

from openenv_mcp.codecs import PNG_MIME, b64_text, encode_png, encode_raw, to_jsonable
from openenv_mcp.environment import Environment, ObservationSpec
from openenv_mcp.errors import OpenEnvError
from openenv_mcp.server._settings import Frames

if TYPE_CHECKING:
    from openenv_mcp.server._episodes import Episode

__all__ = [
    "Observed",
    "Reply",
    "episode_output_schema",
    "episode_result",
    "episode_view",
    "error_result",
    "error_text",
    "image_block",
    "json_reply",
    "observe",
    "text_block",
]

log = logging.getLogger("openenv_mcp.server")

ERROR_META_KEY = "openenv_mcp/error"
#: Longest error text sent to a client (its head and tail are kept): a message
#: that quotes a megabyte argument must not send the megabyte back.
MAX_ERROR_TEXT = 2000
_ERROR_TAIL = 500


@dataclass
class Observed:
    """An observation made ready for the wire (computed off the event loop)."""

    png: bytes | None
    observation: Any  # JSON-able, or a raw-array dict, or None when not sent


def observe(env: Environment, spec: ObservationSpec, observation: Any, frames: Frames) -> Observed:
    """Render and encode what a call asked for. Runs with the episode lock held.

    ``spec`` is the server's copy of the environment's (static) observation spec,
    read once rather than rebuilt on every step.
    """
    png = None
    if spec.has_frame and frames in ("png", "both"):
        frame = env.render()
        png = encode_png(frame) if frame is not None else None
    if spec.kind != "array":
        return Observed(png, to_jsonable(observation))
    if frames in ("raw", "both", "zstd"):
        return Observed(png, encode_raw(np.asarray(observation), compress=frames == "zstd"))
    return Observed(png, None)


def _summary(episode: Episode, headline: str) -> str:
    parts = [
        f"{headline} episode {episode.id}: step {episode.step}, reward {episode.reward:g}, "
        f"return {episode.episode_return:g}"
    ]
    for key, value in episode.info.items():
        if isinstance(value, (bool, int, float)) and len(parts) < 6:
            parts.append(f"{key} {value}")
    if episode.status == "ended":
        why = "terminated" if episode.terminated else "truncated"
        parts.append(f"episode ended ({why}); call reset to play again")
    text = episode.obs_text
    if text is not None:
        parts.append(f"observation: {text if len(text) <= 300 else text[:297] + '...'}")
    return "; ".join(parts)


@dataclass
class Reply:
    """A tool result in wire form, cheap to build.

    The fast transports write :meth:`wire` straight to the client; FastMCP's
    stack takes :meth:`tool_result`. Both are built without re-validating the
    payload (pydantic would copy a 100 KB base64 frame through JSON again).
    """

    content: list[dict[str, Any]]
    structured: dict[str, Any] | None = None
    is_error: bool = False
    meta: dict[str, Any] | None = None

    def wire(self) -> dict[str, Any]:
        """The ``CallToolResult`` as a JSON-ready dict."""
        out: dict[str, Any] = {"content": self.content, "isError": self.is_error}
        if self.structured is not None:
            out["structuredContent"] = self.structured
        if self.meta is not None:
            out["_meta"] = self.meta
        return out

    def tool_result(self) -> ToolResult:
        """The same result as a FastMCP :class:`ToolResult`."""
        blocks: list[Any] = [
            ImageContent.model_construct(
                type="image", data=c["data"], mime_type=c["mimeType"], annotations=None, meta=None
            )
            if c["type"] == "image"
            else TextContent.model_construct(
                type="text", text=c["text"], annotations=None, meta=None
            )
            for c in self.content
        ]
        return ToolResult.model_construct(
            content=blocks,
            structured_content=self.structured,
            meta=self.meta,
            is_error=self.is_error,
        )


def text_block(text: str) -> dict[str, Any]:
    """A text content block."""
    return {"type": "text", "text": text}


def json_reply(data: dict[str, Any]) -> Reply:
    """A small structured answer, with its JSON as the text."""
    return Reply([text_block(json.dumps(data))], data)


def episode_view(episode: Episode, observed: Observed) -> dict[str, Any]:
    """The structured view of an episode (``structuredContent``)."""
    view: dict[str, Any] = {
        "episode_id": episode.id,
        "status": episode.status,
        "step": episode.step,
        "reward": episode.reward,
        "episode_return": episode.episode_return,
        "terminated": episode.terminated,
        "truncated": episode.truncated,
        "info": episode.info,  # JSON-able already (made so where the env lives)
    }
    if observed.observation is not None:
        view["observation"] = observed.observation
    return view


def image_block(png: bytes) -> dict[str, Any]:
    """A PNG image content block."""
    return {"type": "image", "data": b64_text(png), "mimeType": PNG_MIME}


def episode_result(
    episode: Episode, observed: Observed, headline: str, extra_text: str = ""
) -> Reply:
    """The answer of every episode tool: structured view, one text line, image."""
    text = _summary(episode, headline)
    if extra_text:
        text += f"\n{extra_text}"
    content = [text_block(text)]
    if observed.png is not None:
        content.append(image_block(observed.png))
    return Reply(content, episode_view(episode, observed))


def error_text(exc: OpenEnvError) -> str:
    """``"Name: message"``, cut in the middle when an echoed argument made it huge."""
    text = f"{exc.code}: {exc}"
    if len(text) <= MAX_ERROR_TEXT:
        return text
    head = MAX_ERROR_TEXT - _ERROR_TAIL
    cut = len(text) - head - _ERROR_TAIL
    return f"{text[:head]} [... {cut} characters cut ...] {text[-_ERROR_TAIL:]}"


def error_result(exc: OpenEnvError) -> Reply:
    """One mapping from our errors to an MCP tool error (``isError: true``)."""
    return Reply([text_block(error_text(exc))], None, True, {ERROR_META_KEY: exc.code})


def observation_schema(spec: ObservationSpec) -> dict[str, Any]:
    """JSON schema of the ``observation`` field for this kind of observation."""
    if spec.kind == "text":
        return {"type": "string", "description": spec.description}
    if spec.kind == "json":
        return {"description": spec.description or "The observation."}
    return {
        "type": "object",
        "description": f"The observation as a raw array ({spec.dtype} {list(spec.shape or ())}); "
        "sent when the call asks for frames 'raw', 'zstd' or 'both'.",
        "properties": {
            "data": {
                "type": "string",
                "description": "base64 of the C-order array bytes (with encoding 'zstd': of "
                "one zstd frame holding them)",
            },
            "shape": {"type": "array", "items": {"type": "integer"}},
            "dtype": {"type": "string", "description": "numpy dtype string, e.g. '|u1'"},
            "encoding": {"type": "string", "enum": ["zstd"], "description": "absent: plain"},
        },
        "required": ["data", "shape", "dtype"],
    }


def episode_output_schema(env: Environment) -> dict[str, Any]:
    """The ``outputSchema`` shared by ``reset``, ``step``, ``state`` and action tools."""
    return {
        "type": "object",
        "properties": {
            "episode_id": {"type": "string", "description": "Handle to pass to later calls."},
            "status": {"type": "string", "enum": ["new", "running", "ended", "broken"]},
            "step": {"type": "integer", "description": "Steps taken in this episode."},
            "reward": {"type": "number", "description": "Reward of the last step."},
            "episode_return": {"type": "number", "description": "Sum of rewards so far."},
            "terminated": {"type": "boolean"},
            "truncated": {"type": "boolean"},
            "observation": observation_schema(env.observation_spec),
            "info": {
                "type": "object",
                "properties": env.info_schema(),
                "description": "Environment-specific fields.",
            },
        },
        "required": [
            "episode_id",
            "status",
            "step",
            "reward",
            "episode_return",
            "terminated",
            "truncated",
            "info",
        ],
    }

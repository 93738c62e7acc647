"""What the episode pipeline answers, below every layer: a :class:`Reply` (a tool
result in wire form, what the view writes), a :class:`SavedEpisode` (a snapshot) and an
episode's :data:`Status`. The operations (:mod:`.ops`) name these as their answers, the
layers (:mod:`.base`) and the view (:mod:`.view`) make them, and nothing here imports
either, so the three stand on one floor each.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from openenv_mcp.codecs import PNG_MIME, b64_text

if TYPE_CHECKING:
    from fastmcp.tools.base import ToolResult

__all__ = ["Outcome", "Reply", "SavedEpisode", "Status", "image_block", "text_block"]

Status = Literal["new", "running", "ended"]


@dataclass(frozen=True)
class SavedEpisode:
    """A snapshot: the environment's own state and the episode's. Picklable."""

    env_state: Any
    observation: Any
    status: Status
    step: int
    episode_return: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]
    mask: np.ndarray | None
    trajectory: tuple[Any, ...] = ()
    env_return: float = 0.0
    #: The task the episode started and what the answers say of it (:mod:`.tasks`).
    task: tuple[Any, dict[str, Any] | None] | None = None


def text_block(text: str) -> dict[str, Any]:
    """A text content block."""
    return {"type": "text", "text": text}


def image_block(png: bytes) -> dict[str, Any]:
    """A PNG image content block."""
    return {"type": "image", "data": b64_text(png), "mimeType": PNG_MIME}


@dataclass
class Reply:
    """A tool result in wire form, cheap to build: what an episode operation answers
    (its text, its frame, its structured view), and every other tool answer or error.

    The direct paths write :meth:`wire` straight to the client; FastMCP's
    stack takes :meth:`tool_result`. Both are built without re-validating the
    payload (pydantic would copy a 100 KB base64 frame through JSON again).
    """

    content: list[dict[str, Any]]
    structured: dict[str, Any] | None = None
    is_error: bool = False
    meta: dict[str, Any] | None = None

    @property
    def view(self) -> dict[str, Any]:
        """The structured view (``structuredContent``; empty where there is none)."""
        return self.structured if self.structured is not None else {}

    @property
    def text(self) -> str:
        """The text a model reads first (an episode answer's summary)."""
        return str(self.content[0].get("text", "")) if self.content else ""

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
        from fastmcp.tools.base import ToolResult
        from mcp_types import ImageContent, TextContent

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


#: The answer of an episode operation: a :class:`Reply` (the name it had as a shape of
#: its own, kept for code that imports it).
Outcome = Reply

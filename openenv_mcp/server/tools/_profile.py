"""Who a server's tools are shaped for, decided in one place: the two profiles.

``full`` serves trainers, ``MCPEnvClient`` and people inspecting: every tool, every
frame form, structured results. ``agent`` serves a model playing in a harness: a
lean tool set, legible PNG frames, results as text and image only (some harnesses
drop the image of a result that has ``structuredContent``), videos of recorded
episodes. Everything that differs between them is a field here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from openenv_mcp.codecs import Frames

__all__ = ["AGENT", "FULL", "PROFILES", "Profile", "ProfileName"]

ProfileName = Literal["full", "agent"]


@dataclass(frozen=True)
class Profile:
    """What one profile does.

    Attributes:
        name: ``full`` or ``agent`` (``serve --profile``).
        structured: results carry ``structuredContent`` beside text and image.
        frames: the frame form every call gets (``None``: the call's own, or the server's
            default).
        legible_frames: PNG frames are scaled up to be legible by default (else the
            env's own size, pixel for pixel).
        record_video: recorded episodes get an MP4 by default.
        trainer_tools: ``step_batch``, ``close``, snapshots, ``frames`` and
            ``new_episode`` arguments are listed.
        tool_limit: most tools listed, where per-action tools would pass it (Cursor caps
            the tools of all servers near 40).
        how_to: how to drive the server through its tools, after the env's own rules.
    """

    name: ProfileName
    structured: bool
    frames: Frames | None
    legible_frames: bool
    record_video: bool
    trainer_tools: bool
    tool_limit: int | None
    how_to: str


FULL = Profile(
    name="full",
    structured=True,
    frames=None,
    legible_frames=False,
    record_video=False,
    trainer_tools=True,
    tool_limit=None,
    how_to=(
        "Call reset to start an episode (it returns an episode_id and the first "
        "observation), then step with an action, or call an action tool directly. "
        "Episodes end with terminated or truncated; reset to play again."
    ),
)

AGENT = Profile(
    name="agent",
    structured=False,
    frames="png",
    legible_frames=True,
    record_video=True,
    trainer_tools=False,
    tool_limit=12,
    how_to=(
        "Call reset to start (it returns the first frame and what to do), then step "
        "with an action by name; repeat holds it for several steps. Every answer is "
        "the new frame and a summary: reward, return, lives, what happened. When "
        "the episode is over, reset starts another."
    ),
)

PROFILES: dict[ProfileName, Profile] = {"full": FULL, "agent": AGENT}

"""The episode pipeline: one environment's episode behind small layers, in Gymnasium's
wrapper manner (order, mask, rewards, recorder, narrator, repeat; the view outermost,
writing the answer), and the typed operations a server hands it: an op goes in,
one answer comes out. Imports no MCP machinery, so a worker process runs the very
same pipeline."""

from __future__ import annotations

from openenv_mcp.pipeline.answers import Outcome, SavedEpisode, Status
from openenv_mcp.pipeline.base import EpisodeState, Layer, Moment
from openenv_mcp.pipeline.episode import EpisodePipeline, PipelineOptions, legal_actions
from openenv_mcp.pipeline.ops import (
    CallTool,
    Close,
    Frame,
    LegalActions,
    Look,
    Op,
    Reset,
    Restore,
    Snapshot,
    Step,
    Summary,
)
from openenv_mcp.pipeline.repeat import MAX_REPEAT, MAX_TASK_REPEAT, between_steps
from openenv_mcp.pipeline.view import MIN_FRAME_EDGE

__all__ = [
    "MAX_REPEAT",
    "MAX_TASK_REPEAT",
    "MIN_FRAME_EDGE",
    "CallTool",
    "Close",
    "EpisodePipeline",
    "EpisodeState",
    "Frame",
    "Layer",
    "LegalActions",
    "Look",
    "Moment",
    "Op",
    "Outcome",
    "PipelineOptions",
    "Reset",
    "Restore",
    "SavedEpisode",
    "Snapshot",
    "Status",
    "Step",
    "Summary",
    "between_steps",
    "legal_actions",
]

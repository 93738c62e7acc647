"""A layer's operations as a test calls them: each builds its op and hands it in, as
the chain above the layer would."""

from __future__ import annotations

from typing import Any

from openenv_mcp.pipeline import (
    CallTool,
    Layer,
    Look,
    Moment,
    Reset,
    Restore,
    SavedEpisode,
    Snapshot,
    Step,
)


def reset(layer: Layer, seed: int | None = None, options: dict[str, Any] | None = None) -> Moment:
    return layer.reset(Reset(seed, options, "none"))


def step(layer: Layer, action: Any, repeat: int = 1) -> Moment:
    return layer.step(Step(action, "none", repeat), action)


def look(layer: Layer) -> Moment:
    return layer.look(Look("none"))


def snapshot(layer: Layer) -> SavedEpisode:
    return layer.snapshot(Snapshot())


def restore(layer: Layer, saved: SavedEpisode) -> Moment:
    return layer.restore(Restore(saved, "none"))


def call_tool(layer: Layer, name: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return layer.call_tool(CallTool(name, params))

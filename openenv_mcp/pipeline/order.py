"""Order is enforced (Gymnasium's ``OrderEnforcing``): nothing on an episode before its
``reset``, and no step after its end."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from openenv_mcp.errors import ResetNeeded
from openenv_mcp.pipeline.base import Layer, Moment, SavedEpisode

if TYPE_CHECKING:
    from openenv_mcp.pipeline.ops import CallTool, Look, Snapshot, Step, Summary

__all__ = ["OrderEnforcing"]


class OrderEnforcing(Layer):
    """Refuses what the episode's status does not allow, with :class:`ResetNeeded`."""

    def step(self, op: Step, action: Any) -> Moment:
        if self.episode.status != "running":
            self.require_running("step")
        return self.inner.step(op, action)

    def look(self, op: Look) -> Moment:
        self.require_reset("state")
        return self.inner.look(op)

    def snapshot(self, op: Snapshot) -> SavedEpisode:
        self.require_reset("snapshot")
        return self.inner.snapshot(op)

    def call_tool(self, op: CallTool) -> dict[str, Any]:
        self.require_running(op.name)
        return self.inner.call_tool(op)

    def summary(self, op: Summary) -> dict[str, Any]:
        self.require_reset("episode_summary")
        return self.inner.summary(op)

    def require_reset(self, what: str) -> None:
        """Refuse ``what`` before the first reset."""
        state = self.episode
        if state.status == "new":
            raise ResetNeeded(f"{what} before reset: call reset first (episode {state.episode_id})")

    def require_running(self, what: str) -> None:
        """Refuse ``what`` outside a running episode (before reset, after its end)."""
        self.require_reset(what)
        state = self.episode
        if state.status == "ended":
            why = "terminated" if state.terminated else "truncated"
            raise ResetNeeded(
                f"episode {state.episode_id} has ended ({why} at step {state.step}, return "
                f"{state.episode_return:g}); call reset to start a new one"
            )

"""Order is enforced (Gymnasium's ``OrderEnforcing``): nothing on an episode before its
``reset``, and no step after its end."""

from __future__ import annotations

from typing import Any

from openenv_mcp.errors import ResetNeeded
from openenv_mcp.pipeline.base import Layer, Moment, SavedEpisode

__all__ = ["OrderEnforcing"]


class OrderEnforcing(Layer):
    """Refuses what the episode's status does not allow, with :class:`ResetNeeded`."""

    def step(self, action: Any) -> Moment:
        self.require_running("step")
        return self.inner.step(action)

    def look(self) -> Moment:
        self.require_reset("state")
        return self.inner.look()

    def snapshot(self) -> SavedEpisode:
        self.require_reset("snapshot")
        return self.inner.snapshot()

    def call_tool(self, name: str, params: dict[str, Any] | None) -> dict[str, Any]:
        self.require_running(name)
        return self.inner.call_tool(name, params)

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

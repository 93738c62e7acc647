"""One seat of a table, as an ordinary environment: the server serves each seat as an
episode of its own, so a seat's answers (text, image, structured view), recording,
rewards and limits are an episode's, and one seat's handle reaches no other seat."""

from __future__ import annotations

import time
from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict

from openenv_mcp.environment import Environment, Serving, StepResult
from openenv_mcp.errors import ResetNeeded
from openenv_mcp.narration import Narration
from openenv_mcp.seats import Answer, Table

__all__ = ["MARGIN", "SeatEnv", "SeatNarration"]

#: Seconds a seat's call keeps back from its call timeout (its answer is written after
#: its wait, inside the same call).
MARGIN = 5.0


class _NoConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SeatNarration(Narration["SeatEnv"]):
    """The words a model in one seat reads: its seat, whose turn it is, the moves since
    its last call, and the game in words as it may see it."""

    @property
    def title(self) -> str:
        return self.env.title

    def observation_text(self, observation: Any) -> str | None:
        info = self.env.last_info
        if not info:
            return None
        # With a frame the image shows the game: the words keep to what to do (a model's
        # summary shows the first 300 characters only).
        text = "" if self.env.render_mode == "rgb_array" else str(info.get("text", ""))
        ids, names = info.get("legal_actions", []), info.get("legal_action_names", [])
        legal = list(zip(ids, names, strict=False))
        if info.get("your_turn") and legal:
            shown = ", ".join(f"{n}" if str(a) == str(n) else f"{a}={n}" for a, n in legal)
            text += f"\nYour legal actions: {shown}"
        # A board's last row of dots must survive the summary's full stop.
        return f"\n{text.strip()}\n" if text.strip() else None

    def step_events(self, info_before: dict[str, Any], result: StepResult) -> list[str]:
        return seat_events(result.info)

    def action_name(self, action: int) -> str | None:
        info = self.env.last_info
        names = dict(
            zip(info.get("legal_actions", []), info.get("legal_action_names", []), strict=False)
        )
        name = names.get(action)
        return None if name is None else str(name)


def seat_events(info: dict[str, Any]) -> list[str]:
    """A seat's call in words: the moves since its last call, whose turn it is."""
    seat = info.get("seat")
    if seat is None:
        return []
    moves = info.get("moves", [])
    events = [
        f"{'you' if m.get('agent') == seat else m['agent']} played {m['name']}" for m in moves
    ]
    if moves and moves[-1].get("agent") == seat and len(moves) == 1:
        events = []  # its own move alone: the step's head names it
    if info.get("to_move"):
        whose = "your turn" if info.get("your_turn") else f"{' and '.join(info['to_move'])} to move"
        events.append(f"you are {seat}; {whose}")
    else:
        events.append(f"you are {seat}; the game is over")
    return events


class SeatEnv(Environment[_NoConfig]):
    """One seat of a :class:`Table`, bound after it is made (:meth:`bind`).

    Its spaces, frame and title are the served env's (``prototype``); its episode is the
    table's game from its seat. ``reset`` reads the seat's view of the game the table
    has just started (the table resets the game once, for every seat); ``step`` waits for
    the seat's turn, plays its move and, unless told not to, waits for its next turn.
    """

    name: ClassVar[str] = "seat"
    description: ClassVar[str] = "One seat of a game of several players."
    Config: ClassVar[type[BaseModel]] = _NoConfig
    narration = SeatNarration
    # The mask of a seat's last answer is stale once others move: the table checks.
    serving = Serving(inline=False, action_tools=False, enforce_mask=False)

    def __init__(self, prototype: Environment[Any], call_timeout: float) -> None:
        super().__init__(_NoConfig())
        self.action_space = prototype.action_space
        self.observation_space = prototype.observation_space
        self.render_mode = prototype.render_mode
        self.action_set = getattr(prototype, "action_set", None)
        self.title = type(prototype).name
        self.table: Table | None = None
        self.agent = ""
        self.last_info: dict[str, Any] = {}
        #: The longest a call may wait for a turn (its call timeout, less a margin).
        self._budget = max(1.0, call_timeout - MARGIN)

    def bind(self, table: Table, agent: str) -> None:
        """Make this the seat ``agent`` of ``table``."""
        self.table, self.agent = table, agent
        self.title = f"{table.game.title or self.title} ({agent})"

    def _table(self) -> Table:
        if self.table is None:
            raise ResetNeeded("this seat has no game yet: call reset")
        return self.table

    def _deadline(self) -> float:
        return time.monotonic() + min(self._table().turn_timeout, self._budget)

    def _answer(self, answer: Answer) -> Answer:
        self.last_info = answer.info
        return answer

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        answer = self._answer(self._table().tell(self.agent))
        return answer.observation, answer.info

    def parse_action(self, action: Any) -> Any:
        # Legal actions are known once it is the seat's turn: the table parses them then.
        self._table().check_action(self.agent, action)
        return action

    def step(self, action: Any) -> StepResult:
        table = self._table()
        since = table.moves_played
        table.act(self.agent, action, self._deadline())
        answer = self._answer(table.tell(self.agent, since))
        return StepResult(
            answer.observation, answer.reward, answer.terminated, answer.truncated, answer.info
        )

    def observe(self) -> tuple[Any, dict[str, Any]] | None:
        if self.table is None:
            return None
        answer = self._answer(self.table.tell(self.agent, consume=False))
        return answer.observation, answer.info

    def snapshot(self) -> Any:
        # The whole table: a GRPO group per seat starts every seat from it.
        return {"table": self._table().snapshot(), "seat": self.agent}

    def restore(self, snapshot: Any) -> None:
        self._table().restore(snapshot["table"])

    def state(self) -> dict[str, Any]:
        table = self.table
        if table is None:
            return {}
        return {"seat": self.agent, "table": table.id, "whose_turn": table.whose_turn()}

    def render(self) -> np.ndarray | None:
        table = self.table
        if table is None or self.render_mode != "rgb_array":
            return None
        with table.cond:
            return table.game.render(self.agent)

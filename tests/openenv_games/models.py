"""The Action, Observation and State models of OpenEnv's TextArena, Reasoning Gym,
Connect4 and Chess environments, as each one's ``models.py`` declares them (OpenEnv,
``envs/*/models.py``; BSD-3-Clause, Copyright (c) Meta Platforms, Inc. and affiliates)."""

from __future__ import annotations

from typing import Any

from openenv.core.env_server.types import Action, Observation, State
from pydantic import BaseModel, Field

# -- textarena_env/models.py ----------------------------------------------------------------


class TextArenaMessage(BaseModel):
    """Single message observed by a player."""

    sender_id: int
    content: str
    category: str


class TextArenaAction(Action):
    """Action issued by the agent for TextArena games."""

    message: str


class TextArenaObservation(Observation):
    """Observation returned from any TextArena game."""

    prompt: str
    messages: list[TextArenaMessage] = Field(default_factory=list)
    current_player_id: int = 0
    legal_players: list[int] = Field(default_factory=list)
    info: dict[str, Any] = Field(default_factory=dict)


class TextArenaState(State):
    """Structured state snapshot for the server."""

    episode_id: str | None = None
    step_count: int = 0
    env_id: str
    num_players: int
    max_turns: int | None = None
    turn: int = 0
    last_reward: float = 0.0
    last_info: dict[str, Any] = Field(default_factory=dict)
    raw_state: dict[str, Any] = Field(default_factory=dict)


# -- reasoning_gym_env/models.py ------------------------------------------------------------


class ReasoningGymAction(Action):
    """Action for the Reasoning Gym environment - the agent's answer."""

    answer: str = Field(..., description="The agent's answer to the current question")


class ReasoningGymObservation(Observation):
    """Observation from the Reasoning Gym environment."""

    question: str | None = Field(
        default=None, description="The current question to answer (None after step)"
    )
    score: float | None = Field(
        default=None,
        description="Score for the answer (0.0 to 1.0 range, from dataset.score_answer())",
    )
    correct_answer: str | None = Field(
        default=None, description="The correct answer (revealed after step)"
    )
    dataset_metadata: dict[str, Any] | None = Field(
        default=None, description="Metadata from the reasoning gym dataset entry"
    )


# -- connect4_env/models.py -----------------------------------------------------------------


class Connect4Action(Action):
    """column: The column index (0 to 6) where the piece will be placed."""

    column: int


class Connect4Observation(Observation):
    """board: 6 rows x 7 columns (1 = current player, -1 = opponent, 0 = empty);
    legal_actions: the columns that are valid moves."""

    board: list[list[int]] = Field(default_factory=list)
    legal_actions: list[int] = Field(default_factory=list)


class Connect4State(State):
    board: list[list[int]] = Field(default_factory=lambda: [[0] * 7 for _ in range(6)])
    next_player: int = 1


# -- chess_env/models.py --------------------------------------------------------------------


class ChessAction(Action):
    """move: UCI format move string (e.g., "e2e4", "e7e8q" for promotion)."""

    move: str


class ChessObservation(Observation):
    """fen: the position; legal_moves: the legal moves in UCI; is_check; result."""

    fen: str = ""
    legal_moves: list[str] = Field(default_factory=list)
    is_check: bool = False
    result: str | None = None


class ChessState(State):
    fen: str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
    current_player: str = "white"
    move_history: list[str] = Field(default_factory=list)
    step_count: int = 0

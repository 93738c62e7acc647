"""OpenEnv's own game environments, vendored from its repository (meta-pytorch/OpenEnv,
``envs/``, BSD-3-Clause, Copyright (c) Meta Platforms, Inc. and affiliates) as test
data for the bridge: the code that makes their observations is theirs, cut to what the
bridge meets (no Gradio tabs, no reward providers, no moonfish engine).

* :class:`TextArenaEnvironment` (``envs/textarena_env``): any TextArena game (the
  ``textarena`` package from PyPI); :func:`create_textarena_environment` is the factory
  its ``server/app.py`` hands ``create_app``, configured by ``TEXTARENA_*`` variables.
  Its ``messages`` carry the game's feedback ("The target number is higher").
* :class:`ReasoningGymEnvironment` (``envs/reasoning_gym_env``): one question of a
  ``reasoning_gym`` dataset per episode (the ``reasoning-gym`` package from PyPI), the
  dataset chosen by reset's ``dataset_name``, ``dataset_config``, ``seed`` and ``size``.
* :class:`Connect4Environment` (``envs/connect4_env``): its ``step`` annotates the
  action only, its ``reset`` takes no seed; the models live in :mod:`tests.openenv_games.models`
  (as OpenEnv's ``models.py`` beside ``server/``).
* :class:`ChessEnvironment` (``envs/chess_env``, python-chess): constructor arguments
  (``opponent``, ``agent_color``), an unannotated ``step``, ``reset(fen=None)``, and
  more than 20 legal moves past the first move. The opponent here is "random" or none
  (OpenEnv's default, moonfish, is an engine this test data leaves out).

Their apps, as OpenEnv's ``server/app.py`` builds them, are :mod:`tests.openenv_games.server.app`.
"""

from __future__ import annotations

import os
import random
import uuid
from typing import Any

import numpy as np
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import State

from tests.openenv_games.models import (
    ChessAction,
    ChessObservation,
    ChessState,
    Connect4Action,
    Connect4Observation,
    Connect4State,
    ReasoningGymAction,
    ReasoningGymObservation,
    TextArenaAction,
    TextArenaMessage,
    TextArenaObservation,
    TextArenaState,
)

# -- TextArena (envs/textarena_env/server/environment.py) ---------------------------------


class TextArenaEnvironment(Environment):  # type: ignore[type-arg]
    """Wrap any TextArena game behind the OpenEnv ``Environment`` API."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(
        self,
        env_id: str = "Wordle-v0",
        *,
        num_players: int = 1,
        max_turns: int | None = None,
        download_nltk: bool = True,
        env_kwargs: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        import textarena as ta

        if download_nltk:  # OpenEnv downloads NLTK's words here (Wordle needs them)
            import nltk

            nltk.download("words", quiet=True)
            nltk.download("averaged_perceptron_tagger_eng", quiet=True)
        self.env_id = env_id
        self.num_players = num_players
        self.max_turns = max_turns
        self._ta_env = ta.make(env_id=env_id, **(env_kwargs or {}))
        self._state = TextArenaState(env_id=env_id, num_players=num_players, max_turns=max_turns)
        self._ta_env.reset(num_players=self.num_players)

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> TextArenaObservation:
        env = self._ta_env
        while hasattr(env, "env"):
            if hasattr(env, "full_observations"):
                env.full_observations = {}
            env = env.env
        if hasattr(env, "full_observations"):
            env.full_observations = {}
        self._ta_env.reset(num_players=self.num_players)  # OpenEnv passes no seed on
        self._state.episode_id = episode_id if episode_id is not None else str(uuid.uuid4())
        self._state.step_count = 0
        self._state.turn = 0
        self._state.last_reward = 0.0
        self._state.last_info = {}
        observation = self._build_observation()
        observation.reward = 0.0
        observation.done = False
        return observation

    def step(self, action: TextArenaAction) -> TextArenaObservation:  # type: ignore[override]
        if not isinstance(action, TextArenaAction):
            raise TypeError(f"Expected TextArenaAction, received {type(action)!r}")
        done, info = self._ta_env.step(action.message)
        self._state.step_count += 1
        self._state.turn = getattr(self._ta_env.state, "turn", self._state.turn + 1)
        self._state.last_info = info or {}
        observation = self._build_observation()
        observation.done = done
        reward = self._extract_reward()
        observation.reward = reward
        self._state.last_reward = reward
        return observation

    @property
    def state(self) -> TextArenaState:
        return self._state

    def _build_observation(self) -> TextArenaObservation:
        player_id, messages = self._ta_env.get_observation()
        ta_messages = self._convert_messages(messages)
        prompt_lines = [msg.content for msg in ta_messages if msg.category == "PROMPT"]
        if not prompt_lines:
            current_turn = getattr(self._ta_env.state, "turn", 0)
            if current_turn == 0 and ta_messages:
                prompt_lines = [ta_messages[0].content]
            else:
                prompt_lines = [self.env_id]
        prompt = "\n".join(prompt_lines).strip()
        info: dict[str, Any] = {}
        info.update(getattr(self._ta_env.state, "step_info", {}))
        return TextArenaObservation(
            prompt=prompt,
            messages=ta_messages,
            current_player_id=player_id,
            legal_players=self._legal_players(),
            info=info,
            metadata={
                "env_id": self.env_id,
                "turn": getattr(self._ta_env.state, "turn", 0),
                "raw_messages": [m.model_dump() for m in ta_messages],
            },
        )

    def _legal_players(self) -> list[int]:
        role_mapping = getattr(self._ta_env.state, "role_mapping", {}) or {}
        return sorted(pid for pid in role_mapping if isinstance(pid, int) and pid >= 0)

    def _convert_messages(self, messages: Any) -> list[TextArenaMessage]:
        # TextArena 0.7's default wrappers send the whole transcript as one string: OpenEnv
        # iterates it character by character and joins them again into one message.
        converted: list[TextArenaMessage] = []
        sender: int | None = None
        category: str | None = None
        content: list[str] = []

        def flush() -> None:
            nonlocal content, sender, category
            if content:
                converted.append(
                    TextArenaMessage(
                        sender_id=sender if sender is not None else -1,
                        content="".join(content),
                        category=category or "MESSAGE",
                    )
                )
            content, category, sender = [], None, None

        for entry in messages:
            if isinstance(entry, tuple) and len(entry) == 3:
                who, text, kind = entry
            elif isinstance(entry, tuple) and len(entry) == 2:
                who, text = entry
                kind = "MESSAGE"
            else:
                who, text, kind = -1, str(entry), "MESSAGE"
            name = getattr(kind, "name", str(kind))
            sender_id = int(who) if isinstance(who, (int, float)) else -1
            if content and category == name and sender == sender_id:
                content.append(str(text))
            else:
                flush()
                sender, category, content = sender_id, name, [str(text)]
        flush()
        return converted

    def _extract_reward(self) -> float:
        rewards = getattr(self._ta_env.state, "rewards", None)
        if isinstance(rewards, dict):
            player_id = getattr(self._ta_env.state, "current_player_id", 0)
            if player_id in rewards:
                return float(rewards[player_id])
            if 0 in rewards:
                return float(rewards[0])
        return 0.0


def create_textarena_environment() -> TextArenaEnvironment:
    """The factory OpenEnv's ``textarena_env/server/app.py`` gives ``create_app``. Its
    defaults there are Wordle and an NLTK download (Wordle's word list, fetched at run
    time); here GuessTheNumber and none, which need nothing from the network."""
    return TextArenaEnvironment(
        env_id=os.getenv("TEXTARENA_ENV_ID", "GuessTheNumber-v0"),
        num_players=int(os.getenv("TEXTARENA_NUM_PLAYERS", "1")),
        download_nltk=os.getenv("TEXTARENA_DOWNLOAD_NLTK", "0") in {"1", "true", "True"},
    )


# -- Reasoning Gym (envs/reasoning_gym_env/server/reasoning_gym_environment.py) ------------


class ReasoningGymEnvironment(Environment):  # type: ignore[type-arg]
    """One question of a reasoning_gym dataset per episode; the answer scores it."""

    SUPPORTS_CONCURRENT_SESSIONS: bool = True

    def __init__(self) -> None:
        self._state = State(episode_id=str(uuid.uuid4()), step_count=0)
        self._dataset: Any = None
        self._dataset_iterator: Any = None
        self._current_entry: Any = None

    def reset(  # type: ignore[override]
        self,
        dataset_name: str | None = None,
        dataset_config: dict[str, Any] | None = None,
        dataset_specs: list[dict[str, Any]] | None = None,
        seed: int | None = None,
        size: int | None = None,
        episode_id: str | None = None,
    ) -> ReasoningGymObservation:
        import reasoning_gym

        if dataset_name is not None:
            if seed is None or size is None:
                raise ValueError("seed and size must be provided when dataset_name is specified")
            if dataset_name == "composite":
                raise ValueError("composite datasets are left out of this test copy")
            self._dataset = reasoning_gym.create_dataset(
                dataset_name, size=size, seed=seed, **(dataset_config or {})
            )
            self._dataset_iterator = iter(self._dataset)
        elif self._dataset is None:
            self._dataset = reasoning_gym.create_dataset(name="leg_counting", size=1000, seed=42)
            self._dataset_iterator = iter(self._dataset)
        try:
            self._current_entry = next(self._dataset_iterator)
        except StopIteration:
            self._dataset_iterator = iter(self._dataset)
            self._current_entry = next(self._dataset_iterator)
        self._state = State(episode_id=episode_id or str(uuid.uuid4()), step_count=0)
        return ReasoningGymObservation(
            question=self._current_entry["question"],
            score=None,
            correct_answer=None,
            done=False,
            reward=0.0,
            dataset_metadata=None,
        )

    def step(self, action: ReasoningGymAction) -> ReasoningGymObservation:  # type: ignore[override]
        self._state.step_count += 1
        if self._current_entry is None:
            return ReasoningGymObservation(done=True, reward=0.0)
        score = self._dataset.score_answer(action.answer, self._current_entry)
        metadata = self._current_entry.get("metadata", {})
        return ReasoningGymObservation(
            question=None,
            score=score,
            correct_answer=self._current_entry["answer"],
            done=True,
            reward=float(score),
            dataset_metadata=metadata or None,
        )

    @property
    def state(self) -> State:
        return self._state


# -- Connect4 (envs/connect4_env/server/connect4_environment.py) ----------------------------


class Connect4Environment(Environment):  # type: ignore[type-arg]
    ROWS = 6
    COLUMNS = 7

    def __init__(self, opponent=None):  # type: ignore[no-untyped-def]
        super().__init__()
        self._opponent = opponent
        self.reset()

    def reset(self):  # type: ignore[no-untyped-def,override]
        self.board = np.zeros((self.ROWS, self.COLUMNS), dtype=np.int8)
        self.next_player = 1
        self.invalid_move_played = False
        self._state = Connect4State(
            board=self.board.copy().tolist(),
            next_player=self.next_player,
            episode_id=str(uuid.uuid4()),
            step_count=0,
        )
        return self._make_observation()

    def step(self, action: Connect4Action):  # type: ignore[no-untyped-def,override]
        col = action.column
        done = False
        if col < 0 or col >= self.COLUMNS or self.board[0, col] != 0:
            self.invalid_move_played = True
            reward, done = -1.0, True
        else:
            for row in range(self.ROWS - 1, -1, -1):
                if self.board[row, col] == 0:
                    self.board[row, col] = self.next_player
                    break
            reward, done = self._check_win_or_draw(row, col)
        self.next_player *= -1
        self._state = Connect4State(
            board=self.board.copy().tolist(),
            next_player=self.next_player,
            episode_id=self._state.episode_id,
            step_count=self._state.step_count + 1,
        )
        return self._make_observation(reward, done)

    def _make_observation(self, reward=0.0, done=False):  # type: ignore[no-untyped-def]
        legal_actions = [c for c in range(self.COLUMNS) if self.board[0, c] == 0]
        return Connect4Observation(
            board=self.board.copy().tolist(),
            legal_actions=legal_actions,
            reward=reward,
            done=done,
            metadata={"next_player": self.next_player},
        )

    def _check_win_or_draw(self, row, col):  # type: ignore[no-untyped-def]
        player = self.board[row, col]
        for dr, dc in ((1, 0), (0, 1), (1, 1), (1, -1)):
            count = 0
            for step in range(-3, 4):
                r, c = row + step * dr, col + step * dc
                if 0 <= r < self.ROWS and 0 <= c < self.COLUMNS and self.board[r, c] == player:
                    count += 1
                    if count >= 4:
                        return 1.0, True
                else:
                    count = 0
        if np.all(self.board != 0):
            return 0.0, True
        return 0.0, False

    @property
    def state(self):  # type: ignore[no-untyped-def]
        return self._state


# -- Chess (envs/chess_env/server/chess_environment.py, without moonfish) ------------------


class ChessEnvironment(Environment):  # type: ignore[type-arg]
    """Chess against a random opponent (or none), as OpenEnv's chess env plays it."""

    def __init__(
        self,
        opponent: str | None = "random",
        max_moves: int = 500,
        agent_color: str | None = None,
    ):
        super().__init__()
        self._opponent = opponent
        self._max_moves = max_moves
        self._agent_color_setting = agent_color
        self._board: Any = None
        self._state: Any = None
        self._agent_color = True
        self.reset()

    def reset(self, fen: str | None = None):  # type: ignore[no-untyped-def,override]
        import chess

        self._board = chess.Board(fen) if fen else chess.Board()
        episode_id = str(uuid.uuid4())
        if self._agent_color_setting == "black":
            self._agent_color = chess.BLACK
        elif self._agent_color_setting is None:
            self._agent_color = chess.WHITE if hash(episode_id) % 2 == 0 else chess.BLACK
        else:
            self._agent_color = chess.WHITE
        self._state = ChessState(
            episode_id=episode_id,
            step_count=0,
            current_player="white" if self._board.turn else "black",
            fen=self._board.fen(),
            move_history=[],
        )
        if self._opponent is not None and self._agent_color == chess.BLACK:
            self._make_opponent_move()
        _, done = self._calculate_reward_and_done()
        return self._make_observation(done=done)

    def step(self, action):  # type: ignore[no-untyped-def,override]
        import chess

        try:
            move = chess.Move.from_uci(action.move)
        except ValueError:
            return self._make_observation(reward=-0.1, done=False)
        if move not in self._board.legal_moves:
            return self._make_observation(reward=-0.1, done=False)
        self._board.push(move)
        self._state.step_count += 1
        self._state.move_history.append(action.move)
        self._state.current_player = "white" if self._board.turn else "black"
        self._state.fen = self._board.fen()
        reward, done = self._calculate_reward_and_done()
        if not done and self._opponent is not None:
            self._make_opponent_move()
            reward, done = self._calculate_reward_and_done()
        return self._make_observation(reward=reward, done=done)

    def _make_opponent_move(self) -> None:
        move = random.choice(list(self._board.legal_moves))
        self._board.push(move)
        self._state.step_count += 1
        self._state.move_history.append(move.uci())
        self._state.current_player = "white" if self._board.turn else "black"
        self._state.fen = self._board.fen()

    def _make_observation(self, reward: float = 0.0, done: bool = False):  # type: ignore[no-untyped-def]
        return ChessObservation(
            fen=self._board.fen(),
            legal_moves=[move.uci() for move in self._board.legal_moves],
            is_check=self._board.is_check(),
            done=done,
            reward=reward,
            result=("1-0" if not self._board.turn else "0-1")
            if done and self._board.is_checkmate()
            else ("1/2-1/2" if done else None),
            metadata={
                "fullmove_number": self._board.fullmove_number,
                "halfmove_clock": self._board.halfmove_clock,
            },
        )

    def _calculate_reward_and_done(self) -> tuple[float, bool]:
        board = self._board
        if board.is_checkmate():
            return (1.0 if (not board.turn) == self._agent_color else -1.0), True
        if (
            board.is_stalemate()
            or board.is_insufficient_material()
            or board.is_fifty_moves()
            or board.is_repetition(3)
            or self._state.step_count >= self._max_moves
        ):
            return 0.0, True
        return 0.0, False

    @property
    def state(self):  # type: ignore[no-untyped-def]
        return self._state


__all__ = [
    "ChessAction",
    "ChessEnvironment",
    "ChessObservation",
    "Connect4Action",
    "Connect4Environment",
    "Connect4Observation",
    "ReasoningGymAction",
    "ReasoningGymEnvironment",
    "ReasoningGymObservation",
    "TextArenaAction",
    "TextArenaEnvironment",
    "TextArenaObservation",
    "create_textarena_environment",
]

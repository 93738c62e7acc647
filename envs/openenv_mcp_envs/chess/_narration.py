"""What a model reads of a chess game: its title, its rules, the board in words, each
move's events."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import chess

from openenv_mcp.environment import StepResult
from openenv_mcp.narration import Narrated, Narration

if TYPE_CHECKING:
    from openenv_mcp_envs.chess._engine import Opponent


class _Rules(Protocol):
    """What the narration reads of the game's config (``ChessConfig``)."""

    @property
    def color(self) -> str: ...

    @property
    def claim_draw(self) -> bool: ...

    @property
    def illegal_penalty(self) -> float: ...

    @property
    def max_moves(self) -> int: ...


class ChessView(Narrated, Protocol):
    """What the narration reads of :class:`~openenv_mcp_envs.chess.env.ChessEnv` (named
    here, so this module need not import the env's, which imports it)."""

    @property
    def config(self) -> _Rules: ...

    @property
    def opponent(self) -> Opponent | None: ...

    @property
    def board(self) -> chess.Board: ...

    @property
    def agent(self) -> bool | None: ...

    def describe(self, board: chess.Board) -> str: ...


class ChessNarration(Narration[ChessView]):
    """The rules as configured, the board as a diagram, moves and replies in SAN."""

    @property
    def title(self) -> str:
        opponent = self.env.opponent
        if opponent is None:
            return "Chess (self-play)"
        return f"Chess against {opponent.label}"

    def instructions(self) -> str:
        env = self.env
        cfg = env.config
        if env.opponent is None:
            who = (
                "You play both sides (self-play): each step moves for the side to move. The "
                "reward is from the side that moved: +1 for the move that checkmates, 0 for a "
                "draw."
            )
        else:
            side = (
                "a colour drawn from the seed"
                if cfg.color == "random"
                else f"{cfg.color.capitalize()}"
            )
            who = (
                f"You play {side} against {env.opponent.label}; after each of your moves it "
                "replies at once, in the same step (as Black you start after its first move). "
                "The reward is +1 when you win, -1 when you lose, 0 for a draw."
            )
        draws = (
            "stalemate, insufficient material, threefold repetition, the fifty-move rule"
            if cfg.claim_draw
            else "stalemate, insufficient material, fivefold repetition, the 75-move rule"
        )
        return "\n".join(
            [
                "You are playing chess under the standard rules (FIDE).",
                who,
                "Move with step(action=MOVE), in SAN (e4, Nf3, exd5, O-O, O-O-O, e8=Q, Qxf7#) or "
                "UCI (e2e4, g1f3, e1g1 to castle, e7e8q to promote). The legal_moves tool lists "
                "every legal move in both notations.",
                f"An illegal move is a step: it costs {cfg.illegal_penalty:g}, leaves the board "
                "as it was, counts toward the limit, and the answer says why it was illegal, "
                "what you may have meant and which moves are legal.",
                f"The game ends with checkmate or a draw ({draws}); it is cut short (truncated) "
                f"after {cfg.max_moves} of your steps, illegal ones included.",
                "You see the board as a picture (your side at the bottom, the last move's squares "
                "highlighted, a king in check on red) and as text: a diagram with White's pieces "
                "in uppercase (K Q R B N P) and Black's in lowercase, '.' for an empty square, "
                "always from White's side (rank 8 on top, files a-h left to right, as the FEN "
                "reads), then the position's FEN.",
            ]
        )

    def action_description(self) -> str:
        return (
            "Your move in SAN (e4, Nf3, exd5, O-O, e8=Q) or UCI (e2e4, g1f3, e1g1, e7e8q). An "
            "illegal move costs a penalty and counts toward the move limit; the board stays."
        )

    def observation_text(self, observation: Any) -> str | None:
        env = self.env
        if observation == env.board.fen():
            return env.describe(env.board)
        try:
            return env.describe(chess.Board(observation))
        except (ValueError, TypeError):
            return None

    def step_events(self, info_before: dict[str, Any], result: StepResult) -> list[str]:
        env = self.env
        cfg, board, opponent = env.config, env.board, env.opponent
        info = result.info
        events: list[str] = []
        if info.get("illegal"):
            events.append(
                f"{info['illegal']} Penalty {-cfg.illegal_penalty:g}; the move still "
                f"counts ({info.get('moves')} of {cfg.max_moves})"
            )
            return events
        mover = info_before.get("turn", "")
        if info.get("move_san"):
            if env.agent is None:
                events.append(f"{mover.capitalize()} played {info['move_san']} ({info['move']})")
            else:
                events.append(f"You played {info['move_san']} ({info['move']})")
        if info.get("reply_san") and opponent is not None:
            events.append(
                f"{opponent.label[:1].upper()}{opponent.label[1:]} replied "
                f"{info['reply_san']} ({info['reply']})"
            )
        termination = info.get("termination", "")
        if termination:
            events.append(self._ending(info, float(result.reward)))
        else:
            if info.get("check"):
                events.append("Check")
            if info.get("fen") == board.fen():
                moves = sorted(board.legal_moves, key=lambda m: m.uci())
                sans = ", ".join(board.san(m) for m in moves)
                events.append(f"Legal moves for {info.get('turn')}: {sans}")
        return events

    def _ending(self, info: dict[str, Any], reward: float) -> str:
        termination = str(info.get("termination", "")).replace("_", " ")
        if info.get("result") == "1/2-1/2":
            return f"Draw by {termination}"
        if self.env.agent is None:
            winner = "White" if info.get("result") == "1-0" else "Black"
            return f"Checkmate: {winner} wins"
        return "Checkmate: you win" if reward > 0 else "Checkmate: you lose"

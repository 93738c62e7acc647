"""What this package knows of PettingZoo's classic games beyond their spaces: their
titles and rules, names for their action ids, and their boards in words.

Each is read from the unwrapped environment (``env.unwrapped``) and the agent's index
in ``possible_agents``; a game without an entry here is named by its ids and described
by its ``ansi`` render or its observation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["KNOWN", "Known"]

#: ``(unwrapped env, agent index, action id) -> name``.
Namer = Callable[[Any, int, int], str]
#: ``(unwrapped env, agent index) -> the board in words, as that agent may see it``.
Describer = Callable[[Any, int], str]


@dataclass(frozen=True)
class Known:
    """One classic game: its title, rules, names and board text."""

    title: str
    rules: str
    name: Namer | None = None
    text: Describer | None = None
    #: Every agent sees the whole game (a frame of it shows nothing private).
    perfect: bool = True
    #: Made with ``render_mode="rgb_array"`` where frames are wanted (Hanabi's env draws
    #: a frame on every step in any render mode, looking for fonts with a process).
    frames: bool = True


# -- tic-tac-toe -----------------------------------------------------------------------

_TTT_ROWS = ("top", "middle", "bottom")
_TTT_COLS = ("left", "center", "right")


def _ttt_cell(action: int) -> str:
    # PettingZoo numbers the cells down the columns: 0 3 6 / 1 4 7 / 2 5 8.
    row, col = action % 3, action // 3
    if row == 1 and col == 1:
        return "center"
    return f"{_TTT_ROWS[row]}-{_TTT_COLS[col]}"


def _ttt_text(env: Any, index: int) -> str:
    marks = ".XO"
    squares = list(env.board.squares)
    rows = [" ".join(marks[squares[col * 3 + row]] for col in range(3)) for row in range(3)]
    names = env.possible_agents
    return "\n".join([*rows, f"{names[0]} plays X, {names[1]} plays O; you are {names[index]}."])


# -- Connect Four ------------------------------------------------------------------------


def _c4_text(env: Any, index: int) -> str:
    marks = ".XO"
    board = list(env.board)
    rows = [" ".join(marks[board[r * 7 + c]] for c in range(7)) for r in range(6)]
    names = env.possible_agents
    return "\n".join(
        [
            *rows,
            " ".join(str(c) for c in range(7)),
            f"{names[0]} plays X, {names[1]} plays O; you are {names[index]}. "
            "A disc falls to the lowest empty cell of its column.",
        ]
    )


# -- chess -------------------------------------------------------------------------------


def _chess_move(env: Any, index: int, action: int) -> Any:
    from pettingzoo.classic.chess import chess_utils  # type: ignore[import-untyped,unused-ignore]

    if action not in chess_utils.actions_to_moves:
        chess_utils.legal_moves(env.board)  # fills the id -> move table as moves are met
    return chess_utils.action_to_move(env.board, action, index)


def _chess_name(env: Any, index: int, action: int) -> str:
    try:
        return str(_chess_move(env, index, action).uci())
    except (KeyError, ValueError):
        return str(action)


def _chess_text(env: Any, index: int) -> str:
    board = env.board
    names = env.possible_agents
    side = "white" if board.turn else "black"
    return "\n".join(
        [
            str(board),
            f"FEN: {board.fen()}",
            f"{names[0]} plays white (upper case, at the bottom), {names[1]} black; "
            f"you are {names[index]}. {side.capitalize()} to move.",
        ]
    )


# -- Go ----------------------------------------------------------------------------------

_GTP_COLUMNS = "ABCDEFGHJKLMNOPQRSTUVWXYZ"


def _go_name(env: Any, index: int, action: int) -> str:
    n = int(env._N)
    if action == n * n:
        return "pass"
    row, col = divmod(action, n)
    return f"{_GTP_COLUMNS[col]}{n - row}"


def _go_text(env: Any, index: int) -> str:
    n = int(env._N)
    position = env._go
    marks = {1: "X", -1: "O"}  # go_base: BLACK = 1, WHITE = -1
    header = "   " + " ".join(_GTP_COLUMNS[c] for c in range(n))
    rows = [
        f"{n - r:>2} " + " ".join(marks.get(int(v), ".") for v in position.board[r])
        for r in range(n)
    ]
    names = env.possible_agents
    caps = getattr(position, "caps", (0, 0))
    return "\n".join(
        [
            header,
            *rows,
            f"{names[0]} plays black (X), {names[1]} white (O); you are {names[index]}. "
            f"Komi {float(position.komi):g}; captures: black {caps[0]}, white {caps[1]}.",
        ]
    )


# -- rock-paper-scissors -----------------------------------------------------------------


def _rps_name(env: Any, index: int, action: int) -> str:
    moves = list(env._moves)
    return str(moves[action]).lower() if 0 <= action < len(moves) - 1 else str(action)


def _rps_text(env: Any, index: int) -> str:
    names = env.possible_agents
    other = 1 - index
    played = int(getattr(env, "num_moves", 0))
    lines = [f"Round {played + 1} of {env.max_cycles}; you are {names[index]}."]
    history = list(getattr(env, "history", []))
    if played and len(history) >= 2 and min(history[0], history[1]) >= 0:
        mine, theirs = int(history[index]), int(history[other])
        lines.append(
            f"Last round: you played {_rps_name(env, index, mine)}, {names[other]} played "
            f"{_rps_name(env, other, theirs)}."
        )
    return "\n".join(lines)


# -- poker (RLCard) ----------------------------------------------------------------------

_LIMIT_ACTIONS = ("call", "raise", "fold", "check")
_NO_LIMIT_ACTIONS = ("fold", "check_call", "raise_half_pot", "raise_pot", "all_in")
_CARDS = "cards as suit then rank (S spades, H hearts, D diamonds, C clubs; T ten)"


def _named(table: tuple[str, ...]) -> Namer:
    def name(env: Any, index: int, action: int) -> str:
        return table[action] if 0 <= action < len(table) else str(action)

    return name


def _cards(cards: Any) -> str:
    if not cards:
        return "none"
    if isinstance(cards, str):
        return cards
    return " ".join(str(c) for c in cards)


def _poker_text(env: Any, index: int) -> str:
    raw = env.env.get_state(index)["raw_obs"]
    names = env.possible_agents
    lines = [f"You are {names[index]}; {_CARDS}."]
    lines.append(f"Your hand: {_cards(raw.get('hand'))}")
    public = raw.get("public_cards", raw.get("public_card"))
    lines.append(f"Board: {_cards(public)}")
    chips = raw.get("all_chips")
    if chips is not None:
        lines.append(
            "Chips in the pot: "
            + ", ".join(f"{names[i]} {float(c):g}" for i, c in enumerate(chips))
        )
    if "stakes" in raw:
        lines.append(
            "Chips left: "
            + ", ".join(f"{names[i]} {float(c):g}" for i, c in enumerate(raw["stakes"]))
        )
    if "stage" in raw:
        lines.append(f"Stage: {getattr(raw['stage'], 'name', raw['stage'])}".lower())
    return "\n".join(lines)


# -- Hanabi (OpenSpiel's, through Shimmy) --------------------------------------------------


def _hanabi_name(env: Any, index: int, action: int) -> str:
    try:
        return str(env.hanabi_env.game_state.action_to_string(index, action)).strip("()")
    except Exception:  # an id the state cannot name now
        return str(action)


def _hanabi_text(env: Any, index: int) -> str:
    names = env.possible_agents
    view = str(env.hanabi_env.game_state.observation_string(index))
    return f"You are {names[index]} (your own cards show as XX).\n{view}"


#: Entries by PettingZoo's name of the game (its id without family and version).
KNOWN: dict[str, Known] = {
    "tictactoe": Known(
        "tic-tac-toe",
        "Two players take turns marking a cell of a 3x3 grid (X first); three marks in a "
        "row, column or diagonal win (+1, the loser -1); a full grid is a draw (0).",
        lambda env, index, action: _ttt_cell(action),
        _ttt_text,
    ),
    "connect_four": Known(
        "Connect Four",
        "Two players drop discs into a 7-column, 6-row grid in turn; four of one's discs in "
        "a row, column or diagonal win (+1, the loser -1); a full grid is a draw (0).",
        lambda env, index, action: f"column {action}",
        _c4_text,
    ),
    "chess": Known(
        "chess",
        "Standard chess: checkmate wins (+1, the loser -1); stalemate, insufficient "
        "material and claimable draws (threefold repetition, fifty moves) end in a draw (0). "
        "Moves are named in UCI (e2e4; promotions e7e8q).",
        _chess_name,
        _chess_text,
    ),
    "go": Known(
        "Go",
        "Players place stones in turn (black first); a group without liberties is captured. "
        "Two passes in a row end the game: the larger area (with komi for white) wins (+1, "
        "the loser -1). Points are named as in GTP (D4; columns skip I), and 'pass'.",
        _go_name,
        _go_text,
    ),
    "rps": Known(
        "rock-paper-scissors",
        "Both players choose at once each round: rock beats scissors, scissors beat paper, "
        "paper beats rock (+1 to the winner, -1 to the loser, 0 on a tie). The observation is "
        "the opponent's last choice.",
        _rps_name,
        _rps_text,
    ),
    "texas_holdem": Known(
        "limit Texas hold'em",
        "Limit Texas hold'em poker: two private cards each, five public cards over three "
        "rounds of betting; the best five-card hand (or the last player not to fold) wins "
        "the pot. Rewards are chips won or lost (halved).",
        _named(_LIMIT_ACTIONS),
        _poker_text,
        perfect=False,
    ),
    "texas_holdem_no_limit": Known(
        "no-limit Texas hold'em",
        "No-limit Texas hold'em poker: raises of half the pot, the pot, or all in. The best "
        "hand (or the last player not to fold) wins the pot; rewards are chips won or lost.",
        _named(_NO_LIMIT_ACTIONS),
        _poker_text,
        perfect=False,
    ),
    "leduc_holdem": Known(
        "Leduc hold'em",
        "Leduc hold'em poker: a six-card deck, one private card each, one public card, two "
        "rounds of betting; a pair with the public card wins, else the higher card. Rewards "
        "are chips won or lost.",
        _named(_LIMIT_ACTIONS),
        _poker_text,
        perfect=False,
    ),
    "hanabi": Known(
        "Hanabi",
        "Cooperative Hanabi: players see each other's cards but not their own, give hints "
        "(information tokens) and play cards to build five fireworks in rank order; every "
        "card played well scores for all.",
        _hanabi_name,
        _hanabi_text,
        perfect=False,
        frames=False,
    ),
}

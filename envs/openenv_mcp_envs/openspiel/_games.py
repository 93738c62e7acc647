"""OpenSpiel's games: which ones can be served, their parameters, and rules in words.

Everything here reads ``pyspiel`` itself (``registered_games``, each game's
``parameter_specification``, ``load_game``); nothing about a game is assumed
that OpenSpiel does not report, except the short rule summaries in
:data:`RULES`, which tests check against the real games where they make claims.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from typing import Any

import pyspiel

from openenv_mcp.errors import ArgumentError, did_you_mean
from openenv_mcp.options import parse_pairs

__all__ = [
    "RULES",
    "coerce_params",
    "list_games",
    "load",
    "parse_params",
    "unsupported_games",
    "why_unsupported",
]

log = logging.getLogger(__name__)

_Dynamics = pyspiel.GameType.Dynamics
_ChanceMode = pyspiel.GameType.ChanceMode


def _unquote(raw: str) -> str:
    return raw[1:-1] if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "\"'" else raw


def parse_params(text: str) -> dict[str, Any]:
    """Game parameters from a command line: ``board_size=9,komi=6.5`` or a JSON object.

    Values stay as written (strings, or JSON values); :func:`coerce_params` gives
    them the types the game declares.

    Raises:
        ValueError: saying which part could not be read and what was expected.
    """
    return parse_pairs(
        text, "game parameters", "board_size=9,komi=6.5", _unquote, identifiers=False
    )


@functools.cache
def _types() -> dict[str, Any]:
    """Every registered game's ``GameType``, by short name."""
    return {t.short_name: t for t in pyspiel.registered_games()}


def why_unsupported(game_type: Any) -> str | None:
    """Why a game of this type cannot be served, or ``None`` if it can (sequential turns,
    or simultaneous moves: the agent's action is its part of each joint move)."""
    if game_type.dynamics == _Dynamics.MEAN_FIELD:
        return (
            "it is a mean-field game (one representative player against a population "
            "distribution that the caller must supply), not a game against opponents"
        )
    if game_type.dynamics not in (_Dynamics.SEQUENTIAL, _Dynamics.SIMULTANEOUS):
        return (
            f"its dynamics are {game_type.dynamics.name}, neither sequential turns nor "
            "simultaneous moves"
        )
    if game_type.chance_mode == _ChanceMode.SAMPLED_STOCHASTIC:
        return (
            "its chance events are sampled inside the game by its own random generator "
            "(SAMPLED_STOCHASTIC), which the environment can neither seed per episode nor "
            "snapshot, so episodes could not be reproduced"
        )
    return None


def _why_not_loaded(game: Any) -> str | None:
    """Why a loaded game cannot be served, or ``None`` if it can."""
    why = why_unsupported(game.get_type())
    if why is None and game.num_distinct_actions() < 1:
        why = "it has no numbered actions (its moves are action structs only)"
    return why


@functools.cache
def _catalog() -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """(servable games, (name, why not) for the others), loading each with defaults once."""
    games: list[str] = []
    others: list[tuple[str, str]] = []
    for name, game_type in sorted(_types().items()):
        why = why_unsupported(game_type)
        if why is None:
            try:
                why = _why_not_loaded(pyspiel.load_game(name))
            except (pyspiel.SpielError, LookupError) as exc:  # nfg_game: map::at
                why = f"it does not load with its default parameters ({exc})"
        if why is None:
            games.append(name)
        else:
            others.append((name, why))
    return tuple(games), tuple(others)


def list_games() -> list[str]:
    """Games served as they are (sequential or simultaneous-move, loading with their
    default parameters)."""
    return list(_catalog()[0])


def unsupported_games() -> dict[str, str]:
    """The other registered games, each with why it is not served as it is."""
    return dict(_catalog()[1])


def _kind(default: Any) -> str:
    if isinstance(default, bool):
        return "a boolean (true/false)"
    if isinstance(default, int):
        return "an integer"
    if isinstance(default, float):
        return "a number"
    if isinstance(default, dict):
        return "a game string such as tic_tac_toe() or go(board_size=9)"
    return "a string"


def _coerce(game: str, key: str, value: Any, default: Any) -> Any:
    """``value`` as the type of ``default`` (the game's declared default), or an error."""
    expected = _kind(default)

    def bad() -> ArgumentError:
        shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
        return ArgumentError(
            f"game parameter {key!r} of {game!r} must be {expected} (default {default!r}), "
            f"got {shown}"
        )

    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false", "1", "0"):
            return value.strip().lower() in ("true", "1")
        raise bad()
    if isinstance(default, int):
        if isinstance(value, bool):
            raise bad()
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            try:
                return int(value.strip())
            except ValueError:
                raise bad() from None
        raise bad()
    if isinstance(default, float):
        if isinstance(value, bool):
            raise bad()
        if isinstance(value, (int, float)):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value.strip())
            except ValueError:
                raise bad() from None
        raise bad()
    if isinstance(default, dict):  # a nested game (misere, turn_based_simultaneous_game...)
        if isinstance(value, dict):
            return value
        if isinstance(value, str) and value.strip():
            text = value.strip()
            try:
                return dict(pyspiel.game_parameters_from_string(text))
            except pyspiel.SpielError as exc:
                raise ArgumentError(f"game parameter {key!r} of {game!r}: {exc}") from None
        raise bad()
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return str(value)
    raise bad()


def coerce_params(game: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` checked against ``game``'s declared parameters and given their types.

    Raises:
        ArgumentError: an unknown game (with "did you mean"), an unknown parameter
            (with "did you mean" and the list), or a value of the wrong type.
    """
    types = _types()
    if game not in types:
        raise ArgumentError(
            f"unknown OpenSpiel game {game!r}.{did_you_mean(game, types)} "
            f"Games: {', '.join(list_games())}. `openenv-mcp describe openspiel` describes them."
        )
    spec = dict(types[game].parameter_specification)
    result: dict[str, Any] = {}
    for key, value in params.items():
        if key not in spec:
            known = ", ".join(f"{k}={v!r}" for k, v in sorted(spec.items())) or "none"
            raise ArgumentError(
                f"unknown game parameter {key!r} for {game!r}.{did_you_mean(key, spec)} "
                f"Its parameters (with defaults): {known}"
            )
        result[key] = _coerce(game, key, value, spec[key])
    return result


def load(game: str, params: Mapping[str, Any]) -> Any:
    """``pyspiel.load_game`` with validated parameters; ``game`` may also be a game string
    (``go(board_size=9)``), whose parameters ``params`` then extends.

    Raises:
        ArgumentError: an unknown game or parameter, a value of the wrong type, or
            OpenSpiel's own refusal (a board too large...), or a game that cannot be
            served (mean field, sampled chance), saying why.
    """
    name, given = game.strip(), dict(params)
    if "(" in name:
        try:
            parsed = dict(pyspiel.game_parameters_from_string(name))
        except pyspiel.SpielError as exc:
            raise ArgumentError(f"cannot read the game string {game!r}: {exc}") from None
        name = str(parsed.pop("name", ""))
        given = {**parsed, **given}
    typed = coerce_params(name, given)
    try:
        loaded = pyspiel.load_game(name, typed)
        loaded.new_initial_state()  # some games check their parameters only here
    except (pyspiel.SpielError, LookupError) as exc:  # nfg_game without a file: map::at
        shown = ", ".join(f"{k}={v!r}" for k, v in typed.items()) or "defaults"
        raise ArgumentError(f"OpenSpiel refused game {name!r} ({shown}): {exc}") from None
    why = _why_not_loaded(loaded)
    if why is not None:
        raise ArgumentError(f"game {name!r} cannot be served: {why}")
    return loaded


#: What a model needs to know of the best-known games, beyond what OpenSpiel reports.
RULES: dict[str, str] = {
    "tic_tac_toe": (
        "Two players take turns marking empty cells of a 3x3 grid: player 0 is x, player 1 "
        "is o. Three of your marks in a row, column or diagonal win; a full grid without a "
        "line is a draw. Action 3*row+col marks cell (row, col), rows and columns counted "
        "from 0 at the top left; names read x(row,col) or o(row,col). Final reward: +1 win, "
        "-1 loss, 0 draw."
    ),
    "connect_four": (
        "Two players drop discs into a grid of 6 rows and 7 columns: player 0 is x, player "
        "1 is o. Action c (0-6, named x0..x6 or o0..o6) drops a disc into column c, counted "
        "from the left, where it falls to the lowest empty cell; a full column is not legal. "
        "Four of your discs in a line (across, down or diagonal) win; a full grid is a draw. "
        "Final reward: +1 win, -1 loss, 0 draw."
    ),
    "kuhn_poker": (
        "Kuhn poker: a deck of three cards (0 = Jack, 1 = Queen, 2 = King). Each player "
        "antes 1 chip and is dealt one private card. Player 0 acts first. Actions: Pass "
        "(0: check, or fold when facing a bet) and Bet (1: bet 1 chip, or call a bet). If "
        "both pass, or a bet is called, the higher card wins the pot; a player who folds to "
        "a bet loses their ante. The reward is your net chips: from -2 to +2. Your view "
        "reads your card, then the actions so far (p = pass, b = bet): '1pb' is a Queen, "
        "after a pass and a bet."
    ),
    "leduc_poker": (
        "Leduc poker: a deck of six cards (two suits of Jack, Queen, King). Each player "
        "antes 1 chip and is dealt one private card. Two betting rounds: bets are 2 chips "
        "in the first and 4 in the second, with at most two raises per round; a public "
        "card is dealt between them. Actions: Fold (0), Call (1: check or call), Raise (2). "
        "At the showdown a pair with the public card wins, else the higher card; equal "
        "cards split. The reward is your net chips."
    ),
    "backgammon": (
        "Backgammon for two: player 0 is x, player 1 is o. Each turn the dice are rolled "
        "for you (chance, sampled by the environment); one action is your whole move for "
        "both dice, its name listing each checker's from/to points ('Pass' when no move "
        "is possible). Bear all fifteen checkers off first to win. Final reward: +1 win, "
        "-1 loss (win/loss scoring by default)."
    ),
    "hex": (
        "Hex: players take turns placing a stone on an empty cell of a rhombus-shaped "
        "board (11x11 unless --game-params board_size=N). Player 0 (x) wins by linking the "
        "top and bottom edges with a chain of adjacent stones, player 1 (o) the left and "
        "right edges. Cells are named column letter + row number (a1 is the top left). "
        "There are no draws. Final reward: +1 win, -1 loss."
    ),
    "go": (
        "Go: player 0 is Black (B), player 1 is White (W). Take turns placing a stone on an "
        "empty point, or passing; a group with no empty neighbouring point is captured. "
        "The game ends after two passes in a row and is scored by area (stones plus "
        "surrounded points), White getting komi (7.5 by default). Actions are named like "
        "'B d4' (column letter, I skipped; row number from the bottom) or 'B PASS'. Use a "
        "small board: --game-params board_size=9. Final reward: +1 win, -1 loss."
    ),
    "2048": (
        "2048, for one player: slide all tiles of a 4x4 grid Up (0), Right (1), Down (2) or "
        "Left (3); two equal tiles that meet merge into one of their sum, and after each "
        "move a new tile (2 or 4) appears on a random empty cell (chance, sampled by the "
        "environment). A move that changes nothing is not legal. The reward of a move is "
        "the sum of the tiles it merged. The game ends when no move is possible or a tile "
        "reaches max_tile (2048 by default)."
    ),
    "breakthrough": (
        "Breakthrough on an 8x8 board: player 0 is Black (b, starting at the top), player 1 "
        "White (w). Pieces move one square straight or diagonally forward, capture "
        "diagonally forward only. Reach the opponent's home row, or capture all their "
        "pieces, to win. Actions are named from-square to-square (a7a6)."
    ),
    "othello": (
        "Othello: player 0 is Black (x), player 1 White (o). Place a disc so that it "
        "brackets a line of the opponent's discs, which then flip to your colour; pass "
        "only when no such move exists. The player with more discs when neither can move "
        "wins."
    ),
    "chess": (
        "Chess: player 0 is Black, player 1 White (White, player 1, moves first). Actions are "
        "moves in standard algebraic notation (e4, Nf3, O-O). Checkmate wins; stalemate and "
        "the draw rules draw."
    ),
    "liars_dice": (
        "Liar's dice: each player rolls dice that only they see (one die each by default). "
        "Players take turns either raising the bid, named 'N-F' (at least N dice among all "
        "players show face F), or calling 'Liar' on the last bid; the dice are then shown, "
        "and the caller loses if the bid holds, the bidder if it does not."
    ),
    "nim": (
        "Nim: piles of objects (1, 3, 5 and 7 by default); players take turns removing one "
        "or more objects from a single pile (actions named 'pile:P, take:N;'). By default "
        "the game is misere: whoever takes the last object loses."
    ),
}

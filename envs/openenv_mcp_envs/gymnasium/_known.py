"""What Gymnasium's documentation says about its own environments.

Gymnasium's spaces carry no names: ``Discrete(2)`` is all Blackjack says about
its actions. The names, meanings and readable observations below come from each
environment's documented "Action Space" and "Observation Space" sections. They
are keyed by the environment's class (``module.Class``), so every registered
variant (``FrozenLake8x8-v1``, ``CartPole-v0``) and every ``kwargs`` setting
shares them; any other environment falls back to ``ACTION_0..`` and a generic
text (``env.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

__all__ = ["KNOWN", "BoundsOptions", "Known", "PendulumOptions", "known_for"]

Describe = Callable[[Any, Any], str]
"""``describe(observation, unwrapped_env) -> text``."""


@dataclass(frozen=True)
class Known:
    """Documented facts about one Gymnasium environment class.

    Attributes:
        actions: ``(NAME, meaning)`` per ``Discrete`` action, in index order.
        describe: the observation as a sentence a model can read.
        options: a pydantic model of the options its ``reset`` reads (the served env's
            ``Options``), or ``None``.
        observation: what the observation's parts are, in words.
    """

    actions: tuple[tuple[str, str], ...] = ()
    describe: Describe | None = None
    options: type[BaseModel] | None = None
    observation: str = ""


def _f(x: Any, digits: int = 3) -> str:
    return f"{float(x):.{digits}f}"


def _blackjack(obs: Any, env: Any) -> str:
    player, dealer, ace = (int(v) for v in obs)
    shown = "an ace" if dealer == 1 else str(dealer)
    return f"player sum {player}, dealer shows {shown}, usable ace: {'yes' if ace else 'no'}"


def _cartpole(obs: Any, env: Any) -> str:
    x, v, theta, omega = (float(o) for o in obs)
    return (
        f"cart position {_f(x)}, cart velocity {_f(v)}, pole angle {_f(theta)} rad "
        f"({math.degrees(theta):.1f} degrees, 0 is upright), pole angular velocity {_f(omega)}"
    )


def _mountain_car(obs: Any, env: Any) -> str:
    position, velocity = (float(o) for o in obs)
    goal = getattr(env, "goal_position", 0.5)
    return f"car position {_f(position)} (goal at {goal:g}), velocity {_f(velocity, 4)}"


def _acrobot(obs: Any, env: Any) -> str:
    c1, s1, c2, s2, w1, w2 = (float(o) for o in obs)
    t1, t2 = math.atan2(s1, c1), math.atan2(s2, c2)
    height = -c1 - math.cos(t1 + t2)
    return (
        f"link 1 angle {_f(t1)} rad, link 2 angle {_f(t2)} rad relative to link 1, "
        f"angular velocities {_f(w1)} and {_f(w2)}; tip height {_f(height)} (goal: above 1.0)"
    )


def _pendulum(obs: Any, env: Any) -> str:
    cos, sin, omega = (float(o) for o in obs)
    return (
        f"pendulum angle {_f(math.atan2(sin, cos))} rad (0 is upright), "
        f"angular velocity {_f(omega)}"
    )


def _grid_position(state: int, ncol: int) -> tuple[int, int]:
    row, col = divmod(int(state), ncol)
    return row, col


def _frozen_lake(obs: Any, env: Any) -> str:
    desc = np.asarray(env.desc).astype(str)
    nrow, ncol = desc.shape
    row, col = _grid_position(obs, ncol)
    grid = ["".join(r) for r in desc.tolist()]
    grid[row] = grid[row][:col] + "@" + grid[row][col + 1 :]
    tile = {"S": "the start", "F": "frozen ice", "H": "a hole", "G": "the goal"}[desc[row, col]]
    return (
        f"at row {row}, col {col} of the {nrow}x{ncol} lake, on {tile}; "
        f"map (S start, F frozen, H hole, G goal, @ you): {'/'.join(grid)}"
    )


def _cliff_walking(obs: Any, env: Any) -> str:
    nrow, ncol = getattr(env, "shape", (4, 12))
    row, col = _grid_position(obs, ncol)
    return (
        f"at row {row}, col {col} of the {nrow}x{ncol} grid; start row {nrow - 1} col 0, "
        f"goal row {nrow - 1} col {ncol - 1}; the cliff is row {nrow - 1}, cols 1-{ncol - 2}"
    )


_TAXI_STOPS = "RGYB"


def _taxi(obs: Any, env: Any) -> str:
    taxi_row, taxi_col, passenger, destination = env.decode(int(obs))
    locs = getattr(env, "locs", [(0, 0), (0, 4), (4, 0), (4, 3)])

    def stop(index: int) -> str:
        row, col = locs[index]
        return f"{_TAXI_STOPS[index]} (row {row}, col {col})"

    where = "in the taxi" if passenger == len(locs) else f"waiting at {stop(passenger)}"
    return (
        f"taxi at row {taxi_row}, col {taxi_col}; passenger {where}; "
        f"destination {stop(destination)}"
    )


#: The default of an option that has none of its type: never passed to reset, which
#: takes only the options the caller set.
_UNSET: Any = None


class BoundsOptions(BaseModel):
    """The options of classic_control's ``reset``: bounds of the random initial state."""

    model_config = ConfigDict(extra="forbid", strict=True)

    # Typed float with no default value: an option left out is not passed to reset.
    low: float = Field(_UNSET, description="Lower bound of the random initial state.")
    high: float = Field(_UNSET, description="Upper bound of the random initial state.")


class PendulumOptions(BaseModel):
    """The options of Pendulum's ``reset``: bounds of the random initial angle and speed."""

    model_config = ConfigDict(extra="forbid", strict=True)

    x_init: float = Field(_UNSET, description="Bound of the random initial angle.")
    y_init: float = Field(_UNSET, description="Bound of the random initial angular velocity.")


_MOVES4 = {
    "LEFT": "move left",
    "DOWN": "move down",
    "RIGHT": "move right",
    "UP": "move up",
}

KNOWN: dict[str, Known] = {
    "gymnasium.envs.toy_text.blackjack.BlackjackEnv": Known(
        actions=(
            ("STICK", "stop taking cards; the dealer then plays out their hand"),
            ("HIT", "take another card"),
        ),
        describe=_blackjack,
        observation="(player's sum 4-31, dealer's showing card 1-10 with 1 = ace, usable ace 0/1)",
    ),
    "gymnasium.envs.toy_text.frozen_lake.FrozenLakeEnv": Known(
        actions=tuple((n, _MOVES4[n]) for n in ("LEFT", "DOWN", "RIGHT", "UP")),
        describe=_frozen_lake,
        observation="the agent's cell, row * ncol + col",
    ),
    "gymnasium.envs.toy_text.cliffwalking.CliffWalkingEnv": Known(
        actions=tuple((n, _MOVES4[n]) for n in ("UP", "RIGHT", "DOWN", "LEFT")),
        describe=_cliff_walking,
        observation="the agent's cell, row * 12 + col",
    ),
    "gymnasium.envs.toy_text.taxi.TaxiEnv": Known(
        actions=(
            ("SOUTH", "move south (down)"),
            ("NORTH", "move north (up)"),
            ("EAST", "move east (right)"),
            ("WEST", "move west (left)"),
            ("PICKUP", "pick up the passenger"),
            ("DROPOFF", "drop off the passenger"),
        ),
        describe=_taxi,
        observation="((taxi_row * 5 + taxi_col) * 5 + passenger_location) * 4 + destination",
    ),
    "gymnasium.envs.classic_control.cartpole.CartPoleEnv": Known(
        actions=(("LEFT", "push the cart to the left"), ("RIGHT", "push the cart to the right")),
        describe=_cartpole,
        options=BoundsOptions,
        observation="[cart position, cart velocity, pole angle (rad), pole angular velocity]",
    ),
    "gymnasium.envs.classic_control.mountain_car.MountainCarEnv": Known(
        actions=(
            ("LEFT", "accelerate to the left"),
            ("NOOP", "don't accelerate"),
            ("RIGHT", "accelerate to the right"),
        ),
        describe=_mountain_car,
        options=BoundsOptions,
        observation="[car position, car velocity]",
    ),
    "gymnasium.envs.classic_control.continuous_mountain_car.Continuous_MountainCarEnv": Known(
        describe=_mountain_car,
        options=BoundsOptions,
        observation="[car position, car velocity]",
    ),
    "gymnasium.envs.classic_control.acrobot.AcrobotEnv": Known(
        actions=(
            ("NEGATIVE_TORQUE", "apply -1 torque to the joint between the links"),
            ("NO_TORQUE", "apply no torque"),
            ("POSITIVE_TORQUE", "apply +1 torque to the joint between the links"),
        ),
        describe=_acrobot,
        options=BoundsOptions,
        observation="[cos theta1, sin theta1, cos theta2, sin theta2, "
        "angular velocity 1, angular velocity 2]",
    ),
    "gymnasium.envs.classic_control.pendulum.PendulumEnv": Known(
        describe=_pendulum,
        options=PendulumOptions,
        observation="[cos angle, sin angle, angular velocity]",
    ),
    "gymnasium.envs.box2d.lunar_lander.LunarLander": Known(
        actions=(
            ("NOOP", "do nothing"),
            ("FIRE_LEFT", "fire the left orientation engine"),
            ("FIRE_MAIN", "fire the main engine"),
            ("FIRE_RIGHT", "fire the right orientation engine"),
        ),
    ),
    "gymnasium.envs.box2d.car_racing.CarRacing": Known(
        actions=(
            ("NOOP", "do nothing"),
            ("LEFT", "steer left"),
            ("RIGHT", "steer right"),
            ("GAS", "accelerate"),
            ("BRAKE", "brake"),
        ),
    ),
}


def known_for(env: Any) -> Known:
    """The documented facts for an (unwrapped) environment, or an empty :class:`Known`."""
    cls = type(env)
    return KNOWN.get(f"{cls.__module__}.{cls.__qualname__}", Known())

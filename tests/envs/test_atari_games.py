"""The game knowledge a model is given (``openenv_mcp_envs.atari._games``) is true of the emulator.

Every game it describes exists, its actions are exactly the game's legal set, its lives
are the emulator's, and every claim about what an action does is checked by a recipe in
``atari_checks.py``: repeat the action from a fixed state and watch a RAM byte or the
player's sprite move the way the text says (Pong: RIGHT moves the paddle up).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from openenv_mcp.narration import narration_of
from openenv_mcp_envs.atari import AtariConfig, AtariEmulator, AtariEnv, list_games
from openenv_mcp_envs.atari._games import GAMES
from tests.envs.atari_checks import CHECKS

FRAMESKIP = 4


def emulator(game: str) -> AtariEmulator:
    """Sticky actions off, one frame a step (so a check can add single frames), all 18
    actions by ALE name, RAM as the observation."""
    config = AtariConfig(
        game=game,
        obs_type="ram",
        frameskip=1,
        repeat_action_probability=0.0,
        full_action_space=True,
    )
    emu = AtariEmulator(config)
    emu.reset(seed=0)
    return emu


def play(emu: AtariEmulator, name: str, steps: int) -> None:
    index = next(i for i, a in enumerate(emu.actions) if a.name == name)
    for _ in range(steps * FRAMESKIP):
        emu.step(index)


def measure(emu: AtariEmulator, check: dict[str, Any]) -> float | None:
    if check["ram"] is not None:
        return int(emu.observation()[check["ram"]])
    spec = check["frame"]
    extra = spec.get("extra_frames", 0)
    saved = emu.clone_state() if extra else None
    if extra:
        play_frames(emu, extra)
    screen = emu.screen_rgb()
    if saved is not None:
        emu.restore_state(saved)
    (r0, r1), (c0, c1) = spec["rows"], spec["cols"]
    mask = (screen[r0:r1, c0:c1] == np.array(spec["color"], dtype=screen.dtype)).all(axis=2)
    if "min_col_count" in spec:
        mask &= (mask.sum(axis=0) >= spec["min_col_count"])[None, :]
    ys, xs = np.nonzero(mask)
    if not len(ys):
        return None
    ys, xs = ys + r0, xs + c0
    stats = {
        "mean_x": float(xs.mean()),
        "mean_y": float(ys.mean()),
        "max_x": int(xs.max()),
        "min_x": int(xs.min()),
        "max_y": int(ys.max()),
        "min_y": int(ys.min()),
    }
    return stats[spec["stat"]]


def play_frames(emu: AtariEmulator, frames: int) -> None:
    index = next(i for i, a in enumerate(emu.actions) if a.name == "NOOP")
    for _ in range(frames):
        emu.step(index)


_EMULATORS: dict[str, AtariEmulator] = {}


def outcomes(game: str, check: dict[str, Any]) -> tuple[Any, Any, Any]:
    """The value after ``setup``, after the action, and after NOOP instead (from the same
    state: a snapshot restores the emulator, RNG included, exactly)."""
    emu = _EMULATORS.get(game)
    if emu is None:
        emu = _EMULATORS[game] = emulator(game)
    emu.reset(seed=0)
    for name, steps in check["setup"]:
        play(emu, name, steps)
    start = emu.clone_state()
    before = measure(emu, check)
    play(emu, check["action"], check["steps"])
    after = measure(emu, check)
    emu.restore_state(start)
    play(emu, "NOOP", check["steps"])
    return before, after, measure(emu, check)


@pytest.mark.parametrize("game", sorted(GAMES))
def test_each_described_game_is_the_emulators(game: str) -> None:
    assert game in list_games()
    env = AtariEnv(AtariConfig(game=game))
    try:
        info = GAMES[game]
        assert list(info.actions) == [a.name for a in env.emu.actions]
        env.reset(seed=0)
        assert env.emu.lives == (info.lives or 0)
        # The model is told this game's meanings, not the controller's.
        assert env.action_set is not None
        assert [a.meaning for a in env.action_set] == list(info.actions.values())
        rules = narration_of(env).instructions()
        assert info.summary in rules and info.start in rules
    finally:
        env.close()


@pytest.mark.parametrize("game", sorted(GAMES))
def test_every_action_claim_has_a_check(game: str) -> None:
    """An action with a claimed effect is checked (NOOP needs none)."""
    checked = {c["action"] for c in CHECKS[game]}
    unchecked = [a for a in GAMES[game].actions if a != "NOOP" and a not in checked]
    assert not unchecked, f"{game}: no check for {unchecked}"


CASES = [
    pytest.param(game, check, id=f"{game}-{i}-{check['action']}-{check['expect']}")
    for game, checks in CHECKS.items()
    for i, check in enumerate(checks)
]


@pytest.mark.integration
@pytest.mark.parametrize(("game", "check"), CASES)
def test_what_an_action_does_is_what_the_emulator_does(game: str, check: dict[str, Any]) -> None:
    before, after, noop = outcomes(game, check)
    assert None not in (before, after, noop), (before, after, noop)
    vs_noop = check["action"] != "NOOP"
    what = f"{check['meaning']}: before {before}, after {after}, with NOOP {noop}"
    if check["expect"] == "increase":
        assert after > before and (not vs_noop or after > noop), what
    elif check["expect"] == "decrease":
        assert after < before and (not vs_noop or after < noop), what
    else:
        assert after == before == noop, what

"""A typed, framework-independent wrapper around :class:`ale_py.ALEInterface`.

This module reproduces the semantics of Gymnasium's ``ALE/<Game>-v5``
environments (``ale_py/env.py``, Machado et al. 2018) on top of the raw
emulator, without depending on Gymnasium or on any openenv-mcp code:

* sticky actions are ALE's own (``repeat_action_probability``, drawn once per
  emulated frame from ALE's RNG), and seeding derives ALE's ``random_seed``
  exactly as ``AtariEnv.seed_game`` does, so ``reset(seed=s)`` followed by the
  same actions gives the same frames and rewards as
  ``gymnasium.make("ALE/<Game>-v5").reset(seed=s)``, in any process;
* frame skipping repeats the action ``frameskip`` times through
  ``ALEInterface.act`` and sums the rewards, exactly like ``AtariEnv.step``;
* :attr:`AtariEmulator.np_random` is seeded as ``AtariEnv.np_random`` is (the other
  word ``seed_game`` draws), so wrappers drawing no-op starts from it draw the same;
* snapshots (:meth:`AtariEmulator.clone_state`) carry the full emulator state
  including the RNG, plus the bits ALE keeps outside ``ALEState`` (see
  :meth:`AtariEmulator.restore_state`), so restored emulators replay exactly.

Importing ``ale_py`` still imports Gymnasium as a side effect when it is
installed (``ale_py/__init__.py`` registers its environments); nothing here
uses it.
"""

from __future__ import annotations

import difflib
import math
import operator
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Literal, NamedTuple, TypeAlias

import numpy as np
import numpy.typing as npt
from ale_py import Action, ALEInterface, ALEState, LoggerMode, roms
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "V5_MAX_NUM_FRAMES_PER_EPISODE",
    "AtariAction",
    "AtariConfig",
    "AtariEmulator",
    "AtariSnapshot",
    "ObsType",
    "list_games",
    "normalise_game",
]

ObsType: TypeAlias = Literal["rgb", "grayscale", "ram"]
UInt8Array: TypeAlias = npt.NDArray[np.uint8]

#: The episode cap of every ``ALE/<Game>-v5`` registration: 108,000 emulator
#: frames, i.e. 30 minutes of play at 60 Hz (27,000 agent steps at frameskip 4).
V5_MAX_NUM_FRAMES_PER_EPISODE: Final = 108_000

# What each of the 18 actions is on the controller. What it does depends on the game
# (in Pong RIGHT moves the paddle up): openenv_mcp_envs/atari/_games.py says so, per game,
# where known.
_ACTION_MEANINGS: Final[dict[str, str]] = {
    "NOOP": "do nothing",
    "FIRE": "press the fire button",
    "UP": "push the joystick up",
    "RIGHT": "push the joystick right",
    "LEFT": "push the joystick left",
    "DOWN": "push the joystick down",
    "UPRIGHT": "push the joystick up and right",
    "UPLEFT": "push the joystick up and left",
    "DOWNRIGHT": "push the joystick down and right",
    "DOWNLEFT": "push the joystick down and left",
    "UPFIRE": "push the joystick up and press fire",
    "RIGHTFIRE": "push the joystick right and press fire",
    "LEFTFIRE": "push the joystick left and press fire",
    "DOWNFIRE": "push the joystick down and press fire",
    "UPRIGHTFIRE": "push the joystick up and right and press fire",
    "UPLEFTFIRE": "push the joystick up and left and press fire",
    "DOWNRIGHTFIRE": "push the joystick down and right and press fire",
    "DOWNLEFTFIRE": "push the joystick down and left and press fire",
}

# After a restore, ALE's sticky-action memory is forced by acting this many
# times (see AtariEmulator._prime_sticky_memory); the chance that every one of
# those frames repeats the old action instead is at most this.
_STICKY_PRIME_FAILURE: Final = 1e-12
# Above this many priming frames (p > ~0.99) a restore would get slow; cap it.
_MAX_STICKY_PRIME_FRAMES: Final = 4096


# --------------------------------------------------------------------------- games


@cache
def _supported_rom_paths() -> dict[str, Path]:
    """Rom id -> path for every bundled ROM a single-agent ALEInterface can load."""
    paths: dict[str, Path] = {}
    for rom_id in sorted(roms.get_all_rom_ids()):
        path = roms.get_rom_path(rom_id)
        # combat, joust, maze_craze and warlords are bundled but multiplayer-only:
        # isSupportedROM() says None for them, and loadROM() on one of them calls
        # exit(1), killing the whole process. (ALE/<Game>-v5 skips them too.)
        if path is not None and ALEInterface.isSupportedROM(str(path)) is not None:
            paths[rom_id] = path
    return paths


def list_games() -> list[str]:
    """Every playable bundled ROM id, sorted (``["adventure", "air_raid", ...]``).

    These are ALE's snake_case rom ids (``ale_py.roms``), minus the four
    multiplayer-only ROMs that the single-agent interface cannot load. No ROM is
    ever downloaded: they ship inside ale-py.
    """
    return list(_supported_rom_paths())


def _compact(name: str) -> str:
    """Lower-case with every non-alphanumeric character dropped."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


def normalise_game(name: str) -> str:
    """Map a game name in any common spelling to its ALE rom id.

    Accepts the rom id itself (``"space_invaders"``), Gymnasium's PascalCase
    (``"SpaceInvaders"``), kebab or spaced forms (``"space-invaders"``) and full
    Gymnasium ids (``"ALE/SpaceInvaders-v5"``).

    Raises:
        ValueError: the name matches no playable ROM; the message suggests the
            closest ids and says how to list them all.
    """
    stripped = re.sub(r"-v\d+$", "", re.sub(r"^ALE/", "", name.strip(), flags=re.IGNORECASE))
    # Rom ids stay unique with underscores removed, so the compact form is a key.
    by_compact = {_compact(rom_id): rom_id for rom_id in _supported_rom_paths()}
    key = _compact(stripped)
    if key in by_compact:
        return by_compact[key]
    if key in {"combat", "joust", "mazecraze", "warlords"}:
        raise ValueError(
            f"Atari game {name!r} is a multiplayer-only ROM, which ALE's single-agent "
            "interface cannot load; see list_games() for the playable games."
        )
    close = difflib.get_close_matches(key, list(by_compact), n=3, cutoff=0.6)
    hint = f" Did you mean {' or '.join(repr(by_compact[c]) for c in close)}?" if close else ""
    raise ValueError(
        f"Unknown Atari game {name!r}.{hint} "
        f"There are {len(by_compact)} games; `openenv-mcp describe atari` (or "
        "list_games()) names them all."
    )


# -------------------------------------------------------------------------- config


class AtariConfig(BaseModel):
    """Construction options for :class:`AtariEmulator`.

    The defaults are those of Gymnasium's ``ALE/<Game>-v5`` (Machado et al.,
    2018): frameskip 4, sticky actions with probability 0.25, the minimal action
    set and a 108,000-frame episode cap.
    """

    model_config = ConfigDict(extra="forbid")

    game: str = Field(
        default="pong",
        description=(
            "Atari game as an ALE rom id such as 'pong' or 'space_invaders' "
            "('SpaceInvaders', 'space-invaders' and 'ALE/SpaceInvaders-v5' also work)."
        ),
    )
    obs_type: ObsType = Field(
        default="rgb",
        description=(
            "Observation: 'rgb' (HxWx3 uint8 screen), 'grayscale' (HxW uint8 screen) "
            "or 'ram' (the console's 128 bytes of RAM)."
        ),
    )
    frameskip: int = Field(
        default=4,
        ge=1,
        description="Emulator frames per agent step; the action repeats and rewards are summed.",
    )
    repeat_action_probability: float = Field(
        default=0.25,
        ge=0.0,
        le=1.0,
        description=(
            "Sticky actions: chance that each emulated frame repeats the previous action "
            "instead of the chosen one (0 makes the emulator deterministic)."
        ),
    )
    full_action_space: bool = Field(
        default=False,
        description="Offer all 18 joystick actions instead of the game's minimal set.",
    )
    mode: int | None = Field(
        default=None,
        ge=0,
        description="Game mode (a game variant); default is the ROM's default mode.",
    )
    difficulty: int | None = Field(
        default=None,
        ge=0,
        description="Game difficulty switch setting; default is the ROM's default (0).",
    )
    max_episode_steps: int | None = Field(
        default=None,
        ge=1,
        description=(
            "Truncate episodes after this many agent steps. Default: the ALE v5 cap of "
            "108000 emulator frames (30 minutes; 27000 steps at frameskip 4)."
        ),
    )

    preprocess: bool = Field(
        default=False,
        description=(
            "Preprocess on the server, as Gymnasium's AtariPreprocessing does over an "
            "emulator stepping one frame at a time: no-op starts, frameskip frames per step "
            "with the max of the last two, grayscale (unless obs_type is given as rgb), "
            "resized to screen_size (OpenCV's INTER_AREA): small observations for trainers."
        ),
    )
    screen_size: int = Field(
        default=84, ge=1, description="With preprocess: the square observation's side."
    )
    noop_max: int = Field(
        default=30,
        ge=0,
        description="With preprocess: each reset plays 1..noop_max NOOPs (drawn from the "
        "seeded np_random); 0 plays none.",
    )
    terminal_on_life_loss: bool = Field(
        default=False, description="With preprocess: a lost life ends the episode (terminated)."
    )
    frame_stack: int = Field(
        default=1,
        ge=1,
        description="With preprocess: stack the last N observations (Gymnasium's "
        "FrameStackObservation, padded with the reset's): shape (N, size, size).",
    )

    @field_validator("game")
    @classmethod
    def _known_game(cls, value: str) -> str:
        return normalise_game(value)

    @model_validator(mode="after")
    def _preprocessing(self) -> AtariConfig:
        given = self.model_fields_set
        if not self.preprocess:
            # Set to other than their defaults: a config dumped whole (a recording's, a
            # dataset's) names every field and still means no preprocessing.
            fields = type(self).model_fields
            alone = [f for f in _PREPROCESS_ONLY if getattr(self, f) != fields[f].default]
            if alone:
                raise ValueError(f"{', '.join(alone)} only apply with preprocess=True")
            return self
        if self.obs_type == "ram":
            raise ValueError("preprocess makes observations of the screen: obs_type 'ram' cannot")
        if "obs_type" not in given:
            # AtariPreprocessing's default is grayscale (grayscale_obs=True).
            self.obs_type = "grayscale"
        return self


#: Options that mean something only with ``preprocess``.
_PREPROCESS_ONLY: Final = ("screen_size", "noop_max", "terminal_on_life_loss", "frame_stack")


# ------------------------------------------------------------------ value types


class AtariAction(NamedTuple):
    """One legal action: its ALE action id, ALE name and a short meaning."""

    id: int
    """ALE action id (``ale_py.Action`` value, 0-17)."""
    name: str
    """ALE name, e.g. ``"UPFIRE"``."""
    meaning: str
    """What it does, e.g. ``"move up and fire"``."""


@dataclass(frozen=True, slots=True, eq=False)
class AtariSnapshot:
    """Everything needed to put an :class:`AtariEmulator` back where it was.

    Made by :meth:`AtariEmulator.clone_state`; pass it to
    :meth:`AtariEmulator.restore_state` of the same or another emulator of the
    same game. Immutable and picklable (``ALEState`` pickles), so it can be
    restored any number of times, or in another process.
    """

    game: str
    ale_state: ALEState
    """ALE's state, cloned with ``include_rng=True``."""
    last_action: int
    """ALE id of the action last sent to ``act``: the sticky-action memory."""
    screen_rgb: UInt8Array
    """The screen at snapshot time (read-only); ALE does not redraw on restore."""
    screen_grayscale: UInt8Array
    """The same screen in ALE's grayscale (read-only)."""
    mode: int | None
    difficulty: int | None
    episode_step: int
    episode_return: float
    terminated: bool
    truncated: bool
    np_random_state: dict[str, Any] | None = None
    """The state of :attr:`AtariEmulator.np_random` (``bit_generator.state``)."""

    @property
    def ale_state_bytes(self) -> int:
        """Size of the serialised ALE state (the frames are extra)."""
        return len(self.ale_state.serialize())


# ------------------------------------------------------------------- emulator


def _derive_seeds(seed: int | None) -> tuple[np.random.Generator, int]:
    """The NumPy generator and ALE's ``random_seed`` for a user seed, exactly as
    ``AtariEnv.seed_game`` makes them.

    ``seed_game`` draws two words from ``SeedSequence(seed)``: the first seeds
    ``np_random`` (through ``gymnasium.utils.seeding.np_random``, which is
    ``Generator(PCG64(SeedSequence(word)))``), the second goes to ``setInt`` as an
    int32. Any non-negative integer works, however large; ``None`` draws fresh OS entropy.
    """
    np_word, ale_word = np.random.SeedSequence(seed).generate_state(n_words=2)
    generator = np.random.Generator(np.random.PCG64(np.random.SeedSequence(int(np_word))))
    ale_seed = int(np.int32(ale_word))  # wraps like the reference: ALE reads it as uint32
    # -1 would make ALE seed itself from time(NULL) (whole seconds), silently
    # breaking reproducibility; -2 wraps to a different, fixed uint32 seed. This
    # deviates from ALE/<Game>-v5 for 1 in 2**32 seeds, where v5 is not
    # reproducible anyway.
    return generator, -2 if ale_seed == -1 else ale_seed


def _sticky_prime_frames(repeat_action_probability: float) -> int:
    """Frames of acting that make ALE's sticky memory hold the new action."""
    p = repeat_action_probability
    if p <= 0.0 or p >= 1.0:
        # p == 0: the memory is overwritten on every frame, so it never matters.
        # p == 1: it is never overwritten after reset, so it is always NOOP.
        return 0
    frames = math.ceil(math.log(_STICKY_PRIME_FAILURE) / math.log(p))
    return min(max(frames, 1), _MAX_STICKY_PRIME_FRAMES)


class AtariEmulator:
    """One Atari 2600 emulator with ``ALE/<Game>-v5`` semantics.

    After construction the ROM is loaded, seeded from fresh OS entropy and
    ready at the start of an episode; call :meth:`reset` to seed it or to start
    another episode. Not thread-safe: use one emulator per thread at a time.

    Example::

        emu = AtariEmulator(AtariConfig(game="breakout"))
        emu.reset(seed=0)
        reward, terminated, truncated = emu.step(1)  # index into emu.actions
        frame = emu.screen_rgb()
    """

    def __init__(self, config: AtariConfig | None = None) -> None:
        """Load the ROM and validate ``config.mode`` / ``config.difficulty``.

        Raises:
            ValueError: the mode or difficulty is not one the game offers; the
                message lists the ones it does.
        """
        self._config = (config or AtariConfig()).model_copy()
        cfg = self._config
        self._rom_path = str(_supported_rom_paths()[cfg.game])
        self._closed = False

        ALEInterface.setLoggerMode(LoggerMode.Error)  # process-wide; as AtariEnv does
        ale = ALEInterface()
        # These settings are read when the ROM is loaded, so they must come first.
        ale.setFloat("repeat_action_probability", float(cfg.repeat_action_probability))
        # One agent step is `frameskip` calls to act(), each one frame (ALE's
        # frame_skip stays 1), as in AtariEnv.step: same RNG draws, same rewards.
        ale.setInt("frame_skip", 1)
        # With max_episode_steps unset we use ALE's own frame cap, exactly as
        # v5 does; otherwise the wrapper counts steps and ALE has no cap.
        cap = V5_MAX_NUM_FRAMES_PER_EPISODE if cfg.max_episode_steps is None else 0
        ale.setInt("max_num_frames_per_episode", cap)
        self._ale: ALEInterface = ale

        # Episode bookkeeping; _start_episode() (re)initialises it.
        self._mode: int | None = None
        self._difficulty: int | None = None
        self._last_action: Action = Action.NOOP
        self._frame_override: tuple[UInt8Array, UInt8Array] | None = None
        self._episode_step = 0
        self._episode_return = 0.0
        self._terminated = False
        self._truncated = False
        #: NumPy's generator, as ``AtariEnv.np_random`` (seeded by :meth:`reset`); the
        #: emulator itself never draws from it, wrappers do (no-op starts).
        self.np_random: np.random.Generator = np.random.default_rng()

        self._seed_and_load(None)  # fresh entropy, like AtariEnv.__init__
        self._available_modes: tuple[int, ...] = tuple(ale.getAvailableModes())
        self._available_difficulties: tuple[int, ...] = tuple(ale.getAvailableDifficulties())
        self._check_mode(cfg.mode)
        self._check_difficulty(cfg.difficulty)
        if cfg.mode is not None or cfg.difficulty is not None:
            self._mode, self._difficulty = cfg.mode, cfg.difficulty
            self._apply_mode_and_difficulty()
            ale.reset_game()  # setMode/setDifficulty take effect at the next reset

        action_set = ale.getLegalActionSet() if cfg.full_action_space else ale.getMinimalActionSet()
        self._ale_actions: tuple[Action, ...] = tuple(action_set)
        self._actions: tuple[AtariAction, ...] = tuple(
            AtariAction(a.value, a.name, _ACTION_MEANINGS.get(a.name, a.name.lower()))
            for a in self._ale_actions
        )

        height, width = ale.getScreenDims()
        self._screen_shape: tuple[int, int, int] = (int(height), int(width), 3)
        self._observation_shape: tuple[int, ...] = {
            "rgb": self._screen_shape,
            "grayscale": self._screen_shape[:2],
            "ram": (int(ale.getRAMSize()),),
        }[cfg.obs_type]
        self._prime_frames = _sticky_prime_frames(cfg.repeat_action_probability)
        self._start_episode()

    # ---------------------------------------------------------------- properties

    @property
    def config(self) -> AtariConfig:
        """A copy of the configuration this emulator was built with."""
        return self._config.model_copy()

    @property
    def game(self) -> str:
        """ALE rom id of the loaded game."""
        return self._config.game

    @property
    def actions(self) -> list[AtariAction]:
        """Legal actions, in index order: what :meth:`step` indexes into."""
        return list(self._actions)

    @property
    def observation_shape(self) -> tuple[int, ...]:
        """Shape of :meth:`observation`: (H, W, 3), (H, W) or (128,)."""
        return self._observation_shape

    @property
    def screen_shape(self) -> tuple[int, int, int]:
        """Shape of :meth:`screen_rgb`: (H, W, 3); H is 210 for most games."""
        return self._screen_shape

    @property
    def available_modes(self) -> tuple[int, ...]:
        """Game modes this ROM accepts (``ALEInterface.getAvailableModes``)."""
        return self._available_modes

    @property
    def available_difficulties(self) -> tuple[int, ...]:
        """Difficulties this ROM accepts (``getAvailableDifficulties``)."""
        return self._available_difficulties

    @property
    def mode(self) -> int:
        """Game mode in effect for the current episode."""
        return int(self._live.cloneState().getCurrentMode())

    @property
    def difficulty(self) -> int:
        """Difficulty in effect for the current episode."""
        return int(self._live.cloneState().getDifficulty())

    @property
    def lives(self) -> int:
        """Lives left, as the game's RAM reports them (0 for games without lives)."""
        return int(self._live.lives())

    @property
    def frame_number(self) -> int:
        """Emulator frames since the ROM was (re)loaded; seeded resets reload it."""
        return int(self._live.getFrameNumber())

    @property
    def episode_frame_number(self) -> int:
        """Emulator frames since the current episode began."""
        return int(self._live.getEpisodeFrameNumber())

    @property
    def episode_step(self) -> int:
        """Agent steps since the current episode began."""
        return self._episode_step

    @property
    def episode_return(self) -> float:
        """Sum of rewards since the current episode began."""
        return self._episode_return

    @property
    def terminated(self) -> bool:
        """Whether the current episode ended in a game over."""
        return self._terminated

    @property
    def truncated(self) -> bool:
        """Whether the current episode was cut short by the step or frame cap."""
        return self._truncated

    # ------------------------------------------------------------------- control

    def reset(
        self,
        seed: int | None = None,
        mode: int | None = None,
        difficulty: int | None = None,
    ) -> None:
        """Start a new episode.

        Seeding mirrors ``AtariEnv.reset``: with a ``seed`` ALE's ``random_seed``
        is derived from it and the ROM reloaded (ALE seeds its RNG only when a
        ROM loads), so the sticky-action stream, and hence every screen and
        reward given the same actions, is a function of the seed alone, in any
        process. Without a seed the RNG stream simply continues (it was seeded
        from fresh OS entropy at construction, or from the last seed given), so
        unseeded episodes differ from each other while a whole run stays
        reproducible from its first seed.

        Args:
            seed: non-negative integer, or None to continue the current stream.
            mode: switch to this game mode, from this episode on.
            difficulty: switch to this difficulty, from this episode on.

        Raises:
            ValueError: negative seed, or a mode/difficulty the game lacks.
        """
        ale = self._live
        if seed is not None:
            seed = operator.index(seed)
            if seed < 0:
                raise ValueError(f"seed must be a non-negative integer, got {seed}")
        self._check_mode(mode)
        self._check_difficulty(difficulty)
        if mode is not None:
            self._mode = mode
        if difficulty is not None:
            self._difficulty = difficulty

        if seed is not None:
            self._seed_and_load(seed)
        self._apply_mode_and_difficulty()
        ale.reset_game()
        self._start_episode()

    def step(self, action_index: int) -> tuple[float, bool, bool]:
        """Play one agent step: ``frameskip`` frames of ``actions[action_index]``.

        Returns:
            ``(reward, terminated, truncated)``: reward summed over the frames;
            terminated on game over; truncated when the step cap
            (``max_episode_steps``) or ALE's frame cap is reached without a
            game over. At most one of the two is True.

        Raises:
            IndexError: ``action_index`` is not in ``range(len(actions))``.
            RuntimeError: the episode is over (call :meth:`reset`), or the
                emulator is closed.
        """
        ale = self._live
        index = operator.index(action_index)
        if not 0 <= index < len(self._ale_actions):
            raise IndexError(
                f"action index {index} out of range: {self.game} has "
                f"{len(self._ale_actions)} actions (0..{len(self._ale_actions) - 1})"
            )
        if self._terminated or self._truncated:
            raise RuntimeError("the episode is over; call reset() to start a new one")

        action = self._ale_actions[index]
        reward = 0
        # Every frame is emulated even after a mid-step game over (ALE then
        # refuses to advance and returns 0): AtariEnv.step does the same, and the
        # sticky-action RNG draws must match it for seeds to reproduce v5.
        for _ in range(self._config.frameskip):
            reward += ale.act(action)
        self._last_action = action
        self._frame_override = None
        self._episode_step += 1
        self._episode_return += reward

        terminated = bool(ale.game_over(with_truncation=False))
        limit = self._config.max_episode_steps
        at_cap = bool(ale.game_truncated()) if limit is None else self._episode_step >= limit
        self._terminated = terminated
        self._truncated = at_cap and not terminated
        return float(reward), self._terminated, self._truncated

    # -------------------------------------------------------------- observations

    def observation(self) -> UInt8Array:
        """The current observation in ``obs_type``; a fresh array each call."""
        obs_type = self._config.obs_type
        if obs_type == "ram":
            return self._live.getRAM()  # restoreState refreshes RAM, unlike the screen
        if obs_type == "grayscale":
            return self.screen_grayscale()
        return self.screen_rgb()

    def screen_rgb(self, out: UInt8Array | None = None) -> UInt8Array:
        """The current screen as (H, W, 3) uint8 RGB, whatever ``obs_type`` is (into
        ``out`` where given, as ``ALEInterface.getScreenRGB`` writes)."""
        if self._frame_override is not None:
            if out is None:
                return self._frame_override[0].copy()
            np.copyto(out, self._frame_override[0])
            return out
        if out is None:
            return self._live.getScreenRGB()
        self._live.getScreenRGB(out)
        return out

    def screen_grayscale(self, out: UInt8Array | None = None) -> UInt8Array:
        """The current screen as (H, W) uint8 in ALE's grayscale, whatever ``obs_type`` is
        (into ``out`` where given)."""
        if self._frame_override is not None:
            if out is None:
                return self._frame_override[1].copy()
            np.copyto(out, self._frame_override[1])
            return out
        if out is None:
            return self._live.getScreenGrayscale()
        self._live.getScreenGrayscale(out)
        return out

    def ram(self) -> UInt8Array:
        """The console's 128 bytes of RAM."""
        return self._live.getRAM()

    # ----------------------------------------------------------------- snapshots

    def clone_state(self) -> AtariSnapshot:
        """Snapshot the emulator, RNG and episode bookkeeping.

        Cheap enough to call every step (tens of microseconds); see
        :meth:`restore_state` for what is guaranteed.
        """
        ale = self._live
        if self._frame_override is not None:
            rgb, gray = self._frame_override
        else:
            rgb, gray = ale.getScreenRGB(), ale.getScreenGrayscale()
            rgb.flags.writeable = False
            gray.flags.writeable = False
        return AtariSnapshot(
            game=self.game,
            ale_state=ale.cloneState(include_rng=True),
            last_action=self._last_action.value,
            screen_rgb=rgb,
            screen_grayscale=gray,
            mode=self._mode,
            difficulty=self._difficulty,
            episode_step=self._episode_step,
            episode_return=self._episode_return,
            terminated=self._terminated,
            truncated=self._truncated,
            np_random_state=dict(self.np_random.bit_generator.state),
        )

    def restore_state(self, snapshot: AtariSnapshot) -> None:
        """Put the emulator back to ``snapshot`` (taken from any emulator of this game).

        Afterwards the same actions give the same frames, rewards and flags on
        every emulator restored from the snapshot, sticky actions included.
        Configuration (frameskip, sticky probability, obs_type, caps) is this
        emulator's own; the snapshot supplies state, RNG and counters.

        ALE keeps two pieces of this state outside ``ALEState``, so they are
        handled here: the screen (``restoreState`` does not redraw it, so the
        snapshot's copy is served until the next step) and the sticky-action
        memory, i.e. the action a frame repeats when the sticky coin says
        "repeat" (set by priming, see :meth:`_prime_sticky_memory`).

        Raises:
            ValueError: the snapshot is of another game.
        """
        ale = self._live
        if snapshot.game != self.game:
            raise ValueError(
                f"cannot restore a {snapshot.game!r} snapshot into a {self.game!r} emulator"
            )
        last_action = Action(snapshot.last_action)
        ale.restoreState(snapshot.ale_state)
        self._prime_sticky_memory(snapshot.ale_state, last_action)
        self._last_action = last_action
        self._frame_override = (snapshot.screen_rgb, snapshot.screen_grayscale)
        self._mode, self._difficulty = snapshot.mode, snapshot.difficulty
        self._episode_step = snapshot.episode_step
        self._episode_return = snapshot.episode_return
        self._terminated, self._truncated = snapshot.terminated, snapshot.truncated
        if snapshot.np_random_state is not None:
            generator = np.random.Generator(np.random.PCG64())
            generator.bit_generator.state = snapshot.np_random_state
            self.np_random = generator

    # ------------------------------------------------------------------ lifetime

    def close(self) -> None:
        """Release the emulator; later calls other than close() raise RuntimeError."""
        if not self._closed:
            self._closed = True
            del self._ale  # the C++ ALEInterface is freed with its last reference

    def __enter__(self) -> AtariEmulator:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        cfg = self._config
        return (
            f"AtariEmulator(game={cfg.game!r}, obs_type={cfg.obs_type!r}, "
            f"frameskip={cfg.frameskip}, "
            f"repeat_action_probability={cfg.repeat_action_probability}"
            f"{', closed' if self._closed else ''})"
        )

    # ------------------------------------------------------------------ internals

    @property
    def _live(self) -> ALEInterface:
        if self._closed:
            raise RuntimeError("this AtariEmulator is closed")
        return self._ale

    def _seed_and_load(self, seed: int | None) -> None:
        """Seed ALE's RNG and NumPy's, and (re)load the ROM, as AtariEnv.seed_game + load_game."""
        ale = self._live
        self.np_random, ale_seed = _derive_seeds(seed)
        ale.setInt("random_seed", ale_seed)
        ale.loadROM(self._rom_path)  # reads random_seed; resets mode and difficulty

    def _apply_mode_and_difficulty(self) -> None:
        # Only explicit choices are applied (as AtariEnv.load_game does); ALE
        # keeps them across reset_game() but a ROM reload forgets them.
        if self._mode is not None:
            self._live.setMode(self._mode)
        if self._difficulty is not None:
            self._live.setDifficulty(self._difficulty)

    def _check_mode(self, mode: int | None) -> None:
        if mode is not None and mode not in self._available_modes:
            raise ValueError(
                f"mode {mode} is not available for {self.game!r}; "
                f"available modes: {list(self._available_modes)}"
            )

    def _check_difficulty(self, difficulty: int | None) -> None:
        if difficulty is not None and difficulty not in self._available_difficulties:
            raise ValueError(
                f"difficulty {difficulty} is not available for {self.game!r}; "
                f"available difficulties: {list(self._available_difficulties)}"
            )

    def _start_episode(self) -> None:
        # reset_game()/loadROM() clear ALE's sticky memory to NOOP (softReset).
        self._last_action = Action.NOOP
        self._frame_override = None
        self._episode_step = 0
        self._episode_return = 0.0
        self._terminated = bool(self._live.game_over(with_truncation=False))
        self._truncated = False

    def _prime_sticky_memory(self, state: ALEState, action: Action) -> None:
        """Make ALE's sticky-action memory hold ``action`` at restored ``state``.

        ``ALEState`` does not include the action a sticky frame repeats (it lives
        in ALE's StellaEnvironment and only ``act`` or a reset change it), so
        without this a restored emulator would repeat whatever *it* last
        played: two emulators restored from one snapshot diverged on about
        ``p`` of restores in testing. Acting ``action`` for k frames sets the
        memory unless all k sticky coins say "repeat" (probability p**k <=
        1e-12); restoring the state again rewinds the emulator and its RNG, so
        the coins, and the outcome, are the same for every restore.

        ``action`` is the last action the source emulator *sent*; ALE's memory
        can differ from it only if every frame of that step was sticky
        (p**frameskip, 1/256 at the defaults), so a restored emulator also
        matches the source's own continuation in all but ~p**(frameskip+1) of
        snapshots.
        """
        if self._prime_frames == 0:
            return
        ale = self._live
        for _ in range(self._prime_frames):
            ale.act(action)
        ale.restoreState(state)

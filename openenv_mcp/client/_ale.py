"""``MCPGymEnv.unwrapped.ale``: what Atari wrappers read of the emulator, over MCP.

The standard Atari pipelines read the emulator behind the env: SB3's
``EpisodicLifeEnv`` calls ``env.unwrapped.ale.lives()`` after every step, Gymnasium's
``AtariPreprocessing`` calls ``ale.getScreenGrayscale(buffer)`` (or ``getScreenRGB``)
after the last two frames of each step and ``ale.lives()``. One round trip per read
would double a step's cost, so every answer is read from what the episode's last call
brought back:

* ``lives``, the frame numbers and ``game_over`` come in every answer already (``info``,
  ``terminated``, ``truncated``);
* the RGB screen is the observation itself where the observation is the screen;
* the grayscale screen and the RAM are the server's *extras*: the first read asks for
  it (one ``state`` call), and from then on every step and reset brings it along.

The values are the emulator's, after the episode's last step, exactly as a local
``ale`` would read them there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from openenv_mcp.client._session import Episode

__all__ = ["ALEProxy"]

_READS = (
    "lives",
    "getScreenRGB",
    "getScreenGrayscale",
    "getRAM",
    "getScreenDims",
    "getFrameNumber",
    "getEpisodeFrameNumber",
    "game_over",
    "game_truncated",
)


class ALEProxy:
    """The reads of ``ale_py.ALEInterface`` that wrappers make, for an episode served over MCP.

    Args:
        episode: the episode whose emulator this stands for.
        refresh: fetches the episode's state again (a ``state`` call), with its extras.
    """

    def __init__(self, episode: Episode, refresh: Callable[[], object]) -> None:
        self._episode = episode
        self._refresh = refresh

    def _extra(self, name: str, out: np.ndarray | None) -> np.ndarray:
        episode = self._episode
        if name not in episode.wanted_extras:
            episode.wanted_extras = (*episode.wanted_extras, name)
            self._refresh()  # from now on every answer brings it along
        value = episode.extras[name]
        if out is None:
            return value.copy()
        np.copyto(out, value.reshape(out.shape))
        return out

    def lives(self) -> int:
        """Lives left, as the game's RAM reports them (0 for games without lives)."""
        return int(self._episode.info.get("lives", 0))

    def getScreenRGB(self, out: np.ndarray | None = None) -> np.ndarray:
        """The screen, ``(H, W, 3)`` uint8 (into ``out`` where given)."""
        episode = self._episode
        observation = episode._observation
        if episode.server_spec.frame_is_observation and isinstance(observation, np.ndarray):
            if out is None:
                return observation.copy()
            np.copyto(out, observation)
            return out
        return self._extra("screen_rgb", out)

    def getScreenGrayscale(self, out: np.ndarray | None = None) -> np.ndarray:
        """The screen in ALE's grayscale, ``(H, W)`` uint8 (into ``out`` where given)."""
        return self._extra("screen_grayscale", out)

    def getRAM(self, out: np.ndarray | None = None) -> np.ndarray:
        """The console's 128 bytes of RAM (into ``out`` where given)."""
        return self._extra("ram", out)

    def getScreenDims(self) -> tuple[int, int]:
        """``(height, width)`` of the screen."""
        spec = self._episode.server_spec
        shape = (
            spec.observation_space.shape
            if spec.frame_is_observation
            else self.getScreenGrayscale().shape
        )
        assert shape is not None
        return int(shape[0]), int(shape[1])

    def getFrameNumber(self) -> int:
        """Emulator frames since the ROM was (re)loaded."""
        return int(self._episode.info.get("frame_number", 0))

    def getEpisodeFrameNumber(self) -> int:
        """Emulator frames since the episode began."""
        return int(self._episode.info.get("episode_frame_number", 0))

    def game_over(self, with_truncation: bool = True) -> bool:
        """Whether the episode ended (a game over, or with ``with_truncation`` the cap)."""
        info = self._episode.info
        ended = bool(info.get("terminated", False))
        return ended or (with_truncation and bool(info.get("truncated", False)))

    def game_truncated(self) -> bool:
        """Whether the episode was cut short by the frame cap."""
        return bool(self._episode.info.get("truncated", False))

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(
            f"the ale of an environment served over MCP answers what wrappers read "
            f"({', '.join(_READS)}); {name!r} is not among them: call the server's tools "
            "(env.client.call) for anything else"
        )

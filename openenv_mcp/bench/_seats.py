"""``openenv-mcp bench ENV --seats``: a game of seats, every seat driven through
PettingZoo's AEC loop, over MCP (:class:`~openenv_mcp.client.MCPPettingZooEnv`: a
``step`` and a look per move) against the same game in this process (the env's
:class:`~openenv_mcp.seats.SeatedGame` through the same loop), in one run.

Both sides play seeded random legal moves, game after game, until ``moves`` moves; a
move's time includes reading the next seat's view (PettingZoo's ``last()``).
"""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from openenv_mcp.bench._run import BenchConfig, Progress, _environment_facts, _resolve
from openenv_mcp.bench._run import _serve_command as serve_command
from openenv_mcp.errors import ArgumentError

__all__ = ["SeatsResult", "run_seats_bench"]


@dataclass
class SeatsResult:
    """Moves per second of a game of seats in process and over MCP, and their ratio."""

    env: str
    env_args: list[str]
    transport: str
    moves: int
    repeats: int
    #: Medians over the repeats.
    in_process_moves_per_s: float
    mcp_moves_per_s: float
    #: Games finished over MCP in the timed repeats (each side plays the same games).
    games: int
    environment: dict[str, Any]

    @property
    def ratio(self) -> float:
        """MCP's moves per second as a share of the game's in this process."""
        return self.mcp_moves_per_s / self.in_process_moves_per_s

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ratio": self.ratio}

    def table(self) -> str:
        head = f"openenv-mcp bench {' '.join([self.env, *self.env_args])} --seats"
        return "\n".join(
            [
                f"{head}: {self.moves} moves x {self.repeats} repeats (medians), every seat "
                "through PettingZoo's AEC loop",
                f"  in process (its SeatedGame)  {self.in_process_moves_per_s:10.1f} moves/s",
                f"  over MCP ({self.transport}, as_pettingzoo)  "
                f"{self.mcp_moves_per_s:10.1f} moves/s",
                f"  ratio                        {self.ratio:10.3f}",
            ]
        )


def _aec_moves(env: Any, moves: int, rng: np.random.Generator, seed: int) -> int:
    """Play ``moves`` random legal moves through an AEC env, game after game; games."""
    played, games = 0, 0
    while played < moves:
        env.reset(seed=seed + games)
        for _ in env.agent_iter():
            _, _, terminated, truncated, info = env.last()
            if terminated or truncated:
                env.step(None)
                continue
            legal = np.flatnonzero(info["action_mask"])
            env.step(int(rng.choice(legal)))
            played += 1
            if played >= moves:
                break
        games += 1
    return games


def _game_moves(game: Any, moves: int, rng: np.random.Generator, seed: int) -> int:
    """The same loop on the game itself: each move reads the mover's view first (as
    ``last()`` does), then plays it."""
    played, games = 0, 0
    while played < moves:
        game.reset(seed + games)
        while not game.over and played < moves:
            movers = game.to_move()
            actions = {}
            for agent in movers:
                _, info = game.observe(agent)
                legal = np.flatnonzero(info["action_mask"])
                actions[agent] = int(rng.choice(legal))
            game.apply(actions)
            played += len(movers)
        games += 1
    return games


@contextlib.contextmanager
def _seated(config: BenchConfig) -> Iterator[Any]:
    """An AEC env over a server of ``config.env`` with every player a seat."""
    from openenv_mcp.client import MCPPettingZooEnv

    if config.transport == "stdio":
        target: Any = serve_command(config.env, "stdio", config.env_args, "--seats", "all")
        server = None
    elif config.transport == "memory":
        from openenv_mcp.server import ServerSettings, build_server

        _, _, options = _resolve(config)
        server = target = build_server(config.env, settings=ServerSettings(seats="all"), **options)
    else:
        raise ArgumentError(f"bench --seats runs over stdio or memory, not {config.transport!r}")
    env = MCPPettingZooEnv(target)
    try:
        yield env
    finally:
        env.close()
        del server


def run_seats_bench(config: BenchConfig, progress: Progress | None = None) -> SeatsResult:
    """Moves/s of ``config.env``'s game with every seat over MCP against in process."""
    say = progress or (lambda message: None)
    env_cls, env_config, _ = _resolve(config)
    prototype = env_cls(env_config)
    try:
        game = prototype.seated_game()
    finally:
        prototype.close()
    if game is None:
        raise ArgumentError(f"bench --seats: {config.env} has one player: no seats to bench")
    inside: list[float] = []
    over: list[float] = []
    games = 0
    try:
        with _seated(config) as env:
            say(f"warming up ({config.warmup} moves a side)")
            _game_moves(game, config.warmup, np.random.default_rng(config.seed), config.seed)
            _aec_moves(env, config.warmup, np.random.default_rng(config.seed), config.seed)
            for repeat in range(config.repeats):
                say(f"repeat {repeat + 1}/{config.repeats}")
                rng = np.random.default_rng(config.seed + repeat)
                start = time.perf_counter()
                _game_moves(game, config.steps, rng, config.seed)
                inside.append(config.steps / (time.perf_counter() - start))
                rng = np.random.default_rng(config.seed + repeat)
                start = time.perf_counter()
                games += _aec_moves(env, config.steps, rng, config.seed)
                over.append(config.steps / (time.perf_counter() - start))
    finally:
        game.close()
    return SeatsResult(
        env=config.env,
        env_args=list(config.env_args),
        transport=config.transport,
        moves=config.steps,
        repeats=config.repeats,
        in_process_moves_per_s=statistics.median(inside),
        mcp_moves_per_s=statistics.median(over),
        games=games,
        environment=_environment_facts(),
    )

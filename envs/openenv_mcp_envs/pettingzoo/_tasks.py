"""The pettingzoo env's task set: seeded games of the served env to win, from the
agent's seat.

Every env gets :class:`~openenv_mcp.tasks.SeedTasks`' three splits of disjoint seeds
(train from seed 0, validation from 1,000,000, test from 2,000,000); a task's seed deals
the cards and draws the random players' moves. Ids carry the env, its kwargs (8 hex
digits of them, where there are any) and the seat: ``tictactoe_v3.player_1-test-0007``,
``go_v5.1a2b3c4d.black_0-train-0042``, so tasks of other kwargs or seats never share one.

Success is a win: the game ended (terminated) with the agent's return higher than every
other agent's; in a game where every agent's return is the same (Hanabi's shared score,
or a draw) it is a positive return.
"""

from __future__ import annotations

import functools
import hashlib
import re

from openenv_mcp.tasks import Ending, SeedTasks

__all__ = ["PettingZooTasks", "pettingzoo_tasks", "won"]

# The characters a task id may hold besides letters and digits (openenv_mcp.tasks).
_NOT_IN_ID = re.compile(r"[^A-Za-z0-9_.:/@+=-]")


def won(ending: Ending) -> bool:
    """Whether the agent (``info["agent"]``) won by ``info["returns"]``."""
    returns, agent = ending.info.get("returns"), ending.info.get("agent")
    if not ending.terminated or not isinstance(returns, dict) or agent not in returns:
        return False
    mine = float(returns[agent])
    others = [float(r) for a, r in returns.items() if a != agent]
    if not others or all(r == mine for r in others):
        return mine > 0
    return all(mine > r for r in others)


def _prefix(env_id: str, kwargs_json: str, agent: str) -> str:
    parts = [env_id]
    if kwargs_json != "{}":
        parts.append(hashlib.sha256(kwargs_json.encode()).hexdigest()[:8])
    parts.append(agent)
    prefix = _NOT_IN_ID.sub("_", ".".join(parts))[:180]
    return prefix if prefix[:1].isalnum() else f"pz{prefix}"


class PettingZooTasks(SeedTasks):
    """Seeded games of one PettingZoo env from one seat, judged a success when won.

    Args:
        env_id: the env's id (``tictactoe_v3``).
        kwargs_json: its kwargs as sorted JSON (``"{}"`` for none).
        agent: the seat played.
    """

    rule = (
        "a win: the game ended with your return higher than every other agent's (where "
        "every return is the same, as in a cooperative game, a positive return)"
    )

    def __init__(self, env_id: str, kwargs_json: str, agent: str) -> None:
        self.env_id = env_id
        super().__init__(_prefix(env_id, kwargs_json, agent), won, group=env_id)


@functools.lru_cache(maxsize=64)
def pettingzoo_tasks(env_id: str, kwargs_json: str, agent: str) -> PettingZooTasks:
    """The task set of one env, kwargs and seat (built once)."""
    return PettingZooTasks(env_id, kwargs_json, agent)

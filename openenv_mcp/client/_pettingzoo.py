"""PettingZoo faces of a server of seats: every seat of a game in one client.

* :class:`MCPPettingZooEnv` (``client.as_pettingzoo()``): a real :class:`pettingzoo.AECEnv`;
  each ``step`` plays the selected agent's move on its seat (``step(seat=..., wait=False)``);
* :class:`MCPPettingZooParallelEnv` (``client.as_pettingzoo_parallel()``): a real
  :class:`pettingzoo.ParallelEnv` for games of simultaneous moves; each ``step`` sends
  every agent's move at once.

Both pass PettingZoo's own API tests (``pettingzoo.test.api_test`` and
``parallel_api_test``) over MCP. The server must serve seats
(``openenv-mcp serve openspiel --game tic_tac_toe --seats all``); the faces take every
seat clients drive there (the rest are the env's built-in players, who move inside the
calls). PettingZoo is the ``pettingzoo`` extra; this module imports it.
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Mapping
from typing import Any, ClassVar, Self

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv, ParallelEnv  # type: ignore[import-untyped,unused-ignore]

from openenv_mcp.client._seat import Seat, end_of, require_seats, seat_outcome, take_seats
from openenv_mcp.client._session import Session, Target
from openenv_mcp.client._sync import SyncEnvClient
from openenv_mcp.errors import ArgumentError, ResetNeeded, did_you_mean

__all__ = ["MCPPettingZooEnv", "MCPPettingZooParallelEnv"]

#: A view of one seat: its observation and info.
View = tuple[Any, dict[str, Any]]


class _Seating:
    """What both faces share: the sync client, the seats of the game it holds, the
    spaces, and the observation as the face hands it out."""

    def __init__(self, client: SyncEnvClient, *, mask_in_observation: bool, what: str) -> None:
        self.client = client
        session = client.session
        try:
            require_seats(session, what)
            spec = session.server_spec
            self.env_name = spec.name
            self.has_frame = spec.has_frame
            setting = spec.settings.get("seats")
            #: The seats this face takes: every seat clients drive on the server.
            self.wanted: str | list[str] = (
                setting if isinstance(setting, str) and setting != "all" else "all"
            )
            #: The agents this face holds, where the server's spec says (a newer server).
            self.known: list[str] | None = (
                None
                if not spec.seats
                else list(spec.seats)
                if self.wanted == "all"
                else [a for a in spec.seats if a in str(self.wanted).split(",")]
            )
            self.reset_options = sorted(spec.options)
            action_space = spec.action_space
            self.action_space: spaces.Space[Any] = action_space
            self.mask_in_observation = mask_in_observation
            if mask_in_observation:
                if not isinstance(action_space, spaces.Discrete):
                    raise ArgumentError(
                        f"mask_in_observation needs discrete actions; {spec.name}'s are "
                        f"{action_space}"
                    )
                mask = spaces.Box(0, 1, (int(action_space.n),), np.int8)
                self.observation_space: spaces.Space[Any] = spaces.Dict(
                    {"observation": spec.observation_space, "action_mask": mask}
                )
            else:
                self.observation_space = spec.observation_space
        except BaseException:
            client.close()
            raise
        #: The seats taken, by name in the game's order (none before the first reset).
        self.seats: dict[str, Seat] = {}
        # Closed with the client (its loop runs this before closing the session).
        client.loop.adopt(self, _seat_closer(self.seats))

    @property
    def session(self) -> Session:
        return self.client.session

    def run(self, coroutine_fn: Any, *args: Any) -> Any:
        return self.client.loop.run(coroutine_fn, *args)

    # -- agents and spaces ---------------------------------------------------------------

    def check_agent(self, agent: Any) -> None:
        """Refuse an agent that is no seat of the game (where the seats are known)."""
        if self.seats and agent not in self.seats:
            raise ArgumentError(
                f"{agent!r} is not an agent of this game.{did_you_mean(str(agent), self.seats)} "
                f"Agents: {', '.join(self.seats)}"
            )

    def observation(self, obs: Any, info: Mapping[str, Any]) -> Any:
        """The observation as the face hands it out (with the action mask, if asked)."""
        if not self.mask_in_observation:
            return obs
        return {"observation": obs, "action_mask": np.asarray(info["action_mask"], np.int8)}

    def options(self, options: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """The env's own reset options among ``options``: PettingZoo's ``reset`` takes any
        (its API test passes ``{"options": 1}``), so others are left out with a warning
        naming them."""
        if not options:
            return None
        if not isinstance(options, Mapping):
            raise ArgumentError(
                f"options must be a dict of the env's reset options, got "
                f"{type(options).__name__} {options!r:.60}"
            )
        unknown = sorted(str(k) for k in options if k not in self.reset_options)
        if unknown:
            allowed = ", ".join(self.reset_options) or "none"
            warnings.warn(
                f"reset options not {self.env_name}'s left out: {', '.join(unknown)} (its "
                f"reset options: {allowed})",
                UserWarning,
                stacklevel=3,
            )
        kept = {k: v for k, v in options.items() if k in self.reset_options}
        return kept or None

    # -- calls -----------------------------------------------------------------------------

    def reset(self, seed: int | None, options: Mapping[str, Any] | None) -> dict[str, View]:
        """Start the game (the first time, taking the seats; then again at the same table,
        every seat keeping its handle): every seat's view, by name."""
        kept = self.options(options)
        return dict(self.run(self._reset, seed, kept))

    async def _reset(self, seed: int | None, options: dict[str, Any] | None) -> dict[str, View]:
        if not self.seats:
            taken = await take_seats(self.session, self.wanted, seed=seed, options=options)
            self.seats.update(taken)
            first = next(s for s in taken.values() if s.info)
        else:
            first = next(iter(self.seats.values()))
            await first.reset(seed=seed, options=options)
        others = [s for s in self.seats.values() if s is not first]
        await asyncio.gather(*(s.state() for s in others))
        return {name: (s._observation, s.info) for name, s in self.seats.items()}

    def look(self, agents: list[str]) -> dict[str, View]:
        """Fresh views of ``agents``' seats."""
        if not agents:
            return {}
        return dict(self.run(self._look, agents))

    async def _look(self, agents: list[str]) -> dict[str, View]:
        return dict(
            zip(agents, await asyncio.gather(*(self.seats[a].state() for a in agents)), strict=True)
        )

    def end(self, agents: list[str]) -> None:
        """Collect finished seats' final answers (their episodes end on the server)."""
        if agents:
            self.run(self._end, agents)

    async def _end(self, agents: list[str]) -> None:
        action = self.action_space.start if isinstance(self.action_space, spaces.Discrete) else 0
        await asyncio.gather(*(end_of(self.seats[a], int(action)) for a in agents))

    def render(self, mode: str | None, agent: str | None) -> Any:
        if mode is None:
            warnings.warn(
                "render() without a render_mode: make the env with render_mode='ansi' or "
                "'rgb_array'",
                UserWarning,
                stacklevel=3,
            )
            return None
        seat = self.seats.get(agent) if agent is not None else None
        if seat is None:
            return None
        if mode == "ansi":
            return str(seat.info.get("text", ""))
        return self.run(seat.render)

    def close(self) -> None:
        self.client.close()


def _seat_closer(seats: dict[str, Seat]) -> Any:
    async def close() -> None:
        await asyncio.gather(*(s.close() for s in list(seats.values())), return_exceptions=True)

    return close


def _render_modes(has_frame: bool) -> list[str]:
    return ["ansi", "rgb_array"] if has_frame else ["ansi"]


def _check_render_mode(seating: _Seating, render_mode: str | None) -> str | None:
    modes = _render_modes(seating.has_frame)
    if render_mode is not None and render_mode not in modes:
        seating.close()
        raise ArgumentError(
            f"render_mode {render_mode!r} is not available for {seating.env_name}; render "
            f"modes: {', '.join(modes)}"
        )
    return render_mode


def _unknown_before_reset(name: str) -> AttributeError:
    return AttributeError(f"{name}: the game's agents are known once reset() has taken the seats")


class _Face:
    """What both PettingZoo faces share: making one over a target or a client, the seats
    it holds, the agents and spaces, closing, and the repr. Each face names the call it
    is (``_call``) and starts its own state in ``_adopt``."""

    #: The client call this face is, for a server without seats' error.
    _call: ClassVar[str]

    metadata: dict[str, Any] = {"render_modes": ["ansi"], "name": "openenv_mcp"}  # noqa: RUF012

    def __init__(
        self,
        target: Target,
        *,
        render_mode: str | None = None,
        mask_in_observation: bool = False,
        **client_options: Any,
    ) -> None:
        client = SyncEnvClient.start(Session(target, **client_options))
        self._adopt(client, render_mode, mask_in_observation)

    @classmethod
    def from_client(
        cls,
        client: SyncEnvClient,
        *,
        render_mode: str | None = None,
        mask_in_observation: bool = False,
    ) -> Self:
        """An adapter over a connected sync client; closing the adapter closes the client."""
        env = cls.__new__(cls)
        env._adopt(client, render_mode, mask_in_observation)
        return env

    def _adopt(
        self, client: SyncEnvClient, render_mode: str | None, mask_in_observation: bool
    ) -> None:
        self._seating = _Seating(client, mask_in_observation=mask_in_observation, what=self._call)
        self.render_mode = _check_render_mode(self._seating, render_mode)
        self.metadata = {
            "render_modes": _render_modes(self._seating.has_frame),
            "name": f"openenv_mcp/{self._seating.env_name}",
        }
        self._possible: list[str] | None = None

    # -- what it is ------------------------------------------------------------------------

    @property
    def client(self) -> SyncEnvClient:
        """The sync client underneath."""
        return self._seating.client

    @property
    def seats(self) -> dict[str, Seat]:
        """The seats held, by agent (after the first reset)."""
        return self._seating.seats

    @property
    def possible_agents(self) -> list[str]:
        """Every agent of the game this face holds (from the server's spec; from an
        older server's, once the first reset took the seats)."""
        if self._possible is None:
            if self._seating.known is not None:
                return self._seating.known
            raise _unknown_before_reset("possible_agents")
        return self._possible

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        self._seating.check_agent(agent)
        return self._seating.observation_space

    def action_space(self, agent: str) -> spaces.Space[Any]:
        self._seating.check_agent(agent)
        return self._seating.action_space

    def close(self) -> None:
        """Close every seat and the connection (a stdio server is stopped). Idempotent."""
        self._seating.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._seating.env_name} seats={list(self.seats)}>"


class MCPPettingZooEnv(_Face, AECEnv):  # type: ignore[misc,unused-ignore]
    """A game served with seats as a :class:`pettingzoo.AECEnv`: every seat in this client.

    Passes ``pettingzoo.test.api_test``. ``reset`` takes the seats the first time
    (``reset(seats=...)``; later resets start the game again at the same table);
    ``step`` plays ``agent_selection``'s move on its seat and learns every agent's reward,
    termination and truncation from the answer (``seat_rewards``, ``terminations``,
    ``truncations``) and who is to move (``to_move``: several at a simultaneous node,
    each stepped in turn, the joint move committing with the last). ``observe(agent)``
    is that seat's view now; ``infos[agent]`` its latest info, with ``action_mask`` (a
    numpy int8 array: 1 for the legal actions, all 0 unless it is to move), ``text``,
    ``legal_actions``... A finished agent's ``step(None)`` collects its seat's final
    answer and drops it from ``agents``, as PettingZoo's convention is.

    Args:
        target: a server of seats (a FastMCP server, a command, or an ``http(s)://`` URL,
            as :class:`~openenv_mcp.client.MCPEnvClient` takes).
        render_mode: ``"ansi"`` (the game in words, as the selected agent sees it) or
            ``"rgb_array"`` (its frame, where the env draws one), or ``None``.
        mask_in_observation: hand out ``{"observation": obs, "action_mask": mask}`` (as
            PettingZoo's classic games do) instead of the env's observation.
        **client_options: the :class:`~openenv_mcp.client.Session`'s options.
    """

    _call = "as_pettingzoo()"

    def _adopt(
        self, client: SyncEnvClient, render_mode: str | None, mask_in_observation: bool
    ) -> None:
        super()._adopt(client, render_mode, mask_in_observation)
        self.metadata["is_parallelizable"] = False
        #: Each agent's latest view, with the move count it was taken at.
        self._views: dict[str, tuple[int, View]] = {}
        self._moves = 0
        self._over = False
        self._skip_agent_selection: str | None = None

    # -- the game --------------------------------------------------------------------------

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        views = self._seating.reset(seed, options)
        self._possible = list(views)
        self.agents = list(views)
        self._moves += 1
        self._views = {a: (self._moves, view) for a, view in views.items()}
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos = {a: info for a, (_, info) in views.items()}
        self._over = False
        self._skip_agent_selection = None
        to_move = list(next(iter(views.values()))[1].get("to_move") or [])
        ready = [a for a in self.agents if views[a][1].get("your_turn")]
        self.agent_selection = (ready or to_move or self.agents)[0]

    def _view(self, agent: str) -> View:
        """``agent``'s view now (one call, unless it is fresh)."""
        known = self._views.get(agent)
        if known is not None and known[0] == self._moves:
            return known[1]
        view = self._seating.look([agent])[agent]
        self._took(agent, view)
        return view

    def _took(self, agent: str, view: View) -> None:
        self._views[agent] = (self._moves, view)
        if agent in self.infos:  # a removed agent is never given an info again
            self.infos[agent] = view[1]

    def observe(self, agent: str) -> Any:
        self._seating.check_agent(agent)
        if self._possible is None:
            raise ResetNeeded("observe before reset: call reset() first")
        obs, info = self._view(agent)
        return self._seating.observation(obs, info)

    def step(self, action: Any) -> None:
        if self._possible is None:
            raise ResetNeeded("step before reset: call reset() first")
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            if action is None and self._over:
                self._seating.end([agent])
            self._was_dead_step(action)
            if self.agents:
                self._view(self.agent_selection)
            return
        if action is None:
            raise ArgumentError(
                f"step(None) is only for an agent whose game is over; {agent} is to move "
                f"(legal: {self.infos[agent].get('legal_actions')})"
            )
        seat = self.seats[agent]
        obs, _, _, _, info = self._seating.run(_step, seat, action)
        self._moves += 1
        self._took(agent, (obs, info))
        self._cumulative_rewards[agent] = 0.0
        rewards = info.get("seat_rewards") or {}
        for a in self.agents:
            self.rewards[a] = float(rewards.get(a, 0.0))
            self.terminations[a], self.truncations[a] = seat_outcome(info, a)
        to_move = list(info.get("to_move") or [])
        self._over = not to_move
        self._select(agent, to_move)
        self._accumulate_rewards()

    def _select(self, mover: str, to_move: list[str]) -> None:
        """The next agent: the first after ``mover`` that is to move (and has not moved
        yet at a simultaneous node); a finished agent first where any is (PettingZoo's
        convention: it steps with None)."""
        at = self.agents.index(mover)
        order = self.agents[at + 1 :] + self.agents[: at + 1]
        nxt = None
        for candidate in (a for a in order if a in to_move):
            if self._view(candidate)[1].get("your_turn"):
                nxt = candidate
                break
        done = [a for a in self.agents if self.terminations[a] or self.truncations[a]]
        if done:
            self._skip_agent_selection = nxt
            first = next(a for a in order if a in done)
            self.agent_selection = first
            self._view(first)
        elif nxt is not None:
            self.agent_selection = nxt
        else:  # nobody's turn yet (a slow built-in player): the first to move
            self.agent_selection = to_move[0] if to_move else order[0]

    def render(self) -> Any:
        """The game as ``agent_selection`` sees it: words (``"ansi"``) or a frame."""
        agent = getattr(self, "agent_selection", None)
        return self._seating.render(self.render_mode, agent)


async def _step(seat: Seat, action: Any) -> Any:
    return await seat.step(action, wait=False)


class MCPPettingZooParallelEnv(_Face, ParallelEnv):  # type: ignore[misc,unused-ignore]
    """A game of simultaneous moves served with seats as a :class:`pettingzoo.ParallelEnv`.

    Passes ``pettingzoo.test.parallel_api_test``. ``step({agent: action})`` sends every
    agent-to-move's step at once (each answers once the joint move committed: at its
    next turn, or the game's end) and assembles the observations, rewards (each agent's
    since its last step), terminations, truncations and infos of every agent live before
    it. Actions of agents that are not to move (in a game of turns) are ignored, as
    PettingZoo's conversion of turn-based games does; an agent to move without an action
    is refused. Finished agents leave ``agents``; their seats' final answers are
    collected at the end.

    Args: as :class:`MCPPettingZooEnv`'s. With ``mask_in_observation`` every observation
    is ``{"observation": obs, "action_mask": mask}``, which ``parallel_api_test`` samples
    legal actions from.
    """

    _call = "as_pettingzoo_parallel()"

    def _adopt(
        self, client: SyncEnvClient, render_mode: str | None, mask_in_observation: bool
    ) -> None:
        super()._adopt(client, render_mode, mask_in_observation)
        self._to_move: list[str] = []
        self.agents: list[str] = []

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        views = self._seating.reset(seed, options)
        self._possible = list(views)
        self.agents = list(views)
        self._to_move = list(next(iter(views.values()))[1].get("to_move") or [])
        observation = self._seating.observation
        return (
            {a: observation(obs, info) for a, (obs, info) in views.items()},
            {a: info for a, (_, info) in views.items()},
        )

    def step(
        self, actions: Mapping[str, Any]
    ) -> tuple[
        dict[str, Any],
        dict[str, float],
        dict[str, bool],
        dict[str, bool],
        dict[str, dict[str, Any]],
    ]:
        if self._possible is None:
            raise ResetNeeded("step before reset: call reset() first")
        if not self.agents:
            raise ResetNeeded("the game is over (no agent is live): call reset()")
        if not isinstance(actions, Mapping):
            raise ArgumentError(
                f"step takes a dict of actions by agent, got {type(actions).__name__}"
            )
        for agent in actions:
            self._seating.check_agent(agent)
        acting = [a for a in self._to_move if a in self.agents]
        missing = [a for a in acting if a not in actions]
        if missing:
            raise ArgumentError(
                f"no action for {', '.join(missing)}, to move now (to move: "
                f"{', '.join(acting)}); pass an action for each"
            )
        live = list(self.agents)
        views = self._seating.run(self._step, acting, {a: actions[a] for a in acting}, live)
        seats = self.seats
        rewards = {a: seats[a].news for a in live}
        terminations: dict[str, bool] = {}
        truncations: dict[str, bool] = {}
        for a in live:
            terminations[a], truncations[a] = seat_outcome(views[a][1], a)
        self._to_move = list(views[live[-1]][1].get("to_move") or [])
        self.agents = [a for a in live if not (terminations[a] or truncations[a])]
        if not self._to_move:  # over: every finished seat is told its end
            self._seating.end([a for a in live if a not in self.agents])
        observation = self._seating.observation
        return (
            {a: observation(obs, info) for a, (obs, info) in views.items()},
            rewards,
            terminations,
            truncations,
            {a: info for a, (_, info) in views.items()},
        )

    async def _step(
        self, acting: list[str], actions: dict[str, Any], live: list[str]
    ) -> dict[str, View]:
        seats = self.seats
        # Several to move: each answers once the joint move committed (at its next turn or
        # the end). One: it answers after its move, and the others look.
        wait = len(acting) > 1
        moved = await asyncio.gather(*(seats[a].step(actions[a], wait=wait) for a in acting))
        views: dict[str, View] = {a: (t[0], t[4]) for a, t in zip(acting, moved, strict=True)}
        others = [a for a in live if a not in acting]
        looked = await asyncio.gather(*(seats[a].state() for a in others))
        views.update(zip(others, looked, strict=True))
        return {a: views[a] for a in live}

    def render(self) -> Any:
        """The game as the first live agent sees it: words (``"ansi"``) or a frame."""
        agent = self.agents[0] if self.agents else None
        return self._seating.render(self.render_mode, agent)

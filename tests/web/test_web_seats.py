"""The web page takes a seat of a game (``serve openspiel --seats all``), in a real
browser (Debian's Chromium, driven by Playwright): a scripted MCP client starts a game
of tic-tac-toe holding player_0, the page joins the open seat from a link naming the
game, and a person's clicks on the legal actions play player_1 to the end. Watching
lists both seats under one game. Any console error fails the test (conftest)."""

from __future__ import annotations

import json
import queue
import random
import threading
import urllib.request
from collections.abc import Iterator
from typing import Any

import anyio
import anyio.to_thread
import pytest
from fastmcp import Client

from tests.servers import http_server
from tests.web.conftest import Pages, check, screenshot

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def tic_tac_toe() -> Iterator[tuple[str, str]]:
    """A tic-tac-toe server whose every seat a client drives: (its /mcp URL, base)."""
    with http_server("openspiel", "--game", "tic_tac_toe", "--seats", "all", "--web") as url:
        yield url, url.removesuffix("/mcp")


def get(base: str, path: str) -> Any:
    with urllib.request.urlopen(f"{base}/web/api/{path}", timeout=30) as reply:
        return json.load(reply)


def your_turn(page: Any, turn: int) -> bool:
    """Wait until ``page``'s seat has its ``turn``-th turn (true) or its game is over."""
    page.wait_for_function(
        """(n) => {
            const box = document.getElementById("seat-box");
            return box.dataset.seat === "over" || Number(box.dataset.turns || 0) >= n;
        }""",
        arg=turn,
        timeout=90_000,
    )
    return page.get_attribute("#seat-box", "data-seat") != "over"


class Script:
    """player_0 played by a program over MCP, on a thread of its own (the browser is
    driven from the test's thread): it starts the game, waits until the page sat down,
    then plays random legal moves, each step waiting for its next turn."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.started: queue.Queue[dict[str, Any]] = queue.Queue()
        self.joined = threading.Event()
        self.actions: list[int] = []
        #: Steps that only heard the game's end (a finished seat's step plays nothing).
        self.end_steps: list[int] = []
        self.rewards: list[float] = []
        self.their_moves: list[dict[str, Any]] = []
        self.last: dict[str, Any] = {}
        self.failed: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            anyio.run(self._play)
        except BaseException as exc:  # reported by the test
            self.failed = exc
            self.started.put({})

    async def _play(self) -> None:
        rng = random.Random(7)
        async with Client(self.url, timeout=90) as client:

            async def call(tool: str, **args: Any) -> dict[str, Any]:
                result = await client.call_tool(tool, args)
                view = result.structured_content
                assert isinstance(view, dict), result
                return view

            view = await call("reset", seed=3, seats="player_0", frames="none")
            handle = view["seats"]["player_0"]
            self.started.put(view)
            assert await anyio.to_thread.run_sync(self.joined.wait, 90), "the page never sat"
            for _ in range(40):
                info = view["info"]
                if view["terminated"] or view["truncated"]:
                    break
                if not info["to_move"]:  # over while it looked: a step hears its end
                    self.end_steps.append(0)
                    view = await call("step", action=0, seat=handle, wait=False)
                elif not info["your_turn"]:
                    view = await call("state", seat=handle, wait=True, frames="none")
                    continue
                else:
                    action = rng.choice(info["legal_actions"])
                    self.actions.append(action)
                    view = await call("step", action=action, seat=handle, wait=True, frames="none")
                self.rewards.append(view["reward"])
                self.their_moves += [m for m in view["info"]["moves"] if m["agent"] != "player_0"]
            self.last = view


def test_the_page_takes_an_open_seat_and_plays_it_to_the_end(
    pages: Pages, tic_tac_toe: tuple[str, str]
) -> None:
    url, base = tic_tac_toe
    info = get(base, "info")
    check(info["seats"]["clients"] == ["player_0", "player_1"], info["seats"])
    before = {r["watch_id"] for r in get(base, "episodes")["episodes"]}
    script = Script(url)
    script.thread.start()
    started = script.started.get(timeout=90)
    check(script.failed is None, repr(script.failed))
    check(started["open_seats"] == ["player_1"], started)
    table_id, theirs = started["table_id"], started["seats"]["player_0"]

    # The link another player is given names the game; the page joins its open seat.
    page = pages.open(f"{base}/web/?table={table_id}")
    page.wait_for_function("() => document.getElementById('stat-seat').textContent === 'player_1'")
    mine = page.get_attribute("#stat-episode", "title")
    check(mine and mine.startswith("ep_") and mine != theirs, (mine, theirs))
    check(page.inner_text("#stat-open") == "none")
    check(page.get_attribute("#seat-box", "data-seat") == "waiting")
    check("player_0" in page.inner_text("#stat-turn"))
    script.joined.set()

    rng = random.Random(11)
    clicked: list[int] = []
    for turn in range(1, 10):
        if not your_turn(page, turn):
            break
        legal = page.eval_on_selector_all(
            "#play-actions button", "bs => bs.map(b => Number(b.dataset.action))"
        )
        check(legal, "my turn, and no legal action to click")
        check(page.inner_text("#stat-turn") == "you (player_1)")
        action = rng.choice(legal)
        clicked.append(action)
        page.click(f"#play-actions button[data-action='{action}']")
    page.wait_for_function(
        "() => document.getElementById('stat-terminated').textContent === 'true'",
        timeout=90_000,
    )
    script.thread.join(90)
    check(not script.thread.is_alive(), "the scripted player never finished")
    check(script.failed is None, repr(script.failed))
    screenshot(page, "web-seats")

    # The game ended for both seats, and what one won the other lost.
    check(script.last["terminated"] and page.inner_text("#stat-status") == "ended")
    check(page.inner_text("#stat-turn").startswith("nobody"))
    page_return = float(page.inner_text("#stat-return"))
    check(sum(script.rewards) + page_return == 0, (script.rewards, page_return))

    # Every click moved player_1, and only player_1: the moves the script was told of are
    # the clicks, in order, and the server's record of each seat's calls holds its own.
    check([m["action"] for m in script.their_moves] == clicked, (script.their_moves, clicked))
    check(clicked and script.actions, (clicked, script.actions))
    rows = [r for r in get(base, "episodes")["episodes"] if r["watch_id"] not in before]
    games = {r["game"] for r in rows}
    check(len(games) == 1 and next(iter(games)).startswith("game-"), rows)
    check(table_id not in json.dumps(rows), "the game's handle reached the watch list")
    by_seat = {r["seat"]: r for r in rows}
    check(set(by_seat) == {"player_0", "player_1"}, rows)
    check(by_seat["player_0"]["episode_return"] + by_seat["player_1"]["episode_return"] == 0)
    for seat, moved in (("player_0", script.actions + script.end_steps), ("player_1", clicked)):
        history = get(base, f"episodes/{by_seat[seat]['watch_id']}")["history"]
        steps = [e["arguments"]["action"] for e in history if e["tool"] == "step"]
        check(steps == moved, (seat, steps, moved))
    # The seat's handle stayed in the page: its address names the game only.
    check(mine not in page.url and "ep_" not in page.url, page.url)

    # Watching: the game's two seats, listed together under one game.
    page.click("#tabs button[data-tab='watch']")
    for seat in ("player_0", "player_1"):
        page.wait_for_selector(
            f"#episodes tbody tr[data-watch='{by_seat[seat]['watch_id']}']"
            f":has(td:nth-child(3):text-is('{seat}'))",
            timeout=30_000,
        )
    check(page.is_visible("#episodes th.seat-col"))


def test_one_tab_starts_a_game_and_another_joins_the_oldest_open_seat(
    pages: Pages, tic_tac_toe: tuple[str, str]
) -> None:
    _, base = tic_tac_toe
    first = pages.open(f"{base}/web/")
    check(not first.get_attribute("#stat-episode", "title"), "a seat taken before asked")
    first.fill("#reset-seed", "5")
    first.click("#reset-button")  # "New game": this tab holds the first seat
    first.wait_for_function("() => document.getElementById('stat-seat').textContent === 'player_0'")
    check(first.inner_text("#stat-open") == "player_1")
    second = pages.open(f"{base}/web/")
    second.click("#join-button")  # no game named: the oldest with an open seat
    second.wait_for_function(
        "() => document.getElementById('stat-seat').textContent === 'player_1'"
    )
    check(second.inner_text("#stat-table") == first.inner_text("#stat-table"))
    handles = {p.get_attribute("#stat-episode", "title") for p in (first, second)}
    check(len(handles) == 2, handles)
    # Tic-tac-toe alternates: player_0's tab, then player_1's, until it is over.
    rng = random.Random(2)
    for move in range(9):
        mover, turn = (first, second)[move % 2], move // 2 + 1
        if not your_turn(mover, turn):
            break
        legal = mover.eval_on_selector_all(
            "#play-actions button", "bs => bs.map(b => b.dataset.action)"
        )
        mover.click(f"#play-actions button[data-action='{rng.choice(legal)}']")
    for page in (first, second):
        page.wait_for_function(
            "() => document.getElementById('stat-terminated').textContent === 'true'",
            timeout=90_000,
        )
    returns = [float(p.inner_text("#stat-return")) for p in (first, second)]
    check(sum(returns) == 0, returns)

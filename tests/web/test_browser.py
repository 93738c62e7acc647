"""The web page in a real browser (Debian's Chromium, driven by Playwright): play
Breakout with the keyboard, one episode per tab, watch an ``MCPEnvClient`` rollout
live, call a tool through a form generated from its schema, replay a recording,
and open a token-protected server. Any console error fails a test (conftest)."""

from __future__ import annotations

import json
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openenv_mcp.client import MCPEnvClient
from tests.servers import http_server
from tests.web.conftest import Pages, check, screenshot

pytestmark = pytest.mark.integration

TOKEN = "browser-test-token"


@pytest.fixture(scope="module")
def breakout(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A Breakout server with its page and a recording directory: (its /mcp URL, base)."""
    record = tmp_path_factory.mktemp("recorded")
    with http_server(
        "atari", "--game", "breakout", "--web", "--record", str(record), "--record-video=false"
    ) as url:
        yield url, url.removesuffix("/mcp")


def step_of(page: Any) -> int:
    return int(page.inner_text("#stat-step"))


def wait_step(page: Any, at_least: int, where: str = "#stat-step") -> None:
    page.wait_for_function(
        "([sel, n]) => Number(document.querySelector(sel).textContent) >= n",
        arg=[where, at_least],
        timeout=30_000,
    )


def watch_ids(base: str) -> set[str]:
    """The ids of the episodes the server's page lists now."""
    with urllib.request.urlopen(f"{base}/web/api/episodes", timeout=30) as reply:
        return {row["watch_id"] for row in json.load(reply)["episodes"]}


def canvas_pixels(page: Any) -> dict[str, Any]:
    return dict(
        page.evaluate(
            """() => {
            const c = document.getElementById("play-canvas");
            const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
            let lit = 0;
            for (let i = 0; i < d.length; i += 4) if (d[i] + d[i + 1] + d[i + 2] > 60) lit++;
            return {width: c.width, height: c.height, lit, url: c.toDataURL()};
        }"""
        )
    )


def test_play_breakout_with_the_keyboard(pages: Pages, breakout: tuple[str, str]) -> None:
    _, base = breakout
    page = pages.open(f"{base}/web/?realtime=0")
    page.wait_for_function(
        "() => Number(document.getElementById('play-canvas').dataset.frames) >= 1"
    )
    first = canvas_pixels(page)
    # Breakout's 160x210 screen, drawn three times as large, and not black.
    check((first["width"], first["height"]) == (480, 630), first)
    check(first["lit"] > 10_000, f"only {first['lit']} lit pixels")
    check(step_of(page) == 0)
    check(page.inner_text("#stat-lives") == "5")
    buttons = page.eval_on_selector_all("#play-actions button", "bs => bs.map(b => b.textContent)")
    check(buttons == ["NOOP", "FIRE", "RIGHT", "LEFT"], buttons)
    page.keyboard.press("Space")  # FIRE
    wait_step(page, 1)
    check("FIRE" in page.inner_text("#play-history"))
    for n in range(2, 6):
        page.keyboard.press("ArrowRight")
        wait_step(page, n)
    page.wait_for_function(
        "() => Number(document.getElementById('play-canvas').dataset.frames) >= 6"
    )
    moved = canvas_pixels(page)
    check(moved["url"] != first["url"], "the frame did not change")
    check(page.inner_text("#play-summary").startswith("Step 5 (RIGHT)"))
    # Keys the game has no action for send nothing (Breakout has no UP).
    page.keyboard.press("ArrowUp")
    page.click("#play-actions button[data-action='LEFT']")
    wait_step(page, 6)
    check(step_of(page) == 6, "ArrowUp stepped")
    check("LEFT" in page.inner_text("#play-history"))
    screenshot(page, "web-play")
    # A new episode with a seed, from the form.
    page.fill("#reset-seed", "7")
    page.click("#reset-button")
    page.wait_for_function("() => document.getElementById('stat-step').textContent === '0'")
    check(page.inner_text("#stat-status") == "running")


def test_each_tab_has_its_own_episode(pages: Pages, breakout: tuple[str, str]) -> None:
    _, base = breakout
    one = pages.open(f"{base}/web/?realtime=0")
    two = pages.open(f"{base}/web/?realtime=0")
    first = one.get_attribute("#stat-episode", "title")
    second = two.get_attribute("#stat-episode", "title")
    check(first and second and first != second, (first, second))
    one.keyboard.press("Space")
    wait_step(one, 1)
    two.keyboard.press("ArrowLeft")
    wait_step(two, 1)
    one.keyboard.press("Space")
    wait_step(one, 2)
    check(step_of(two) == 1, "the other tab's episode moved")


def test_watch_an_mcp_env_client_rollout_live(pages: Pages, breakout: tuple[str, str]) -> None:
    url, base = breakout
    page = pages.open(f"{base}/web/?realtime=0")
    # Other tests' episodes live on this server too (one stops at step 11 when its page
    # leaves real time): the row to watch is the one that appears with this client's.
    before = watch_ids(base)
    with MCPEnvClient(url).sync() as env:
        env.reset(seed=1)
        env.step("FIRE")
        for _ in range(10):
            env.step("RIGHT")
        (mine,) = watch_ids(base) - before
        page.click("#tabs button[data-tab='watch']")
        row = f"#episodes tbody tr[data-watch='{mine}']:has(td:nth-child(3):text-is('11'))"
        page.wait_for_selector(row, timeout=30_000)
        page.click(row)
        page.wait_for_function("() => document.getElementById('watch-frame').naturalWidth === 160")
        go = threading.Event()

        def rollout() -> None:
            go.wait(30)
            for _ in range(40):
                env.step("LEFT")

        player = threading.Thread(target=rollout)
        player.start()
        try:
            go.set()
            wait_step(page, 51, "#watch-step")
        finally:
            player.join(60)
        check(int(page.inner_text("#watch-step")) == 51)
        calls = page.inner_text("#watch-calls")
        check('step({"action":"LEFT"})' in calls and "reset(" in calls, calls[:400])
        check(env.episode_id not in page.content(), "a handle reached the watcher")
        # Read-only: nothing in the view acts on the episode.
        check(
            page.eval_on_selector_all("#watch-view button, #watch-view input", "n => n.length") == 0
        )
        page.wait_for_function(
            "() => Number(document.getElementById('watch-frame').dataset.step) === 51"
        )
        screenshot(page, "web-watch")


def test_inspect_calls_a_tool_through_its_generated_form(
    pages: Pages, breakout: tuple[str, str]
) -> None:
    _, base = breakout
    page = pages.open(f"{base}/web/?realtime=0")
    episode = page.get_attribute("#stat-episode", "title")
    page.click("#tabs button[data-tab='inspect']")
    names = page.eval_on_selector_all("#tool-list li", "ls => ls.map(l => l.dataset.tool)")
    check({"reset", "step", "state", "step_batch", "legal_actions", "fire"} <= set(names), names)
    # reset: a nested object (options) with numbers, and optional fields left out.
    page.click("#tool-list li[data-tool='reset']")
    check(page.locator("#tool-form fieldset legend", has_text="options").count() == 1)
    check(page.locator("#tool-form input[name='mode']").count() == 1)
    # step: the action is an enum, offered as choices.
    page.click("#tool-list li[data-tool='step']")
    choices = page.eval_on_selector_all(
        "#tool-form select[name='action'] option", "os => os.map(o => o.textContent)"
    )
    check(choices == ["(not given)", "NOOP", "FIRE", "RIGHT", "LEFT"], choices)
    check(page.input_value("#tool-form input[name='episode_id']") == episode)
    page.select_option("#tool-form select[name='action']", label="RIGHT")
    page.select_option("#tool-form select[name='frames']", label="png")
    page.click("#tool-call")
    page.wait_for_selector("#tool-result img")
    result = page.inner_text("#tool-result")
    check('"step": 1' in result and "Step 1 (RIGHT)" in result, result[:400])
    check(page.eval_on_selector("#tool-result img", "i => i.naturalWidth") == 160)
    page.click("#copy-python")
    snippet = page.inner_text("#tool-snippet")
    check('env.step("RIGHT")' in snippet and f'MCPEnvClient("{base}/mcp")' in snippet, snippet)
    page.click("#copy-json")
    raw = page.inner_text("#tool-snippet")
    check('"name": "step"' in raw and "Mcp-Name: step" in raw, raw)
    screenshot(page, "web-inspect")
    # A tool error is shown as the server said it.
    page.select_option("#tool-form select[name='action']", label="(not given)")
    page.click("#tool-call")
    page.wait_for_selector("#tool-result .result-error")
    check("action" in page.inner_text("#tool-result"))


def test_replay_a_recorded_episode(pages: Pages, breakout: tuple[str, str]) -> None:
    url, base = breakout
    with MCPEnvClient(url).sync() as env:
        env.reset(seed=5)
        for action in ("FIRE", "RIGHT", "RIGHT", "LEFT"):
            env.step(action)
    page = pages.open(f"{base}/web/?realtime=0")
    page.click("#tabs button[data-tab='replay']")
    item = "#replay-list li:has-text('seed 5')"
    page.wait_for_selector(item)
    page.click(item)
    page.wait_for_function("() => document.getElementById('replay-frame').naturalWidth === 160")
    check(page.get_attribute("#replay-scrubber", "max") == "4")
    page.fill("#replay-scrubber", "4")
    page.dispatch_event("#replay-scrubber", "input")
    page.wait_for_function(
        "() => document.getElementById('replay-step').textContent.startsWith('step 4: LEFT')"
    )
    page.wait_for_function("() => document.getElementById('replay-frame').complete")
    check(page.inner_text("#replay-position") == "4 / 4")
    screenshot(page, "web-replay")
    # This tab's own episode, kept in the page.
    page.click("#replay-list li[data-replay='tab']")
    check(page.get_attribute("#replay-scrubber", "max") == "0")


def test_real_time_play_runs_the_game_on(pages: Pages, breakout: tuple[str, str]) -> None:
    _, base = breakout
    page = pages.open(f"{base}/web/")
    check(page.is_checked("#realtime"))
    wait_step(page, 10)  # nobody pressed anything: NOOPs at the game's pace
    page.keyboard.press("Space")
    page.wait_for_function(
        "() => document.getElementById('play-history').textContent.includes('FIRE')"
    )
    page.uncheck("#realtime")


def test_a_token_protected_page(pages: Pages, tmp_path: Path) -> None:
    with http_server("atari", "--game", "pong", "--web", "--auth-token", TOKEN) as url:
        base = url.removesuffix("/mcp")
        page = pages.open(f"{base}/web/?token={TOKEN}&realtime=0")
        check(page.inner_text("#stat-status") == "running")
        page.keyboard.press("Space")
        wait_step(page, 1)
        page.click("#tabs button[data-tab='watch']")
        page.wait_for_selector("#episodes tbody tr")
        page.click("#episodes tbody tr")
        page.wait_for_function("() => document.getElementById('watch-frame').naturalWidth === 160")
        # Without the token the page is refused, and says how to open it.
        other = pages.context.browser.new_context()
        try:
            refused = other.new_page()
            response = refused.goto(f"{base}/web/")
            check(response.status == 401)
            check("/web/?token=" in refused.content())
        finally:
            other.close()
        page.close()  # before its server stops: a page left open sees it go


def test_a_sharded_servers_page_sends_the_route_header(pages: Pages) -> None:
    """On a sharded server (`--shard`, what a gateway or Ray routes) the standard stack and
    the direct path refuse a call whose Mcp-Param-Route header does not mirror its
    episode_id: the page plays only because it sends the header, as MCP clients must."""
    with http_server("atari", "--game", "pong", "--web", "--shard", "pod-3") as url:
        base = url.removesuffix("/mcp")
        page = pages.open(f"{base}/web/?realtime=0")
        check(page.inner_text("#stat-status") == "running")
        for n in range(1, 4):
            page.keyboard.press("Space")
            wait_step(page, n)
        page.click("#tabs button[data-tab='inspect']")
        page.click("#tool-list li[data-tool='state']")
        page.click("#tool-call")
        page.wait_for_function(
            "() => document.getElementById('tool-result').textContent.includes('@pod-3')"
        )
        check("error" not in page.inner_text("#tool-result").lower())
        page.close()


def test_the_pages_episodes_count_against_the_client_cap(pages: Pages) -> None:
    """The page is a client like any other (issue 32): at a cap of one episode per
    client, a second tab from the same browser is refused, saying why, and the first
    plays on."""
    with http_server("atari", "--game", "pong", "--web", "--max-episodes-per-client", "1") as url:
        base = url.removesuffix("/mcp")
        one = pages.open(f"{base}/web/?realtime=0")
        check(one.inner_text("#stat-status") == "running")
        two = pages.context.new_page()
        two.goto(f"{base}/web/?realtime=0")
        two.wait_for_function(
            "() => document.getElementById('play-error').textContent.includes("
            "'max_episodes_per_client=1')"
        )
        one.keyboard.press("Space")
        wait_step(one, 1)
        with urllib.request.urlopen(f"{base}/healthz", timeout=30) as health:
            check(json.load(health)["episodes"] == 1)
        two.close()
        one.close()


def test_reset_options_are_a_form_whose_values_reach_reset(pages: Pages) -> None:
    """The spec's per-episode options (its ``options``: echo's ``greeting``) become fields
    of the reset form, and what is typed there is sent with ``reset``."""
    with http_server("echo", "--web") as url:
        page = pages.open(f"{url.removesuffix('/mcp')}/web/?realtime=0")
        field = "#reset-options input[name='greeting']"
        page.wait_for_selector(field)
        page.fill(field, "hello from the form")

        def resets(request: Any) -> bool:
            body = request.post_data or ""
            return '"reset"' in body and "greeting" in body

        with page.expect_request(resets) as sent:
            page.click("#reset-button")
        arguments = json.loads(sent.value.post_data)["params"]["arguments"]
        check(arguments["options"] == {"greeting": "hello from the form"}, arguments)
        page.wait_for_function("() => document.getElementById('stat-step').textContent === '0'")
        check(page.inner_text("#play-error") == "", page.inner_text("#play-error"))
        page.close()

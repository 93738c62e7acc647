"""Our MCP App (the game view) in a real MCP Apps host, in Debian's Chromium.

The host page (``tests/web/apps_host/``) is built on ``@modelcontextprotocol/ext-apps``'
host side (``AppBridge`` over ``PostMessageTransport``, bundled by esbuild from npm at
set-up: ``scripts/ensure_apps_host.sh``); its MCP connection is the stock ``mcp`` SDK
client announcing the UI extension to ``openenv-mcp serve ENV --profile agent --stdio``
(``apps_host/host.py``). As a chat client does, it calls ``reset``, reads the tool's
``_meta.ui.resourceUri``, renders that resource in a sandboxed iframe under the CSP the
resource declares, pushes the call's input and result to the view, forwards the view's
``tools/call`` to the server, and sizes the iframe as the view asks.

``OPENENV_MCP_SHOTS=DIR`` keeps a screenshot of each game in the host as ``DIR/NAME.png``.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.servers import CLI, ROOT, ensure_installed, free_port, stop
from tests.web.conftest import Pages, check

pytestmark = pytest.mark.integration

HOST = [sys.executable, "-m", "tests.web.apps_host.host"]
#: The tools whose calls are moves: a click on one of the view's action buttons makes one.
MOVES = {"step", "noop", "fire", "right", "left", "right_fire", "left_fire"}


@pytest.fixture(scope="session")
def apps_host_bundle() -> Path:
    out = ensure_installed("ensure_apps_host.sh", "the MCP Apps test host (ext-apps from npm)")
    values = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    return Path(values["APPS_HOST_BUNDLE"])


@contextlib.contextmanager
def apps_host(bundle: Path, env: str, *options: str, timeout: float = 120.0) -> Iterator[str]:
    """The host's server, connected over stdio to ``openenv-mcp serve ENV OPTIONS``; yields
    its page's URL."""
    server = [*CLI, "serve", env, "--stdio", "--log-level", "WARNING", *options]
    proc = subprocess.Popen(
        [*HOST, "--bundle", str(bundle), "--", *server],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    stderr: list[bytes] = []
    drain = threading.Thread(target=lambda: stderr.extend(proc.stderr or []), daemon=True)
    drain.start()
    line: list[bytes] = []
    reader = threading.Thread(target=lambda: line.append(proc.stdout.readline()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    reader.join(timeout)
    try:
        if not line or not line[0].startswith(b"HOST="):
            stop(proc)
            drain.join(5)
            raise RuntimeError(
                f"the apps host did not start within {timeout}s: "
                f"{b''.join(stderr).decode(errors='replace')[-3000:]}"
            )
        yield line[0].decode().strip().removeprefix("HOST=")
    finally:
        stop(proc)


def server_calls(url: str) -> list[dict[str, Any]]:
    """Every call the host forwarded to the server so far, in order."""
    with urllib.request.urlopen(url + "calls", timeout=30) as response:
        calls: list[dict[str, Any]] = json.load(response)
    return calls


def page_url(url: str, tool: str = "reset", arguments: dict[str, Any] | None = None) -> str:
    query = {"tool": tool, "args": json.dumps(arguments if arguments is not None else {"seed": 0})}
    return f"{url}?{urllib.parse.urlencode(query)}"


def shot(page: Any, name: str) -> None:
    """A screenshot of the host page as ``$OPENENV_MCP_SHOTS/NAME.png``, where that is set."""
    where = os.environ.get("OPENENV_MCP_SHOTS")
    if where:
        Path(where).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(where) / f"{name}.png"), full_page=True)


def open_host(pages: Pages, url: str) -> Any:
    """The host page, as ``Pages.open`` opens one (its console errors fail the test), with
    a wait for the view's first result long enough for a busy machine's first reset."""
    page = pages.context.new_page()
    page.on(
        "console",
        lambda m: pages.errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None,
    )
    page.on("pageerror", lambda e: pages.errors.append(f"uncaught: {e}"))
    page.goto(url)
    page.wait_for_function(
        "document.body.dataset.ready === '1' || (window.appsHost && window.appsHost.error)",
        timeout=120_000,
    )
    error = page.evaluate("window.appsHost.error")
    assert error is None, f"the host page failed: {error}"
    return page


def view_of(page: Any) -> Any:
    """The view's frame inside the host's iframe."""
    frame = page.wait_for_selector("iframe#app", timeout=30_000).content_frame()
    assert frame is not None
    return frame


#: The view's frame is a PNG the browser decoded (natural size > 0).
FRAME_SHOWN = """() => {
  const img = document.getElementById("frame");
  return img !== null && img.src.startsWith("data:image/png")
    && img.complete && img.naturalWidth > 0 && img.naturalHeight > 0;
}"""
#: A new frame (another PNG) and the step counter one past ``[src, step]``.
STEPPED = """([src, step]) => {
  const img = document.getElementById("frame");
  const shown = (document.getElementById("step").textContent.match(/\\d+/) || ["-1"])[0];
  return img.src !== src && parseInt(shown) === step + 1 && img.complete && img.naturalWidth > 0;
}"""


def step_number(view: Any) -> int:
    digits = "".join(ch for ch in view.inner_text("#step") if ch.isdigit())
    assert digits, f"#step shows no number: {view.inner_text('#step')!r}"
    return int(digits)


def iframe_fits(page: Any) -> None:
    """The view told the host its size after the result came, and the host's iframe took
    the height it asked for (away from the page's 150 px before any)."""
    page.wait_for_function(
        "window.appsHost.sizes.length > window.appsHost.sizesAtResult", timeout=30_000
    )
    sizes = page.evaluate("window.appsHost.sizes")
    heights = [s["height"] for s in sizes if s.get("height")]
    check(heights, f"the view sent no size-changed with a height: {sizes}")
    css = page.evaluate("document.getElementById('app').style.height")
    check(css == f"{math.ceil(heights[-1])}px", f"iframe height {css!r}, last asked {heights[-1]}")
    check(heights[-1] > 150, f"the view asked for {heights[-1]} px: it draws more than that")


def one_move(url: str, page: Any, view: Any, button: str) -> dict[str, Any]:
    """Click ``button`` in the view; wait for its new frame and step; return the one move
    it made (a second move from the same click fails)."""
    src, step = view.get_attribute("#frame", "src"), step_number(view)
    before = len(server_calls(url))
    seen_by_page = len(page.evaluate("window.appsHost.serverCalls"))
    view.click(button)
    view.wait_for_function(STEPPED, arg=[src, step], timeout=60_000)
    # A quiet second: a doubled handler's second call would have been sent by now.
    page.wait_for_timeout(1000)
    after = server_calls(url)[before:]
    moves = [c for c in after if c["method"] == "tools/call" and c["params"]["name"] in MOVES]
    check(len(moves) == 1, f"one click on {button} made {len(moves)} moves: {after}")
    # It went through the host (the view's tools/call over the bridge), not around it.
    through = page.evaluate("window.appsHost.serverCalls")[seen_by_page:]
    check(
        [c["from"] for c in through if c["params"].get("name") in MOVES] == ["view"], str(through)
    )
    check(view.get_attribute("#frame", "src") != src)
    check(step_number(view) == step + 1)
    move: dict[str, Any] = moves[0]["params"]
    return move


def test_pong_first_frame_one_step_per_click_and_the_view_sizes_itself(
    pages: Pages, apps_host_bundle: Path
) -> None:
    with apps_host(apps_host_bundle, "atari", "--game", "pong", "--profile", "agent") as url:
        page = open_host(pages, page_url(url))
        host = page.evaluate("window.appsHost")
        check(
            [c["method"] for c in host["serverCalls"]][:3]
            == ["tools/list", "tools/call", "resources/read"],
            str(host["serverCalls"]),
        )
        check(host["viewInfo"].get("name"), f"the view named itself: {host['viewInfo']}")
        view = view_of(page)

        # The first frame, drawn from the reset result the host pushed.
        view.wait_for_function(FRAME_SHOWN, timeout=30_000)
        iframe_fits(page)
        shot(page, "app-pong")

        move = one_move(url, page, view, "button[data-action='FIRE']")
        check(
            move["name"] == "fire"
            or (move["name"] == "step" and str(move["arguments"].get("action")).upper() == "FIRE"),
            f"the FIRE button called {move}",
        )
        iframe_fits(page)
        shot(page, "app-pong-after-fire")


def test_chess_board_renders_and_a_move_button_plays_it(
    pages: Pages, apps_host_bundle: Path
) -> None:
    with apps_host(apps_host_bundle, "chess", "--profile", "agent") as url:
        page = open_host(pages, page_url(url))
        view = view_of(page)
        view.wait_for_function(FRAME_SHOWN, timeout=30_000)
        width, height = view.evaluate(
            "(() => { const i = document.getElementById('frame');"
            " return [i.naturalWidth, i.naturalHeight]; })()"
        )
        check(width > 100 and height > 100, f"the board is {width}x{height}")
        iframe_fits(page)
        shot(page, "app-chess")

        e2e4 = "button[data-action='e2e4']"
        check(view.query_selector(e2e4) is not None, "the view offers e2e4 as a move")
        move = one_move(url, page, view, e2e4)
        check(move["name"] == "step" and move["arguments"].get("action") == "e2e4", str(move))
        iframe_fits(page)
        shot(page, "app-chess-after-e2e4")


def post(
    url: str, body: bytes, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(url + "mcp", data=body, method="POST")
    for key, value in (
        headers if headers is not None else {"content-type": "application/json"}
    ).items():
        request.add_header(key, value)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as exc:
        return exc.code, json.load(exc)


def test_the_host_forwards_only_what_a_host_may_and_says_why_not(apps_host_bundle: Path) -> None:
    # The forwarder is a surface of its own: a stranger's requests get clear errors, and
    # what it forwards reaches the real server through a client announcing the extension.
    with apps_host(apps_host_bundle, "atari", "--game", "pong", "--profile", "agent") as url:
        for body, status, words in [
            (b"{not json", 400, "expected a JSON object"),
            (b"[1, 2]", 400, "got list"),
            (b'{"method": "tools/delete"}', 400, "method must be one of tools/list, tools/call"),
            (b'{"method": "tools/call", "params": []}', 400, "params must be an object"),
            (b'{"method": "tools/call", "params": {"arguments": {}}}', 400, "params.name"),
            (
                b'{"method": "tools/call", "params": {"name": "step", "arguments": 7}}',
                400,
                "arguments must be an object, got int",
            ),
            (b'{"method": "resources/read", "params": {"uri": ""}}', 400, "params.uri"),
            (b"{" + b" " * (1 << 20) + b"}", 413, "body over"),
        ]:
            got, answer = post(url, body)
            check(
                (got, words in answer.get("error", "")) == (status, True),
                f"{body[:60]!r}: {got} {answer}",
            )
        # Only the host's own page may drive it.
        tools = b'{"method": "tools/list"}'
        for headers, status, words in [
            ({"content-type": "text/plain"}, 415, "expected content-type application/json"),
            ({}, 415, "got 'application/x-www-form-urlencoded'"),  # urllib's default
            (
                {"content-type": "application/json", "origin": "http://127.0.0.1:1"},
                403,
                "another origin",
            ),
        ]:
            got, answer = post(url, tools, headers)
            check((got, words in answer.get("error", "")) == (status, True), f"{headers}: {answer}")
        own = url.rstrip("/")
        got, _ = post(url, tools, {"content-type": "application/json", "origin": own})
        check(got == 200, f"the host's own page: {got}")
        # The server's own refusal comes back as the server said it.
        got, answer = post(url, b'{"method": "resources/read", "params": {"uri": "ui://nope/x"}}')
        check(got == 502 and "ui://nope/x" in answer["error"], f"{got} {answer}")
        got, answer = post(
            url,
            json.dumps(
                {
                    "method": "tools/call",
                    "params": {"name": "step", "arguments": {"action": "JUMP"}},
                }
            ).encode(),
        )
        check(got == 200 and answer["result"].get("isError") is True, str(answer)[:500])
        # The view is listed and read as an MCP App for this client (it announced the extension).
        got, answer = post(url, b'{"method": "tools/list"}')
        uris = {
            t["name"]: t.get("_meta", {}).get("ui", {}).get("resourceUri")
            for t in answer["result"]["tools"]
        }
        check(uris["reset"] and uris["reset"] == uris["step"] == uris["fire"], str(uris))
        got, answer = post(
            url, json.dumps({"method": "resources/read", "params": {"uri": uris["reset"]}}).encode()
        )
        content = answer["result"]["contents"][0]
        check(
            content["mimeType"] == "text/html;profile=mcp-app"
            and "<html" in content["text"].lower(),
            str(content)[:300],
        )
        methods = [c["method"] for c in server_calls(url)]
        check(
            methods
            == ["tools/list", "resources/read", "tools/call", "tools/list", "resources/read"],
            str(methods),
        )


# -- the model's own calls, the host's theme, a text env, replay -----------------------------

#: The view shows ``[src, step]``: that frame (a PNG the browser decoded) and that step.
SHOWS = """([src, step]) => {
  const img = document.getElementById("frame");
  const shown = (document.getElementById("step").textContent.match(/\\d+/) || ["-1"])[0];
  return img.src === src && parseInt(shown) === step && img.complete && img.naturalWidth > 0;
}"""


def agent_call(page: Any, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The model's own ``name`` call, made by the host (not the view), its input and result
    pushed to the view as a chat client pushes them; the result as the wire carried it."""
    result: dict[str, Any] = page.evaluate(
        "([name, args]) => window.appsHostAgent(name, args)", [name, arguments]
    )
    return result


def view_calls(page: Any) -> list[dict[str, Any]]:
    """The server calls the view made (through the bridge), in order."""
    calls: list[dict[str, Any]] = page.evaluate(
        "window.appsHost.serverCalls.filter((c) => c.from === 'view')"
    )
    return calls


def model_of(result: dict[str, Any]) -> dict[str, Any]:
    model = result.get("_meta", {}).get("openenv-mcp/view")
    assert isinstance(model, dict), f"no view model in {str(result)[:500]}"
    return model


def text_of(result: dict[str, Any]) -> str:
    return "\n".join(c["text"] for c in result["content"] if c["type"] == "text")


def test_the_agents_own_moves_show_up_live_without_a_call_from_the_view(
    pages: Pages, apps_host_bundle: Path
) -> None:
    with apps_host(apps_host_bundle, "atari", "--game", "pong", "--profile", "agent") as url:
        page = open_host(pages, page_url(url))
        view = view_of(page)
        view.wait_for_function(FRAME_SHOWN, timeout=30_000)
        before = len(server_calls(url))
        frames = int(view.get_attribute("#frame", "data-frames") or 0)
        moves: list[tuple[str, dict[str, Any]]] = [
            ("step", {"action": "RIGHT", "repeat": 4}),
            ("fire", {}),
            ("left", {}),
            ("step", {"action": "NOOP", "repeat": 3}),
        ]
        steps = []
        for number, (name, arguments) in enumerate(moves, 1):
            result = agent_call(page, name, arguments)
            check(not result.get("isError"), f"{name} {arguments}: {text_of(result)}")
            model = model_of(result)
            image = next(c for c in result["content"] if c["type"] == "image")
            src = f"data:{image['mimeType']};base64,{image['data']}"
            # The view follows each: the frame and step counter of that very result.
            view.wait_for_function(SHOWS, arg=[src, model["step"]], timeout=60_000)
            check(
                int(view.get_attribute("#frame", "data-frames") or 0) == frames + number,
                f"after {number} pushed results the view drew "
                f"{view.get_attribute('#frame', 'data-frames')} frames (from {frames})",
            )
            check(text_of(result) in view.inner_text("#summary"), view.inner_text("#summary"))
            steps.append(model["step"])
        check(steps == [4, 5, 6, 9], f"the moves' steps: {steps}")
        # A quiet second: a view answering a pushed result with a call would have made it.
        page.wait_for_timeout(1000)
        forwarded = server_calls(url)[before:]
        check(
            [(c["method"], c["params"]["name"], c["params"]["arguments"]) for c in forwarded]
            == [("tools/call", name, arguments) for name, arguments in moves],
            f"the server got other calls than the agent's: {forwarded}",
        )
        check(view_calls(page) == [], f"the view called the server: {view_calls(page)}")
        # The view's buttons still act on the episode the agent played.
        move = one_move(url, page, view, "button[data-action='RIGHT']")
        check(move["name"] == "step" and move["arguments"]["action"] == "RIGHT", str(move))
        check(step_number(view) == 10, f"the view's move made step {step_number(view)}, not 10")


#: The view's colours as the page draws them.
COLOURS = """() => {
  const root = document.documentElement, app = getComputedStyle(document.getElementById("app"));
  return { theme: root.dataset.theme || null, scheme: getComputedStyle(root).colorScheme,
           background: app.backgroundColor, color: app.color };
}"""


def test_the_view_follows_the_hosts_theme_and_colours(pages: Pages, apps_host_bundle: Path) -> None:
    with apps_host(apps_host_bundle, "echo", "--profile", "agent") as url:
        page = open_host(pages, page_url(url))
        view = view_of(page)
        view.wait_for_function("() => document.documentElement.dataset.theme === 'light'")
        light = view.evaluate(COLOURS)
        check(
            light
            == {
                "theme": "light",
                "scheme": "light",
                "background": "rgb(255, 255, 255)",
                "color": "rgb(29, 35, 48)",
            },
            f"the view in the host's light theme: {light}",
        )
        # The host turns dark (ui/notifications/host-context-changed, theme only).
        page.evaluate("window.appsHostContext({theme: 'dark'})")
        view.wait_for_function("() => document.documentElement.dataset.theme === 'dark'")
        dark = view.evaluate(COLOURS)
        check(
            dark
            == {
                "theme": "dark",
                "scheme": "dark",
                "background": "rgb(17, 20, 24)",
                "color": "rgb(230, 230, 230)",
            },
            f"the view in the host's dark theme: {dark}",
        )
        shot(page, "app-echo-dark")
        # The host's own colours (its style variables) win over the view's.
        page.evaluate(
            "window.appsHostContext({styles: {variables: {"
            "'--color-background-primary': 'rgb(32, 33, 36)',"
            "'--color-text-primary': 'rgb(250, 240, 200)'}}})"
        )
        view.wait_for_function(
            "() => getComputedStyle(document.getElementById('app')).backgroundColor"
            " === 'rgb(32, 33, 36)'"
        )
        check(view.evaluate(COLOURS)["color"] == "rgb(250, 240, 200)", str(view.evaluate(COLOURS)))
        # A theme the spec does not name changes nothing; back to light changes it back.
        page.evaluate("window.appsHostContext({theme: 'sepia'})")
        page.evaluate("window.appsHostContext({theme: 'light'})")
        view.wait_for_function("() => document.documentElement.dataset.theme === 'light'")
        check(view.evaluate(COLOURS)["scheme"] == "light", str(view.evaluate(COLOURS)))
        check(view_calls(page) == [], f"a theme change made the view call: {view_calls(page)}")


def transcript(view: Any) -> list[str]:
    items: list[str] = view.evaluate(
        "[...document.querySelectorAll('#transcript li')].map((li) => li.textContent)"
    )
    return items


def test_a_text_env_gets_a_transcript_of_every_answer_in_order(
    pages: Pages, apps_host_bundle: Path
) -> None:
    with apps_host(apps_host_bundle, "echo", "--profile", "agent") as url:
        page = open_host(pages, page_url(url))
        view = view_of(page)
        view.wait_for_function("() => document.querySelectorAll('#transcript li').length === 1")
        reset = page.evaluate("window.appsHost.toolResult")
        expected = [f"reset: {text_of(reset)}"]
        for said in ("hello", "a longer line, with commas"):
            result = agent_call(page, "step", {"action": said})
            check(f"({said})" in text_of(result), text_of(result))
            expected.append(f"step: {text_of(result)}")
            view.wait_for_function(
                "(n) => document.querySelectorAll('#transcript li').length === n",
                arg=len(expected),
            )
        check(transcript(view) == expected, f"transcript {transcript(view)} != {expected}")
        check(view.is_hidden("#frame") and view.is_hidden("#board"), "a text env drew a frame")
        check(step_number(view) == 2, view.inner_text("#step"))
        check(view_calls(page) == [], f"the view called the server: {view_calls(page)}")
        # A person takes over: the action typed in the view is one step through the host.
        check(view.is_visible("#say"), "a text env offers no field to type an action in")
        before = len(server_calls(url))
        view.fill("#say-text", "mine now")
        view.click("#say button")
        view.wait_for_function(
            "(n) => document.querySelectorAll('#transcript li').length === n",
            arg=len(expected) + 1,
            timeout=60_000,
        )
        page.wait_for_timeout(1000)
        after = server_calls(url)[before:]
        episode = model_of(reset)["episode_id"]
        check(
            [c["params"] for c in after]
            == [{"name": "step", "arguments": {"action": "mine now", "episode_id": episode}}],
            f"typing one action made {after}",
        )
        check(transcript(view)[-1].startswith("step: Step 3 (mine now)"), str(transcript(view)[-1]))
        check(step_number(view) == 3, view.inner_text("#step"))
        # Enter in the field sends it too, once.
        view.fill("#say-text", "and this")
        view.press("#say-text", "Enter")
        view.wait_for_function(
            "(n) => document.querySelectorAll('#transcript li').length === n",
            arg=len(expected) + 2,
            timeout=60_000,
        )
        page.wait_for_timeout(1000)
        steps = [c for c in server_calls(url)[before:] if c["params"]["name"] == "step"]
        check(len(steps) == 2, f"two typed actions made {steps}")
        check(transcript(view)[-1].startswith("step: Step 4 (and this)"), str(transcript(view)[-1]))
        check(view.input_value("#say-text") == "", "the field kept what was sent")
        shot(page, "app-echo-transcript")


#: Every step number and frame the view shows, from here on (a replay at 15 steps a second
#: is too quick to sample from outside).
WATCH_STEPS = """() => {
  window.shownSteps = [];
  const step = document.getElementById("step"), frame = document.getElementById("frame");
  new MutationObserver(() => window.shownSteps.push([step.textContent, frame.src]))
    .observe(step, { childList: true, characterData: true, subtree: true });
}"""


def test_a_recorded_episode_replays_in_the_same_view(
    pages: Pages, apps_host_bundle: Path, tmp_path: Path
) -> None:
    record = tmp_path / "recordings"
    with apps_host(
        apps_host_bundle,
        "atari",
        "--game",
        "pong",
        "--profile",
        "agent",
        "--record",
        str(record),
        "--max-episode-steps",
        "10",
    ) as url:
        page = open_host(pages, page_url(url))
        view = view_of(page)
        view.wait_for_function(FRAME_SHOWN, timeout=30_000)
        recording = model_of(page.evaluate("window.appsHost.toolResult")).get("recording")
        check(isinstance(recording, str) and recording.endswith(".jsonl"), str(recording))
        # The model plays the short episode to its end (the paddle moving: frames differ).
        result = agent_call(page, "step", {"action": "RIGHT", "repeat": 10})
        check(model_of(result)["done"] and model_of(result)["step"] == 10, text_of(result))
        view.wait_for_function("() => document.getElementById('step').textContent === '10'")
        check(view.is_visible("#replay-open"), "the view offers no replay of a recorded episode")

        before = len(server_calls(url))
        view.evaluate(WATCH_STEPS)
        view.click("#replay-open")
        view.wait_for_function(
            "() => document.getElementById('replay-position').textContent === '10 / 10'",
            timeout=60_000,
        )
        calls = server_calls(url)[before:]
        check(
            [c["params"] for c in calls]
            == [{"name": "view_replay", "arguments": {"recording": recording}}],
            f"opening the replay made {calls}",
        )
        check(view_calls(page)[-1]["params"]["name"] == "view_replay", str(view_calls(page)))
        check(view.inner_text("#title").startswith("Replay: "), view.inner_text("#title"))
        shown = view.evaluate("window.shownSteps")
        numbers = [int(text) for text, _ in shown]
        check(numbers == list(range(11)), f"the replay showed steps {numbers}")
        sources = [src for _, src in shown]
        check(all(s.startswith("data:image/png") for s in sources), "a replay step had no frame")
        check(len(set(sources)) > 3, f"the replay showed {len(set(sources))} distinct frames")
        # It stops at its end.
        view.wait_for_function(
            "() => document.getElementById('replay-play').textContent === 'Play'", timeout=30_000
        )
        shot(page, "app-pong-replay")

        # Play again from the end: it starts over, from the server's answer already held.
        view.evaluate("window.shownSteps = []")
        view.click("#replay-play")
        view.wait_for_function(
            "() => document.getElementById('replay-play').textContent === 'Play'"
            " && window.shownSteps.length > 0",
            timeout=60_000,
        )
        again = [int(text) for text, _ in view.evaluate("window.shownSteps")]
        check(again == list(range(11)), f"played again, the replay showed steps {again}")
        check(len(server_calls(url)) == before + 1, "playing again called the server")

        # A live result ends the replay: the view is the game's again.
        result = agent_call(page, "reset", {"seed": 1})
        view.wait_for_function("() => document.getElementById('replay').hidden", timeout=60_000)
        check(step_number(view) == 0 and view.is_visible("#frame"), view.inner_text("#step"))
        check(not view.inner_text("#title").startswith("Replay"), view.inner_text("#title"))


# -- the MCP Inspector 2.x's Apps tab -----------------------------------------------------

#: What the Inspector's page loads from outside loopback: only its fonts' stylesheet
#: (clients/web/dist/index.html links fonts.googleapis.com); answered empty here, offline.
INSPECTOR_OUTSIDE = ("https://fonts.googleapis.com/",)
#: The one console error the Inspector's Apps tab gives every view that carries its own CSP
#: ``<meta>``: the Inspector wraps the view's whole document in the ``<body>`` of its own
#: (``fpe`` in clients/web/dist/assets/index-*.js), where a CSP ``<meta>`` is ignored. The
#: Inspector's own CSP (first in its ``<head>``) is the one in force.
INSPECTOR_KNOWN_ERROR = "was delivered via a <meta> element outside the document's <head>"


@pytest.fixture(scope="session")
def inspector_launcher() -> str:
    out = ensure_installed("ensure_node_tools.sh", "Node 22 / the MCP Inspector (from npm)")
    values = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    return values["INSPECTOR"]


@contextlib.contextmanager
def inspector_web(launcher: str, home: Path, *server: str, timeout: float = 120.0) -> Iterator[str]:
    """``mcp-inspector --web`` (headless: no browser opened) with ``server`` as its ad-hoc
    stdio server; yields its page's URL (with its API token)."""
    env = {
        **os.environ,
        "HOME": str(home),
        "CLIENT_PORT": str(free_port()),
        "MCP_SANDBOX_PORT": "0",
        "MCP_APP_ORIGIN_PORT": "0",
        "MCP_AUTO_OPEN_ENABLED": "false",
        "MCP_INSPECTOR_SECRET_STORE": "memory",
    }
    command = [launcher, "--web", "--protocol-era", "modern", "--cwd", str(ROOT), *server]
    proc = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        cwd=ROOT,
        start_new_session=True,  # its server is its child: stopped with it, as a group
    )
    seen: list[str] = []
    found = threading.Event()

    def read() -> None:
        for raw in proc.stdout or []:
            seen.append(raw.decode(errors="replace"))
            if "MCP_INSPECTOR_API_TOKEN=" in seen[-1]:
                found.set()

    threading.Thread(target=read, daemon=True).start()
    try:
        if not found.wait(timeout):
            raise RuntimeError(f"the Inspector did not start within {timeout}s: {''.join(seen)}")
        url = next(w for line in seen for w in line.split() if "MCP_INSPECTOR_API_TOKEN=" in w)
        yield url
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(15)


def test_inspector_apps_tab_opens_the_view_offline(
    browser: Any, inspector_launcher: str, tmp_path: Path
) -> None:
    server = [*CLI, "serve", "atari", "--game", "pong", "--profile", "agent", "--stdio"]
    with inspector_web(inspector_launcher, tmp_path, *server) as url:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        outside: list[str] = []
        errors: list[str] = []

        def offline(route: Any) -> None:
            if route.request.url.startswith(("http://127.0.0.1", "data:", "blob:")):
                route.continue_()
            else:
                outside.append(route.request.url)
                route.fulfill(status=200, body="", content_type="text/css")

        context.route("**/*", offline)
        try:
            page = context.new_page()
            page.on(
                "console",
                lambda m: errors.append(m.text[:500]) if m.type == "error" else None,
            )
            page.on("pageerror", lambda e: errors.append(f"uncaught: {e}"))
            page.goto(url)
            # Connect the ad-hoc server (the Inspector announces the UI extension).
            page.get_by_role("switch").first.check(force=True, timeout=60_000)
            page.get_by_text("Connected", exact=True).wait_for(timeout=60_000)
            page.get_by_role("button", name="Apps").or_(
                page.get_by_text("Apps", exact=True)
            ).first.click()
            page.get_by_text("MCP Apps (").wait_for(timeout=30_000)
            check("Reset" in page.inner_text("body"), "the Apps tab lists reset")
            page.get_by_text("Reset", exact=True).first.click()
            page.get_by_role("button", name="Open App").click(timeout=30_000)

            # The view: the Inspector's sandbox proxy (its own loopback origin) holds it in
            # an inner iframe of an opaque origin.
            proxy = page.wait_for_selector("iframe[src*='/sandbox']", timeout=60_000)
            proxy_frame = proxy.content_frame()
            assert proxy_frame is not None
            inner = proxy_frame.wait_for_selector("iframe", state="attached", timeout=60_000)
            view = inner.content_frame()
            assert view is not None
            view.wait_for_selector("#frame", state="attached", timeout=60_000)
            view.wait_for_function(FRAME_SHOWN, timeout=60_000)
            first = view.get_attribute("#frame", "src")
            step = step_number(view)
            shot(page, "inspector-pong")

            # A button in the view calls step through the Inspector.
            view.click("button[data-action='FIRE']")
            view.wait_for_function(STEPPED, arg=[first, step], timeout=60_000)
            shot(page, "inspector-pong-after-fire")

            check(
                all(u.startswith(INSPECTOR_OUTSIDE) for u in outside),
                f"loaded from outside: {outside}",
            )
            unexpected = [e for e in errors if INSPECTOR_KNOWN_ERROR not in e]
            check(unexpected == [], f"console errors in the Inspector: {unexpected}")
        finally:
            context.close()

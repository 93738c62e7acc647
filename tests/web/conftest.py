"""A real browser for the web page's tests: Debian's Chromium driven by Playwright.

``scripts/ensure_chromium.sh`` installs Chromium where it is missing (the test
set-up of a fresh machine and of CI); Playwright comes from PyPI with the test
extra and never downloads a browser of its own. A test skips only where
Chromium cannot be installed, and says why.

Every page a test opens fails it on a console error or an uncaught exception.
``OPENENV_MCP_SCREENSHOTS=DIR`` keeps the screenshots the tests take (the
README's images: ``OPENENV_MCP_SCREENSHOTS=docs ./dev test tests/web``).
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.figures import record_figure
from tests.servers import ROOT, ensure_installed

#: Chromium as root, headless, with nothing that reaches out to the network.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]

_counts = {"pages": 0, "checks": 0}


@pytest.fixture(scope="session")
def chromium() -> str:
    out = ensure_installed("ensure_chromium.sh", "Chromium (Debian's package)")
    return out.strip().rsplit("CHROMIUM=", 1)[-1]


@pytest.fixture(scope="module")
def browser(chromium: str) -> Iterator[Any]:
    # Module scope: Playwright's sync API holds an event loop in this thread while it
    # runs, so it must be gone before any async test of another module starts one.
    from playwright.sync_api import sync_playwright

    started = time.monotonic()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()
    record_figure(
        f"web page in Chromium: {_counts['pages']} pages opened, {_counts['checks']} checks, "
        f"{time.monotonic() - started:.0f} s of browser tests (Chromium's start included)"
    )


class Pages:
    """Pages of one test; each one's console errors fail the test."""

    def __init__(self, browser: Any) -> None:
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.errors: list[str] = []

    def open(self, url: str) -> Any:
        page = self.context.new_page()
        page.on(
            "console",
            lambda m: (
                self.errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None
            ),
        )
        page.on("pageerror", lambda e: self.errors.append(f"uncaught: {e}"))
        page.goto(url)
        page.wait_for_selector("body[data-ready='1']", timeout=30_000)
        _counts["pages"] += 1
        return page

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def pages(browser: Any) -> Iterator[Pages]:
    opened = Pages(browser)
    try:
        yield opened
    finally:
        opened.close()
    assert opened.errors == [], opened.errors


def check(condition: Any, what: str = "") -> None:
    """An assertion, counted for the figures."""
    _counts["checks"] += 1
    assert condition, what


def screenshot(page: Any, name: str) -> None:
    """Keep a screenshot of ``page`` as ``NAME.png`` in $OPENENV_MCP_SCREENSHOTS, if set."""
    where = os.environ.get("OPENENV_MCP_SCREENSHOTS")
    path = ROOT / ".pytest_cache" / "screenshots" / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path))
    if where:
        target = Path(where)
        if not target.is_absolute():
            target = ROOT / target
        target.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target / f"{name}.png")

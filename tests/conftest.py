from __future__ import annotations

import pytest

from tests.figures import FIGURES


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if FIGURES:
        terminalreporter.section("openenv-mcp figures")
        for line in FIGURES:
            terminalreporter.write_line(line)

"""Figures the reliability tests measure (load held, fuzz cases, memory, faults).

Tests add lines with :func:`record_figure`; ``conftest.py`` prints them in an
"openenv-mcp figures" section at the end of the run, so CI logs carry them.
They are reported, never asserted as times. Under pytest-xdist each worker
appends its lines to the one file the controller named (``FIGURES_ENV``), which
the controller prints.
"""

from __future__ import annotations

import os

#: The file every process of a run appends its figures to.
FIGURES_ENV = "OPENENV_MCP_TEST_FIGURES"


def record_figure(text: str) -> None:
    """Add a line to the figures section of the test summary."""
    path = os.environ.get(FIGURES_ENV)
    if path is None:  # outside a configured run (a test module run by hand)
        return
    with open(path, "a", encoding="utf-8") as f:  # one short append: whole lines
        f.write(text.replace("\n", " ") + "\n")

"""Figures the reliability tests measure (load held, fuzz cases, memory, faults).

Tests add lines with :func:`record_figure`; ``conftest.py`` prints them in an
"openenv-mcp figures" section at the end of the run, so CI logs carry them.
They are reported, never asserted as times.
"""

from __future__ import annotations

FIGURES: list[str] = []


def record_figure(text: str) -> None:
    """Add a line to the figures section of the test summary."""
    FIGURES.append(text)

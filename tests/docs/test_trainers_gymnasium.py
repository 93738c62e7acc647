"""docs/trainers-gymnasium.md: every python block runs as written, and says what it says."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.servers import ROOT

DOC = ROOT / "docs" / "trainers-gymnasium.md"


def blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), re.DOTALL)


#: What each block prints last, in order.
EXPECTED = [
    "MCPVectorEnv (2, 4)",
    "same episodes both ways",
    "(2, 84, 84, 1)",
    "(4, 84, 84)",
    "(8, 4, 84, 84) uint8",
]


def test_the_doc_has_the_blocks_this_test_runs() -> None:
    assert len(blocks()) == len(EXPECTED)


@pytest.mark.integration
@pytest.mark.parametrize("index", range(len(EXPECTED)))
def test_each_block_runs_as_written(index: int) -> None:
    done = subprocess.run(
        [sys.executable, "-c", blocks()[index]],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == EXPECTED[index]

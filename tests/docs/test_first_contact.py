"""docs/first-contact.md runs as written: each python block under a ``tested`` marker
runs in a fresh interpreter, as a user would paste it into a file."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.servers import ROOT

pytestmark = pytest.mark.integration

DOC = ROOT / "docs" / "first-contact.md"
MARKER = "<!-- tested: tests/docs/test_first_contact.py -->"


def blocks() -> list[str]:
    parts = DOC.read_text().split(MARKER)[1:]
    found = [re.search(r"```python\n(.*?)```", part, re.DOTALL) for part in parts]
    assert all(found), "each marker must sit right above a ```python block"
    return [m.group(1) for m in found if m]


def test_the_doc_has_tested_blocks() -> None:
    assert len(blocks()) >= 1


@pytest.mark.parametrize("index", range(len(blocks())))
def test_a_doc_block_runs_as_pasted(index: int, tmp_path: Path) -> None:
    script = tmp_path / "snippet.py"
    script.write_text(blocks()[index])
    # The venv's scripts on PATH, as an activated venv (or ./dev) has them.
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={**os.environ, "PATH": path},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip(), "a snippet shows what it did"

"""docs/trainers-data.md runs as written: every block, in order, in one scratch directory.

``python`` blocks run as scripts, ``sh`` blocks line by line (``openenv-mcp`` is this
checkout's CLI), and a ``text`` block is what the block before it prints.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.servers import CLI, ROOT

DOC = ROOT / "docs" / "trainers-data.md"
#: Each block starts a server or two, or a trainer's imports; a hang is forever.
BLOCK_BOUND = 300


def blocks() -> list[tuple[str, str]]:
    return re.findall(r"```(\w+)\n(.*?)```", DOC.read_text(), re.DOTALL)


def test_the_page_has_the_blocks_this_test_runs() -> None:
    assert [kind for kind, _ in blocks()] == ["python", "sh", "python", "python", "python", "text"]


@pytest.mark.integration
def test_every_block_runs_as_written(tmp_path: Path) -> None:
    (tmp_path / "harness_examples").symlink_to(ROOT / "harness_examples")
    env = {**os.environ, "MINARI_DATASETS_PATH": str(tmp_path / "minari")}

    def run(argv: list[str]) -> str:
        done = subprocess.run(
            argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=BLOCK_BOUND
        )
        assert done.returncode == 0, (
            f"{shlex.join(argv)}\n{done.stdout[-2000:]}{done.stderr[-3000:]}"
        )
        return done.stdout

    printed, outputs = "", []
    for kind, body in blocks():
        if kind == "python":
            printed = run([sys.executable, "-c", body])
        elif kind == "sh":
            for line in body.strip().splitlines():
                words = shlex.split(line)
                assert words[0] == "openenv-mcp", line
                printed = run([*CLI, *words[1:]])
        else:
            assert printed == body, printed
        outputs.append(printed)
    assert outputs[0] == "done, without env.close()\n"
    assert "exported 2 episodes (200 steps)" in outputs[1] and "left out" not in outputs[1]
    assert re.fullmatch(r"replayed 100 steps of demo/pong-v0 exactly\n", outputs[2])
    assert outputs[3].startswith("3 episodes,")

"""docs/evals.md's figures are what `eval` prints: its CartPole command run as written,
its table word for word, the random policy's and the comparison's figures, and the Atari
game's human-normalized score."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.servers import ROOT

pytestmark = pytest.mark.integration

PAGE = (ROOT / "docs" / "evals.md").read_text()


def eval_cli(*args: str, cwd: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "openenv_mcp", "eval", *args],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=cwd,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_the_documented_eval_prints_the_documented_table(tmp_path: Path) -> None:
    command = re.search(r"```bash\n(openenv-mcp eval .*?)\n```", PAGE, re.DOTALL)
    assert command is not None
    argv = shlex.split(command.group(1).replace("\\\n", " "))[2:]
    policy = argv.index("--policy") + 1
    argv[policy] = str(ROOT / argv[policy])  # the page runs from the repository's root
    table = eval_cli(*argv, cwd=tmp_path)
    shown = re.search(r"```\n(pass@1.*?)```", PAGE, re.DOTALL)
    assert shown is not None and table == shown.group(1)

    eval_cli(*argv[: policy - 1], "--output", "random.json", cwd=tmp_path)  # policy random
    scores = json.loads((tmp_path / "random.json").read_text())["scores"]
    assert scores["pass@4"] == 0.0 and f"mean reward {scores['mean_reward']:.1f}" in PAGE
    compared = eval_cli("--compare", "random.json", "cart-noisy.json", cwd=tmp_path)
    fixed = re.search(r"fixed \((\d+)\)", compared)
    assert fixed is not None and f"names the {fixed.group(1)} tasks" in PAGE


def test_the_atari_figure_is_what_eval_reports(tmp_path: Path) -> None:
    eval_cli("atari", "--game", "breakout", "--limit", "10", "--output", "b.json", cwd=tmp_path)
    scores = json.loads((tmp_path / "b.json").read_text())["scores"]
    assert f"mean reward {scores['mean_reward']:g}" in PAGE
    assert f"`mean human normalized {scores['mean_human_normalized']:.3f}`" in PAGE

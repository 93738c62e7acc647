"""``openenv-mcp bench --vs openenv`` runs every side and reports each figure (no test
asserts a time or a ratio: the figures are the README's, from a run of the command);
``bench openenv``, its first spelling, still runs it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.servers import ROOT

pytestmark = pytest.mark.integration

BENCH = [sys.executable, "-m", "openenv_mcp.cli", "bench"]


@pytest.mark.parametrize("spelling", [["--vs", "openenv"], ["openenv"]])
def test_bench_vs_openenv_reports_every_side(spelling: list[str]) -> None:
    argv = [*BENCH, *spelling, "--steps", "20", "--repeats", "1", "--warmup", "1", "--json"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert result["steps"] == 20 and result["atari_steps"] == 10 and result["repeats"] == 1
    assert len(result["sides"]) == 6 and all(v > 0 for v in result["sides"].values())
    assert len(result["ratios"]) == 4 and all(v > 0 for v in result["ratios"].values())
    renamed = "`bench openenv` is now `bench --vs openenv`"
    assert (renamed in proc.stderr) == (spelling == ["openenv"])


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["atari", "--vs", "openenv"], "--vs openenv runs its own workloads"),
        (["--vs", "openenv", "--game", "pong"], "takes no ENV or options"),
        ([], "bench needs ENV"),
    ],
)
def test_bench_vs_openenv_takes_no_env_and_bench_needs_one_otherwise(
    argv: list[str], says: str
) -> None:
    proc = subprocess.run([*BENCH, *argv], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 2 and says in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""

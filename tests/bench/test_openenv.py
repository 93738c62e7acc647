"""``openenv-mcp bench openenv`` runs every side and reports each figure (no test
asserts a time or a ratio: the figures are the README's, from a run of the command)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.servers import ROOT

pytestmark = pytest.mark.integration


def test_bench_openenv_reports_every_side() -> None:
    argv = [sys.executable, "-m", "openenv_mcp.cli", "bench", "openenv"]
    argv += ["--steps", "20", "--repeats", "1", "--warmup", "1", "--json"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert result["steps"] == 20 and result["atari_steps"] == 10 and result["repeats"] == 1
    assert len(result["sides"]) == 6 and all(v > 0 for v in result["sides"].values())
    assert len(result["ratios"]) == 4 and all(v > 0 for v in result["ratios"].values())

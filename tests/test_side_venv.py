"""The side venv the test set-up builds (scripts/setup_venv.py, ``SIDE``): OpenEnv 0.10
and the ``openreward`` client, pinned, beside our stack and not in it; built once (a
second set-up finds its stamp and installs nothing), its requirements consistent."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.servers import ROOT
from tests.side_venv import SIDE, run_side, side_python

pytestmark = pytest.mark.integration


def test_the_side_venv_holds_its_pins_and_ours_does_not() -> None:
    python = side_python()
    stamp = python.parent.parent / ".openenv-mcp" / "side"
    before = stamp.stat().st_mtime_ns
    again = subprocess.run(
        [sys.executable, str(ROOT / "scripts/setup_venv.py"), "--venv", sys.prefix, "--side", SIDE],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert again.stdout.strip() == str(python)
    assert "setting up" not in again.stderr  # stamped: nothing installed again
    assert stamp.stat().st_mtime_ns == before
    assert stamp.read_text().split()[:2] == ["openenv==0.10.0", "openreward==0.1.167"]
    versions = run_side(
        "import json, importlib.metadata as m; print(json.dumps("
        "{p: m.version(p) for p in ('openenv', 'openreward', 'fastmcp', 'sse-starlette')}))"
    )
    assert versions["openenv"] == "0.10.0" and versions["openreward"] == "0.1.167"
    assert versions["fastmcp"].startswith("3.") and versions["sse-starlette"] == "2.3.6"
    check = subprocess.run(
        [str(python), "-m", "pip", "check"], capture_output=True, text=True, timeout=120
    )
    assert check.returncode == 0, check.stdout
    ours = subprocess.run(
        [
            sys.executable,
            "-c",
            "import importlib.util, json; print(json.dumps("
            "importlib.util.find_spec('openreward') is None))",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert json.loads(ours.stdout) is True  # it would break mcp 2's sse-starlette>=3

"""The README and docs/ pages: every link resolves, the front door stays a front door,
and every block marked as tested runs as written."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.servers import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: The line above a block that this module runs, and how.
RUNS = "<!-- tested: tests/docs/test_pages.py runs this block -->"
CHECKS = "<!-- tested: tests/docs/test_pages.py runs this block through check_env -->"
_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def blocks(marker: str) -> list[tuple[Path, str]]:
    """Every python block right below ``marker``, with its page."""
    found = []
    for page in PAGES:
        for tail in page.read_text().split(marker)[1:]:
            block = re.match(r"\s*```python\n(.*?)```", tail, re.DOTALL)
            assert block, f"{page.name}: the marker must sit right above a ```python block"
            found.append((page, block.group(1)))
    return found


def test_every_local_link_resolves() -> None:
    for page in PAGES:
        for target in _LINK.findall(page.read_text()):
            if "://" in target or target.startswith("mailto:"):
                continue
            assert (page.parent / target).exists(), f"{page.name} links to missing {target}"


def test_the_readme_is_a_front_door_that_reaches_every_page() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    for page in PAGES[1:]:
        assert f"docs/{page.name}" in readme, f"README.md does not link docs/{page.name}"


def test_the_marked_blocks_exist() -> None:
    assert len(blocks(RUNS)) >= 2 and len(blocks(CHECKS)) == 1


@pytest.mark.integration
@pytest.mark.parametrize(
    "page, code", blocks(RUNS), ids=lambda v: v.name if isinstance(v, Path) else ""
)
def test_a_marked_block_runs_as_written(page: Path, code: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=240, cwd=ROOT
    )
    assert done.returncode == 0, f"{page.name}:\n{done.stderr[-3000:]}"
    if "advantages" in code:  # the GRPO rollout prints its group's returns
        line = done.stdout.strip().splitlines()[-1]
        assert line.startswith("returns [") and "advantages [" in line


@pytest.mark.integration
def test_the_trainers_script_runs_as_a_file_from_anywhere(tmp_path: Path) -> None:
    """docs/trainers.md's first block, as a user pastes it into a file and runs it from
    any directory, the venv's scripts on PATH as an activated venv (or ./dev) has them."""
    page, code = next(b for b in blocks(RUNS) if b[0].name == "trainers.md")
    assert "asyncio.run(main())" in code  # a script: no top-level await
    script = tmp_path / "snippet.py"
    script.write_text(code)
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={**os.environ, "PATH": path},
    )
    assert done.returncode == 0, f"{page.name}:\n{done.stderr[-3000:]}"
    assert done.stdout.strip(), "the script shows what it did"


@pytest.mark.integration  # check_env starts a worker process
def test_the_authoring_example_passes_the_contract_checker(tmp_path: Path) -> None:
    from openenv_mcp.authoring.testing import check_env

    ((_, code),) = blocks(CHECKS)
    module = tmp_path / "docs_coin.py"
    module.write_text(code)
    spec = importlib.util.spec_from_file_location("docs_coin", module)
    assert spec is not None and spec.loader is not None
    loaded = importlib.util.module_from_spec(spec)
    sys.modules["docs_coin"] = loaded  # the worker process imports it by name too
    sys.path.insert(0, str(tmp_path))
    try:
        spec.loader.exec_module(loaded)
        report = check_env(loaded.Coin, bias=0.5)
        assert report.ok, report
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("docs_coin", None)

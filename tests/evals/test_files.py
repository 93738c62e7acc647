"""An eval's files: named after its report, refused where an earlier eval's are (unless
resuming) or where nothing can be written, and the Inspect log written beside it."""

from __future__ import annotations

from pathlib import Path

import pytest

from openenv_mcp.errors import ArgumentError
from openenv_mcp.evals import evaluate_sync
from openenv_mcp.evals._files import EvalFiles
from openenv_mcp.server import build_server


def test_the_files_are_named_after_the_report() -> None:
    files = EvalFiles.named(None, "tests.door_env:DoorEnv", "test")
    assert files.report == Path("eval-tests.door_env_DoorEnv-test.json")
    named = EvalFiles.named(Path("out/cart.json"), "gymnasium", "test")
    assert (named.runs, named.inspect_log, named.agents) == (
        Path("out/cart.runs.jsonl"),
        Path("out/cart.eval"),
        Path("out/cart.agents"),
    )


def test_an_earlier_evals_files_are_kept_unless_resuming(tmp_path: Path) -> None:
    files = EvalFiles(tmp_path / "e.json")
    files.check(resume=False)
    files.runs.write_text("{}\n")
    with pytest.raises(ArgumentError, match=r"e\.runs\.jsonl exists: pass --resume"):
        files.check(resume=False)
    files.check(resume=True)


def test_a_folder_that_is_not_there_is_refused_before_any_run(tmp_path: Path) -> None:
    with pytest.raises(ArgumentError, match="not a writable folder"):
        EvalFiles(tmp_path / "missing" / "e.json").check(resume=False)


def test_the_report_and_its_inspect_log_are_written(tmp_path: Path) -> None:
    from inspect_ai.log import read_eval_log

    report = evaluate_sync(build_server("echo"), split="test", limit=2)
    files = EvalFiles(tmp_path / "e.json")
    assert files.write(report) is None
    assert files.report.exists() and len(read_eval_log(str(files.inspect_log)).samples or []) == 2

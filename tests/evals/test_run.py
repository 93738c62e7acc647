"""``openenv-mcp eval`` and :func:`openenv_mcp.evals.evaluate` end to end: Gymnasium's
CartPole-v1 served over real stdio (and over HTTP with ``--server``), a noisy balancer
whose samples differ, pass@k recomputed from the report's own counts, resuming after an
interruption, comparing two reports, and every bad argument refused with what was
expected."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from openenv_mcp.errors import ArgumentError
from openenv_mcp.evals import evaluate, evaluate_sync, pass_at_k
from openenv_mcp.server import build_server
from tests.evals.unseeded_env import TasklessEcho, UnseededEcho
from tests.servers import CLI, ROOT, http_server, memory_server

CARTPOLE = ["gymnasium", "--id", "CartPole-v1", "--no-render"]
POLICIES = ROOT / "tests" / "policies.py"
NOISY = f"{POLICIES}:noisy_balancer"


def _eval(cwd: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "eval", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def _runs(path: Path) -> list[dict[str, Any]]:
    lines = path.read_text().splitlines()
    assert json.loads(lines[0])["format"] == "openenv-mcp eval runs"
    return [json.loads(line) for line in lines[1:]]


@pytest.fixture(scope="module")
def cartpole_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """One CLI eval of CartPole-v1 with the noisy balancer: 3 tasks x 4 samples."""
    folder = tmp_path_factory.mktemp("cartpole")
    done = _eval(
        folder,
        *CARTPOLE,
        "--policy",
        NOISY,
        "--samples",
        "4",
        "--k",
        "1,2,4",
        "--limit",
        "3",
        "--output",
        "report.json",
    )
    assert done.returncode == 0, done.stderr
    assert "pass@4" in done.stdout and "run/s" in done.stderr  # the table; the bar on stderr
    return folder, json.loads((folder / "report.json").read_text())


@pytest.mark.integration
def test_the_cartpole_report_is_rfc_013_shaped_and_its_pass_at_k_recomputes(
    cartpole_report: tuple[Path, dict[str, Any]],
) -> None:
    folder, report = cartpole_report
    assert set(report) == {"config", "scores"}
    config, scores = report["config"], report["scores"]
    assert config["harness_name"] == "openenv-mcp"
    assert {"openenv-mcp", "gymnasium", "fastmcp"} <= set(config["library_versions"])
    assert config["dataset"]["env"] == "gymnasium" and config["dataset"]["split"] == "test"
    assert config["dataset"]["env_config"]["id"] == "CartPole-v1"
    assert config["dataset"]["tasks"] == 3
    assert config["eval_parameters"] == {
        "samples": 4,
        "k": [1, 2, 4],
        "policy": NOISY,
        "max_steps": 0,
        "seed": 0,
        "concurrency": 4,
        "limit": 3,
    }
    per_task = scores["per_task"]
    assert len(per_task) == 3 and all(t["n"] == 4 for t in per_task.values())
    for k in (1, 2, 4):
        mine = sum(pass_at_k(t["n"], t["successes"], k) for t in per_task.values()) / 3
        assert scores[f"pass@{k}"] == pytest.approx(mine)
    successes = sum(t["successes"] for t in per_task.values())
    assert 0 < successes < 12, "the noisy balancer should both win and lose some runs"
    assert scores["pass@1"] <= scores["pass@2"] <= scores["pass@4"]
    assert scores["success_rate"] == pytest.approx(successes / 12)
    assert scores["error_rate"] == 0.0 and scores["reproducible"] is True
    assert sum(d["runs"] for d in scores["by_difficulty"].values()) == 12
    runs = _runs(folder / "report.runs.jsonl")
    assert sorted((r["index"], r["sample"]) for r in runs) == [
        (i, s) for i in range(3) for s in range(4)
    ]


@pytest.mark.integration
def test_the_heuristic_beats_random(cartpole_report: tuple[Path, dict[str, Any]]) -> None:
    _, heuristic = cartpole_report
    random = evaluate_sync(memory_server(*CARTPOLE), policy="random", samples=4, limit=3)
    assert random.scores()["success_rate"] < heuristic["scores"]["success_rate"]
    assert random.scores()["mean_steps"] < heuristic["scores"]["mean_steps"]


@pytest.mark.integration
def test_resume_plays_only_the_missing_runs_and_gives_the_same_counts(
    cartpole_report: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    folder, full = cartpole_report
    lines = (folder / "report.runs.jsonl").read_text().splitlines(keepends=True)
    # What an interruption leaves: the header, five finished runs, a line torn mid-write.
    (tmp_path / "again.runs.jsonl").write_text("".join(lines[:6]) + lines[6][:40])
    kept = {(r["index"], r["sample"]) for r in map(json.loads, lines[1:6])}
    common = ("--policy", NOISY, "--samples", "4", "--k", "1,2,4", "--limit", "3")
    refused = _eval(tmp_path, *CARTPOLE, *common, "--output", "again.json")
    assert refused.returncode == 2 and "--resume" in refused.stderr
    done = _eval(tmp_path, *CARTPOLE, *common, "--output", "again.json", "--resume")
    assert done.returncode == 0, done.stderr
    runs = _runs(tmp_path / "again.runs.jsonl")
    keys = [(r["index"], r["sample"]) for r in runs]
    assert len(keys) == len(set(keys)) == 12  # none played twice
    assert kept == {(r["index"], r["sample"]) for r in runs[:5]}
    again = json.loads((tmp_path / "again.json").read_text())
    assert again["scores"]["per_task"] == full["scores"]["per_task"]
    assert again["scores"]["pass@4"] == full["scores"]["pass@4"]


@pytest.mark.integration
def test_resume_after_the_eval_is_killed_mid_run(tmp_path: Path) -> None:
    slow = tmp_path / "slow.py"
    slow.write_text(
        "import time\n\n\ndef go(observation, info):\n    time.sleep(0.002)\n"
        "    return 1 if observation[2] + 0.5 * observation[3] > 0 else 0\n"
    )
    args = [*CARTPOLE, "--policy", f"{slow}:go", "--samples", "2", "--limit", "3"]
    args += ["--concurrency", "1", "--output", "r.json"]
    proc = subprocess.Popen(
        [*CLI, "eval", *args],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    sidecar = tmp_path / "r.runs.jsonl"
    try:
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline:
            if sidecar.exists() and len(sidecar.read_text().splitlines()) >= 3:
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(30)
    before = len(_runs(sidecar))
    assert not (tmp_path / "r.json").exists() or before == 6
    done = _eval(tmp_path, *args, "--resume")
    assert done.returncode == 0, done.stderr
    runs = _runs(sidecar)
    assert len(runs) == 6 and len({(r["index"], r["sample"]) for r in runs}) == 6
    report = json.loads((tmp_path / "r.json").read_text())
    assert all(t["n"] == 2 and t["successes"] == 2 for t in report["scores"]["per_task"].values())


@pytest.mark.integration
def test_compare_names_the_tasks_a_change_fixed_or_regressed(tmp_path: Path) -> None:
    common = ("--samples", "1", "--limit", "2", "--concurrency", "2")
    old = _eval(
        tmp_path,
        *CARTPOLE,
        "--policy",
        f"{POLICIES}:failing_balancer",
        *common,
        "--output",
        "old.json",
    )
    assert old.returncode == 0, old.stderr
    new = _eval(
        tmp_path,
        *CARTPOLE,
        "--policy",
        f"{POLICIES}:balancer",
        *common,
        "--output",
        "new.json",
        "--compare",
        "old.json",
    )
    assert new.returncode == 0, new.stderr
    ids = list(json.loads((tmp_path / "new.json").read_text())["scores"]["per_task"])
    assert f"fixed (2): {', '.join(ids)}" in new.stdout
    assert "regressed (0): none" in new.stdout
    assert "success_rate: 0.000 -> 1.000 (+1.000)" in new.stdout
    back = _eval(tmp_path, "--compare", "new.json", "old.json")
    assert back.returncode == 0, back.stderr
    assert f"regressed (2): {', '.join(ids)}" in back.stdout and "fixed (0): none" in back.stdout
    missing = _eval(tmp_path, "--compare", "nope.json", "old.json")
    assert missing.returncode == 2 and "nope.json does not exist" in missing.stderr


@pytest.mark.integration
def test_an_eval_of_a_running_http_server(tmp_path: Path) -> None:
    with http_server(*CARTPOLE) as url:
        args = ["gymnasium", "--server", url, "--policy", f"{POLICIES}:balancer", "--limit", "2"]
        done = _eval(tmp_path, *args, "--samples", "2", "--k", "1,2")
        assert done.returncode == 0, done.stderr
        report = json.loads((tmp_path / "eval-gymnasium-test.json").read_text())
        assert report["scores"]["pass@2"] == 1.0 and report["scores"]["success_rate"] == 1.0
        assert report["config"]["dataset"]["env_config"]["id"] == "CartPole-v1"
        stray = _eval(tmp_path, *args, "--id", "Pendulum-v1", "--output", "x.json")
        assert stray.returncode == 2 and "--server evaluates a running server" in stray.stderr
        other = _eval(tmp_path, "echo", "--server", url, "--output", "y.json")
        assert other.returncode == 2 and "serves 'gymnasium', not 'echo'" in other.stderr


@pytest.mark.integration
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--k", "0"], "--k values must be at least 1"),
        (["--k", "1,x"], "--k takes positive integers like 1,4,8; got 'x'"),
        (
            ["--samples", "4", "--k", "9"],
            "pass@9 needs at least 9 samples per task, got --samples 4",
        ),
        (["--samples", "0"], "--samples must be at least 1"),
        (["--split", "tset"], "no split 'tset'. Did you mean 'test'?"),
        (["--policy", "nowhere.py:go"], "there is no file nowhere.py"),
        (["--output", "no/such/folder/r.json"], "is not a writable folder"),
        (["--limit", "0"], "--limit must be at least 1"),
        (["--stdio"], "eval starts its own stdio server: leave --stdio out"),
    ],
)
def test_bad_arguments_are_refused_with_what_was_expected(
    tmp_path: Path, args: list[str], message: str
) -> None:
    done = _eval(tmp_path, "echo", *args)
    assert done.returncode == 2, done.stdout
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_an_unknown_split_lists_the_splits_there_are() -> None:
    with pytest.raises(ArgumentError, match=r"Splits: train \(8 tasks\), test \(4 tasks\)$"):
        evaluate_sync(memory_server("echo"), split="holdout")


def test_an_env_without_tasks_is_refused() -> None:
    with pytest.raises(ArgumentError, match="publishes no tasks"):
        evaluate_sync(build_server(TasklessEcho))


def test_the_probe_says_an_env_that_ignores_its_seed_is_not_reproducible() -> None:
    report = evaluate_sync(build_server(UnseededEcho), max_steps=1, limit=1)
    assert report.scores()["reproducible"] is False
    assert evaluate_sync(memory_server("echo"), max_steps=1, limit=1).reproducible is True


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json at all\n", "is not an eval's runs file"),
        (
            '{"format": "openenv-mcp eval runs", "version": 1, "eval": {"env": "chess"}}\n',
            "holds the runs of another eval",
        ),
        (
            'HEADER\n{"task_id": 3}\n{}\n',
            "line 2 is not a finished run .*needs the field 'success'",
        ),
        ("HEADER\n[1, 2]\n", "line 2 is not a finished run"),
    ],
)
def test_a_corrupted_sidecar_is_refused_on_resume(
    tmp_path: Path, content: str, message: str
) -> None:
    runs = tmp_path / "r.runs.jsonl"
    first = evaluate_sync(memory_server("echo"), max_steps=1, limit=1, runs_file=runs)
    assert len(first.runs) == 1
    header = runs.read_text().splitlines()[0]
    runs.write_text(content.replace("HEADER", header))
    with pytest.raises(ArgumentError, match=message):
        evaluate_sync(memory_server("echo"), max_steps=1, limit=1, runs_file=runs, resume=True)
    with pytest.raises(ArgumentError, match="pass --resume"):
        evaluate_sync(memory_server("echo"), max_steps=1, limit=1, runs_file=runs)


def test_an_unwritable_runs_file_is_refused_before_any_run(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    with pytest.raises(ArgumentError, match="cannot write the eval's runs"):
        evaluate_sync(memory_server("echo"), limit=1, runs_file=tmp_path / "a-file" / "r.jsonl")


def test_evaluate_sync_works_inside_a_running_event_loop() -> None:
    async def inside() -> float | None:
        report = evaluate_sync(memory_server("echo"), policy="tests.policies:say_bye_soon")
        return report.scores()["success_rate"]

    rate = anyio.run(inside)  # bounded by the session's own call timeouts
    assert rate is not None and 0 < rate <= 1


def test_an_eval_over_a_session_the_caller_keeps() -> None:
    from openenv_mcp.client import Session

    async def main() -> None:
        with anyio.fail_after(120):
            async with Session(memory_server("echo")) as session:
                first = await evaluate(session, max_steps=1, limit=1)
                second = await evaluate(session, max_steps=1, limit=2)
                assert session.connected
        assert len(first.runs) == 1 and len(second.runs) == 2

    anyio.run(main)


@pytest.mark.integration
def test_the_cli_help_lists_the_eval_options() -> None:
    done = subprocess.run([*CLI, "eval", "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    for flag in ("--policy", "--split", "--samples", "--k", "--resume", "--compare", "--server"):
        assert flag in done.stdout
    assert os.environ.get("COLUMNS") != "1"

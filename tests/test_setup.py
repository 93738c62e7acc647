"""``./dev`` in tiers: serving installs what serving needs, a harness's command never
installs, and set-ups are safe against running twice and against being killed.

One real serving-tier install into a fresh venv (``./dev setup``, the pip cache as it
is) is shared by the module: it is started, its ``./dev`` killed mid-install while the
install runs on, and a second ``./dev setup`` started at once, as a harness that gave up
and retried would; the second waits for the first, then finds the venv set up. The venv's
package set is then what serving needs and nothing of the test stack.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.figures import record_figure
from tests.servers import INITIALIZE, ROOT

pytestmark = pytest.mark.integration

DEV = str(ROOT / "dev")
#: What serving Atari never imports: the test stack, trainers, browsers, clusters,
#: other environments' dependencies.
NOT_FOR_SERVING = {
    "ray",
    "playwright",
    "transformers",
    "torch",
    "pytest",
    "mypy",
    "ruff",
    "hypothesis",
    "openai-agents",
    "box2d",
    "minari",
    "h5py",
    "av",
    "open-spiel",
    "pandas",
    "chess",
    "pygame",
    "scipy",
    "pydantic-ai-slim",
    "llama-index-core",
    "openenv-core",
}
SERVING = {"openenv-mcp", "fastmcp", "mcp", "ale-py", "numpy", "pillow", "gymnasium", "zstandard"}


def dev(venv: Path, *args: str, **how: object) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OPENENV_MCP_VENV": str(venv)}
    return subprocess.run(
        [DEV, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
        **how,  # type: ignore[call-overload]
    )


def _wait_for(path: Path, text: str, proc: subprocess.Popen[str], timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while text not in (path.read_text() if path.exists() else ""):
        assert proc.poll() is None, path.read_text()
        assert time.monotonic() < deadline, f"no {text!r} within {timeout}s"
        time.sleep(0.1)


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    venv = tmp_path_factory.mktemp("fresh") / "venv"
    log = venv.parent / "first.log"
    env = {**os.environ, "OPENENV_MCP_VENV": str(venv)}
    began = time.monotonic()
    with open(log, "w") as err:
        first = subprocess.Popen(
            [DEV, "setup"], stderr=err, stdout=subprocess.DEVNULL, env=env, text=True
        )
        try:
            # The set-up's own process dies mid-install (a harness gave up); its pip
            # runs on, holding the lock.
            _wait_for(log, "installing", first)
            time.sleep(1.0)
            os.kill(first.pid, signal.SIGKILL)
        finally:
            first.wait(30)
    second = dev(venv, "setup")
    took = time.monotonic() - began
    assert second.returncode == 0, second.stderr
    (venv.parent / "second.log").write_text(second.stderr)
    record_figure(f"./dev setup (serving tier) into a fresh venv, warm pip cache: {took:.0f} s")
    return venv


def installed(venv: Path) -> dict[str, str]:
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "list", "--format=json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    return {p["name"].lower(): p["version"] for p in json.loads(out)}


def test_the_serving_tier_installs_what_serving_needs_only(fresh_venv: Path) -> None:
    packages = installed(fresh_venv)
    assert set(packages) >= SERVING, SERVING - set(packages)
    assert not NOT_FOR_SERVING & set(packages), NOT_FOR_SERVING & set(packages)
    size = subprocess.run(["du", "-sm", str(fresh_venv)], capture_output=True, text=True)
    megabytes = int(size.stdout.split()[0])
    record_figure(f"serving-tier venv: {len(packages)} packages, {megabytes} MB")
    stamps = sorted(p.name for p in (fresh_venv / ".openenv-mcp").iterdir())
    assert "serve" in stamps and "test" not in stamps


def test_a_set_up_whose_dev_was_killed_is_waited_for(fresh_venv: Path) -> None:
    """The second set-up found the first one (its ./dev killed, its install running on)
    holding the lock, and waited for it instead of starting a second pip."""
    second = (fresh_venv.parent / "second.log").read_text()
    assert "another set-up" in second and "waiting" in second
    assert "Traceback" not in (fresh_venv.parent / "first.log").read_text() + second
    # Its stamp is written last: present now, and an existing set-up is not redone.
    again = dev(fresh_venv, "setup")
    assert again.returncode == 0 and "setting up" not in again.stderr


def test_run_serves_from_the_set_up_venv(fresh_venv: Path) -> None:
    done = dev(
        fresh_venv,
        "run",
        "serve",
        "atari",
        "--game",
        "breakout",
        "--stdio",
        input=json.dumps(INITIALIZE) + "\n",
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout.splitlines()[0])
    assert answer["result"]["serverInfo"]["name"] == "openenv-atari"


def test_run_without_a_venv_names_the_set_up_command(tmp_path: Path) -> None:
    done = dev(tmp_path / "none", "run", "serve", "atari", "--stdio", stdin=subprocess.DEVNULL)
    assert done.returncode == 1 and done.stdout == ""
    assert "not set up yet" in done.stderr
    assert f"{DEV} setup atari" in done.stderr
    assert not (tmp_path / "none").exists()  # nothing installed


@pytest.mark.parametrize(
    ("transport", "answers"),
    [
        (["--stdio"], True),
        (["--agent"], True),
        (["--transport", "stdio"], True),
        (["--transport", "http"], False),
        (["--transport=http"], False),
        (["--transport", "ray"], False),
        (["--http"], False),
    ],
)
def test_run_without_a_venv_answers_a_stdio_handshake_only_for_stdio(
    tmp_path: Path, transport: list[str], answers: bool
) -> None:
    """Not set up, a harness's stdio server answers its handshake with the fix; a command
    line serving HTTP (in either spelling) is not a harness's, and only exits, saying why."""
    done = dev(
        tmp_path / "none", "run", "serve", "atari", *transport, input=json.dumps(INITIALIZE) + "\n"
    )
    assert done.returncode != 0 and "not set up yet" in done.stderr
    if answers:
        answer = json.loads(done.stdout.splitlines()[0])
        assert "setup atari" in json.dumps(answer)
    else:
        assert done.stdout == ""


def test_a_stale_venv_runs_as_it_is_with_a_warning(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    launcher = venv / "bin" / "openenv-mcp"
    launcher.write_text('#!/bin/sh\necho "ran $*"\n')
    launcher.chmod(0o755)
    (venv / ".openenv-mcp").mkdir()
    (venv / ".openenv-mcp" / "serve").write_text("0\n")  # another pyproject.toml's
    done = dev(venv, "run", "list", stdin=subprocess.DEVNULL)
    assert done.returncode == 0 and done.stdout == "ran list\n"
    assert "warning" in done.stderr and "older pyproject.toml" in done.stderr

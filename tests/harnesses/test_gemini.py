"""Gemini CLI plays Atari through harness_examples/gemini.settings.json.

The real CLI (npm ``@google/gemini-cli``) runs headless (``gemini -p``) with a private
HOME whose ``~/.gemini/settings.json`` holds the example (paths filled in), against
a local stand-in for the Gemini API (tests/harnesses/standin_gemini.py): the
"model" calls our reset tool, then two actions, then answers. The tests check what
Gemini declared to the model, that the calls ran on our server, and that their
results (text, and the frame as an image part) reached the model; and the quirks
the README states:

* without ``"trust": true`` (and without ``--yolo``) headless Gemini declares none of
  the server's tools: nothing says so, the model just has no game;
* headless Gemini refuses to start in a folder it does not trust, unless given
  ``--skip-trust`` (or ``GEMINI_CLI_TRUST_WORKSPACE=true``, or a trusted folder);
* under ``--skip-trust`` a project's ``.gemini/settings.json`` is ignored, silently
  (the flag takes effect after the settings were read);
* the README's ``gemini mcp add`` one-liner writes the example's entry.

Only loopback and the npm registry (to install the CLI) are used: the CLI's usage
statistics, telemetry and update checks are off in the test's user settings.
"""

from __future__ import annotations

import base64
import io
import json
import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openenv_mcp.server.transports._host import HOST_DIR_ENV
from tests.harnesses.cli_runs import npm_cli, run_cli
from tests.harnesses.standin_gemini import (
    FINAL_ANSWER,
    NO_TOOLS_ANSWER,
    Request,
    StandinGemini,
    function_responses,
    inline_images,
)
from tests.servers import ROOT, ensure_installed, episode_host_dir, episode_hosts
from tests.test_harness_examples import _dev_env, filled, readme_commands

pytestmark = pytest.mark.integration

GEMINI_SPEC = "@google/gemini-cli@0"
EXAMPLE = "gemini.settings.json"
#: What the stand-in model calls, in order (our tool names; Gemini prefixes them).
SCRIPT: list[tuple[str, dict[str, Any]]] = [("reset", {"seed": 0}), ("fire", {}), ("right", {})]
#: Beside the example in the test's ~/.gemini/settings.json: the API key auth (sent to
#: the stand-in), and nothing sent anywhere else.
HEADLESS: dict[str, Any] = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
}
UNTRUSTED_FOLDER_EXIT = 55  # the CLI's FatalUntrustedWorkspaceError


def node_version(node: str) -> tuple[int, ...]:
    out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout
    return tuple(int(n) for n in re.findall(r"\d+", out)[:3])


@pytest.fixture(scope="module")
def gemini() -> list[str]:
    """The command that runs Gemini CLI: a Node that meets its ``engines``, and its
    entry script, installed from npm into a cache outside the repo."""
    installed = "node_modules/@google/gemini-cli/package.json"
    flags = ("--engine-strict=false",)
    cache = npm_cli("gemini-cli", GEMINI_SPEC, "Gemini CLI", installed, *flags)
    package = cache / "node_modules" / "@google" / "gemini-cli"
    meta = json.loads((package / "package.json").read_text())
    floor = tuple(int(n) for n in re.findall(r"\d+", meta["engines"]["node"])[:3])
    node = shutil.which("node")
    if node is None or node_version(node) < floor:  # Node 22 from npm, as the other tests
        out = ensure_installed("ensure_node_tools.sh", "Node 22 (from npm)")
        node = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)["NODE"]
    return [node, str(package / meta["bin"]["gemini"])]


@pytest.fixture(scope="module")
def dev_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """How ``./dev`` runs here (see tests/test_harness_examples.py), with a private
    directory for the episode hosts the example starts (stopped at the end)."""
    with episode_host_dir() as hosts:
        base = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI_", "GOOGLE_"))}
        yield _dev_env({**base, HOST_DIR_ENV: str(hosts)}, tmp_path_factory)


class Run:
    """One Gemini CLI run: its exit code, output, and what the stand-in model saw."""

    def __init__(self, proc: subprocess.CompletedProcess[str], model: StandinGemini) -> None:
        self.returncode = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.requests = model.requests
        self.main = model.main_requests()

    def declared(self) -> set[str]:
        return {name for r in self.main for name in r.declared()}

    def ours(self) -> set[str]:
        return {name for name in self.declared() if name.startswith("mcp_atari_")}

    def __repr__(self) -> str:
        paths = [r.path for r in self.requests]
        return f"rc={self.returncode}\nstdout={self.stdout}\nstderr={self.stderr[-3000:]}\n{paths}"


class Gemini:
    """Gemini CLI with a private HOME (``home/.gemini/settings.json``) and a project
    folder to run in, nothing inherited from the user's Gemini set-up."""

    def __init__(self, argv: list[str], env: dict[str, str], root: Path) -> None:
        self.argv = argv
        self.home = root / "home"
        self.project = root / "project"
        (self.home / ".gemini").mkdir(parents=True)
        self.project.mkdir()
        (root / "tmp").mkdir()
        direct = {k: v for k, v in env.items() if not k.lower().endswith("_proxy")}
        self.env = {
            **direct,  # the stand-in is on loopback: no proxy between
            "HOME": str(self.home),
            "TMPDIR": str(root / "tmp"),  # the CLI writes error reports there
            "GEMINI_API_KEY": "standin",
            "GEMINI_CLI_SYSTEM_SETTINGS_PATH": str(root / "no-system-settings.json"),
            "GEMINI_CLI_SYSTEM_DEFAULTS_PATH": str(root / "no-system-defaults.json"),
            "NO_COLOR": "1",
        }

    def user_settings(self, settings: dict[str, Any]) -> None:
        path = self.home / ".gemini" / "settings.json"
        path.write_text(json.dumps({**settings, **HEADLESS}, indent=2))

    def project_settings(self, settings: dict[str, Any]) -> None:
        (self.project / ".gemini").mkdir(exist_ok=True)
        (self.project / ".gemini" / "settings.json").write_text(json.dumps(settings, indent=2))

    def run(self, *args: str, env: dict[str, str] | None = None, timeout: float = 180) -> Run:
        """``gemini ARGS`` in the project folder against a fresh stand-in model."""
        with StandinGemini(SCRIPT) as model:
            base_url = {"GOOGLE_GEMINI_BASE_URL": model.url}
            proc = self.cli(*args, env={**base_url, **(env or {})}, timeout=timeout)
            return Run(proc, model)

    def cli(
        self, *args: str, env: dict[str, str] | None = None, timeout: float = 180
    ) -> subprocess.CompletedProcess[str]:
        """Run the CLI to its end (bounded); whatever it started over stdio must be gone
        shortly after (the episode host, by design, outlives it)."""
        return run_cli(
            [*self.argv, *args],
            cwd=self.project,
            env={**self.env, **(env or {})},
            home=self.home,
            timeout=timeout,
        )


@pytest.fixture
def cli(gemini: list[str], dev_env: dict[str, str], tmp_path: Path) -> Gemini:
    return Gemini(gemini, dev_env, tmp_path)


def example(trust: bool = True) -> dict[str, Any]:
    """The example as a user fills it in (``trust`` False: that key removed)."""
    settings = filled(EXAMPLE)
    if not trust:
        del settings["mcpServers"]["atari"]["trust"]
    return settings


def assert_played(run: Run) -> None:
    """The stand-in's script ran on our server, and every result reached the model."""
    assert run.returncode == 0, run
    assert run.stdout.strip() == FINAL_ANSWER, run
    last = run.main[-1]
    responses = function_responses(last.parts())
    assert [r["name"] for r in responses] == [f"mcp_atari_{tool}" for tool, _ in SCRIPT], run
    texts = [r["response"]["output"] for r in responses]
    # tool output reaches the model wrapped as untrusted data, the frame named after it
    assert all(t.startswith("<untrusted_context>") for t in texts), texts
    assert "Breakout" in texts[0] and "seed 0" in texts[0], texts[0]
    assert "FIRE" in texts[1] and "RIGHT" in texts[2], texts
    # each result's frame follows it as an image part
    for text, images in zip(texts, frames_after_responses(last), strict=True):
        assert "image/png" in text
        assert len(images) == 1 and images[0]["mimeType"] == "image/png", images
        assert_png(images[0]["data"])


def frames_after_responses(request: Request) -> list[list[dict[str, Any]]]:
    """For each function response of a request, the images sent with it (inside it, or
    in the parts after it, up to the model's next call)."""
    groups: list[list[dict[str, Any]]] = []
    for part in request.parts():
        if "functionResponse" in part:
            groups.append(inline_images(part))
        elif "functionCall" in part:
            continue
        elif groups:
            groups[-1] += inline_images(part)
    return groups


def assert_png(data: str) -> None:
    from PIL import Image

    raw = base64.b64decode(data)
    with Image.open(io.BytesIO(raw)) as image:
        assert image.format == "PNG" and image.width >= 160 and image.height >= 210


# -- the example -----------------------------------------------------------------------------


def test_gemini_plays_with_the_example(cli: Gemini, dev_env: dict[str, str]) -> None:
    cli.user_settings(example())
    run = cli.run("--skip-trust", "-p", "play")
    assert_played(run)
    # every tool of the server, declared in every turn of the agent loop
    assert {"mcp_atari_reset", "mcp_atari_step", "mcp_atari_fire", "mcp_atari_right"} <= run.ours()
    assert len(run.main) == len(SCRIPT) + 1  # a turn per call, then the answer
    # the episode ran in the episode host the config asks for, the test's own
    assert episode_hosts(Path(dev_env[HOST_DIR_ENV])), "no episode host in the test's directory"


def test_readme_one_liner_writes_the_example(cli: Gemini) -> None:
    lines = readme_commands("gemini mcp add ")
    assert len(lines) == 1, "harness_examples/README.md: its Gemini CLI section's one-liner"
    argv = shlex.split(lines[0].replace("$PWD", str(ROOT)))
    proc = cli.cli(*argv[1:])
    assert proc.returncode == 0, proc.stderr
    written = json.loads((cli.home / ".gemini" / "settings.json").read_text())
    assert written == example()
    # Gemini starts no stdio server in a folder it does not trust, the user's ones included
    listed = cli.cli("mcp", "list")  # it writes its list to stderr
    assert re.search(r"^. atari: .*/dev run serve atari --agent.* - Disabled$", listed.stderr, re.M)
    listed = cli.cli("mcp", "list", env={"GEMINI_CLI_TRUST_WORKSPACE": "true"})
    assert re.search(
        r"^. atari: .*/dev run serve atari --agent.* - Connected$", listed.stderr, re.M
    )


# -- the quirks the README states --------------------------------------------------------------


def test_without_trust_headless_gemini_declares_none_of_our_tools(cli: Gemini) -> None:
    cli.user_settings(example(trust=False))
    run = cli.run("--skip-trust", "-p", "play")
    assert run.returncode == 0, run  # nothing is wrong, as far as Gemini says
    assert run.main and not run.ours(), run.declared()
    assert run.stdout.strip() == NO_TOOLS_ANSWER
    # --yolo declares them (and approves every tool, the shell included)
    run = cli.run("--skip-trust", "--yolo", "-p", "play")
    assert_played(run)
    assert "run_shell_command" in run.declared()


def test_headless_gemini_needs_a_trusted_folder(cli: Gemini) -> None:
    cli.user_settings(example())
    run = cli.run("-p", "play")
    assert run.returncode == UNTRUSTED_FOLDER_EXIT, run
    assert "not running in a trusted directory" in run.stderr and not run.requests
    trusted = {str(cli.project): "TRUST_FOLDER"}  # what "trust this folder" writes
    (cli.home / ".gemini" / "trustedFolders.json").write_text(json.dumps(trusted))
    assert_played(cli.run("-p", "play"))


def test_skip_trust_ignores_a_project_settings_file_silently(cli: Gemini) -> None:
    cli.user_settings({})
    cli.project_settings(example())
    run = cli.run("--skip-trust", "-p", "play")
    assert run.returncode == 0, run
    assert run.main and not run.ours(), run.declared()
    assert run.stdout.strip() == NO_TOOLS_ANSWER
    assert "settings.json" not in run.stderr and "trust" not in run.stderr.lower(), run.stderr
    # trusted before the settings are read, the project's file counts
    assert_played(cli.run("-p", "play", env={"GEMINI_CLI_TRUST_WORKSPACE": "true"}))

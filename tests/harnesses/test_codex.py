"""Codex CLI plays Atari through harness_examples/codex.config.toml, with its default
approval settings.

The real CLI (npm ``@openai/codex``, its native binary) runs ``codex exec PROMPT``,
no flag added, with a private HOME and ``CODEX_HOME`` whose ``config.toml`` holds the
example (paths filled in) beside a model provider that is a local stand-in for
OpenAI's Responses API (tests/harnesses/standin_openai.py): the "model" calls our
reset tool, then two actions, then answers. The tests read what reached the model:
every tool result, its text and its frame.

``codex exec`` runs under the approval policy ``never``, and Codex asks approval for
an MCP tool unless its annotations say it is read-only, or neither destructive nor
open-world; MCP's defaults for hints left out are the cautious ones. Before every
tool of ours carried all four hints (issue 37), Codex answered the model's reset,
fire and step with "MCP tool call requires approval, but approval policy is never";
only state and legal_actions (read-only) ran. The tests check too:

* the README's ``codex mcp add`` one-liner writes the example's command, and a server
  added that way (command and arguments only) plays once its answers are kept (Codex
  waits a second for a server that is not ``required``; the first start of a command
  line may take longer);
* tools that reach outside the process (``serve openenv --url``) are marked
  open-world, so Codex refuses them in ``exec`` unless the server's tools are
  approved in its config (``default_tools_approval_mode = "approve"``), as the README
  says.

Only loopback and the npm registry (to install the CLI) are used: Codex's plugin
sync, apps, analytics and update check are off in the test's config, and anything
else it would fetch goes to a proxy on loopback that refuses.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openenv_mcp.server.transports._host import HOST_DIR_ENV
from tests.harnesses.cli_runs import npm_cli, run_cli
from tests.harnesses.standin_openai import (
    Script,
    StandinModel,
    function_call,
    function_outputs,
    message,
    tool_names,
)
from tests.servers import ROOT, episode_host_dir, episode_hosts
from tests.test_harness_examples import PLACEHOLDER, _dev_env, readme_commands

pytestmark = pytest.mark.integration

CODEX_SPEC = "@openai/codex@0.171"
EXAMPLE = ROOT / "harness_examples" / "codex.config.toml"
#: What the stand-in model calls, in order (our tool names: Codex offers them to the
#: model in a namespace named after the server, ``mcp__atari``).
SCRIPT: list[tuple[str, dict[str, Any]]] = [
    ("reset", {"seed": 0}),
    ("fire", {}),
    ("step", {"action": "RIGHT", "repeat": 3}),
]
FINAL_ANSWER = "I served the ball and moved the paddle right."
NO_TOOLS_ANSWER = "There is no game to play: the atari tools were not offered."
REFUSED = "requires approval"
#: Before the servers in the test's config.toml: the stand-in as the model provider
#: (its key sent to it only), and nothing fetched from anywhere else.
PREAMBLE = """\
model = "stand-in"
model_provider = "standin"
check_for_update_on_startup = false

[model_providers.standin]
name = "stand-in"
base_url = "{base_url}"
wire_api = "responses"
env_key = "STANDIN_API_KEY"
request_max_retries = 0
stream_max_retries = 0

[features]
plugins = false
remote_plugin = false
apps = false

[analytics]
enabled = false

"""
#: Where anything not sent to loopback would go: a port nothing listens on.
REFUSING_PROXY = "http://127.0.0.1:9"


@pytest.fixture(scope="module")
def codex() -> str:
    """Codex's CLI (its npm launcher, which runs the native binary), installed from npm
    into a cache outside the repo."""
    installed = "node_modules/.bin/codex"
    return str(npm_cli("codex", CODEX_SPEC, "Codex CLI", installed) / installed)


@pytest.fixture(scope="module")
def dev_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """How ``./dev`` runs here (see tests/test_harness_examples.py), with a private
    directory for the episode hosts the example starts (stopped at the end)."""
    with episode_host_dir() as hosts:
        yield _dev_env({**os.environ, HOST_DIR_ENV: str(hosts)}, tmp_path_factory)


def example() -> str:
    """The example as a user fills it in (the README's sed line does this)."""
    text = EXAMPLE.read_text()
    assert PLACEHOLDER in text, "the example should carry the documented placeholder"
    return text.replace(PLACEHOLDER, str(ROOT))


def our_variables(dev_env: dict[str, str]) -> str:
    """Lines for the example's ``env`` table (its last): the test's episode host
    directory and, where ``./dev`` is pointed at a stand-in venv, that venv. Codex
    passes the server none of its own environment beyond a few basics."""
    wanted = {k: dev_env[k] for k in (HOST_DIR_ENV, "OPENENV_MCP_VENV") if k in dev_env}
    return "".join(f'{k} = "{v}"\n' for k, v in wanted.items())


class Run:
    """One ``codex exec``: its exit code, output, and what the stand-in model saw."""

    def __init__(self, proc: subprocess.CompletedProcess[str], model: StandinModel) -> None:
        self.returncode = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.bodies = model.responses
        self.paths = [r.path for r in model.requests]

    def offered(self, server: str) -> set[str]:
        """The tools of MCP server ``server`` Codex offered the model, in any turn."""
        return {name for body in self.bodies for name in server_tools(body, server)}

    def outputs(self) -> dict[str, tuple[list[str], list[str]]]:
        """Each call's result as the model last got it: its texts and its images."""
        return {k: contents(v) for k, v in function_outputs(self.bodies[-1]).items()}

    def __repr__(self) -> str:
        tail = self.stderr[-3000:]
        return f"rc={self.returncode}\nstdout={self.stdout}\nstderr={tail}\n{self.paths}"


def server_tools(body: dict[str, Any], server: str) -> dict[str, dict[str, Any]]:
    """The tools of MCP server ``server`` a request offers, by our name, each as the
    arguments of :func:`function_call` that call it (Codex 0.171 puts them in a
    namespace ``mcp__SERVER``; older releases named them ``mcp__SERVER__TOOL``)."""
    found: dict[str, dict[str, Any]] = {}
    prefix = f"mcp__{server}"
    for namespace, name in tool_names(body):
        if namespace == prefix:
            found[name] = {"name": name, "namespace": namespace}
        elif namespace is None and name.startswith(f"{prefix}__"):
            found[name.removeprefix(f"{prefix}__")] = {"name": name}
    return found


def play(server: str, calls: list[tuple[str, dict[str, Any]]]) -> Script:
    """The stand-in model's script: the ``calls`` of ``server``'s tools, one a turn,
    then :data:`FINAL_ANSWER` (:data:`NO_TOOLS_ANSWER` where its tools are missing)."""

    def script(bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
        turn = len(bodies) - 1
        if turn >= len(calls):
            return [message(FINAL_ANSWER)]
        tool, arguments = calls[turn]
        offered = server_tools(bodies[-1], server)
        if tool not in offered:
            return [message(NO_TOOLS_ANSWER)]
        return [function_call(arguments=arguments, call_id=f"call_{turn}", **offered[tool])]

    return script


def contents(output: Any) -> tuple[list[str], list[str]]:
    """A function call's output as Codex sends it: its texts, and its images (data URLs)."""
    if isinstance(output, str):
        return [output], []
    texts = [str(c.get("text")) for c in output if c.get("type") == "input_text"]
    images = [str(c.get("image_url")) for c in output if c.get("type") == "input_image"]
    return texts, images


def assert_png(url: str) -> None:
    from PIL import Image

    prefix = "data:image/png;base64,"
    assert url.startswith(prefix), url[:80]
    with Image.open(io.BytesIO(base64.b64decode(url.removeprefix(prefix)))) as image:
        assert image.format == "PNG" and image.width >= 160 and image.height >= 210


class Codex:
    """Codex CLI with a private HOME and ``CODEX_HOME``, run in a git repository of its
    own (``codex exec`` wants one; no flag is passed to run elsewhere), nothing
    inherited from the user's Codex set-up."""

    def __init__(self, binary: str, root: Path) -> None:
        self.binary = binary
        self.home = root / "home"
        self.codex_home = root / "codex"
        self.work = root / "work"
        for folder in (self.home, self.codex_home, self.work, root / "tmp"):
            folder.mkdir()
        subprocess.run(["git", "init", "-q", str(self.work)], check=True, timeout=30)
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),  # node, bash, git
            "HOME": str(self.home),
            "CODEX_HOME": str(self.codex_home),
            "TMPDIR": str(root / "tmp"),
            "LANG": "C.UTF-8",
            "STANDIN_API_KEY": "stand-in",
            "HTTP_PROXY": REFUSING_PROXY,
            "HTTPS_PROXY": REFUSING_PROXY,
            "ALL_PROXY": REFUSING_PROXY,
            "NO_PROXY": "127.0.0.1,localhost",
        }

    @property
    def config(self) -> Path:
        return self.codex_home / "config.toml"

    def run(self, servers: str, script: Script, prompt: str = "Play Breakout.") -> Run:
        """``codex exec PROMPT`` against a fresh stand-in model, the config.toml being
        the provider then ``servers`` (whatever the config holds after a preamble)."""
        kept = self.config.read_text() if self.config.exists() else ""
        with StandinModel(script) as model:
            self.config.write_text(PREAMBLE.format(base_url=model.base_url) + servers + kept)
            tomllib.loads(self.config.read_text())  # what Codex is given is valid TOML
            proc = self.cli("exec", prompt)
        self.config.write_text(kept)
        return Run(proc, model)

    def cli(self, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        """Run the CLI to its end (bounded); whatever it started over stdio must be gone
        shortly after (the episode host, by design, outlives it)."""
        return run_cli(
            [self.binary, *args], cwd=self.work, env=self.env, home=self.home, timeout=timeout
        )


@pytest.fixture
def cli(codex: str, tmp_path: Path) -> Codex:
    return Codex(codex, tmp_path)


def assert_played(run: Run) -> None:
    """The stand-in's script ran on our server, and every result reached the model."""
    assert run.returncode == 0, run
    assert FINAL_ANSWER in run.stdout, run
    assert len(run.bodies) == len(SCRIPT) + 1, run  # a turn per call, then the answer
    outputs = run.outputs()
    assert sorted(outputs) == [f"call_{i}" for i in range(len(SCRIPT))], outputs
    results = [outputs[f"call_{i}"] for i in range(len(SCRIPT))]
    for texts, _ in results:
        assert not any(REFUSED in t for t in texts), texts
    (reset, _), (fire, _), (step, _) = results
    assert any("New episode of Atari Breakout" in t and "seed 0" in t for t in reset), reset
    assert any("Step 1 (FIRE)" in t for t in fire), fire
    assert any("RIGHT" in t for t in step), step
    for _, images in results:  # the agent profile: every answer has the frame
        assert len(images) == 1, images
        assert_png(images[0])


# -- the example -----------------------------------------------------------------------------


def test_codex_exec_plays_with_the_example(cli: Codex, dev_env: dict[str, str]) -> None:
    run = cli.run(example() + our_variables(dev_env), play("atari", SCRIPT))
    assert_played(run)
    assert {"reset", "step", "state", "legal_actions", "fire", "right"} <= run.offered("atari")
    # the env table reached the server (Codex filters out the rest of its environment):
    # the episode ran in the episode host of the test's own directory
    assert episode_hosts(Path(dev_env[HOST_DIR_ENV])), "no episode host in the test's directory"


def test_readme_one_liner_adds_the_example_command(cli: Codex, dev_env: dict[str, str]) -> None:
    lines = readme_commands("codex mcp add ")
    assert len(lines) == 1, "harness_examples/README.md: its Codex section's one-liner"
    argv = shlex.split(lines[0].replace("$PWD", str(ROOT)))
    variables = [
        arg
        for k, v in tomllib.loads(our_variables(dev_env)).items()
        for arg in ("--env", f"{k}={v}")
    ]
    proc = cli.cli(*argv[1:3], *variables, *argv[3:])  # codex mcp add [--env ...] atari ...
    assert proc.returncode == 0, proc.stderr
    added = tomllib.loads(cli.config.read_text())["mcp_servers"]["atari"]
    ours = tomllib.loads(example())["mcp_servers"]["atari"]
    assert (added["command"], added["args"]) == (ours["command"], ours["args"])
    # the server as the issue had it (command and arguments only), default approvals.
    # Codex waits a second for a server not required: the first start (the episode
    # host's) may take longer, and that run has no tools; once the host listens, a
    # front answers at once
    cli.run("", play("atari", SCRIPT))
    wait_listening(Path(dev_env[HOST_DIR_ENV]))
    assert_played(cli.run("", play("atari", SCRIPT)))


def wait_listening(hosts: Path, timeout: float = 60) -> None:
    """Until an episode host in ``hosts`` accepts connections (bounded)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for path in hosts.glob("*.sock"):
            with socket.socket(socket.AF_UNIX) as probe, contextlib.suppress(OSError):
                probe.connect(str(path))
                return
        time.sleep(0.1)
    raise TimeoutError(f"no episode host listening in {hosts} within {timeout:g} s")


# -- tools that reach outside ------------------------------------------------------------------


def test_open_world_tools_need_approval_in_codex_exec(cli: Codex) -> None:
    from tests.openenv_procs import OPENENV_START_TIMEOUT, openenv_server

    reset = [("reset", {"seed": 0})]
    with openenv_server("tests.openenv_apps:count") as url:
        args = ["-m", "openenv_mcp", "serve", "openenv", "--url", url, "--stdio"]
        server = (  # TOML's strings and arrays of them are JSON's
            f"[mcp_servers.openenv]\ncommand = {json.dumps(sys.executable)}\n"
            f"args = {json.dumps(args)}\nrequired = true\n"
            f"startup_timeout_sec = {OPENENV_START_TIMEOUT:g}\n"
        )
        refused = cli.run(server, play("openenv", reset), prompt="Count.")
        approved = cli.run(
            server + 'default_tools_approval_mode = "approve"\n',
            play("openenv", reset),
            prompt="Count.",
        )
    # the bridge's tools reach the OpenEnv server: open-world, so exec refuses them...
    assert refused.returncode == 0, refused
    ((texts, _),) = refused.outputs().values()
    assert any(REFUSED in t for t in texts), texts
    # ...unless the config approves the server's tools
    assert approved.returncode == 0, approved
    ((texts, _),) = approved.outputs().values()
    assert not any(REFUSED in t for t in texts) and any("episode" in t for t in texts), texts
    assert re.search(r"ep_[\w-]+", " ".join(texts)), texts

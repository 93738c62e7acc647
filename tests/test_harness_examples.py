"""Everything in harness_examples/ runs as written.

* each agent config (Claude Code, Claude Desktop, Cursor, Gemini CLI, Codex CLI): the
  exact command it holds is started and its tools listed through an MCP client (Gemini
  CLI and Codex CLI themselves play through theirs in tests/harnesses/);
* every Inspector CLI command in inspector.md runs against a real server;
* both GRPO scripts run end to end (shortened by ``--quick``);
* the TRL helper meets TRL's ``environment_factory`` contract: checked with
  TRL's own discovery and transformers' tool-schema extraction, and by
  ``trl_grpo.py``: a real ``GRPOTrainer`` run on CPU against a served env.
"""

from __future__ import annotations

import inspect
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

import anyio
import numpy as np
import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from openenv_mcp.data.recording import iter_recordings
from openenv_mcp.server import build_server
from openenv_mcp.server.transports._host import HOST_DIR_ENV
from tests.harnesses.cli_runs import npm_cli
from tests.servers import ROOT, episode_host_dir, free_port, http_server, stop
from tests.test_independent_clients import node_tools  # noqa: F401  (a shared fixture)

EXAMPLES = ROOT / "harness_examples"
PLACEHOLDER = "/ABSOLUTE/PATH/TO/openenv-mcp"
CONFIGS = [
    "claude_code.mcp.json",
    "claude_desktop_config.json",
    "cursor.mcp.json",
    "gemini.settings.json",
    "codex.config.toml",  # TOML: its servers are mcp_servers (read here as mcpServers)
]

sys.path.insert(0, str(EXAMPLES))


@pytest.fixture(scope="module")
def dev_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The environment ``./dev`` runs in, without installing anything, with a private
    directory for the episode hosts the configs start (stopped at the end).

    Under ``./dev test`` the suite runs in the repo's own ``.venv``, set up by
    ``./dev`` itself: that is used as it is. Anywhere else ``./dev`` is pointed
    (through its OPENENV_MCP_VENV variable) at a stand-in venv whose
    ``openenv-mcp`` is this interpreter's, marked as set up.
    """
    with episode_host_dir() as hosts:
        yield _dev_env({**os.environ, HOST_DIR_ENV: str(hosts)}, tmp_path_factory)


def _dev_env(env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    if Path(sys.prefix).resolve() == (ROOT / ".venv").resolve():
        return env
    venv = tmp_path_factory.mktemp("venv")
    (venv / "bin").mkdir()
    launcher = venv / "bin" / "openenv-mcp"
    launcher.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m openenv_mcp "$@"\n')
    launcher.chmod(0o755)
    with open(ROOT / "pyproject.toml", "rb") as pyproject:
        checksum = subprocess.run(
            ["cksum"], stdin=pyproject, capture_output=True, text=True, check=True, timeout=30
        ).stdout.split()[0]
    (venv / ".openenv-mcp").mkdir()
    for tier in ("serve", "env-atari", "env-openspiel"):  # what ./dev setup stamps
        (venv / ".openenv-mcp" / tier).write_text(f"{checksum}\n")
    env["OPENENV_MCP_VENV"] = str(venv)
    return env


def filled(name: str) -> dict[str, Any]:
    """A config as a user fills it in: the placeholder replaced by the repo's path."""
    text = (EXAMPLES / name).read_text()
    assert PLACEHOLDER in text, f"{name} should carry the documented placeholder"
    return parsed(name, text.replace(PLACEHOLDER, str(ROOT)))


def parsed(name: str, text: str) -> dict[str, Any]:
    """A config's text as data; Codex's TOML with its ``mcp_servers`` as ``mcpServers``."""
    if name.endswith(".toml"):
        return {"mcpServers": tomllib.loads(text)["mcp_servers"]}
    data: dict[str, Any] = json.loads(text)
    return data


# -- agent configs ---------------------------------------------------------------------------


@pytest.mark.integration
@pytest.mark.anyio
@pytest.mark.parametrize("name", CONFIGS)
async def test_config_command_serves_atari(
    name: str, dev_env: dict[str, str], tmp_path: Path
) -> None:
    server = filled(name)["mcpServers"]["atari"]
    assert server.get("type", "stdio") == "stdio"
    assert Path(server["command"]) == ROOT / "dev"
    # ./dev run never installs; --agent: the agent profile, episodes in the episode host
    assert server["args"][:4] == ["run", "serve", "atari", "--agent"]
    transport = StdioTransport(
        command=server["command"],
        args=server["args"],
        env={**dev_env, **server.get("env", {})},
        cwd=str(tmp_path),  # an agent starts it from anywhere: the path is absolute
    )
    with anyio.fail_after(120):
        async with Client(transport, timeout=60) as client:
            assert client.server_info is not None
            assert client.server_info.name == "openenv-atari"
            names = {t.name for t in await client.list_tools()}
            assert {"reset", "step", "state", "noop", "fire"} <= names
            reset = await client.call_tool("reset", {"seed": 0})
            # the agent profile: text and image only, so every harness shows both
            assert [c.type for c in reset.content] == ["text", "image"]
            assert reset.structured_content is None and "Breakout" in reset.content[0].text


def test_configs_are_the_same_server() -> None:
    servers = [filled(name)["mcpServers"]["atari"] for name in CONFIGS]
    assert all(
        (s["command"], s["args"]) == (servers[0]["command"], servers[0]["args"]) for s in servers
    )


def readme_commands(prefix: str) -> list[str]:
    """The shell lines of harness_examples/README.md that start with ``prefix``."""
    lines = (EXAMPLES / "README.md").read_text().splitlines()
    return [line.split("  #")[0].strip() for line in lines if line.startswith(prefix)]


@pytest.mark.integration
def test_readme_sed_lines_fill_in_every_config(tmp_path: Path) -> None:
    (tmp_path / "harness_examples").symlink_to(EXAMPLES)
    (tmp_path / ".cursor").mkdir()
    (tmp_path / ".codex").mkdir()  # ~/.codex, HOME being tmp_path: never the user's
    seds = readme_commands('sed "s|')
    named = [re.search(r"harness_examples/(\S+)", line) for line in seds]
    assert sorted(m[1] for m in named if m) == sorted(CONFIGS), seds  # one line each
    for line, name in zip(seds, named, strict=True):
        assert name is not None
        proc = subprocess.run(
            ["bash", "-c", line],
            cwd=tmp_path,
            env={**os.environ, "HOME": str(tmp_path)},
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert proc.returncode == 0, proc.stderr
        written = line.split("> ")[-1].replace("~", str(tmp_path), 1)
        text = proc.stdout or ((tmp_path / written).read_text())
        server = parsed(name[1], text)["mcpServers"]["atari"]
        assert server["command"] == f"{tmp_path}/dev"


def test_the_front_door_shows_the_same_one_liner() -> None:
    """The README's Claude Code line is harness_examples/README.md's, which the test below
    runs with the real CLI."""
    lines = (ROOT / "README.md").read_text().splitlines()
    front = [line.split("  #")[0].strip() for line in lines if line.startswith("claude mcp add ")]
    assert front == readme_commands("claude mcp add ")


@pytest.fixture(scope="module")
def claude_cli(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Claude Code's CLI (npm ``@anthropic-ai/claude-code``) with a private HOME."""
    installed = "node_modules/.bin/claude"
    cache = npm_cli("claude-code", "@anthropic-ai/claude-code@2", "Claude Code's CLI", installed)
    binary = cache / installed
    home = tmp_path_factory.mktemp("home")
    return {
        "CLAUDE": str(binary),
        "HOME": str(home),
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }


def claude(cli: dict[str, str], env: dict[str, str], cwd: Path, *args: str) -> str:
    proc = subprocess.run(
        [cli["CLAUDE"], *args],
        cwd=cwd,
        env={**env, **{k: v for k, v in cli.items() if k != "CLAUDE"}},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, f"claude {shlex.join(args)}: {proc.stdout}{proc.stderr}"
    return proc.stdout


@pytest.mark.integration
def test_claude_code_connects_with_the_config_and_the_one_liner(
    claude_cli: dict[str, str], dev_env: dict[str, str], tmp_path: Path
) -> None:
    # the .mcp.json entry, given to Claude Code as it is
    entry = json.dumps(filled("claude_code.mcp.json")["mcpServers"]["atari"])
    claude(claude_cli, dev_env, tmp_path, "mcp", "add-json", "--scope", "local", "atari", entry)
    listed = claude(claude_cli, dev_env, tmp_path, "mcp", "list")
    command = "/dev run serve atari --agent --game breakout"
    assert re.search(rf"^atari: .*{command} - .*Connected", listed, re.M)
    # the README's one-liner, run from the repository root
    (one_liner,) = readme_commands("claude mcp add ")
    argv = shlex.split(one_liner.replace("$PWD", str(ROOT)))
    claude(claude_cli, dev_env, ROOT, *argv[1:3], "--scope", "local", *argv[3:])
    listed = claude(claude_cli, dev_env, ROOT, "mcp", "list")
    assert re.search(r"^atari: .*Connected", listed, re.M), listed
    # Claude Code's own project config has the shape of ours
    project = tmp_path / "project"
    project.mkdir()
    claude(claude_cli, dev_env, project, "mcp", "add", "--scope", "project", *argv[3:])
    written = json.loads((project / ".mcp.json").read_text())["mcpServers"]["atari"]
    assert written == filled("claude_code.mcp.json")["mcpServers"]["atari"]


# -- the MCP Inspector -------------------------------------------------------------------------


def inspector_commands() -> list[list[str]]:
    """The Inspector command lines of inspector.md, split like a shell would."""
    lines = (EXAMPLES / "inspector.md").read_text().splitlines()
    return [shlex.split(line) for line in lines if line.startswith("npx @modelcontextprotocol/")]


@pytest.fixture
def atari_http(dev_env: dict[str, str]) -> Iterator[int]:
    """The doc's ``./dev serve atari --transport http`` on a free port; yields the port."""
    server_lines = [
        line
        for line in (EXAMPLES / "inspector.md").read_text().splitlines()
        if line.startswith("./dev serve atari --transport http")
    ]
    assert server_lines, "inspector.md should show how to start the HTTP server"
    port = free_port()
    argv = shlex.split(server_lines[0].replace("8765", str(port)))
    proc = subprocess.Popen(
        [*argv, "--log-level", "WARNING"],
        cwd=ROOT,
        env=dev_env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                assert proc.stderr is not None
                raise RuntimeError(f"server exited: {proc.stderr.read().decode()[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", port), 0.2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise TimeoutError("the HTTP server did not listen in 120 s") from None
                time.sleep(0.05)
        yield port
    finally:
        stop(proc)


def run_inspector(
    tools: dict[str, str], argv: list[str], env: dict[str, str], cwd: Path
) -> dict[str, Any]:
    """Run one documented command with the local Inspector, JSON output; its result."""
    assert argv[:3] == ["npx", "@modelcontextprotocol/inspector@2", "--cli"], argv
    command = [tools["INSPECTOR"], "--cli", "--format", "json", "-q"]
    command += ["--connect-timeout", "60000", *argv[3:]]
    proc = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=180,
        cwd=cwd,
        env={**env, "MCP_STORAGE_DIR": str(cwd / ".inspector")},
    )
    assert proc.returncode == 0, f"{shlex.join(argv)}\nrc={proc.returncode}\n{proc.stderr[-2000:]}"
    result: dict[str, Any] = json.loads(proc.stdout)["result"]
    return result


def test_inspector_doc_shows_ui_and_cli_over_both_transports() -> None:
    commands = [shlex.join(argv) for argv in inspector_commands()]
    ui = [c for c in commands if "--cli" not in c]
    cli = [c for c in commands if "--cli" in c]
    assert any("./dev serve atari --stdio" in c for c in ui)
    assert any("--transport http" in c for c in ui)
    assert any("./dev serve atari --stdio" in c for c in cli)
    assert any("--transport http" in c for c in cli)


@pytest.mark.integration
def test_inspector_cli_commands_over_stdio(
    node_tools: dict[str, str],  # noqa: F811
    dev_env: dict[str, str],
    tmp_path: Path,
) -> None:
    stdio = [a for a in inspector_commands() if "--cli" in a and "./dev" in a]
    assert len(stdio) >= 3
    for argv in stdio:
        result = run_inspector(node_tools, argv, dev_env, ROOT)
        if "tools/list" in argv:
            assert {"reset", "fire"} <= {t["name"] for t in result["tools"]}
        elif "resources/read" in argv:
            assert json.loads(result["contents"][0]["text"])["name"] == "atari"
        else:
            assert result["structuredContent"]["step"] == 0
            assert [c["type"] for c in result["content"]] == ["text", "image"]
    # the agent config, read by the Inspector; it passes a server only the variables the
    # config names (beside PATH, HOME...), so the config names the hosts' directory: the
    # episode host it starts is this test's, never the user's
    config = filled("claude_code.mcp.json")
    config["mcpServers"]["atari"]["env"] = {HOST_DIR_ENV: dev_env[HOST_DIR_ENV]}
    (tmp_path / ".mcp.json").write_text(json.dumps(config))
    config = [a for a in inspector_commands() if "--config" in a]
    assert config
    listed = run_inspector(node_tools, config[0], dev_env, tmp_path)
    assert "reset" in {t["name"] for t in listed["tools"]}


@pytest.mark.integration
def test_inspector_cli_commands_over_http(
    node_tools: dict[str, str],  # noqa: F811
    dev_env: dict[str, str],
    atari_http: int,
    tmp_path: Path,
) -> None:
    http = [a for a in inspector_commands() if "--cli" in a and "--transport" in a]
    assert len(http) >= 3
    episode = ""
    for argv in http:
        argv = [a.replace("8765", str(atari_http)).replace("EPISODE_ID", episode) for a in argv]
        result = run_inspector(node_tools, argv, dev_env, tmp_path)
        if "tools/list" in argv:
            assert "step" in {t["name"] for t in result["tools"]}
            continue
        view = result["structuredContent"]
        if "reset" in argv:
            episode = view["episode_id"]
        assert view["episode_id"] == episode
    assert episode.startswith("ep_")
    assert view["step"] == 1  # reset, step, then state of the same episode


# -- GRPO scripts ------------------------------------------------------------------------------


def run_example(script: str, *args: str, timeout: float = 600) -> str:
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )
    assert proc.returncode == 0, f"{script} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


@pytest.mark.integration
def test_grpo_blackjack_learns_in_a_quick_run() -> None:
    out = run_example("grpo_blackjack.py", "--quick")
    curve = re.findall(r"^\s+(\d+)\s+(\d+)\s+([+-]\d\.\d+)\s+([+-]\d\.\d+)$", out, re.M)
    assert len(curve) >= 10, out
    random_mean = float(re.search(r"random policy:\s+mean return ([+-]\d\.\d+)", out).group(1))  # type: ignore[union-attr]
    learned = float(
        re.search(r"learned policy \(greedy\): mean return ([+-]\d\.\d+)", out).group(1)
    )  # type: ignore[union-attr]
    assert -0.55 < random_mean < -0.25, out
    # the run is seeded end to end; a quick run lands around -0.1 to -0.2
    assert learned > random_mean + 0.15, out
    assert "learned strategy:" in out and "hard 16:" in out


def test_grpo_advantages_are_group_relative() -> None:
    import grpo_blackjack

    returns = np.array([[1.0, -1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0]])
    advantages = grpo_blackjack.group_advantages(returns)
    assert advantages[0] == pytest.approx([np.sqrt(2), -np.sqrt(2), 0.0, 0.0])
    assert np.all(advantages[1] == 0.0)  # a group that agrees teaches nothing


@pytest.mark.integration
def test_grpo_atari_runs_and_forks_start_identical(tmp_path: Path) -> None:
    out = run_example("grpo_atari.py", "--quick", "--record", str(tmp_path))
    assert "forks started identical: True" in out, out
    rows = re.findall(r"^\s+\d+\s+yes\s", out, re.M)
    assert len(rows) == 2, out
    # A GRPO run, recorded: the trunk from its seed, every fork from its snapshot.
    from openenv_mcp.data.recording import iter_recordings

    recordings = list(iter_recordings(tmp_path, observations=False))
    forks = [r for r in recordings if r.start["from_snapshot"]]
    assert forks and len(forks) < len(recordings)
    assert all(r.complete for r in recordings)


def test_atari_forks_of_one_snapshot_stay_identical() -> None:
    import grpo_atari

    from openenv_mcp.client import MCPVectorEnv

    envs = MCPVectorEnv(build_server("atari", game="breakout"), num_envs=3)
    try:
        obs, handle = grpo_atari.fork_group(envs, seed=4, warmup=8)
        assert handle and all(np.array_equal(obs[0], o) for o in obs[1:])
        for action in (1, 2, 2, 3):  # the same actions: the same frames (sticky RNG included)
            obs, rewards, *_ = envs.step(np.full(3, action))
            assert all(np.array_equal(obs[0], o) for o in obs[1:])
            assert len(set(rewards.tolist())) == 1
    finally:
        envs.close()


# -- TRL ---------------------------------------------------------------------------------------


def trl_tools(instance: object) -> dict[str, Any]:
    """The tools TRL 1.x finds on an environment instance (GRPOTrainer.__init__)."""
    return {
        name: getattr(instance, name)
        for name, _ in inspect.getmembers(type(instance), predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    }


@pytest.fixture(scope="module")
def blackjack_env_class() -> Iterator[type[Any]]:
    from trl_environment import environment_factory

    cls = environment_factory(build_server("gymnasium", id="Blackjack-v1", render=False))
    yield cls
    cls._close_connection()


def test_trl_contract_on_blackjack(blackjack_env_class: type[Any]) -> None:
    env = blackjack_env_class()  # no arguments
    assert blackjack_env_class.__name__ == "GymnasiumBlackjackV1"
    tools = trl_tools(env)
    assert set(tools) == {"stick", "hit"}
    for tool in tools.values():
        assert inspect.signature(tool).parameters == {}
        assert tool.__doc__ and inspect.signature(tool).return_annotation is str
    prompt = [{"role": "user", "content": "Play one hand until it is over."}]
    text = env.reset(seed=3, prompt=prompt)
    # TRL glues the text to the prompt as it is ("...is over.A new episode" before)
    assert text.startswith("\n\nA new episode has started. Player sum")
    assert env.reset(seed=3, prompt=[{"role": "user", "content": ""}]) == text.lstrip()
    answer = tools["stick"]()  # STICK always ends a hand
    assert "The episode is over." in answer and "Reward" in answer
    assert env.get_reward() in (-1.0, 0.0, 1.0)
    with pytest.raises(ValueError, match="episode is over"):
        tools["hit"]()
    assert env.reset(seed=3) == text.lstrip()  # seeded: the same hand again
    other = blackjack_env_class()  # a second instance: its own episode
    other.reset(seed=4)
    assert env.get_reward() == 0.0


def test_trl_tool_schemas_from_transformers(blackjack_env_class: type[Any]) -> None:
    utils = pytest.importorskip("transformers.utils")
    schemas = {
        name: utils.get_json_schema(tool) for name, tool in trl_tools(blackjack_env_class()).items()
    }
    hit = schemas["hit"]["function"]
    assert hit["name"] == "hit" and hit["parameters"]["properties"] == {}
    assert hit["description"].startswith("Take another card (HIT).")


def test_trl_step_method_for_box_actions() -> None:
    from trl_environment import environment_factory

    cls = environment_factory(build_server("gymnasium", id="Pendulum-v1", render=False))
    try:
        env = cls()
        tools = trl_tools(env)
        assert list(tools) == ["step"]
        assert inspect.signature(tools["step"]).parameters["action"].annotation == list[float]
        assert "Args:\n    action: Box(-2.0, 2.0" in (tools["step"].__doc__ or "")
        env.reset(seed=0)
        assert "pendulum angle" in tools["step"](action=[0.5]).lower()
        with pytest.raises(Exception, match="out of bounds"):
            tools["step"](action=[9.0])
    finally:
        cls._close_connection()


def test_trl_atari_actions_return_image_parts() -> None:
    from PIL import Image
    from trl_environment import environment_factory

    cls = environment_factory(build_server("atari", game="pong"))
    try:
        env = cls()
        tools = trl_tools(env)
        assert {"noop", "fire", "left", "right"} <= set(tools)
        env.reset(seed=0)
        parts = tools["fire"]()
        assert [p["type"] for p in parts] == ["image", "text"]
        assert isinstance(parts[0]["image"], Image.Image) and parts[0]["image"].size == (160, 210)
    finally:
        cls._close_connection()


def test_trl_joins_reset_text_to_the_prompt_readably(blackjack_env_class: type[Any]) -> None:
    """TRL appends reset()'s text to the last message as it is (GRPOTrainer._generate)."""
    env = blackjack_env_class()
    for content, joint in [("Play until the hand is over.", "over.\n\nA new"), ("", "A new")]:
        prompt = [{"role": "user", "content": content}]
        joined = content + env.reset(seed=3, prompt=prompt)
        assert joined.startswith(content.removesuffix("over.") + joint)
        assert "  " not in joined
    answer = trl_tools(env)["stick"]()
    assert re.fullmatch(
        r"Player sum \d+, dealer shows \d+, usable ace: (yes|no)\. Reward "
        r"-?\d, total -?\d\. The episode is over\.",
        answer,
    ), answer


@pytest.mark.integration
def test_trl_grpo_runs_the_whole_loop_against_a_served_env(tmp_path: Path) -> None:
    """``trl_grpo.py --tiny``: TRL's own GRPOTrainer with the adapter, against a server
    over HTTP, two steps on CPU with a model and tokenizer made on the spot (no
    download): the model's tool calls reached the server, rewards came back, and
    training changed every parameter tensor."""
    records = tmp_path / "records"
    serve = ("--id", "Blackjack-v1", "--no-render", "--record", str(records))
    with http_server("gymnasium", *serve) as url:
        out = run_example("trl_grpo.py", "--tiny", "--server", url, "--output-dir", str(tmp_path))
    summary = json.loads(out.strip().splitlines()[-1])
    assert len(summary["tool_calls_per_rollout"]) == 2, out
    assert all(calls > 0 for calls in summary["tool_calls_per_rollout"]), out
    assert len(summary["rewards"]) == 2 and all(-1 <= r <= 1 for r in summary["rewards"]), out
    assert summary["tensors_changed"] == summary["tensors"] > 0, out
    # On the server: the hands the script played to choose its dataset, and the
    # trainer's rollouts whose tool calls stepped the game.
    stepped = [r for r in iter_recordings(records) if r.steps]
    assert len(stepped) > summary["probe_episodes"]
    assert {r.start["seed"] for r in stepped} >= set(summary["hands"])

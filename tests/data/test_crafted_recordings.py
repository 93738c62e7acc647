"""A shared folder of recordings is data: ``cd DIR && openenv-mcp replay .`` (or ``export``)
must never run a module planted in DIR (issue 32).

A real echo recording is made, then its start record is edited to name a planted module:
the reward reference ``evilrw:reward``, the environment class ``evilenv:Env``, or (with
nothing edited) an ``openenv_mcp_envs.py`` beside it that would shadow the installed env when the
current directory is on ``sys.path`` (``python -m openenv_mcp``). Each planted module
writes a marker file when it is imported. Replay and export (the CLI, with the folder as
the working directory, and the Python API) refuse the recording with a message naming
the reference, the file and ``--allow-module``; the marker never appears. With the
module allowed explicitly, they do what was asked.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest
from fastmcp import Client

from openenv_mcp.data.export import export_jsonl, export_minari
from openenv_mcp.errors import ArgumentError, DependencyNotInstalled
from openenv_mcp.recording import replay
from openenv_mcp.server import ServerSettings, build_server

try:  # imported while collecting, as test_minari.py does: h5py's import runs `uname`
    import h5py  # noqa: F401
    import minari
except ImportError:
    minari = None

#: The console script beside this interpreter (the venv's ``openenv-mcp``).
SCRIPT = str(Path(sys.executable).with_name("openenv-mcp"))
TIMEOUT = 120
#: A Minari export of the working directory's recordings.
EXPORT = ("export", ".", "--format", "minari", "crafted/echo-v0")
#: An OpenEnv environment class the tests serve with the openenv env.
COUNT = "tests.openenv_envs:CountEnvironment"


@dataclass
class Crafted:
    """A folder holding one recording that names a planted module, and the module."""

    folder: Path
    recording: Path
    module: str  # what --allow-module allows
    marker: Path  # written when the planted module is imported

    def ran(self) -> bool:
        return self.marker.exists()


def _planted(marker: Path, body: str) -> str:
    return (
        "from pathlib import Path\n"
        f"Path({str(marker)!r}).write_text('the planted module ran')\n"
        f"{body}\n"
    )


#: What each planted module defines besides writing its marker: enough for the
#: recording to replay exactly when the module is allowed.
_BODIES = {
    "evilrw": "from openenv_mcp.rewards import EnvReward\nreward = EnvReward(name='evil')",
    "evilenv": "from openenv_mcp_envs.echo import EchoEnv\n\nclass Env(EchoEnv):\n    pass",
    "openenv_mcp_envs": "",
}


def _record_echo(folder: Path) -> Path:
    """One real episode of the echo env, recorded by a server in memory."""

    async def run() -> Path:
        with anyio.fail_after(60):
            server = build_server("echo", settings=ServerSettings(record=str(folder)))
            async with Client(server) as client:
                reset = await client.call_tool("reset", {"seed": 3})
                await client.call_tool("step", {"action": "hello there"})
                await client.call_tool("step", {"action": "bye"})
            return Path(reset.structured_content["recording"])

    return anyio.run(run)


def _edit_start(path: Path, **changes: object) -> None:
    lines = path.read_text().splitlines()
    start = json.loads(lines[0])
    start.update(changes)
    lines[0] = json.dumps(start)
    path.write_text("\n".join(lines) + "\n")


def make_crafted(tmp_path: Path, case: str) -> Crafted:
    folder = tmp_path / "shared"
    recording = _record_echo(folder)
    module = {"reward": "evilrw", "env": "evilenv", "shadow": "openenv_mcp_envs"}[case]
    if case == "reward":
        _edit_start(recording, rewards=["evilrw:reward"])
    elif case == "env":
        _edit_start(recording, env_class="evilenv:Env")
    marker = tmp_path / f"ran-{module}"
    (folder / f"{module}.py").write_text(_planted(marker, _BODIES[module]))
    return Crafted(folder, recording, module, marker)


@pytest.fixture
def clean_imports() -> Iterator[None]:
    """What a test imported from a crafted folder (and the path it added) is forgotten after it."""
    path, modules = list(sys.path), set(sys.modules)
    yield
    sys.path[:] = path
    for name in set(sys.modules) - modules:
        if name.split(".")[0] in ("evilrw", "evilenv"):  # the installed envs stay
            del sys.modules[name]


# -- the Python API, in this process (the folder the working directory) ------------------------


@pytest.mark.parametrize("case", ["reward", "env"])
def test_replay_refuses_a_recording_naming_a_planted_module(
    tmp_path: Path, case: str, monkeypatch: pytest.MonkeyPatch, clean_imports: None
) -> None:
    crafted = make_crafted(tmp_path, case)
    monkeypatch.chdir(crafted.folder)
    with pytest.raises(ArgumentError) as refused:
        replay(crafted.recording.name)
    message = str(refused.value)
    assert crafted.module in message and crafted.recording.name in message
    assert f"--allow-module {crafted.module}" in message
    assert not crafted.ran()
    # Allowed by name, it is what the user asked for: imported, and the episode replays.
    report = replay(crafted.recording.name, allow_modules=[crafted.module])
    assert report.ok and report.steps == 2, report.text()
    assert crafted.ran()


@pytest.mark.parametrize("case", ["reward", "env"])
def test_export_refuses_a_recording_naming_a_planted_module(
    tmp_path: Path, case: str, monkeypatch: pytest.MonkeyPatch, clean_imports: None
) -> None:
    if minari is None:
        pytest.skip("the [data] extra installs minari")
    crafted = make_crafted(tmp_path, case)
    monkeypatch.chdir(crafted.folder)
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    with pytest.raises(ArgumentError, match=f"--allow-module {crafted.module}"):
        export_minari(".", f"crafted/{case}-v0")
    assert not crafted.ran() and not (tmp_path / "minari").exists()
    # JSON Lines name no module to import: the episodes are exported as data.
    report = export_jsonl(".", tmp_path / "out.jsonl")
    assert report.episodes == 1 and not crafted.ran()
    allowed = export_minari(".", f"crafted/{case}-v0", allow_modules=[crafted.module])
    assert allowed.episodes == 1
    # The env class is imported to name it in the dataset's spec; a reward is only named.
    assert crafted.ran() == (case == "env")


def test_references_are_resolved_from_installed_packages_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clean_imports: None
) -> None:
    from openenv_mcp.registry import load_data_reference

    crafted = make_crafted(tmp_path, "reward")
    monkeypatch.chdir(crafted.folder)
    source = str(crafted.recording)
    # Installed packages resolve as before (a reward class is made).
    made = load_data_reference("openenv_mcp.rewards:EnvReward", "reward", source=source)
    assert made.__name__ == "EnvReward"
    # The standard library holds no reward: naming it is refused before anything is imported.
    with pytest.raises(ArgumentError, match="the standard library"):
        load_data_reference("antigravity:geohash", "reward", source=source)
    assert "antigravity" not in sys.modules
    with pytest.raises(DependencyNotInstalled, match="not installed"):
        load_data_reference("no_such_module_anywhere:x", "reward", source=source)
    with pytest.raises(ArgumentError, match=r"--allow-module evilrw"):
        load_data_reference("evilrw:reward", "reward", source=source)
    assert not crafted.ran()
    # A module the folder is on sys.path for (as `python -m` puts the working directory):
    # refused all the same.
    monkeypatch.syspath_prepend(str(crafted.folder))
    with pytest.raises(ArgumentError, match=r"the current directory"):
        load_data_reference("evilrw:reward", "reward", source=source)
    assert not crafted.ran()


def test_a_class_named_in_the_recorded_config_is_resolved_as_data_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clean_imports: None
) -> None:
    """The openenv env's config names an OpenEnv class (``--env module:Class``): in a
    recording, that reference is data like the others."""
    pytest.importorskip("openenv", reason="OpenEnv (openenv-core) serves the openenv env")
    folder = tmp_path / "shared"

    async def record() -> Path:
        with anyio.fail_after(60):
            settings = ServerSettings(record=str(folder))
            server = build_server("openenv", settings=settings, env=COUNT)
            async with Client(server) as client:
                reset = await client.call_tool("reset", {"seed": 2})
                await client.call_tool("step", {"action": {"message": "bye"}})
            return Path(reset.structured_content["recording"])

    recording = anyio.run(record)
    start = json.loads(recording.read_text().splitlines()[0])
    assert start["config"]["env"] == COUNT
    assert replay(recording).ok  # as recorded: the test module is imported already
    marker = tmp_path / "ran-evilrw"
    (folder / "evilrw.py").write_text(
        _planted(marker, "from tests.openenv_envs import CountEnvironment as Env")
    )
    _edit_start(recording, config={**start["config"], "env": "evilrw:Env"})
    monkeypatch.chdir(folder)
    with pytest.raises(ArgumentError, match=r"names --env 'evilrw:Env'.*--allow-module evilrw"):
        replay(recording.name)
    assert not marker.exists()
    assert replay(recording.name, allow_modules=["evilrw"]).ok and marker.exists()


# -- the CLI, run in the crafted folder -------------------------------------------------------


def run(crafted: Crafted, *args: str, module: bool = False) -> subprocess.CompletedProcess[str]:
    """``openenv-mcp ARGS`` (the console script), or ``python -m openenv_mcp ARGS`` (which
    puts the working directory first on ``sys.path``), in the crafted folder."""
    command = [sys.executable, "-m", "openenv_mcp"] if module else [SCRIPT]
    return subprocess.run(
        [*command, *args],
        cwd=crafted.folder,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env={**os.environ, "MINARI_DATASETS_PATH": str(crafted.folder.parent / "minari")},
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.integration
@pytest.mark.parametrize("case", ["reward", "env"])
def test_the_cli_refuses_a_planted_module_in_the_working_directory(
    tmp_path: Path, case: str
) -> None:
    crafted = make_crafted(tmp_path, case)
    for module in (False, True):
        refused = run(crafted, "replay", ".", module=module)
        assert refused.returncode == 1, refused.stdout + refused.stderr
        assert f"--allow-module {crafted.module}" in refused.stderr, refused.stderr
        assert crafted.recording.name in refused.stderr
        assert not crafted.ran(), f"replay (-m: {module}) imported the planted module"
        exported = run(crafted, *EXPORT, module=module)
        assert exported.returncode == 2, exported.stdout + exported.stderr
        assert f"--allow-module {crafted.module}" in exported.stderr, exported.stderr
        assert not crafted.ran(), f"export (-m: {module}) imported the planted module"
    # Allowed explicitly: the user asked for it, so it is imported and does its work.
    allowed = run(crafted, "replay", ".", "--allow-module", crafted.module)
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert "all match exactly" in allowed.stdout and crafted.ran()
    crafted.marker.unlink()
    exported = run(crafted, *EXPORT, "--allow-module", crafted.module)
    assert exported.returncode == 0, exported.stdout + exported.stderr
    assert "exported 1 episodes" in exported.stdout
    assert crafted.ran() == (case == "env")


@pytest.mark.integration
def test_a_planted_module_shadowing_an_installed_env_is_refused(tmp_path: Path) -> None:
    """The recording is genuine (the registered echo env); ``openenv_mcp_envs.py`` beside it would
    be imported instead of the installed package where the working directory is on
    ``sys.path``: replay refuses there, and replays the real env where it is not."""
    crafted = make_crafted(tmp_path, "shadow")
    refused = run(crafted, "replay", ".", module=True)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "would be imported from the current directory" in refused.stderr, refused.stderr
    assert "--allow-module openenv_mcp_envs.echo.env\n" in refused.stderr
    assert not crafted.ran()
    replayed = run(crafted, "replay", ".")  # the console script: no cwd on sys.path
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "all match exactly" in replayed.stdout and not crafted.ran()


@pytest.mark.integration
def test_recordings_of_installed_modules_replay_from_any_folder(tmp_path: Path) -> None:
    crafted = make_crafted(tmp_path, "reward")
    _edit_start(crafted.recording, rewards=["openenv_mcp.rewards:EnvReward"])
    for module in (False, True):
        replayed = run(crafted, "replay", ".", module=module)
        assert replayed.returncode == 0, replayed.stdout + replayed.stderr
        assert "all match exactly" in replayed.stdout
    assert not crafted.ran()


@pytest.mark.integration
def test_recordings_made_before_the_envs_moved_replay(tmp_path: Path) -> None:
    """A recording made while the bundled envs were top-level packages names its class
    ``echo_env.env:EchoEnv``: it replays (from the env's new home, never a planted
    ``echo_env.py`` in the folder), by the console script and by ``python -m``."""
    crafted = make_crafted(tmp_path, "reward")
    _edit_start(crafted.recording, env_class="echo_env.env:EchoEnv", rewards=[])
    (crafted.folder / "echo_env.py").write_text(_planted(crafted.marker, ""))
    for module in (False, True):
        replayed = run(crafted, "replay", ".", module=module)
        assert replayed.returncode == 0, replayed.stdout + replayed.stderr
        assert "all match exactly" in replayed.stdout
    assert not crafted.ran()

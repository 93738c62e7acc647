"""Every module's tests can be found from its name: ``openenv_mcp/server/tools/_catalog.py``'s
in ``tests/server/tools/test_catalog.py``, and so on; where a module is tested elsewhere
(a behaviour spanning several modules, a transport matrix), this index says where."""

from __future__ import annotations

from pathlib import Path

from tests.servers import ROOT

#: Modules tested in files not named after them, and those files.
ELSEWHERE: dict[str, list[str]] = {
    "seats/_game.py": ["envs/test_openspiel_seats.py", "server/test_seats.py"],
    "seats/_table.py": ["server/test_seats.py"],
    "server/episodes/_seats.py": ["server/test_seats.py"],
    "server/episodes/_seat_env.py": ["server/test_seats.py"],
    "server/tools/_seats.py": ["server/test_seats.py"],
    "client/_seat.py": ["client/test_pettingzoo.py"],
    "wire/handles.py": ["server/test_secrets.py"],
    "_util/interpreter.py": ["server/test_planted_cwd.py"],
    "_launch.py": [
        "server/transports/test_prelude.py",
        "server/transports/test_host.py",
        "test_cli.py",
    ],
    "_util/lazy.py": ["test_public_api.py"],
    "_util/version.py": ["test_public_api.py"],
    "wire/schemas.py": ["test_tool_calls_space.py"],
    "authoring/check.py": ["authoring/test_authoring.py"],
    "authoring/manifest.py": ["authoring/test_authoring.py"],
    "authoring/scaffold.py": ["authoring/test_authoring.py"],
    "data/collect.py": ["data/test_episodes_as_data.py"],
    "evals/_policy.py": ["evals/test_policies.py", "evals/test_run.py"],
    "data/export.py": ["data/test_recording.py", "data/test_minari.py"],
    "recording/_format.py": ["data/test_recording.py", "data/test_crafted_recordings.py"],
    "recording/_replay.py": ["data/test_crafted_recordings.py", "data/test_recording.py"],
    "recording/_writer.py": ["data/test_recording.py", "pipeline/test_recorder.py"],
    "testing.py": ["authoring/test_testing.py"],
    "environment.py": ["authoring/test_testing.py", "pipeline/test_mask.py"],
    "narration.py": ["pipeline/test_narrator.py", "server/tools/test_profile.py"],
    "openenv/models.py": [
        "server/faces/test_openenv_typed_clients.py",
        "server/faces/test_openenv_routes.py",
    ],
    "options.py": ["test_cli.py", "envs/test_gymnasium.py"],
    "wire/portability.py": ["server/tools/test_catalog.py"],
    "registry.py": ["test_cli.py", "authoring/test_authoring.py"],
    "transports.py": ["server/test_protocol.py", "bench/test_run.py"],
    "client/_ale.py": ["client/test_atari_wrappers.py"],
    "client/_client.py": ["client/test_session.py"],
    "client/_loop.py": ["client/test_exit.py", "client/test_sync.py"],
    "client/_spec.py": ["test_spec.py", "client/test_session.py"],
    "client/_transports/base.py": ["client/test_failures.py"],
    "client/_transports/http.py": ["client/test_session.py", "server/test_protocol.py"],
    "client/_transports/inference.py": ["client/test_session.py"],
    "client/_transports/memory.py": ["client/test_session.py"],
    "client/_transports/sdk.py": ["client/test_session.py"],
    "client/_transports/stdio.py": ["client/test_session.py", "client/test_failures.py"],
    "cluster/_deploy.py": ["cluster/test_ray_serve.py"],
    "cluster/_ledger.py": ["cluster/test_ray_serve.py"],
    "cluster/_router.py": ["cluster/test_ray_serve.py"],
    "pipeline/answers.py": ["pipeline/test_view.py", "pipeline/test_path.py"],
    "pipeline/base.py": ["pipeline/test_view.py", "pipeline/test_order.py"],
    "pipeline/core.py": ["pipeline/test_ops.py", "pipeline/test_order.py"],
    "pipeline/episode.py": ["pipeline/test_ops.py", "pipeline/test_recorder.py"],
    "server/transports/_answers.py": ["server/transports/test_prelude.py"],
    "server/_app.py": ["server/test_protocol.py"],
    "server/tools/_args.py": ["server/tools/test_catalog.py", "server/test_fuzz.py"],
    "server/_build.py": ["server/test_protocol.py", "server/test_faults.py"],
    "server/tools/_direct.py": ["server/test_protocol.py"],
    "server/episodes/_episodes.py": ["server/test_client_cap.py", "server/test_faults.py"],
    "server/faces/_feed.py": ["server/faces/test_web.py"],
    "server/episodes/_handlers.py": ["server/test_protocol.py", "server/test_fuzz.py"],
    "server/transports/_logs.py": ["server/test_secrets.py"],
    "server/faces/_openenv_wire.py": ["server/faces/test_openenv_routes.py"],
    "server/tools/_results.py": ["test_errors.py", "server/tools/test_catalog.py"],
    "server/episodes/_runtime.py": ["pipeline/test_ops.py", "server/test_faults.py"],
    "server/transports/_stdio.py": ["server/test_protocol.py", "server/test_fuzz.py"],
    "server/transports/_token.py": ["server/test_secrets.py"],
    "server/tools/_tools.py": ["server/tools/test_catalog.py", "server/test_fuzz.py"],
}


def _modules() -> list[str]:
    package = ROOT / "openenv_mcp"
    return sorted(
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if path.name not in ("__init__.py", "__main__.py")
    )


def _own_test(module: str) -> Path:
    """``server/transports/_stdio.py`` -> ``tests/server/transports/test_stdio.py``."""
    path = Path(module)
    return ROOT / "tests" / path.parent / f"test_{path.stem.lstrip('_')}.py"


def test_every_module_has_tests_a_newcomer_finds_by_name() -> None:
    missing = [
        module
        for module in _modules()
        if not _own_test(module).exists() and module not in ELSEWHERE
    ]
    assert not missing, f"name a test file after each (or list it in ELSEWHERE): {missing}"


def test_the_index_points_at_files_that_exist_and_is_not_stale() -> None:
    modules = set(_modules())
    for module, files in ELSEWHERE.items():
        assert module in modules, f"{module} is listed but no longer exists"
        assert not _own_test(module).exists(), f"{module} has its own test file now"
        for name in files:
            assert (ROOT / "tests" / name).exists(), f"{module}: tests/{name} does not exist"

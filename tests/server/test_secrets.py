"""Secrets stay where only their owner reads them (issue 25, item 6).

The token comes from the environment or a file (the command line is warned about),
and no log line holds it; recordings are 0700/0600 and named by a public id, not
by the handle that drives the episode; log lines name episodes by public id too.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from fastmcp import Client
from typer.testing import CliRunner

from openenv_mcp.cli import app as cli
from openenv_mcp.server import ServerSettings, build_server, get_app
from openenv_mcp.server.transports._logs import SecretsFilter, Throttle
from openenv_mcp.server.transports._token import TOKEN_ENV
from openenv_mcp.wire.handles import public_id
from tests.server.http_attacks import TOKEN, call, get, limited_server

HANDLE = "ep_AbCdEfGhIjKlMnOpQrStUv"


def record(msg: str, *args: object, exc: BaseException | None = None) -> logging.LogRecord:
    info = (type(exc), exc, exc.__traceback__) if exc is not None else None
    return logging.LogRecord("t", logging.INFO, __file__, 1, msg, args, info)


def test_the_filter_takes_out_the_token_and_handles() -> None:
    secrets = SecretsFilter("s3cret")
    # uvicorn's access line: its arguments keep their shape (its formatter unpacks them).
    access = record('%s - "%s %s HTTP/%s" %d', "1.2.3.4:5", "GET", "/web/?token=s3cret", "1.1", 200)
    secrets.filter(access)
    assert access.getMessage() == '1.2.3.4:5 - "GET /web/?token=[token] HTTP/1.1" 200'
    wrong = record("GET /web/?token=guess&x=1")  # a wrong token may be a typo of the right one
    secrets.filter(wrong)
    assert wrong.getMessage() == "GET /web/?token=[token]&x=1"
    named = record("episode %s broke; Bearer s3cret", f"{HANDLE}@shard-1")
    secrets.filter(named)
    assert named.getMessage() == f"episode {public_id(HANDLE + '@shard-1')} broke; Bearer [token]"
    try:
        raise KeyError(HANDLE)
    except KeyError as exc:
        failed = record("failed", exc=exc)
    secrets.filter(failed)
    assert failed.exc_text is not None and HANDLE not in failed.exc_text
    assert public_id(HANDLE) in failed.exc_text


def test_public_ids_are_stable_and_not_handles() -> None:
    assert public_id(HANDLE) == public_id(HANDLE) != public_id(HANDLE[:-1] + "w")
    assert public_id(HANDLE).startswith("ep-") and HANDLE[3:] not in public_id(HANDLE)
    assert public_id("snap_" + HANDLE[3:]).startswith("snap-")


def test_the_throttle_writes_a_line_per_interval_with_a_count(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [0.0]
    throttle = Throttle(logging.getLogger("throttled"), interval=10, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="throttled"):
        for second in range(25):
            now[0] = float(second)
            for _ in range(100):
                throttle.log(logging.WARNING, "cap", "cap reached (%d open)", 128)
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "cap reached (128 open)",
        "cap reached (128 open) (999 more since the last such line)",
        "cap reached (128 open) (999 more since the last such line)",
    ]


def test_the_token_file_and_its_errors(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    runner = CliRunner()
    empty = tmp_path / "empty"
    empty.write_text("\n")
    result = runner.invoke(cli, ["serve", "echo", "--http", "--auth-token-file", str(empty)])
    assert result.exit_code == 2 and "the file is empty" in result.output
    missing = tmp_path / "missing"
    result = runner.invoke(cli, ["serve", "echo", "--http", "--auth-token-file", str(missing)])
    assert result.exit_code == 2 and "cannot read it" in result.output
    token = tmp_path / "token"
    token.write_text("t0k\n")
    both = ["serve", "echo", "--http", "--auth-token-file", str(token)]
    result = runner.invoke(cli, both, env={TOKEN_ENV: "t0k"})
    assert result.exit_code == 2 and f"two bearer tokens: --auth-token-file and {TOKEN_ENV}" in (
        result.output
    )
    # On the command line: warned about (the serve stops at the unknown env after it).
    with caplog.at_level(logging.WARNING):
        runner.invoke(cli, ["serve", "no-such-env", "--http", "--auth-token", "t0k"])
    assert any(TOKEN_ENV in r.getMessage() and "ps" in r.getMessage() for r in caplog.records)


@pytest.mark.anyio
async def test_recordings_are_private_and_named_by_public_id(tmp_path: Path) -> None:
    settings = ServerSettings(record=str(tmp_path / "rec"))
    server = build_server("echo", settings=settings)
    try:
        async with Client(server) as client:
            handle = (await client.call_tool("reset", {"seed": 1})).structured_content[  # type: ignore[index]
                "episode_id"
            ]
            await client.call_tool("step", {"action": "a"})
    finally:
        await get_app(server).aclose()
    directory = tmp_path / "rec"
    (path,) = directory.iterdir()
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.name == f"{public_id(handle)}-0001.jsonl"
    text = path.read_text()
    assert handle not in text
    assert json.loads(text.splitlines()[0])["episode"] == public_id(handle)


@pytest.mark.integration
def test_another_user_reads_no_recording(tmp_path: Path) -> None:
    """As ``nobody`` (a real other user), neither the list of recordings nor a recording
    can be read (before: 0755 and 0644, named after the live handle)."""
    if os.geteuid() != 0:
        pytest.skip("acting as another user (nobody) needs root; the modes are checked above")
    base = Path(tempfile.mkdtemp(prefix="openenv-rec-"))  # /tmp: any user may traverse it
    try:
        base.chmod(0o755)
        with limited_server(tmp_path / "log", "--record", str(base / "rec")) as server:
            call(server.port, "reset", {"seed": 1})
            (path,) = (base / "rec").iterdir()
            seen = [
                subprocess.run(
                    command,
                    user=65534,
                    group=65534,
                    extra_groups=[],
                    cwd="/",
                    capture_output=True,
                    text=True,
                    timeout=60,
                )
                for command in (["ls", str(base / "rec")], ["cat", str(path)])
            ]
        for done in seen:
            assert done.returncode != 0 and "Permission denied" in done.stderr, done
    finally:
        shutil.rmtree(base)


@pytest.mark.integration
def test_no_log_line_holds_the_token_or_a_handle(tmp_path: Path) -> None:
    """At INFO (the HTTP default): the web page opened as /web/?token=T, a wrong token,
    a tool call, and an episode evicted (a line naming it)."""
    options = ("--web", "--max-episodes", "1", "--idle-timeout", "0.2")
    with limited_server(tmp_path / "log", *options) as server:
        assert get(server.port, f"/web/?token={TOKEN}")[0] == 200
        assert get(server.port, "/web/?token=guess")[0] == 401
        first = call(server.port, "reset", {})["structuredContent"]["episode_id"]
        time.sleep(0.3)  # idle past --idle-timeout
        second = call(server.port, "reset", {})["structuredContent"]["episode_id"]
        text = server.log_text()
    assert f"evicting idle episode {public_id(first)}" in text
    assert "/web/?token=[token]" in text
    for secret in (TOKEN, "guess", first, second):
        assert secret not in text


@pytest.mark.integration
def test_the_token_from_a_file(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text(TOKEN + "\n")
    token.chmod(0o644)
    options = ("--auth-token-file", str(token))
    with limited_server(tmp_path / "log", *options, token_env=False) as server:
        assert get(server.port, "/web/api/info")[0] == 401
        assert call(server.port, "reset", {})["isError"] is False  # with the file's token
        text = server.log_text()
    assert "is readable by other users (mode 644); chmod 600 it" in text

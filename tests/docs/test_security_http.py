"""docs/security-http.md says what the server does: its flags, its defaults, its snippet."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from openenv_mcp.cli import app
from openenv_mcp.server import ServerSettings
from openenv_mcp.server.transports._http import MAX_BODY
from openenv_mcp.server.transports._limits import MAX_DEFAULT_CONNECTIONS
from tests.server.http_attacks import call, get, limited_server
from tests.servers import ROOT

DOC = (ROOT / "docs" / "security-http.md").read_text()


def row(flag: str) -> str:
    (line,) = [line for line in DOC.splitlines() if f"| `{flag}` |" in line]
    return line


def test_every_flag_named_is_a_serve_flag() -> None:
    help_text = CliRunner().invoke(app, ["serve", "--help"], terminal_width=200).output
    named = set(re.findall(r"`(--[a-z-]+)", DOC)) | set(re.findall(r" (--[a-z-]+)", DOC))
    assert named and {flag for flag in named if flag not in help_text} == set()


def test_the_defaults_in_the_table_are_the_servers() -> None:
    defaults = ServerSettings()
    assert f"| {defaults.http_read_timeout:g} s |" in row("--http-read-timeout")
    assert f"| {defaults.http_max_header_bytes // 1024} KiB |" in row("--http-max-header-bytes")
    assert f"| {defaults.http_keep_alive:g} s |" in row("--http-keep-alive")
    assert f"at most {MAX_DEFAULT_CONNECTIONS} |" in row("--http-max-connections")
    assert f"| {defaults.max_episodes} |" in row("--max-episodes")
    assert f"({defaults.max_episodes // 4}) |" in row("--max-episodes-per-client")
    assert f"| {MAX_BODY >> 20} MiB |" in DOC


@pytest.mark.integration
def test_the_snippet_starts_a_server_that_wants_the_files_token(tmp_path: Path) -> None:
    (block,) = re.findall(r"```sh\n(.*?)```", DOC, re.S)
    make_token, serve = block.strip().splitlines()
    subprocess.run(make_token, shell=True, cwd=tmp_path, check=True, timeout=60)
    token = tmp_path / "token"
    assert token.stat().st_mode & 0o777 == 0o600
    words = shlex.split(serve)
    assert words[:3] == ["openenv-mcp", "serve", "atari"]
    options = [str(token) if word == "token" else word for word in words[5:]]
    assert words[3:5] == ["--transport", "http"]
    with limited_server(
        tmp_path / "log", *options, env="atari", descriptors=1024, token_env=False
    ) as server:
        assert get(server.port, "/web/api/info")[0] == 401
        token_text = token.read_text().strip()
        result = call(server.port, "reset", {"seed": 0}, token=token_text)
        assert result["isError"] is False

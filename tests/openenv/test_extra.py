"""The ``[openenv-protocol]`` extra: ``websockets`` is not in the core install, so a server
without it serves as ever and never imports it, while the two commands that speak
OpenEnv's protocol refuse at start, naming the extra, with no traceback.

Each subprocess runs with ``websockets`` blocked by a meta-path finder (a
``sitecustomize`` on its ``PYTHONPATH``) that also writes down every attempt to import it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from openenv_mcp.openenv._extra import EXTRA
from tests.servers import (
    ROOT,
    RawStdio,
    call,
    free_port,
    initialize,
    serve_args,
    stdio_command,
    with_pythonpath,
)

pytestmark = pytest.mark.integration

BLOCKER = """
import os
import sys


class _NoWebsockets:
    def find_spec(self, name, path=None, target=None):
        if name == "websockets" or name.startswith("websockets."):
            with open(os.environ["BLOCKED_IMPORTS"], "a") as log:
                log.write(name + "\\n")
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _NoWebsockets())
"""


@pytest.fixture
def blocked(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """A subprocess environment without ``websockets``, and the file of import attempts."""
    (tmp_path / "sitecustomize.py").write_text(BLOCKER)
    attempts = tmp_path / "attempts.txt"
    attempts.write_text("")
    return {**with_pythonpath(tmp_path), "BLOCKED_IMPORTS": str(attempts)}, attempts


def test_the_blocker_blocks(blocked: tuple[dict[str, str], Path]) -> None:
    env, attempts = blocked
    done = subprocess.run(
        [sys.executable, "-c", "import websockets"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode != 0 and "No module named 'websockets'" in done.stderr
    assert attempts.read_text().split() == ["websockets"]


def test_serving_over_stdio_never_imports_websockets(
    blocked: tuple[dict[str, str], Path],
) -> None:
    env, attempts = blocked
    server = RawStdio(stdio_command("atari", "--game", "pong"), env=env)
    try:
        server.send(initialize())
        assert "result" in (server.receive(timeout=120) or {})
        server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        server.send(call(2, "reset", {"seed": 0}))
        server.send(call(3, "step", {"action": "FIRE"}))
        answers = server.until(lambda seen: sum("id" in m for m in seen) >= 2)
        replies = {m["id"]: m for m in answers if "id" in m}
        assert not replies[2]["result"].get("isError"), replies[2]
        assert replies[3]["result"]["structuredContent"]["step"] == 1, replies[3]
    finally:
        assert server.proc.stdin is not None
        server.proc.stdin.close()
        server.proc.wait(60)
    assert attempts.read_text() == "", "serve atari --stdio tried to import websockets"


def _refusal(text: str, what: str) -> None:
    assert f"{what} speaks OpenEnv's protocol" in text, text
    assert f"pip install 'openenv-mcp[{EXTRA}]'" in text and f"./dev setup {EXTRA}" in text
    assert "Traceback" not in text, text


@pytest.mark.parametrize(
    ("options", "what"),
    [
        (["echo", "--http", "--openenv"], "--openenv"),
        (["openenv", "--url", "http://127.0.0.1:9", "--http"], "serve openenv --url"),
    ],
)
def test_speaking_openenvs_protocol_without_the_extra_refuses_at_start(
    blocked: tuple[dict[str, str], Path], options: list[str], what: str
) -> None:
    env, _ = blocked
    argv = [*serve_args(*options), "--port", str(free_port())]
    done = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode != 0, done.stderr
    _refusal(done.stderr, what)
    assert done.stdout == ""


def test_mounting_an_openenv_server_over_stdio_without_the_extra_tells_the_harness(
    blocked: tuple[dict[str, str], Path],
) -> None:
    """Over stdio a harness reads the refusal: the server answers ``initialize`` with it
    (as for any environment that cannot be served), and logs it once, untraced."""
    env, _ = blocked
    server = RawStdio(stdio_command("openenv", "--url", "http://127.0.0.1:9"), env=env)
    try:
        server.send(initialize())
        answer = server.receive(timeout=120) or {}
        _refusal(answer["result"]["instructions"], "serve openenv --url")
    finally:
        assert server.proc.stdin is not None
        server.proc.stdin.close()
        server.proc.wait(60)
    _refusal(server.stderr(), "serve openenv --url")

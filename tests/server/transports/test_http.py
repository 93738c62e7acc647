"""HTTP safety: Host/Origin validation (DNS rebinding), bearer tokens, body limits."""

from __future__ import annotations

import contextlib
import http.client
import json
import urllib.error
import urllib.parse
import urllib.request

import pytest
from typer.testing import CliRunner

from openenv_mcp.cli import app
from openenv_mcp.errors import ArgumentError
from openenv_mcp.server.transports._http import http_run_options
from tests.figures import record_figure
from tests.servers import INITIALIZE, http_server, sessionless_call

pytestmark = pytest.mark.integration


def post(url: str, headers: dict[str, str], body: bytes | None = None) -> tuple[int, str]:
    request = urllib.request.Request(
        url,
        data=body if body is not None else json.dumps(INITIALIZE).encode(),
        headers={
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            **headers,
        },
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_host_and_origin_are_validated() -> None:
    with http_server("echo") as url:
        assert post(url, {})[0] == 200
        assert post(url, {"Origin": "http://127.0.0.1:3000"})[0] == 200
        status, _ = post(url, {"Host": "evil.example"})
        assert 400 <= status < 500
        status, _ = post(url, {"Origin": "http://evil.example"})
        assert 400 <= status < 500


def test_bearer_token() -> None:
    with http_server("echo", "--auth-token", "s3cret") as url:
        assert post(url, {"Authorization": "Bearer s3cret"})[0] == 200
        status, body = post(url, {})
        assert status == 401 and "no Authorization header" in body
        status, body = post(url, {"Authorization": "Bearer guess"})
        assert status == 401 and "wrong bearer token" in body
        status, _ = post(url, {"Authorization": "Bearer s3cret", "Host": "evil.example"})
        assert 400 <= status < 500


def test_oversized_body_is_refused() -> None:
    """Refused from its Content-Length, before the body is read."""
    with http_server("echo") as url:
        parts = urllib.parse.urlsplit(url)
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        conn.putrequest("POST", parts.path)
        conn.putheader("content-type", "application/json")
        conn.putheader("accept", "application/json, text/event-stream")
        conn.putheader("content-length", str(17 * 1024 * 1024))
        conn.endheaders()
        response = conn.getresponse()
        body = response.read().decode()
        conn.close()
        assert response.status == 413 and "the limit is" in body


def test_non_loopback_bind_needs_a_token() -> None:
    with pytest.raises(ArgumentError, match="auth-token"):
        http_run_options("0.0.0.0", None)
    assert http_run_options("0.0.0.0", "t")["allowed_hosts"][-1] == "0.0.0.0"
    result = CliRunner().invoke(app, ["serve", "echo", "--http", "--host", "0.0.0.0"])
    assert result.exit_code == 2 and "needs a bearer token" in result.output


def post_chunked(url: str, headers: dict[str, str], size: int) -> tuple[int, str]:
    """POST ``size`` bytes as a chunked body (no Content-Length to check up front)."""
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        conn.putrequest("POST", parts.path)
        for name, value in {"content-type": "application/json", **headers}.items():
            conn.putheader(name, value)
        conn.putheader("transfer-encoding", "chunked")
        conn.endheaders()
        chunk = b" " * (1 << 20)
        with contextlib.suppress(OSError):  # the server may answer and close mid-body
            for _ in range(size // len(chunk)):
                conn.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            conn.send(b"0\r\n\r\n")
        response = conn.getresponse()
        return response.status, response.read().decode()
    finally:
        conn.close()


def test_oversized_chunked_body_is_refused() -> None:
    """No Content-Length: refused with 413 once the body passes the limit; serving goes on."""
    with http_server("echo") as url:
        status, body = post_chunked(url, {}, 18 * 1024 * 1024)
        assert status == 413 and "the limit is" in body
        assert post(url, {})[0] == 200


def test_each_attack_is_rejected() -> None:
    """Every guard holds for the calls the fast lane answers too; the figures are reported."""
    token = {"Authorization": "Bearer s3cret"}
    with http_server("echo", "--auth-token", "s3cret") as url:
        lane, request = sessionless_call("reset")
        call = json.dumps(request).encode()
        attacks = {
            "wrong Host": {**token, "Host": "evil.example"},
            "wrong Origin": {**token, "Origin": "http://evil.example"},
            "missing token": {},
            "wrong token": {"Authorization": "Bearer guess"},
        }
        seen = {}
        for name, headers in attacks.items():
            for kind, extra, body in (("initialize", {}, None), ("tools/call", lane, call)):
                status, text = post(url, {**extra, **headers}, body)
                assert 400 <= status < 500, (name, kind, status, text)
                assert "episode_id" not in text  # the call did not run
                seen[f"{name} ({kind})"] = status
        status, text = post(url, {**lane, **token}, call)
        assert status == 200 and '"isError":false' in text  # the right ones are accepted
        status, _ = post_chunked(url, token, 18 * 1024 * 1024)
        seen["18 MB chunked body"] = status
        assert status == 413
    record_figure(
        "http: each attack rejected: "
        + ", ".join(f"{name} {status}" for name, status in seen.items())
        + "; the right Host, Origin and token accepted (200)"
    )


def test_another_local_origin_cannot_drive_openenv_routes() -> None:
    """With no token, a page of another loopback origin (any local web app) could open
    OpenEnv's socket and send text/plain resets (issue 32): every route and method now
    meets one Origin rule, over real sockets."""
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    with http_server("echo", "--openenv") as url:
        base = url.removesuffix("/mcp")
        ws_url = base.replace("http://", "ws://") + "/openenv/ws"
        with pytest.raises(InvalidStatus) as refused:
            connect(ws_url, origin="http://localhost:3000", open_timeout=30)
        assert refused.value.response.status_code == 403
        with connect(ws_url, origin=base, open_timeout=30) as ws:
            ws.send(json.dumps({"type": "reset", "data": {}}))
            assert json.loads(ws.recv(timeout=30))["type"] == "observation"
        reset = f"{base}/openenv/reset"
        plain = {"content-type": "text/plain", "Origin": "http://localhost:3000"}
        status, body = post(reset, plain, b"{}")
        assert status == 403 and "another origin ('http://localhost:3000')" in body
        assert post(reset, {"content-type": "text/plain"}, b"{}")[0] == 200  # no page sent it
        assert post(reset, {"Origin": "http://localhost:3000"}, b"{}")[0] == 200  # JSON: preflight

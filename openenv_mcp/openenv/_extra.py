"""The ``[openenv-protocol]`` extra: what speaking OpenEnv's protocol needs beyond the core.

OpenEnv's protocol is a WebSocket session: ``serve ENV --http --openenv`` answers it on
``/openenv/ws`` (uvicorn's WebSocket implementation is ``websockets``), and ``serve
openenv --url URL`` speaks it to an OpenEnv server's ``/ws``. Nothing else uses
``websockets``, so the core install does not carry it; each of those two refuses at
start, naming the extra, when it is missing. ``[openenv]`` (openenv-core, for ``serve
openenv --env``) includes it.
"""

from __future__ import annotations

from openenv_mcp.errors import DependencyNotInstalled

__all__ = ["EXTRA", "require_websockets"]

#: The extra that carries ``websockets``.
EXTRA = "openenv-protocol"


def require_websockets(what: str) -> None:
    """Refuse ``what`` (``"--openenv"``, ``"serve openenv --url"``) unless ``websockets``
    imports.

    Raises:
        DependencyNotInstalled: it does not; the message names the extra to install.
    """
    try:
        import websockets  # noqa: F401
    except ImportError:
        raise DependencyNotInstalled(
            f"{what} speaks OpenEnv's protocol over WebSockets, which needs the websockets "
            f"package: pip install 'openenv-mcp[{EXTRA}]' (or ./dev setup {EXTRA}; the "
            "[openenv] extra includes it)"
        ) from None

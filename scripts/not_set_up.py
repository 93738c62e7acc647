"""What ``./dev run`` runs, with the system's Python, when openenv-mcp is not set up yet.

An agent harness starts ``./dev run serve ENV --stdio`` and shows none of its stderr,
so a bare exit would read "connection closed". This answers the harness's MCP
handshake instead, over stdin/stdout: instructions naming the set-up command, one tool
(``setup_needed``) whose description and answer name it too, until stdin ends.

The standard library only, and no package import (nothing is installed):
``openenv_mcp/server/transports/_unready.py`` is loaded from its file.

    python3 -P scripts/not_set_up.py --reason "..." --fix "run /path/to/dev setup atari"
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

_MODULE = Path(__file__).resolve().parents[1] / "openenv_mcp/server/transports/_unready.py"


def main() -> int:
    spec = importlib.util.spec_from_file_location("openenv_mcp_unready", _MODULE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    status: int = module.main(sys.argv[1:])
    return status


if __name__ == "__main__":
    sys.exit(main())

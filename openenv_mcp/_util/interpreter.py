"""How openenv-mcp starts Python processes of its own: this interpreter, never importing
from the directory it runs in.

Every child (the episode host, worker processes, the servers ``collect``, ``check``, the
benchmarks and the client start) runs :func:`python_command`. A leaf: the launcher, the
CLI and the server all import it, and it imports nothing of theirs.
"""

from __future__ import annotations

import sys

__all__ = ["python_command"]


def python_command(*args: str) -> list[str]:
    """The argv that runs this interpreter with ``args`` and never imports from the working
    directory: ``-P`` keeps it off ``sys.path`` (``-m`` would put it first, ``-c`` its empty
    entry), so a module planted in the project a harness opened never runs. ``PYTHONPATH``
    and the installed packages still apply."""
    return [sys.executable, "-P", *args]

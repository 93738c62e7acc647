"""The same as :mod:`openenv_mcp.data.recording`, where it lives now: this path keeps working."""

from openenv_mcp.data.recording import *  # noqa: F403
from openenv_mcp.data.recording import __all__ as __all__

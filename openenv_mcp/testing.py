"""The same as :mod:`openenv_mcp.authoring.testing`, where it lives now: this path keeps working."""

from openenv_mcp.authoring.testing import *  # noqa: F403
from openenv_mcp.authoring.testing import __all__ as __all__

"""The same as :mod:`openenv_mcp.recording`, where the recording format, its writer and
replay live (below the pipeline, apart from the drivers here): this path keeps working."""

from openenv_mcp.recording import *  # noqa: F403
from openenv_mcp.recording import __all__ as __all__
from openenv_mcp.recording import finish_videos as finish_videos
from openenv_mcp.recording import iter_frames as iter_frames

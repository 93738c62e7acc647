"""Every episode recorded as it happens (``serve ... --record DIR``), read back and replayed.

One episode is one JSON Lines file, ``DIR/<public id>-<n>.jsonl`` (``n``
counts the resets of one handle), written where the environment lives and
flushed after every record, so a server killed at any point leaves every step
up to the last one answered readable. The public id
(:func:`~openenv_mcp.wire.handles.public_id`) names the episode without being its
handle, which is a capability: neither a file name nor a record holds a handle.
The directory is made 0700 and every file 0600 (the owner's alone).

* ``start``: the environment, its class and config, the seed and options, the
  package versions, the spaces, the first observation and info, and the call;
* ``step``: the action (as the env took it), the reward and its breakdown, the
  env's own reward (``env_reward``), terminated, truncated, info, the observation, and the tool
  call that drove it (on the first step of a call; ``repeat`` makes several);
* ``call``: another tool call on the episode (``state``, the env's own tools);
* ``end``: why it ended (terminated, truncated, reset, closed, broken), steps,
  return, and the trajectory rewards.

Array observations (frames) are stored losslessly as zstd of the XOR with the
previous observation: consecutive Atari frames differ in few bytes. With
``record_video`` (and the ``av`` package) each finished episode with frames is
also written as ``.mp4`` beside it, for people.

:func:`read_recording` reads a file back; a file without its ``end`` record
(the server was killed) reads as ``complete=False``, never as an error.

A game of seats (``serve ENV --seats``) is recorded twice over: each seat as an
episode (its start record names its ``table`` and ``seat``, and the table's file), and
the game whole in its table's file (``tb-<digest>-<n>.jsonl``: every seat's moves,
rewards and observation digests), which :func:`replay_table` replays
(:mod:`._table_recording`); a seat's file alone does not replay.

Where each part lives: the format and its reader (:mod:`._format`), the writer
(:mod:`._writer`), replay (:mod:`._replay`). This package sits below the episode
pipeline (whose recorder layer calls the writer) and imports nothing above it: what
drives clients and servers to make data (``collect``, ``export``) is
:mod:`openenv_mcp.data`.
"""

# ``iter_frames`` and ``finish_videos`` (``X as X``: importable here, not in ``__all__``)
# are what the server uses beside the public names: its web page's replays, its shutdown.
from openenv_mcp.recording._format import (
    FORMAT,
    RecordedStep,
    Recording,
    iter_recordings,
    read_recording,
    versions,
)
from openenv_mcp.recording._format import iter_frames as iter_frames
from openenv_mcp.recording._replay import ReplayReport, replay
from openenv_mcp.recording._table_recording import (
    TableRecorder,
    TableRecording,
    TableReplayReport,
    is_table_recording,
    read_table_recording,
    replay_table,
)
from openenv_mcp.recording._writer import EpisodeRecorder, check_writable, write_video
from openenv_mcp.recording._writer import finish_videos as finish_videos

__all__ = [
    "FORMAT",
    "EpisodeRecorder",
    "RecordedStep",
    "Recording",
    "ReplayReport",
    "TableRecorder",
    "TableRecording",
    "TableReplayReport",
    "check_writable",
    "is_table_recording",
    "iter_recordings",
    "read_recording",
    "read_table_recording",
    "replay",
    "replay_table",
    "versions",
    "write_video",
]

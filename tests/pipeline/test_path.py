"""One step's path: an op goes down the chain and one answer comes up, in a bounded
number of Python calls (a count, never a time: it guards against layers that start
reaching around the chain, or a hop added per step)."""

from __future__ import annotations

import sys
from collections import Counter
from types import FrameType
from typing import Any

from openenv_mcp.pipeline import EpisodePipeline, Reset, Step
from openenv_mcp.pipeline.view import Reply
from openenv_mcp_envs.atari import AtariEnv

#: Python calls one Atari step takes from the op to its answer, all included (the env's
#: own, the emulator wrapper's, the codecs'): 55 when this bound was set (69 before the
#: pipeline became one chain), 22 of them in the pipeline's own modules.
MAX_CALLS = 64
MAX_PIPELINE_CALLS = 26


def test_one_atari_step_takes_a_bounded_number_of_calls() -> None:
    episode = EpisodePipeline(AtariEnv(AtariEnv.Config()), "ep_path")
    episode.run(Reset(0, None, "zstd"))
    step = Step(1, "zstd")
    episode.run(step)  # warm: first-call work (caches) is not the path
    calls: Counter[str] = Counter()

    def count(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            calls[frame.f_globals.get("__name__", "")] += 1

    sys.setprofile(count)
    try:
        reply = episode.run(step)
    finally:
        sys.setprofile(None)
    assert isinstance(reply, Reply) and reply.view["step"] == 2
    total = sum(calls.values())
    in_pipeline = sum(n for m, n in calls.items() if m.startswith("openenv_mcp.pipeline"))
    assert total <= MAX_CALLS, f"{total} calls on one step's path: {calls}"
    assert in_pipeline <= MAX_PIPELINE_CALLS, f"{in_pipeline} in the pipeline: {calls}"

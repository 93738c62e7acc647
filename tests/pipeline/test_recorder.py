"""The Recorder alone: an episode's file, from its start to why it ended."""

from __future__ import annotations

from pathlib import Path

import pytest

from openenv_mcp.data.recording import read_recording
from openenv_mcp.pipeline import EpisodePipeline, Look, PipelineOptions, Reset, Step
from tests.faulty_env import FaultyConfig, FaultyEnv


def test_a_recording_holds_the_calls_and_says_how_the_episode_ended(tmp_path: Path) -> None:
    episode = EpisodePipeline(
        FaultyEnv(FaultyConfig()), "ep_rec", PipelineOptions(record=str(tmp_path))
    )
    path = episode.run(Reset(3, None, "none")).view["recording"]
    episode.run(Step("one", "none", repeat=2))  # the call travels with the op
    episode.run(Look("none"))
    with pytest.raises(RuntimeError):
        episode.run(Step("raise", "none"))
    recording = read_recording(path)
    assert recording.start["seed"] == 3 and len(recording.steps) == 2
    assert recording.steps[0].call == {"tool": "step", "arguments": {"action": "one", "repeat": 2}}
    assert recording.steps[1].call is None  # the second step of the same call
    assert recording.end is not None and recording.end["status"] == "broken"
    assert Path(path).parent == tmp_path

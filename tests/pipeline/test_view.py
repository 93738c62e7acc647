"""The View alone: the structured answer, the observation's form, and frames a model
can read."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image

from openenv_mcp.pipeline import MIN_FRAME_EDGE, EpisodePipeline
from openenv_mcp.pipeline.base import Moment
from openenv_mcp.pipeline.core import EnvCore
from openenv_mcp.pipeline.view import View
from openenv_mcp_envs.echo import EchoEnv


def test_the_view_holds_the_counters_and_the_observation_as_asked() -> None:
    core = EnvCore(EchoEnv(EchoEnv.Config()), "ep_v")
    core.reset(0, {"greeting": "hi"})
    view = View(core.episode, frame_scale=1)
    outcome = view.outcome(Moment("hi", core.episode.info), "text", "none", opening=True)
    assert outcome.view["observation"] == "hi"  # not an array: always sent
    assert outcome.view["episode_id"] == "ep_v" and outcome.view["status"] == "running"
    assert outcome.png is None and outcome.text == "text" and "repeated" not in outcome.view


def test_frames_are_scaled_to_be_legible_when_no_scale_is_given() -> None:
    episode = EpisodePipeline(EchoEnv(EchoEnv.Config(frame=True)), "ep_f")
    episode.view.frame_scale = None
    png = episode.reset(0, None, "png").png
    assert png is not None
    image = np.asarray(Image.open(io.BytesIO(png)))
    assert min(image.shape[:2]) >= MIN_FRAME_EDGE  # 16 px frames, scaled 25x
    assert episode.frame_png() is not None  # a watcher's frame: the env's own size

"""The View alone: the answer it writes (the structured view, the text a model reads,
the frame), the observation's form, and frames a model can read."""

from __future__ import annotations

import base64
import io

import numpy as np
from PIL import Image

from openenv_mcp.pipeline import MIN_FRAME_EDGE, EpisodePipeline, Frame, Look, Reset, Step
from openenv_mcp.pipeline.core import EnvCore
from openenv_mcp.pipeline.repeat import Repeat
from openenv_mcp.pipeline.rewards import ServedRewards
from openenv_mcp.pipeline.view import View
from openenv_mcp_envs.echo import EchoEnv


def test_the_view_holds_the_counters_the_text_and_the_observation_as_asked() -> None:
    view = View(EnvCore(EchoEnv(EchoEnv.Config()), "ep_v"), frame_scale=1)
    reply = view.reset(Reset(7, {"greeting": "hi"}, "none"))
    assert reply.view["observation"] == "hi"  # not an array: always sent
    assert reply.view["episode_id"] == "ep_v" and reply.view["status"] == "running"
    assert reply.text == "New episode of echo (episode ep_v, seed 7). Observation: 'hi'."
    assert reply.content == [{"type": "text", "text": reply.text}]  # no frame
    assert reply.view["summary"] == reply.text and "repeated" not in reply.view
    looked = view.look(Look("none"))
    assert looked.text == "Episode ep_v of echo at step 0: return 0. Observation: 'hi'."


def test_a_steps_text_names_the_action_and_says_when_the_episode_is_over() -> None:
    core = EnvCore(EchoEnv(EchoEnv.Config(max_steps=2)), "ep_s")
    view = View(Repeat(ServedRewards(core, None)), frame_scale=1)
    view.reset(Reset(0, None, "none"))
    reply = view.step(Step("hello there", "none", repeat=2))
    assert reply.view["repeated"] == 2 and reply.view["reward"] == reply.view["episode_return"]
    assert reply.text.startswith("Step 2 (hello there x2): reward +")
    assert "Episode over (truncated) after 2 steps" in reply.text


def test_frames_are_scaled_to_be_legible_when_no_scale_is_given() -> None:
    episode = EpisodePipeline(EchoEnv(EchoEnv.Config(frame=True)), "ep_f")
    episode.chain.frame_scale = None
    reply = episode.run(Reset(0, None, "png"))
    image_block = reply.content[1]
    assert image_block["type"] == "image" and image_block["mimeType"] == "image/png"
    image = np.asarray(Image.open(io.BytesIO(base64.b64decode(image_block["data"]))))
    assert min(image.shape[:2]) >= MIN_FRAME_EDGE  # 16 px frames, scaled 25x
    assert episode.run(Frame()) is not None  # a watcher's frame: the env's own size

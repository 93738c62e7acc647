"""The tasks layers alone: a task starts as its seed and options, the recording holds the
reset the env got and whether the task succeeded, and a fork of a task's episode is
judged as the task."""

from __future__ import annotations

from pathlib import Path

import pytest

from openenv_mcp.data.recording import read_recording
from openenv_mcp.errors import UnknownTask
from openenv_mcp.pipeline import EpisodePipeline, Look, PipelineOptions, Reset, Step, Summary
from openenv_mcp.recording import replay
from openenv_mcp_envs.echo import EchoEnv


def pipeline(**options: object) -> EpisodePipeline:
    return EpisodePipeline(EchoEnv(EchoEnv.Config()), "ep_tasks", PipelineOptions(**options))  # type: ignore[arg-type]


def test_a_task_is_sent_on_reset_and_look_and_judged_on_the_step_that_ends_it() -> None:
    episode = pipeline()
    opened = episode.run(Reset(None, {"split": "test", "index": 1}, "none")).view
    assert opened["observation"] == "howdy"
    assert opened["task"] == {
        "id": "echo-test-1",
        "split": "test",
        "index": 1,
        "difficulty": "short",
        "data": {"greeting": "howdy"},
    }
    stepped = episode.run(Step("howdy", "none")).view
    assert "task" not in stepped  # a running step carries nothing more
    assert episode.run(Look("none")).view["task"]["id"] == "echo-test-1"
    ended = episode.run(Step("bye", "none")).view
    assert ended["task"]["success"] is True
    assert episode.run(Summary())["task"]["success"] is True
    # the next reset without a task plays no task
    assert "task" not in episode.run(Reset(0, None, "none")).view


def test_the_same_task_twice_starts_the_same_episode() -> None:
    first = pipeline().run(Reset(None, {"task": "echo-train-3"}, "none")).view
    second = pipeline().run(Reset(None, {"task": "echo-train-3"}, "none")).view
    assert first["observation"] == second["observation"] == "ahoy"
    assert first["info"]["nonce"] == second["info"]["nonce"]


def test_a_refused_task_leaves_the_episode_as_it_was() -> None:
    episode = pipeline()
    episode.run(Reset(None, {"task": "echo-train-0"}, "none"))
    episode.run(Step("hi", "none"))
    with pytest.raises(UnknownTask):
        episode.run(Reset(None, {"split": "test", "index": 4}, "none"))
    assert episode.episode.step == 1 and episode.episode.task is not None
    assert episode.run(Step("bye", "none")).view["task"]["success"] is True


def test_the_recording_holds_the_reset_the_env_got_and_the_judgement(tmp_path: Path) -> None:
    describe = {
        "env": "echo",
        "env_class": "openenv_mcp_envs.echo:EchoEnv",
        "title": "Echo",
        "config": EchoEnv.Config().model_dump(mode="json"),
        "rewards": [],
    }
    episode = pipeline(record=str(tmp_path), describe=describe)
    path = episode.run(Reset(None, {"split": "test", "index": 0}, "none")).view["recording"]
    episode.run(Step("bonjour", "none"))
    episode.run(Step("bye", "none"))
    recording = read_recording(path)
    assert recording.start["seed"] == 0
    assert recording.start["options"] == {"greeting": "bonjour"}
    assert recording.start["task"]["id"] == "echo-test-0"
    assert recording.end is not None and recording.end["task"]["success"] is True
    report = replay(path)  # from the seed and options alone, no task set needed
    assert report.ok, report


def test_a_fork_of_a_tasks_episode_is_judged_as_the_task() -> None:
    episode = pipeline()
    episode.run(Reset(None, {"task": "echo-test-3"}, "none"))
    saved = episode.snapshot()
    fork = pipeline()
    fork.restore(saved, "none")
    assert fork.run(Step("hallo", "none")).view.get("task") is None
    assert fork.run(Step("bye", "none")).view["task"]["success"] is True
    assert episode.run(Step("bye", "none")).view["task"] == {
        **fork.episode.task,  # type: ignore[dict-item]
        "success": False,
    }

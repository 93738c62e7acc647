"""TRL's ``GRPOTrainer(environment_factory=...)`` driving OpenEnv's own typed client,
``OpenSpielEnv`` (unchanged, from OpenEnv's ``openspiel_env`` package), against
``openenv-mcp serve openspiel --http --openenv``.

The environment class is the one TRL's docs show for OpenEnv (its ``grpo_catch``
example: a class whose ``__init__`` opens an ``OpenSpielEnv`` client, whose public
methods are the model's tools, and whose ``get_reward`` is the rollout's reward), with
the client used in sync mode (``.sync()``), as openenv-core 0.3 asks. The game is Catch
on a 2x3 board (``--game-params rows=2,columns=3``): one move decides it, +1 when the
paddle ends under the ball, -1 otherwise, so a group of rollouts differs in reward and
GRPO has something to learn. The model is made on the spot as ``trl_grpo.py --tiny``
makes its own (a two-layer Qwen2 and a tokenizer trained on the games just played, no
download), shown each tool call first, then trained two GRPO steps on CPU.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from openenv_mcp.data.recording import iter_recordings
from tests.figures import record_figure
from tests.servers import ROOT, http_server, with_pythonpath

pytestmark = pytest.mark.integration

#: Rollouts per GRPO step (one prompt's group).
GROUP = 6

#: The run, in a process that imports OpenEnv's package (argv: the OpenEnv base URL,
#: the repository, an output directory); its last line is a JSON summary.
SCRIPT = '''
import json, os, sys

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
os.environ["HF_HUB_OFFLINE"] = "1"  # nothing here may be downloaded
BASE, ROOT, OUTPUT, GROUP = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
sys.path.insert(0, os.path.join(ROOT, "harness_examples"))

import torch
from datasets import Dataset
from openspiel_env import OpenSpielEnv
from openspiel_env.models import OpenSpielAction
from trl import GRPOConfig, GRPOTrainer

import trl_grpo

PROMPT = "Catch the ball: move the paddle under it with left(), stay() or right()."
COLUMNS = 3
ACTIONS = ("left", "stay", "right")


class CatchEnv:
    """TRL's environment for OpenEnv's Catch, around OpenEnv's client."""

    steps = 0  # steps sent, by every instance

    def __init__(self):
        self.client = OpenSpielEnv(base_url=BASE).sync()
        self.client.connect()
        self.reward = 0.0
        self.done = False

    @staticmethod
    def _describe(info_state):
        ball = [c + 1 for c in range(COLUMNS) if info_state[c] == 1.0]
        paddle = [c + 1 for c in range(COLUMNS) if info_state[COLUMNS + c] == 1.0]
        return f" Ball: column {ball[0] if ball else '-'}; paddle: column {paddle[0]}."

    def reset(self, **kwargs):
        result = self.client.reset(seed=kwargs.get("seed"))
        self.reward, self.done = 0.0, result.done
        return self._describe(result.observation.info_state)

    def _act(self, action_id):
        if self.done:
            raise ValueError("The game is over.")
        result = self.client.step(OpenSpielAction(action_id=action_id, game_name="catch"))
        type(self).steps += 1
        self.reward, self.done = result.reward or 0.0, result.done
        return self._describe(result.observation.info_state) + f" Reward {self.reward:+.0f}."

    def left(self) -> str:
        """Move the paddle one column left.

        Returns:
            Where the ball and the paddle are, and the reward.
        """
        return self._act(0)

    def stay(self) -> str:
        """Keep the paddle where it is.

        Returns:
            Where the ball and the paddle are, and the reward.
        """
        return self._act(1)

    def right(self) -> str:
        """Move the paddle one column right.

        Returns:
            Where the ball and the paddle are, and the reward.
        """
        return self._act(2)

    def get_reward(self) -> float:
        return self.reward


torch.manual_seed(0)
torch.set_num_threads(1)  # a tiny model's ops are too small to share
# The dataset: seeds whose ball falls on the left (left() catches it); every way of
# playing them is a chat the tokenizer learns from.
probe, seeds, chats, seed = CatchEnv(), [], [], 0
while len(seeds) < 2:
    rewards = []
    for action in ACTIONS:
        text = probe.reset(seed=seed)
        answer = getattr(probe, action)()
        rewards.append(probe.get_reward())
        call = {"type": "function", "function": {"name": action, "arguments": {}}}
        chats.append([
            {"role": "user", "content": PROMPT + text},
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "name": action, "content": answer},
        ])
    if rewards[0] > 0:
        seeds.append(seed)
    seed += 1
probe_steps = CatchEnv.steps
model, tokenizer = trl_grpo.tiny_model_and_tokenizer(chats, [getattr(probe, a) for a in ACTIONS])
dataset = Dataset.from_dict(
    {"prompt": [[{"role": "user", "content": PROMPT}]] * len(seeds), "seed": seeds}
)
config = GRPOConfig(
    output_dir=OUTPUT,
    per_device_train_batch_size=GROUP,
    num_generations=GROUP,
    max_completion_length=64,
    max_tool_calling_iterations=1,  # one move decides the game
    learning_rate=3e-4,
    max_steps=len(seeds),
    shuffle_dataset=False,
    use_cpu=True,
    report_to=[],
    save_strategy="no",
    logging_steps=1,
    seed=0,
)
trainer = GRPOTrainer(
    model=model,
    processing_class=tokenizer,
    args=config,
    train_dataset=dataset,
    environment_factory=CatchEnv,
)


def prompt_ids(seed):
    """A game's prompt as TRL renders it for generation (the text reset adds, the tools)."""
    text = CatchEnv().reset(seed=seed)
    rendered = tokenizer.apply_chat_template(
        [{"role": "user", "content": PROMPT + text}],
        tools=trainer.tools,
        add_generation_prompt=True,
        tokenize=False,
        **trainer.chat_template_kwargs,
    )
    return list(tokenizer(rendered, add_special_tokens=False)["input_ids"])


# A model this small never writes a tool call by chance: first show it each one.
prompts = [prompt_ids(s) for s in seeds]
calls = trl_grpo.tool_calls(ACTIONS)
shown = trl_grpo.show_tool_calls(trainer.model, tokenizer, prompts, calls=calls, until=0.2)

before = CatchEnv.steps
start = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
trainer.train()
changed = sum(not torch.equal(start[n], p.detach()) for n, p in trainer.model.named_parameters())
logs = trainer.state.log_history
print(json.dumps({
    "seeds": seeds,
    "probe_steps": probe_steps,
    "shown": shown,
    "tools": sorted(t.__name__ for t in trainer.tools),
    "calls": [e["tools/call_frequency"] for e in logs if "tools/call_frequency" in e],
    "failures": [e["tools/failure_frequency"] for e in logs if "tools/failure_frequency" in e],
    "rewards": [e["rewards/CatchEnv/mean"] for e in logs if "rewards/CatchEnv/mean" in e],
    "trainer_steps": CatchEnv.steps - before,
    "tensors_changed": changed,
    "tensors": len(start),
}))
'''


def test_grpo_trainer_drives_openenvs_openspiel_client(
    openenv_packages: Path, tmp_path: Path
) -> None:
    """Two GRPO steps: the model's tool calls went through OpenEnv's client to the
    server (each one a game the server recorded), the games' rewards came back as the
    rollouts' rewards, and training changed every parameter tensor."""
    records = tmp_path / "records"
    game = ("--game", "catch", "--game-params", "rows=2,columns=3")
    with http_server("openspiel", "--openenv", *game, "--record", str(records)) as url:
        base = url.removesuffix("/mcp") + "/openenv"
        proc = subprocess.run(
            [sys.executable, "-P", "-c", SCRIPT, base, str(ROOT), str(tmp_path), str(GROUP)],
            capture_output=True,
            text=True,
            timeout=600,
            env=with_pythonpath(openenv_packages),
        )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["tools"] == ["left", "right", "stay"]
    calls = summary["calls"]
    assert len(calls) == len(summary["seeds"]) == 2 and all(c > 0 for c in calls), summary
    assert summary["failures"] == [0.0, 0.0], summary
    # every tool call TRL counted was a step sent by OpenEnv's client
    assert summary["trainer_steps"] == round(sum(calls) * GROUP) > 0, summary
    # a rollout's reward is its game's, +1 or -1 (0 where the model called no tool)
    assert len(summary["rewards"]) == 2 and all(-1 <= r <= 1 for r in summary["rewards"])
    assert summary["tensors_changed"] == summary["tensors"] > 0, summary
    # on the server: one game per step, the probe's and the trainer's
    games = [r for r in iter_recordings(records, observations=False) if r.steps]
    assert len(games) == summary["probe_steps"] + summary["trainer_steps"], summary
    record_figure(
        f"TRL GRPOTrainer over OpenEnv's OpenSpielEnv (serve openspiel --openenv, catch 2x3): "
        f"{summary['trainer_steps']} tool calls of {2 * GROUP} rollouts reached the server, "
        f"mean rewards {[round(r, 3) for r in summary['rewards']]}"
    )

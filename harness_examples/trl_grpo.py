"""TRL's ``GRPOTrainer`` on an openenv-mcp server: the whole loop.

TRL (1.x) trains a language model on multi-turn environments: for each rollout
it resets an environment, lets the model call the environment's tools, and
scores the rollout with the environment's reward. ``trl_environment.py`` makes
any openenv-mcp server such an environment; this script is the rest of it: a
dataset, the trainer, a run, and what changed.

The game is Blackjack (``openenv-mcp serve gymnasium --id Blackjack-v1``), one
hand per rollout: the model reads its hand and calls ``stick()`` or ``hit()``,
each an MCP tool call to the server; the hand's return is the reward. Run it::

    python harness_examples/trl_grpo.py --model Qwen/Qwen3-0.6B  # a real model (downloaded)
    python harness_examples/trl_grpo.py --tiny                   # no download: the tests' run
    python harness_examples/trl_grpo.py --tiny --server http://127.0.0.1:8765/mcp

``--tiny`` makes everything on the spot, on CPU in well under a minute: a
character-level tokenizer with TRL's own Qwen3 chat template, and a two-layer
Qwen2 model. A model that small never writes a tool call by chance, so it is
first shown what one looks like: a few supervised steps on ``stick()`` and on
``hit()``, half each. Its dataset holds the hands on which sticking wins and
hitting does not (found by playing each hand both ways through the server), so
GRPO has something to teach it: the run prints how much more likely ``stick()``
became. The last line is a JSON summary (the tests read it).
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # trl_environment, beside this file

from trl_environment import environment_factory

SERVER = "openenv-mcp serve gymnasium --id Blackjack-v1 --no-render --log-level WARNING"
PROMPT = "Play one hand of blackjack: call hit() to take another card, or stick() to stop."
#: What TRL logs at each step: tool calls per rollout, and the environment's mean reward.
CALLED, REWARD = "tools/call_frequency", "rewards/Blackjack/mean"


def tool_calls(actions: tuple[str, ...]) -> dict[str, str]:
    """The text of a call of each no-argument tool, as the tiny model's template writes it."""
    return {
        a: f'<tool_call>\n{{"name": "{a}", "arguments": {{}}}}\n</tool_call><|im_end|>'
        for a in actions
    }


CALLS = tool_calls(("stick", "hit"))


@dataclass
class Summary:
    """What a run did, as the tests read it."""

    hands: list[int]
    probe_episodes: int  # episodes played to find them (each stepped once)
    tool_calls_per_rollout: list[float]
    rewards: list[float]
    tensors_changed: int
    tensors: int
    stick_over_hit_before: float | None
    stick_over_hit_after: float | None


def tools_of(env: Any) -> list[Any]:
    """The methods TRL shows the model as tools (its rule: every public method but
    ``reset`` and ``get_reward``)."""
    return [
        getattr(env, name)
        for name, _ in inspect.getmembers(type(env), inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    ]


def play_hands(env_class: type[Any], count: int) -> tuple[list[int], list[list[dict[str, Any]]]]:
    """Seeds of ``count`` hands that ``stick()`` wins and ``hit()`` does not, found by
    playing hands both ways through the server; and every hand played, as a chat."""
    probe, found, chats = env_class(), [], []
    seed = 0
    while len(found) < count:
        returns = []
        for action in ("stick", "hit"):
            text = probe.reset(seed=seed, prompt=[{"role": "user", "content": PROMPT}])
            answer = getattr(probe, action)()
            returns.append(probe.get_reward())
            call = {"type": "function", "function": {"name": action, "arguments": {}}}
            chats.append(
                [
                    {"role": "user", "content": PROMPT + text},
                    {"role": "assistant", "content": "", "tool_calls": [call]},
                    {"role": "tool", "name": action, "content": answer},
                ]
            )
        if returns[0] > 0 and returns[1] < returns[0]:
            found.append(seed)
        seed += 1
    return found, chats


def tiny_model_and_tokenizer(
    chats: list[list[dict[str, Any]]], tools: list[Any]
) -> tuple[Any, Any]:
    """A two-layer Qwen2 and a BPE tokenizer trained here on the hands just played (no
    download), with TRL's Qwen3 chat template, so TRL renders the tools and parses the
    model's tool calls as it does for Qwen3. A tool call is nine tokens."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM
    from trl.chat_template_utils import qwen3_chat_template

    special = ["<unk>", "<pad>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>"]
    special += ["<think>", "</think>", "<tool_response>", "</tool_response>"]
    alphabet = ["\n", *(chr(i) for i in range(32, 127))]

    def tokenizer_of(model: Any) -> Any:
        model.decoder = decoders.Fuse()  # tokens back to text, nothing between them
        made = PreTrainedTokenizerFast(
            tokenizer_object=model, unk_token="<unk>", pad_token="<pad>", eos_token="<|im_end|>"
        )
        made.add_special_tokens({"additional_special_tokens": special[4:]})
        made.chat_template = qwen3_chat_template
        return made

    # Characters first, only to render the chats; then BPE learns the chats' pieces.
    vocab = {c: i for i, c in enumerate([*special, *alphabet])}
    chars = Tokenizer(models.WordLevel(vocab, "<unk>"))
    chars.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    renderer = tokenizer_of(chars)
    rendered = [renderer.apply_chat_template(c, tools=tools, tokenize=False) for c in chats]
    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.train_from_iterator(
        rendered,
        trainers.BpeTrainer(
            vocab_size=512, special_tokens=special, initial_alphabet=alphabet, show_progress=False
        ),
    )
    tokenizer = tokenizer_of(bpe)
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    model = Qwen2ForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model, tokenizer


def prompt_ids(trainer: Any, env_class: type[Any], seed: int) -> list[int]:
    """A hand's prompt as TRL renders it for generation: the row's prompt, the text
    ``reset`` adds, and the environment's tools."""
    env = env_class()
    prompt = [{"role": "user", "content": PROMPT}]
    text = env.reset(seed=seed, prompt=prompt)
    messages = [{"role": "user", "content": PROMPT + text}]
    rendered = trainer.processing_class.apply_chat_template(
        messages,
        tools=trainer.tools,
        add_generation_prompt=True,
        tokenize=False,
        **trainer.chat_template_kwargs,
    )
    return list(trainer.processing_class(rendered, add_special_tokens=False)["input_ids"])


def call_logprobs(
    model: Any, tokenizer: Any, prompts: list[list[int]], calls: dict[str, str] = CALLS
) -> dict[str, Any]:
    """Log-probability of each tool call (``calls``) after each prompt: ``{action:
    tensor}``, one value per prompt, from one batched forward pass (right-padded)."""
    import torch

    targets = {a: tokenizer(c, add_special_tokens=False)["input_ids"] for a, c in calls.items()}
    rows = [(a, p, t) for a, t in targets.items() for p in prompts]
    width = max(len(p) + len(t) for _, p, t in rows)
    ids = torch.full((len(rows), width), tokenizer.pad_token_id)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    scored = torch.zeros((len(rows), width - 1))
    for i, (_, prompt, target) in enumerate(rows):
        ids[i, : len(prompt) + len(target)] = torch.tensor(prompt + target)
        mask[i, : len(prompt) + len(target)] = 1
        scored[i, len(prompt) - 1 : len(prompt) + len(target) - 1] = 1  # predicts the target
    logp = torch.log_softmax(model(input_ids=ids, attention_mask=mask).logits[:, :-1], dim=-1)
    picked = logp.gather(-1, ids[:, 1:, None])[..., 0] * scored
    sums = picked.sum(dim=-1)
    return {a: sums[i * len(prompts) : (i + 1) * len(prompts)] for i, a in enumerate(targets)}


def show_tool_calls(
    model: Any,
    tokenizer: Any,
    prompts: list[list[int]],
    *,
    calls: dict[str, str] = CALLS,
    until: float = 0.4,
    most: int = 200,
) -> int:
    """Supervised steps on the tool calls (``calls``), in equal shares, until the model
    writes each whole call with probability ``until`` (or ``most`` steps): what a tool
    call looks like. Returns the steps taken."""
    import torch

    length = max(len(tokenizer(c, add_special_tokens=False)["input_ids"]) for c in calls.values())
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    model.train()
    for step in range(most):
        logps = call_logprobs(model, tokenizer, prompts, calls)
        if min(float(logp.detach().exp().min()) for logp in logps.values()) >= until:
            return step
        loss = -sum(logp.mean() for logp in logps.values()) / (len(logps) * length)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return most


def stick_over_hit(model: Any, tokenizer: Any, prompts: list[list[int]]) -> float:
    """Mean log P(stick()) - log P(hit()) over the prompts."""
    import torch

    with torch.no_grad():
        logps = call_logprobs(model, tokenizer, prompts)
    return float((logps["stick"] - logps["hit"]).mean())


def main(argv: list[str] | None = None) -> Summary:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", default=SERVER, help="a command or an http(s):// URL")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--model", help="a causal LM with a chat template that has tool calls")
    which.add_argument("--tiny", action="store_true", help="a tiny model made here, no download")
    parser.add_argument("--steps", type=int, default=None, help="GRPO steps (default: 2 tiny, 50)")
    parser.add_argument("--generations", type=int, default=8, help="rollouts per hand (a group)")
    parser.add_argument("--output-dir", default=None, help="checkpoints (default: a temp dir)")
    args = parser.parse_args(argv)
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    if args.tiny:
        os.environ["HF_HUB_OFFLINE"] = "1"  # nothing here may be downloaded

    import tempfile

    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    torch.manual_seed(0)
    if args.tiny:
        # A tiny model's ops are too small to share: a second thread costs more than
        # it gives, ten times more on a busy machine.
        torch.set_num_threads(1)
    steps = args.steps or (2 if args.tiny else 50)
    Blackjack = environment_factory(args.server, name="Blackjack")
    hands, chats = play_hands(Blackjack, steps)
    print(f"hands where stick() wins and hit() does not: seeds {hands}", flush=True)
    dataset = Dataset.from_dict(
        {"prompt": [[{"role": "user", "content": PROMPT}]] * len(hands), "seed": hands}
    )
    if args.tiny:
        model, tokenizer = tiny_model_and_tokenizer(chats, tools_of(Blackjack()))
    else:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        model = AutoModelForCausalLM.from_pretrained(args.model)
        tokenizer = AutoTokenizer.from_pretrained(args.model)
    output_dir = args.output_dir or tempfile.mkdtemp(prefix="trl-grpo-")
    config = GRPOConfig(
        output_dir=output_dir,
        per_device_train_batch_size=args.generations,
        num_generations=args.generations,
        max_completion_length=128,
        max_tool_calling_iterations=1,  # one hand, one decision
        learning_rate=3e-4 if args.tiny else 1e-6,
        max_steps=steps,
        shuffle_dataset=False,
        use_cpu=not torch.cuda.is_available(),
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
        environment_factory=Blackjack,
    )
    print("tools the model is shown:", [t.__name__ for t in trainer.tools], flush=True)
    before = after = None
    if args.tiny:
        prompts = [prompt_ids(trainer, Blackjack, seed) for seed in hands]
        shown = show_tool_calls(trainer.model, tokenizer, prompts)
        print(f"the tiny model has seen {shown} examples of tool calls", flush=True)
        before = stick_over_hit(trainer.model, tokenizer, prompts)
    start = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    changed = sum(
        not torch.equal(start[n], p.detach()) for n, p in trainer.model.named_parameters()
    )
    if args.tiny:
        after = stick_over_hit(trainer.model, tokenizer, prompts)
        print(f"log P(stick) - log P(hit): {before:+.3f} before GRPO, {after:+.3f} after")
    logs = trainer.state.log_history
    summary = Summary(
        hands=hands,
        probe_episodes=len(chats),
        tool_calls_per_rollout=[e[CALLED] for e in logs if CALLED in e],
        rewards=[e[REWARD] for e in logs if REWARD in e],
        tensors_changed=changed,
        tensors=len(start),
        stick_over_hit_before=before,
        stick_over_hit_after=after,
    )
    print(f"tool calls per rollout, by step: {summary.tool_calls_per_rollout}")
    print(f"mean reward, by step: {summary.rewards}")
    print(f"parameter tensors changed by training: {changed} of {len(start)}")
    Blackjack._close_connection()
    print(json.dumps(asdict(summary)))
    return summary


if __name__ == "__main__":
    main()

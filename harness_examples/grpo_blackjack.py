"""GRPO on Blackjack, played through MCP.

OpenEnv's featured example is GRPO on Blackjack. Here the game is Gymnasium's
``Blackjack-v1`` served by ``openenv-mcp serve gymnasium --id Blackjack-v1``,
and every reset and every card goes through ``MCPEnvClient`` as an MCP tool
call, exactly as an agent's would.

GRPO, in full:

* a batch of ``--groups`` start states (seeds), each played ``--group-size``
  times by the current policy: a group of rollouts from the same start (the
  same seed deals the same cards, so within a group only the policy's choices
  differ);
* each rollout's advantage is its return minus its group's mean return, over
  the group's standard deviation (groups where every rollout scored the same
  teach nothing and get zero advantage);
* a policy-gradient update of the clipped surrogate objective (PPO's ratio
  clip, averaged over each rollout's steps, then over the batch), a few epochs
  per batch, with Adam. No KL term (beta = 0, as DAPO and Dr. GRPO do).

The policy is small and in numpy: the probability of HIT is a logistic
function of one-hot features (the player's sum, separately for hard and soft
hands, plus the dealer's card), 76 weights in all. It starts uniform (the
random policy, about -0.40 a hand) and learns a strategy close to basic
strategy (about -0.05).

Run it::

    python harness_examples/grpo_blackjack.py            # about a minute or two on 2 cores
    python harness_examples/grpo_blackjack.py --quick    # the shortened run the tests use
    python harness_examples/grpo_blackjack.py --server http://127.0.0.1:8765/mcp

It prints the learning curve as it goes, then the random and the learned
(greedy) policy's mean return over thousands of fresh hands, and the strategy
it learned.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import anyio
import numpy as np

from openenv_mcp.client import MCPEnvClient

SERVER = "openenv-mcp serve gymnasium --id Blackjack-v1 --no-render --log-level WARNING"
STICK, HIT = 0, 1
N_FEATURES = 32 * 2 + 11 + 1  # player sum x usable ace, dealer card, bias
EVAL_SEED_BASE = 1_000_000_000  # evaluation hands never seen in training


def features(obs: Any) -> np.ndarray:
    """One-hot features of a Blackjack observation ``(player sum, dealer card, usable ace)``."""
    player, dealer, ace = (int(v) for v in obs)
    phi = np.zeros(N_FEATURES)
    phi[32 * ace + player] = 1.0
    phi[64 + dealer] = 1.0
    phi[-1] = 1.0
    return phi


class Policy:
    """P(HIT | state) = sigmoid(w . features(state)); w = 0 is the random policy."""

    def __init__(self) -> None:
        self.w = np.zeros(N_FEATURES)

    def p_hit(self, phi: np.ndarray) -> np.ndarray:
        """Probability of HIT for one feature vector or a matrix of them."""
        return 1.0 / (1.0 + np.exp(-np.clip(phi @ self.w, -30, 30)))

    def act(self, obs: Any, rng: np.random.Generator | None) -> tuple[int, float]:
        """An action and its log-probability; greedy when ``rng`` is None."""
        p = float(self.p_hit(features(obs)))
        action = (HIT if p > 0.5 else STICK) if rng is None else int(rng.random() < p)
        return action, math.log(max(p if action == HIT else 1.0 - p, 1e-12))


class Adam:
    """Adam for gradient ascent on one weight vector."""

    def __init__(self, size: int, lr: float) -> None:
        self.lr, self.m, self.v, self.t = lr, np.zeros(size), np.zeros(size), 0

    def step(self, w: np.ndarray, grad: np.ndarray) -> None:
        self.t += 1
        self.m = 0.9 * self.m + 0.1 * grad
        self.v = 0.999 * self.v + 0.001 * grad**2
        m_hat, v_hat = self.m / (1 - 0.9**self.t), self.v / (1 - 0.999**self.t)
        w += self.lr * m_hat / (np.sqrt(v_hat) + 1e-8)


@dataclass
class Rollout:
    """One played hand: its states, actions, behaviour log-probs and return."""

    phi: list[np.ndarray] = field(default_factory=list)
    actions: list[int] = field(default_factory=list)
    logp: list[float] = field(default_factory=list)
    ret: float = 0.0


async def play(
    env: MCPEnvClient, policy: Policy, seed: int, rng: np.random.Generator | None
) -> Rollout:
    """Play one hand over MCP from ``seed``; ``rng=None`` plays greedily."""
    rollout = Rollout()
    obs, _ = await env.reset(seed=seed)
    done = False
    while not done:
        action, logp = policy.act(obs, rng)
        rollout.phi.append(features(obs))
        rollout.actions.append(action)
        rollout.logp.append(logp)
        obs, reward, terminated, truncated, _ = await env.step(action)
        rollout.ret += reward
        done = terminated or truncated
    return rollout


async def play_many(
    envs: list[MCPEnvClient],
    policy: Policy,
    seeds: list[int],
    rngs: list[np.random.Generator | None],
) -> list[Rollout]:
    """Play ``len(seeds)`` hands, all episodes in flight together (one per client)."""
    results: list[Rollout | None] = [None] * len(seeds)
    limit = anyio.Semaphore(len(envs))
    free = list(envs)

    async def one(i: int) -> None:
        async with limit:
            env = free.pop()
            try:
                results[i] = await play(env, policy, seeds[i], rngs[i])
            finally:
                free.append(env)

    async with anyio.create_task_group() as tg:
        for i in range(len(seeds)):
            tg.start_soon(one, i)
    return [r for r in results if r is not None]


def group_advantages(returns: np.ndarray) -> np.ndarray:
    """GRPO's advantages: (return - group mean) / group std, per group (rows)."""
    mean = returns.mean(axis=1, keepdims=True)
    std = returns.std(axis=1, keepdims=True)
    return np.where(std > 1e-8, (returns - mean) / np.maximum(std, 1e-8), 0.0)


def grpo_update(
    policy: Policy,
    optimizer: Adam,
    rollouts: list[Rollout],
    advantages: np.ndarray,
    epochs: int,
    clip: float,
) -> None:
    """Ascend the clipped surrogate objective over a batch of rollouts."""
    for _ in range(epochs):
        grad = np.zeros_like(policy.w)
        for rollout, adv in zip(rollouts, advantages, strict=True):
            if adv == 0.0:
                continue
            phi = np.array(rollout.phi)
            acts = np.array(rollout.actions)
            p = policy.p_hit(phi)
            logp = np.log(np.where(acts == HIT, p, 1.0 - p) + 1e-12)
            ratio = np.exp(logp - np.array(rollout.logp))
            # The clipped objective has zero gradient where the ratio is clipped
            # in the direction the advantage pushes.
            active = (ratio < 1 + clip) if adv > 0 else (ratio > 1 - clip)
            # d log pi(a|s) / dw = (a - p) * phi for the logistic policy
            per_step = (adv * ratio * active * (acts - p))[:, None] * phi
            grad += per_step.mean(axis=0)
        optimizer.step(policy.w, grad / len(rollouts))


def strategy_table(policy: Policy) -> str:
    """The greedy strategy, as a basic-strategy chart (H = hit, S = stick)."""
    lines = ["            dealer: A 2 3 4 5 6 7 8 9 10"]
    for ace, label in ((0, "hard"), (1, "soft")):
        for total in range(12, 22):
            row = []
            for dealer in range(1, 11):
                hit = policy.p_hit(features((total, dealer, ace))) > 0.5
                row.append("H" if hit else "S")
            lines.append(f"  {label} {total:>2}:          {' '.join(row)}")
    return "\n".join(lines)


def progress(done: int, total: int, text: str) -> None:
    """A one-line progress bar on stderr, where stderr is a terminal."""
    if not sys.stderr.isatty():
        return
    width = 30
    filled = int(width * done / max(total, 1))
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {text}")
    if done >= total:
        sys.stderr.write("\n")
    sys.stderr.flush()


async def main(args: argparse.Namespace) -> dict[str, float]:
    """Train, print the curve and the evaluation; return the headline numbers."""
    policy = Policy()
    optimizer = Adam(N_FEATURES, args.lr)
    batch = args.groups * args.group_size
    started = time.monotonic()
    async with MCPEnvClient(args.server) as first:
        envs = [first] + [first.spawn() for _ in range(batch - 1)]
        try:
            print(
                f"GRPO on {first.env_name} {first.server_spec.config.get('id')} over MCP: "
                f"{args.iterations} updates x {args.groups} groups x {args.group_size} "
                f"rollouts ({args.iterations * batch} hands); actions "
                f"{first.get_action_meanings()}",
                flush=True,
            )
            print(" update   hands  mean return (sampled)  moving avg", flush=True)
            recent: list[float] = []
            report_every = max(1, args.iterations // 20)
            for it in range(args.iterations):
                base = args.seed * 1_000_003 + it * args.groups
                seeds = [base + g for g in range(args.groups) for _ in range(args.group_size)]
                rngs: list[np.random.Generator | None] = [
                    np.random.default_rng([args.seed, it, i]) for i in range(batch)
                ]
                rollouts = await play_many(envs, policy, seeds, rngs)
                returns = np.array([r.ret for r in rollouts]).reshape(args.groups, args.group_size)
                advantages = group_advantages(returns).ravel()
                grpo_update(policy, optimizer, rollouts, advantages, args.epochs, args.clip)
                recent = [*recent, float(returns.mean())][-report_every:]
                if (it + 1) % report_every == 0 or it == args.iterations - 1:
                    print(
                        f"{it + 1:>7} {(it + 1) * batch:>7}  {returns.mean():>+21.3f}  "
                        f"{np.mean(recent):>+10.3f}",
                        flush=True,
                    )
                progress(it + 1, args.iterations, f"return {np.mean(recent):+.3f}")
            trained = time.monotonic() - started

            eval_seeds = [EVAL_SEED_BASE + i for i in range(args.eval_episodes)]
            rng = np.random.default_rng([args.seed, 7])
            uniform = Policy()  # w = 0: HIT and STICK with probability 1/2
            random_rollouts = await play_many(
                envs,
                uniform,
                eval_seeds,
                [np.random.default_rng(rng.integers(1 << 62)) for _ in eval_seeds],
            )
            greedy_rollouts = await play_many(envs, policy, eval_seeds, [None] * len(eval_seeds))
        finally:
            for env in envs[1:]:
                await env.close()
    random_mean = float(np.mean([r.ret for r in random_rollouts]))
    learned_mean = float(np.mean([r.ret for r in greedy_rollouts]))
    stderr = float(np.std([r.ret for r in greedy_rollouts]) / math.sqrt(args.eval_episodes))
    total = time.monotonic() - started
    print(f"\nevaluated on {args.eval_episodes} fresh hands (seeds never used in training):")
    print(f"  random policy:          mean return {random_mean:+.3f}")
    print(f"  learned policy (greedy): mean return {learned_mean:+.3f} (+/- {stderr:.3f})")
    print("  basic strategy, for reference: about -0.05")
    print(f"training {trained:.1f} s, total {total:.1f} s\n")
    print("learned strategy:")
    print(strategy_table(policy))
    return {"random": random_mean, "learned": learned_mean, "seconds": total}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options; ``--quick`` shortens everything for the test suite."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", default=SERVER, help="command or http(s) URL of the server")
    parser.add_argument("--iterations", type=int, default=150, help="GRPO updates")
    parser.add_argument("--groups", type=int, default=16, help="start states per update")
    parser.add_argument("--group-size", type=int, default=8, help="rollouts per start state (G)")
    parser.add_argument("--epochs", type=int, default=8, help="gradient steps per batch")
    parser.add_argument("--clip", type=float, default=0.2, help="ratio clip epsilon")
    parser.add_argument("--lr", type=float, default=0.1, help="Adam learning rate")
    parser.add_argument("--eval-episodes", type=int, default=5000, help="hands to evaluate on")
    parser.add_argument("--seed", type=int, default=0, help="seed of the whole run")
    parser.add_argument("--quick", action="store_true", help="a short run (for tests)")
    args = parser.parse_args(argv)
    if args.quick:
        args.iterations, args.eval_episodes = min(args.iterations, 25), min(args.eval_episodes, 800)
    return args


if __name__ == "__main__":
    anyio.run(main, parse_args())

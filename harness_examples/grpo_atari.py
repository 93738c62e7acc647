"""A GRPO rollout loop over Atari: groups forked from one snapshot.

The loop a trainer writes, end to end, against ``openenv-mcp serve atari``
through the vector client (:class:`~openenv_mcp.client.MCPVectorEnv`):

1. every episode of the vector env plays the same seeded warm-up (a shared
   trunk), then episode 0's state is saved with ``snapshot()``;
2. ``reset(options={"from_snapshot": handle})`` forks the whole group from
   it: G episodes in exactly the same emulator state, RNG included (the script
   checks that every fork's first screen is identical);
3. each fork plays ``--horizon`` steps with actions sampled from the policy;
4. GRPO's group-relative advantages: (return - group mean) / group std;
5. a policy-gradient step on a small numpy policy (a softmax over actions,
   linear in a 14x10 downsampled grey screen).

It shows the shape of the loop, not a Breakout agent: a few minutes of this
does not learn the game. For Blackjack, which learns in a minute, see
``grpo_blackjack.py``.

Run it::

    python harness_examples/grpo_atari.py                  # breakout, 8 forks x 200 steps
    python harness_examples/grpo_atari.py --quick          # the shortened run the tests use
    python harness_examples/grpo_atari.py --game pong --group-size 4
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode

from openenv_mcp.client import MCPVectorEnv

SERVER = "openenv-mcp serve atari --log-level WARNING --game"


def features(screens: np.ndarray) -> np.ndarray:
    """``(N, 210, 160, 3)`` screens -> ``(N, 141)``: a 14x10 grey thumbnail and a bias."""
    grey = screens.mean(axis=-1)[:, ::15, ::16] / 255.0
    flat = grey.reshape(len(screens), -1)
    return np.hstack([flat, np.ones((len(screens), 1))])


class Policy:
    """pi(a | s) = softmax(features(s) @ W)."""

    def __init__(self, n_features: int, n_actions: int) -> None:
        self.w = np.zeros((n_features, n_actions))

    def probs(self, phi: np.ndarray) -> np.ndarray:
        """Action probabilities, one row per feature row."""
        logits = phi @ self.w
        logits -= logits.max(axis=1, keepdims=True)
        e = np.exp(logits)
        out: np.ndarray = e / e.sum(axis=1, keepdims=True)
        return out


def fork_group(envs: MCPVectorEnv, seed: int, warmup: int) -> tuple[np.ndarray, str]:
    """Play a shared seeded trunk in every episode, snapshot it, fork the group from it.

    Returns:
        The group's first observations (one per fork) and the snapshot handle.
    """
    envs.reset(seed=[seed] * envs.num_envs)
    trunk = np.random.default_rng(seed)
    for _ in range(warmup):
        action = int(trunk.integers(envs.single_action_space.n))  # type: ignore[attr-defined]
        envs.step(np.full(envs.num_envs, action))
    handle = envs.snapshot(0)
    obs, _ = envs.reset(options={"from_snapshot": handle})
    return np.asarray(obs), handle


def rollout(
    envs: MCPVectorEnv, policy: Policy, obs: np.ndarray, horizon: int, rng: np.random.Generator
) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray, np.ndarray]]]:
    """Play every fork for ``horizon`` steps (or to its end); returns and trajectories."""
    n = envs.num_envs
    returns = np.zeros(n)
    alive = np.ones(n, dtype=bool)
    steps: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (phi, actions, alive)
    for _ in range(horizon):
        phi = features(obs)
        p = policy.probs(phi)
        actions = np.array([rng.choice(p.shape[1], p=row) for row in p])
        steps.append((phi, actions, alive.copy()))
        obs, rewards, terminated, truncated, _ = envs.step(actions)
        returns += rewards * alive
        alive &= ~(terminated | truncated)  # an ended fork autoresets; ignore it after
        if not alive.any():
            break
    return returns, steps


def group_advantages(returns: np.ndarray) -> np.ndarray:
    """GRPO: (return - group mean) / group std; all zero when the group agrees."""
    std = returns.std()
    return (returns - returns.mean()) / std if std > 1e-8 else np.zeros_like(returns)


def policy_gradient(
    policy: Policy,
    advantages: np.ndarray,
    steps: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
    lr: float,
) -> float:
    """One ascent step on mean_i A_i * mean_t log pi(a_t | s_t); returns the step's norm."""
    grad = np.zeros_like(policy.w)
    lengths = np.maximum(sum(alive.astype(float) for _, _, alive in steps), 1.0)
    for phi, actions, alive in steps:
        p = policy.probs(phi)
        onehot = np.eye(p.shape[1])[actions]
        # d log softmax(a) / dW = phi^T (onehot(a) - p), per fork, weighted by A_i / T_i
        weight = (advantages * alive / lengths)[:, None]
        grad += phi.T @ ((onehot - p) * weight)
    grad /= len(advantages)
    policy.w += lr * grad
    return float(np.linalg.norm(grad))


def main(args: argparse.Namespace) -> dict[str, Any]:
    """Run ``--iterations`` GRPO groups; print each; return what the tests check."""
    server = args.server or f"{SERVER} {args.game}"
    if args.record:  # every fork recorded (from its snapshot), for replay and export
        server += f" --record {args.record}"
    started = time.monotonic()
    envs = MCPVectorEnv(server, num_envs=args.group_size, autoreset_mode=AutoresetMode.NEXT_STEP)
    try:
        first = envs.episodes[0]
        n_actions = int(envs.single_action_space.n)  # type: ignore[attr-defined]
        policy = Policy(141, n_actions)
        rng = np.random.default_rng(args.seed)
        print(
            f"GRPO rollouts on {first.server_spec.config.get('game')} over MCP: groups of "
            f"{args.group_size} forks x {args.horizon} steps; "
            f"actions {first.get_action_meanings()}",
            flush=True,
        )
        print(" group  forks identical  returns (per fork)              advantages", flush=True)
        identical_all = True
        history = []
        for it in range(args.iterations):
            obs, _handle = fork_group(envs, args.seed * 1000 + it, args.warmup)
            identical = all(np.array_equal(obs[0], o) for o in obs[1:])
            identical_all &= identical
            returns, steps = rollout(envs, policy, obs, args.horizon, rng)
            advantages = group_advantages(returns)
            policy_gradient(policy, advantages, steps, args.lr)
            history.append(returns.tolist())
            print(
                f"{it + 1:>6}  {'yes' if identical else 'NO':>15}  "
                f"{' '.join(f'{r:g}' for r in returns):<32} "
                f"{' '.join(f'{a:+.2f}' for a in advantages)}",
                flush=True,
            )
    finally:
        envs.close()
    seconds = time.monotonic() - started
    print(
        f"\n{args.iterations} groups in {seconds:.1f} s; forks started identical: {identical_all}"
    )
    if not identical_all:
        raise SystemExit("forks of one snapshot did not start identical")
    return {"identical": identical_all, "returns": history, "seconds": seconds}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options; ``--quick`` shortens everything for the test suite."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--game", default="breakout", help="ALE game (pong, breakout, ...)")
    parser.add_argument("--server", default=None, help="command or URL (default: serve --game)")
    parser.add_argument("--iterations", type=int, default=10, help="GRPO groups")
    parser.add_argument("--group-size", type=int, default=8, help="forks per group (G)")
    parser.add_argument("--horizon", type=int, default=200, help="steps per fork")
    parser.add_argument("--warmup", type=int, default=30, help="shared trunk steps before forking")
    parser.add_argument("--lr", type=float, default=0.5, help="policy-gradient step size")
    parser.add_argument("--seed", type=int, default=0, help="seed of the whole run")
    parser.add_argument("--quick", action="store_true", help="a short run (for tests)")
    parser.add_argument("--record", default=None, help="record every episode into this directory")
    args = parser.parse_args(argv)
    if args.quick:
        args.iterations = min(args.iterations, 2)
        args.group_size = min(args.group_size, 4)
        args.horizon = min(args.horizon, 60)
        args.warmup = min(args.warmup, 10)
    return args


if __name__ == "__main__":
    main(parse_args())

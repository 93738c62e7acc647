"""A rollout to watch in the web page: ``MCPEnvClient`` against a running HTTP server.

Start the server with its page, open the page, then run this in another terminal::

    ./dev serve atari --game breakout --transport http --web   # open http://127.0.0.1:8765/web/
    .venv/bin/python harness_examples/watch_rollout.py      # then Watch: its episode, live

It plays seeded random legal actions at ``--fps`` steps a second (0: as fast as
the server answers), episode after episode, and prints each episode's return.
"""

from __future__ import annotations

import argparse
import time

from openenv_mcp.client import MCPEnvClient


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--url", default="http://127.0.0.1:8765/mcp", help="the server's /mcp")
    parser.add_argument("--token", default=None, help="its bearer token, if it has one")
    parser.add_argument("--episodes", type=int, default=3)
    parser.add_argument("--fps", type=float, default=30.0, help="steps a second (0: no limit)")
    parser.add_argument("--max-steps", type=int, default=3000, help="per episode")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    headers = {"Authorization": f"Bearer {args.token}"} if args.token else None
    with MCPEnvClient(args.url, headers=headers).sync() as env:
        env.action_space.seed(args.seed)
        for episode in range(args.episodes):
            env.reset(seed=args.seed + episode)
            total, steps, done = 0.0, 0, False
            while not done and steps < args.max_steps:
                _, reward, terminated, truncated, _ = env.step(env.action_space.sample())
                total, steps, done = total + reward, steps + 1, terminated or truncated
                if args.fps > 0:
                    time.sleep(1.0 / args.fps)
            print(f"episode {episode}: {steps} steps, return {total:g}", flush=True)


if __name__ == "__main__":
    main()

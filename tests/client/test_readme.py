"""The README's GRPO-style rollout runs exactly as written."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.servers import ROOT

pytest.importorskip("ale_py")

MARKER = "<!-- tested: tests/test_client_readme.py runs this block -->"

# The README's block, verbatim; the test below keeps the two identical.
SNIPPET = """\
import asyncio, numpy as np
from openenv_mcp.client import MCPEnvClient

async def rollout(env, snapshot, rng):           # one group member; your policy goes where rng is
    await env.reset(from_snapshot=snapshot)      # every member starts from the same state
    total, done = 0.0, False
    while not done:
        _, reward, terminated, truncated, _ = await env.step(int(rng.integers(env.action_space.n)))
        total, done = total + reward, terminated or truncated
    return total

async def main(group_size=8):
    async with MCPEnvClient("openenv-mcp serve atari --game pong --max-episode-steps 100") as env:
        await env.reset(seed=0)
        snapshot = await env.snapshot()          # the "prompt" of this group
        rngs = [np.random.default_rng(k) for k in range(group_size)]  # G episodes, all in flight
        returns = np.array(await asyncio.gather(*(rollout(env.spawn(), snapshot, r) for r in rngs)))
        advantages = (returns - returns.mean()) / (returns.std() + 1e-8)   # group-relative (GRPO)
        print("returns", returns, "advantages", advantages.round(2))

asyncio.run(main())
"""


def readme_block() -> str | None:
    """The python block after the marker in README.md, if the README has one."""
    readme = ROOT / "README.md"
    text = readme.read_text() if readme.exists() else ""
    if MARKER not in text:
        return None
    found = re.search(r"```python\n(.*?)```", text.split(MARKER, 1)[1], re.DOTALL)
    assert found, "the README marker must sit right above a ```python block"
    return found.group(1)


def test_the_readme_shows_this_snippet() -> None:
    block = readme_block()
    if block is None:
        pytest.skip("README.md has no client rollout block yet")
    assert block == SNIPPET


@pytest.mark.integration
def test_the_grpo_rollout_runs_as_written() -> None:
    code = readme_block() or SNIPPET
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=240, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-3000:]
    line = done.stdout.strip().splitlines()[-1]
    assert line.startswith("returns [") and "advantages [" in line
    returns = line.split("returns [", 1)[1].split("]", 1)[0].split()
    assert len(returns) == 8

"""A scripted agent harness: what ``collect --agent`` runs in the tests, with no model.

Like a real harness it reads an MCP config (``mcpServers``), starts the server
it names over stdio with a real MCP client, lists the tools, and plays: reset,
then step with actions from the step tool's own schema, reading only the text
of each result (what an agent profile sends), until the text says the episode is
over or ``--max-calls`` run out.

    python tests/scripted_harness.py CONFIG.json [--seed N] [--max-calls N] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import random

import anyio
from fastmcp import Client


def action_names(schema: dict) -> list[str]:
    """The action names the step tool's schema lists (an enum, maybe inside anyOf)."""
    action = schema["properties"]["action"]
    for option in [action, *action.get("anyOf", [])]:
        if "enum" in option:
            return [str(v) for v in option["enum"]]
    raise SystemExit(f"no action names in the step tool's schema: {action}")


async def play(config: dict, seed: int, max_calls: int, repeat: int) -> None:
    rng = random.Random(seed)
    async with Client(config) as client:
        tools = {t.name: t for t in await client.list_tools()}
        names = action_names(tools["step"].inputSchema)
        result = await client.call_tool("reset", {})
        print(result.content[0].text)
        for _ in range(max_calls):
            action = "FIRE" if "FIRE" in names and rng.random() < 0.2 else rng.choice(names)
            result = await client.call_tool("step", {"action": action, "repeat": repeat})
            text = result.content[0].text
            if "Episode over" in text:
                print(text)
                return


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("config")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-calls", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=4)
    args = parser.parse_args()
    with open(args.config) as f:
        config = json.load(f)
    anyio.run(play, config, args.seed, args.max_calls, args.repeat)


if __name__ == "__main__":
    main()

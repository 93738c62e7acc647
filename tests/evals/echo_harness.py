"""A scripted agent harness for the echo env's tasks, what the eval's harness tests run:
a real MCP client process that reads an MCP config (``mcpServers``), starts the server
it names over stdio, and follows one script, reading only the text of each result.

    python tests/evals/echo_harness.py CONFIG.json --solve|--quit|--stall|--idle|--fail|--sleep
        [--task ID]

``--solve`` echoes the greeting, then says bye (the task succeeds); ``--quit`` says bye
at once (it fails); ``--stall`` echoes once and leaves; ``--idle`` plays nothing;
``--fail`` plays nothing and exits with status 3; ``--sleep`` waits past any timeout.
With ``--task ID`` the first reset names the task itself (as an agent told the id may).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time

import anyio
from fastmcp import Client


async def play(config: dict, how: str, task: str | None) -> None:
    async with Client(config) as client:
        await client.list_tools()
        if how in ("idle", "fail"):
            return
        options = {"options": {"task": task}} if task else {}
        result = await client.call_tool("reset", options)
        text = result.content[0].text
        print(text)
        found = re.search(r"Observation: '([^']*)'", text)
        greeting = found.group(1) if found else ""
        actions = {"solve": [greeting, "bye"], "quit": ["bye"], "stall": [greeting]}[how]
        for action in actions:
            result = await client.call_tool("step", {"action": action})
            print(result.content[0].text)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("config")
    parser.add_argument("--task")
    for how in ("solve", "quit", "stall", "idle", "fail", "sleep"):
        parser.add_argument(f"--{how}", dest="how", action="store_const", const=how)
    args = parser.parse_args()
    if args.how == "sleep":
        time.sleep(300)
    with open(args.config) as f:
        config = json.load(f)
    anyio.run(play, config, args.how, args.task)
    if args.how == "fail":
        sys.exit(3)


if __name__ == "__main__":
    main()

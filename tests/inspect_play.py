"""One Inspect AI eval against an openenv-mcp server, with Inspect's mock model playing a
script of tool calls: run by ``tests/test_inspect_ai.py`` in a process of its own (Inspect
sets up logging and traces process-wide), which it names a child subreaper, so a server
process Inspect left behind is found here rather than lost to init.

Usage: ``python tests/inspect_play.py SPEC_JSON``; prints one JSON line: the eval log's
path, and the processes left (besides episode hosts, which outlive their callers by
design).

SPEC: ``agent`` (``"react"`` or ``"basic"``: ``react()`` holds one MCP connection per
sample, ``basic_agent()`` makes one per tool call), ``server`` (``{"command": [...],
"cwd": ...}`` for stdio, ``{"url": ...}`` for Streamable HTTP), ``samples``,
``max_samples``, ``log_dir`` and ``plan``: the tool calls each sample makes, in order
(``[name, arguments]``), then ``submit``. In arguments, ``"{sample}"`` becomes the
sample's input and ``"{episode}"`` the last ``ep_...`` handle a tool answered with.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

from inspect_ai import Task, eval
from inspect_ai.agent import react
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessage, ModelOutput, ModelUsage, get_model
from inspect_ai.solver import basic_agent
from inspect_ai.tool import mcp_server_http, mcp_server_stdio, mcp_tools

_PR_SET_CHILD_SUBREAPER = 36
_HANDLE = re.compile(r"\b(ep_[A-Za-z0-9_-]+)")


def _fill(value: Any, sample: str, episode: str) -> Any:
    if isinstance(value, str):
        return value.replace("{sample}", sample).replace("{episode}", episode)
    if isinstance(value, dict):
        return {k: _fill(v, sample, episode) for k, v in value.items()}
    return value


def scripted(plan: list[tuple[str, dict[str, Any]]]) -> Any:
    """Inspect's mock model outputs: each sample's next call of ``plan``, then submit."""

    def output(messages: list[ChatMessage], *_: Any) -> ModelOutput:
        turn = sum(1 for m in messages if m.role == "assistant")
        sample = next(m.text for m in messages if m.role == "user")
        handles = [h for m in messages if m.role == "tool" for h in _HANDLE.findall(m.text)]
        name, args = plan[turn] if turn < len(plan) else ("submit", {"answer": "done"})
        out = ModelOutput.for_tool_call(
            "mockllm/model", name, _fill(args, sample, handles[-1] if handles else "")
        )
        # Usage given: else the mock model counts tokens with tiktoken, which downloads
        # its encoding.
        out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return out

    return output


def _children() -> dict[int, str]:
    """Live children of this process (a subreaper: orphans of its descendants too)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[1]) == os.getpid() and fields[0] != "Z":
            found[int(entry.name)] = cmdline
    return found


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def main(spec: dict[str, Any]) -> None:
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    where = spec["server"]
    if "url" in where:
        server = mcp_server_http(url=where["url"])
    else:
        command, *args = where["command"]
        server = mcp_server_stdio(
            command=command, args=args, cwd=where["cwd"], env=dict(os.environ)
        )
    # basic_agent() takes a ToolSource too, though its annotation names only Tool.
    tools: list[Any] = [mcp_tools(server)]
    solver = react(tools=tools) if spec["agent"] == "react" else basic_agent(tools=tools)
    task = Task(
        dataset=[Sample(input=f"s{i}", target="done") for i in range(spec["samples"])],
        solver=solver,
    )
    model = get_model("mockllm/model", custom_outputs=scripted(spec["plan"]))
    (log,) = eval(
        task,
        model=model,
        log_dir=spec["log_dir"],
        display="none",
        max_samples=spec["max_samples"],
    )
    # Inspect waits for each stdio server it started; anything still here was left.
    deadline = time.monotonic() + 15
    while True:
        _reap()
        left = {pid: cmd for pid, cmd in _children().items() if "--episode-host-socket" not in cmd}
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    print(json.dumps({"log": log.location, "left": left}), flush=True)


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))

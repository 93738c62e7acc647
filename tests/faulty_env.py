"""A test-only environment that fails on request: raises, sleeps, or hangs inside a call.

Registered in-process with :func:`register` (``openenv_mcp.registry.register``);
a server subprocess finds it through :func:`serve_command`, a ``python -c``
launcher that registers it before running the CLI. Nothing outside ``tests/``
knows it exists.

Actions are strings:

* ``"raise"``: ``step`` raises ``RuntimeError`` (whose message names a file path,
  which must never reach a client);
* ``"sleep:SECONDS"``: ``step`` sleeps that long (capped at :data:`MAX_SLEEP`);
* ``"hang"``: ``step`` blocks until :data:`RELEASE` is set (or :data:`MAX_SLEEP`);
* ``"freeze"``: ``step`` never returns (a deadlocked env; for server subprocesses only);
* ``"print:TEXT"``: ``step`` writes TEXT to stdout (which a stdio server must keep
  off its transport);
* ``"exit"``: the process exits at once (a crashed env; for worker processes only);
* ``"odd"``: ``step`` returns an info holding values JSON and pickle cannot
  (a lock, a generator) beside a numpy array;
* ``"await:PATH"``: ``step`` creates ``PATH.started``, then waits until the file
  PATH exists (raising after :data:`MAX_SLEEP`); ``"touch:PATH"`` creates it. Two
  episodes in different processes prove by these that their calls overlap;
* anything else: echoed back, reward 1.

The ``crash`` reset option makes ``reset`` raise. Every instance counts itself
in :data:`CREATED` and :data:`CLOSED`, and with ``--close-log PATH`` appends a
line to that file when closed (so a subprocess server's clean-up is visible).
"""

from __future__ import annotations

import itertools
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from openenv_mcp.environment import Environment, Serving, StepResult
from openenv_mcp.errors import InvalidAction
from openenv_mcp.narration import Narration
from openenv_mcp.registry import register as register_env
from openenv_mcp.spaces import AnyText

__all__ = ["CLOSED", "CREATED", "RELEASE", "FaultyEnv", "register", "serve_command"]

NAME = "faulty"
REFERENCE = "tests.faulty_env:FaultyEnv"
#: Longest a single call may sleep or hang, so no test leaves a thread behind for long.
MAX_SLEEP = 10.0
#: Set to end every ``"hang"`` call at once.
RELEASE = threading.Event()
#: Serial numbers of the instances created and closed in this process.
CREATED: list[int] = []
CLOSED: list[int] = []
_serials = itertools.count()

_LAUNCHER = (
    "import sys; from openenv_mcp.registry import register; "
    f"register({NAME!r}, {REFERENCE!r}); "
    "from openenv_mcp.cli import main; sys.argv[0] = 'openenv-mcp'; main()"
)


def register() -> None:
    """Register the faulty env in this process under the name ``"faulty"``."""
    register_env(NAME, REFERENCE)


def serve_command(*args: str) -> list[str]:
    """argv of ``openenv-mcp serve faulty ARGS`` in a subprocess (run it with cwd=repo root)."""
    return [sys.executable, "-c", _LAUNCHER, "serve", NAME, *args]


class FaultyConfig(BaseModel):
    """Options of the faulty environment."""

    model_config = ConfigDict(extra="forbid")

    max_steps: int = Field(1_000_000, ge=1, description="Steps before truncation.")
    close_log: str = Field("", description="Append a line to this file on close.")


class FaultyOptions(BaseModel):
    """Per-episode options."""

    model_config = ConfigDict(extra="forbid", strict=True)

    crash: bool = Field(False, description="Make reset raise.")


class FaultyNarration(Narration["FaultyEnv"]):
    def action_description(self) -> str:
        return (
            "raise | sleep:SECONDS | hang | freeze | print:TEXT | exit | await:PATH | touch:PATH "
            "| any"
        )


class FaultyEnv(Environment[FaultyConfig]):
    """Echoes its action, unless the action asks it to fail."""

    name: ClassVar[str] = NAME
    description: ClassVar[str] = "Test env: raises, sleeps or hangs on request."
    Config: ClassVar[type[BaseModel]] = FaultyConfig
    Options = FaultyOptions
    serving = Serving(inline=False)  # worker threads: the per-call timeout applies
    narration = FaultyNarration

    def __init__(self, config: FaultyConfig) -> None:
        super().__init__(config)
        self.action_space = AnyText(1 << 16)
        self.observation_space = AnyText(1 << 16)
        self.steps = 0
        self.inside = False
        self.serial = next(_serials)
        CREATED.append(self.serial)

    def parse_action(self, action: Any) -> str:
        if not isinstance(action, str):
            raise InvalidAction(f"expected a string, got {type(action).__name__}")
        return action

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        if (options or {}).get("crash"):
            raise OSError("reset failed reading /secret/internal/path/state.bin")
        self.steps = 0
        return "", {"steps": 0}

    def step(self, action: Any) -> StepResult:
        if self.inside:  # the server promised never to call one env from two threads at once
            raise RuntimeError("two calls inside one environment at once")
        self.inside = True
        try:
            return self._step(action)
        finally:
            self.inside = False

    def _step(self, action: Any) -> StepResult:
        if action == "raise":
            raise RuntimeError('boom in File "/secret/internal/path/env.py", line 1')
        if action.startswith("sleep:"):
            time.sleep(min(float(action[6:]), MAX_SLEEP))
        elif action == "hang":
            RELEASE.wait(MAX_SLEEP)
        elif action == "freeze":
            threading.Event().wait()
        elif action.startswith("print:"):
            print(action[6:], flush=True)
        elif action == "exit":
            os._exit(3)
        elif action.startswith("await:"):
            path = Path(action[6:])
            path.with_suffix(".started").touch()
            deadline = time.monotonic() + MAX_SLEEP
            while not path.exists():
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{path} did not appear in {MAX_SLEEP:g}s")
                time.sleep(0.005)
        elif action.startswith("touch:"):
            Path(action[6:]).touch()
        self.steps += 1
        info: dict[Any, Any] = {"steps": self.steps}
        if action == "odd":
            info.update({"lock": threading.Lock(), "gen": iter(()), 7: np.arange(3)})
        return StepResult(
            observation=action,
            reward=1.0,
            terminated=False,
            truncated=self.steps >= self.config.max_steps,
            info=info,
        )

    def snapshot(self) -> Any:
        return self.steps

    def restore(self, snapshot: Any) -> None:
        self.steps = int(snapshot)

    def close(self) -> None:
        CLOSED.append(self.serial)
        if self.config.close_log:
            with open(self.config.close_log, "a") as log:
                log.write("closed\n")

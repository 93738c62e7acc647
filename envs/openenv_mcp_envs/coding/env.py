"""The coding environment: write a function, run code in a real sandbox, pass hidden tests.

An episode is one programming task. Actions run Python source, write files into the
episode's working directory, or run the task's hidden tests on ``solution.py``; the
observation is the run's stdout, stderr and exit code and the test report; the reward comes
from the fraction of tests passed. Every run is sandboxed (:mod:`openenv_mcp_envs.coding._sandbox`).

The served tasks are also a task set (:mod:`openenv_mcp_envs.coding._tasks`): train,
validation and test splits fixed by each task's name, a task's id its name, success
every hidden test passed.
"""

from __future__ import annotations

import logging
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
from gymnasium import spaces
from pydantic import BaseModel, ConfigDict, Field, create_model

from openenv_mcp.environment import Environment, EnvTool, Resources, Serving, StepResult
from openenv_mcp.errors import ArgumentError, InvalidAction, UnsupportedOption, did_you_mean
from openenv_mcp.spaces import AnyText, JsonSpace
from openenv_mcp.tasks import TaskSet
from openenv_mcp_envs.coding._files import (
    check_path,
    collect_files,
    empty_dir,
    list_files,
    read_file,
    restore_files,
    usage,
    write_file,
)
from openenv_mcp_envs.coding._narration import ACTION_TEXT, CodingNarration
from openenv_mcp_envs.coding._openenv import CodingModels
from openenv_mcp_envs.coding._problems import (
    MAX_TESTS,
    Task,
    builtin_tasks,
    load_task_file,
    same_value,
)
from openenv_mcp_envs.coding._sandbox import INSIDE_DIR, UNSAFE, Limits, RunResult, Sandbox
from openenv_mcp_envs.coding._tasks import coding_tasks
from openenv_mcp_envs.coding._workdir import Workdir

__all__ = ["CodingConfig", "CodingEnv", "CodingSnapshot"]

log = logging.getLogger(__name__)

#: Longest source of a code run (characters): it reaches the sandbox on its command line.
MAX_CODE = 30_000
#: Longest file content of a write or a solution (characters).
MAX_CONTENT = 200_000
#: Longest stdout or stderr of a step shown in the step's text (the last_output tool has all).
EVENT_CHARS = 3000
#: Failing tests listed in a report.
SHOWN_FAILURES = 10
SOLUTION = "solution.py"
KINDS = ("code", "write", "test", "solution")


class CodingConfig(BaseModel):
    """Options of the coding environment."""

    model_config = ConfigDict(extra="forbid")

    task: str | None = Field(
        None, description="Serve only this task (default: the seed picks one of the set)."
    )
    task_file: str | None = Field(
        None,
        description='A JSON file of tasks (one task, a list, or {"tasks": [...]}), each '
        "{name, prompt, entry_point, signature?, title?, tests: [{args, kwargs?, expected}]}, "
        "served instead of the built-in set.",
    )
    max_steps: int = Field(20, ge=1, le=1000, description="Steps before the episode is truncated.")
    sandbox: Literal["auto", "bwrap", "unsafe-rlimits"] = Field(
        "auto",
        description="auto or bwrap: isolate every run with bubblewrap (namespaces, no "
        "installed packages visible) under per-episode limits, or refuse to start, naming "
        "the fix. unsafe-rlimits: NO isolation (code runs as the server's user, with its "
        "files and network), resource limits per process only; for one trusted local "
        "client: refused over HTTP, with a token or a web port.",
    )
    python: str | None = Field(
        None, description="The interpreter runs use (default: /usr/bin/python3, else this one)."
    )
    bwrap: str | None = Field(None, description="bubblewrap's path (default: bwrap on PATH).")
    cpu_seconds: int = Field(5, ge=1, le=600, description="CPU seconds per run (RLIMIT_CPU).")
    wall_seconds: float = Field(
        10.0, gt=0, le=600, description="Wall-clock seconds per run before it is killed."
    )
    memory_mib: int = Field(
        512,
        ge=64,
        le=65536,
        description="Memory of an episode's runs, all their processes together, MiB: a "
        "cgroup's limit where the server can make cgroups (files the runs write count too), "
        "else a watchdog summing their resident memory; each process is also under "
        "RLIMIT_AS of this size.",
    )
    file_size_mib: int = Field(
        16, ge=1, le=4096, description="Largest file a run may write, MiB (RLIMIT_FSIZE)."
    )
    max_processes: int = Field(
        32, ge=1, le=4096, description="Processes and threads a run may start (RLIMIT_NPROC)."
    )
    output_bytes: int = Field(
        65536, ge=1024, le=1 << 24, description="Bytes of stdout and of stderr kept per run."
    )
    workdir_quota_mib: int = Field(
        64,
        ge=1,
        le=65536,
        description="Most bytes the working directory's files may hold, MiB: a tmpfs of "
        "this size, so writing past it fails at once (No space left on device).",
    )
    max_files: int = Field(
        10_000,
        ge=16,
        le=1_000_000,
        description="Most files and directories the working directory may hold (the tmpfs's "
        "inode limit).",
    )
    feedback: Literal["counts", "inputs", "full"] = Field(
        "inputs",
        description="What the test report shows of failing tests: counts only; the call and "
        "what it returned or raised; or also the expected value.",
    )
    reward: Literal["improvement", "fraction"] = Field(
        "improvement",
        description="improvement: a test run's reward is how much it raised the best fraction "
        "of tests passed so far (the return is the best fraction); fraction: every test "
        "run's reward is its fraction.",
    )
    persist_files: bool = Field(
        True,
        description="Files that runs create stay in the working directory for later steps "
        "(false: each run works in a throwaway copy; only written files persist).",
    )
    workdir_root: str | None = Field(
        None,
        description="Where episode working directories are made (default: the temp dir); "
        "with --keep-workdirs, a persistent scratch location to inspect afterwards.",
    )
    keep_workdirs: bool = Field(
        False, description="Keep each episode's working directory after the episode."
    )


@dataclass
class CodingSnapshot:
    """Everything an episode is: its task, counters, last observation and files."""

    task: str
    steps: int
    best: float
    score: float
    observation: dict[str, Any]
    last: dict[str, Any]
    files: dict[str, bytes]


def _text(limit: int) -> AnyText:
    return AnyText(limit)


_SOURCE = {"type": "string", "maxLength": MAX_CODE}
_CONTENT = {"type": "string", "maxLength": MAX_CONTENT}
#: The actions on the wire: a string, or an object with exactly one of its four keys.
ACTION_SCHEMA = {
    "anyOf": [
        {**_SOURCE, "description": "Python source to run in the working directory."},
        {
            "type": "object",
            "description": "Exactly one of code, write, test, solution.",
            "properties": {
                "code": {**_SOURCE, "description": "Python source to run."},
                "write": {
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "maxLength": 200},
                        "content": _CONTENT,
                    },
                    "required": ["path", "content"],
                    "additionalProperties": False,
                },
                "test": {"type": "boolean", "description": "true: run the hidden tests."},
                "solution": {
                    **_CONTENT,
                    "description": "The whole of solution.py; then the tests run.",
                },
            },
            "minProperties": 1,
            "maxProperties": 1,
            "additionalProperties": False,
        },
    ]
}


class CodingInfo(BaseModel):
    """What ``info`` holds."""

    task: str = Field(description="The task's name.")
    score: float = Field(description="Fraction of tests the last test run passed.")
    best_score: float = Field(description="Best fraction so far.")
    sandbox: str = Field(
        description="bwrap, or unsafe-rlimits (no isolation: chosen by the operator)."
    )
    timed_out: bool = Field(description="The last run hit the wall clock.")
    files: list[str] = Field(description="Files in the working directory.")


class CodingEnv(Environment[CodingConfig]):
    """Programming tasks with hidden tests, every run sandboxed."""

    name: ClassVar[str] = "coding"
    description: ClassVar[str] = (
        "Coding: write a Python function for a task, run code and hidden tests in a "
        "bubblewrap sandbox; reward is the fraction of tests passed."
    )
    Config: ClassVar[type[BaseModel]] = CodingConfig
    Info = CodingInfo
    serving = Serving(
        inline=False,  # a run takes up to wall_seconds
        slow_steps=True,
        action_tools=False,
        reward_range=(0.0, 1.0),
        resources=Resources(cpu=1.0, memory_mib=1024, episodes=16, episode_timeout_s=1800.0),
    )
    narration = CodingNarration
    openenv_models = CodingModels

    def __init__(self, config: CodingConfig) -> None:
        super().__init__(config)
        self.tasks: list[Task] = (
            load_task_file(config.task_file) if config.task_file else builtin_tasks()
        )
        self._by_name = {t.name: t for t in self.tasks}
        if config.task is not None and config.task not in self._by_name:
            raise ArgumentError(
                f"--task {config.task!r} is not a task.{did_you_mean(config.task, self._by_name)}"
                f" Tasks: {', '.join(self._by_name)}"
            )
        self.limits = Limits(
            cpu_seconds=config.cpu_seconds,
            wall_seconds=config.wall_seconds,
            memory_mib=config.memory_mib,
            file_size_mib=config.file_size_mib,
            max_processes=config.max_processes,
            output_bytes=config.output_bytes,
            quota_mib=config.workdir_quota_mib,
            max_files=config.max_files,
        )
        # Whatever holds expected values must never be visible to a run (the probe checks).
        secrets = [str(Path(__file__).parent / "tasks")]
        if config.task_file:
            secrets.append(config.task_file)
        self.sandbox = Sandbox(config.sandbox, self.limits, config.python, config.bwrap, secrets)
        out = config.output_bytes + 200  # room for the truncation note
        self.action_space = JsonSpace(ACTION_TEXT, ACTION_SCHEMA)
        self.Options = create_model(
            "CodingOptions",
            __config__=ConfigDict(extra="forbid", strict=True),
            # No default value: a task left out is not passed to reset (the config's is used).
            task=(
                str,
                Field(None, description=f"The task to play; one of: {', '.join(self._by_name)}."),
            ),
        )
        self.observation_space = spaces.Dict(
            {
                "task": _text(64),
                "prompt": _text(4000),
                "kind": _text(16),
                "stdout": _text(out),
                "stderr": _text(out),
                "exit_code": spaces.Discrete(512, start=-256),
                "tests_passed": spaces.Discrete(MAX_TESTS + 1),
                "tests_total": spaces.Discrete(MAX_TESTS + 1),
                "report": _text(20_000),
            }
        )
        self.task: Task | None = None
        self._task_set: TaskSet | None = None
        self._rng: np.random.Generator | None = None
        self._workdir: Workdir | None = None
        self._remove: weakref.finalize[Any, Any] | None = None
        self._steps = 0
        self._best = 0.0
        self._score = 0.0
        self._observation: dict[str, Any] = {}
        self._last: dict[str, Any] = {}
        self.events: list[str] = []
        self._timed_out = False

    def metadata(self) -> dict[str, Any]:
        return {
            "config": self.config.model_dump(mode="json"),
            "sandbox": self.sandbox.mode,
            "sandbox_warning": self.sandbox.warning,
            "limits": {
                "cpu_seconds": self.limits.cpu_seconds,
                "wall_seconds": self.limits.wall_seconds,
                "memory_mib": self.limits.memory_mib,
                "file_size_mib": self.limits.file_size_mib,
                "max_processes": self.limits.max_processes,
                "output_bytes": self.limits.output_bytes,
                "workdir_quota_mib": self.limits.quota_mib,
                "max_files": self.limits.max_files,
                "memory_bound": self.sandbox.memory_bound,
            },
            "tasks": [
                {"name": t.name, "title": t.title, "tests": len(t.tests)} for t in self.tasks
            ],
        }

    def tools(self) -> list[EnvTool]:
        return [
            EnvTool(
                name="task",
                description="This episode's task: its prompt, the function to write (name and "
                "signature), how many hidden tests there are, and the files in the working "
                "directory.",
                kind="episode",
                handler=lambda env, _args: env._task_view(),
            ),
            EnvTool(
                name="read_file",
                description="Read a file of the episode's working directory (first 64 KiB).",
                kind="episode",
                handler=lambda env, args: env._read_view(args.path),
                params=ReadFileParams,
            ),
            EnvTool(
                name="last_output",
                description="The full stdout, stderr, exit code and test report of the last "
                "step (the step's text shortens long output).",
                kind="episode",
                handler=lambda env, _args: dict(env._last),
            ),
            EnvTool(
                name="list_tasks",
                description="The tasks this server serves (reset with options "
                '{"task": NAME} to pick one).',
                kind="static",
                handler=lambda env, _args: {
                    "tasks": [
                        {"name": t.name, "title": t.title, "tests": len(t.tests)} for t in env.tasks
                    ]
                },
            ),
        ]

    def task_set(self) -> TaskSet:
        """The served tasks in train, validation and test splits (by name; a task's id is
        its name, and ``{"task": NAME}`` starts it)."""
        if self._task_set is None:
            self._task_set = coding_tasks(self.tasks)
        return self._task_set

    def _task_view(self) -> dict[str, Any]:
        task = self._require_task()
        return {
            "task": task.name,
            "title": task.title,
            "prompt": task.prompt,
            "entry_point": task.entry_point,
            "signature": task.signature,
            "tests": len(task.tests),
            "files": self._files(),
        }

    def _read_view(self, path: str) -> dict[str, Any]:
        self._require_task()
        assert self.workdir is not None
        parts = check_path(path)
        found = read_file(self.workdir, parts, 65536)
        if found is None:
            raise InvalidAction(
                f"no file {path!r} in the working directory; files: {self._files()}"
            )
        data, size = found
        return {
            "path": "/".join(parts),
            "content": data.decode("utf-8", errors="replace"),
            "size": size,
            "truncated": size > len(data),
        }

    def _require_task(self) -> Task:
        if self.task is None:
            from openenv_mcp.errors import ResetNeeded

            raise ResetNeeded("no episode yet: call reset first")
        return self.task

    # -- the episode ---------------------------------------------------------------

    def parse_action(self, action: Any) -> dict[str, Any]:
        if isinstance(action, str):
            return {"kind": "code", "code": self._source(action, "code")}
        if not isinstance(action, dict):
            raise InvalidAction(
                f"expected Python source (a string) or an object with one of {list(KINDS)}, "
                f"got {type(action).__name__} {str(action)[:60]!r}"
            )
        keys = list(action)
        if len(keys) != 1 or keys[0] not in KINDS:
            unknown = [k for k in keys if k not in KINDS]
            hint = did_you_mean(str(unknown[0]), KINDS) if unknown else ""
            raise InvalidAction(
                f"expected an object with exactly one of {list(KINDS)}, got keys "
                f"{[str(k)[:30] for k in keys][:5]}.{hint}"
            )
        kind, value = keys[0], action[keys[0]]
        if kind == "code":
            return {"kind": "code", "code": self._source(value, "code")}
        if kind == "solution":
            return {"kind": "solution", "content": self._content(value, "solution")}
        if kind == "test":
            if value is not True:
                raise InvalidAction(f'expected {{"test": true}}, got {{"test": {value!r:.40}}}')
            return {"kind": "test"}
        if not isinstance(value, dict) or set(value) != {"path", "content"}:
            got = sorted(map(str, value))[:5] if isinstance(value, dict) else type(value).__name__
            raise InvalidAction(
                f'expected {{"write": {{"path": "...", "content": "..."}}}}, got write: {got}'
            )
        parts = check_path(value["path"])
        return {
            "kind": "write",
            "path": "/".join(parts),
            "content": self._content(value["content"], "write.content"),
        }

    @staticmethod
    def _source(value: Any, where: str) -> str:
        if not isinstance(value, str):
            raise InvalidAction(
                f"{where}: expected Python source (a string), got {type(value).__name__}"
            )
        if len(value) > MAX_CODE:
            raise InvalidAction(
                f"{where}: expected at most {MAX_CODE} characters of source, got {len(value)}; "
                "write longer programs to a file and run that"
            )
        if "\x00" in value:
            raise InvalidAction(f"{where}: source code cannot contain NUL characters")
        return value

    @staticmethod
    def _content(value: Any, where: str) -> str:
        if not isinstance(value, str):
            raise InvalidAction(f"{where}: expected a string, got {type(value).__name__}")
        if len(value) > MAX_CONTENT:
            raise InvalidAction(
                f"{where}: expected at most {MAX_CONTENT} characters, got {len(value)}"
            )
        return value

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        wanted = (options or {}).get("task", self.config.task)
        if wanted is not None:
            if not isinstance(wanted, str) or wanted not in self._by_name:
                shown = str(wanted)[:60]
                hint = did_you_mean(shown, self._by_name) if isinstance(wanted, str) else ""
                raise UnsupportedOption(
                    f"option 'task' must name a task, got {shown!r}.{hint} "
                    f"Tasks: {', '.join(self._by_name)}"
                )
            task = self._by_name[wanted]
        else:
            if seed is not None or self._rng is None:  # unseeded, the stream goes on
                self._rng = np.random.default_rng(seed)
            task = self.tasks[int(self._rng.integers(len(self.tasks)))]
        self._fresh_workdir()
        assert self.workdir is not None
        write_file(self.workdir, (SOLUTION,), task.starter().encode(), self.sandbox.uid)
        self.task = task
        self._steps = 0
        self._best = self._score = 0.0
        self._timed_out = False
        self.events = []
        self._observation = self._obs("reset", total=len(task.tests))
        self._last = {"kind": "reset", "stdout": "", "stderr": "", "exit_code": 0, "report": ""}
        return dict(self._observation), self._info()

    @property
    def workdir(self) -> Path | None:
        """Where the server reads and writes the episode's files (``None`` before reset)."""
        return self._workdir.path if self._workdir is not None else None

    def _fresh_workdir(self) -> None:
        self._drop_workdir()
        self._workdir = self.sandbox.make_workdir(self.config.workdir_root)
        # Removed (or, with keep_workdirs, its files kept) at close, when the instance is
        # dropped, or at exit, whichever first; and by its keeper if this process dies.
        self._remove = weakref.finalize(self, self._workdir.close, self.config.keep_workdirs)

    def _drop_workdir(self) -> None:
        if self._remove is not None:
            self._remove()
            self._remove = None
        self._workdir = None

    def _obs(
        self,
        kind: str,
        run: RunResult | None = None,
        passed: int = 0,
        total: int = 0,
        report: str = "",
    ) -> dict[str, Any]:
        task = self._require_task()
        return {
            "task": task.name,
            "prompt": task.prompt,
            "kind": kind,
            "stdout": run.stdout if run else "",
            "stderr": run.stderr if run else "",
            "exit_code": max(-256, min(255, run.exit_code)) if run else 0,
            "tests_passed": passed,
            "tests_total": total,
            "report": report[:20_000],
        }

    def _files(self) -> list[str]:
        return list_files(self.workdir) if self.workdir is not None else []

    def _info(self) -> dict[str, Any]:
        return {
            "task": self.task.name if self.task else "",
            "score": self._score,
            "best_score": self._best,
            "sandbox": self.sandbox.mode,
            "timed_out": self._timed_out,
            "files": self._files(),
        }

    def step(self, action: Any) -> StepResult:
        task = self._require_task()
        assert self.workdir is not None
        kind = action["kind"]
        if kind in ("write", "solution"):  # first: a path that cannot be written changes nothing
            path = action.get("path", SOLUTION)
            data = action["content"].encode("utf-8", errors="surrogatepass")
            write_file(self.workdir, tuple(path.split("/")), data, self.sandbox.uid)
        self._steps += 1
        self.events = []
        self._timed_out = False
        reward = 0.0
        terminated = False
        if kind == "write":
            note = f"Wrote {path} ({len(data)} bytes)"
            self.events.append(note)
            observation = self._obs("write", report=note)
            self._last = {
                "kind": "write",
                "stdout": "",
                "stderr": "",
                "exit_code": 0,
                "report": note,
            }
        elif kind == "code":
            run = self._run(["run", action["code"]], report=False)
            observation = self._obs("run", run)
            self._describe_run("Ran your code", run)
            self._last = self._last_of("run", run, "")
        else:
            run = self._run(["test", task.inputs_json(), task.entry_point], report=True)
            passed, report = self._score_report(task, run)
            total = len(task.tests)
            self._score = passed / total
            if self.config.reward == "improvement":
                reward = max(0.0, self._score - self._best)
            else:
                reward = self._score
            self._best = max(self._best, self._score)
            terminated = passed == total
            observation = self._obs(kind, run, passed, total, report)
            self._describe_run("Ran the hidden tests", run, tests=True)
            self.events.append(report)
            self._last = self._last_of(kind, run, report)
        self._enforce_quota()
        self._observation = observation
        truncated = not terminated and self._steps >= self.config.max_steps
        return StepResult(dict(observation), reward, terminated, truncated, self._info())

    def _run(self, payload: list[str], report: bool) -> RunResult:
        assert self._workdir is not None and self.workdir is not None
        kept = None if self.config.persist_files else collect_files(self.workdir)
        try:
            result = self.sandbox.run(self._workdir, payload, report_fd=report)
        finally:
            if kept is not None:  # the run worked on what it found; only writes persist
                empty_dir(self.workdir)
                restore_files(self.workdir, kept, self.sandbox.uid)
        self._timed_out = result.timed_out
        log.debug(
            "coding run: exit %s in %.3fs (timed out %s)",
            result.exit_code,
            result.seconds,
            result.timed_out,
        )
        if self.sandbox.mode == UNSAFE:
            # Unisolated runs are in the real directory: show the sandbox's name for it.
            host = self._workdir.host
            result.stdout = result.stdout.replace(host, INSIDE_DIR)
            result.stderr = result.stderr.replace(host, INSIDE_DIR)
        return result

    def _last_of(self, kind: str, run: RunResult, report: str) -> dict[str, Any]:
        return {
            "kind": kind,
            "stdout": run.stdout,
            "stderr": run.stderr,
            "exit_code": run.exit_code,
            "timed_out": run.timed_out,
            "memory_limited": run.memory_limited,
            "memory_peak_mib": None if run.memory_peak is None else run.memory_peak / 2**20,
            "report": report,
        }

    def _describe_run(self, what: str, run: RunResult, tests: bool = False) -> None:
        how = f"{what}: exit code {run.exit_code}"
        if run.timed_out:
            how += f" (killed at the {self.limits.wall_seconds:g} s wall-clock limit)"
        elif run.output_limited:
            how += " (killed: far more output than is kept)"
        elif run.memory_limited:
            how += (
                f" (killed at the episode's {self.limits.memory_mib} MiB memory limit, all its "
                "processes together)"
            )
        elif run.exit_code == -24:
            how += f" (killed at the {self.limits.cpu_seconds} s CPU limit)"
        elif run.exit_code == -9:
            how += " (killed)"
        self.events.append(how)
        for name, text in (("stdout", run.stdout), ("stderr", run.stderr)):
            if not text:
                continue
            shown = text if len(text) <= EVENT_CHARS else text[:EVENT_CHARS]
            more = (
                ""
                if len(text) <= EVENT_CHARS
                else f"\n[first {EVENT_CHARS} of {len(text)} characters: last_output has all]"
            )
            self.events.append(f"{name}:\n```\n{shown}{more}\n```")
        if not tests and not run.stdout and not run.stderr:
            self.events.append("No output")

    def _score_report(self, task: Task, run: RunResult) -> tuple[int, str]:
        """Tests passed and the report, from the sandbox's records (compared here)."""
        results: dict[int, dict[str, object]] = {}
        setup = None
        for record in run.report:
            if "setup" in record and setup is None:
                setup = str(record["setup"])[:400]
            index = record.get("i")
            if isinstance(index, int) and 0 <= index < len(task.tests) and index not in results:
                results[index] = record
        total = len(task.tests)
        passed = 0
        failures: list[str] = []
        for i, test in enumerate(task.tests):
            found = results.get(i)
            if found is not None and "value" in found and same_value(found["value"], test.expected):
                passed += 1
                continue
            if found is None:
                got = "no result (the run ended before this test)"
            elif "error" in found:
                got = f"raised {str(found['error'])[:200]}"
            else:
                got = f"returned {_short(found.get('value'))}"
            line = f"FAIL {task.call_text(i)}: {got}"
            if self.config.feedback == "full":
                line += f"; expected {_short(test.expected)}"
            failures.append(line)
        head = f"Tests: {passed}/{total} passed"
        if setup is not None:
            head += f". No test ran: {setup}"
        elif run.timed_out:
            head += f" (the run was killed at the {self.limits.wall_seconds:g} s limit)"
        if self.config.feedback == "counts" or setup is not None or not failures:
            return passed, head
        shown = failures[:SHOWN_FAILURES]
        if len(failures) > SHOWN_FAILURES:
            shown.append(f"... and {len(failures) - SHOWN_FAILURES} more failing")
        return passed, "\n".join([head, *shown])

    def _enforce_quota(self) -> None:
        """Unisolated, the quota is only checked after a run (a tmpfs bounds it otherwise)."""
        assert self.workdir is not None
        if self.sandbox.mode != UNSAFE:
            return
        used = usage(self.workdir)
        quota = self.config.workdir_quota_mib << 20
        if used > quota:
            empty_dir(self.workdir)
            self.events.append(
                f"The working directory grew to {used >> 20} MiB, past its "
                f"{self.config.workdir_quota_mib} MiB quota: it was emptied"
            )

    def state(self) -> dict[str, Any]:
        return {
            "task": self.task.name if self.task else None,
            "steps": self._steps,
            "best_score": self._best,
            "files": self._files(),
            "sandbox": self.sandbox.mode,
        }

    def close(self) -> None:
        self._drop_workdir()
        self.sandbox.close()

    def check_exposure(self, exposed: bool) -> None:
        """Refuse ``--sandbox unsafe-rlimits`` on a server that others can reach."""
        self.sandbox.check_exposure(exposed)

    # -- snapshots -----------------------------------------------------------------

    def snapshot(self) -> CodingSnapshot:
        task = self._require_task()
        assert self.workdir is not None
        return CodingSnapshot(
            task=task.name,
            steps=self._steps,
            best=self._best,
            score=self._score,
            observation=dict(self._observation),
            last=dict(self._last),
            files=collect_files(self.workdir),
        )

    def restore(self, snapshot: Any) -> None:
        if not isinstance(snapshot, CodingSnapshot) or snapshot.task not in self._by_name:
            raise UnsupportedOption("not a snapshot of this coding environment's tasks")
        self._fresh_workdir()
        assert self.workdir is not None
        restore_files(self.workdir, snapshot.files, self.sandbox.uid)
        self.task = self._by_name[snapshot.task]
        self._steps = snapshot.steps
        self._best = snapshot.best
        self._score = snapshot.score
        self._observation = dict(snapshot.observation)
        self._last = dict(snapshot.last)
        self.events = []
        self._timed_out = False


class ReadFileParams(BaseModel):
    """Arguments of the read_file tool."""

    path: str = Field(max_length=200, description="A path relative to the working directory.")


def _short(value: Any, limit: int = 120) -> str:
    import json

    text = json.dumps(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


if TYPE_CHECKING:  # mypy checks that the env has what its narration reads (CodingView)
    from openenv_mcp_envs.coding._narration import CodingView

    def _narrated(env: CodingEnv) -> CodingView:
        return env

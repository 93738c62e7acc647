"""Programming tasks: a prompt, the function to write, and hidden tests (inputs and expected
outputs as JSON). The package ships a small set (``openenv_mcp_envs/coding/tasks/*.json``);
``--task-file`` reads more in the same format."""

from __future__ import annotations

import json
import math
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from openenv_mcp.errors import ArgumentError

__all__ = ["MAX_TESTS", "Task", "TestCase", "builtin_tasks", "load_task_file", "same_value"]

#: Most tests one task may have (the observation's counters are sized by it).
MAX_TESTS = 200
#: Longest prompt (characters).
MAX_PROMPT = 4000
#: Largest JSON of one task's test inputs: they travel to the sandbox on its command line.
MAX_INPUTS_JSON = 100_000


class TestCase(BaseModel):
    """One hidden test: call the entry point with ``args``/``kwargs``, expect ``expected``."""

    model_config = ConfigDict(extra="forbid")
    __test__ = False  # not a pytest class

    args: list[Any] = Field(default_factory=list, description="Positional arguments (JSON).")
    kwargs: dict[str, Any] = Field(default_factory=dict, description="Keyword arguments (JSON).")
    expected: Any = Field(description="The expected return value (JSON).")


class Task(BaseModel):
    """A programming task: write ``entry_point`` in ``solution.py``."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[a-z][a-z0-9_]{0,63}$", description="Unique name.")
    title: str = Field("", max_length=100)
    prompt: str = Field(min_length=1, max_length=MAX_PROMPT)
    entry_point: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
    signature: str = Field("", max_length=400, description="The function's def line.")
    tests: list[TestCase] = Field(min_length=1, max_length=MAX_TESTS)

    @field_validator("tests")
    @classmethod
    def _inputs_fit(cls, tests: list[TestCase]) -> list[TestCase]:
        size = len(json.dumps([[t.args, t.kwargs] for t in tests]))
        if size > MAX_INPUTS_JSON:
            raise ValueError(f"test inputs take {size} bytes of JSON; at most {MAX_INPUTS_JSON}")
        return tests

    def inputs_json(self) -> str:
        """The tests' inputs (never their expected values) as JSON, for the sandbox."""
        return json.dumps([[t.args, t.kwargs] for t in self.tests])

    def call_text(self, index: int, limit: int = 120) -> str:
        """``name(args...)`` of test ``index``, cut to ``limit`` characters."""
        test = self.tests[index]
        parts = [json.dumps(a) for a in test.args]
        parts += [f"{k}={json.dumps(v)}" for k, v in test.kwargs.items()]
        text = f"{self.entry_point}({', '.join(parts)})"
        return text if len(text) <= limit else text[: limit - 3] + "..."

    def starter(self) -> str:
        """The stub written to ``solution.py`` at reset."""
        signature = self.signature or f"def {self.entry_point}(*args):"
        return f"{signature}\n    raise NotImplementedError\n"


def _read(text: str, where: str) -> list[Task]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ArgumentError(f"{where}: not valid JSON ({exc})") from None
    if isinstance(data, dict) and "tasks" in data:
        data = data["tasks"]
    items = data if isinstance(data, list) else [data]
    tasks = []
    for i, item in enumerate(items):
        try:
            tasks.append(Task.model_validate(item))
        except ValidationError as exc:
            first = exc.errors()[0]
            at = ".".join(str(p) for p in first["loc"]) or "task"
            raise ArgumentError(
                f"{where}: task {i} is not a task ({at}: {first['msg']}); expected an object "
                "with name, prompt, entry_point and tests [{args, kwargs?, expected}]"
            ) from None
    if not tasks:
        raise ArgumentError(f"{where}: no tasks in it")
    names = [t.name for t in tasks]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ArgumentError(f"{where}: task names must be unique, repeated: {repeated}")
    return tasks


def builtin_tasks() -> list[Task]:
    """The tasks shipped with the package, by name."""
    folder = resources.files("openenv_mcp_envs.coding") / "tasks"
    tasks: list[Task] = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".json"):
            tasks += _read(
                entry.read_text(encoding="utf-8"), f"openenv_mcp_envs/coding/tasks/{entry.name}"
            )
    return sorted(tasks, key=lambda t: t.name)


def load_task_file(path: str) -> list[Task]:
    """Tasks from a JSON file: one task, a list of them, or ``{"tasks": [...]}``."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ArgumentError(f"--task-file {path!r} cannot be read: {exc.strerror}") from None
    return sorted(_read(text, f"--task-file {file.name}"), key=lambda t: t.name)


def same_value(got: Any, expected: Any) -> bool:
    """JSON values equal, strictly: ``True`` is not ``1``; numbers within 1e-9."""
    if isinstance(expected, bool) or isinstance(got, bool):
        return type(got) is type(expected) and got == expected
    if isinstance(expected, (int, float)) and isinstance(got, (int, float)):
        if isinstance(expected, int) and isinstance(got, int):
            return got == expected
        return math.isclose(got, expected, rel_tol=1e-9, abs_tol=1e-9)
    if isinstance(expected, list):
        return (
            isinstance(got, list)
            and len(got) == len(expected)
            and all(same_value(g, e) for g, e in zip(got, expected, strict=True))
        )
    if isinstance(expected, dict):
        return (
            isinstance(got, dict)
            and got.keys() == expected.keys()
            and all(same_value(got[k], expected[k]) for k in expected)
        )
    return type(got) is type(expected) and bool(got == expected)

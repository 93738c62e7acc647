"""An OpenEnv environment's tasks (its Task API) as the bridge's task set.

OpenEnv 0.10 lets an environment publish tasks (``list_splits``, ``num_tasks``,
``get_task``, ``get_task_range``; its server's ``/{env}/splits``, ``/num_tasks``,
``/task_range``) and start one with ``reset(split=..., index=...)``. The bridge passes
them through: over ``--url`` they are read from the server lazily (the splits and their
sizes once, tasks a page at a time as they are asked for), with ``--env`` from the
class's methods on a short-lived instance (as OpenEnv's server calls them).

Task ``i`` of split ``S`` is ``Task("S-000i")`` whose options start it: ``remote_split``
and ``remote_index``, which the bridge's reset passes on as OpenEnv's ``split`` and
``index`` (our own reset reserves those names for choosing a task). What the remote
says of the task is its ``data``; a ``difficulty`` or ``group`` it names is kept.

Success: OpenEnv 0.10 has no rule for it (a rubric scores, it does not pass or fail),
so an episode succeeds where the remote ended it with a reward above 0.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

from openenv_mcp.errors import ArgumentError
from openenv_mcp.tasks import SPLIT_TYPES, Ending, LazyTasks, Split, Task, TaskSet, UnknownTask
from openenv_mcp_envs.openenv._described import Limits
from openenv_mcp_envs.openenv._local import Loaded
from openenv_mcp_envs.openenv._remote import _Startup

__all__ = [
    "FINAL_REWARD",
    "OPTIONS",
    "PAGE",
    "LocalTasks",
    "OpenEnvTasks",
    "RemoteTasks",
]

log = logging.getLogger("openenv_mcp.openenv")

#: The reset options that start a remote task (passed on as ``split`` and ``index``).
OPTIONS = ("remote_split", "remote_index")
#: Tasks read from a server in one request (``/task_range``).
PAGE = 100
#: Pages of tasks kept per split.
_PAGES_KEPT = 64
#: The ``info`` key of the reward the remote ended the episode with.
FINAL_REWARD = "final_reward"


class OpenEnvTasks(TaskSet):
    """An OpenEnv environment's splits and tasks, read through ``read``-style methods of
    a subclass (:class:`RemoteTasks`, :class:`LocalTasks`)."""

    def __init__(self, where: str, splits: Sequence[dict[str, Any]]) -> None:
        self.where = where
        self._splits: list[Split] = []
        for raw in splits:
            try:
                kind = raw.get("type")
                self._splits.append(
                    Split(str(raw["name"]), kind if kind in SPLIT_TYPES else "validation")
                )
            except (KeyError, ValueError, AttributeError) as exc:
                log.warning("%s: split %r left out: %s", where, raw, exc)
        self._sizes: dict[str, int] = {}
        self._pages: dict[tuple[str, int], list[Task]] = {}
        self._lock = threading.Lock()

    # -- what a subclass reads -----------------------------------------------------------

    def _count(self, split: str) -> int:
        raise NotImplementedError

    def _range(self, split: str, start: int, stop: int) -> list[Any]:
        raise NotImplementedError

    # -- the task set --------------------------------------------------------------------

    def splits(self) -> Sequence[Split]:
        return self._splits

    def tasks(self, split: str) -> Sequence[Task]:
        with self._lock:
            size = self._sizes.get(split)
        if size is None:
            size = self._count(split)
            if isinstance(size, bool) or not isinstance(size, int) or size < 0:
                raise ArgumentError(
                    f"{self.where}: num_tasks({split!r}) answered {size!r}, not a count"
                )
            with self._lock:
                self._sizes[split] = size
        return LazyTasks(size, lambda i: self._page(split, i // PAGE, size)[i % PAGE])

    def locate(self, task_id: str) -> tuple[str, int, Task]:
        split, _, index = task_id.rpartition("-")
        if index.isdigit() and any(s.name == split for s in self._splits):
            i = int(index)
            tasks = self.tasks(split)
            if i < len(tasks) and task_id == _task_id(split, i):
                return split, i, tasks[i]
        names = ", ".join(s.name for s in self._splits)
        raise UnknownTask(f"no task {task_id!r}: this set's ids are SPLIT-NNNN (splits: {names})")

    def success(self, task: Task, ending: Ending) -> bool:
        reward = ending.info.get(FINAL_REWARD)
        return isinstance(reward, (int, float)) and reward > 0

    def _page(self, split: str, page: int, size: int) -> list[Task]:
        """Page ``page`` of ``split`` (:data:`PAGE` tasks, one Task API call), the last
        pages read kept."""
        key = (split, page)
        with self._lock:
            found = self._pages.get(key)
        if found is not None:
            return found
        start = page * PAGE
        stop = min(start + PAGE, size)
        specs = self._range(split, start, stop)
        if not isinstance(specs, list) or len(specs) != stop - start:
            got = len(specs) if isinstance(specs, list) else type(specs).__name__
            raise ArgumentError(
                f"{self.where}: get_task_range({split!r}, {start}, {stop}) "
                f"answered {got} tasks, expected {stop - start}"
            )
        found = [self.make(split, start + i, spec) for i, spec in enumerate(specs)]
        with self._lock:
            if len(self._pages) >= _PAGES_KEPT:
                self._pages.pop(next(iter(self._pages)))
            self._pages[key] = found
        return found

    def make(self, split: str, index: int, spec: Any) -> Task:
        """Our task of the remote's task ``spec`` (``index`` of ``split``)."""
        data = dict(spec) if isinstance(spec, dict) else {"task": spec}
        difficulty, group = data.get("difficulty"), data.get("group")
        return Task(
            _task_id(split, index),
            options={"remote_split": split, "remote_index": index},
            difficulty=difficulty if isinstance(difficulty, str) else None,
            group=group if isinstance(group, str) else None,
            data=data,
        )


def _task_id(split: str, index: int) -> str:
    return f"{split}-{index:04d}"


class RemoteTasks(OpenEnvTasks):
    """A running OpenEnv server's tasks, over its Task API routes."""

    def __init__(
        self, base: str, env_name: str, splits: list[dict[str, Any]], timeout: float, limits: Limits
    ) -> None:
        super().__init__(f"the OpenEnv server at {base}", splits)
        self.base, self.env_name, self.timeout, self.limits = base, env_name, timeout, limits

    @classmethod
    def read(cls, base: str, timeout: float, limits: Limits) -> RemoteTasks | None:
        """The server's task set, or ``None`` where it publishes none (no Task API: 404,
        or its environment has no task methods: 501).

        Raises:
            ArgumentError: the server did not answer, or answered something else.
        """
        with _Startup(base, timeout, limits) as startup:
            status, names, _ = startup.json("/list_environments")
            if status in (404, 405, 501) or not (names and isinstance(names, list)):
                return None
            env_name = str(names[0])
            status, splits, text = startup.json(f"/{env_name}/splits")
        if status in (404, 501):
            return None
        if status != 200 or not isinstance(splits, list):
            raise ArgumentError(
                f"the OpenEnv server at {base} answered GET /{env_name}/splits with "
                f"{status}: {text[:200]}"
            )
        return cls(base, env_name, splits, timeout, limits)

    def _post(self, route: str, body: dict[str, Any]) -> Any:
        path = f"/{self.env_name}/{route}"
        with _Startup(self.base, self.timeout, self.limits) as startup:
            status, answer, text = startup.json(path, body)
        if status == 400:
            raise UnknownTask(f"{self.where} answered POST {path} {body}: {text[:200]}")
        if status != 200 or not isinstance(answer, dict):
            raise ArgumentError(f"{self.where} answered POST {path} with {status}: {text[:200]}")
        return answer

    def _count(self, split: str) -> int:
        count: int = self._post("num_tasks", {"split": split}).get("num_tasks")
        return count

    def _range(self, split: str, start: int, stop: int) -> list[Any]:
        body = {"split": split, "start": start, "stop": stop}
        tasks: list[Any] = self._post("task_range", body).get("tasks")
        return tasks


class LocalTasks(OpenEnvTasks):
    """An OpenEnv ``Environment`` class's tasks, from its methods (each call on a fresh
    instance, closed after, as OpenEnv's server makes one per call)."""

    def __init__(self, loaded: Loaded, splits: list[dict[str, Any]]) -> None:
        super().__init__(loaded.origin, splits)
        self.loaded = loaded

    @classmethod
    def read(cls, loaded: Loaded) -> LocalTasks | None:
        """The class's task set, or ``None`` where it has no ``list_splits``."""
        if not callable(getattr(loaded.env_cls, "list_splits", None)):
            return None
        try:
            splits = _call(loaded, "list_splits")
        except NotImplementedError:
            return None
        normalized = [
            s.model_dump() if hasattr(s, "model_dump") else s if isinstance(s, dict) else _named(s)
            for s in splits
        ]
        return cls(loaded, normalized)

    def _count(self, split: str) -> int:
        count: int = _call(self.loaded, "num_tasks", split)
        return count

    def _range(self, split: str, start: int, stop: int) -> list[Any]:
        if callable(getattr(self.loaded.env_cls, "get_task_range", None)):
            tasks: list[Any] = list(_call(self.loaded, "get_task_range", split, start, stop))
            return tasks
        return [_call(self.loaded, "get_task", split, i) for i in range(start, stop)]


def _named(split: Any) -> dict[str, Any]:
    """OpenEnv's reading of a split given as a name."""
    name = str(split)
    return {"name": name, "type": name if name in SPLIT_TYPES else "validation"}


def _call(loaded: Loaded, method: str, *args: Any) -> Any:
    """``method(*args)`` on a fresh instance (awaited where it is a coroutine).

    Raises:
        UnknownTask: it raised IndexError (OpenEnv's "Invalid task index").
        NotImplementedError: it does not implement the method.
    """
    env = loaded.make()
    try:
        value = getattr(env, method)(*args)
        if inspect.isawaitable(value):
            value = _awaited(value)
        return value
    except IndexError as exc:
        raise UnknownTask(f"{loaded.origin}: {method}{args}: invalid task index ({exc})") from None
    finally:
        close: Callable[[], Any] | None = getattr(env, "close", None)
        if close is not None:
            close()


def _awaited(value: Any) -> Any:
    """An awaitable's result, in a loop of its own thread (this one may be running one)."""
    out: list[Any] = []
    failed: list[BaseException] = []

    def run() -> None:
        async def wait() -> Any:
            return await value

        try:
            out.append(asyncio.run(wait()))
        except BaseException as exc:
            failed.append(exc)

    thread = threading.Thread(target=run, name="openenv-task-call")
    thread.start()
    thread.join()
    if failed:
        raise failed[0]
    return out[0]

"""OpenEnv's Task API (the Open Reward Standard's) on the ``--openenv`` face: the served
env's task set, listed and read over HTTP under ``/openenv``.

The routes are OpenEnv 0.10's (``create_app``'s "Task API" routes), answered in its
bytes where a request is well formed:

* ``GET  /list_environments``: ``[NAME]``;
* ``GET  /{env}/splits``: ``[{"name", "type"}, ...]``;
* ``POST /{env}/tasks {split}``: ``{"tasks": [...], "env_name": NAME}``;
* ``POST /{env}/num_tasks {split}``: ``{"num_tasks": N}``;
* ``POST /{env}/task {split, index}``: ``{"task": {...}, "env_name": NAME}``;
* ``POST /{env}/task_range {split, start?, stop?}``: ``{"tasks": [...], "env_name": NAME}``.

``env_name`` on ``/task`` and ``/task_range`` is more than OpenEnv 0.10 sends: ORS's
server sends it on all three task routes and the ``openreward`` client reads it there,
so it is sent on all three (a superset: OpenEnv's clients ignore the extra field).

``{env}`` is compared without case, as OpenEnv compares it; another name is 404. An env
that publishes no tasks answers 501 on every ``/{env}/...`` route, as OpenEnv answers
an env without the task methods. A task is :meth:`openenv_mcp.tasks.Task.to_json`; a
task is started by ``reset(split=..., index=...)`` over ``/reset`` or ``/ws``, which the
face passes on as the reset options ``split`` and ``index``.

Where OpenEnv leaves an answer to the env (an unknown split, a negative index) or to
pydantic's lax parsing (``"3"`` as an index), this face is stricter and says why:
400 for a split or index that is not there (OpenEnv's status for an index out of
range), 422 for a body that is not the route's fields (OpenEnv's status for a body
its model refuses), each with a ``detail`` that names the field and what came.

The ``openreward`` client asks its session host for a session before each call
(``POST /create_session``, an SSE stream whose ``task_id`` event is the id, and
``POST /delete_session`` after); these routes hold nothing, since the Task API needs no
session, and are served at the root because that client joins absolute paths onto its
base URL's host (its base URL is the server's root, its ``variant`` ``openenv/NAME``).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from openenv_mcp.errors import OpenEnvError, UnknownTask
from openenv_mcp.server.faces import _openenv_wire as wire
from openenv_mcp.server.tools._results import error_text
from openenv_mcp.wire.exactjson import loads_exact

if TYPE_CHECKING:
    from openenv_mcp.server._app import EnvApp
    from openenv_mcp.tasks import Task, TaskSet

__all__ = ["MAX_LISTED", "TaskRoutes", "session_routes"]

#: The most tasks one answer lists (``/tasks``, ``/task_range``): a generated split of a
#: million tasks is read a range at a time (ORS's index-based API).
MAX_LISTED = 10_000

#: Each route's body fields and whether each is required.
_FIELDS: dict[str, dict[str, bool]] = {
    "tasks": {"split": True},
    "num_tasks": {"split": True},
    "task": {"split": True, "index": True},
    "task_range": {"split": True, "start": False, "stop": False},
}
#: The task set's method each route stands for, as OpenEnv names it in its 501.
_METHODS = {
    "splits": "list_splits",
    "tasks": "list_tasks",
    "num_tasks": "num_tasks",
    "task": "get_task",
    "task_range": "get_task_range",
}


class _Refused(Exception):
    """An answer other than 200: its status and detail."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


class TaskRoutes:
    """The Task API over one served environment's task set."""

    def __init__(self, app: EnvApp) -> None:
        self.app = app
        #: The name the routes answer to and send (``env_name``).
        self.name = app.env_cls.name

    def routes(self) -> list[BaseRoute]:
        """The routes, to mount under ``/openenv``."""
        return [
            Route("/list_environments", self.list_environments, methods=["GET"]),
            Route("/{env}/splits", self.splits, methods=["GET"]),
            *(Route(f"/{{env}}/{kind}", self._post(kind), methods=["POST"]) for kind in _FIELDS),
        ]

    async def list_environments(self, request: Request) -> Response:
        return wire.json_response([self.name])

    async def splits(self, request: Request) -> Response:
        try:
            task_set = self._task_set(request, "splits")
            splits = await anyio.to_thread.run_sync(task_set.splits)
            return wire.json_response([s.to_json() for s in splits])
        except _Refused as refused:
            return _refusal(refused)

    def _post(self, kind: str) -> Callable[[Request], Any]:
        async def endpoint(request: Request) -> Response:
            try:
                # The body first, as OpenEnv's FastAPI checks it before the handler runs.
                body = _fields(kind, await request.body())
                task_set = self._task_set(request, kind)
                answer = await anyio.to_thread.run_sync(self._answer, task_set, kind, body)
            except _Refused as refused:
                return _refusal(refused)
            return wire.json_response(answer)

        return endpoint

    def _task_set(self, request: Request, kind: str) -> TaskSet:
        env = str(request.path_params["env"])
        if env.lower() != self.name.lower():
            # OpenEnv's words, then which name this server answers to.
            raise _Refused(404, f"unknown environment {env!r}; this server serves {self.name!r}")
        task_set = self.app.prototype.task_set()
        if task_set is None:
            raise _Refused(
                501,
                f"{_METHODS[kind]} is not supported for this environment "
                f"({self.name} publishes no tasks)",
            )
        return task_set

    def _answer(self, task_set: TaskSet, kind: str, body: dict[str, Any]) -> dict[str, Any]:
        """The answer to a checked body (in a worker thread: a bridged env's task set
        reads its remote over HTTP)."""
        try:
            tasks = task_set.split_tasks(body["split"])
            if kind == "num_tasks":
                return {"num_tasks": len(tasks)}
            if kind == "task":
                task = task_set.task(body["split"], body["index"])
                return {"task": task.to_json(), "env_name": self.name}
            if kind == "tasks":
                return {"tasks": _listed(tasks, 0, len(tasks), body), "env_name": self.name}
            start, stop, _ = slice(body.get("start"), body.get("stop")).indices(len(tasks))
            return {"tasks": _listed(tasks, start, stop, body), "env_name": self.name}
        except UnknownTask as exc:
            raise _Refused(400, error_text(exc)) from None
        except OpenEnvError as exc:  # a bridged remote that failed to answer
            raise _Refused(502, error_text(exc)) from None


def _listed(tasks: Sequence[Task], start: int, stop: int, body: dict[str, Any]) -> list[Any]:
    if stop - start > MAX_LISTED:
        raise _Refused(
            400,
            f"split {body['split']!r} has {len(tasks)} tasks; an answer lists at most "
            f"{MAX_LISTED} (got a range of {stop - start}): read it in ranges with "
            "POST task_range {split, start, stop}",
        )
    return [task.to_json() for task in tasks[start:stop]]


def _fields(kind: str, raw: bytes) -> dict[str, Any]:
    """The route's body, checked: a JSON object of its fields, each of its type.

    Raises:
        _Refused: 422 naming the field and what came.
    """
    fields = _FIELDS[kind]
    want = ", ".join(f"{k}{'' if required else '?'}" for k, required in fields.items())
    try:
        body = loads_exact(raw) if raw.strip() else None
    except ValueError as exc:
        raise _Refused(
            422, f"expected a JSON object {{{want}}} as the body, got no JSON ({exc})"
        ) from None
    if not isinstance(body, dict):
        got = "no body" if body is None else type(body).__name__
        raise _Refused(422, f"expected a JSON object {{{want}}} as the body, got {got}")
    extra = sorted(set(body) - set(fields))
    if extra:
        raise _Refused(422, f"unknown field{'s' * (len(extra) > 1)} {extra}; expected {{{want}}}")
    for name, required in fields.items():
        if name not in body:
            if required:
                raise _Refused(422, f"field {name!r} is required; expected {{{want}}}")
            continue
        value = body[name]
        if name == "split":
            if not isinstance(value, str):
                raise _Refused(422, f"field 'split' must be a string, got {_shown(value)}")
        elif value is None and not required:
            continue
        elif isinstance(value, bool) or not isinstance(value, int):
            kind_of = "an integer" if required else "an integer or null"
            raise _Refused(422, f"field {name!r} must be {kind_of}, got {_shown(value)}")
    return body


def _shown(value: Any) -> str:
    return f"{type(value).__name__} {str(value)[:60]!r}"


def _refusal(refused: _Refused) -> Response:
    return wire.json_response({"detail": refused.detail}, refused.status)


# -- the openreward client's session host -----------------------------------------------------


async def _create_session(request: Request) -> Response:
    """An SSE stream of one session id (``task_id``) and its end: what ``openreward``'s
    ``matrix_sid_provider`` reads before each Task API call."""
    sid = "ors_" + secrets.token_hex(8)
    body = f"event: task_id\ndata: {sid}\n\nevent: end\ndata: \n\n".encode()
    return Response(body, 200, media_type="text/event-stream")


async def _delete_session(request: Request) -> Response:
    return wire.json_response({"status": "ok"})


def session_routes() -> list[BaseRoute]:
    """``POST /create_session`` and ``/delete_session``, to mount at the root: sessions
    that hold nothing, for the ``openreward`` client's Task API calls."""
    return [
        Route("/create_session", _create_session, methods=["POST"]),
        Route("/delete_session", _delete_session, methods=["POST"]),
    ]

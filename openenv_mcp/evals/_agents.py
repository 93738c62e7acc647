"""Eval policies that are agents: a model behind an OpenAI-compatible endpoint, and an
agent harness command.

:class:`OpenAIPolicy` runs the agent loop here: it starts the run's task itself (a reset
with ``options={"split", "index"}``, so every sample of a task starts the same way),
hands the model the environment's rules, the reset's answer and the server's tools as
OpenAI function tools, and runs each tool call the model makes as an MCP tool call on
the run's episode, until the episode ends, the turn cap, or the model stops calling
tools. Plain httpx: the ``openai`` package is not needed.

:class:`HarnessPolicy` runs a harness command (``claude -p ... --mcp-config
{mcp_config}``) per run, as ``collect --agent`` does: a fresh recorded server of a local
environment in an MCP config, the run's task fixed for it, and the run's outcome read
from the recording's end record.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import httpx

from openenv_mcp._util.interpreter import python_command
from openenv_mcp.errors import ArgumentError, OpenEnvError, ServerDied
from openenv_mcp.evals._policy import TaskOutcome, TaskRun
from openenv_mcp.recording import iter_recordings

if TYPE_CHECKING:
    from openenv_mcp.client import Session, ToolAnswer

__all__ = [
    "MCP_CONFIG_PLACEHOLDER",
    "TASK_PLACEHOLDER",
    "HarnessPolicy",
    "OpenAIPolicy",
    "agent_policy_from_spec",
    "openai_tools",
]

log = logging.getLogger("openenv_mcp.evals")

#: Where a harness command's MCP config path goes.
MCP_CONFIG_PLACEHOLDER = "{mcp_config}"
#: Where a harness command may take the run's task id (its prompt, say).
TASK_PLACEHOLDER = "{task}"

#: Tools the model is not given: the run's reset is ours, the rest a trainer's.
_HIDDEN_TOOLS = frozenset(
    {"reset", "step_batch", "close", "snapshot", "release_snapshot", "evaluate"}
)
#: Arguments the loop fills in itself (the run's episode) or that are a trainer's.
_HIDDEN_ARGS = frozenset({"episode_id", "frames", "extras", "np_random", "new_episode", "shard"})
#: The most bytes one model answer may have.
MAX_REPLY_BYTES = 8 * 1024 * 1024
#: Characters of one tool result's text the model is shown.
_MAX_RESULT_TEXT = 20_000
#: Characters of a harness's output kept in the run's messages.
_MAX_HARNESS_LOG = 20_000


# -- an OpenAI-compatible endpoint -------------------------------------------------------------


def openai_tools(tools: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The MCP tools a model plays with, as OpenAI function tools.

    Leaves out the tools the loop keeps to itself (``reset``, a trainer's) and the
    arguments it fills in (``episode_id``, ``frames``...), so every call the model
    makes lands on its run's episode.

    Args:
        tools: MCP tools by name, as ``tools/list`` lists them (``Session.tools``).

    Returns:
        ``[{"type": "function", "function": {"name", "description", "parameters"}}]``.
    """
    converted = []
    for name in sorted(tools):
        if name in _HIDDEN_TOOLS:
            continue
        tool = tools[name]
        schema = dict(tool.get("inputSchema") or {"type": "object"})
        properties = {
            k: v for k, v in (schema.get("properties") or {}).items() if k not in _HIDDEN_ARGS
        }
        parameters: dict[str, Any] = {**schema, "type": "object", "properties": properties}
        required = [r for r in schema.get("required") or [] if r in properties]
        if required:
            parameters["required"] = required
        else:
            parameters.pop("required", None)
        converted.append(
            {
                "type": "function",
                "function": {
                    "name": name,
                    "description": str(tool.get("description") or name),
                    "parameters": parameters,
                },
            }
        )
    return converted


class _ModelFailed(Exception):
    """The endpoint could not be used: the run's error."""


class OpenAIPolicy:
    """A model behind an OpenAI-compatible chat completions endpoint, playing each run.

    Args:
        url: the endpoint's base (``http://localhost:8000/v1``; ``/chat/completions`` is
            added unless it is there).
        model: the model's name, as the endpoint knows it.
        api_key_env: the environment variable holding the API key, sent as a bearer
            token (none is sent without it: a key is never sent to an endpoint unasked).
        max_turns: model calls per run at most; a run still going after them is an error.
        timeout: seconds one model call may take.
        retries: more attempts after a failed model call (no answer, 429 or 5xx).
        images: show the model a result's frame (as a user message's image part after
            the tool results: chat tool messages take text only).
        temperature: sent where given (``None``: the endpoint's default).
        transport: an httpx transport (tests, proxies); by default httpx's own.

    Raises:
        ArgumentError: for an empty URL or model, a non-positive cap, or an unset
            ``api_key_env``.
    """

    def __init__(
        self,
        url: str,
        model: str,
        *,
        api_key_env: str | None = None,
        max_turns: int = 200,
        timeout: float = 120.0,
        retries: int = 2,
        images: bool = True,
        temperature: float | None = 0.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise ArgumentError(f"--openai-url must be an http(s) URL, got {url!r}")
        if not model:
            raise ArgumentError("--model: name the model the endpoint serves, got ''")
        if max_turns < 1 or timeout <= 0 or retries < 0:
            raise ArgumentError(
                f"max_turns must be at least 1, timeout positive and retries at least 0; got "
                f"max_turns={max_turns} timeout={timeout} retries={retries}"
            )
        base = url.rstrip("/")
        self.url = base if base.endswith("/chat/completions") else f"{base}/chat/completions"
        self.model = model
        self.name = f"openai:{model}@{url}"
        self.headers = {"Content-Type": "application/json"}
        if api_key_env is not None:
            key = os.environ.get(api_key_env)
            if not key:
                raise ArgumentError(
                    f"--api-key-env {api_key_env}: that environment variable is not set"
                )
            self.headers["Authorization"] = f"Bearer {key}"
        self.max_turns = max_turns
        self.timeout = timeout
        self.retries = retries
        self.images = images
        self.temperature = temperature
        self._transport = transport

    def __repr__(self) -> str:
        return f"<OpenAIPolicy {self.name}>"

    async def play(self, session: Session, run: TaskRun) -> TaskOutcome:
        """Play ``run``: reset to its task, then the model's tool calls until the end."""
        outcome = TaskOutcome(success=None)
        episode_id: str | None = None
        try:
            async with httpx.AsyncClient(
                timeout=self.timeout, transport=self._transport, headers=self.headers
            ) as http:
                episode_id = await self._play(session, run, http, outcome)
        except _ModelFailed as exc:
            outcome.error = str(exc)
        except ServerDied as exc:
            outcome.error = f"the server died: {exc}"
        except OpenEnvError as exc:
            outcome.error = f"{type(exc).__name__}: {exc}"
        except Exception as exc:  # a policy must not raise: the run is an error
            log.exception("run %s/%s failed", run.task_id, run.sample)
            outcome.error = f"{type(exc).__name__}: {exc}"
        finally:
            if episode_id is not None and "close" in session.tools and session.connected:
                with anyio.CancelScope(shield=True), anyio.move_on_after(10):
                    try:
                        await session.call("close", {"episode_id": episode_id})
                    except OpenEnvError as exc:
                        log.debug("closing %s: %s", episode_id, exc)
        return outcome

    async def _play(
        self, session: Session, run: TaskRun, http: httpx.AsyncClient, outcome: TaskOutcome
    ) -> str:
        messages: list[dict[str, Any]] = []  # as the endpoint gets them
        record = outcome.messages  # as the Inspect log reads them

        def add(message: dict[str, Any], recorded: dict[str, Any] | None = None) -> None:
            messages.append(message)
            record.append(recorded if recorded is not None else message)

        reset: dict[str, Any] = {
            "new_episode": True,
            "options": {"split": run.split, "index": run.index},
        }
        answer = await session.call("reset", reset)
        view = answer.structured or {}
        episode_id = str(view["episode_id"])
        outcome.first_observation = _observation_hash(view, answer)
        tools = openai_tools(session.tools)
        names = {t["function"]["name"] for t in tools}
        add({"role": "system", "content": await self._rules(session)})
        add(
            {
                "role": "user",
                "content": (
                    f"Task {run.task_id} has started: {answer.text}\n"
                    "Play it to the end with the tools; the episode ends when the answer "
                    "says so."
                ),
            }
        )
        self._show_images(answer, add)
        for turn in range(self.max_turns):
            reply = await self._complete(http, messages, tools, run.seed + turn)
            calls = reply.get("tool_calls") or []
            assistant: dict[str, Any] = {"role": "assistant", "content": reply.get("content")}
            if calls:
                assistant["tool_calls"] = calls
            add(
                assistant,
                {
                    "role": "assistant",
                    "content": str(reply.get("content") or ""),
                    **(
                        {
                            "tool_calls": [
                                {
                                    "id": c["id"],
                                    "function": c["function"]["name"],
                                    "arguments": c["function"]["arguments"],
                                }
                                for c in calls
                            ]
                        }
                        if calls
                        else {}
                    ),
                },
            )
            if not calls:
                outcome.error = (
                    f"the model stopped before the episode ended (turn {turn + 1}, step "
                    f"{outcome.steps}): it answered without a tool call"
                )
                return episode_id
            ended = False
            shown: ToolAnswer | None = None
            for call in calls:
                name = call["function"]["name"]
                text, answer_or_none = await self._run_call(
                    session, episode_id, name, call["function"]["arguments"], names
                )
                add({"role": "tool", "tool_call_id": call["id"], "content": text})
                if answer_or_none is None:
                    continue
                shown = answer_or_none
                result = answer_or_none.structured or {}
                if isinstance(result.get("step"), int):
                    outcome.steps = int(result["step"])
                if "episode_return" in result:
                    outcome.reward = float(result["episode_return"])
                if result.get("terminated") or result.get("truncated"):
                    task = result.get("task") or {}
                    success = task.get("success")
                    outcome.success = bool(success) if success is not None else None
                    outcome.scores = dict(task.get("scores") or {})
                    if success is None:
                        outcome.error = "the episode ended, but its answer judged no task"
                    ended = True
                    break
            if ended:
                return episode_id
            if shown is not None:
                self._show_images(shown, add)
            if run.max_steps and outcome.steps >= run.max_steps:
                outcome.error = f"stopped at the step cap ({run.max_steps} steps)"
                return episode_id
        outcome.error = f"the episode did not end within {self.max_turns} model turns"
        return episode_id

    async def _rules(self, session: Session) -> str:
        """The environment's rules, as its server states them (its rules resource)."""
        name = session.server_spec.name
        try:
            read = await session.transport.request(
                "resources/read", {"uri": f"openenv://{name}/rules"}
            )
            text = next(c["text"] for c in read.get("contents", []) if "text" in c)
        except Exception as exc:  # an older server: the tools' descriptions still say it
            log.debug("no rules resource: %r", exc)
            text = f"You are playing {name}."
        return (
            f"{text}\n\nYou play one episode through the tools below; it has already been "
            "started for you. Every call acts on it; call tools until the episode is over."
        )

    async def _run_call(
        self,
        session: Session,
        episode_id: str,
        name: str,
        arguments: Any,
        names: set[str],
    ) -> tuple[str, ToolAnswer | None]:
        """Run one of the model's tool calls: the tool message's text and the answer (or
        ``None`` where the call was refused; the model is told why and may try again)."""
        if name not in names:
            return (
                f"Error: there is no tool {name!r}. Tools: {', '.join(sorted(names))}.",
                None,
            )
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except json.JSONDecodeError as exc:
                return (
                    f"Error: the arguments of {name} must be a JSON object; {exc} in "
                    f"{arguments[:200]!r}.",
                    None,
                )
        if not isinstance(arguments, dict):
            return (
                f"Error: the arguments of {name} must be a JSON object, got "
                f"{type(arguments).__name__}.",
                None,
            )
        arguments = {k: v for k, v in arguments.items() if k not in _HIDDEN_ARGS}
        takes_episode = "episode_id" in (
            session.tools[name].get("inputSchema", {}).get("properties") or {}
        )
        if takes_episode:
            arguments["episode_id"] = episode_id
        try:
            answer = await session.call(name, arguments)
        except ServerDied:
            raise
        except OpenEnvError as exc:  # the model is told, as a harness would tell it
            return f"Error: {exc.code}: {exc}", None
        text = answer.text or json.dumps(answer.structured or {})
        return text[:_MAX_RESULT_TEXT], answer

    def _show_images(self, answer: ToolAnswer, add: Any) -> None:
        if not self.images:
            return
        images = answer.images
        if not images:
            return
        image = images[-1]
        url = f"data:{image.get('mimeType', 'image/png')};base64,{image['data']}"
        add(
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "The frame now:"},
                    {"type": "image_url", "image_url": {"url": url}},
                ],
            },
            {"role": "user", "content": "The frame now: [image]"},
        )

    async def _complete(
        self,
        http: httpx.AsyncClient,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        seed: int,
    ) -> dict[str, Any]:
        """One chat completion: the choice's message, or :class:`_ModelFailed` saying why."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "tools": tools,
            "tool_choice": "auto",
            "seed": seed,
        }
        if self.temperature is not None:
            body["temperature"] = self.temperature
        failure = ""
        for attempt in range(self.retries + 1):
            if attempt:
                await anyio.sleep(min(0.5 * 2**attempt, 8.0))
            try:
                status, raw = await self._post(http, body)
            except httpx.HTTPError as exc:
                failure = f"could not reach the model endpoint {self.url}: {exc!r}"
                continue
            if status == 429 or status >= 500:
                failure = f"the model endpoint {self.url} answered {status}: {_excerpt(raw)}"
                continue
            if status != 200:  # a request the endpoint refuses will be refused again
                raise _ModelFailed(
                    f"the model endpoint {self.url} answered {status}: {_excerpt(raw)}"
                )
            return _choice_message(self.url, raw)
        raise _ModelFailed(f"{failure} (after {self.retries + 1} attempts)")

    async def _post(self, http: httpx.AsyncClient, body: dict[str, Any]) -> tuple[int, bytes]:
        async with http.stream("POST", self.url, json=body) as response:
            chunks = []
            size = 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > MAX_REPLY_BYTES:
                    raise _ModelFailed(
                        f"the model endpoint {self.url} answered more than "
                        f"{MAX_REPLY_BYTES} bytes; refused"
                    )
                chunks.append(chunk)
            return response.status_code, b"".join(chunks)


def _excerpt(raw: bytes) -> str:
    return repr(raw[:300].decode("utf-8", "replace"))


def _choice_message(url: str, raw: bytes) -> dict[str, Any]:
    """The first choice's message of a chat completion, its tool calls checked."""
    try:
        data = json.loads(raw)
    except ValueError:
        raise _ModelFailed(
            f"the model endpoint {url} answered with no JSON: {_excerpt(raw)}"
        ) from None
    choices = data.get("choices") if isinstance(data, dict) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, dict) else None
    if not isinstance(message, dict):
        raise _ModelFailed(
            f"the model endpoint {url} answered without choices[0].message: {_excerpt(raw)}"
        )
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise _ModelFailed(f"the model endpoint {url} sent tool_calls that are not a list")
    checked = []
    for k, call in enumerate(calls):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise _ModelFailed(
                f"the model endpoint {url} sent tool call {k} without function.name: "
                f"{str(call)[:200]}"
            )
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments if arguments is not None else {})
        checked.append(
            {
                "id": str(call.get("id") or f"call_{k}"),
                "type": "function",
                "function": {"name": function["name"], "arguments": arguments},
            }
        )
    content = message.get("content")
    return {"content": content if isinstance(content, str) else None, "tool_calls": checked}


def _observation_hash(view: dict[str, Any], answer: ToolAnswer) -> str:
    import hashlib

    observation = view.get("observation")
    if observation is None and answer.images:
        observation = answer.images[0].get("data")
    data = json.dumps(observation, sort_keys=True, default=str).encode()
    return hashlib.sha256(data).hexdigest()[:16]


# -- an agent harness command ---------------------------------------------------------------------


class HarnessPolicy:
    """An agent harness command, run once per run against a fresh recorded server.

    For each run it writes an MCP config naming ``serve ENV --stdio --profile agent
    --record DIR`` with the run's task fixed, runs the command (``{mcp_config}`` in it
    is the config's path, ``{task}`` the task's id), and reads the outcome from the
    recording of the task's episode.

    Args:
        command: the harness command, with ``{mcp_config}``.
        env: the local environment (a registered name or ``module:Class``).
        out: where the configs, recordings and the harness's output go.
        env_args: the environment's options and server settings, in CLI form.
        timeout: seconds one run's command may take.

    Raises:
        ArgumentError: the command lacks ``{mcp_config}`` or does not parse, or the
            timeout is not positive.
    """

    def __init__(
        self,
        command: str,
        env: str,
        out: str | os.PathLike[str],
        *,
        env_args: Sequence[str] = (),
        timeout: float = 600.0,
    ) -> None:
        if MCP_CONFIG_PLACEHOLDER not in command:
            raise ArgumentError(
                f"a harness command needs {MCP_CONFIG_PLACEHOLDER} where the MCP config's "
                f"path goes, e.g. 'claude -p \"Play\" --mcp-config {MCP_CONFIG_PLACEHOLDER}'; "
                f"got {command!r}"
            )
        try:
            self.argv = shlex.split(command)
        except ValueError as exc:
            raise ArgumentError(f"the harness command does not parse: {exc}: {command!r}") from None
        if not self.argv:
            raise ArgumentError("the harness command is empty")
        if timeout <= 0:
            raise ArgumentError(f"the harness timeout must be positive, got {timeout}")
        for arg in env_args:
            if arg in ("--record", "--stdio", "--http", "--task", "--profile") or arg.startswith(
                ("--record=", "--task=", "--profile=", "--transport")
            ):
                raise ArgumentError(f"the eval sets {arg.split('=')[0]} itself; leave it out")
        self.command = command
        self.name = command
        self.env = env
        self.env_args = tuple(env_args)
        self.out = Path(out)
        self.timeout = timeout

    def __repr__(self) -> str:
        return f"<HarnessPolicy {self.command!r} on {self.env}>"

    def serve_command(self, record: Path, task_id: str) -> list[str]:
        """The recorded server's command line for one run: its first reset starts the task."""
        return python_command(
            "-m",
            "openenv_mcp",
            "serve",
            self.env,
            "--stdio",
            "--profile",
            "agent",
            "--record",
            str(record),
            "--task",
            task_id,
            *self.env_args,
        )

    async def play(self, session: Session | None, run: TaskRun) -> TaskOutcome:
        """Run the command for ``run`` (``session`` is not used: the harness connects to
        its own server) and read the outcome from its recording."""
        name = f"{_safe(run.task_id)}-s{run.sample:03d}"
        record = self.out / "episodes" / name
        if record.exists():  # an earlier attempt's: kept aside, never read as this one's
            record.rename(self.out / "episodes" / f"{name}-old-{time.time_ns()}")
        config = self.out / "mcp" / f"{name}.json"
        log_path = self.out / "agents" / f"{name}.log"
        for path in (record, config.parent, log_path.parent):
            path.mkdir(parents=True, exist_ok=True)
        command = self.serve_command(record, run.task_id)
        server = {"command": command[0], "args": command[1:]}
        config.write_text(json.dumps({"mcpServers": {"openenv": server}}, indent=2))
        argv = [
            part.replace(MCP_CONFIG_PLACEHOLDER, str(config)).replace(TASK_PLACEHOLDER, run.task_id)
            for part in self.argv
        ]
        outcome = TaskOutcome(success=None)
        outcome.messages.append(
            {
                "role": "system",
                "content": f"{shlex.join(argv)}\n(task {run.task_id}: the server starts it "
                "at the first reset)",
            }
        )
        env = {**os.environ, "OPENENV_MCP_CONFIG": str(config)}
        code: int | None
        try:
            with open(log_path, "wb") as sink:
                with anyio.fail_after(self.timeout):
                    process = await anyio.run_process(
                        argv, check=False, stdout=sink, stderr=sink, env=env
                    )
                code = process.returncode
        except TimeoutError:
            code = None
        except OSError as exc:
            outcome.error = f"the harness command did not start: {exc}"
            return outcome
        output = log_path.read_text("utf-8", "replace")
        outcome.messages.append({"role": "assistant", "content": output[-_MAX_HARNESS_LOG:]})
        self._read(record, run, outcome)
        if code is None:
            outcome.error = f"the harness command ran past its timeout ({self.timeout:g}s)"
        elif outcome.error is not None and code != 0:
            outcome.error += f" (the harness command exited with status {code})"
        return outcome

    @staticmethod
    def _read(record: Path, run: TaskRun, outcome: TaskOutcome) -> None:
        """The outcome of the run's task as the recordings under ``record`` hold it."""
        played = [
            r
            for r in iter_recordings(record, observations=False)
            if (r.start.get("task") or {}).get("id") == run.task_id
        ]
        if not played:
            outcome.error = f"the agent played no episode of task {run.task_id}"
            return
        ended = [r for r in played if r.finished]
        recording = ended[0] if ended else played[-1]  # the first ending is the run's
        outcome.steps = len(recording.steps)
        outcome.reward = recording.episode_return
        if not ended:
            outcome.error = (
                f"the agent stopped before the episode of task {run.task_id} ended "
                f"({outcome.steps} steps)"
            )
            return
        task = (recording.end or {}).get("task") or {}
        success = task.get("success")
        if success is None:
            outcome.error = f"the recording of task {run.task_id} ended without a judgement"
            return
        outcome.success = bool(success)
        outcome.scores = dict(task.get("scores") or {})


def _safe(task_id: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in task_id)[:100]


# -- from the CLI's words -------------------------------------------------------------------------


def agent_policy_from_spec(
    spec: str | None,
    *,
    openai_url: str | None = None,
    model: str | None = None,
    api_key_env: str | None = None,
    env: str | None = None,
    env_args: Sequence[str] = (),
    out: str | os.PathLike[str] | None = None,
    timeout: float = 600.0,
) -> OpenAIPolicy | HarnessPolicy | None:
    """The agent policy the eval's flags name, or ``None`` where they name none.

    ``--openai-url URL --model NAME`` is a model behind an endpoint; a ``--policy`` with
    ``{mcp_config}`` is a harness command (local environments only).

    Args:
        spec: ``--policy`` as given (``None`` or another kind: not an agent's).
        openai_url, model, api_key_env: the endpoint's flags.
        env: the local environment; ``None`` where the eval targets ``--server``.
        env_args: its options and server settings, in CLI form.
        out: where a harness's configs, recordings and output go.
        timeout: seconds one harness run may take.

    Raises:
        ArgumentError: flags that contradict each other, or a harness without a local
            environment or an output directory.
    """
    if openai_url is not None or model is not None:
        if openai_url is None or model is None:
            raise ArgumentError(
                "--openai-url and --model go together: the endpoint and the model it serves "
                f"(got --openai-url {openai_url!r}, --model {model!r})"
            )
        if spec is not None and spec != "random":
            raise ArgumentError(
                f"--openai-url plays with the model; --policy {spec!r} names another player"
            )
        return OpenAIPolicy(openai_url, model, api_key_env=api_key_env)
    if api_key_env is not None:
        raise ArgumentError("--api-key-env goes with --openai-url and --model")
    if spec is None or MCP_CONFIG_PLACEHOLDER not in spec:
        return None
    if env is None:
        raise ArgumentError(
            "a harness command plays a local environment (eval ENV --policy '...'), which it "
            "serves itself, recorded, per run; it cannot play a --server"
        )
    if out is None:
        raise ArgumentError("a harness command needs an output directory for its recordings")
    return HarnessPolicy(spec, env, out, env_args=env_args, timeout=timeout)

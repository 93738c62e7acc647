"""Any OpenEnv environment as an openenv-mcp environment.

``openenv-mcp serve openenv --url URL`` mounts a running OpenEnv server (a local
uvicorn, a container, a Space): its ``/schema`` types the tools, and each MCP
episode is one OpenEnv session (one WebSocket on ``/ws``, closed with the
episode). ``openenv-mcp serve openenv --env module:Class`` serves an OpenEnv
``Environment`` subclass in this process instead (or a factory returning one, or
the app ``create_app`` made of it; ``--kwargs`` its constructor's arguments), so
recording, replay, the web page, worker processes, served rewards (its rubric as
the reward breakdown) and ``collect`` work on it as on any environment here.

Reset's ``options`` are its reset's keyword arguments: in process its ``reset``'s
parameters, typed; over ``--url`` those the server's ``/schema`` publishes under
``reset`` (typed), else ``kwargs``, passed on as they are (as OpenEnv's own client
passes them). What a model reads (:mod:`openenv_mcp_envs.openenv._words`) gives whole what it acts
on: the question, the prompt, the game's new messages, the legal moves, a board.

The action is the Action model's fields (``step(action={...})``, typed by its JSON
schema); an MCP environment's actions are its tools, each listed as an MCP
tool of its own. The observation is the Observation's fields, pixels found in
it become the frame (MCP image content), ``done`` becomes ``terminated`` (or
``truncated`` where the environment says so in its metadata or fields).

A running server is not trusted with this process: what it declares at start-up
must come within ``--startup-timeout``, and each answer within ``--max-reply-bytes``
(refused unread), ``--max-reply-values`` (counted before parsing),
``--max-observation-values`` (what goes on to clients as it came) and, for its
pictures, ``--max-frame-pixels`` (measured before decoding). Each limit's error
names the server and the limit; the other episodes answer on meanwhile.
"""

from __future__ import annotations

import inspect
import json
import logging
import threading
import typing
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

import numpy as np
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    WithJsonSchema,
    create_model,
    field_validator,
    model_validator,
)

from openenv_mcp.environment import Environment, Serving, StepResult
from openenv_mcp.errors import InvalidAction
from openenv_mcp.options import parse_pairs
from openenv_mcp.rewards import Reward, Step
from openenv_mcp.spaces import JsonSpace, ToolCalls, decode
from openenv_mcp.tasks import TASK_OPTIONS
from openenv_mcp.wire.schemas import inline_refs
from openenv_mcp_envs.openenv._described import (
    MAX_OBSERVATION_VALUES,
    MAX_REPLY_BYTES,
    MAX_REPLY_VALUES,
    STARTUP_TIMEOUT,
    Described,
    Limits,
    Observed,
    action_fields_schema,
    observation_fields_schema,
)
from openenv_mcp_envs.openenv._images import IMAGE_HINTS, MAX_FRAME_PIXELS, to_rgb
from openenv_mcp_envs.openenv._local import Loaded, LocalSession, describe_local, load_local
from openenv_mcp_envs.openenv._remote import RemoteSession, describe_remote, normalize_url
from openenv_mcp_envs.openenv._tasks import FINAL_REWARD, LocalTasks, OpenEnvTasks, RemoteTasks
from openenv_mcp_envs.openenv._words import OpenEnvNarration

__all__ = ["OpenEnvConfig", "OpenEnvEnv", "RubricBreakdown"]

log = logging.getLogger("openenv_mcp.openenv")


class OpenEnvConfig(BaseModel):
    """Which OpenEnv environment to serve: a running server, or a class in this process."""

    model_config = ConfigDict(extra="forbid")

    url: str | None = Field(
        None,
        description="A running OpenEnv server's base URL (http://host:port, a Space's https "
        "URL; user:token@ for Basic auth): each episode is one session on its /ws.",
    )
    env: str | None = Field(
        None,
        description="An OpenEnv environment served in this process (needs openenv-core: the "
        "[openenv] extra): an Environment subclass as module:Class, a function returning one "
        "as module:function (the factory create_app takes), or an app create_app made as "
        "module:app.",
    )
    kwargs: dict[str, Any] = Field(
        {},
        description="With --env: the class's (or factory's) keyword arguments: a JSON object "
        '(\'{"env_id": "GuessTheNumber-v0"}\') or key=value pairs '
        "(env_id=GuessTheNumber-v0,num_players=1).",
    )
    action: str | None = Field(
        None,
        description="With --env: its Action model as module:Class (default: its app's, its "
        "step()'s annotation, else the one its package's models declare).",
    )
    observation: str | None = Field(
        None,
        description="With --env: its Observation model as module:Class (default: its app's, "
        "its step()'s annotation, else the one its package's models declare).",
    )
    timeout: float = Field(
        30.0,
        gt=0,
        le=3600,
        description="Seconds to wait for an OpenEnv server's answer (keep it under the "
        "server's --call-timeout, so the error names the OpenEnv server).",
    )
    startup_timeout: float = Field(
        STARTUP_TIMEOUT,
        gt=0,
        le=3600,
        description="With --url: seconds for everything read from the OpenEnv server at "
        "start-up (/schema, /metadata, its tools), together: a server that answers slowly, "
        "or drips its answer, fails the start naming it.",
    )
    max_reply_bytes: int = Field(
        MAX_REPLY_BYTES,
        ge=64 * 1024,
        description="With --url: the largest answer taken from the OpenEnv server, in bytes "
        "(refused from its length, unread): its call fails naming the server and the limit, "
        "and its session is closed.",
    )
    max_reply_values: int = Field(
        MAX_REPLY_VALUES,
        ge=1024,
        description="With --url: the most JSON values one answer may hold (a string counts "
        "its two quotes besides), counted before it is parsed: parsed, each takes memory, "
        "and parsing holds up other episodes. A 1280x720 screenshot as nested lists is "
        "about 3.7 million.",
    )
    max_observation_values: int = Field(
        MAX_OBSERVATION_VALUES,
        ge=1024,
        description="With --url: of an answer's JSON values, the most that go on to MCP "
        "clients as they came: all but its pixel lists (those become compact arrays). Each "
        "costs the server memory and time on its way to the client.",
    )
    max_frame_pixels: int = Field(
        MAX_FRAME_PIXELS,
        ge=1,
        description="The largest picture taken from an observation, in pixels (width x "
        "height; 4096x4096 by default), measured before it is decoded (an image by its "
        "header, a pixel list by its shape).",
    )

    @field_validator("kwargs", mode="before")
    @classmethod
    def _read_kwargs(cls, value: Any) -> Any:
        if isinstance(value, str):
            return parse_pairs(value, "kwargs", "env_id=GuessTheNumber-v0,num_players=1", _json)
        return value

    @model_validator(mode="after")
    def _one_source(self) -> OpenEnvConfig:
        if (self.url is None) == (self.env is None):
            raise ValueError(
                "give exactly one of --url URL (a running OpenEnv server) or --env "
                "module:Class (an OpenEnv Environment subclass, a factory returning one, "
                "or an app create_app made)"
            )
        if self.url is not None and (self.action or self.observation or self.kwargs):
            raise ValueError(
                "--kwargs, --action and --observation go with --env, not --url (a running "
                "server was made with its own arguments; reset's options reach its reset)"
            )
        if self.url is not None:
            self.url = normalize_url(self.url)
        return self


def _json(raw: str) -> Any:
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw.strip("\"'") if raw[:1] in "\"'" else raw


#: What each source declares, read once per process (the prototype reads it first).
_described: dict[tuple[Any, ...], tuple[Described, Loaded | None]] = {}
_lock = threading.Lock()


def _limits(config: OpenEnvConfig) -> Limits:
    return Limits(
        reply_bytes=config.max_reply_bytes,
        reply_values=config.max_reply_values,
        observation_values=config.max_observation_values,
        frame_pixels=config.max_frame_pixels,
        startup_timeout=config.startup_timeout,
    )


def _describe(config: OpenEnvConfig) -> tuple[Described, Loaded | None]:
    key = (
        config.url,
        config.env,
        config.action,
        config.observation,
        json.dumps(config.kwargs, sort_keys=True, default=repr),
    )
    with _lock:
        found = _described.get(key)
    if found is None:
        if config.url is not None:
            found = (describe_remote(config.url, config.timeout, _limits(config)), None)
        else:
            assert config.env is not None
            loaded = load_local(config.env, config.action, config.observation, config.kwargs)
            found = (describe_local(loaded), loaded)
        with _lock:
            _described[key] = found
    return found


#: Each source's tasks (``None``: it publishes none), read once per process.
_task_sets: dict[tuple[Any, ...], OpenEnvTasks | None] = {}


def _tasks(config: OpenEnvConfig, loaded: Loaded | None) -> OpenEnvTasks | None:
    """The source's task set (:mod:`._tasks`), read at its first use and kept."""
    key = (config.url, config.env, json.dumps(config.kwargs, sort_keys=True, default=repr))
    with _lock:
        if key in _task_sets:
            return _task_sets[key]
    found: OpenEnvTasks | None
    try:
        if config.url is not None:
            found = RemoteTasks.read(config.url, config.timeout, _limits(config))
        else:
            assert loaded is not None
            found = LocalTasks.read(loaded)
    except Exception as exc:  # tasks are optional: a broken Task API serves without them
        where = config.url or config.env
        log.warning(
            "%s: its Task API could not be read, so it is served without tasks: %s", where, exc
        )
        found = None
    with _lock:
        _task_sets[key] = found
    return found


class RubricBreakdown(Reward):
    """An OpenEnv rubric's scores as the reward breakdown: the step's reward is the
    environment's own (its rubric computed it); ``rubric`` and ``rubric.NAME`` are
    the last scores of the rubric and each named part, where the environment has
    one (in process: OpenEnv's wire drops them)."""

    name = "rubric"

    def score(self, step: Step) -> float:
        return step.reward

    def evaluate(self, step: Step, breakdown: dict[str, float]) -> float:
        if "rubric_score" in step.info:
            breakdown["rubric"] = float(step.info["rubric_score"])
            for part, value in (step.info.get("rubric") or {}).items():
                breakdown[f"rubric.{part}"] = float(value)
        return step.reward


#: Reset's own arguments, never options: the seed is reset's ``seed``, the episode the server's.
_OWN = ("seed", "episode_id")


def _no_own(value: dict[str, Any]) -> dict[str, Any]:
    if "seed" in value:
        raise ValueError("seed goes as reset's own seed argument, not inside kwargs.")
    if "episode_id" in value:
        raise ValueError("episode_id is not passed on: this server names its episodes.")
    return value


#: Keyword arguments passed on as they are, where a server publishes no reset schema.
_PASSED = (
    dict[str, Any],
    Field(
        None,
        description="Keyword arguments for the OpenEnv server's reset, passed on as they "
        'are (as its own client\'s reset(**kwargs): e.g. {"dataset_name": "mini_sudoku", '
        '"size": 10}). The server publishes no reset schema: it passes its environment '
        "those its reset takes and drops the others; seed is reset's own argument.",
    ),
)


def _checked(schema: dict[str, Any]) -> Any:
    """A validator of one value against a JSON schema (a published reset argument's)."""
    import jsonschema

    validator = jsonschema.validators.validator_for(schema)(schema)

    def check(value: Any) -> Any:
        if value is not None:
            error = jsonschema.exceptions.best_match(validator.iter_errors(value))
            if error is not None:
                raise ValueError(error.message)
        return value

    return check


def _options_model(loaded: Loaded | None, described: Described) -> type[BaseModel] | None:
    """The per-episode options: the reset's keyword arguments beyond ``seed`` and
    ``episode_id``. In process, its ``reset``'s parameters, typed by their annotations;
    over --url, those its ``/schema`` publishes (typed by it), else ``kwargs``: any,
    passed on as they are."""
    if loaded is None:
        return _remote_options(described)
    reset = loaded.env_cls.reset
    try:
        hints = typing.get_type_hints(reset)
    except Exception:  # unresolvable annotations: take any value
        hints = {}
    fields: dict[str, Any] = {}
    for name, parameter in inspect.signature(reset).parameters.items():
        if name in ("self", *_OWN, *TASK_OPTIONS) or parameter.kind not in (
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            inspect.Parameter.KEYWORD_ONLY,
        ):
            continue
        default = None if parameter.default is inspect.Parameter.empty else parameter.default
        fields[name] = (hints.get(name, Any), default)
    if not fields:
        return None
    return create_model(
        f"{loaded.env_cls.__name__}Options",
        __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=True),
        **fields,
    )


def _remote_options(described: Described) -> type[BaseModel]:
    schema = inline_refs(described.reset_schema) if described.reset_schema else None
    fields: dict[str, Any] = {}
    passed = schema is None or schema.get("additionalProperties") is not False
    for name, prop in ((schema or {}).get("properties") or {}).items():
        if name in (*_OWN, *TASK_OPTIONS):  # a task's own: see _with_task_options
            continue
        if (
            name == "kwargs"
            or not name.isidentifier()
            or name.startswith("model_")
            or hasattr(BaseModel, name)
        ):
            passed = True  # a name no option can have here: it goes inside kwargs
            continue
        fields[name] = (
            Annotated[Any, WithJsonSchema(prop), AfterValidator(_checked(prop))],
            Field(None, description=prop.get("description")),
        )
    if passed and "kwargs" not in fields:
        fields["kwargs"] = (
            Annotated[_PASSED[0] | None, AfterValidator(lambda v: v and _no_own(v))],
            _PASSED[1],
        )
    return create_model("OpenEnvResetOptions", __config__=ConfigDict(extra="forbid"), **fields)


def _with_task_options(options: type[BaseModel] | None, name: str) -> type[BaseModel]:
    """The options with the two that start a remote task (:data:`._tasks.OPTIONS`): our
    reset names a task by ``split``/``index``/``task``, so the remote's own ``split`` and
    ``index`` go by other names and are passed on as those."""
    fields: dict[str, Any] = {
        "remote_split": (
            str | None,
            Field(None, description="The OpenEnv environment's task split (its reset's split)."),
        ),
        "remote_index": (
            int | None,
            Field(None, ge=0, description="The task's index in remote_split (its reset's index)."),
        ),
    }
    return create_model(
        name,
        __base__=options,
        __config__=None if options is not None else ConfigDict(extra="forbid"),
        **fields,
    )


class OpenEnvEnv(Environment[OpenEnvConfig]):
    """An OpenEnv environment (remote or in this process) behind the Environment contract."""

    name: ClassVar[str] = "openenv"
    description: ClassVar[str] = (
        "Any OpenEnv environment: a running OpenEnv server (--url URL) or an OpenEnv "
        "Environment class, factory or app (--env module:name), its Action's fields as the "
        "step action."
    )
    Config: ClassVar[type[BaseModel]] = OpenEnvConfig
    # A running server is on the network; a rubric's scores are the reward breakdown.
    serving = Serving(offline=False, rewards=(RubricBreakdown(),))
    narration: ClassVar[type[Any] | None] = OpenEnvNarration

    def __init__(self, config: OpenEnvConfig) -> None:
        super().__init__(config)
        self.described, loaded = _describe(config)
        described = self.described
        self._session: RemoteSession | LocalSession = (
            LocalSession(loaded, config.max_frame_pixels)
            if loaded is not None
            else RemoteSession(described.origin, config.timeout, _limits(config))
        )
        self.action_space: Any
        if described.tools is not None:
            self.action_space = ToolCalls(described.tools)
        else:
            self.action_space = JsonSpace(
                "The Action's fields, as one object.",
                inline_refs(action_fields_schema(described.action_schema)),
            )
        self.observation_space = JsonSpace(
            "The Observation's fields (pixels as raw arrays).",
            inline_refs(observation_fields_schema(described.observation_schema)),
        )
        self.Options = _options_model(loaded, described)
        self._tasks = _tasks(config, loaded)
        if self._tasks is not None:
            self.Options = _with_task_options(self.Options, "OpenEnvTaskOptions")
        properties = described.observation_schema.get("properties") or {}
        # An MCP environment's tools may answer with image content.
        framed = described.tools is not None or any(
            any(h in k.lower() for h in IMAGE_HINTS) for k in properties
        )
        self.render_mode = "rgb_array" if framed else None
        self._last: Observed | None = None
        #: The observation before the last one in this episode (``None`` after a reset):
        #: the narration tells what is new.
        self._previous: dict[str, Any] | None = None
        #: What became of the last reset's seed, in words (see :meth:`_seed_words`).
        self.seed_words = ""
        #: Where resets without a seed draw theirs (see :meth:`reset`).
        self._seeds: np.random.Generator | None = None
        self._frame: np.ndarray | None = None

    # -- the core contract ---------------------------------------------------------------

    def parse_action(self, action: Any) -> dict[str, Any]:
        """The action as OpenEnv's wire takes it, checked against the Action's schema.

        A bare value is taken for an Action with one field (``"hi"`` for
        ``{"message": "hi"}``); an MCP environment takes ``{"tool", "arguments"}``.
        """
        space = self.action_space
        if isinstance(space, JsonSpace) and not isinstance(action, dict):
            fields = [k for k in (space.schema or {}).get("properties") or {} if k != "metadata"]
            if len(fields) != 1:
                raise InvalidAction(
                    f"expected the Action's fields as an object ({', '.join(fields)}), "
                    f"got {type(action).__name__} {action!r:.60}"
                )
            action = {fields[0]: action}
        checked = decode(space, action, where="action: ")
        if isinstance(space, ToolCalls):
            return {
                "type": "call_tool",
                "tool_name": checked["tool"],
                "arguments": dict(checked.get("arguments") or {}),
            }
        return dict(checked)

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset: ``seed`` and ``options`` become the reset's keyword arguments (OpenEnv
        passes an environment only those its ``reset`` takes)."""
        kwargs = dict(options or {})
        if self.config.url is not None:  # passed on as they are
            kwargs.update(kwargs.pop("kwargs", None) or {})
        for ours, theirs in (("remote_split", "split"), ("remote_index", "index")):
            value = kwargs.pop(ours, None)
            if value is not None:
                kwargs[theirs] = value
        self.seed_words = self._seed_words(seed)
        # Gymnasium's meaning of a reset without a seed is that the episode's stream goes
        # on. An OpenEnv env takes a seed per reset or draws afresh, so the stream is
        # this env's: a seeded reset seeds it, and later resets draw their seed from it.
        if seed is not None:
            self._seeds = np.random.default_rng(seed)
        elif self._seeds is not None:
            seed = int(self._seeds.integers(2**63))
        if seed is not None:
            kwargs["seed"] = seed
        observed = self._session.reset(kwargs)
        self._last = None
        return observed.observation, self._info(observed)

    def _seed_words(self, seed: int | None) -> str:
        """What a model is told of the seed it passed, where it is not known to be used."""
        taken = self.described.takes_seed
        if seed is None or taken:
            return ""
        if taken is False:
            return (
                f"Seed {seed} was not used: this environment's reset takes no seed (OpenEnv "
                "drops it), so a seed does not replay its episodes"
            )
        why = (
            "its reset does not name a seed"
            if self.config.env is not None
            else "its server does not publish what its reset takes"
        )
        return f"Seed {seed} was passed on; this environment may ignore seeds ({why})"

    def step(self, action: Any) -> StepResult:
        observed = self._session.step(action)
        truncated = observed.truncated
        return StepResult(
            observation=observed.observation,
            reward=observed.reward,
            terminated=observed.done and not truncated,
            truncated=truncated,
            info=self._info(observed),
        )

    def _info(self, observed: Observed) -> dict[str, Any]:
        self._previous = self._last.observation if self._last is not None else None
        self._last, self._frame = observed, None
        info: dict[str, Any] = {"done": observed.done}
        if observed.done:  # what a task's success is judged by (._tasks)
            info[FINAL_REWARD] = observed.reward
        if observed.metadata:
            info["metadata"] = observed.metadata
        if observed.rubric:
            scores = dict(observed.rubric)
            info["rubric_score"] = scores.pop("", observed.reward)
            info["rubric"] = scores
        return info

    def task_set(self) -> OpenEnvTasks | None:
        """The OpenEnv environment's own tasks (its Task API), passed through: a task is
        started by its reset's ``split`` and ``index``; it succeeds where the remote ends
        the episode with a reward above 0."""
        return self._tasks

    def state(self) -> dict[str, Any]:
        """The OpenEnv State of this episode's session (``episode_id``, ``step_count``...)."""
        return {"openenv_state": self._session.state()}

    def render(self) -> np.ndarray | None:
        """The first image-like field of the last observation, as an RGB frame."""
        if self._last is None or self._last.frame is None:
            return None
        if self._frame is None:
            self._frame = to_rgb(self._last.frame, self.config.max_frame_pixels)
        return self._frame

    def close(self) -> None:
        self._session.close()


if TYPE_CHECKING:  # mypy checks that the env has what its narration reads (OpenEnvView)
    from openenv_mcp_envs.openenv._words import OpenEnvView

    def _narrated(env: OpenEnvEnv) -> OpenEnvView:
        return env

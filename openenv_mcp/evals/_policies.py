"""The policies an eval plays with from Python: seeded random legal actions, and any
callable ``(observation, info) -> action``; and :func:`policy_from_spec`, which turns
``--policy SPEC`` into a policy.

Both play a run the same way (:func:`play_episode`): a fresh episode of the session,
``reset(options={"split", "index"})`` to start the task, steps until the episode
terminates or is truncated, and the env's judgement read from ``info["task"]``. A
policy that raises or chooses an action the server refuses, and a run past
``max_steps``, end the run as an error (counted apart from failures); the eval goes on.
"""

from __future__ import annotations

import copy
import hashlib
import importlib.util
import inspect
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from openenv_mcp.errors import ArgumentError, OpenEnvError, ServerDied
from openenv_mcp.evals._agents import agent_policy_from_spec
from openenv_mcp.evals._policy import EvalPolicy, TaskOutcome, TaskRun
from openenv_mcp.registry import is_reference, load_reference

if TYPE_CHECKING:
    from openenv_mcp.client import Session

__all__ = [
    "CallablePolicy",
    "RandomPolicy",
    "load_callable",
    "observation_digest",
    "play_episode",
    "policy_from_spec",
]

#: A policy's choice: ``(observation, info) -> action``, sync or async.
Choose = Callable[[Any, dict[str, Any]], Any]

#: The transcript of a random or callable run keeps this many steps (then says how many
#: more there were): enough to read how a run went, not a whole 10,000-step game.
TRANSCRIPT_STEPS = 20
_TEXT = 300


def observation_digest(observation: Any) -> str:
    """A stable hash of an observation (arrays by dtype, shape and bytes; the rest by its
    JSON), for the reproducibility probe."""
    digest = hashlib.sha256()

    def feed(value: Any) -> None:
        if isinstance(value, np.ndarray):
            digest.update(f"array:{value.dtype.str}:{value.shape}:".encode())
            digest.update(np.ascontiguousarray(value).tobytes())
        elif isinstance(value, dict):
            digest.update(b"{")
            for key in sorted(value, key=str):
                digest.update(json.dumps(str(key)).encode())
                feed(value[key])
            digest.update(b"}")
        elif isinstance(value, (list, tuple)):
            digest.update(b"[")
            for item in value:
                feed(item)
            digest.update(b"]")
        else:
            digest.update(json.dumps(value, default=repr, sort_keys=True).encode())

    feed(observation)
    return digest.hexdigest()[:32]


def _text(value: Any) -> str:
    if isinstance(value, np.ndarray):
        if value.size > 64:
            return f"array {value.dtype} {value.shape}"
        value = value.tolist()
    text = value if isinstance(value, str) else json.dumps(value, default=repr)
    return text if len(text) <= _TEXT else text[: _TEXT - 3] + "..."


async def play_episode(session: Session, run: TaskRun, choose: Choose) -> TaskOutcome:
    """Play ``run`` on a fresh episode of ``session``, asking ``choose`` for each action.

    ``choose`` gets the observation and the ``info`` the client hands out, plus
    ``info["eval"] = {"task_id", "sample", "seed"}`` (the run, so a stochastic policy
    can seed itself per run).

    Returns:
        The outcome: the env's judgement, return and steps, or ``error`` where the policy
        raised, the server refused, or ``run.max_steps`` passed.

    Raises:
        ServerDied: the server itself is gone (not a run's error: the eval stops, and the
            runs finished so far are kept for a resume).
    """
    episode = session.episode()
    outcome = TaskOutcome(success=None)
    messages = outcome.messages
    messages.append(
        {
            "role": "user",
            "content": f"task {run.task_id} (split {run.split}, index {run.index}), "
            f"sample {run.sample}",
        }
    )
    try:
        try:
            obs, info = await episode.reset(options={"split": run.split, "index": run.index})
        except ServerDied:
            raise
        except OpenEnvError as exc:
            outcome.error = f"reset refused: {exc}"
            return outcome
        outcome.first_observation = observation_digest(obs)
        messages.append({"role": "user", "content": f"observation: {_text(obs)}"})
        mark = {"task_id": run.task_id, "sample": run.sample, "seed": run.seed}
        while True:
            if run.max_steps and outcome.steps >= run.max_steps:
                outcome.error = f"still running after max_steps={run.max_steps} steps"
                break
            try:
                action = choose(obs, {**info, "eval": mark})
                if inspect.isawaitable(action):
                    action = await action
            except Exception as exc:
                outcome.error = f"the policy raised {type(exc).__name__}: {exc}"
                break
            try:
                obs, reward, terminated, truncated, info = await episode.step(action)
            except ServerDied:
                raise
            except OpenEnvError as exc:
                outcome.error = f"step {outcome.steps + 1} refused: {exc}"
                break
            outcome.steps += 1
            outcome.reward += float(reward)
            if outcome.steps <= TRANSCRIPT_STEPS:
                messages.append({"role": "assistant", "content": f"action: {_text(action)}"})
                messages.append(
                    {
                        "role": "user",
                        "content": f"observation: {_text(obs)}, reward {float(reward):g}",
                    }
                )
            if terminated or truncated:
                task = info.get("task") or {}
                outcome.success = bool(task.get("success"))
                outcome.scores = {str(k): float(v) for k, v in (task.get("scores") or {}).items()}
                break
        if outcome.steps > TRANSCRIPT_STEPS:
            messages.append(
                {"role": "user", "content": f"({outcome.steps - TRANSCRIPT_STEPS} more steps)"}
            )
        ending = (
            f"error: {outcome.error}"
            if outcome.error
            else f"{'success' if outcome.success else 'failure'} after {outcome.steps} steps, "
            f"return {outcome.reward:g}"
        )
        messages.append({"role": "user", "content": ending})
        return outcome
    finally:
        await episode.close()


class RandomPolicy:
    """Seeded random legal actions: the action space sampled with the run's seed, the
    action mask respected where the server sends one (``info["action_mask"]``)."""

    name = "random"

    async def play(self, session: Session, run: TaskRun) -> TaskOutcome:
        """Play ``run`` with random legal actions (see :func:`play_episode`)."""
        space = copy.deepcopy(session.server_spec.action_space)  # runs in flight apart
        space.seed(run.seed)

        def choose(observation: Any, info: dict[str, Any]) -> Any:
            mask = info.get("action_mask")
            if mask is not None:
                return space.sample(mask=np.asarray(mask, dtype=np.int8))
            return space.sample()

        return await play_episode(session, run, choose)


class CallablePolicy:
    """A Python callable ``(observation, info) -> action`` (sync or async) as a policy.

    Args:
        choose: the callable.
        name: what the report names it (the spec it was loaded from).
    """

    def __init__(self, choose: Choose, name: str) -> None:
        self.choose = choose
        self.name = name

    async def play(self, session: Session, run: TaskRun) -> TaskOutcome:
        """Play ``run`` with the callable (see :func:`play_episode`)."""
        return await play_episode(session, run, self.choose)


def load_callable(spec: str) -> Choose:
    """The callable ``FILE.py:NAME`` (a file loaded by its path) or ``module:NAME`` names.

    Raises:
        ArgumentError: the file or module is missing, fails to import, has no ``NAME``,
            or ``NAME`` is not callable.
    """
    where, _, name = spec.rpartition(":")
    if where.endswith(".py"):
        path = Path(where).expanduser()
        if not path.is_file():
            raise ArgumentError(f"--policy {spec!r}: there is no file {path}")
        if not name.isidentifier():
            raise ArgumentError(f"--policy {spec!r}: after the file comes a name, got {name!r}")
        digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
        module_name = f"openenv_mcp_eval_policy_{digest}"
        loader_spec = importlib.util.spec_from_file_location(module_name, path)
        if loader_spec is None or loader_spec.loader is None:
            raise ArgumentError(f"--policy {spec!r}: {path} cannot be loaded as Python")
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[module_name] = module
        try:
            loader_spec.loader.exec_module(module)
        except Exception as exc:
            sys.modules.pop(module_name, None)
            raise ArgumentError(
                f"--policy {spec!r}: importing {path} raised {type(exc).__name__}: {exc}"
            ) from None
        if not hasattr(module, name):
            public = sorted(n for n in vars(module) if not n.startswith("_"))
            raise ArgumentError(
                f"--policy {spec!r}: {path} has no {name!r} "
                f"(it has: {', '.join(public) or 'nothing'})"
            )
        fn = getattr(module, name)
    else:
        fn = load_reference(spec, "--policy")
    if not callable(fn):
        raise ArgumentError(f"--policy {spec!r} is a {type(fn).__name__}, not a function")
    return fn  # type: ignore[no-any-return]


def policy_from_spec(spec: str | EvalPolicy, **agent: Any) -> EvalPolicy:
    """The policy ``--policy SPEC`` (and the endpoint's flags) name.

    Args:
        spec: ``"random"``; ``FILE.py:NAME`` or ``module:NAME`` (a callable
            ``(observation, info) -> action``); an agent harness command with
            ``{mcp_config}``. A policy object is returned as it is.
        agent: what an agent policy takes
            (:func:`~openenv_mcp.evals._agents.agent_policy_from_spec`): ``openai_url``,
            ``model`` and ``api_key_env`` for a model behind an OpenAI-compatible
            endpoint; ``env``, ``env_args``, ``out`` and ``timeout`` for a harness.

    Raises:
        ArgumentError: a spec no kind takes, naming the kinds there are.
    """
    if not isinstance(spec, str):
        return spec
    played = agent_policy_from_spec(spec, **agent)
    if played is not None:
        return played
    if spec == "random":
        return RandomPolicy()
    one_word = not any(c.isspace() for c in spec)
    if one_word and (is_reference(spec) or spec.rpartition(":")[0].endswith(".py")):
        return CallablePolicy(load_callable(spec), spec)
    raise ArgumentError(
        f"--policy takes random, FILE.py:NAME or module:NAME (a function (observation, info) "
        f"-> action), or an agent harness command; got {spec!r}"
    )

"""An openenv-mcp server as a TRL ``GRPOTrainer(environment_factory=...)`` environment.

TRL trains a language model on multi-turn environments through a class it
builds instances of itself. Its contract (``trl.GRPOTrainer``'s
``environment_factory`` documentation, TRL 1.x):

* a constructor with no arguments (TRL makes one instance per rollout and
  reuses them);
* ``reset(**kwargs)``: called with the dataset row before each rollout; returns
  a string appended to the prompt's last message as it is (here it starts a new
  paragraph), or ``None``;
* every other public method is a tool the model may call: TRL lists them with
  ``inspect.getmembers(type(env), inspect.isfunction)`` and describes each to
  the model with ``transformers.utils.get_json_schema`` (name, docstring, type
  hints, an ``Args:`` section per argument). A tool returns a string, or a list
  of content parts such as ``{"type": "image", "image": PIL.Image}`` and
  ``{"type": "text", "text": ...}`` for vision models;
* ``get_reward()`` (optional): the rollout's reward, read once at its end.

:func:`environment_factory` builds that class for any openenv-mcp server::

    from trl import GRPOConfig, GRPOTrainer
    from trl_environment import environment_factory

    Blackjack = environment_factory("openenv-mcp serve gymnasium --id Blackjack-v1 --no-render")
    trainer = GRPOTrainer(model=..., args=GRPOConfig(...), environment_factory=Blackjack)

Its tools are the server's discrete actions, one method each (``stick()`` and
``hit()`` for Blackjack, ``fire()``, ``left()``... for Atari), or a single
``step(action)`` for other action spaces; each answers with the observation in
words and, where the server has frames (Atari), the screen as an image part.
Every instance is one episode on one shared MCP connection to the server.
"""

from __future__ import annotations

import atexit
import json
import keyword
import re
from typing import Any, ClassVar

import numpy as np

from openenv_mcp.client import MCPEnvClient, SyncEnvClient

__all__ = ["MCPEnvironment", "environment_factory"]

_JSON_TYPES: dict[str, type] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "object": dict,
}


class MCPEnvironment:
    """Base of the classes :func:`environment_factory` makes (one episode each).

    Only ``reset``, ``get_reward`` and the generated action methods are public:
    TRL shows every public method to the model as a tool.
    """

    _root: ClassVar[SyncEnvClient]
    _images: ClassVar[bool]

    def __init__(self) -> None:
        self._env = self._root.spawn()
        self._return = 0.0
        self._done = False

    @classmethod
    def _close_connection(cls) -> None:
        """Close the shared connection (and a stdio server); instances stop working."""
        cls._root.close()

    def reset(self, **kwargs: Any) -> str:
        """Start a new episode; ``seed`` and ``options`` are taken from the dataset row.

        TRL appends the text returned to the prompt's last message as it is, so it
        starts a new paragraph where that message has words.
        """
        seed = kwargs.get("seed")
        options = kwargs.get("options")
        obs, info = self._env.reset(
            seed=int(seed) if isinstance(seed, (int, np.integer)) else None,
            options=options if isinstance(options, dict) else None,
        )
        self._return, self._done = 0.0, False
        text = _sentences("A new episode has started.", _words(obs, info))
        return _separator(kwargs.get("prompt")) + text

    def get_reward(self) -> float:
        """The episode's return so far (TRL reads it when the rollout ends)."""
        return self._return

    def _act(self, action: Any) -> str | list[dict[str, Any]]:
        if self._done:
            raise ValueError(
                f"the episode is over (return {self._return:g}); no more actions are possible"
            )
        obs, reward, terminated, truncated, info = self._env.step(action)
        self._return += reward
        self._done = terminated or truncated
        text = _sentences(
            _words(obs, info),
            f"Reward {reward:g}, total {self._return:g}.",
            "The episode is over." if self._done else "",
        )
        if not self._images:
            return text
        frame = obs if _is_frame(obs) else self._env.render()
        if frame is None:
            return text
        from PIL import Image

        return [
            {"type": "image", "image": Image.fromarray(np.asarray(frame, dtype=np.uint8))},
            {"type": "text", "text": text},
        ]


def _sentences(*parts: str) -> str:
    return " ".join(part for part in parts if part)


def _separator(prompt: Any) -> str:
    """What goes between a dataset row's prompt and the text ``reset`` adds to it."""
    last = prompt[-1] if isinstance(prompt, list) and prompt else prompt
    content = last.get("content") if isinstance(last, dict) else last
    # A list of parts gets the text as a part of its own; an empty prompt needs nothing.
    if not isinstance(content, str) or not content or content[-1].isspace():
        return ""
    return "\n\n"


def _is_frame(obs: Any) -> bool:
    return isinstance(obs, np.ndarray) and obs.ndim == 3 and obs.shape[-1] == 3


def _words(obs: Any, info: dict[str, Any]) -> str:
    """The observation as a model reads it: the server's own words where it has them."""
    if isinstance(info.get("text"), str):
        return f"{info['text'][0].upper()}{info['text'][1:]}."
    if isinstance(obs, str):
        return obs
    if isinstance(obs, np.ndarray):
        return "" if obs.size > 64 else f"Observation: {obs.tolist()}."
    return f"Observation: {json.dumps(obs)}."


def _method_name(name: str, taken: set[str]) -> str:
    base = name if name.isidentifier() and not keyword.iskeyword(name) else f"act_{name}"
    while base in taken:
        base = f"act_{base}"
    taken.add(base)
    return base


def _action_method(name: str, action_id: int, doc: str, images: bool) -> Any:
    def act(self: MCPEnvironment) -> Any:
        return self._act(action_id)

    act.__name__ = act.__qualname__ = name
    act.__doc__ = doc
    act.__annotations__ = {"return": list[dict[str, Any]] if images else str}
    return act


def _step_method(schema: dict[str, Any], images: bool) -> Any:
    kind = schema.get("type")
    annotation: Any = _JSON_TYPES.get(kind, str) if isinstance(kind, str) else str
    if kind == "array":
        item = (schema.get("items") or {}).get("type", "number")
        annotation = list[_JSON_TYPES.get(item, float)]

    def step(self: MCPEnvironment, action: Any) -> Any:
        return self._act(action)

    described = schema.get("description") or "The action, as the environment's schema says."
    step.__doc__ = (
        "Take one action in the environment and see what happens.\n\n"
        f"Args:\n    action: {' '.join(str(described).split())}"
    )
    step.__annotations__ = {"action": annotation, "return": list[dict[str, Any]] if images else str}
    return step


def environment_factory(
    target: Any, *, images: bool | None = None, name: str | None = None
) -> type[MCPEnvironment]:
    """A TRL environment class for the openenv-mcp server at ``target``.

    Args:
        target: a command (``"openenv-mcp serve atari --game pong"``), an
            ``http(s)://`` URL, or a FastMCP server object; one connection is
            opened here and shared by all instances (closed at exit).
        images: return the frame as an image part with every action (for
            vision-language models); default: where the server has frames.
        name: the class name (TRL logs the reward under it).

    Returns:
        A class with a no-argument constructor, ``reset(**kwargs) -> str``, one
        documented method per action (or ``step(action)``), and ``get_reward()``.
    """
    root = MCPEnvClient(target).sync()
    atexit.register(root.close)
    spec = root.server_spec
    with_images = spec.has_frame if images is None else images
    namespace: dict[str, Any] = {
        "_root": root,
        "_images": with_images,
        "__doc__": f"{spec.description} (one episode per instance, over MCP)",
    }
    returns = " Returns the new observation" + (" and the screen." if with_images else ".")
    if spec.action_set is not None:
        taken = {"reset", "get_reward"}
        for action in spec.action_set:
            method = _method_name(spec.action_set.tool_name(action), taken)
            meaning = action.meaning or f"action {action.name}"
            doc = f"{meaning[0].upper()}{meaning[1:]} ({action.name}).{returns}"
            namespace[method] = _action_method(method, action.id, doc, with_images)
    else:
        namespace["step"] = _step_method(spec.action_schema, with_images)
    label = f"{spec.name} {spec.config.get('id') or spec.config.get('game') or ''}"
    class_name = name or "".join(p.title() for p in re.split(r"[^A-Za-z0-9]+", label) if p)
    return type(class_name, (MCPEnvironment,), namespace)

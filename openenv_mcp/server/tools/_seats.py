"""The tools of a server of seats (``serve ENV --seats``): ``reset`` hands out seats,
``join`` takes an open one, and ``step``, ``state`` and ``legal_actions`` take a seat's
handle as ``seat`` (its episode's handle: ``episode_id`` means the same)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, create_model

from openenv_mcp.errors import ArgumentError
from openenv_mcp.server.episodes._handlers import Handlers
from openenv_mcp.server.tools._args import _Args
from openenv_mcp.server.tools._tools import ACTS, Handler, ModelTool
from openenv_mcp.spec import EnvSpec

__all__ = ["seat_output_schema", "seat_tools"]

#: What a seat's ``info`` holds beyond its game's own fields.
SEAT_INFO: dict[str, Any] = {
    "seat": {"type": "string", "description": "Your seat."},
    "seats": {"type": "array", "items": {"type": "string"}, "description": "Every seat."},
    "to_move": {
        "type": "array",
        "items": {"type": "string"},
        "description": "The seats to move now (several at a simultaneous move; none at the end).",
    },
    "your_turn": {"type": "boolean", "description": "Whether you are to move."},
    "moves": {
        "type": "array",
        "items": {"type": "object"},
        "description": "The moves since your last answer, as you may see them (agent, "
        "action, name; another's private move: action null, name '(hidden)').",
    },
    "seat_rewards": {
        "type": "object",
        "additionalProperties": {"type": "number"},
        "description": "Every seat's reward of the moves played during this call.",
    },
    "terminations": {"type": "object", "additionalProperties": {"type": "boolean"}},
    "truncations": {"type": "object", "additionalProperties": {"type": "boolean"}},
    "text": {"type": "string", "description": "The game in words, as you may see it."},
    "action_mask": {"type": "array", "items": {"type": "integer"}},
    "legal_actions": {"type": "array", "items": {"type": "integer"}},
    "legal_action_names": {"type": "array", "items": {"type": "string"}},
}


def seat_output_schema(output: dict[str, Any]) -> dict[str, Any]:
    """The episode answers' schema for a seat: its ``info`` is the seat's (its game's own
    fields, free, and the seat's), and ``reset``'s and ``join``'s seat handles."""
    properties = dict(output["properties"])
    properties["info"] = {
        "type": "object",
        "properties": SEAT_INFO,
        "description": "Your seat's view: its game's own fields and the seat's.",
    }
    properties["table_id"] = {
        "type": "string",
        "description": "The game's handle (reset, join): another client joins with it.",
    }
    properties["seats"] = {
        "type": "object",
        "additionalProperties": {"type": "string"},
        "description": "The seats this call handed out: name -> handle (reset, join).",
    }
    properties["open_seats"] = {
        "type": "array",
        "items": {"type": "string"},
        "description": "Seats no client holds yet (reset, join).",
    }
    return {**output, "properties": properties}


SeatHandle = Annotated[
    str | None,
    Field(
        max_length=128,
        description="Your seat's handle (reset's seats, or join's): the moves and the view "
        "are that seat's. Optional where your last reset or join is meant.",
    ),
]
Wait = Annotated[
    bool | None,
    Field(
        description="After your move, wait for your next turn (or the game's end) and "
        "answer then, with the other players' moves (the default); false answers at once "
        "(a program driving every seat).",
    ),
]
Seats = Annotated[
    str | list[str] | None,
    Field(
        description="Which seats this reset takes: 'all' (one handle per seat, to hand "
        "each to its player), seat names, or one name. Default: the first seat; the "
        "others stay open for other clients to join.",
    ),
]
WaitTurn = Annotated[
    bool,
    Field(
        description="Wait (bounded) until it is your turn or the game is over, then look.",
    ),
]


class JoinArgs(_Args):
    table_id: Annotated[
        str | None,
        Field(
            max_length=128,
            description="The game to join (a reset's table_id). Omitted: the oldest game "
            "on this server with an open seat.",
        ),
    ] = None
    seat: Annotated[
        str | None,
        Field(
            max_length=200,
            description="Which open seat to take (by name). Omitted: the first open one.",
        ),
    ] = None


#: The fields each tool gains, by tool.
_GAINS: dict[str, dict[str, Any]] = {
    "reset": {"seats": (Seats, None)},
    "step": {"seat": (SeatHandle, None), "wait": (Wait, None)},
    "state": {"seat": (SeatHandle, None), "wait": (WaitTurn, False)},
    "legal_actions": {"seat": (SeatHandle, None)},
}


def _episode(args: Any) -> str | None:
    """The seat a call names: ``seat`` or ``episode_id`` (which must agree)."""
    seat, episode_id = getattr(args, "seat", None), getattr(args, "episode_id", None)
    if seat is not None and episode_id is not None and seat != episode_id:
        raise ArgumentError(
            "pass your seat's handle as seat or as episode_id, not two different handles"
        )
    return seat if seat is not None else episode_id


def _seated_handler(name: str, handlers: Handlers, old: Handler) -> Handler:
    if name == "reset":
        return old  # the handler reads seats itself
    if name == "step":

        async def step(args: Any) -> Any:
            return await handlers.step(
                _episode(args),
                args.action,
                getattr(args, "frames", None),
                args.repeat,
                tuple(getattr(args, "extras", None) or ()),
                wait=args.wait,
            )

        return step

    async def look(args: Any) -> Any:
        episode_id = _episode(args)
        if getattr(args, "wait", False):  # state(wait=true): the seat's turn first
            await handlers.wait_turn(episode_id)
        return await old(args.model_copy(update={"episode_id": episode_id}))

    return look


def seat_tools(tools: list[ModelTool], spec: EnvSpec, handlers: Handlers) -> list[ModelTool]:
    """``tools`` as a server of seats lists them: the episode tools taking seats, and
    ``join``."""
    out: list[ModelTool] = []
    for tool in tools:
        gains = _GAINS.get(tool.name)
        if gains is None:
            out.append(tool)
            continue
        model = create_model(  # type: ignore[call-overload]
            f"Seat{tool.args_model.__name__}", __base__=tool.args_model, **gains
        )
        parameters = dict(tool.parameters)
        properties = dict(parameters["properties"])
        schema = model.model_json_schema()
        for field in gains:
            properties[field] = schema["properties"][field]
        parameters["properties"] = properties
        out.append(
            tool.model_copy(
                update={
                    "parameters": parameters,
                    "args_model": model,
                    "handler": _seated_handler(tool.name, handlers, tool.handler),
                }
            )
        )
    out.append(
        ModelTool.build(
            "join",
            f"Take an open seat of a game of {spec.title} another client started (reset's "
            "table_id; omitted, the oldest game with an open seat): your seat's handle and "
            "view. Then play with step(seat=...), which waits for your turn.",
            JoinArgs,
            handlers.join,
            None,
            hints=ACTS,
        )
    )
    return out

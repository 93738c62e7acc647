"""The one error hierarchy and its wire form, both ways."""

from __future__ import annotations

from openenv_mcp.errors import (
    EpisodeLost,
    InvalidAction,
    OpenEnvError,
    UnknownEpisode,
    error_from_wire,
)
from openenv_mcp.server.tools._results import MAX_ERROR_TEXT, error_result, error_text


def test_the_class_travels_in_meta_so_a_cut_message_keeps_it() -> None:
    huge = InvalidAction("x" * (3 * MAX_ERROR_TEXT))
    reply = error_result(huge).wire()
    assert reply["isError"] and reply["_meta"] == {"openenv_mcp/error": "InvalidAction"}
    text = reply["content"][0]["text"]
    back = error_from_wire(text, reply["_meta"]["openenv_mcp/error"])
    assert type(back) is InvalidAction and "characters cut" in str(back)
    assert not str(back).startswith("InvalidAction:")


def test_without_a_code_the_text_names_the_class() -> None:
    assert type(error_from_wire(error_text(EpisodeLost("gone")))) is EpisodeLost
    assert isinstance(error_from_wire("EpisodeLost: gone"), UnknownEpisode)
    plain = error_from_wire("Nonsense: what")
    assert type(plain) is OpenEnvError and str(plain) == "Nonsense: what"
    assert type(error_from_wire("odd text", "NoSuchError")) is OpenEnvError

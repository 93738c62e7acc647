"""``ServerSettings`` in groups: the flat names (Python keywords, attributes, ``serve``
flags, the JSON a Ray replica is handed) and the grouped values are one thing."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from openenv_mcp.cli import app
from openenv_mcp.server import ServerSettings, build_server, get_app
from openenv_mcp.server._settings import (
    GROUPS,
    SETTINGS_FLAGS,
    HttpLimits,
    Limits,
    Recording,
    flat_fields,
)


def test_flat_and_grouped_keywords_are_the_same_settings() -> None:
    flat = ServerSettings(max_episodes=4, http_keep_alive=2.0, record_errors="continue")
    grouped = ServerSettings(
        limits=Limits(max_episodes=4),
        http=HttpLimits(keep_alive=2.0),
        recording=Recording(record_errors="continue"),
    )
    assert flat == grouped
    assert flat.max_episodes == flat.limits.max_episodes == 4
    assert flat.http_keep_alive == flat.http.keep_alive == 2.0
    # both at once: the flat name adds to its group
    mixed = ServerSettings(limits=Limits(max_episodes=4), idle_timeout=5)
    assert (mixed.limits.max_episodes, mixed.limits.idle_timeout) == (4, 5)


def test_groups_are_frozen_values_with_their_own_checks() -> None:
    with pytest.raises(ValidationError):
        Limits(max_episodes=4).max_episodes = 5  # type: ignore[misc]
    with pytest.raises(ValidationError, match="max_episodes"):
        ServerSettings(max_episodes=0)
    with pytest.raises(ValidationError, match="max_episodez"):
        ServerSettings(max_episodez=3)
    with pytest.raises(ValidationError):
        Limits(keep_alive=1)  # another group's field


def test_the_json_form_is_flat_and_round_trips() -> None:
    """What ``serve --transport ray`` hands each replica: only what was set, flat."""
    settings = ServerSettings(max_episodes=4, workers=2, reward=["m:r"])
    sent = settings.model_dump(mode="json", exclude_unset=True)
    assert sent == {"max_episodes": 4, "workers": 2, "reward": ["m:r"]}
    assert ServerSettings.model_validate({**sent, "shard": "r1"}).shard == "r1"
    assert ServerSettings.model_validate(sent) == settings
    everything = ServerSettings().model_dump(mode="json")
    assert set(everything) == set(flat_fields()) == set(SETTINGS_FLAGS.model_fields)


def test_every_flat_name_belongs_to_one_group_and_reads_through() -> None:
    settings = ServerSettings()
    assert len(flat_fields()) == sum(len(g.model_fields) for g in GROUPS.values()) == 30
    for name, (field, panel) in flat_fields().items():
        assert getattr(settings, name) == field.get_default(call_default_factory=True)
        assert panel and field.description


def test_flat_flags_reach_the_groups_through_serve() -> None:
    """``serve`` parses the flat flags; a bad value names the flag's own name."""
    result = CliRunner().invoke(app, ["serve", "echo", "--http-keep-alive", "0"])
    assert result.exit_code == 2
    assert "server settings: option 'http_keep_alive'" in result.output


def test_a_built_server_reads_its_settings_by_group() -> None:
    server = build_server("echo", settings=ServerSettings(max_episodes=3, profile="agent"))
    settings = get_app(server).settings
    assert settings.limits.max_episodes == 3 and settings.tools.profile == "agent"
    assert get_app(server).spec_json()["settings"]["profile"] == "agent"  # flat on the wire

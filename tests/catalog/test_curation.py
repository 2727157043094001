"""Curation (catalog/curation.py) and its config tables (config.py ``[tools."s__t"]``)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import mcp.types as types
import pytest

from toolroute.catalog.curation import Curation, ServerCuration, ToolOverride, servers_line
from toolroute.config import load_config
from toolroute.errors import ConfigError


def _tool(name: str, description: str = "d") -> types.Tool:
    return types.Tool(name=name, description=description, input_schema={"type": "object"})


def test_a_listing_is_renamed_redescribed_reannotated_and_hidden() -> None:
    sc = ServerCuration(
        {
            "search": ToolOverride(
                name="find", description="Find code.", annotations={"readOnlyHint": True}
            ),
            "drop": ToolOverride(hidden=True),
        }
    )
    tools, renames = sc.apply([_tool("search"), _tool("drop"), _tool("keep")], "gh")
    assert [t.name for t in tools] == ["find", "keep"]
    assert tools[0].description == "Find code."
    assert tools[0].annotations is not None and tools[0].annotations.read_only_hint
    assert renames == {"find": "search"}


def test_a_rename_onto_a_listed_name_is_refused_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sc = ServerCuration({"a": ToolOverride(name="b")})
    with caplog.at_level(logging.WARNING):
        tools, renames = sc.apply([_tool("a"), _tool("b")], "srv")
    assert [t.name for t in tools] == ["a", "b"] and renames == {}
    assert "not renamed to 'b'" in caplog.text


def test_pins_are_named_as_exposed_and_hidden_tools_are_never_pinned() -> None:
    c = Curation.of(
        {
            ("gh", "search"): ToolOverride(name="find", pin=True),
            ("gh", "drop"): ToolOverride(hidden=True, pin=True),
            ("time", "now"): ToolOverride(pin=True),
        }
    )
    assert c.pinned("__") == ("gh__find", "time__now")


def test_find_tools_line_names_servers_then_counts_past_a_size() -> None:
    assert servers_line([("time", 2), ("memory", 9), ("down", 0)]) == (
        "Behind it: 2 servers, 11 tools: memory (9), time (2)."
    )
    many = [(f"s{i:02d}", i + 1) for i in range(20)]
    line = servers_line(many)
    assert line.startswith("Behind it: 20 servers, 210 tools: ") and line.endswith("and 8 more.")
    assert "s19 (20)" in line and "s00 (1)" not in line


def _config(tmp_path: Path, toml: str) -> Path:
    p = tmp_path / "servers.json"
    p.write_text(json.dumps({"mcpServers": {"gh": {"command": "x"}, "time": {"command": "y"}}}))
    (tmp_path / "toolroute.toml").write_text(toml)
    return p


def test_a_renamed_tool_keeps_its_price_gates_and_pins_under_its_new_name(
    tmp_path: Path,
) -> None:
    cfg = load_config(
        _config(
            tmp_path,
            '[toolroute]\npinned = ["gh__search"]\n'
            '[tools."gh__search"]\nname = "find"\nprice = 0.01\nmilestone = "m"\n'
            '[tools."time__now"]\npin = true\ndescription = "Now."\n',
        )
    )
    assert cfg.settings.pinned == ("gh__find", "time__now")
    assert cfg.tool_meta == {"gh__find": {"price": 0.01}, "time__now": {}}
    assert set(cfg.tool_preconditions) == {"gh__find"}
    assert cfg.curation.server("gh").overrides["search"].name == "find"
    assert cfg.curation.server("time").overrides["now"].description == "Now."


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('[tools."gh__a"]\nannotations = { readOnlyHint = "maybe" }\n', "annotations"),
        ('[tools."gh__a"]\nname = "has space"\n', "tools.gh__a.name"),
        ('[tools."nope__a"]\nhidden = true\n', "'nope__a' is not <server>__<tool>"),
    ],
)
def test_a_bad_curation_table_is_one_config_error_naming_it(
    tmp_path: Path, table: str, message: str
) -> None:
    with pytest.raises(ConfigError, match="toolroute.toml") as e:
        load_config(_config(tmp_path, table))
    assert message in str(e.value) and "\n" not in str(e.value)

"""A server's tools/list (downstream/listing.py) without a process: one listing of a server's
two processes (tests/downstream/test_era_processes.py lists real ones)."""

from __future__ import annotations

import mcp.types as types

from toolroute.downstream.listing import merged


def _tool(name: str, description: str = "d") -> types.Tool:
    return types.Tool(name=name, description=description, input_schema={"type": "object"})


def test_one_listing_of_two_processes_keeps_a_change_either_made() -> None:
    before = {t.name: t for t in [_tool("a"), _tool("b"), _tool("c")]}
    main = [_tool("a", "changed here"), _tool("b"), _tool("c")]
    companion = [_tool("a"), _tool("b", "changed there"), _tool("c"), _tool("d")]
    both = {t.name: t.description for t in merged(main, companion, before)}
    assert both == {"a": "changed here", "b": "changed there", "c": "d", "d": "d"}
    # the first listing (nothing before): the main session's own
    first = {t.name: t.description for t in merged(main, companion, {})}
    assert first["a"] == "changed here" and first["b"] == "d"

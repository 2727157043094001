"""The protocol-era rules of the downstream sessions (downstream/era.py) that need no process: a
list's lifetime from ``ttlMs``, what counts as a server asking by request and a refused
handshake (tests/downstream/test_era_processes.py runs them with real servers)."""

from __future__ import annotations

import mcp.types as types
from mcp.shared.exceptions import MCPError

from toolroute.downstream.era import (
    MIN_LIST_TTL_S,
    NO_BACK_CHANNEL,
    asked_by_request,
    handshake_refused,
    list_expiry_s,
)


def test_a_positive_ttl_is_the_lists_lifetime_floored_and_zero_or_absent_is_none() -> None:
    assert list_expiry_s(types.ListToolsResult(tools=[], ttl_ms=90_000)) == 90.0
    assert list_expiry_s(types.ListToolsResult(tools=[], ttl_ms=10)) == MIN_LIST_TTL_S
    assert list_expiry_s(types.ListToolsResult(tools=[], ttl_ms=0)) is None  # the SDK default
    assert list_expiry_s(types.ListToolsResult(tools=[])) is None  # not sent at all


def test_the_sdks_no_back_channel_answer_is_seen_in_a_result_or_an_error() -> None:
    said = f"Cannot send 'elicitation/create': this transport context {NO_BACK_CHANNEL}."
    caught = types.CallToolResult(content=[types.TextContent(type="text", text=f"error: {said}")])
    assert asked_by_request(caught)
    assert asked_by_request(said)
    plain = types.CallToolResult(content=[types.TextContent(type="text", text="sunny")])
    assert not asked_by_request(plain)
    assert not asked_by_request("Handler returned an invalid result")


def test_a_refused_handshake_is_found_inside_the_sdks_exception_groups() -> None:
    refused = MCPError(types.UNSUPPORTED_PROTOCOL_VERSION, "initialize is not accepted")
    other = MCPError(types.INTERNAL_ERROR, "boom")
    assert handshake_refused(ExceptionGroup("g", [ExceptionGroup("h", [refused])]))
    assert not handshake_refused(ExceptionGroup("g", [other]))
    assert not handshake_refused(RuntimeError("x"))

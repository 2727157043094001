"""A tools/list reply too deeply nested for the SDK's JSON parser, saved by leaving out the
tools that nest too deep, each by name.

The SDK parses a message in one go with a nesting limit of its parser's (a few hundred
levels), so one tool whose input schema nests 300 objects made its server's whole listing
"stdout that is not JSON-RPC". On that error only, the line is read again by the standard
library's parser (bounded by the interpreter's recursion limit: a deeper line is a
``RecursionError``, caught, and stays refused), and if it is a reply whose ``result.tools``
holds tools nested deeper than :data:`MAX_TOOL_DEPTH`, those are left out with a warning
naming them, and the rest is validated as the SDK would have.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import mcp.types as types

__all__ = ["MAX_TOOL_DEPTH", "depth", "without_deep_tools"]

log = logging.getLogger("toolroute.downstream")

MAX_TOOL_DEPTH = 128
"""JSON nesting a tool's definition may have (its input schema at most 64 objects deep: the
schema checks' own bound, gateway/calls/arguments.py's ``MAX_SCHEMA_DEPTH``, counts objects)."""


def depth(value: Any) -> int:
    """How deep ``value`` nests (a scalar: 0; ``{"a": 1}``: 1), without recursion."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        node, level = stack.pop()
        children = (
            node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        )
        if children is None:
            continue
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children)
    return deepest


def without_deep_tools(server: str, line: bytes) -> types.JSONRPCMessage | None:
    """The reply on ``line`` with its too-deep tools left out (logged by name); None when the
    line is not such a reply (it stays refused)."""
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):
        return None
    result = data.get("result") if isinstance(data, dict) else None
    if not isinstance(result, dict) or not isinstance(tools := result.get("tools"), list):
        return None
    kept = [t for t in tools if depth(t) <= MAX_TOOL_DEPTH]
    if len(kept) == len(tools):
        return None
    for t in tools:
        if depth(t) > MAX_TOOL_DEPTH:
            name = t.get("name") if isinstance(t, dict) else None
            log.warning(
                "[%s] tool %.100r left out of tools/list: it nests deeper than %d levels",
                server,
                name,
                MAX_TOOL_DEPTH,
            )
    data["result"] = {**result, "tools": kept}
    try:
        message: types.JSONRPCMessage = types.jsonrpc_message_adapter.validate_python(
            data, by_name=False
        )
    except (ValueError, RecursionError):
        return None
    return message

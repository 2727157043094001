"""The gateway's meta-tools as its clients see them in ``tools/list``: names, descriptions,
input schemas and ``find_tools``' output schema (:mod:`toolroute.gateway.shell.server`
answers them); and the checks of what a client sends ``find_tools`` and
``request_capability`` (``call_tool``'s arguments are a tool call's:
:mod:`toolroute.gateway.calls.arguments`)."""

from __future__ import annotations

import math
from typing import Any

import mcp.types as types

from toolroute.gateway.calls.arguments import shown

__all__ = [
    "CALL_TOOL",
    "FIND_TOOLS",
    "FOUND_SCHEMA",
    "MAX_QUERY_CHARS",
    "REQUEST_CAPABILITY",
    "SET_MILESTONE",
    "check_find_args",
    "coerce_k",
]

MAX_QUERY_CHARS = 10_000
"""Length of a find_tools query or subtask field."""

_READ_ONLY = types.ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
FOUND_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "candidates": {
            "type": "array",
            "description": "The tools found, best first (empty when none fits).",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "Pass this to call_tool."},
                    "server": {"type": "string"},
                    "tool": {"type": "string"},
                    "description": {"type": "string"},
                    "input_schema": {"type": "object"},
                    "score": {"type": "number"},
                },
                "required": ["name"],
            },
        },
        "no_tool_fits": {
            "type": "boolean",
            "description": "True when no connected tool serves the need: see hint and "
            "nearest_servers.",
        },
        "doubtful_fit": {
            "type": "boolean",
            "description": "True when the tools share the need's topic but may not do it: "
            "read a candidate's description before calling it.",
        },
        "hint": {"type": "string", "description": "What to do next."},
        "suggested_servers": {
            "type": "array",
            "description": "Servers of the operator's MCP registry that would serve the need "
            "(not connected: only the operator can add one).",
            "items": {"type": "object", "properties": {"name": {"type": "string"}}},
        },
        "request_server": {
            "type": "object",
            "description": "A request to pass on to the user: which server to add, and how.",
            "properties": {"message": {"type": "string"}},
        },
        "gated_out": {
            "type": "array",
            "description": "Tools that match but cannot be called yet, and why.",
            "items": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "reason": {"type": "string"}},
            },
        },
    },
    "required": ["candidates"],
}
"""find_tools' (and request_capability's) structured result."""

FIND_TOOLS = types.Tool(
    name="find_tools",
    description=(
        "Find the tools that can do what you need, among every connected MCP server. Describe "
        "the need in plain words; you get the best few tools with their input schemas. Then "
        "run one with call_tool."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What you need to get done."},
            "k": {
                "type": ["integer", "null"],
                "minimum": 1,
                "maximum": 50,
                "description": "How many tools to return (null: 5).",
            },
            "server": {
                "type": ["string", "null"],
                "description": "A server's name, to list its tools in order (its inventory) "
                "instead of searching; query may then be empty.",
            },
            "cursor": {
                "type": ["string", "null"],
                "description": "next_cursor of the previous inventory page.",
            },
        },
        "required": ["query"],
    },
    output_schema=FOUND_SCHEMA,
    annotations=_READ_ONLY,
)
CALL_TOOL = types.Tool(
    name="call_tool",
    description=(
        "Run a tool returned by find_tools: pass its `name` exactly and `arguments` matching "
        "its input_schema ({} when it takes none)."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The `name` field from find_tools."},
            "arguments": {"type": "object", "description": "Arguments for the tool."},
        },
        "required": ["name"],
    },
)


SET_MILESTONE = types.Tool(
    name="set_milestone",
    description=(
        "Record that the session reached a milestone (e.g. 'plan_confirmed'); tools that require "
        "it become available to find_tools."
    ),
    input_schema={
        "type": "object",
        "properties": {"name": {"type": "string", "description": "The milestone reached."}},
        "required": ["name"],
    },
)


REQUEST_CAPABILITY = types.Tool(
    name="request_capability",
    description=(
        "Say what capability the tools you were given lack (e.g. 'convert the PDF to text'); "
        "toolroute re-routes with that need and your original request and returns new tools."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "need": {"type": "string", "description": "The missing capability."},
            "k": {"type": ["integer", "null"], "minimum": 1, "maximum": 20},
        },
        "required": ["need"],
    },
    output_schema=FOUND_SCHEMA,
    annotations=_READ_ONLY,
)


# -- what a client sends them ------------------------------------------------------------------


def coerce_k(k: Any, default: int, most: int) -> tuple[int, str | None]:
    """``k`` as a model sends it, as an integer from 1 to ``most``. Models write numbers as
    they please: null (strict-mode clients make every field required) is the default, ``"3"``
    and ``3.0`` are 3, and a number outside the range is clamped to it. A boolean, a fraction
    or anything else is refused with the range."""
    if k is None:
        return default, None
    value: Any = k
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            value = None
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        return default, f"`k` must be an integer from 1 to {most}; got {shown(k)}"
    return min(max(value, 1), most), None


def check_find_args(args: dict[str, Any]) -> str | None:
    """find_tools: ``query`` a string, ``subtask`` an object of strings, ``k`` a number."""
    query = args.get("query")
    if query is not None and (not isinstance(query, str) or len(query) > MAX_QUERY_CHARS):
        return f"`query` must be a string of at most {MAX_QUERY_CHARS} characters"
    subtask = args.get("subtask")
    if subtask is not None:
        if not isinstance(subtask, dict):
            return "`subtask` must be an object {domain, operation, target} of strings"
        for key in ("domain", "operation", "target"):
            value = subtask.get(key)
            if value is not None and (not isinstance(value, str) or len(value) > MAX_QUERY_CHARS):
                return f"`subtask.{key}` must be a string of at most {MAX_QUERY_CHARS} characters"
    return coerce_k(args.get("k"), 1, 50)[1]

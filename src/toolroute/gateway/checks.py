"""Checks on what a client sends the meta-tools, before anything is routed or forwarded.

Each returns None when the input is fine, else one sentence for the client saying what is
wrong and what is accepted (never an internal detail: the sentence is built here, not taken
from an exception).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "MAX_ARGUMENT_BYTES",
    "MAX_ARGUMENT_DEPTH",
    "MAX_NAME_CHARS",
    "MAX_QUERY_CHARS",
    "check_arguments",
    "check_find_args",
    "check_k",
]

MAX_ARGUMENT_DEPTH = 32
"""Nesting of objects and arrays in a tool's arguments: deeper is refused (no tool schema needs
it, and it would make validation recurse without bound)."""
MAX_ARGUMENT_BYTES = 1_000_000
"""Size of a tool's arguments as JSON."""
MAX_NAME_CHARS = 256
"""Length of a tool name worth looking for close matches of."""
MAX_QUERY_CHARS = 10_000
"""Length of a find_tools query or subtask field."""


def _shown(value: Any) -> str:
    """A short, safe rendering of what the client sent (JSON, cut at 60 characters)."""
    try:
        text = json.dumps(value, ensure_ascii=True)
    except (TypeError, ValueError):
        text = "(not JSON)"
    return text if len(text) <= 60 else text[:57] + "..."


def check_k(k: Any, most: int) -> str | None:
    """``k`` must be a JSON integer from 1 to ``most`` (not a string, float or boolean)."""
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= most:
        return f"`k` must be an integer from 1 to {most}; got {_shown(k)}"
    return None


def check_find_args(args: dict[str, Any]) -> str | None:
    """find_tools: ``query`` a string, ``subtask`` an object of strings, ``k`` in 1..50."""
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
    if "k" in args:
        return check_k(args["k"], 50)
    return None


def check_arguments(arguments: dict[str, Any]) -> str | None:
    """A tool's arguments: nested at most :data:`MAX_ARGUMENT_DEPTH` deep, at most
    :data:`MAX_ARGUMENT_BYTES` as JSON."""
    stack: list[tuple[Any, int]] = [(arguments, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_ARGUMENT_DEPTH:
            return f"`arguments` are nested deeper than {MAX_ARGUMENT_DEPTH} levels"
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)
    try:
        size = len(json.dumps(arguments, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    except (TypeError, ValueError):
        return "`arguments` must be plain JSON"
    if size > MAX_ARGUMENT_BYTES:
        return f"`arguments` are larger than {MAX_ARGUMENT_BYTES} bytes of JSON"
    return None

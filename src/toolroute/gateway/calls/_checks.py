"""Checks on what a client sends the meta-tools, before anything is routed or forwarded.

Each returns None when the input is fine, else one sentence for the client saying what is
wrong and what is accepted (never an internal detail: the sentence is built here, not taken
from an exception).
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = [
    "MAX_ARGUMENT_BYTES",
    "MAX_ARGUMENT_DEPTH",
    "MAX_NAME_CHARS",
    "MAX_QUERY_CHARS",
    "check_arguments",
    "check_find_args",
    "check_k",
    "coerce_arguments",
    "coerce_k",
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


def coerce_k(k: Any, default: int, most: int) -> tuple[int, str | None]:
    """``k`` as a model sends it, as an integer from 1 to ``most``.

    Models write numbers as they please: null (strict-mode clients make every field
    required) is the default, ``"3"`` and ``3.0`` are 3, and a number outside the range is
    clamped to it. A boolean, a fraction or anything else is refused with the range.
    """
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
        return default, f"`k` must be an integer from 1 to {most}; got {_shown(k)}"
    return min(max(value, 1), most), None


def check_k(k: Any, most: int) -> str | None:
    """None when :func:`coerce_k` accepts ``k``, else its sentence."""
    return coerce_k(k, 1, most)[1]


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
    return check_k(args.get("k"), 50)


def coerce_arguments(arguments: Any) -> tuple[dict[str, Any], str | None]:
    """call_tool's ``arguments`` as a model sends them: an object, or that object written as
    a JSON string (some models and converters do). Null and anything else are refused with
    what to send instead (``{}`` for a tool that takes no arguments)."""
    if isinstance(arguments, str):
        if len(arguments) > MAX_ARGUMENT_BYTES:
            return {}, f"`arguments` are larger than {MAX_ARGUMENT_BYTES} bytes of JSON"
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except (ValueError, RecursionError):
            return {}, (
                "`arguments` is a string that is not a JSON object: send an object such as "
                '{"path": "/tmp"} ({} for a tool without arguments)'
            )
    if isinstance(arguments, dict):
        return arguments, None
    if arguments is None:
        return {}, (
            "`arguments` is null: send an object matching the tool's input_schema ({} for a "
            "tool without arguments)"
        )
    return {}, (
        "`arguments` must be an object matching the tool's input_schema ({} for a tool "
        f"without arguments); got {_shown(arguments)}"
    )


_DIGITS_PER_BIT = math.log10(2)
_TOO_LONG_BITS = 14_286
"""An integer this many bits long has more than 4,300 digits, more than Python writes."""
_WIDE = "`arguments` are larger than {} bytes of JSON"


def check_arguments(arguments: dict[str, Any]) -> str | None:
    """A tool's arguments: nested at most :data:`MAX_ARGUMENT_DEPTH` deep, at most
    :data:`MAX_ARGUMENT_BYTES` as JSON.

    Counted as the walk goes and stopped at the first limit passed, so arguments whose JSON
    would be huge (a structure shared many times over, from the Python API or a script)
    cost no more than the limit to refuse. The walk keeps two bounds of the JSON's size; the
    exact size is written only when the upper bound passes the limit and the lower one does
    not (then it is at most a few times the limit)."""
    most = MAX_ARGUMENT_BYTES
    low = high = 0
    stack: list[tuple[Any, int]] = [(arguments, 1)]
    while stack:
        container, depth = stack.pop()
        if depth > MAX_ARGUMENT_DEPTH:
            return f"`arguments` are nested deeper than {MAX_ARGUMENT_DEPTH} levels"
        n = len(container)
        if n and depth >= MAX_ARGUMENT_DEPTH:  # its items are one level deeper
            return f"`arguments` are nested deeper than {MAX_ARGUMENT_DEPTH} levels"
        low += 2 * n  # brackets and separators, and a key's colon
        high += 2 * n + 2
        if isinstance(container, dict):
            low += 2 * n
            high += 2 * n
            if low > most:
                break
            items: Any = container.values()
            for key in container:
                if type(key) is str:
                    low += len(key)
                    high += 6 * len(key)
                    continue
                bounds = _key_bounds(key)
                if isinstance(bounds, str):
                    return bounds
                low += bounds[0]
                high += bounds[1]
        else:
            if low > most:
                break
            items = container
        child = depth + 1
        for value in items:
            kind = type(value)
            if kind is str:
                low += len(value)
                high += 6 * len(value)
            elif kind is dict or kind is list or kind is tuple:
                stack.append((value, child))
            elif kind is int:
                if -(2**63) < value < 2**63:
                    low += 1
                    high += 20
                else:
                    digits = _digits(value)
                    if isinstance(digits, str):
                        return digits
                    low += digits[0]
                    high += digits[1]
            elif kind is float or kind is bool or value is None:
                low += 3
                high += 24
            elif isinstance(value, str | dict | list | tuple | int | float):
                stack.append(([_plain(value)], depth))  # a subclass: as its plain value
                low -= 2
                high -= 2
            else:
                return "`arguments` must be plain JSON"
        if low > most:
            break
    if low > most:
        return _WIDE.format(most)
    if high <= most:
        return None
    try:  # bounded: the lower bound fits, so this is at most a few times the limit
        size = len(json.dumps(arguments, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    except (TypeError, ValueError):
        return "`arguments` must be plain JSON"
    return _WIDE.format(most) if size > most else None


def _digits(value: int) -> tuple[int, int] | str:
    """Bounds of the digits of a large integer (its sign included), or why it is refused."""
    bits = abs(value).bit_length()
    if bits > _TOO_LONG_BITS:
        return "`arguments` hold an integer longer than 4300 digits"
    return max(1, int((bits - 1) * _DIGITS_PER_BIT)), int(bits * _DIGITS_PER_BIT) + 2


def _key_bounds(key: Any) -> tuple[int, int] | str:
    """Bounds of a key that is not a string, as json.dumps writes it, or why it is refused."""
    if key is None or isinstance(key, bool):
        return 4, 5
    if isinstance(key, int):
        return _digits(key)
    if isinstance(key, float):
        return 3, 24
    if isinstance(key, str):
        return len(key), 6 * len(key)
    return "`arguments` must be plain JSON"


def _plain(value: Any) -> Any:
    """A subclass's value as its plain JSON type (an enum's string, a named tuple's items)."""
    plains: tuple[type[Any], ...] = (str, dict, list, int, float)
    for plain in plains:
        if isinstance(value, plain):
            return plain(value)
    return tuple(value)

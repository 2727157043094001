"""Found tools as short Python signatures for code mode: what a script's ``call_tool`` takes,
in far fewer tokens than the JSON schema.

    def time__get_current_time(timezone: str) -> {"timezone": str, "datetime": str}:
        \"\"\"Get current time in a specific timezone.\"\"\"

Parameters come from the input schema (required first, the others ``= None``), the return type
from the tool's output schema where it has one (else ``Any``: the result is its text, or its
structured content). Nested objects are written inline as ``{"key": type}``, with a ``?`` after
an optional key. Only a hint for the agent: the gateway still checks each call against the schema.
"""

from __future__ import annotations

import json
import keyword
from collections.abc import Mapping
from typing import Any

__all__ = ["signature", "type_of"]

MAX_DEPTH = 3
"""Nested schemas deeper than this are written ``dict`` / ``list``."""
MAX_CHARS = 600
"""A signature longer than this is cut (with ``...``): the JSON schema says the rest."""
_SCALARS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}


def type_of(schema: Any, depth: int = 0, root: Mapping[str, Any] | None = None) -> str:
    """The Python type a JSON schema describes, briefly; a local ``$ref``
    (``#/$defs/Name``, ``#/definitions/Name``) is looked up in ``root``."""
    if not isinstance(schema, Mapping):
        return "Any"
    root = schema if root is None else root
    ref = schema.get("$ref")
    if isinstance(ref, str):
        target = _resolve(ref, root)
        return (
            type_of(target, depth + 1, root) if target is not None and depth < MAX_DEPTH else "Any"
        )
    if "enum" in schema and isinstance(schema["enum"], list) and schema["enum"]:
        values = schema["enum"][:8]
        return f"Literal[{', '.join(json.dumps(v, ensure_ascii=False) for v in values)}]"
    if "const" in schema:
        return f"Literal[{json.dumps(schema['const'], ensure_ascii=False)}]"
    for union in ("anyOf", "oneOf"):
        options = schema.get(union)
        if isinstance(options, list) and options:
            return " | ".join(dict.fromkeys(type_of(o, depth, root) for o in options[:6]))
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(type_of({**schema, "type": k}, depth, root) for k in kind[:4])
    if kind in _SCALARS:
        return _SCALARS[kind]
    if kind == "array":
        item = schema.get("items")
        return f"list[{type_of(item, depth + 1, root)}]" if depth < MAX_DEPTH and item else "list"
    if kind == "object" or "properties" in schema:
        props = schema.get("properties")
        if not isinstance(props, Mapping) or not props or depth >= MAX_DEPTH:
            extra = schema.get("additionalProperties")
            if isinstance(extra, Mapping) and depth < MAX_DEPTH:
                return f"dict[str, {type_of(extra, depth + 1, root)}]"
            return "dict"
        required = set(schema.get("required") or ())
        keys = [
            f"{json.dumps(k)}{'' if k in required else '?'}: {type_of(v, depth + 1, root)}"
            for k, v in props.items()
        ]
        return "{" + ", ".join(keys) + "}"
    return "Any"


def _resolve(ref: str, root: Mapping[str, Any]) -> Any:
    """The schema a local ``$ref`` points at (None: not local, or not there)."""
    if not ref.startswith("#/"):
        return None
    node: Any = root
    for part in ref[2:].split("/"):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _param(name: str) -> str:
    """A parameter name usable in Python (the JSON name is what call_tool takes)."""
    ok = name.isidentifier() and not keyword.iskeyword(name)
    return name if ok else json.dumps(name)


def signature(
    name: str,
    description: str,
    input_schema: Mapping[str, Any],
    output_schema: Mapping[str, Any] | None = None,
) -> str:
    """``def name(params) -> return:`` and a one-line docstring."""
    props = input_schema.get("properties")
    props = props if isinstance(props, Mapping) else {}
    required = [k for k in input_schema.get("required") or () if k in props]
    optional = [k for k in props if k not in required]
    params = [f"{_param(k)}: {type_of(props[k], 1, input_schema)}" for k in required]
    params += [f"{_param(k)}: {type_of(props[k], 1, input_schema)} = None" for k in optional]
    returns = type_of(output_schema) if output_schema else "Any"
    head = f"def {name}({', '.join(params)}) -> {returns}:"
    if len(head) > MAX_CHARS:
        head = head[: MAX_CHARS - 5] + " ...:"
    line = " ".join(description.split()).split(". ")[0].strip().rstrip(".")
    doc = (line[:157] + "...") if len(line) > 160 else line
    return f'{head}\n    """{doc}."""' if doc else head

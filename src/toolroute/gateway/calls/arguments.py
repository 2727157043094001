"""A tool call's arguments, checked before the call is forwarded: as models write them
(``call_tool``'s ``arguments``), bounded in depth and size, then against the tool's input
schema. A check returns None when the arguments are fine, else one sentence for the client
saying what is wrong and what is accepted (built here, never an exception's internal detail).

A downstream server writes the input schema, so it is taken as untrusted data:

- **Nothing is fetched.** ``$ref`` resolves only inside the schema (``#/…`` pointers, anchors,
  ``$id``\\ s it declares) through a :class:`referencing.Registry` whose ``retrieve`` refuses every
  URI: a schema never makes the gateway open a URL or a file.
- **Bounded.** At most :data:`MAX_SCHEMA_BYTES` of JSON nested :data:`MAX_SCHEMA_DEPTH` deep,
  and no ``$ref`` cycle that loops without going into the arguments (``{"$ref": "#"}``).
- **Linear regexes.** ``pattern``, ``patternProperties`` (and ``additionalProperties``' use of
  them) run on RE2, which has no backtracking (``^(a+)+$`` costs microseconds, not minutes); a
  pattern RE2 cannot compile (backreferences, lookaround) is not checked (the server still
  checks its own arguments).
- **Off the event loop, with a deadline.** Validation runs in a worker thread
  (:data:`VALIDATE_THREADS` at once) and stops once it has used :data:`VALIDATE_DEADLINE_S` of
  its thread's CPU time (checked before every keyword): the bound is the schema's own work, so
  a loaded machine that only delays the thread never refuses a good tool (with a wall-clock
  bound, a load test refused `time__get_current_time` as "took longer than 2 s").
  :data:`VALIDATE_WALL_S` of wall time bounds one keyword that overruns on its own.

A schema that breaks a bound, refers outside itself or is not a valid JSON schema makes its tool
unusable: ``call_tool`` refuses that tool with ``error: invalid_schema`` naming it, the server's
other tools are untouched, and the gateway logs one line per tool (never a traceback).
"""

from __future__ import annotations

import functools
import json
import logging
import math
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import anyio
import jsonschema
import re2
from anyio.lowlevel import RunVar
from jsonschema.exceptions import ValidationError
from referencing import Registry, Resource
from referencing.exceptions import NoSuchResource, Unresolvable

from toolroute.errors import ErrorCode, error_payload

__all__ = [
    "MAX_ARGUMENT_BYTES",
    "MAX_ARGUMENT_DEPTH",
    "MAX_NAME_CHARS",
    "MAX_SCHEMA_BYTES",
    "MAX_SCHEMA_DEPTH",
    "VALIDATE_DEADLINE_S",
    "VALIDATE_THREADS",
    "VALIDATE_WALL_S",
    "argument_errors",
    "check_arguments",
    "check_call",
    "coerce_arguments",
    "schema_problem",
    "shown",
]

log = logging.getLogger(__name__)

MAX_ARGUMENT_DEPTH = 32
"""Nesting of objects and arrays in a tool's arguments: deeper is refused (no tool schema needs
it, and it would make validation recurse without bound)."""
MAX_ARGUMENT_BYTES = 1_000_000
"""Size of a tool's arguments as JSON."""
MAX_NAME_CHARS = 256
"""Length of a tool name worth looking for close matches of."""


def shown(value: Any) -> str:
    """A short, safe rendering of what the client sent (JSON, cut at 60 characters)."""
    try:
        text = json.dumps(value, ensure_ascii=True)
    except (TypeError, ValueError):
        text = "(not JSON)"
    return text if len(text) <= 60 else text[:57] + "..."


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
        f"without arguments); got {shown(arguments)}"
    )


_DIGITS_PER_BIT = math.log10(2)
_TOO_LONG_BITS = 14_286
"""An integer this many bits long has more than 4,300 digits, more than Python writes."""
_WIDE = "`arguments` are larger than {} bytes of JSON"


def check_arguments(arguments: dict[str, Any]) -> str | None:
    """A tool's arguments: nested at most :data:`MAX_ARGUMENT_DEPTH` deep, at most
    :data:`MAX_ARGUMENT_BYTES` as JSON. Counted as the walk goes and stopped at the first limit
    passed, so arguments whose JSON would be huge (a structure shared many times over, from
    the Python API or a script) cost no more than the limit to refuse. The walk keeps two
    bounds of the JSON's size; the exact size is written only when the upper bound passes the
    limit and the lower one does not (then it is at most a few times the limit)."""
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


# -- the arguments against the tool's input schema --------------------------------------------

MAX_SCHEMA_BYTES = 256_000
"""Size of an input schema as JSON (the largest real MCP tool schemas are a few tens of KB)."""
MAX_SCHEMA_DEPTH = 64
"""Nesting of objects and arrays in an input schema."""
VALIDATE_DEADLINE_S = 2.0
"""CPU time (of its thread) one validation may use before the call is refused."""
VALIDATE_WALL_S = 30.0
"""Wall time one validation may take, waiting for a thread included: what bounds a single
keyword that overruns between two deadline checks, far above any delay a loaded machine adds."""
VALIDATE_THREADS = 2
"""Validations running at once in worker threads (more wait for a free one)."""
MAX_ERRORS = 10
"""Validation errors returned to the client for one call."""

_IN_PLACE_LISTS = ("allOf", "anyOf", "oneOf")
_IN_PLACE_ONE = ("not", "if", "then", "else")
_REF_KEYS = ("$ref", "$dynamicRef", "$recursiveRef")


class _Overtime(Exception):
    """The validation passed its deadline."""


@dataclass(frozen=True, slots=True)
class _Compiled:
    validator: Any | None  # None: the schema is unusable, see ``problem``
    problem: str | None = None


_clock = threading.local()
"""The deadline of the validation running in this thread (validators are shared)."""
_limiter: RunVar[anyio.CapacityLimiter] = RunVar("validate_limiter")
_warned: set[str] = set()


def _refuse(uri: str) -> Resource[Any]:
    """The registry's retrieve: a schema's reference is never fetched."""
    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]


_NO_RETRIEVAL: Registry[Any] = Registry(retrieve=_refuse)  # type: ignore[call-arg]


# -- regexes on RE2 ---------------------------------------------------------------------------


@functools.lru_cache(maxsize=1024)
def _regex(pattern: str) -> Any | None:
    """The RE2 compilation of a schema pattern; None when RE2 cannot compile it."""
    options = re2.Options()
    options.log_errors = False  # RE2 would print each refusal to stderr
    try:
        return re2.compile(pattern, options)
    except re2.error:
        return None


def _search(pattern: str, text: str) -> bool:
    rx = _regex(pattern)
    return True if rx is None else rx.search(text) is not None


def _pattern(validator: Any, patrn: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not _search(patrn, instance):
        yield ValidationError(f"{instance!r} does not match {patrn!r}")


def _pattern_properties(
    validator: Any, patterns: Mapping[str, Any], instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for k, v in instance.items():
            if _search(pattern, k):
                yield from validator.descend(v, subschema, path=k, schema_path=pattern)


def _additional_properties(
    validator: Any, ap: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    """jsonschema's ``additionalProperties`` with ``patternProperties`` matched on RE2."""
    if not validator.is_type(instance, "object"):
        return
    properties = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    extras = sorted(
        (p for p in instance if p not in properties and not any(_search(pt, p) for pt in patterns)),
        key=str,
    )
    if validator.is_type(ap, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], ap, path=extra)
    elif not ap and extras:
        joined = ", ".join(repr(e) for e in extras)
        if patterns:
            yield ValidationError(
                f"{joined} do(es) not match any of the regexes: "
                + ", ".join(repr(p) for p in sorted(patterns))
            )
        else:
            yield ValidationError(f"Additional properties are not allowed ({joined} unexpected)")


def _unchecked(validator: Any, value: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    return iter(())


def _timed(keyword: Callable[..., Any]) -> Callable[..., Any]:
    """``keyword`` behind the running validation's deadline."""

    def check(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        if time.thread_time() > getattr(_clock, "deadline", float("inf")):
            raise _Overtime
        return keyword(validator, value, instance, schema)

    return check


@functools.lru_cache(maxsize=16)
def _safe_class(base: type, uncheck_unevaluated: bool) -> Any:
    """``base`` with RE2 regexes and a deadline at every keyword."""
    keywords = dict(base.VALIDATORS)  # type: ignore[attr-defined]
    for name, fn in (
        ("pattern", _pattern),
        ("patternProperties", _pattern_properties),
        ("additionalProperties", _additional_properties),
    ):
        if name in keywords:
            keywords[name] = fn
    if uncheck_unevaluated and "unevaluatedProperties" in keywords:
        # jsonschema matches patternProperties with `re` inside unevaluatedProperties; rather
        # than backtrack on a server's regex, leave that one keyword to the server
        keywords["unevaluatedProperties"] = _unchecked
    return jsonschema.validators.extend(base, {k: _timed(v) for k, v in keywords.items()})


# -- the schema's shape -----------------------------------------------------------------------


def _nodes(schema: Any) -> tuple[dict[str, Any], str | None]:
    """Every object in ``schema`` by JSON pointer, or the bound it breaks."""
    nodes: dict[str, Any] = {}
    stack: list[tuple[Any, str, int]] = [(schema, "", 1)]
    while stack:
        value, pointer, depth = stack.pop()
        if depth > MAX_SCHEMA_DEPTH:
            return nodes, f"it is nested deeper than {MAX_SCHEMA_DEPTH} levels"
        if isinstance(value, dict):
            nodes[pointer] = value
            for k, v in value.items():
                key = str(k).replace("~", "~0").replace("/", "~1")
                stack.append((v, f"{pointer}/{key}", depth + 1))
        elif isinstance(value, list):
            stack.extend((v, f"{pointer}/{i}", depth + 1) for i, v in enumerate(value))
    return nodes, None


def _targets(node: dict[str, Any], pointer: str, anchors: dict[str, str]) -> Iterator[str]:
    """The subschemas evaluated against the same instance as ``node`` (so a cycle among
    them never ends): its references and its in-place applicators."""
    for key in _REF_KEYS:
        ref = node.get(key)
        if isinstance(ref, str) and ref.startswith("#"):
            fragment = unquote(ref[1:])
            if fragment.startswith("/") or not fragment:
                yield fragment
            elif fragment in anchors:
                yield anchors[fragment]
    for key in _IN_PLACE_LISTS:
        if isinstance(node.get(key), list):
            yield from (f"{pointer}/{key}/{i}" for i in range(len(node[key])))
    for key in _IN_PLACE_ONE:
        if isinstance(node.get(key), dict):
            yield f"{pointer}/{key}"
    for key in ("dependentSchemas", "dependencies"):
        if isinstance(node.get(key), dict):
            for name, sub in node[key].items():
                if isinstance(sub, dict):
                    yield f"{pointer}/{key}/{str(name).replace('~', '~0').replace('/', '~1')}"


def _loop(nodes: dict[str, Any]) -> str | None:
    """A ``$ref`` cycle that never goes into the arguments, as the pointer where it closes."""
    anchors = {n["$anchor"]: p for p, n in nodes.items() if isinstance(n.get("$anchor"), str)}
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in nodes:
        if start in state:
            continue
        stack = [(start, iter(list(_targets(nodes[start], start, anchors))))]
        state[start] = 1
        while stack:
            pointer, children = stack[-1]
            child = next(children, None)
            if child is None:
                state[pointer] = 2
                stack.pop()
            elif child in nodes:
                if state.get(child) == 1:
                    return child or "#"
                if child not in state:
                    state[child] = 1
                    stack.append((child, iter(list(_targets(nodes[child], child, anchors)))))
    return None


def _outside(nodes: dict[str, Any]) -> str | None:
    """A reference to something the schema does not hold itself."""
    ids = {n["$id"].split("#")[0] for n in nodes.values() if isinstance(n.get("$id"), str)}
    for node in nodes.values():
        for key in _REF_KEYS:
            ref = node.get(key)
            if isinstance(ref, str) and not ref.startswith("#") and ref.split("#")[0] not in ids:
                return ref
    return None


@functools.lru_cache(maxsize=4096)
def _compiled(schema_json: str) -> _Compiled:
    """The validator of one distinct schema, or why there is none (cached by content)."""
    if len(schema_json) > MAX_SCHEMA_BYTES:
        return _Compiled(None, f"it is larger than {MAX_SCHEMA_BYTES} bytes of JSON")
    try:
        schema = json.loads(schema_json)
    except (ValueError, RecursionError):
        return _Compiled(None, "it is not plain JSON")
    if not isinstance(schema, dict):
        return _Compiled(None, "it is not a JSON object")
    nodes, bound = _nodes(schema)
    if bound:
        return _Compiled(None, bound)
    ref = _outside(nodes)
    if ref is not None:
        return _Compiled(
            None, f"it refers to {ref[:100]!r}, outside the schema (only #/… is followed)"
        )
    loop = _loop(nodes)
    if loop is not None:
        return _Compiled(None, f"its $ref at {loop[:100]!r} loops back on itself")
    base = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        base.check_schema(schema)
    except jsonschema.SchemaError as e:
        return _Compiled(None, f"it is not a valid JSON schema ({e.message[:200]})")
    except (RecursionError, Unresolvable):
        return _Compiled(None, "it is not a valid JSON schema")
    keys = {k for n in nodes.values() for k in n}
    cls = _safe_class(base, "patternProperties" in keys and "unevaluatedProperties" in keys)
    return _Compiled(cls(schema, registry=_NO_RETRIEVAL))


def _key(schema: Mapping[str, Any]) -> str:
    return json.dumps(schema, sort_keys=True, ensure_ascii=False)


def schema_problem(schema: Mapping[str, Any]) -> str | None:
    """Why ``schema`` cannot be used to check arguments (None: it can)."""
    try:
        return _compiled(_key(schema)).problem
    except (TypeError, ValueError, RecursionError):
        return "it is not plain JSON"


def argument_errors(
    schema: Mapping[str, Any], arguments: Any, deadline_s: float = VALIDATE_DEADLINE_S
) -> list[dict[str, str]]:
    """The JSON-schema errors of ``arguments`` (at most :data:`MAX_ERRORS`), in this thread;
    :class:`ValueError` saying why when the schema is unusable or the check passes
    ``deadline_s``."""
    problem = schema_problem(schema)
    if problem:
        raise ValueError(problem)
    return _errors(_key(schema), arguments, deadline_s)


def _errors(schema_json: str, arguments: Any, deadline_s: float) -> list[dict[str, str]]:
    """:func:`argument_errors` of a schema given as JSON text (a catalogued tool's own)."""
    compiled = _compiled(schema_json)
    if compiled.problem:
        raise ValueError(compiled.problem)
    validator: Any = compiled.validator
    _clock.deadline = time.thread_time() + deadline_s
    try:
        found = sorted(validator.iter_errors(arguments), key=lambda e: list(e.absolute_path))
    except _Overtime:
        raise ValueError(f"checking the arguments took over {deadline_s:g} s of CPU") from None
    except Unresolvable as e:  # a reference inside an $id'd subschema to nowhere
        raise ValueError(f"its $ref {str(e.ref)[:100]!r} cannot be resolved") from None
    except RecursionError:
        raise ValueError("it nests references too deeply to evaluate") from None
    finally:
        _clock.deadline = float("inf")
    return [
        {
            "path": "/".join(str(p) for p in e.absolute_path)[:200] or "(root)",
            "message": e.message if len(e.message) <= 300 else e.message[:300] + " …",
        }
        for e in found[:MAX_ERRORS]
    ]


async def check_call(
    name: str, schema_json: str, arguments: dict[str, Any]
) -> dict[str, Any] | None:
    """None when ``arguments`` fit ``name``'s input schema, given as the JSON text the catalog
    keeps (compiled once per distinct text: a call parses and writes no schema); else the
    ``isError`` payload (``invalid_arguments`` with the errors, or ``invalid_schema`` naming
    the tool)."""
    try:
        limiter = _limiter.get()
    except LookupError:
        limiter = anyio.CapacityLimiter(VALIDATE_THREADS)
        _limiter.set(limiter)
    try:
        with anyio.fail_after(VALIDATE_WALL_S):  # a keyword that overruns on its own
            errors = await anyio.to_thread.run_sync(
                _errors,
                schema_json,
                arguments,
                VALIDATE_DEADLINE_S,
                limiter=limiter,
                abandon_on_cancel=True,
            )
    except (ValueError, TimeoutError) as e:
        reason = str(e) or f"checking the arguments took longer than {VALIDATE_WALL_S:g} s"
        if name not in _warned and len(_warned) < 10_000:
            _warned.add(name)
            log.warning("tool %s is refused: its input schema is unusable: %s", name, reason)
        return error_payload(
            ErrorCode.INVALID_SCHEMA,
            f"toolroute cannot use the input schema of {name!r}: {reason}; the tool is refused "
            "(ask its server's operator to fix the schema), the server's other tools are fine",
            tool=name,
        )
    if not errors:
        return None
    schema = json.loads(schema_json)  # the client reads what to send instead
    return error_payload(
        ErrorCode.INVALID_ARGUMENTS, None, tool=name, errors=errors, input_schema=schema
    )

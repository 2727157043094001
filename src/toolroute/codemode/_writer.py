"""JSON written under a size and a depth: counted as it is written, stopped at the first piece
past either, so a value whose JSON would be huge costs no more than the limit to refuse.

A shared structure (``x = [x, x]`` twenty times, ``[s] * 20000``) is written as JSON writes it,
every reference in full; counting as it goes stops it at the limit instead of expanding it
first. The walk is a loop over a stack of iterators, never recursion, so depth costs no frames.

This source is fed as is to code mode's worker (:mod:`toolroute.codemode.sandbox`), so a
script's value and its calls' arguments are written and bounded in the worker, under its
limits; the tests import it here too. It is therefore written in the Python subset the
sandbox runs (no classes, no ``del``, no ``collections.abc`` at run time).

:func:`bounded_writer` builds a writer whose builtins are bound when it is built, so a script
that later rebinds ``len`` or ``json`` in its globals does not change how its values are
measured.
"""

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    Written = tuple[str | None, str | None, int]
    """The text (None when refused), what refused it (None when written), bytes counted."""
    Writer = Callable[[Any, int, int, bool, bool], Written]

__all__ = ["INT_DIGITS", "bounded_writer", "write_json"]

INT_DIGITS = 4300
"""Longest integer, in decimal digits, Python converts to text (CPython's and the sandbox's
limit): a longer one is refused as ``"digits"``."""


def bounded_writer() -> "Writer":
    """A writer ``(value, max_bytes, max_depth, strict, keep) -> (text, refused, size)``.

    It writes ``value`` as ``json.dumps(value, ensure_ascii=False)`` would and counts the
    UTF-8 bytes as it goes. ``refused`` names the first limit met: ``"bytes"`` (more than
    ``max_bytes``), ``"depth"`` (a value nested deeper than ``max_depth``, the outermost
    value at depth 1), ``"digits"`` (an integer longer than :data:`INT_DIGITS` digits) or
    ``"type"`` (``strict`` only: not JSON data). Without ``strict`` (a script's value) sets
    are arrays, bytes are text, other keys and non-finite floats are written as text, and
    any other object as its ``repr``. ``keep`` False counts without keeping the text
    (``""`` when it fits).
    """
    dumps = json.dumps
    isinst = isinstance
    length = len
    text = str
    rep = repr
    iterate = iter
    advance = next
    t_str = str
    t_bool = bool
    t_int = int
    t_float = float
    t_dict = dict
    t_bytes = bytes
    arrays = (list, tuple)
    loose_arrays = (list, tuple, set, frozenset)
    infinity = float("inf")
    done: Any = []  # a sentinel no value is
    too_long = 10**INT_DIGITS

    def size_of(piece: str) -> int:
        if piece.isascii():
            return length(piece)
        return length(piece.encode("utf-8", "surrogatepass"))

    def scalar_key(key: Any) -> str | None:
        """A key as json.dumps writes it, or None when it is no JSON key."""
        if isinst(key, t_str):
            return key  # type: ignore[no-any-return]
        if key is None:
            return "null"
        if isinst(key, t_bool):
            return "true" if key else "false"
        if isinst(key, t_int):
            return text(key)
        if isinst(key, t_float):
            return dumps(key)
        return None

    def measure(value: Any, max_bytes: int, max_depth: int) -> "Written | None":
        """The JSON of a value json.dumps writes as it is (objects with string keys, arrays,
        strings, numbers), sized over its distinct containers (a shared one is sized once),
        then written natively when it fits; None for any other value."""
        root = [value]
        # a container's bytes and height, kept when it is large enough to matter: a small
        # one met again is walked again, at most a few bytes of work per byte it counts
        sizes: dict[int, int] = {}
        heights: dict[int, int] = {}
        # one [container, items, is_object, bytes so far, tallest item] per open container;
        # a container holding itself only deepens the path until max_depth stops it
        frames: list[list[Any]] = []
        items: Any = iterate(root)
        is_object = False
        total = 0
        tallest = 0
        while True:
            item = advance(items, done)
            if item is done:
                if not frames:
                    break
                container = frames.pop()
                child_bytes, child_height = total, tallest + 1
                if child_bytes >= 64:
                    sizes[id(container[0])] = child_bytes
                    heights[id(container[0])] = child_height
                _, items, is_object, total, tallest = container
                total += child_bytes
                if child_height > tallest:
                    tallest = child_height
                if total > max_bytes:
                    return None, "bytes", total
                continue
            if is_object:
                name, item = item
                if not isinst(name, t_str):
                    return None
                total += size_of(dumps(name, ensure_ascii=False)) + 2  # and ": "
            height = 1
            if isinst(item, t_str):
                if length(item) + 2 > max_bytes - total:
                    return None, "bytes", total + length(item) + 2
                total += size_of(dumps(item, ensure_ascii=False))
            elif isinst(item, t_dict) or isinst(item, arrays):
                n = length(item)
                if not n:
                    total += 2
                else:
                    key = id(item)
                    if key in sizes:
                        total += sizes[key]
                        height = heights[key]
                    else:
                        if length(frames) + 2 > max_depth:
                            return None, "depth", total
                        frames.append([item, items, is_object, total, tallest])
                        is_object = isinst(item, t_dict)
                        items = iterate(item.items()) if is_object else iterate(item)
                        total = 2 * n
                        tallest = 0
                        continue
            elif item is None or isinst(item, t_bool):
                total += 4 if item is None or item else 5
            elif isinst(item, t_int):
                if item >= too_long or item <= -too_long:
                    return None, "digits", total
                total += length(text(item))
            elif isinst(item, t_float):
                if not (item == item and item != infinity and item != -infinity):
                    return None
                total += length(dumps(item))
            else:
                return None
            if length(frames) + height > max_depth:
                return None, "depth", total
            if height > tallest:
                tallest = height
            if total > max_bytes:
                return None, "bytes", total
        return dumps(value, ensure_ascii=False), None, total

    def write(
        value: Any, max_bytes: int, max_depth: int, strict: bool = False, keep: bool = True
    ) -> "Written":
        if keep:
            fast = measure(value, max_bytes, max_depth)
            if fast is not None:
                return fast
        parts: list[str] = []
        size = 0
        stack: list[list[Any]] = []  # one [iterator, is_object, wrote_one] per open container
        pending = value
        have = True
        while True:
            if have:
                have = False
                if length(stack) + 1 > max_depth:
                    return None, "depth", size
                v = pending
                if isinst(v, t_str):
                    if length(v) + 2 > max_bytes - size:  # at least that many bytes
                        return None, "bytes", size + length(v) + 2
                    piece = dumps(v, ensure_ascii=False)
                elif v is None:
                    piece = "null"
                elif isinst(v, t_bool):
                    piece = "true" if v else "false"
                elif isinst(v, t_int):
                    if v >= too_long or v <= -too_long:
                        return None, "digits", size
                    piece = text(v)
                elif isinst(v, t_float):
                    finite = v == v and v != infinity and v != -infinity
                    piece = dumps(v) if finite or strict else dumps(rep(v))
                elif isinst(v, t_dict):
                    stack.append([iterate(v.items()), True, False])
                    piece = "{"
                elif isinst(v, arrays if strict else loose_arrays):
                    stack.append([iterate(v), False, False])
                    piece = "["
                elif strict:
                    return None, "type", size
                elif isinst(v, t_bytes):
                    piece = dumps(v.decode("utf-8", "replace"), ensure_ascii=False)
                else:
                    shown = rep(v)
                    if length(shown) + 2 > max_bytes - size:
                        return None, "bytes", size + length(shown) + 2
                    piece = dumps(shown, ensure_ascii=False)
            else:
                if not stack:
                    break
                frame = stack[-1]
                item = advance(frame[0], done)
                if item is done:
                    stack.pop()
                    piece = "}" if frame[1] else "]"
                else:
                    piece = ", " if frame[2] else ""
                    frame[2] = True
                    have = True
                    if frame[1]:
                        key, pending = item
                        if (
                            isinst(key, t_int)
                            and not isinst(key, t_bool)
                            and (key >= too_long or key <= -too_long)
                        ):
                            return None, "digits", size
                        name = scalar_key(key)
                        if name is None:
                            if strict:
                                return None, "type", size
                            # a tuple or frozenset key: its own JSON, in what room is left
                            name, refused, used = write(
                                key, max_bytes - size, max_depth - length(stack), False, True
                            )
                            if name is None:
                                return None, refused, size + used
                        elif not strict and not isinst(key, t_str):
                            name = text(key)  # as a script wrote it: True, None, 1.5
                        if length(name) + 4 > max_bytes - size:
                            return None, "bytes", size + length(name) + 4
                        piece = piece + dumps(name, ensure_ascii=False) + ": "
                    else:
                        pending = item
            size += size_of(piece)
            if size > max_bytes:
                return None, "bytes", size
            if keep:
                parts.append(piece)
        return ("".join(parts) if keep else ""), None, size

    return write


write_json = bounded_writer()
"""The gateway's own writer (see :func:`bounded_writer`)."""

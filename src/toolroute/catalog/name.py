"""The namespaced name of a tool, ``<server>__<tool>``, built and split in one place, and what
a name looks like to a reader (:func:`skeleton`).

Server names may not contain :data:`SEPARATOR` (the config refuses them), so the first
occurrence always splits a name unambiguously, whatever the tool's own name holds.

Two names that differ but look the same (a Cyrillic ``і`` for a Latin ``i``, a trailing
zero-width space) have the same skeleton, after Unicode Technical Standard #39 "Unicode
Security Mechanisms": invisible characters dropped, NFKC, then each character replaced by one
prototype of its class in Unicode's confusables table (the data of the
``confusable-homoglyphs`` package, a maintained copy of ``confusables.txt``). Classes are
single characters; a letter pair that looks like one letter (``rn`` and ``m``) is not folded.
"""

from __future__ import annotations

import json
import unicodedata
from functools import cache
from importlib import resources

__all__ = [
    "SEPARATOR",
    "invisible",
    "qualified_name",
    "server_of",
    "skeleton",
    "split_name",
]

SEPARATOR = "__"
"""Between server and tool in a namespaced tool name (``time__get_current_time``). Server names
may not contain it, so the first occurrence always splits a name unambiguously."""


def qualified_name(server: str, tool: str) -> str:
    """``server__tool``: the name the gateway, its clients and the config use for a tool."""
    return f"{server}{SEPARATOR}{tool}"


def split_name(name: str) -> tuple[str, str]:
    """(server, tool) of ``server__tool``; a name without the separator is a server name with
    an empty tool."""
    server, _, tool = name.partition(SEPARATOR)
    return server, tool


def server_of(name: str) -> str:
    """The server part of ``server__tool`` (the whole name when it has no separator)."""
    return name.partition(SEPARATOR)[0]


def invisible(name: str) -> list[str]:
    """The invisible characters in ``name`` (format characters such as zero-width spaces,
    bidi controls and tags, and other default-ignorable code points), as ``U+XXXX``."""
    return [f"U+{ord(c):04X}" for c in dict.fromkeys(name) if _hidden(c)]


def _hidden(c: str) -> bool:
    return unicodedata.category(c) in ("Cf", "Cc", "Co", "Cn") or c in _IGNORABLE


# default-ignorable code points that are not format characters (TR44's property, in part)
_IGNORABLE = frozenset("\u115f\u1160\u3164\uffa0\u034f\u17b4\u17b5") | frozenset(
    chr(c) for c in (*range(0x180B, 0x1810), *range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0))
)


def skeleton(name: str) -> str:
    """What ``name`` looks like: equal skeletons, confusable names (TR39's skeleton, over
    single characters)."""
    shown = unicodedata.normalize("NFKC", "".join(c for c in name if not _hidden(c)))
    table = _prototypes()
    return "".join(table.get(c, c) for c in shown)


@cache
def _prototypes() -> dict[str, str]:
    """Each confusable character → its class's prototype: an ASCII lowercase letter where
    the class has one, else an ASCII letter, else any ASCII character, else the lowest code
    point (so ``0``/``O`` → ``O`` and ``1``/``l``/``I`` → ``l``, as TR39's own table)."""
    data = resources.files("confusable_homoglyphs").joinpath("confusables.json").read_text("utf-8")
    table: dict[str, list[dict[str, str]]] = json.loads(data)
    parent: dict[str, str] = {}

    def root(c: str) -> str:
        while (p := parent.get(c, c)) != c:
            parent[c] = parent.get(p, p)
            c = p
        return c

    for char, glyphs in table.items():
        if len(char) != 1:
            continue
        for g in glyphs:
            other = g.get("c", "")
            if len(other) == 1 and (a := root(char)) != (b := root(other)):
                parent[max(a, b)] = min(a, b)
    members: dict[str, list[str]] = {}
    for c in {*parent, *parent.values()}:  # a root is a value only
        members.setdefault(root(c), []).append(c)
    out: dict[str, str] = {}
    for group in members.values():
        proto = min(group, key=_rank)
        out.update((c, proto) for c in group if c != proto)
    return out


def _rank(c: str) -> tuple[int, str]:
    if c.isascii() and c.islower():
        return 0, c
    if c.isascii() and c.isalpha():
        return 1, c
    return (2, c) if c.isascii() else (3, c)

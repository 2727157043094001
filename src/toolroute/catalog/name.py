"""The namespaced name of a tool, ``<server>__<tool>``, built and split in one place, and what
a name looks like to a reader (:func:`skeleton`).

Server names may not contain :data:`SEPARATOR` (the config refuses them), so the first
occurrence always splits a name unambiguously, whatever the tool's own name holds.

Two names that differ but look the same (a Cyrillic ``і`` for a Latin ``i``, a trailing
zero-width space, a trailing no-break or ideographic space, a capital ``I`` for an ``l``) have
the same skeleton, after Unicode Technical Standard #39 "Unicode Security Mechanisms":
invisible characters dropped, NFKC, spaces and line separators dropped, then each character
replaced by one prototype of its class in Unicode's confusables table (the data of the
``confusable-homoglyphs`` package, a maintained copy of ``confusables.txt``, whose classes
hold ASCII look-alikes too: ``I``, ``1`` and ``l``; ``0`` and ``O``). Classes are single
characters; a letter pair that looks like one letter (``rn`` and ``m``) is not folded.
A name is its own skeleton when nothing in it is hidden or folded (:func:`is_plain`).
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterable, Iterator
from functools import cache, lru_cache
from importlib import resources

__all__ = [
    "SEPARATOR",
    "invisible",
    "is_plain",
    "namespace_of",
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


WRITTEN_SEPARATORS = ("__", ".", "/")
"""How a reader may write ``server__tool``: ``time__now``, ``time.now``, ``time/now``
(find_tools and the exact-name step read all three)."""


def namespace_of(name: str, servers: Iterable[str]) -> str | None:
    """The server of ``servers`` in whose namespace ``name`` is written (``time__now``,
    ``time.now``, ``time/now``, the server in any case or look-alike form), or None. A name a
    server lists that is written inside another's would shadow that server's own tool."""
    prefixes = {_folded(name[:at]) for sep in WRITTEN_SEPARATORS for at in _positions(name, sep)}
    if not prefixes:
        return None
    return next((s for s in servers if _folded(s) in prefixes), None)


@lru_cache(maxsize=4096)
def _folded(name: str) -> str:
    return skeleton(name).casefold()


def _positions(name: str, sep: str) -> Iterator[int]:
    at = name.find(sep)
    while at > 0:  # every split: a server name may itself hold ``.`` or ``/``
        yield at
        at = name.find(sep, at + 1)


def invisible(name: str) -> list[str]:
    """The invisible characters in ``name`` (control and format characters such as NUL,
    zero-width spaces, bidi controls and tags, other default-ignorable code points, and every
    space or separator but the ASCII space: no-break, hair and ideographic spaces, the line
    separator, the Braille blank), as ``U+XXXX``."""
    return [f"U+{ord(c):04X}" for c in dict.fromkeys(name) if _hidden(c)]


def _hidden(c: str) -> bool:
    return c != " " and (unicodedata.category(c) in _HIDDEN_CATEGORIES or c in _IGNORABLE)


# control, format, private use, unassigned; space, line and paragraph separators
_HIDDEN_CATEGORIES = frozenset({"Cf", "Cc", "Co", "Cn", "Zs", "Zl", "Zp"})
# default-ignorable code points that are not format characters (TR44's property, in part),
# and blanks that are symbols by category but show as a space (Braille blank)
_IGNORABLE = frozenset("\u115f\u1160\u3164\uffa0\u034f\u17b4\u17b5\u2800") | frozenset(
    chr(c) for c in (*range(0x180B, 0x1810), *range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0))
)


def skeleton(name: str) -> str:
    """What ``name`` looks like: equal skeletons, confusable names (TR39's skeleton, over
    single characters, with spaces dropped: ``"x "`` looks like ``x``)."""
    if name.isascii():  # most names: the ASCII classes alone, not the whole table in memory
        ascii_table = _ascii_prototypes()
        return "".join(ascii_table.get(c, c) for c in name if c.isprintable() and c != " ")
    shown = unicodedata.normalize("NFKC", "".join(c for c in name if not _hidden(c)))
    table = _prototypes()
    return "".join(table.get(c, c) for c in shown if not c.isspace())


def is_plain(name: str) -> bool:
    """``name`` is its own skeleton: of names that look alike, the one a reader takes them
    all for (``probe_all``, not ``probe_aII`` nor ``probe_all`` with a trailing space)."""
    if name.isascii():  # the skeleton's ASCII rule, without building it: a start-up review
        # asks this of every name listed
        return name.isprintable() and _ascii_folded().isdisjoint(name)
    return skeleton(name) == name


@cache
def _ascii_folded() -> frozenset[str]:
    """The printable ASCII characters an ASCII skeleton changes: the space (dropped) and
    those folded into another (``I``, ``0``, ``1``)."""
    return frozenset(_ascii_prototypes()) | {" "}


@cache
def _ascii_prototypes() -> dict[str, str]:
    """:func:`_prototypes` of the ASCII characters (``I`` → ``l``, ``0`` → ``O``): an ASCII
    name maps to ASCII only (NFKC keeps it), so an all-ASCII catalog never keeps the whole
    table, several MB of a pass-through gateway's memory."""
    table = _prototypes() if _prototypes.cache_info().currsize else _prototypes.__wrapped__()
    return {c: p for c, p in table.items() if c.isascii()}


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

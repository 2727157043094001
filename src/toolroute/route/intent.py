"""Offline sub-intent splitting of compound requests (PA-RAG §4.5, without the LLM).

A request like "fetch the trends, draw a word cloud and save it as a PDF" is split at sentence
ends, semicolons, commas and the connectives "and" / "then" into clauses; clauses too short to
name an action are dropped. The LLM decomposer of a later stage plugs in behind the same shape.
"""

from __future__ import annotations

import re

from toolroute.route.action import query_actions

__all__ = [
    "READ_FILE_INTENT",
    "WRITE_FILE_INTENT",
    "intent_spans",
    "named_files",
    "names_destination",
    "split_intents",
]

WRITE_FILE_INTENT = "write text content to a file"
"""The step a request implies when it names where its result goes ("save it to
/root/notes/report.md") but not how: some tool must write that file."""

READ_FILE_INTENT = "read the content of a {ext} file"
"""The step a request implies when it names a file it only reads ("the sales data in
/root/excel/sales.xlsx"): some tool must read that kind of file (``{ext}``: its extension)."""

_FILE_PATH = re.compile(r"(?<![\w/])(?:~|\.{1,2})?/(?:[\w.\-]+/)*[\w\-]+\.[A-Za-z0-9]{1,5}\b")

_SPLIT = re.compile(
    r"(?<=[.!?;。；！？])\s+|\n+|,\s*(?:and\s+)?(?:then\s+)?|\s+and\s+then\s+|\s+then\s+|\s+and\s+",
    re.IGNORECASE,
)
_TRIM = " ,.;:"


def intent_spans(text: str, *, min_chars: int = 12, max_intents: int = 8) -> list[tuple[int, int]]:
    """Character spans of the clauses of ``text``; empty when the request is one clause."""
    spans: list[tuple[int, int]] = []
    start = 0
    for m in [*_SPLIT.finditer(text), None]:
        end = m.start() if m is not None else len(text)
        a, b = start, end
        while a < b and text[a] in _TRIM:
            a += 1
        while b > a and text[b - 1] in _TRIM:
            b -= 1
        if b - a >= min_chars:
            spans.append((a, b))
        if m is not None:
            start = m.end()
    if len(spans) < 2:
        return []
    if len(spans) > max_intents:
        # Keep the longest clauses (most content), in their original order.
        spans = sorted(sorted(spans, key=lambda s: s[0] - s[1])[:max_intents])
    return spans


def split_intents(text: str, *, min_chars: int = 12, max_intents: int = 8) -> list[str]:
    """The clauses of ``text`` that may each need a tool; empty for a one-clause request."""
    return [text[a:b] for a, b in intent_spans(text, min_chars=min_chars, max_intents=max_intents)]


def named_files(text: str) -> list[tuple[str, bool]]:
    """(extension, is a destination) of each file ``text`` names by its path (``/dir/name.ext``,
    ``~/name.ext``), in order, without repeats. A path is a destination when its clause has a
    verb that makes or writes something ("save it to …", "write a report at …"), else a source
    ("read the report at …")."""
    clauses = split_intents(text, min_chars=1) or [text]
    out: list[tuple[str, bool]] = []
    for c in clauses:
        paths = [m.group(0) for m in _FILE_PATH.finditer(c)]
        writes = bool(paths) and "create" in query_actions(c)
        for path in paths:
            item = (path.rsplit(".", 1)[1].lower(), writes)
            if item not in out:
                out.append(item)
    return out


def names_destination(text: str) -> bool:
    """True when a clause of ``text`` names a file it writes (see :func:`named_files`)."""
    return any(dest for _, dest in named_files(text))

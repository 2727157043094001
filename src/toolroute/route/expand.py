"""Implied steps, learned from the catalog's own structure (no query, no benchmark answer).

A request names its goal ("park near the Forbidden City", "train tickets Beijing → Shanghai
next Wednesday"), not the steps its tools need first: ``find_parking_facilities`` takes a
``latitude``, which ``geocode_address`` on the same server produces; ``get-tickets`` takes a
``date`` and station codes, which ``get-current-date`` and ``get-station-code-of-citys``
return; ``add_paragraph`` edits the document ``create_document`` made. Two relations, read
from names, descriptions and input schemas:

- **producer**: tool A on the same server *mentions* a required parameter of tool B (its
  words appear in A's name or description) and does not itself require it — A is how an
  agent gets B's argument;
- **creator**: A's name verb makes or opens something (create, new, open, load, start,
  navigate …) whose noun B's name or description mentions, and B does not.

At query time the top-ranked tools pull their providers up to just below themselves
(:func:`expand`): a provider's score becomes at least ``weight ×`` the best score among the
tools it serves in the top ``pool``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from toolroute.catalog.models import Tool
from toolroute.index.document import humanise, tokenise

__all__ = ["CREATORS", "ProviderGraph", "expand", "provider_graph"]

ProviderGraph = tuple[npt.NDArray[np.int32], npt.NDArray[np.int32]]
"""(provider rows, served rows): tool ``providers[i]`` serves tool ``served[i]``."""

CREATORS = frozenset(
    {
        "create",
        "new",
        "open",
        "load",
        "start",
        "init",
        "initialize",
        "launch",
        "navigate",
        "connect",
        "login",
        "begin",
        "make",
    }
)
"""Name verbs that make or open something (the **creator** relation): a tool whose name starts
with one provides for the tools that work on what it made."""
# Words that name no concept on their own (parameter-name glue, units, articles).
_STOP = frozenset(
    {
        "a",
        "an",
        "the",
        "of",
        "to",
        "in",
        "on",
        "for",
        "by",
        "and",
        "or",
        "from",
        "with",
        "at",
        "is",
        "id",
        "ids",
        "name",
        "names",
        "type",
        "value",
        "values",
        "data",
        "list",
        "num",
        "number",
        "max",
        "min",
        "limit",
        "page",
        "size",
        "mode",
        "options",
        "option",
        "format",
        "text",
        "string",
        "query",
        "key",
        "index",
        "count",
        "offset",
        "y",
        "x",
        "s",
        "param",
        "params",
        "args",
        "input",
        "output",
        "info",
        "get",
        "set",
        "new",
        "use",
    }
)


def _required(tool: Tool) -> list[str]:
    schema: Mapping[str, Any] = tool.input_schema if isinstance(tool.input_schema, Mapping) else {}
    req = schema.get("required")
    return [str(r) for r in req] if isinstance(req, list) else []


def _concept(words: Sequence[str]) -> frozenset[str]:
    return frozenset(w for w in words if w not in _STOP and len(w) > 1 and not w.isdigit())


def _holding(postings: Mapping[str, set[int]], words: frozenset[str]) -> set[int]:
    """The tools holding every one of ``words`` (not empty), from their postings."""
    sets = sorted((postings.get(w, set()) for w in words), key=len)
    return set.intersection(*sets)


def _graph(tools: Sequence[Tool]) -> ProviderGraph:
    by_server: dict[str, list[int]] = {}
    for i, t in enumerate(tools):
        by_server.setdefault(t.server, []).append(i)
    names = [humanise(t.name).split() for t in tools]
    vocab = [frozenset(tokenise(f"{t.name} {t.description}")) for t in tools]
    required = [[c for r in _required(t) if (c := _concept(humanise(r).split()))] for t in tools]
    req_words = [frozenset().union(*r) if r else frozenset() for r in required]
    makes_something = [bool(n) and n[0] in CREATORS for n in names]
    prov: list[int] = []
    served: list[int] = []
    for rows in by_server.values():
        if len(rows) < 2:
            continue
        # Which of the server's tools hold a word (in name or description): the tools whose
        # vocabulary holds a whole concept are the intersection of its words' postings, so a
        # server of n tools costs what its relations cost, not n² pairs (a 10,000-tool server).
        postings: dict[str, set[int]] = {}
        for a in rows:
            for w in vocab[a]:
                postings.setdefault(w, set()).add(a)

        providers: dict[int, set[int]] = {}
        for b in rows:  # producer: a mentions a concept b requires, and does not require it
            for c in required[b]:
                for a in _holding(postings, c):
                    if a != b and not c <= req_words[a]:
                        providers.setdefault(b, set()).add(a)
        for a in rows:  # creator: a's name verb makes the thing b mentions; b makes nothing
            obj = _concept(names[a][1:]) if makes_something[a] else frozenset()
            if not obj:
                continue
            for b in _holding(postings, obj):
                if b != a and not makes_something[b]:
                    providers.setdefault(b, set()).add(a)
        for b in rows:  # in the order of the pairs: served, then provider, as listed
            for a in sorted(providers.get(b, ())):
                prov.append(a)
                served.append(b)
    return np.asarray(prov, dtype=np.int32), np.asarray(served, dtype=np.int32)


def provider_graph(tools: Sequence[Tool]) -> ProviderGraph:
    """The provider relation of ``tools`` (computed each call: an index keeps its own in
    ``route/precompute.py``, saved with its snapshot)."""
    return _graph(tools)


def expand(
    scores: npt.NDArray[np.float32], graph: ProviderGraph, pool: int, weight: float
) -> npt.NDArray[np.float32]:
    """Lift each provider of a top-``pool`` tool to ``weight ×`` that tool's score (if higher)."""
    prov, served = graph
    if not prov.size or pool < 1:
        return scores
    finite = np.isfinite(scores)
    k = min(pool, int(finite.sum()))
    if k == 0:
        return scores
    top = np.argpartition(-np.where(finite, scores, -np.inf), k - 1)[:k]
    in_top = np.zeros(scores.shape[0], dtype=bool)
    in_top[top] = True
    sel = in_top[served] & finite[prov]
    if not sel.any():
        return scores
    lift = np.full(scores.shape[0], -np.inf, dtype=np.float32)
    np.maximum.at(lift, prov[sel], weight * scores[served[sel]])
    out: npt.NDArray[np.float32] = np.maximum(scores, lift).astype(np.float32)
    return out

"""The signals of the abstention check ("no tool fits", route/abstain.py): what one request and
the strategy's scores say about whether some returned tool fits, each a number the model
(route/abstain_model.py) reads; a request is read only for the signals its model uses.

- ``cos1``, ``cos_z``, ``cos_margin``: the best dense cosine, how far it stands above the
  catalog's mean in standard deviations, and its lead over the fifth best;
- ``intent_min``: the weakest sub-intent's best cosine (every step of a request must be
  served, and a stray clause is often what no server does);
- ``server1``: the best server profile's cosine;
- ``lex_cov1``, ``lex_cov5``: the share (IDF-weighted) of the request's content words that
  the first tool's document, or the top five's, contain: "buy 10 shares" near a stock-price
  server has *buy* in none of them;
- ``vocab_cov``: the share of the request's content words the catalog knows at all;
- ``action_ok``: the request's action class (route/action.py) matches the first tool's
  verb (1), contradicts it (0), or either is unknown (0.5);
- ``verb_ok``: the request's leading verb (after "please", "can you", "I want to" …) is
  in the top tools' documents or matches the first tool's action class (1), is not (0), or
  the request opens with a question word (0.5): "*buy* shares", "*push* my commits" beside
  servers that only read;
- ``verb_named``: the same verb is a word of a top tool's *name*, or its action class is
  a top tool's (tool names are verb-first: a server whose names say ``get`` and ``search``
  does not *buy* or *book*); 0.5 for a question;
- ``chat_gap``: how much closer the request is to requests that need no tool at all (a
  rewrite, a greeting, an opinion; :data:`NO_TOOL_NEEDS`) than to the best tool;
- ``op_server``, ``op_top``: the operation the request asks for (the verbs its clauses open
  with, route/operation.py) is done by the best tool's server (1), or by the server of any of
  the top five tools; 0 when not, 0.5 when the request only asks for information;
- ``server_gap``, ``server_share``: the strategy's lead of the best server over the next
  (each server's best tool score) and the share of the top five tools from the best tool's
  server: a request one server owns against one several half-match;
- ``oos_gap``: how much closer the request is to known out-of-scope requests (the model's
  ``requests``, those it was trained on: far from every catalog, near one, or needing no
  tool) than to the best tool: the mean cosine of the three nearest, less ``cos1``;
- ``op_named``, ``op_named_top``: as ``op_server`` and ``op_top``, from the tools' *names*
  alone and the verb itself (no action class): the server says it does exactly that;
- ``flat1``: the best cosine to a tool's plain "server: name: description" text;
- ``verb_sim``: how close the request's first verb comes to a verb of the top servers' tool
  names (cosine of the two words' vectors: "reply" meets "comment", "merge" meets only
  "get" and "list"); 1 when the request asks for information.
- ``log_tools``: log10 of the catalog's tool count: what the other signals mean depends on it
  (a request's best cosine in a box of three tools is not its best among thousands), so a model
  fitted on big catalogs and small toolboxes can tell the two apart.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from toolroute.embed.base import Matrix
from toolroute.index.build import ToolIndex
from toolroute.index.document import humanise, tokenise
from toolroute.route.action import query_actions
from toolroute.route.operation import (
    LEAD,
    QUESTION,
    is_verb,
    request_verbs,
    server_does,
    server_names,
)
from toolroute.route.precompute import index_actions
from toolroute.route.query import QueryContext, Scores

__all__ = ["FEATURES", "NEAREST_REQUESTS", "NO_TOOL_NEEDS", "Evidence", "name_verbs", "signals"]

FEATURES: tuple[str, ...] = (
    "cos1",
    "cos_z",
    "cos_margin",
    "intent_min",
    "server1",
    "lex_cov1",
    "lex_cov5",
    "vocab_cov",
    "action_ok",
    "verb_ok",
    "chat_gap",
    "verb_named",
    "op_server",
    "op_top",
    "server_gap",
    "server_share",
    "oos_gap",
    "op_named",
    "op_named_top",
    "flat1",
    "verb_sim",
    "log_tools",
)

NO_TOOL_NEEDS: tuple[str, ...] = (
    # what an assistant answers from the conversation alone: general English, no benchmark's
    # requests (they are the test)
    "rewrite this sentence to sound more polite",
    "fix the grammar and spelling of my text",
    "make this paragraph shorter",
    "write a short poem",
    "tell me a joke",
    "hello, how are you?",
    "thank you, that is all",
    "what do you think about this?",
    "give me some advice and encouragement",
    "help me brainstorm ideas",
    "summarize what we discussed",
    "explain this in simple words",
)

_STOPWORDS = (
    # function words and politeness: they say nothing about which tool fits
    "a an the and or but if of to in on at by for with from into onto about as is are was "
    "were be been being am do does did doing have has had i me my mine we us our you your it "
    "its this that these those there here what which who whom whose when where why how can "
    "could would should will shall may might must please want need like just also some any "
    "all each every no not so than then too very much more most get give make let use help "
    "tell show find me up out over again now right"
)
_STOP = frozenset(_STOPWORDS.split())
_TOP = 5
_SERVERS = 50
"""The top this many tools give each server's best score (``server_gap``) and the nearest
servers of a "no tool fits" answer."""
NEAREST_REQUESTS = 3
_POOL = 256
"""Sub-intents are matched against the strategy's top this many (multi already lifted the
tools an intent matches into them): one small product, not one per catalog row."""


def _content_terms(text: str) -> list[str]:
    return list(dict.fromkeys(t for t in tokenise(text) if t not in _STOP and len(t) > 1))


def _holds(docs: npt.NDArray[np.int64], rows: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    """Which ``rows`` are in ``docs`` (a posting list, ascending)."""
    at = np.searchsorted(docs, rows).clip(max=max(docs.size - 1, 0))
    out: npt.NDArray[np.bool_] = docs[at] == rows if docs.size else np.zeros(rows.size, bool)
    return out


def _leading_verb(text: str) -> str | None:
    """The request's first word after politeness and auxiliaries; None for a question."""
    verb = next((t for t in tokenise(text) if t not in LEAD), None)
    return None if verb is None or verb in QUESTION else verb


def _no_tool_vectors(ix: ToolIndex, q: QueryContext) -> npt.NDArray[np.float32] | None:
    embed = q.embed
    if embed is None:
        return None
    vecs: npt.NDArray[np.float32] = ix.derived.memo(
        ("abstain-no-tool", ix.model_id), lambda: np.asarray(embed(list(NO_TOOL_NEEDS)))
    )
    return vecs


class Evidence:
    """What the signals of one request share, each computed on first use: a model reads only
    its own features, and the rest cost nothing."""

    def __init__(
        self, ix: ToolIndex, q: QueryContext, scores: Scores, requests: Matrix | None
    ) -> None:
        self.ix, self.q, self.requests = ix, q, requests
        self.pool = _best(scores, np.flatnonzero(np.isfinite(scores)), _POOL)
        self.top = self.pool[:_TOP]
        self.scores = scores
        self._memo: dict[str, Any] = {}

    def signals(self, features: tuple[str, ...]) -> dict[str, float]:
        """``features`` of this request, in their order."""
        return {f: float(_SIGNALS[f](self)) for f in features}

    def nearest_servers(self, n: int) -> tuple[str, ...]:
        """The ``n`` servers of the best tools, best first."""
        servers: list[int] = self.get("servers")[0]
        return tuple(self.ix.server_ids[s] for s in servers[:n])

    def get(self, name: str) -> Any:
        hit = self._memo.get(name)
        if hit is None:
            hit = self._memo[name] = getattr(self, "_" + name)()
        return hit

    def _dense(self) -> tuple[float, float, float]:
        """(cos1, cos_z, cos_margin) from the strategy's dense cosines when it kept them."""
        q, ix = self.q, self.ix
        if not q.vector.size or not ix.size:
            return 0.0, 0.0, 0.0
        kept = q.memo.get("dense")
        if kept is not None and kept[0] is q.vector and len(kept[1]) == ix.size:
            dense = kept[1]
        else:
            dense = ix.tool_vectors @ q.vector
        k = min(_TOP, dense.size)
        best = np.sort(np.partition(-dense, k - 1)[:k])  # the k best, negated, best first
        cos1 = float(-best[0])
        cos_z = (cos1 - float(dense.mean())) / (float(dense.std()) or 1.0)
        return cos1, cos_z, cos1 + float(best[-1])

    def _coverage(self) -> tuple[float, float, float]:
        """(first tool, top tools, catalog) IDF-weighted shares of the request's content words
        their documents hold; a word the catalog lacks weighs as its rarest word."""
        terms, top, ix = _content_terms(self.q.text), self.top, self.ix
        if not terms or not top.size:
            return 0.0, 0.0, 0.0
        n = max(ix.size, 1)
        w = np.empty(len(terms))
        in1 = np.zeros(len(terms), bool)
        in5 = np.zeros(len(terms), bool)
        known = np.zeros(len(terms), bool)
        for i, t in enumerate(terms):
            docs = ix.tool_lexical.postings(t)
            w[i] = math.log(1.0 + (n - docs.size + 0.5) / (docs.size + 0.5))
            held = _holds(docs, top)
            in1[i], in5[i], known[i] = held[0], held.any(), docs.size > 0
        total = float(w.sum()) or 1.0
        return (
            float(w[in1].sum()) / total,
            float(w[in5].sum()) / total,
            float(w[known].sum()) / total,
        )

    def _servers(self) -> tuple[list[int], list[float]]:
        """The servers of the top tools, best first, each with its best tool's score."""
        rows = self.pool[:_SERVERS]
        servers, first = np.unique(self.ix.server_of[rows], return_index=True)
        order = np.argsort(first)
        return servers[order].tolist(), self.scores[rows[first[order]]].astype(float).tolist()

    def _actions(self) -> tuple[npt.NDArray[np.int8], tuple[str, ...]]:
        return index_actions(self.ix)

    def _verbs(self) -> tuple[str, ...]:
        return request_verbs(self.q.text)


def _cos1(e: Evidence) -> float:
    cos1: float = e.get("dense")[0]
    return cos1


def _intent_min(e: Evidence) -> float:
    cos1, q = _cos1(e), e.q
    if q.intent_vectors is None or not len(q.intent_vectors) or not e.pool.size:
        return cos1
    per_intent = (e.ix.tool_vectors[e.pool] @ np.asarray(q.intent_vectors).T).max(axis=0)
    return min(cos1, float(per_intent.min()))


def _server1(e: Evidence) -> float:
    if not e.q.vector.size or not e.ix.size:
        return 0.0
    return float((e.ix.server_vectors @ e.q.vector).max())


def _action_ok(e: Evidence) -> float:
    asked = query_actions(e.q.text)
    if not asked or not e.top.size:
        return 0.5
    acts, classes = e.get("actions")
    own = int(acts[e.top[0]])
    return 0.5 if own < 0 else 1.0 if classes[own] in asked else 0.0


def _verb_ok(e: Evidence) -> float:
    """1 when the request's leading verb is in a top tool's document or names the first
    tool's action class, 0 when neither, 0.5 for a question (module docstring)."""
    verb, top, ix = _leading_verb(e.q.text), e.top, e.ix
    if verb is None or not top.size:
        return 0.5
    if _holds(ix.tool_lexical.postings(verb), top).any():
        return 1.0
    acts, classes = e.get("actions")
    own = int(acts[top[0]])
    return 1.0 if own >= 0 and classes[own] in query_actions(verb) else 0.0


def _verb_named(e: Evidence) -> float:
    """1 when the leading verb is a word of a top tool's name or shares its action class,
    0 when not, 0.5 for a question (module docstring)."""
    verb, ix = _leading_verb(e.q.text), e.ix
    if verb is None or not e.top.size:
        return 0.5
    acts, classes = e.get("actions")
    asked = query_actions(verb)
    for row in e.top:
        words = humanise(ix.tools[int(row)].name).split()
        own = int(acts[int(row)])
        if verb in words or verb.rstrip("s") in words or (own >= 0 and classes[own] in asked):
            return 1.0
    return 0.0


def _chat_gap(e: Evidence) -> float:
    chat = _no_tool_vectors(e.ix, e.q)
    if chat is None or not e.q.vector.size:
        return 0.0
    return float((chat @ e.q.vector).max()) - _cos1(e)


def _op_best(e: Evidence, does: Any) -> float:
    """1 when ``does(ix, server, verb)`` for the best tool's server and the request's first
    verb, 0 when not, 0.5 when the request names no operation (``op_server``, ``op_named``)."""
    verbs = e.get("verbs")
    if not verbs or not e.top.size:
        return 0.5
    return 1.0 if does(e.ix, int(e.ix.server_of[e.top[0]]), verbs[0]) else 0.0


def _op_any(e: Evidence, does: Any) -> float:
    """The same for any verb of the request and any server of the top tools (``op_top``,
    ``op_named_top``)."""
    verbs = e.get("verbs")
    if not verbs or not e.top.size:
        return 0.5
    servers = dict.fromkeys(int(s) for s in e.ix.server_of[e.top])
    return 1.0 if any(does(e.ix, s, v) for v in verbs for s in servers) else 0.0


def _flat1(e: Evidence) -> float:
    """The best cosine to a tool's plain text (server, name, description), beside ``cos1``'s
    weighted document: short requests meet short texts. Taken over the strategy's pool (its
    best tools), not the catalog: a cost that does not grow with the catalog, for the same
    value as the catalog's maximum on every request measured (benchmarks/abstain_pool.py)."""
    if not e.q.vector.size or not e.pool.size:
        return 0.0
    return float((e.ix.flat_vectors[e.pool] @ e.q.vector).max())


def name_verbs(ix: ToolIndex, embed: Any) -> tuple[list[list[int]], Matrix, dict[str, int]]:
    """Per server, the rows of its tool names' verbs (words English uses as a verb's base
    form: ``merge``, ``comment``, ``get``) in one matrix of their vectors, and each verb's
    row; embedded with ``embed`` once per index (the router passes its store's vector cache
    when it builds the index, so a restart reads them back instead of embedding them
    again)."""

    def make() -> tuple[list[list[int]], Matrix, dict[str, int]]:
        ids: dict[str, int] = {}
        per: list[set[int]] = [set() for _ in ix.server_ids]
        for row, tool in enumerate(ix.tools):
            for w in humanise(tool.name).split():
                if is_verb(w):
                    per[int(ix.server_of[row])].add(ids.setdefault(w, len(ids)))
        dim = ix.tool_vectors.shape[1]
        vecs = np.asarray(embed(list(ids))) if ids else np.zeros((0, dim), np.float32)
        return [sorted(s) for s in per], vecs, ids

    made: tuple[list[list[int]], Matrix, dict[str, int]] = ix.derived.memo(
        ("abstain-name-verbs", ix.model_id), make
    )
    return made


def _verb_sim(e: Evidence) -> float:
    """How close the request's first verb comes to a verb of a tool name of the top tools'
    servers (cosine of the two words' vectors): ``reply`` meets ``comment`` (0.63), ``merge``
    meets only ``list`` and ``get`` (0.2); 1 when the request asks for information."""
    verbs, ix, q = e.get("verbs"), e.ix, e.q
    if not verbs or not e.top.size or q.embed is None:
        return 1.0
    per, vecs, ids = name_verbs(ix, q.embed)
    rows = sorted({r for s in dict.fromkeys(int(s) for s in ix.server_of[e.top]) for r in per[s]})
    if not rows:
        return 0.0
    # a verb some tool name holds has its vector already: only a new one is embedded
    known = ids.get(verbs[0])
    own = vecs[known] if known is not None else _verb_vector(verbs[0], ix.model_id, q.embed)
    return float((vecs[rows] @ own).max())


_VERB_VECTORS: dict[tuple[str, str], npt.NDArray[np.float32]] = {}


def _verb_vector(verb: str, model_id: str, embed: Any) -> npt.NDArray[np.float32]:
    """One verb's vector, kept per process (requests repeat a few hundred verbs)."""
    key = (model_id, verb)
    hit = _VERB_VECTORS.get(key)
    if hit is None:
        if len(_VERB_VECTORS) > 4096:
            _VERB_VECTORS.clear()
        hit = _VERB_VECTORS[key] = np.asarray(embed([verb]))[0]
    return hit


def _server_gap(e: Evidence) -> float:
    best: list[float] = e.get("servers")[1]
    if not best:
        return 0.0
    last = float(e.scores[e.pool[min(_SERVERS, e.pool.size) - 1]])
    return best[0] - (best[1] if len(best) > 1 else last)


def _server_share(e: Evidence) -> float:
    if not e.top.size:
        return 0.0
    return float(np.mean(e.ix.server_of[e.top] == e.ix.server_of[e.top[0]]))


def _oos_gap(e: Evidence) -> float:
    if e.requests is None or not e.q.vector.size:
        return 0.0
    sims = e.requests @ e.q.vector
    k = min(NEAREST_REQUESTS, sims.size)
    return float(np.partition(sims, sims.size - k)[sims.size - k :].mean()) - _cos1(e)


_SIGNALS: dict[str, Any] = {
    "cos1": _cos1,
    "cos_z": lambda e: float(e.get("dense")[1]),
    "cos_margin": lambda e: float(e.get("dense")[2]),
    "intent_min": _intent_min,
    "server1": _server1,
    "lex_cov1": lambda e: float(e.get("coverage")[0]),
    "lex_cov5": lambda e: float(e.get("coverage")[1]),
    "vocab_cov": lambda e: float(e.get("coverage")[2]),
    "action_ok": _action_ok,
    "verb_ok": _verb_ok,
    "chat_gap": _chat_gap,
    "verb_named": _verb_named,
    "op_server": lambda e: _op_best(e, server_does),
    "op_top": lambda e: _op_any(e, server_does),
    "server_gap": _server_gap,
    "server_share": _server_share,
    "oos_gap": _oos_gap,
    "op_named": lambda e: _op_best(e, server_names),
    "op_named_top": lambda e: _op_any(e, server_names),
    "flat1": _flat1,
    "verb_sim": _verb_sim,
    "log_tools": lambda e: math.log10(max(1, e.ix.size)),
}


def signals(
    ix: ToolIndex,
    q: QueryContext,
    scores: Scores,
    requests: Matrix | None = None,
    features: tuple[str, ...] = FEATURES,
) -> dict[str, float]:
    """``features`` (:data:`FEATURES` order) for one request and the strategy's ``scores``
    (module docstring); ``oos_gap`` reads ``requests`` (0 without them)."""
    return Evidence(ix, q, scores, requests).signals(features)


def _best(scores: Scores, finite: npt.NDArray[np.int64], n: int) -> npt.NDArray[np.int64]:
    """The ``n`` best of the ``finite`` rows, best first (ties in row order)."""
    if finite.size > n:
        finite = finite[np.argpartition(-scores[finite], n - 1)[:n]]
    out: npt.NDArray[np.int64] = finite[np.lexsort((finite, -scores[finite]))]
    return out

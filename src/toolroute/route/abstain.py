"""Abstention: "no tool fits", said when the evidence says no tool serves the request.

A ranking always has a first tool, so a router that only ranks hands an agent five plausible
strangers for a need none of its servers can meet ("pay my electricity bill" → a calculator),
and the agent calls a wrong tool or stops trusting the search. No single score separates the
two kinds of request: the best cosine of a request no tool serves overlaps the best cosine of
one a tool serves, so a similarity threshold trades recall away. This stage combines several
signals in a small model of boosted trees (a near request is one whose topic a server owns
*and* whose operation none of its tools names: an "and" a weighted sum cannot draw), whose
trees and thresholds ship as JSON (``toolroute/data/abstain.json``, with the vectors of the
out-of-scope requests it was trained on beside it; trained by ``benchmarks/abstain_train.py``
on the out-of-scope sets under ``benchmarks/out_of_scope/`` beside the in-scope queries; a
logistic regression in the same file format still loads):

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

The model gives p, the probability that some returned tool fits; the router answers "no tool
fits" when p falls below the threshold of the mode: ``off`` never, ``default`` at the
threshold that cost at most a small share of in-scope recall on every training set,
``strict`` at a higher one (more refusals, more recall lost). An answer between the two is
*doubtful*: the tools go out with a caution to read them before calling one. A request that
names a tool (route/exact.py) is never refused.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from toolroute.embed.base import Matrix
from toolroute.errors import ConfigError
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

__all__ = [
    "ABSTAIN_MODES",
    "FEATURES",
    "NO_TOOL_NEEDS",
    "AbstainMode",
    "AbstainModel",
    "Tree",
    "Verdict",
    "decide",
    "default_model",
    "load_model",
    "name_verbs",
    "signals",
]

AbstainMode = Literal["off", "default", "strict"]
ABSTAIN_MODES: tuple[AbstainMode, ...] = ("off", "default", "strict")

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
_NEAREST_REQUESTS = 3
_POOL = 256
"""Sub-intents are matched against the strategy's top this many (multi already lifted the
tools an intent matches into them): one small product, not one per catalog row."""


@dataclass(frozen=True, slots=True)
class Tree:
    """One regression tree of a boosted model: node arrays, node 0 the root; a split sends
    ``x[feature] <= threshold`` left (a NaN where ``missing_left`` says)."""

    feature: tuple[int, ...]
    threshold: tuple[float, ...]
    left: tuple[int, ...]
    right: tuple[int, ...]
    value: tuple[float, ...]
    leaf: tuple[bool, ...]
    missing_left: tuple[bool, ...]

    def __call__(self, x: list[float]) -> float:
        node = 0
        while not self.leaf[node]:
            v = x[self.feature[node]]
            go_left = self.missing_left[node] if v != v else v <= self.threshold[node]
            node = self.left[node] if go_left else self.right[node]
        return self.value[node]

    def to_dict(self) -> dict[str, list[Any]]:
        return {k: list(getattr(self, k)) for k in self.__slots__}


@dataclass(frozen=True, slots=True)
class AbstainModel:
    """p that some returned tool fits, from :data:`FEATURES`: a logistic regression on the
    standardised signals, or (``trees``) gradient-boosted trees on the raw ones, whose logit
    is ``bias`` plus every tree's leaf; thresholds per mode on p."""

    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float
    thresholds: dict[str, float] = field(hash=False)
    """Mode → the p below which the router abstains."""
    embedder: str = ""
    """The embedding model (``model_id``) whose cosines the weights were fitted on: with
    another, the signals mean something else and the model is not applied ("" : any)."""
    trained_on: tuple[str, ...] = ()
    """The query sets the weights and thresholds were fitted on."""
    requests: Matrix | None = field(default=None, compare=False, repr=False)
    """(n, d) unit vectors of the out-of-scope requests ``oos_gap`` compares against."""
    requests_file: str = ""
    """Where :attr:`requests` are stored: a ``.npy`` file beside the model's JSON."""
    trees: tuple[Tree, ...] = field(default=(), compare=False, repr=False)
    """The boosted trees (empty: the logistic regression)."""

    def probability(self, x: npt.NDArray[np.float64]) -> float:
        """p that some returned tool fits, for one feature vector in :attr:`features` order."""
        if self.trees:
            row = [float(v) for v in x]
            logit = self.bias + sum(tree(row) for tree in self.trees)
        else:
            z = (np.asarray(x, dtype=np.float64) - np.asarray(self.mean)) / np.asarray(self.scale)
            logit = float(z @ np.asarray(self.weights)) + self.bias
        return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, logit))))

    def to_dict(self) -> dict[str, Any]:
        shape: dict[str, Any] = (
            {"format": 3, "trees": [t.to_dict() for t in self.trees]}
            if self.trees
            else {
                "format": 2,
                "mean": list(self.mean),
                "scale": list(self.scale),
                "weights": list(self.weights),
            }
        )
        return {
            **shape,
            "features": list(self.features),
            "bias": self.bias,
            "thresholds": dict(self.thresholds),
            "embedder": self.embedder,
            "trained_on": list(self.trained_on),
            **({"requests": self.requests_file} if self.requests_file else {}),
        }


def load_model(path: str | Path) -> AbstainModel:
    """An :class:`AbstainModel` from its JSON (a user's own model: a clear error if unusable)."""
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ConfigError(f"cannot read the abstention model {path}: {e}") from None
    return _model(raw, str(path), lambda name: Path(path).parent / name)


@lru_cache(maxsize=1)
def default_model() -> AbstainModel:
    """The shipped model (``toolroute/data/abstain.json`` and the request vectors beside it)."""
    data = resources.files("toolroute.data")
    text = data.joinpath("abstain.json").read_text("utf-8")
    return _model(json.loads(text), "toolroute/data/abstain.json", data.joinpath)


def _requests(opener: Any, name: str, where: str) -> Matrix:
    """The request vectors a model names (``.npy``, no pickle), as unit float32 rows."""
    try:
        with opener(name).open("rb") as f:
            vecs = np.asarray(np.load(f, allow_pickle=False), dtype=np.float32)
    except (OSError, ValueError) as e:
        raise ConfigError(f"{where}: cannot read its requests {name}: {e}") from None
    if vecs.ndim != 2 or not len(vecs):
        raise ConfigError(f"{where}: its requests {name} are not a matrix of vectors")
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    out: Matrix = (vecs / np.where(norms > 0, norms, 1.0)).astype(np.float32)
    return out


def _tree(raw: Any, n_features: int) -> Tree:
    tree = Tree(
        feature=tuple(int(v) for v in raw["feature"]),
        threshold=tuple(float(v) for v in raw["threshold"]),
        left=tuple(int(v) for v in raw["left"]),
        right=tuple(int(v) for v in raw["right"]),
        value=tuple(float(v) for v in raw["value"]),
        leaf=tuple(bool(v) for v in raw["leaf"]),
        missing_left=tuple(bool(v) for v in raw["missing_left"]),
    )
    n = len(tree.leaf)
    inner = [i for i in range(n) if not tree.leaf[i]]
    if (
        not n
        or any(
            len(col) != n
            for col in (tree.feature, tree.threshold, tree.left, tree.right, tree.value)
        )
        or any(
            not (
                0 <= tree.feature[i] < n_features and i < tree.left[i] < n and i < tree.right[i] < n
            )
            for i in inner
        )
    ):
        raise ValueError("a tree's nodes are inconsistent")
    return tree


def _model(raw: Any, where: str, opener: Any) -> AbstainModel:
    try:
        feats = tuple(str(f) for f in raw["features"])
        trees = tuple(_tree(t, len(feats)) for t in raw.get("trees", ()))
        model = AbstainModel(
            features=feats,
            mean=() if trees else tuple(float(v) for v in raw["mean"]),
            scale=() if trees else tuple(float(v) or 1.0 for v in raw["scale"]),
            weights=() if trees else tuple(float(v) for v in raw["weights"]),
            bias=float(raw["bias"]),
            thresholds={str(k): float(v) for k, v in raw["thresholds"].items()},
            embedder=str(raw.get("embedder", "")),
            trained_on=tuple(str(s) for s in raw.get("trained_on", ())),
            requests_file=str(raw.get("requests", "")),
            trees=trees,
        )
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise ConfigError(f"{where}: not an abstention model ({e!r})") from None
    if set(feats) - set(FEATURES) or not (
        model.trees or len(model.mean) == len(model.scale) == len(model.weights) == len(feats)
    ):
        raise ConfigError(f"{where}: its features do not match {', '.join(FEATURES)}")
    if model.requests_file:
        model = replace(model, requests=_requests(opener, model.requests_file, where))
    elif "oos_gap" in feats:
        raise ConfigError(f"{where}: it reads oos_gap but names no requests file")
    return model


@dataclass(frozen=True, slots=True)
class Verdict:
    """The abstention check of one request: whether some tool fits, and why; its
    :meth:`to_dict` is the "no tool fits" answer when none does."""

    fits: bool
    probability: float
    """p that some returned tool fits (the model's)."""
    threshold: float
    mode: AbstainMode
    nearest_servers: tuple[str, ...]
    """The servers closest to the request: where to look if it can be rephrased."""
    signals: dict[str, float]
    doubtful: bool = False
    """Answered, but below the threshold of the mode that refuses most (``strict``): the
    tools share the request's topic and may not do what it asks."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "no_tool_fits": True,
            "message": "no connected tool serves this request as stated",
            "nearest_servers": list(self.nearest_servers),
            "hint": "if a tool should serve it, rephrase the need as the action and its "
            "object (e.g. 'convert a docx file to pdf'), name the server or tool, or ask "
            "for the missing capability with request_capability; otherwise answer without "
            "a tool",
            "confidence": round(1.0 - self.probability, 3),
        }

    def caution(self) -> dict[str, Any]:
        """What an answer that is :attr:`doubtful` carries beside its tools."""
        return {
            "doubtful_fit": True,
            "message": "these tools match the request's topic but may not do what it asks",
            "hint": "read a candidate's description before calling it; if none does the "
            "operation asked, ask for the missing capability with request_capability or "
            "answer without a tool",
            "p_fits": round(self.probability, 3),
        }

    def explain(self) -> dict[str, Any]:
        """What ``route --explain`` shows: p, the mode's threshold and every signal."""
        return {
            "no_tool_fits": not self.fits,
            "doubtful": self.doubtful,
            "p_fits": round(self.probability, 4),
            "threshold": round(self.threshold, 4),
            "mode": self.mode,
            "signals": {k: round(v, 4) for k, v in self.signals.items()},
        }


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


class _Evidence:
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


def _cos1(e: _Evidence) -> float:
    cos1: float = e.get("dense")[0]
    return cos1


def _intent_min(e: _Evidence) -> float:
    cos1, q = _cos1(e), e.q
    if q.intent_vectors is None or not len(q.intent_vectors) or not e.pool.size:
        return cos1
    per_intent = (e.ix.tool_vectors[e.pool] @ np.asarray(q.intent_vectors).T).max(axis=0)
    return min(cos1, float(per_intent.min()))


def _server1(e: _Evidence) -> float:
    if not e.q.vector.size or not e.ix.size:
        return 0.0
    return float((e.ix.server_vectors @ e.q.vector).max())


def _action_ok(e: _Evidence) -> float:
    asked = query_actions(e.q.text)
    if not asked or not e.top.size:
        return 0.5
    acts, classes = e.get("actions")
    own = int(acts[e.top[0]])
    return 0.5 if own < 0 else 1.0 if classes[own] in asked else 0.0


def _verb_ok(e: _Evidence) -> float:
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


def _verb_named(e: _Evidence) -> float:
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


def _chat_gap(e: _Evidence) -> float:
    chat = _no_tool_vectors(e.ix, e.q)
    if chat is None or not e.q.vector.size:
        return 0.0
    return float((chat @ e.q.vector).max()) - _cos1(e)


def _op_best(e: _Evidence, does: Any) -> float:
    """1 when ``does(ix, server, verb)`` for the best tool's server and the request's first
    verb, 0 when not, 0.5 when the request names no operation (``op_server``, ``op_named``)."""
    verbs = e.get("verbs")
    if not verbs or not e.top.size:
        return 0.5
    return 1.0 if does(e.ix, int(e.ix.server_of[e.top[0]]), verbs[0]) else 0.0


def _op_any(e: _Evidence, does: Any) -> float:
    """The same for any verb of the request and any server of the top tools (``op_top``,
    ``op_named_top``)."""
    verbs = e.get("verbs")
    if not verbs or not e.top.size:
        return 0.5
    servers = dict.fromkeys(int(s) for s in e.ix.server_of[e.top])
    return 1.0 if any(does(e.ix, s, v) for v in verbs for s in servers) else 0.0


def _flat1(e: _Evidence) -> float:
    """The best cosine to a tool's plain text (server, name, description), beside ``cos1``'s
    weighted document: short requests meet short texts."""
    if not e.q.vector.size or not e.ix.size:
        return 0.0
    return float((e.ix.flat_vectors @ e.q.vector).max())


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


def _verb_sim(e: _Evidence) -> float:
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


def _server_gap(e: _Evidence) -> float:
    best: list[float] = e.get("servers")[1]
    if not best:
        return 0.0
    last = float(e.scores[e.pool[min(_SERVERS, e.pool.size) - 1]])
    return best[0] - (best[1] if len(best) > 1 else last)


def _server_share(e: _Evidence) -> float:
    if not e.top.size:
        return 0.0
    return float(np.mean(e.ix.server_of[e.top] == e.ix.server_of[e.top[0]]))


def _oos_gap(e: _Evidence) -> float:
    if e.requests is None or not e.q.vector.size:
        return 0.0
    sims = e.requests @ e.q.vector
    k = min(_NEAREST_REQUESTS, sims.size)
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
    e = _Evidence(ix, q, scores, requests)
    return {f: float(_SIGNALS[f](e)) for f in features}


def _best(scores: Scores, finite: npt.NDArray[np.int64], n: int) -> npt.NDArray[np.int64]:
    """The ``n`` best of the ``finite`` rows, best first (ties in row order)."""
    if finite.size > n:
        finite = finite[np.argpartition(-scores[finite], n - 1)[:n]]
    out: npt.NDArray[np.int64] = finite[np.lexsort((finite, -scores[finite]))]
    return out


def decide(
    ix: ToolIndex,
    q: QueryContext,
    scores: Scores,
    mode: AbstainMode,
    model: AbstainModel | None = None,
) -> Verdict | None:
    """The :class:`Verdict` of ``mode``'s threshold on this request (None: ``off``, or a
    model fitted on another embedder's cosines than the index's)."""
    if mode == "off" or not ix.size:
        return None
    model = model if model is not None else default_model()
    if model.embedder and model.embedder != ix.model_id:
        return None
    if mode not in model.thresholds:
        raise ConfigError(f"the abstention model has no threshold for mode {mode!r}")
    e = _Evidence(ix, q, scores, model.requests)
    sig = {f: float(_SIGNALS[f](e)) for f in model.features}
    p = model.probability(np.array([sig[f] for f in model.features]))
    threshold = model.thresholds[mode]
    servers, _ = e.get("servers")
    nearest = tuple(ix.server_ids[s] for s in servers[:3])
    fits = p >= threshold
    doubtful = fits and p < max(model.thresholds.values())
    return Verdict(fits, p, threshold, mode, nearest, sig, doubtful)

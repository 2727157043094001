"""Abstention: "no tool fits", said when the evidence says no tool serves the request.

A ranking always has a first tool, so a router that only ranks hands an agent five plausible
strangers for a need none of its servers can meet ("pay my electricity bill" → a calculator),
and the agent calls a wrong tool or stops trusting the search. No single score separates the
two kinds of request: the best cosine of a request no tool serves overlaps the best cosine of
one a tool serves, so a similarity threshold trades recall away. This stage combines several
signals in a small logistic regression, whose weights and thresholds ship as JSON
(``toolroute/data/abstain.json``, trained by ``benchmarks/abstain_train.py`` on the
out-of-scope sets under ``benchmarks/out_of_scope/`` beside the in-scope queries):

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
  rewrite, a greeting, an opinion; :data:`NO_TOOL_NEEDS`) than to the best tool.

The model gives p, the probability that some returned tool fits; the router answers "no tool
fits" when p falls below the threshold of the mode: ``off`` never, ``default`` at the
threshold that cost at most a small share of in-scope recall on every training set,
``strict`` at a higher one (more refusals, more recall lost). A request that names a tool
(route/exact.py) is never refused.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from toolroute.errors import ConfigError
from toolroute.index.build import ToolIndex
from toolroute.index.document import humanise, tokenise
from toolroute.route.action import query_actions
from toolroute.route.precompute import index_actions
from toolroute.route.query import QueryContext, Scores

__all__ = [
    "ABSTAIN_MODES",
    "FEATURES",
    "NO_TOOL_NEEDS",
    "AbstainMode",
    "AbstainModel",
    "Verdict",
    "decide",
    "default_model",
    "load_model",
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
_LEADWORDS = (
    # what comes before a request's verb: politeness, the asker, auxiliaries
    "please kindly can could would will you i id want wanna need to like help me hey hi ok "
    "okay so just let lets us go ahead and now also then first quickly"
)
_LEAD = frozenset(_LEADWORDS.split())
_QUESTIONWORDS = (
    "what whats which how when where who whos whose why is are does do did was were any "
    "there should"
)
_QUESTION = frozenset(_QUESTIONWORDS.split())
_TOP = 5
_POOL = 256
"""Sub-intents are matched against the strategy's top this many (multi already lifted the
tools an intent matches into them): one small product, not one per catalog row."""


@dataclass(frozen=True, slots=True)
class AbstainModel:
    """Logistic regression over :data:`FEATURES`, standardised; thresholds per mode on p."""

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

    def probability(self, x: npt.NDArray[np.float64]) -> float:
        """p that some returned tool fits, for one feature vector in :attr:`features` order."""
        z = (np.asarray(x, dtype=np.float64) - np.asarray(self.mean)) / np.asarray(self.scale)
        logit = float(z @ np.asarray(self.weights)) + self.bias
        return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, logit))))

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": 1,
            "features": list(self.features),
            "mean": list(self.mean),
            "scale": list(self.scale),
            "weights": list(self.weights),
            "bias": self.bias,
            "thresholds": dict(self.thresholds),
            "embedder": self.embedder,
            "trained_on": list(self.trained_on),
        }


def load_model(path: str | Path) -> AbstainModel:
    """An :class:`AbstainModel` from its JSON (a user's own model: a clear error if unusable)."""
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ConfigError(f"cannot read the abstention model {path}: {e}") from None
    return _model(raw, str(path))


@lru_cache(maxsize=1)
def default_model() -> AbstainModel:
    """The shipped model (``toolroute/data/abstain.json``)."""
    text = resources.files("toolroute.data").joinpath("abstain.json").read_text("utf-8")
    return _model(json.loads(text), "toolroute/data/abstain.json")


def _model(raw: Any, where: str) -> AbstainModel:
    try:
        feats = tuple(str(f) for f in raw["features"])
        model = AbstainModel(
            features=feats,
            mean=tuple(float(v) for v in raw["mean"]),
            scale=tuple(float(v) or 1.0 for v in raw["scale"]),
            weights=tuple(float(v) for v in raw["weights"]),
            bias=float(raw["bias"]),
            thresholds={str(k): float(v) for k, v in raw["thresholds"].items()},
            embedder=str(raw.get("embedder", "")),
            trained_on=tuple(str(s) for s in raw.get("trained_on", ())),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise ConfigError(f"{where}: not an abstention model ({e!r})") from None
    if set(feats) - set(FEATURES) or not (
        len(model.mean) == len(model.scale) == len(model.weights) == len(feats)
    ):
        raise ConfigError(f"{where}: its features do not match {', '.join(FEATURES)}")
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

    def explain(self) -> dict[str, Any]:
        """What ``route --explain`` shows: p, the mode's threshold and every signal."""
        return {
            "no_tool_fits": not self.fits,
            "p_fits": round(self.probability, 4),
            "threshold": round(self.threshold, 4),
            "mode": self.mode,
            "signals": {k: round(v, 4) for k, v in self.signals.items()},
        }


def _content_terms(text: str) -> list[str]:
    return list(dict.fromkeys(t for t in tokenise(text) if t not in _STOP and len(t) > 1))


def _coverage(
    ix: ToolIndex, terms: list[str], top: npt.NDArray[np.int64]
) -> tuple[float, float, float]:
    """(first tool, top tools, catalog) IDF-weighted shares of ``terms`` their documents
    hold; a word the catalog lacks weighs as its rarest word."""
    if not terms or not top.size:
        return 0.0, 0.0, 0.0
    n = max(ix.size, 1)
    weights, in1, in5, known = [], [], [], []
    for t in terms:
        docs = ix.tool_lexical.postings(t)
        df = int(docs.size)
        weights.append(math.log(1.0 + (n - df + 0.5) / (df + 0.5)))
        held = np.isin(top, docs)
        in1.append(bool(held[0]))
        in5.append(bool(held.any()))
        known.append(df > 0)
    w = np.asarray(weights)
    total = float(w.sum()) or 1.0
    return (
        float(w[np.asarray(in1)].sum()) / total,
        float(w[np.asarray(in5)].sum()) / total,
        float(w[np.asarray(known)].sum()) / total,
    )


def _verb_ok(ix: ToolIndex, text: str, top: npt.NDArray[np.int64]) -> float:
    """1 when the request's leading verb is in a top tool's document or names the first
    tool's action class, 0 when neither, 0.5 for a question (module docstring)."""
    verb = _leading_verb(text)
    if verb is None or not top.size:
        return 0.5
    if np.isin(top, ix.tool_lexical.postings(verb)).any():
        return 1.0
    asked = query_actions(verb)
    acts, classes = index_actions(ix)
    own = int(acts[top[0]])
    return 1.0 if own >= 0 and classes[own] in asked else 0.0


def _leading_verb(text: str) -> str | None:
    """The request's first word after politeness and auxiliaries; None for a question."""
    verb = next((t for t in tokenise(text) if t not in _LEAD), None)
    return None if verb is None or verb in _QUESTION else verb


def _verb_named(ix: ToolIndex, text: str, top: npt.NDArray[np.int64]) -> float:
    """1 when the leading verb is a word of a top tool's name or shares its action class,
    0 when not, 0.5 for a question (module docstring)."""
    verb = _leading_verb(text)
    if verb is None or not top.size:
        return 0.5
    acts, classes = index_actions(ix)
    asked = query_actions(verb)
    for row in top:
        words = humanise(ix.tools[int(row)].name).split()
        own = int(acts[int(row)])
        if verb in words or verb.rstrip("s") in words or (own >= 0 and classes[own] in asked):
            return 1.0
    return 0.0


def _no_tool_vectors(ix: ToolIndex, q: QueryContext) -> npt.NDArray[np.float32] | None:
    embed = q.embed
    if embed is None:
        return None
    vecs: npt.NDArray[np.float32] = ix.derived.memo(
        ("abstain-no-tool", ix.model_id), lambda: np.asarray(embed(list(NO_TOOL_NEEDS)))
    )
    return vecs


def signals(ix: ToolIndex, q: QueryContext, scores: Scores) -> dict[str, float]:
    """:data:`FEATURES` for one request and the strategy's ``scores`` (module docstring)."""
    finite = np.flatnonzero(np.isfinite(scores))
    order = _best(scores, finite, _TOP)
    dense = ix.tool_vectors @ q.vector if q.vector.size else np.zeros(0, np.float32)
    if dense.size:
        k = min(_TOP, dense.size)
        best = np.sort(np.partition(-dense, k - 1)[:k])  # the k best, negated, best first
        cos1 = float(-best[0])
        margin = cos1 + float(best[-1])
        cos_z = (cos1 - float(dense.mean())) / (float(dense.std()) or 1.0)
    else:
        cos1 = margin = cos_z = 0.0
    intent_min = cos1
    if q.intent_vectors is not None and len(q.intent_vectors) and finite.size:
        pool = _best(scores, finite, _POOL)
        per_intent = (ix.tool_vectors[pool] @ np.asarray(q.intent_vectors).T).max(axis=0)
        intent_min = min(cos1, float(per_intent.min()))
    server1 = float((ix.server_vectors @ q.vector).max()) if q.vector.size and ix.size else 0.0
    cov1, cov5, vocab = _coverage(ix, _content_terms(q.text), order)
    asked = query_actions(q.text)
    action_ok = 0.5
    if asked and order.size:
        acts, classes = index_actions(ix)
        own = int(acts[order[0]])
        if own >= 0:
            action_ok = 1.0 if classes[own] in asked else 0.0
    verb_ok = _verb_ok(ix, q.text, order)
    chat = _no_tool_vectors(ix, q)
    chat_gap = float((chat @ q.vector).max()) - cos1 if chat is not None and q.vector.size else 0.0
    return {
        "cos1": cos1,
        "cos_z": cos_z,
        "cos_margin": margin,
        "intent_min": intent_min,
        "server1": server1,
        "lex_cov1": cov1,
        "lex_cov5": cov5,
        "vocab_cov": vocab,
        "action_ok": action_ok,
        "verb_ok": verb_ok,
        "chat_gap": chat_gap,
        "verb_named": _verb_named(ix, q.text, order),
    }


def _best(scores: Scores, finite: npt.NDArray[np.int64], n: int) -> npt.NDArray[np.int64]:
    """The ``n`` best of the ``finite`` rows, best first (ties in row order)."""
    if finite.size > n:
        finite = finite[np.argpartition(-scores[finite], n - 1)[:n]]
    out: npt.NDArray[np.int64] = finite[np.lexsort((finite, -scores[finite]))]
    return out


def nearest_servers(ix: ToolIndex, scores: Scores, n: int = 3) -> tuple[str, ...]:
    """The servers of the best-ranked tools, first seen first (at most ``n``)."""
    order = _best(scores, np.flatnonzero(np.isfinite(scores)), 50)
    out = dict.fromkeys(ix.server_ids[int(ix.server_of[i])] for i in order)
    return tuple(list(out)[:n])


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
    sig = signals(ix, q, scores)
    p = model.probability(np.array([sig[f] for f in model.features]))
    threshold = model.thresholds[mode]
    return Verdict(p >= threshold, p, threshold, mode, nearest_servers(ix, scores), sig)

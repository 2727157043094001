"""Query expansion from the catalog itself (issue 25): pseudo-relevance feedback, no LLM.

    python -m benchmarks.recall_feedback [--strategy S]... [--baseline default] [--sets a,b]
        [--steps 150] [--exact 0] [--store DIR] [--out FILE] [--json FILE]

A first pass of ``steps`` ranks the catalog; its top tools then rewrite the query, and the
request is scored again (``_adaptive`` over the result, as ``default`` is over ``steps``):

- ``prf-dense-<β>-<m>``: Rocchio on the vectors: the query vector and each sub-intent vector
  move towards the mean of their own top-``m`` tools' vectors, ``normalise(v + β · mean)``;
- ``prf-whole-<β>-<m>``: the same on the whole-query vector only (sub-intents untouched);
- ``prf-intent-<β>-<m>``: the same on the sub-intent vectors only;
- ``prf-lex-<λ>-<t>-<m>``: RM3 on BM25: the ``t`` heaviest terms of the top-``m`` tool
  documents (per-document BM25 weights, normalised) join the query with weight ``λ``;
- ``ctx-<γ>``: server context among the top 10's servers: each of their tools gains ``γ`` ×
  the mean of its server's best three scores minus the lowest such mean among them;
- ``companion-<δ>``: a tool of a top-5 server within ``δ`` of the fifth score rises to just
  above it (at most one per server).

``prf-intent-0.3-5`` is what the router ships as ``adaptive-prf`` (route/feedback.py, the
switch ``RouteParams.multi.intent_feedback``); ``recall_feedback_product.md`` checks the two agree.
Variants are named with their knobs; ``--strategy`` takes any such name. The suite's harness
(benchmarks/recall_suite.py) does the cases, the paired intervals and the keep-rule.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import recall_suite as rs

# the sets each variant's knobs were chosen on (filled by --developed-on; see the results file)
DEVELOPED: tuple[str, ...] = ()


def _unit(v: Any) -> Any:
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    return (v / np.maximum(n, 1e-12)).astype(np.float32)


def _rocchio(ix: Any, v: Any, beta: float, m: int, first: Any | None = None) -> Any:
    """``normalise(v + β · mean of the top-m tool vectors)``, ranked by ``first`` when given,
    else by the cosine with ``v``."""
    s = first if first is not None else ix.tool_vectors @ v
    from toolroute.route.stage import top_rows

    top = top_rows(s, m)
    return _unit(v + beta * ix.tool_vectors[top].mean(axis=0))


def prf_dense(beta: float, m: int, intents: bool, whole: bool = True) -> Any:
    from toolroute.route import strategy as st

    def score(ix: Any, q: Any, p: Any) -> Any:
        first = st.steps(ix, q, p) if whole else None
        qv = _rocchio(ix, q.vector, beta, m, first) if whole else q.vector
        iv = q.intent_vectors
        if intents and iv is not None and len(iv):
            iv = np.stack([_rocchio(ix, v, beta, m) for v in iv])
        return st.steps(ix, replace(q, vector=qv, intent_vectors=iv), p)

    return score


def _bm25(ix: Any) -> Any:
    """bm25s over the tool documents as ``ix.tool_lexical`` indexes them (the documents' BM25
    text, the router's tokenizer, Robertson with k1 1.5 and b 0.75), so its vocabulary and
    score arrays are the router's: the per-document term weights RM3 reads."""

    def make() -> Any:
        import bm25s

        from toolroute.index.document import build_docs, tokenise

        docs = build_docs(ix.catalog.servers, None)
        model = bm25s.BM25(k1=1.5, b=0.75, method="robertson")
        model.index([tokenise(d.lexical_text()) or ["\x00"] for d in docs], show_progress=False)
        return model

    return ix.derived.memo("prf:bm25", make)


def _doc_terms(ix: Any) -> tuple[Any, Any, Any]:
    """Per document (tool row): its vocabulary ids and BM25 weights, CSR-like, from bm25s'
    token-major score arrays."""

    def make() -> tuple[Any, Any, Any]:
        sc = _bm25(ix).scores
        indptr = np.asarray(sc["indptr"])
        docs = np.asarray(sc["indices"])
        data = np.asarray(sc["data"], dtype=np.float32)
        tokens = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
        order = np.argsort(docs, kind="stable")
        ptr = np.concatenate([[0], np.cumsum(np.bincount(docs, minlength=ix.size))])
        return ptr, tokens[order], data[order]

    return ix.derived.memo("prf:doc-terms", make)  # type: ignore[no-any-return]


def _term_scores(ix: Any, term: int) -> Any:
    sc = _bm25(ix).scores
    indptr = sc["indptr"]
    out = np.zeros(ix.size, dtype=np.float32)
    a, b = int(indptr[term]), int(indptr[term + 1])
    out[np.asarray(sc["indices"][a:b])] = sc["data"][a:b]
    return out


def rm3_lexical(ix: Any, q: Any, first: Any, lam: float, t: int, m: int) -> Any:
    """RM3: BM25 of the query interpolated with the feedback terms of the top ``m``."""
    from toolroute.index.document import tokenise
    from toolroute.route.stage import top_rows

    base = ix.tool_lexical.scores(q.text)
    vocab = _bm25(ix).vocab_dict
    qids = {vocab[w] for w in tokenise(q.text) if w in vocab}
    ptr, tok, w = _doc_terms(ix)
    weights: dict[int, float] = {}
    for d in top_rows(first, m):
        a, b = int(ptr[d]), int(ptr[d + 1])
        tot = float(w[a:b].sum()) or 1.0
        for k, x in zip(tok[a:b].tolist(), w[a:b].tolist(), strict=True):
            weights[k] = weights.get(k, 0.0) + x / tot / m
    terms = sorted((k for k in weights if k not in qids), key=lambda k: -weights[k])[:t]
    if not terms:
        return base
    z = sum(weights[k] for k in terms)
    fb = sum(weights[k] / z * _term_scores(ix, k) for k in terms)
    nq = max(len(tokenise(q.text)), 1)
    return (1 - lam) * base / nq + lam * fb


def prf_lex(lam: float, t: int, m: int) -> Any:
    from toolroute.route import strategy as st
    from toolroute.route.stage import normalised

    def score(ix: Any, q: Any, p: Any) -> Any:
        first = st.steps(ix, q, p)
        new = normalised(rm3_lexical(ix, q, first, lam, t, m))
        old = normalised(ix.tool_lexical.scores(q.text))
        return st.steps(ix, q, p) + p.hybrid.lexical_weight * (new - old)

    return score


def server_context(gamma: float) -> Any:
    from toolroute.route import strategy as st
    from toolroute.route.stage import top_rows

    def score(ix: Any, q: Any, p: Any) -> Any:
        s = st.steps(ix, q, p)
        servers = np.unique(ix.server_of[top_rows(s, 10)])
        ctx = {}
        for sv in servers.tolist():
            rows = np.flatnonzero(ix.server_of == sv)
            own = np.sort(s[rows])[::-1][:3]
            ctx[sv] = float(own[np.isfinite(own)].mean())
        low = min(ctx.values())
        out = s.copy()
        for sv, c in ctx.items():
            out[ix.server_of == sv] += gamma * (c - low)
        return out

    return score


def companion(delta: float) -> Any:
    from toolroute.route import strategy as st
    from toolroute.route.stage import top_rows

    def score(ix: Any, q: Any, p: Any) -> Any:
        s = st.steps(ix, q, p)
        top = top_rows(s, 5)
        if len(top) < 5:
            return s
        fifth = float(s[top[-1]])
        out = s.copy()
        for sv in dict.fromkeys(ix.server_of[top].tolist()):
            rows = np.flatnonzero(ix.server_of == sv)
            rows = rows[~np.isin(rows, top)]
            if not len(rows):
                continue
            j = rows[np.argmax(s[rows])]
            if s[j] >= fifth - delta:
                out[j] = fifth + 1e-4
        return out

    return score


_PATTERNS: list[tuple[str, Any]] = [
    (r"prf-dense-([\d.]+)-(\d+)", lambda b, m: prf_dense(float(b), int(m), True)),
    (r"prf-whole-([\d.]+)-(\d+)", lambda b, m: prf_dense(float(b), int(m), False)),
    (r"prf-intent-([\d.]+)-(\d+)", lambda b, m: prf_dense(float(b), int(m), True, False)),
    (r"prf-lex-([\d.]+)-(\d+)-(\d+)", lambda lam, t, m: prf_lex(float(lam), int(t), int(m))),
    (r"ctx-([\d.]+)", lambda g: server_context(float(g))),
    (r"companion-([\d.]+)", lambda d: companion(float(d))),
]


def register(name: str) -> bool:
    """Register ``name`` if it is one of this script's variants; False when it is not."""
    from toolroute.route import strategy as st

    for pat, make in _PATTERNS:
        hit = re.fullmatch(pat, name)
        if hit:
            fn = st.adaptive_over(make(*hit.groups()))
            st.register_strategy(
                name,
                lambda fn=fn, name=name: st.Strategy(name, fn, "intent-spans", name, True),
                overwrite=True,
            )
            rs.DEVELOPED_ON[name] = DEVELOPED
            return True
    return False


def main() -> int:
    from benchmarks.variants import register_strategies

    register_strategies()  # the research variants
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--strategy", action="append", default=None)
    ap.add_argument("--baseline", default="default")
    ap.add_argument("--sets", default=",".join(rs.SETS))
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--exact", type=int, default=0)
    ap.add_argument("--developed-on", default="", help="sets the knobs were chosen on")
    ap.add_argument("--store", type=Path, default=rs.REPO / ".toolroute" / "bench-store")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()

    from toolroute.embed.onnx import OnnxEmbedder
    from toolroute.route.strategy import RouteParams

    global DEVELOPED
    DEVELOPED = tuple(s for s in args.developed_on.split(",") if s)
    strategies = args.strategy or ["default"]
    if args.baseline not in strategies:
        strategies.insert(0, args.baseline)
    for s in strategies:
        register(s.split("/")[0])
    embedder = OnnxEmbedder()
    t0 = time.perf_counter()
    results = rs.run_sets(args.sets.split(","), strategies, args, embedder, RouteParams())
    rs.write_suite_report(results, strategies, args, "recall_feedback", time.perf_counter() - t0)
    return 0


if __name__ == "__main__":
    sys.exit(main())

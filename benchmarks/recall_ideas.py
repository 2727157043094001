"""Retrieval ideas of issue 14, measured one at a time against ``multi`` (the old default).

    python -m benchmarks.recall_ideas [--store DIR] [--out benchmarks/results/recall_ideas.md]

Every row runs through ``toolroute.bench.runner.bench`` on the three sets (livemcpbench,
mcpbench, the union catalog with our own 60 queries), so recall, MRR and latency are measured
the same way as ``toolroute bench``. Kept ideas are switches of ``RouteParams`` over the
``steps`` strategy; ideas that did not pay are written here as small scoring stages over the
same index, so their figures stay reproducible. No idea reads a query's answers: the priors
come from general English (action verbs, file paths) and the catalog's own structure.

Every idea here was developed on these three sets (the table's "developed on" column); the
sets nobody tuned on (tool_attention, sealtools, metatool) and the paired intervals of issue
25's keep-rule are benchmarks/recall_suite.py's, which runs any registered strategy on all.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._report import missing, write_report
from benchmarks.recall_suite import REPO, SETS, SHARED

DATASETS = {name: SETS[name] for name in ("livemcpbench", "mcpbench")}
DATASETS["union (ours)"] = SETS["union"]
METRICS = ("recall@5", "recall@1", "recall@10", "mrr", "ndcg@10")


Row = tuple[str, str, dict[str, Any]]

# Parameter text with its examples cut ("(e.g., 'Asia/Tokyo')", "such as …"): an idea below.
_EXAMPLES = re.compile(
    r"\(\s*(?:e\.g\.|eg\.|i\.e\.|for example|for instance|such as|example:?)[^)]*\)"
    r"|(?:e\.g\.|for example|for instance|such as|example:)[^.;]*",
    re.IGNORECASE,
)
# Politeness and request framing: general English, no word taken from a benchmark query.
_FILLER = re.compile(
    r"\b(?:please|help me(?: to)?|can you|could you(?: please)?|would you|i want to|"
    r"i need to|i'd like to|i would like to|for me|kindly)\b[,]?\s*",
    re.IGNORECASE,
)


def _register() -> list[Row]:
    """(row label, strategy, RouteParams overrides) per row; registers the experiment stages."""
    from toolroute.index.document import build_docs, humanise, param_texts, tokenise
    from toolroute.index.lexical import LexicalIndex
    from toolroute.route import stage as st
    from toolroute.route.action import query_actions, tool_actions
    from toolroute.route.expand import CREATORS, expand
    from toolroute.route.precompute import index_providers
    from toolroute.route.strategy import register_strategy

    off = {
        "action_penalty": 0.0,
        "expand_pool": 0,
        "destination": False,
        "source_file": False,
        "duplicate_penalty": 0.0,
    }
    rows: list[Row] = [
        ("multi (old default)", "multi", {}),
        ("multi + action words", "steps", {**off, "action_penalty": 0.07}),
        ("multi + named destination file", "steps", {**off, "destination": True}),
        ("multi + named source file (a reader of its type)", "steps", {**off, "source_file": True}),
        ("multi + implied steps (catalog providers)", "steps", {**off, "expand_pool": 5}),
        ("multi + near duplicates demoted", "steps", {**off, "duplicate_penalty": 0.05}),
        ("steps: all five (new default)", "steps", {}),
    ]

    def then(*stages: Any, base: Any = None) -> Any:
        """``steps``' stages in order, each ``(ix, q, p, s) -> s``; ``base`` replaces multi."""

        def score(ix: Any, q: Any, p: Any) -> Any:
            s = (base or st.multi)(ix, q, p)
            for stage in stages:
                s = stage(ix, q, p, s)
            return s

        return score

    def action(ix: Any, q: Any, p: Any, s: Any) -> Any:
        return st.action_prior(ix, q, p, s)

    def implied(ix: Any, q: Any, p: Any, s: Any) -> Any:
        return expand(s, index_providers(ix), p.steps.expand_pool, p.steps.expand_weight)

    def files(ix: Any, q: Any, p: Any, s: Any) -> Any:
        return st.file_steps(ix, q, p, s)

    def near_dups(ix: Any, q: Any, p: Any, s: Any) -> Any:
        return st.near_duplicates(ix, q, p, s)

    def writer_only(ix: Any, q: Any, p: Any, s: Any) -> Any:
        return st.file_steps(ix, q, replace(p, steps=replace(p.steps, source_file=False)), s)

    def action_unshared(ix: Any, q: Any, p: Any, s: Any) -> Any:
        # the previous action prior: the full penalty whatever the number of asked classes
        asked = query_actions(q.text)
        if not asked:
            return s
        acts, order = ix.derived.memo("actions", lambda: tool_actions([t.name for t in ix.tools]))
        wanted = np.array([c in asked for c in order] + [True])
        return (s - p.steps.action_penalty * ~wanted[acts]).astype(np.float32)

    def server_prior(ix: Any, q: Any, p: Any, s: Any) -> Any:
        # the server layer as a soft prior instead of cascade's hard cut
        return s + 0.2 * st.server_scores(ix, q, p)[ix.server_of]

    def clause_top(ix: Any, q: Any, p: Any, s: Any) -> Any:
        # each sub-intent's best tool lifted (+0.05): coverage of every clause
        if q.intent_vectors is None:
            return s
        out = s.copy()
        for v in q.intent_vectors:
            out[int(np.argmax(ix.tool_vectors @ v))] += 0.05
        return out

    def into_top5(s: Any, j: int) -> Any:
        out = s.copy()
        out[j] = max(float(s[j]), float(np.sort(s[np.isfinite(s)])[-5]) + 1e-4)
        return out

    def implied_text(rx: re.Pattern[str], text: str) -> Any:
        def stage(ix: Any, q: Any, p: Any, s: Any) -> Any:
            if q.embed is None or not rx.search(q.text):
                return s
            return into_top5(s, st.best_match(ix, q, p, text))

        return stage

    def typed_writer(ix: Any, q: Any, p: Any, s: Any) -> Any:
        # a destination's writer matched with its extension ("create a docx file")
        from toolroute.route.intent import named_files

        for ext, dest in named_files(q.text):
            if dest and q.embed is not None:
                s = into_top5(s, st.best_match(ix, q, p, f"create a {ext} file"))
        return s

    def lexical_over(make: Any) -> Any:
        """multi with BM25 over other document texts (``make(ix) -> texts``)."""

        def base(ix: Any, q: Any, p: Any) -> Any:
            lex = ix.derived.memo(f"lex:{id(make)}", lambda: LexicalIndex(make(ix)))
            return st.multi(ix, replace(q), p) + p.hybrid.lexical_weight * (
                st.normalised(lex.scores(q.text)) - st.normalised(ix.tool_lexical.scores(q.text))
            )

        return base

    def no_examples(ix: Any) -> list[str]:
        docs = build_docs(ix.catalog.servers, None)
        tools = [t for srv in ix.catalog.servers for t in srv.tools]
        return [
            " ".join(
                (
                    d.server,
                    d.name,
                    d.description,
                    "; ".join(
                        f"{humanise(n)}: {_EXAMPLES.sub('', de)}" if de else humanise(n)
                        for n, de in param_texts(t.input_schema)
                    ),
                )
            )
            for d, t in zip(docs, tools, strict=True)
        ]

    def name_twice(ix: Any) -> list[str]:
        return [f"{d.name} {d.lexical_text()}" for d in build_docs(ix.catalog.servers, None)]

    def without_filler(ix: Any, q: Any, p: Any) -> Any:
        text = _FILLER.sub("", q.text).strip() or q.text
        if text == q.text or q.embed is None:
            return st.multi(ix, q, p)
        return st.multi(ix, replace(q, vector=q.embed([text])[0]), p)

    def clause_hybrid(ix: Any, q: Any, p: Any) -> Any:
        # clauses scored by dense + BM25 (not dense alone) before multi's lift
        d = st.dense(ix, q, p)
        out = d + p.hybrid.lexical_weight * st.normalised(st.lexical(ix, q, p))
        if q.intent_vectors is None or not len(q.intent_vectors):
            return out
        best = np.full(ix.size, -np.inf, dtype=np.float32)
        for t, v in zip(q.intents, q.intent_vectors, strict=True):
            lex = st.normalised(ix.tool_lexical.scores(t))
            best = np.maximum(best, ix.tool_vectors @ v + p.hybrid.lexical_weight * lex)
        return out + np.maximum(0.0, (1 - p.multi.intent_mix) * (best - out))

    def named_server(ix: Any, q: Any, p: Any, s: Any) -> Any:
        # +0.05 to every tool of a server whose name has a word found in at most 2 servers
        def distinct() -> list[frozenset[str]]:
            df: dict[str, int] = {}
            for srv in ix.catalog.servers:
                body = " ".join(f"{t.name} {t.description}" for t in srv.tools)
                for w in set(tokenise(f"{srv.name} {srv.description} {body}")):
                    df[w] = df.get(w, 0) + 1
            return [
                frozenset(
                    w
                    for w in set(tokenise(srv.name)) | set(humanise(srv.id).split())
                    if df.get(w, 0) <= 2
                    and len(w) > 2
                    and not w.isdigit()
                    and w not in ("mcp", "server")
                )
                for srv in ix.catalog.servers
            ]

        names = ix.derived.memo("distinct-server-words", distinct)
        words = set(tokenise(q.text))
        hit = np.array([bool(n & words) for n in names])
        return (s + 0.05 * hit[ix.server_of]).astype(np.float32)

    def creator_fills(ix: Any, q: Any, p: Any, s: Any) -> Any:
        # a creator in the top 5 lifts its best "filler" sibling (add/write/insert … what it
        # creates) to 0.9 x its score: the create -> write chain read forwards
        fill = {"add", "write", "insert", "append", "put", "populate", "fill", "set", "update"}

        def edges() -> list[tuple[int, int]]:
            prov, served = index_providers(ix)
            first = [(humanise(t.name).split() or [""])[0] for t in ix.tools]
            return [
                (int(a), int(b))
                for a, b in zip(prov, served, strict=True)
                if first[a] in CREATORS and first[b] in fill
            ]

        pairs = ix.derived.memo("creator-fillers", edges)
        out = s.copy()
        for a in np.argsort(-s, kind="stable")[:5]:
            bs = sorted((b for x, b in pairs if x == a), key=lambda b: -s[b])
            if bs:
                out[bs[0]] = max(out[bs[0]], 0.9 * s[a])
        return out

    def rrf(ix: Any, q: Any, p: Any) -> Any:
        # rank fusion of dense and BM25 (k = 60) in place of the weighted sum, on cosine scale
        d, lex = st.dense(ix, q, p), st.lexical(ix, q, p)
        rd = np.empty(ix.size)
        rd[np.argsort(-d)] = np.arange(ix.size)
        rl = np.empty(ix.size)
        rl[np.argsort(-lex)] = np.arange(ix.size)
        r = 1 / (60 + rd) + np.where(lex > 0, 1 / (60 + rl), 0)
        fused = (d + (r - r.max()) * 10).astype(np.float32)
        return fused + (st.multi(ix, q, p) - st.hybrid(ix, q, p))

    time_rx = re.compile(
        r"\b(today|tomorrow|yesterday|tonight|this (?:week|month|year)|next (?:week|month|"
        r"year|monday|tuesday|wednesday|thursday|friday|saturday|sunday))\b",
        re.IGNORECASE,
    )
    new = (action, implied, files, near_dups)
    experiments = {
        "x-prev": (
            "steps before this change (unshared penalty, files before implied steps, no "
            "source file)",
            then(action_unshared, writer_only, implied),
        ),
        "x-unshared": (
            "steps, action penalty not shared",
            then(action_unshared, implied, files, near_dups),
        ),
        "x-files-first": (
            "steps, named files before implied steps",
            then(action, files, implied, near_dups),
        ),
        "x-server-prior": ("steps + server layer as soft prior (0.2)", then(*new, server_prior)),
        "x-clause-top": ("steps + every clause's best tool lifted", then(*new, clause_top)),
        "x-time": (
            "steps + implied 'current date' for relative dates",
            then(*new, implied_text(time_rx, "get the current date and time")),
        ),
        "x-url": (
            "steps + implied 'fetch' for a URL",
            then(*new, implied_text(re.compile(r"https?://\S+"), "fetch a web page URL")),
        ),
        "x-typed-writer": ("steps + a writer of the destination's type", then(*new, typed_writer)),
        "x-no-examples": (
            "steps, parameter examples cut from BM25 text",
            then(*new, base=lexical_over(no_examples)),
        ),
        "x-name-twice": (
            "steps, tool name twice in BM25 text",
            then(*new, base=lexical_over(name_twice)),
        ),
        "x-near-dup": (
            "steps without near-duplicate demotion (MMR-like)",
            then(action, implied, files),
        ),
        "x-filler": ("steps, request framing words dropped", then(*new, base=without_filler)),
        "x-clause-hybrid": ("steps, clauses scored dense + BM25", then(*new, base=clause_hybrid)),
        "x-named-server": (
            "steps + a server named in the request (+0.05)",
            then(*new, named_server),
        ),
        "x-creator-fills": ("steps + a top creator lifts its filler", then(*new, creator_fills)),
        "x-rrf": ("steps, RRF in place of the weighted sum", then(*new, base=rrf)),
    }
    for name, (label, score) in experiments.items():
        made = st.Strategy(name, score, "intent-spans", label)
        register_strategy(name, lambda made=made: made, overwrite=True)
        rows.append((label, name, {}))
    rows.append(("steps, lexical weight 0.3 instead of 0.2", "steps", {"lexical_weight": 0.3}))
    rows.append(("steps, implied steps lift to 0.95 (not 0.9)", "steps", {"expand_weight": 0.95}))
    rows.append(("steps, intent mix 0.4 (not 0.5)", "steps", {"intent_mix": 0.4}))
    return rows


def _params(base: Any, overrides: dict[str, Any]) -> Any:
    """``base`` with each knob of ``overrides`` set in the family that holds it (hybrid,
    multi, steps, cascade)."""
    left = dict(overrides)
    for family in ("hybrid", "multi", "steps", "cascade"):
        group = getattr(base, family)
        mine = {k: left.pop(k) for k in list(left) if k in group.__dataclass_fields__}
        if mine:
            base = replace(base, **{family: replace(group, **mine)})
    if left:
        raise ValueError(f"no such knob in any family: {sorted(left)}")
    return base


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--store", type=Path, default=REPO / ".toolroute" / "bench-store")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    if missing(SHARED):
        return 2

    from toolroute.bench.runner import bench
    from toolroute.catalog import load_queries
    from toolroute.embed.onnx import OnnxEmbedder
    from toolroute.route.strategy import RouteParams
    from toolroute.router import Router

    rows = _register()
    embedder = OnnxEmbedder()
    results: dict[str, dict[str, dict[str, Any]]] = {}
    for dname, (cat, qf) in DATASETS.items():
        with Router(cat, store=args.store, embedder=embedder, params=RouteParams()) as r:
            r.index()
            queries = load_queries(qf, r.catalog)
            for label, name, overrides in rows:
                r.params = _params(RouteParams(), overrides)
                res = bench(r, queries, [name])[name]
                results.setdefault(label, {})[dname] = res
                print(dname, label, {m: round(res[m], 3) for m in METRICS}, file=sys.stderr)
    head = " | ".join(f"{d} R@5 | MRR | R@1" for d in DATASETS)
    lines = [
        "| idea | developed on | " + head + " | live p50 ms |",
        "|---|---|" + "---:|---:|---:|" * len(DATASETS) + "---:|",
    ]
    for label, per in results.items():
        cells = " | ".join(
            f"{per[d]['recall@5']:.3f} | {per[d]['mrr']:.3f} | {per[d]['recall@1']:.3f}"
            for d in DATASETS
        )
        lat = per["livemcpbench"]["latency_ms"]["p50"]
        lines.append(f"| {label} | {', '.join(DATASETS)} | {cells} | {lat:.1f} |")
    table = "\n".join(lines) + "\n"
    write_report(table, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

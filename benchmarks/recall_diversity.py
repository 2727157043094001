"""Coverage-aware re-ranking (benchmarks/diversify.py) over ``default``, knobs chosen leave-one-out.

    python -m benchmarks.recall_diversity [--sets a,b] [--steps 150] [--store DIR]
        [--out benchmarks/results/recall_diversity.md] [--json FILE] [--grid-out FILE]

Where: the re-ranking runs on ``steps``' relevance after its action words and before its
implied steps, files named by path, near-duplicate demotion and ``adaptive``'s capabilities,
which then run as in ``default``. (Re-ranking ``default``'s final order instead moves the
file writer that a request naming a destination file is given at rank 5: every method lost
R@5 on livemcpbench that way, exploration in the report below.)

Two passes. First, per set, the relevance and sub-intents of every whole request are
computed once, and every re-ranker of the grid (method × λ × pool, the top 1 kept) is applied,
then the rest of ``default`` and the exact-name step. Second, for each method and each set, the
knobs are chosen on the *other* sets' whole requests (the mean over those sets of ΔR@5 + ΔMRR
against ``default``), registered as ``div-<method>`` for that set only, and measured with
recall_suite's harness (run_set/render: whole requests and ``--steps`` oracle and clause
steps, paired bootstrap intervals, keep-rule). So no set's figure comes from knobs chosen on
it: each method's DEVELOPED_ON is empty, and the knob table says which knobs each held-out set
got.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import recall_suite as rs
from benchmarks._report import write_report

VARIANTS: dict[str, dict[str, Any]] = {
    "xquad": {"method": "xquad"},
    # intents weighted by their cosine with the request, each intent's best 5 tools pooled
    "xquad-wide": {"method": "xquad", "weights": "query", "intent_pool": 5},
    "pm2": {"method": "pm2"},
    "mmr": {"method": "mmr"},
}
METHODS = tuple(VARIANTS)
TRADES = {"xquad": (0.3, 0.5, 0.7), "pm2": (0.3, 0.5), "mmr": (0.8, 0.9)}
POOLS = (10, 20)
KEEPS = (1,)  # keep=0 measured lower MRR on livemcpbench for every method (exploration)
WHERE = {"at": "steps"}


def grid() -> list[tuple[str, Any]]:
    from benchmarks.diversify import DiversifyParams

    return [
        (v, DiversifyParams(pool=n, trade=lam, keep_top=k, **kw))
        for v, kw in VARIANTS.items()
        for lam, n, k in itertools.product(TRADES[kw["method"]], POOLS, KEEPS)
    ]


def relevance(ix: Any, q: Any, p: Any) -> Any:
    """What is re-ranked: ``steps``' first two stages (multi, action words), or with
    ``--where final`` all of ``default`` (before the exact-name step)."""
    from toolroute.route import strategy as st
    from toolroute.route.stage import action_prior

    if WHERE["at"] == "final":
        return st.adaptive_over(st.steps)(ix, q, p)
    return action_prior(ix, q, p, st.multi(ix, q, p))


def finish(ix: Any, q: Any, p: Any, s: Any) -> Any:
    """The rest of ``default`` after the re-ranking, as route/stage.py's ``steps`` and
    route/composition.py's ``adaptive_over`` do it (cold: no usage memory)."""
    from toolroute.route.adaptive import adaptive_route
    from toolroute.route.expand import expand
    from toolroute.route.precompute import index_providers
    from toolroute.route.stage import file_steps, near_duplicates
    from toolroute.stats import StatsBook

    if WHERE["at"] == "final":
        return s
    s = expand(s, index_providers(ix), p.steps.expand_pool, p.steps.expand_weight)
    s = near_duplicates(ix, q, p, file_steps(ix, q, p, s))
    stats = q.stats if q.stats is not None else StatsBook(ix.catalog)
    return adaptive_route(ix, s, stats, p.adaptive, {}, stats.memory.params.boost)


def collect(router: Any, cases: dict[str, list[rs.Case]]) -> dict[str, list[Any]]:
    """Per view: (query context, groups, relevance before the re-ranking) per case."""
    ix = router.built
    out: dict[str, list[Any]] = {}
    for view, qs in cases.items():
        rows = []
        for text, groups in qs:
            ctx = replace(
                router.query_context(text, "intent-spans"),
                stats=router.stats,
                embed=lambda t: router.embedder.embed(t),
            )
            rows.append((ctx, groups, relevance(ix, ctx, router.params)))
        out[view] = rows
    return out


def evaluate(ix: Any, params: Any, rows: list[Any], p: Any, base: Any = None) -> dict[str, Any]:
    """Per-query metrics of ``default`` re-ranked by ``p`` (None: unchanged); where nothing
    moves, ``base``'s row is reused."""
    from benchmarks.diversify import diversify
    from toolroute.bench.metrics import query_metrics
    from toolroute.bench.paired import REPORT_METRICS
    from toolroute.route.exact import prerank_index
    from toolroute.router import top_k

    per = []
    for i, (ctx, groups, s) in enumerate(rows):
        if p is not None:
            moved = diversify(s, ix.tool_vectors, ctx.intent_vectors, p, ctx.vector)
            if moved is s and base is not None:
                per.append({m: float(v[i]) for m, v in base.items()})
                continue
            s = moved
        s = finish(ix, ctx, params, s)
        ranked = [ix.keys[j] for j in top_k(prerank_index(ix, ctx.text, s), 10)]
        per.append(query_metrics(ranked, groups))
    return {m: np.array([r[m] for r in per]) for m in REPORT_METRICS}


def label(v: str, p: Any) -> str:
    return f"{v} λ={p.trade} pool={p.pool} keep={p.keep_top}"


def headroom(sets: list[str], store: Path, embedder: Any) -> str:
    """Why a re-ranker of the top N can or cannot help: per set, R@5 if an oracle re-ordered
    ``default``'s top N (each tool counted for one group, at most 5), and how often xquad
    (pool 20, top 1 kept) changes the top 5 and how many relevant tools enter or leave it."""
    from benchmarks.diversify import DiversifyParams, diversify
    from toolroute.bench.metrics import hit_ranks
    from toolroute.catalog import load_queries
    from toolroute.route import strategy as st
    from toolroute.route.exact import prerank_index
    from toolroute.router import Router, top_k

    lines = [
        "| set | R@5 | oracle order of top 10 | of top 20 | of top 30 | "
        + " | ".join(f"xquad λ={lam}: top 5 changed / relevant in / out" for lam in (0.3, 0.5, 0.7))
        + " |",
        "|---|---:|---:|---:|---:|---|---|---|",
    ]
    for name in sets:
        cat, qf = rs.SETS[name]
        with Router(cat, store=store, embedder=embedder, params=st.RouteParams()) as r:
            r.index()
            ix = r.built
            cases = rs.suite_cases(r.catalog, load_queries(qf, r.catalog), embedder.embed, 0, 0)
            rows = collect(r, cases)["whole"]
            bound = {n: [] for n in (5, 10, 20, 30)}  # type: ignore[var-annotated]
            moves = {lam: [0, 0, 0] for lam in (0.3, 0.5, 0.7)}
            for ctx, groups, s in rows:
                final = prerank_index(ix, ctx.text, finish(ix, ctx, r.params, s))
                ranks = hit_ranks([ix.keys[j] for j in top_k(final, 30)], groups)
                for n in bound:
                    bound[n].append(min(5, sum(x <= n for x in ranks)) / len(groups))
                top5 = set(top_k(final, 5))
                relevant = {k for g in groups for k in g}
                for lam, m in moves.items():
                    p = DiversifyParams("xquad", pool=20, trade=lam, keep_top=1)
                    d = diversify(s, ix.tool_vectors, ctx.intent_vectors, p, ctx.vector)
                    new = set(top_k(prerank_index(ix, ctx.text, finish(ix, ctx, r.params, d)), 5))
                    m[0] += new != top5
                    m[1] += sum(ix.keys[j] in relevant for j in new - top5)
                    m[2] += sum(ix.keys[j] in relevant for j in top5 - new)
            cells = [f"{np.mean(bound[n]):.3f}" for n in (5, 10, 20, 30)]
            cells += [f"{a}/{len(rows)} / {b} / {c}" for a, b, c in moves.values()]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sets", default=",".join(rs.SETS))
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--store", type=Path, default=rs.REPO / ".toolroute" / "bench-store")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--grid-out", type=Path, default=None)
    ap.add_argument(
        "--where",
        choices=("steps", "final"),
        default="steps",
        help="re-rank after steps' action words (steps) or default's final order (final)",
    )
    ap.add_argument("--headroom", action="store_true", help="only the headroom table")
    args = ap.parse_args()
    WHERE["at"] = args.where

    from toolroute.catalog import load_queries
    from toolroute.embed.onnx import OnnxEmbedder
    from toolroute.embed.recent import QueryMemo
    from toolroute.route import strategy as st
    from toolroute.router import Router

    embedder = QueryMemo(OnnxEmbedder(), size=20_000)
    sets = args.sets.split(",")
    if args.headroom:
        table_md = headroom(sets, args.store, embedder)
        text = f"`python -m benchmarks.recall_diversity {' '.join(sys.argv[1:])}`\n\n{table_md}"
        if args.out:
            args.out.write_text(text, encoding="utf-8")
        print(text)
        return 0
    configs = grid()
    t0 = time.perf_counter()
    # pass 1: the grid on every set's whole requests (and steps, for the record)
    table: dict[str, dict[str, dict[str, float]]] = {}  # set -> config -> view:metric
    for name in sets:
        cat, qf = rs.SETS[name]
        with Router(cat, store=args.store, embedder=embedder, params=st.RouteParams()) as r:
            r.index()
            queries = load_queries(qf, r.catalog)
            cases = rs.suite_cases(r.catalog, queries, embedder.embed, 0, 0)
            got = collect(r, cases)
            ix = r.built
            for view, rows in got.items():
                base = evaluate(ix, r.params, rows, None)
                for v, p in [("default", None), *configs]:
                    per = base if p is None else evaluate(ix, r.params, rows, p, base)
                    key = "default" if p is None else label(v, p)
                    cell = table.setdefault(name, {}).setdefault(key, {})
                    for m in ("recall@5", "mrr"):
                        cell[f"{view}:{m}"] = float(per[m].mean())
                        cell[f"{view}:d_{m}"] = float((per[m] - base[m]).mean())
        print(f"grid {name}: {time.perf_counter() - t0:.0f} s", file=sys.stderr)

    def objective(key: str, on: list[str]) -> float:
        return float(
            np.mean([table[s][key]["whole:d_recall@5"] + table[s][key]["whole:d_mrr"] for s in on])
        )

    chosen: dict[str, dict[str, Any]] = {m: {} for m in METHODS}
    for m in METHODS:
        mine = [p for v, p in configs if v == m]
        for held in sets:
            others = [s for s in sets if s != held]
            chosen[m][held] = max(mine, key=lambda p, o=others: objective(label(m, p), o))
        chosen[m]["(all sets)"] = max(mine, key=lambda p: objective(label(m, p), sets))

    # pass 2: recall_suite's harness, each set with knobs chosen without it
    names = [f"div-{m}" for m in METHODS]
    for n in names:
        rs.DEVELOPED_ON[n] = ()
    results: dict[str, dict[str, dict[str, Any]]] = {}
    for name in sets:
        for m in METHODS:
            register(st, f"div-{m}", chosen[m][name])
        cat, qf = rs.SETS[name]
        with Router(cat, store=args.store, embedder=embedder, params=st.RouteParams()) as r:
            r.index()
            queries = load_queries(qf, r.catalog)
            cases = rs.suite_cases(r.catalog, queries, embedder.embed, args.steps, 0)
            results[name] = rs.run_set(r, cases, ["default", *names])
        print(f"suite {name}: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    body, summary = rs.render(results, ["default", *names], "default")
    took = time.perf_counter() - t0
    head = (
        f"`python -m benchmarks.recall_diversity {' '.join(sys.argv[1:])}` "
        f"({took:.0f} s, MiniLM int8, no LLM)\n\n"
    )
    knobs = [
        "### knobs chosen leave-one-set-out (mean ΔR@5 + ΔMRR over the other sets' whole requests)",
        "",
        "| method | " + " | ".join(f"held out: {s}" for s in [*sets, "(all sets)"]) + " |",
        "|---|" + "---|" * (len(sets) + 1),
    ]
    for m in METHODS:
        cells = [label(m, chosen[m][s]).split(" ", 1)[1] for s in [*sets, "(all sets)"]]
        knobs.append(f"| div-{m} | " + " | ".join(cells) + " |")
    text = head + body + "\n" + "\n".join(knobs) + "\n"
    if args.grid_out:
        args.grid_out.write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")
    write_report(text, args.out, args.json, summary)
    return 0


def register(st: Any, name: str, p: Any) -> None:
    """``name`` = ``default`` with ``p``'s re-ranking where ``--where`` says."""
    from benchmarks.diversify import diversify

    def score(ix: Any, q: Any, params: Any) -> Any:
        s = diversify(relevance(ix, q, params), ix.tool_vectors, q.intent_vectors, p, q.vector)
        return finish(ix, q, params, s)

    st.register_strategy(
        name,
        lambda: st.Strategy(name, score, "intent-spans", f"default, then {p}", True),
        overwrite=True,
    )


if __name__ == "__main__":
    sys.exit(main())

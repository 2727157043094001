"""Every strategy on every query set, with paired bootstrap intervals against a baseline.

    python -m benchmarks.recall_suite [--strategy S]... [--baseline default] [--sets a,b]
        [--steps 300] [--abstain off] [--store DIR] [--out FILE.md] [--json FILE]

Sets: the five folders of ../shared/benchmarks with queries (livemcpbench, mcpbench,
tool_attention, sealtools, metatool), the union catalog with our own 60 queries, and the
exact-name queries generated from every catalog (route/exact.py's measure). Per set and
strategy: R@1/5/10, MRR, nDCG@10, Full@10 of the whole request, and the paired bootstrap 95 %
interval (2,000 resamples of the queries, seed 0) of R@5 and MRR against ``--baseline``.

Per-step evaluation (issue 25 item 6): agents call ``find_tools`` once per step with a short
need, so each required group of a query is also asked on its own, with one group as the
answer, from two texts: the oracle planner's functional description of the step
(bench/planner.py) and the offline clause split matched to the step. Up to ``--steps`` steps
per set, sampled with a fixed seed.

Strategies built for one experiment register themselves here through
``toolroute.route.strategy.register_strategy``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._report import missing, write_report

REPO = Path(__file__).resolve().parents[1]
# ../shared beside the repo; TOOLROUTE_SHARED names it from a checkout elsewhere
SHARED = Path(os.environ.get("TOOLROUTE_SHARED", REPO.parent / "shared")) / "benchmarks"
SETS: dict[str, tuple[Path, Path]] = {
    name: (SHARED / name / "catalog.json", SHARED / name / "queries.jsonl")
    for name in ("livemcpbench", "mcpbench", "tool_attention", "sealtools", "metatool")
}
SETS["union"] = (SHARED / "union" / "catalog.json", REPO / "benchmarks" / "union_queries.jsonl")

DEVELOPED_ON: dict[str, tuple[str, ...]] = {
    # which query sets an idea was tuned or chosen on (the keep-rule's "not developed on")
    "hybrid": ("livemcpbench", "mcpbench"),
    "multi": ("livemcpbench", "mcpbench"),
    "steps": ("livemcpbench", "mcpbench", "union"),
    "default": ("livemcpbench", "mcpbench", "union"),
    "adaptive": ("livemcpbench", "mcpbench", "union"),
    "bm25": (),
    # the tokenizer was chosen from BM25-alone figures on every set (lexical_check.py, in git
    # history)
    "adaptive-tok": tuple(SETS),
    "hybrid-tok": tuple(SETS),
    "adaptive-stop": tuple(SETS),
    # item 5's two forms of the parameter field, each tried once, with no weight tuned
    "adaptive-params": (),
    "adaptive-tooltext": (),
    "fusion-lodo": (),  # trained on the other sets only: no set is its own development set
    "adaptive-fusion-lodo": (),
    "fusion3-lodo": (),
    "adaptive-fusion3-lodo": (),
    "dense": (),
    # β and depth were chosen on these four (benchmarks/recall_feedback.py)
    "adaptive-prf": ("mcpbench", "union", "sealtools", "metatool"),
}

Case = tuple[str, list[frozenset[tuple[str, str]]]]


def step_cases(
    queries: Sequence[Any], catalog: Any, planner: str, embed: Any, cap: int
) -> list[Case]:
    """One case per required group: the planner's text for it, that group as the answer."""
    from toolroute.bench.planner import plan_steps

    texts = plan_steps(queries, catalog, planner, embed=embed)  # type: ignore[arg-type]
    cases = [
        (t, [g])
        for q, ts in zip(queries, texts, strict=True)
        for t, g in zip(ts, q.groups, strict=True)
    ]
    if len(cases) > cap:
        pick = np.sort(np.random.default_rng(0).choice(len(cases), cap, replace=False))
        cases = [cases[i] for i in pick]
    return cases


def register_experiments() -> None:
    """Ideas measured here before any lands in the router (the tokenizer's BM25-alone check,
    benchmarks/lexical_check.py, is in git history)."""
    from toolroute.index.fields import stopword_lexical
    from toolroute.route import strategy as st
    from toolroute.route.stage import normalised

    def swap(ix: Any, q: Any, p: Any, split: bool = False) -> Any:
        # the whole request's BM25 with stopwords dropped (bm25s' tokenizer, or ours when
        # ``split``) instead of the router's
        new = normalised(stopword_lexical(ix, split=split).scores(q.text))
        return p.hybrid.lexical_weight * (new - normalised(ix.tool_lexical.scores(q.text)))

    def steps_stop(ix: Any, q: Any, p: Any) -> Any:
        return st.steps(ix, q, p) + swap(ix, q, p, split=True)

    def steps_tok(ix: Any, q: Any, p: Any) -> Any:
        return st.steps(ix, q, p) + swap(ix, q, p)

    def hybrid_tok(ix: Any, q: Any, p: Any) -> Any:
        return st.hybrid(ix, q, p) + swap(ix, q, p)

    def params_field(ix: Any, q: Any, p: Any, weight: float) -> Any:
        # parameter names and descriptions as a lexical field of their own, added to the
        # router's BM25 (which holds them already, run together with the rest)
        from toolroute.index.fields import field_index

        return weight * normalised(field_index(ix).indexes["parameters"].scores(q.text))

    def steps_params(ix: Any, q: Any, p: Any) -> Any:
        return st.steps(ix, q, p) + params_field(ix, q, p, 0.1)

    def tool_text_lexical(ix: Any) -> Any:
        # FastMCP's BM25 document: name, description, parameter names and descriptions (no
        # server profile)
        from toolroute.index.document import build_docs
        from toolroute.index.lexical import LexicalIndex

        def make() -> Any:
            docs = build_docs(ix.catalog.servers, None)
            return LexicalIndex([" ".join((d.name, d.description, d.parameters)) for d in docs])

        return ix.derived.memo("tool-text-lexical", make)

    def steps_tooltext(ix: Any, q: Any, p: Any) -> Any:
        new = normalised(tool_text_lexical(ix).scores(q.text))
        old = normalised(ix.tool_lexical.scores(q.text))
        return st.steps(ix, q, p) + p.hybrid.lexical_weight * (new - old)

    for name, fn, embeds, stats in (
        ("adaptive-tok", st.adaptive_over(steps_tok), "intent-spans", True),
        ("hybrid-tok", hybrid_tok, "query", False),
        ("adaptive-stop", st.adaptive_over(steps_stop), "intent-spans", True),
        ("adaptive-params", st.adaptive_over(steps_params), "intent-spans", True),
        ("adaptive-tooltext", st.adaptive_over(steps_tooltext), "intent-spans", True),
    ):
        st.register_strategy(
            name,
            lambda fn=fn, name=name, embeds=embeds, stats=stats: st.Strategy(
                name, fn, embeds, "BM25 with bm25s' tokenizer and stopwords", stats
            ),
            overwrite=True,
        )


def register_lodo(held_out: str, version: str = "", folder: str = "fusion") -> None:
    """``fusion<version>-lodo`` (and ``adaptive-fusion<version>-lodo``): the learned fusion
    trained without ``held_out`` (benchmarks/train_fusion*.py's ``<folder>/lodo-<set>.json``),
    the honest figure for it."""
    from toolroute.route import strategy as st
    from toolroute.route.fusion import fused_scores, load_model

    path = REPO / "benchmarks" / "results" / folder / f"lodo-{held_out}.json"
    if not path.exists():
        return
    model = load_model(path)

    def score(ix: Any, q: Any, p: Any) -> Any:
        return fused_scores(ix, q, p, model)

    for name, fn, stats in (
        (f"fusion{version}-lodo", score, False),
        (f"adaptive-fusion{version}-lodo", st.adaptive_over(score), True),
    ):
        st.register_strategy(
            name,
            lambda fn=fn, name=name, stats=stats: st.Strategy(
                name, fn, "intent-spans", f"learned fusion without {held_out}", stats
            ),
            overwrite=True,
        )


def suite_cases(
    catalog: Any, queries: Any, embed: Any, steps: int, exact: int
) -> dict[str, list[Case]]:
    """The suite's views of one set: whole requests, ``steps`` per-step needs from each
    planner (oracle, clauses), and ``exact`` generated exact-name queries (0: a view left out)."""
    from toolroute.route.exact import exact_name_cases

    cases: dict[str, list[Case]] = {"whole": [(q.text, list(q.groups)) for q in queries]}
    if steps:
        for planner in ("oracle", "clauses"):
            cases[planner] = step_cases(queries, catalog, planner, embed, steps)
    if exact:
        cases["exact"] = [(t, [frozenset([k])]) for t, k in exact_name_cases(catalog, exact)]
    return cases


def run_set(
    router: Any, cases: dict[str, list[Case]], strategies: Sequence[str]
) -> dict[str, dict[str, Any]]:
    """Per view (whole/oracle/clauses/exact) and strategy: per-query metric arrays, p50, and
    per query whether it got no tool at all ("no tool fits": 1.0)."""
    from toolroute.bench.paired import per_query_metrics
    from toolroute.router import top_k

    ix = router.built
    base = router.params
    out: dict[str, dict[str, Any]] = {}
    for view, qs in cases.items():
        if not qs:
            continue
        out[view] = {}
        for s in strategies:
            # "<strategy>/raw": the strategy without the exact-name pre-ranking (its ablation)
            name, _, variant = s.partition("/")
            router.params = replace(base, exact_names=variant != "raw")
            lat: list[float] = []
            refused: list[bool] = []

            def rank(
                text: str, name: str = name, lat: list[float] = lat, refused: list[bool] = refused
            ) -> list[tuple[str, str]]:
                t0 = time.perf_counter()
                rows = top_k(router.scores(text, name), 10)
                lat.append((time.perf_counter() - t0) * 1000)
                refused.append(not rows)
                return [ix.keys[j] for j in rows]

            router.scores(qs[0][0], name)  # warm-up
            per = per_query_metrics(rank, qs)
            out[view][s] = {
                "per_query": per,
                "p50_ms": float(np.percentile(lat, 50)),
                "refused": np.array(refused, dtype=np.float64),
            }
    router.params = base
    return out


def run_sets(
    names: Sequence[str],
    strategies: Sequence[str],
    args: argparse.Namespace,
    embedder: Any,
    params: Any,
    before: Any = None,
) -> dict[str, dict[str, dict[str, Any]]]:
    """:func:`run_set` on each set of ``names``, indexed with ``params`` in ``args.store``, its
    cases :func:`suite_cases`' with ``args.steps`` and ``args.exact``; ``before(name)`` first
    when given. Says on stderr when each set is done."""
    from toolroute.catalog import load_queries
    from toolroute.router import Router

    results: dict[str, dict[str, dict[str, Any]]] = {}
    t_start = time.perf_counter()
    for name in names:
        cat, qf = SETS[name]
        if before is not None:
            before(name)
        with Router(cat, store=args.store, embedder=embedder, params=params) as r:
            r.index()
            queries = load_queries(qf, r.catalog)
            cases = suite_cases(r.catalog, queries, embedder.embed, args.steps, args.exact)
            results[name] = run_set(r, cases, strategies)
        print(f"{name}: done at {time.perf_counter() - t_start:.0f} s", file=sys.stderr)
    return results


def write_suite_report(
    results: dict[str, dict[str, dict[str, Any]]],
    strategies: Sequence[str],
    args: argparse.Namespace,
    script: str,
    seconds: float,
) -> None:
    """The suite's report (:func:`render` against ``args.baseline``) under the command that made
    it, printed and written where ``args`` says."""
    table, summary = render(results, strategies, args.baseline)
    head = (
        f"`python -m benchmarks.{script} {' '.join(sys.argv[1:])}` "
        f"({seconds:.0f} s, MiniLM int8, no LLM)\n\n"
    )
    write_report(head + table, args.out, args.json, summary)


def render(
    results: dict[str, dict[str, dict[str, Any]]], strategies: Sequence[str], baseline: str
) -> tuple[str, dict[str, Any]]:
    from toolroute.bench.paired import REPORT_METRICS, keep_verdict, mean_metrics, paired_bootstrap

    lines: list[str] = []
    summary: dict[str, Any] = {}
    views = ("whole", "oracle", "clauses", "exact")
    for view in views:
        sets = [s for s in results if view in results[s]]
        if not sets:
            continue
        lines += [
            f"### {view} queries" if view != "whole" else "### whole requests",
            "",
            "| set (queries) | strategy | R@1 | R@5 | R@10 | MRR | nDCG@10 | Full@10 | "
            f"ΔR@5 vs {baseline} [95 % CI] | ΔMRR vs {baseline} [95 % CI] | p50 ms |",
            "|---|---|---:|---:|---:|---:|---:|---:|---|---|---:|",
        ]
        for name in sets:
            per_s = results[name][view]
            n = len(next(iter(per_s.values()))["per_query"]["mrr"])
            for s in strategies:
                if s not in per_s:
                    continue
                pq = per_s[s]["per_query"]
                m = mean_metrics(pq)
                cells = " | ".join(f"{m[k]:.3f}" for k in REPORT_METRICS)
                if s == baseline or baseline not in per_s:
                    d5 = dm = "—"
                    ivs = []
                else:
                    base = per_s[baseline]["per_query"]
                    i5 = paired_bootstrap(pq["recall@5"], base["recall@5"])
                    im = paired_bootstrap(pq["mrr"], base["mrr"])
                    d5, dm, ivs = f"{i5} {i5.verdict}", f"{im} {im.verdict}", [i5, im]
                lines.append(
                    f"| {name} ({n}) | {s} | {cells} | {d5} | {dm} | {per_s[s]['p50_ms']:.1f} |"
                )
                summary.setdefault(view, {}).setdefault(s, {})[name] = {
                    **{k: round(v, 4) for k, v in m.items()},
                    "queries": n,
                    "p50_ms": round(per_s[s]["p50_ms"], 2),
                    **(
                        {
                            "d_recall@5": [
                                round(ivs[0].diff, 4),
                                round(ivs[0].low, 4),
                                round(ivs[0].high, 4),
                            ],
                            "d_mrr": [
                                round(ivs[1].diff, 4),
                                round(ivs[1].low, 4),
                                round(ivs[1].high, 4),
                            ],
                        }
                        if ivs
                        else {}
                    ),
                }
        lines.append("")
    # the keep-rule over the whole requests
    whole = {s: results[s]["whole"] for s in results if "whole" in results[s]}
    lines += [
        f"### keep-rule against {baseline} (whole requests, R@5 and MRR)",
        "",
        "| strategy | developed on | verdict | deciding set |",
        "|---|---|---|---|",
    ]
    for s in strategies:
        if s == baseline:
            continue
        ivs = {
            name: [
                paired_bootstrap(per[s]["per_query"][k], per[baseline]["per_query"][k])
                for k in ("recall@5", "mrr")
            ]
            for name, per in whole.items()
            if s in per and baseline in per
        }
        dev = DEVELOPED_ON.get(s.split("/")[0], ())
        kept, why = keep_verdict(ivs, dev)
        lines.append(f"| {s} | {', '.join(dev) or '—'} | {'keep' if kept else 'drop'} | {why} |")
    return "\n".join(lines) + "\n", summary


def main() -> int:
    from benchmarks.variants import register_strategies

    register_strategies()  # the research variants
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--strategy", action="append", default=None)
    ap.add_argument("--baseline", default="default")
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--steps", type=int, default=300, help="per-step cases per set (0: none)")
    ap.add_argument("--exact", type=int, default=300, help="exact-name cases per set (0: none)")
    ap.add_argument("--store", type=Path, default=REPO / ".toolroute" / "bench-store")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument(
        "--abstain",
        choices=("default", "strict", "off"),
        default="default",
        help="the no-tool-fits check (off: the rankings alone, as before the check existed)",
    )
    args = ap.parse_args()
    if missing(SHARED):
        return 2

    from toolroute.embed.onnx import OnnxEmbedder
    from toolroute.route.strategy import RouteParams

    register_experiments()
    strategies = args.strategy or ["default", "steps", "hybrid"]
    if args.baseline not in strategies:
        strategies.insert(0, args.baseline)

    def lodo(name: str) -> None:  # the fusion models trained without this set
        register_lodo(name)
        register_lodo(name, "3", "fusion-v3")

    embedder = OnnxEmbedder()
    t_start = time.perf_counter()
    params = RouteParams(abstain=args.abstain)
    results = run_sets(args.sets.split(","), strategies, args, embedder, params, lodo)
    write_suite_report(results, strategies, args, "recall_suite", time.perf_counter() - t_start)
    return 0


if __name__ == "__main__":
    sys.exit(main())

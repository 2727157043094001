"""Tool tokens per turn: full-schema vs top-k-full vs Tool Attention (seed 002 §4.4).

    python -m benchmarks.tokens [--store DIR] [--scale-store DIR] [--out FILE] [--json]

For each catalog (tool_attention 120 tools, livemcpbench 527 tools, and a 10k-tool catalog of
namespaced copies of the union catalog from benchmarks/scale.py), counts the cl100k tokens a
model sees for tools in one turn under:

- full-schema: every tool's JSON, as a naive MCP client sends them each turn (baseline B1);
- top-k-full: the k=5 best tools' full JSON and nothing else, no summary pool (baseline B3),
  ranked as the `top-k-full` strategy ranks them (flat dense), so `toolroute bench -s
  top-k-full --tokens` gives the same figure;
- Tool Attention: phase 1, the always-resident summary pool, plus phase 2, the full schemas
  of the gated top-5, for both pool kinds: "tools" (one line per tool, the paper's) and
  "servers" (one line per server, toolroute's default above 150 tools).

Phase 2 is the mean over the catalog's queries: each query is routed with the `default`
strategy (k=10) and the candidates are presented with top_k=5; top-k-full likewise, routed by
the `top-k-full` strategy. saving = 1 - total /
full-schema. The paper reports 57,452 full-schema -> 787 phase-1 tokens on its 120-tool testbed.

The 10k index embeds any texts missing from --scale-store (minutes on a cold store).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from benchmarks._report import missing

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "benchmarks"
TOP_K = 5
ROUTE_K = 10
STRATEGY = "default"
POOLS: tuple[Literal["tools", "servers"], ...] = ("tools", "servers")


@dataclass(frozen=True, slots=True)
class PoolRow:
    p1: int
    """Summary-pool tokens (phase 1, constant per catalog)."""
    p2: float
    """Mean promoted-schema tokens per query (phase 2)."""
    total: float
    saving_pct: float


@dataclass(frozen=True, slots=True)
class Row:
    catalog: str
    tools: int
    servers: int
    queries: int
    full_schema: int
    top_k_full: float
    pools: dict[str, PoolRow]
    seconds: float


def measure(
    name: str,
    catalog: Any,
    queries_path: Path,
    store: Path,
    embedder: Any,
    counter: Any,
    *,
    check: bool = True,
) -> Row:
    """Route every query of ``queries_path`` over ``catalog`` and count each scheme's tokens.

    ``check=False`` skips checking the queries' relevant tools against the catalog (the scale
    catalog renames servers; only the query texts are used here)."""
    from toolroute.catalog import load_queries
    from toolroute.present.presenter import PresentConfig, Presenter
    from toolroute.router import Router

    t0 = time.perf_counter()
    queries = load_queries(queries_path, catalog if check else None)
    with Router(catalog, store=store, embedder=embedder) as router:
        report = router.index(
            progress=lambda d, t: print(f"\r  {name}: embedded {d}/{t}", end="", file=sys.stderr)
        )
        if report.embedded:
            print(file=sys.stderr)
        routed = [router.route(q.text, k=ROUTE_K, strategy=STRATEGY) for q in queries]
        b3 = [router.route(q.text, k=TOP_K, strategy="top-k-full") for q in queries]
    bare = Presenter(catalog, PresentConfig(top_k=TOP_K, pool="none"), tokens=counter)
    full = bare.full_schema_tokens()
    top_k_full = sum(bare.present(c, top_k=TOP_K).tokens for c in b3) / len(b3)
    pools: dict[str, PoolRow] = {}
    for kind in POOLS:
        pres = Presenter(catalog, PresentConfig(top_k=TOP_K, pool=kind), tokens=counter)
        shown = [pres.present(c, top_k=TOP_K) for c in routed]
        p2 = sum(p.phase2_tokens for p in shown) / len(shown)
        total = sum(p.tokens for p in shown) / len(shown)
        pools[kind] = PoolRow(
            p1=pres.pool_tokens,
            p2=round(p2, 1),
            total=round(total, 1),
            saving_pct=round(100.0 * (1.0 - total / full), 2),
        )
    return Row(
        catalog=name,
        tools=catalog.tool_count,
        servers=len(catalog.servers),
        queries=len(queries),
        full_schema=full,
        top_k_full=round(top_k_full, 1),
        pools=pools,
        seconds=round(time.perf_counter() - t0, 1),
    )


def table(rows: list[Row]) -> str:
    head = (
        "| catalog | tools | full-schema | top-k-full "
        "| TA pool=tools p1 | p2 | total | saving "
        "| TA pool=servers p1 | p2 | total | saving |"
    )
    lines = [head, "|---|" + "---:|" * 11]
    for r in rows:
        cells = [r.catalog, f"{r.tools:,}", f"{r.full_schema:,}", f"{r.top_k_full:,.0f}"]
        for kind in POOLS:
            p = r.pools[kind]
            cells += [f"{p.p1:,}", f"{p.p2:,.0f}", f"{p.total:,.0f}", f"{p.saving_pct:.1f} %"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def notes(rows: list[Row]) -> str:
    per = ", ".join(f"{r.catalog} {r.queries} queries / {r.servers} servers" for r in rows)
    return (
        f"cl100k_base tokens (toktok-rs). p2: mean over queries ({per}) of the "
        f"top-{TOP_K} schemas after `{STRATEGY}` routing (k={ROUTE_K}); top-k-full: the same "
        f"for the top-{TOP_K} of the `top-k-full` strategy (flat dense, seed 002 B3, as "
        "`toolroute bench -s top-k-full --tokens`); p1 is constant per "
        "catalog. saving = 1 - total / full-schema. Paper (seed 002, 120 tools): 57,452 "
        "full-schema, 787 phase-1 tokens."
    )


def main() -> int:
    from benchmarks.variants import register_strategies

    register_strategies()  # the research variants
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--store",
        type=Path,
        default=REPO / ".toolroute" / "bench-store",
        help="store (embedding cache) for tool_attention and livemcpbench (default: %(default)s)",
    )
    ap.add_argument(
        "--scale-store",
        type=Path,
        default=REPO / ".toolroute" / "scale-store",
        help="store for the 10k catalog; a warm one skips embedding (default: %(default)s)",
    )
    ap.add_argument(
        "--size", type=int, default=10_000, help="tools in the scale catalog (default: 10000)"
    )
    ap.add_argument("--no-scale", action="store_true", help="skip the scale catalog (quick run)")
    ap.add_argument("--out", type=Path, default=None, help="also write the markdown table here")
    ap.add_argument("--json", action="store_true", help="print a JSON object instead of markdown")
    args = ap.parse_args()
    if missing(SHARED):
        return 2

    from benchmarks.scale import make_catalog
    from toolroute.catalog import catalog_from_dict, load_catalog
    from toolroute.embed.onnx import OnnxEmbedder
    from toolroute.present.tokens import TokenCounter

    embedder = OnnxEmbedder()
    counter = TokenCounter()
    t0 = time.perf_counter()
    rows: list[Row] = []
    for name in ("tool_attention", "livemcpbench"):
        cat = load_catalog(SHARED / name / "catalog.json")
        rows.append(
            measure(name, cat, SHARED / name / "queries.jsonl", args.store, embedder, counter)
        )
        print(f"  {name}: {rows[-1].seconds} s", file=sys.stderr)
    if not args.no_scale:
        name = f"scale {args.size // 1000}k" if args.size >= 1000 else f"scale {args.size}"
        cat = catalog_from_dict(make_catalog(args.size), source=f"make_catalog({args.size})")
        queries = REPO / "benchmarks" / "union_queries.jsonl"
        rows.append(measure(name, cat, queries, args.scale_store, embedder, counter, check=False))
        print(f"  {name}: {rows[-1].seconds} s", file=sys.stderr)
    elapsed = round(time.perf_counter() - t0, 1)
    print(f"  total: {elapsed} s", file=sys.stderr)

    md = table(rows) + "\n\n" + notes(rows) + "\n"
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(md, encoding="utf-8")
    if args.json:
        out: dict[str, Any] = {
            "top_k": TOP_K,
            "route_k": ROUTE_K,
            "strategy": STRATEGY,
            "seconds": elapsed,
            "catalogs": {r.catalog: asdict(r) for r in rows},
        }
        print(json.dumps(out, indent=2))
    else:
        print(md, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The two bundled local models against no LLM, in one run: pa-rag-complex (decomposition +
selection) and atr (the filter), per query paired, on several sets.

    python -m benchmarks.llm_models [--sets livemcpbench sealtools] [--sample 24] [--seed 0]
        [--strategies pa-rag-complex atr] [--budget-min 25] [--rows FILE] [--out FILE]

Both servers (Qwen2.5-Coder-0.5B and -1.5B Instruct Q4_K_M on xllamacpp, ``toolroute[llm]`` and
``toolroute[llm-1.5b]``) run side by side, and every query is answered by the strategy with no
LLM (its offline fallbacks), with the 0.5B and with the 1.5B back to back (the order alternates
per query), so a latency ratio is measured under the same machine load, never across runs. Each
set is a seeded random sample of its queries (``--sample``, ``--seed``). Every query's row is
appended to ``--rows`` (JSON lines) as it is measured: a rerun with the same file skips the
rows it holds, so an interrupted run resumes with its latencies intact. ``--budget-min`` stops
starting queries once that much LLM time is spent (the table says how many were measured).

``pa-rag-complex:decompose`` (the default) lets the model decompose and keeps the offline
selector, so decomposition and selection (``atr``'s filter) are each measured on their own, at
one call per query each. The table gives the means, paired bootstrap intervals
(src/toolroute/bench/paired.py) of 1.5B − none, 0.5B − none and 1.5B − 0.5B per set, LLM seconds
per query (and the 1.5B/0.5B ratio of per-query medians) and each server's resident memory
after load and at its peak.
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "benchmarks"
MODELS = ("none", "0.5b", "1.5b")
METRICS = ("set_recall", "set_f1", "recall@5", "recall@10", "mrr")
"""Paired per query. Set recall and F1 are of the set each hands over (sizes differ: the
offline atr keeps 10); recall@5 and @10 compare the rankings (selected tools first) at one size."""


def _rss_mb(pid: int | None) -> dict[str, float]:
    """Resident set (now, and its peak) of a process, in MB, from /proc."""
    out: dict[str, float] = {}
    if pid is None:
        return out
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line[:5].lower()] = round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return out


def _sample(name: str, n: int, seed: int) -> list[str]:
    lines = [ln for ln in (SHARED / name / "queries.jsonl").read_text().splitlines() if ln]
    if n and n < len(lines):
        lines = random.Random(seed).sample(lines, n)
    return lines


def _store(src: Path, dst: Path) -> Path:
    """A private copy of the shared bench store (its cached embeddings spare re-embedding
    big catalogs; a copy so no other engineer's run is blocked by this one's writes)."""
    db = dst / "toolroute.db"
    if not db.exists() and (src / "toolroute.db").exists():
        dst.mkdir(parents=True, exist_ok=True)
        with sqlite3.connect(src / "toolroute.db") as a, sqlite3.connect(db) as b:
            a.backup(b)
    return dst


def _only(llm: Any, stages: frozenset[str]) -> Any:
    """``llm`` answering only ``stages`` (e.g. ``decompose``); every other stage runs its
    offline fallback, so one stage's effect (and cost) is measured on its own."""
    from toolroute.llm.client import ChatLLM

    class OnlyStages(ChatLLM):
        def json(self, stage: str, *args: Any, **kw: Any) -> tuple[Any, bool]:
            if stage not in stages:
                return args[3](), False  # (system, user, schema, fallback)
            return super().json(stage, *args, **kw)

    only = OnlyStages(llm.config)
    only.usage = llm.usage  # one account per model
    return only


def _measure(router: Any, q: Any, spec: str, llm: Any) -> dict[str, Any]:
    """One query through one strategy (``name`` or ``name:stage+stage``, the LLM answering
    only those stages): its metrics and the LLM spend it caused."""
    from toolroute.bench.metrics import query_metrics, set_metrics
    from toolroute.route.strategy import RouteParams
    from toolroute.router import top_k

    strategy, _, stages = spec.partition(":")
    if llm is not None and stages:
        llm = _only(llm, frozenset(stages.split("+")))
    router.params = RouteParams(llm=llm)
    before = (
        (llm.usage.latency_s, llm.usage.calls, llm.usage.fallbacks, llm.usage.completion_tokens)
        if llm
        else (0.0, 0, 0, 0)
    )
    ix = router.built
    notes: dict[str, Any] = {}
    t0 = time.perf_counter()
    order = top_k(router.scores(q.text, strategy, notes=notes), 10)
    wall = time.perf_counter() - t0
    row: dict[str, Any] = query_metrics([ix.keys[j] for j in order], q.groups)
    final = notes.get("selected", order[:5])
    row.update(set_metrics([ix.keys[j] for j in final], q.groups))
    row["set_size"] = len(final)
    row["route_s"] = round(wall, 3)
    row["llm_answered"] = bool(notes.get("llm", False))
    if llm is not None:
        u = llm.usage
        row["llm_s"] = round(u.latency_s - before[0], 3)
        row["llm_calls"] = u.calls - before[1]
        row["llm_fallbacks"] = u.fallbacks - before[2]
        row["llm_output_tokens"] = u.completion_tokens - before[3]
        row["llm_error"] = u.last_error if row["llm_fallbacks"] else None
    return row


def _report(
    rows: list[dict[str, Any]], servers: dict[str, dict[str, Any]], meta: dict[str, Any]
) -> str:
    from toolroute.bench.paired import paired_bootstrap

    out: list[str] = []
    sets = list(dict.fromkeys(r["set"] for r in rows))
    strategies = list(dict.fromkeys(r["strategy"] for r in rows))
    for name in sets:
        for strat in strategies:
            by: dict[str, dict[str, dict[str, Any]]] = {m: {} for m in MODELS}
            for r in rows:
                if r["set"] == name and r["strategy"] == strat:
                    by[r["model"]][r["query"]] = r
            qids = sorted(set.intersection(*(set(v) for v in by.values())))
            if not qids:
                continue
            cx = sum(by["none"][q]["complexity"] == "complex" for q in qids)
            out.append(f"\n### {name} · {strat} · {len(qids)} queries ({cx} complex)\n")
            out.append(
                "| model | set size | "
                + " | ".join(METRICS)
                + " | LLM s/q (mean) | LLM s/q (p50) | LLM calls/q | fallbacks |"
            )
            out.append("|---|" + "---:|" * (len(METRICS) + 5))
            for m in MODELS:
                rs = [by[m][q] for q in qids]
                vals = " | ".join(f"{np.mean([r[k] for r in rs]):.3f}" for k in METRICS)
                llm_s = [r.get("llm_s", 0.0) for r in rs]
                out.append(
                    f"| {m} | {np.mean([r['set_size'] for r in rs]):.1f} | {vals} | "
                    f"{np.mean(llm_s):.2f} | {np.median(llm_s):.2f} | "
                    f"{np.mean([r.get('llm_calls', 0) for r in rs]):.2f} | "
                    f"{sum(r.get('llm_fallbacks', 0) for r in rs)} |"
                )
            out.append("")
            out.append("| paired difference (95 % interval) | " + " | ".join(METRICS) + " |")
            out.append("|---|" + "---:|" * len(METRICS))
            for a, b in (("1.5b", "none"), ("0.5b", "none"), ("1.5b", "0.5b")):
                ivs = [
                    paired_bootstrap(
                        np.array([by[a][q][k] for q in qids], dtype=np.float64),
                        np.array([by[b][q][k] for q in qids], dtype=np.float64),
                    )
                    for k in METRICS
                ]
                cells = " | ".join(f"{iv} {iv.verdict}" for iv in ivs)
                out.append(f"| {a} − {b} | {cells} |")
            small = [by["0.5b"][q].get("llm_s", 0.0) for q in qids]
            large = [by["1.5b"][q].get("llm_s", 0.0) for q in qids]
            if np.median(small) > 0:
                out.append(
                    f"\nLLM time per query, 1.5B / 0.5B (ratio of per-query medians, same "
                    f"run, interleaved): {np.median(large) / np.median(small):.2f}×"
                )
    head = [
        "| server | startup s | RSS after load MB | peak RSS MB |",
        "|---|---:|---:|---:|",
    ]
    for size, s in servers.items():
        head.append(
            f"| {size} | {s.get('startup_s', 0):.1f} | {s.get('loaded', {}).get('vmrss', 0):.0f}"
            f" | {s.get('end', {}).get('vmhwm', 0):.0f} |"
        )
    ratio = ""
    if "0.5b" in servers and "1.5b" in servers:
        a = servers["1.5b"].get("end", {}).get("vmhwm", 0)
        b = servers["0.5b"].get("end", {}).get("vmhwm", 0)
        if b:
            ratio = f"\nPeak RSS 1.5B / 0.5B: {a / b:.2f}×\n"
    return (
        "\n".join(head)
        + "\n"
        + ratio
        + "\n".join(out)
        + "\n\n"
        + ", ".join(f"{k}: {v}" for k, v in meta.items())
        + "\n"
    )


def main() -> int:
    from benchmarks.variants import register_strategies

    register_strategies()  # the research variants
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sets", nargs="+", default=["livemcpbench", "sealtools"])
    ap.add_argument("--sample", type=int, default=24, help="queries per set (0: all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--strategies",
        nargs="+",
        default=["pa-rag-complex:decompose", "atr"],
        help="strategy, or strategy:stage+stage to let the LLM answer only those stages",
    )
    ap.add_argument(
        "--budget-min", type=float, default=25.0, help="LLM minutes, both models, all sets"
    )
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per LLM request")
    ap.add_argument("--threads", type=int, default=None, help="llama.cpp threads per server")
    ap.add_argument("--store-from", type=Path, default=REPO / ".toolroute" / "bench-store")
    ap.add_argument("--store", type=Path, default=Path("/tmp/toolroute-llm-models-store"))
    ap.add_argument("--rows", type=Path, default=None, help="per-query JSON lines (resumable)")
    ap.add_argument("--out", type=Path, default=None, help="markdown + JSON results file")
    args = ap.parse_args()

    from toolroute.catalog import load_queries
    from toolroute.llm.client import ChatLLM, LLMConfig
    from toolroute.llm.local import LocalLLMServer
    from toolroute.router import Router

    rows: list[dict[str, Any]] = []
    if args.rows and args.rows.exists():
        rows = [json.loads(ln) for ln in args.rows.read_text().splitlines() if ln]
    done = {(r["set"], r["strategy"], r["model"], r["query"]) for r in rows}
    started = time.perf_counter()
    servers: dict[str, dict[str, Any]] = {}
    stopped_early = False
    with ExitStack() as stack:
        llms: dict[str, Any] = {"none": None}
        procs: dict[str, LocalLLMServer] = {}
        for size in ("0.5b", "1.5b"):
            srv = stack.enter_context(LocalLLMServer(size=size, threads=args.threads))
            procs[size] = srv
            servers[size] = {"startup_s": srv.startup_s, "loaded": _rss_mb(srv.pid)}
            llms[size] = ChatLLM(LLMConfig(srv.base_url, srv.model, timeout_s=args.timeout))
            print(f"{size}: up in {srv.startup_s:.1f} s", file=sys.stderr, flush=True)
        for name in args.sets:
            lines = _sample(name, args.sample, args.seed)
            qfile = args.store / f"{name}-queries.jsonl"
            store = _store(args.store_from, args.store / name)
            qfile.write_text("\n".join(lines) + "\n")
            router = stack.enter_context(Router(SHARED / name / "catalog.json", store=store))
            router.index()
            qs = load_queries(qfile, router.catalog)
            # an equal share of the budget per set, so a slow first set cannot starve the rest
            spent = sum(r.get("llm_s", 0.0) for r in rows if r["set"] == name)
            for i, q in enumerate(qs):
                if spent > args.budget_min * 60 / len(args.sets):
                    stopped_early = True
                    break
                order = ["none", "0.5b", "1.5b"] if i % 2 == 0 else ["none", "1.5b", "0.5b"]
                for strat in args.strategies:
                    for m in order:
                        if (name, strat, m, q.id) in done:
                            continue
                        row = _measure(router, q, strat, llms[m])
                        row.update(set=name, strategy=strat, model=m, query=q.id)
                        row["complexity"] = q.complexity
                        spent += row.get("llm_s", 0.0)
                        rows.append(row)
                        if args.rows:
                            with args.rows.open("a") as f:
                                f.write(json.dumps(row) + "\n")
                print(
                    f"{name} {i + 1}/{len(qs)}: LLM {spent / 60:.1f} min on this set",
                    file=sys.stderr,
                    flush=True,
                )
        for size, srv in procs.items():
            servers[size]["end"] = _rss_mb(srv.pid)
    meta = {
        "command": "python -m benchmarks.llm_models " + " ".join(sys.argv[1:]),
        "sets": " ".join(args.sets),
        "sample per set": args.sample or "all",
        "seed": args.seed,
        "LLM time (both models)": f"{sum(r.get('llm_s', 0.0) for r in rows) / 60:.1f} min",
        "wall": f"{(time.perf_counter() - started) / 60:.1f} min",
        "stopped at the budget": stopped_early,
    }
    table = _report(rows, servers, meta)
    print(table)
    if args.out:
        args.out.write_text(
            table + "\n```json\n" + json.dumps({"servers": servers, **meta}, indent=1) + "\n```\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

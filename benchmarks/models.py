"""Other models, measured not assumed (issue 25 item 5): bge-small and a cross-encoder.

    python -m benchmarks.models recall [--sets a,b] [--steps 150] [--exact 150] [--store DIR]
        [--out benchmarks/results/models_recall.md] [--json FILE] [--bge-only] [--vs-v1]
    python -m benchmarks.models cost [--queries 200] [--out benchmarks/results/models_cost.md]

``recall`` runs benchmarks/recall_suite.py's views (whole requests, oracle and clause steps,
exact names) on every set, for ``default`` against:

- ``default+bge``: ``default`` unchanged over a :class:`~toolroute.embed.blend.BlendEmbedder`
  index, so every dense stage scores by the mean of the MiniLM and bge-small cosines;
- ``fusion-lodo``: the learned fusion v1 trained without the set (results/fusion/);
- ``fusion2-lodo``: v2, the same plus bge-small's cosines, trained without the set
  (results/fusion-v2/, benchmarks/train_fusion.py --second bge);
- with ``--bge-only``: ``default`` over a bge-small index alone (``default@bge``).

``--vs-v1`` runs only the two fusion models, with v1 as the baseline of the intervals.

Every strategy answers the same cases (the planner's step texts come from MiniLM), so the
paired intervals compare like with like. bge's vectors are cached in the store under bge's
own model id, beside MiniLM's.

``cost`` measures, in one process and one run, per-query latency (p50/p95 over the same
queries) of MiniLM, bge-small, the blend, and the cross-encoder over 5 and 10 candidates,
each as a ratio to MiniLM; and in a fresh subprocess per model, the RSS a model adds once
loaded and warmed (what serving it costs in memory).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import recall_suite as rs
from benchmarks._report import missing, write_report
from benchmarks.train_fusion import second_view

REPO = rs.REPO
RESULTS = REPO / "benchmarks" / "results"

rs.DEVELOPED_ON.update(
    {
        # bge's blend and v2's features were chosen before any of these figures were seen;
        # v2's lodo model never saw the set it is scored on
        "default+bge": ("livemcpbench",),  # shared/MODELS.md probed RRF of both there
        "default@bge": (),
        "fusion2-lodo": (),
    }
)


def register_lodo(held_out: str, directory: Path, name: str) -> bool:
    """``name``: the fusion model of ``directory/lodo-<held_out>.json`` (trained without it)."""
    from toolroute.route import strategy as st
    from toolroute.route.fusion import fused_scores, load_model

    path = directory / f"lodo-{held_out}.json"
    if not path.exists():
        return False
    model = load_model(path)

    def score(ix: Any, q: Any, p: Any) -> Any:
        return fused_scores(ix, q, p, model)

    st.register_strategy(
        name,
        lambda: st.Strategy(name, score, "intent-spans", f"fusion without {held_out}"),
        overwrite=True,
    )
    return True


def recall(args: argparse.Namespace) -> int:
    from toolroute.catalog import load_queries
    from toolroute.embed.bge import BgeEmbedder
    from toolroute.embed.blend import BlendEmbedder
    from toolroute.embed.cache import CachedEmbedder
    from toolroute.embed.onnx import OnnxEmbedder
    from toolroute.route.fusion import attach_second_dense
    from toolroute.route.strategy import RouteParams
    from toolroute.router import Router
    from toolroute.store import open_store

    minilm, bge = OnnxEmbedder(), BgeEmbedder()
    results: dict[str, dict[str, dict[str, Any]]] = {}
    names = ["default", "default+bge", "fusion-lodo", "fusion2-lodo"]
    if args.bge_only:
        names.append("default@bge")
    baseline = "default"
    if args.vs_v1:
        names, baseline = ["fusion-lodo", "fusion2-lodo"], "fusion-lodo"
    t_start = time.perf_counter()
    for name in args.sets.split(","):
        cat, qf = rs.SETS[name]
        mine = [] if args.vs_v1 else ["default"]
        if register_lodo(name, RESULTS / "fusion", "fusion-lodo"):
            mine.append("fusion-lodo")
        if register_lodo(name, RESULTS / "fusion-v2", "fusion2-lodo"):
            mine.append("fusion2-lodo")
        with Router(cat, store=args.store, embedder=minilm, params=RouteParams()) as r:
            r.index()
            attach_second_dense(r.built, second_view(cat, args.store, bge, r.built.keys))
            queries = load_queries(qf, r.catalog)
            cases = rs.suite_cases(r.catalog, queries, minilm.embed, args.steps, args.exact)
            results[name] = rs.run_set(r, cases, mine)
        if args.vs_v1:
            print(f"{name}: done at {time.perf_counter() - t_start:.0f} s", file=sys.stderr)
            continue
        # The blend index is assembled from both models' cached vectors; queries then go
        # through the raw models, as a served router's would (MiniLM's late-chunked intents).
        store = open_store(args.store)
        try:
            cached = BlendEmbedder(CachedEmbedder(minilm, store), CachedEmbedder(bge, store))
            with Router(cat, store=args.store, embedder=cached, params=RouteParams()) as rb:
                rb.index()
                rb.embedder = BlendEmbedder(minilm, bge)
                _merge(results[name], rs.run_set(rb, cases, ["default"]), "default+bge")
            if args.bge_only:
                with Router(cat, store=args.store, embedder=bge, params=RouteParams()) as r2:
                    r2.index()
                    _merge(results[name], rs.run_set(r2, cases, ["default"]), "default@bge")
        finally:
            store.close()
        print(f"{name}: done at {time.perf_counter() - t_start:.0f} s", file=sys.stderr)
    table, summary = rs.render(results, names, baseline)
    took = time.perf_counter() - t_start
    head = (
        f"`python -m benchmarks.models {' '.join(sys.argv[1:])}` ({took:.0f} s, no LLM; "
        "`default+bge`: mean of MiniLM and bge-small cosines in every dense stage; "
        "`fusion2-lodo`: learned fusion with bge-small's cosines, trained without the set)\n\n"
    )
    write_report(head + table, args.out, args.json, summary)
    return 0


def _merge(into: dict[str, dict[str, Any]], got: dict[str, dict[str, Any]], as_: str) -> None:
    for view, per in got.items():
        into.setdefault(view, {})[as_] = per["default"]


_RSS_PROBE = """
import json, sys
import numpy, onnxruntime, tokenizers  # the runtime alone is not the model's cost
def rss_kb():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
before = rss_kb()
which = sys.argv[1]
texts = json.loads(sys.stdin.read())
if which == "cross":
    from toolroute.embed.cross import CrossEncoder
    m = CrossEncoder()
    for t in texts:
        m.score(t, texts[:10])
else:
    from toolroute.embed.bge import BgeEmbedder
    from toolroute.embed.blend import BlendEmbedder
    from toolroute.embed.onnx import OnnxEmbedder
    m = {"minilm": OnnxEmbedder, "bge": BgeEmbedder,
         "blend": lambda: BlendEmbedder(OnnxEmbedder(), BgeEmbedder())}[which]()
    for t in texts:
        m.embed([t])
after = rss_kb()
print(json.dumps({"before_kb": before, "after_kb": after}))
"""


def cost(args: argparse.Namespace) -> int:
    from toolroute.catalog import load_catalog, load_queries
    from toolroute.embed.bge import BgeEmbedder
    from toolroute.embed.blend import BlendEmbedder
    from toolroute.embed.cross import CrossEncoder
    from toolroute.embed.onnx import OnnxEmbedder

    cat, qf = rs.SETS["livemcpbench"]
    catalog = load_catalog(cat)
    queries = [q.text for q in load_queries(qf, catalog)]
    docs = [f"{t.name}: {t.description}" for t in catalog.tools()]
    texts = (queries * (args.queries // len(queries) + 1))[: args.queries]
    minilm, bge = OnnxEmbedder(), BgeEmbedder()
    blend = BlendEmbedder(minilm, bge)
    models: dict[str, Any] = {
        "MiniLM-L6 (default)": lambda t: minilm.embed([t]),
        "bge-small": lambda t: bge.embed([t]),
        "blend (both)": lambda t: blend.embed([t]),
    }
    cross = CrossEncoder()
    rng = np.random.default_rng(0)
    pick = [list(rng.choice(len(docs), 10, replace=False)) for _ in texts]
    for n in (5, 10):
        models[f"cross-encoder, {n} candidates"] = lambda t, n=n: cross.score(
            t, [docs[j] for j in pick[texts.index(t)][:n]]
        )
    # Warm every model first, then time them interleaved query by query, so load drift on
    # the shared machine hits each model alike.
    for fn in models.values():
        fn(texts[0])
    lat: dict[str, list[float]] = {k: [] for k in models}
    for t in texts:
        for k, fn in models.items():
            t0 = time.perf_counter()
            fn(t)
            lat[k].append((time.perf_counter() - t0) * 1000)
    base = float(np.median(lat["MiniLM-L6 (default)"]))
    rss: dict[str, float] = {}
    for key, which in (
        ("MiniLM-L6 (default)", "minilm"),
        ("bge-small", "bge"),
        ("blend (both)", "blend"),
        ("cross-encoder, 10 candidates", "cross"),
    ):
        out = subprocess.run(
            [sys.executable, "-c", _RSS_PROBE, which],
            input=json.dumps(queries[:20]),
            capture_output=True,
            text=True,
            check=True,
            timeout=600,
        )
        got = json.loads(out.stdout)
        rss[key] = (got["after_kb"] - got["before_kb"]) / 1024
    lines = [
        f"`python -m benchmarks.models {' '.join(sys.argv[1:])}` — {len(texts)} livemcpbench "
        "queries, one at a time (candidates: random livemcpbench tools), models interleaved "
        "per query in one process (2 shared cores: read the ratios, not the milliseconds); "
        "RSS: what a fresh process's resident memory "
        "grows by (VmRSS, after numpy/onnxruntime/tokenizers are imported) once the model is "
        "loaded and has answered 20 queries (the cross-encoder: 20 queries × 10 candidates).",
        "",
        "| model | p50 ms | p95 ms | p50 ÷ MiniLM | added RSS (MB) |",
        "|---|---:|---:|---:|---:|",
    ]
    for k, v in lat.items():
        p50, p95 = float(np.median(v)), float(np.percentile(v, 95))
        r = rss.get(k)
        lines.append(
            f"| {k} | {p50:.1f} | {p95:.1f} | {p50 / base:.2f}× | "
            f"{f'{r:.0f}' if r is not None else '—'} |"
        )
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    lines += ["", f"(this process, all models loaded: peak RSS {own:.0f} MB)", ""]
    text = "\n".join(lines)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    print(text)
    return 0


def main() -> int:
    from benchmarks.variants import register_strategies

    register_strategies()  # the research variants
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("recall")
    r.add_argument("--sets", default=",".join(rs.SETS))
    r.add_argument("--steps", type=int, default=150)
    r.add_argument("--exact", type=int, default=150)
    r.add_argument("--store", type=Path, default=REPO / ".toolroute" / "bench-store")
    r.add_argument("--out", type=Path, default=None)
    r.add_argument("--json", type=Path, default=None)
    r.add_argument("--bge-only", action="store_true")
    r.add_argument("--vs-v1", action="store_true")
    c = sub.add_parser("cost")
    c.add_argument("--queries", type=int, default=200)
    c.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    if missing(rs.SHARED):
        return 2
    return recall(args) if args.cmd == "recall" else cost(args)


if __name__ == "__main__":
    sys.exit(main())

"""Scale benchmark: index build rate, memory and route latency at 10k and 100k tools, each
latency beside the floor measured in the same run.

Catalogs are built from shared/benchmarks/union (904 tools) as namespaced copies with light,
seeded perturbation: each copy gets a namespace prefix on its server ids, and each tool
description one of four variants (as is, one word dropped, two words swapped, a suffix). Tool
and server names stay real, so copies compete with each other as mirrors of a server would.

    python -m benchmarks.scale --sizes 10000 100000 [--store DIR] [--rounds 3] [--out FILE]
                               [--baseline-src OTHER/src]
    python -m benchmarks.scale --fresh-only CATALOG --store DIR [--baseline-src OTHER/src]
                               [--repeats 3]

Reports per size: tools, build seconds (cold: texts not in the cache are embedded; the cache
is then reused by the larger size, as a live deployment would), texts embedded, tools/s, the
size of the index's arrays, route latency per strategy over the union queries (warm, query
embedding included), and a fresh process (``--probe``, run as a child) that loads the built
store — the index snapshot the build wrote, memory-mapped — and routes every query: its load
time, first and warm route, and peak RSS; with ``--baseline-src``, the same probe with another
source tree's code on the same store (before/after of a restart in one run; the load
average beside each). ``--fresh-only`` runs only those probes over a store already indexed.
Also one query's scoring with the tool matrix stored as float32, float16 and int8, the
measurement behind keeping float32.

The learning budget: ``default`` (adaptive) with a used statistics book (5,000 outcomes, a
usage memory row for every query) against ``steps``, its relevance without the learned
ranking and the memory, as a fraction of the floor's p50 (budget: 0.2).

The floor is what any dense router must pay: a bare onnxruntime session on the same model,
with the router's session options (tokenise, one forward pass, mean-pool, normalise), one
matrix-vector product with the same tool matrix and a top-10. Paths run in blocks (every
query through one path, then the next; the order rotates each round), never call-by-call
interleaved: two sessions' thread pools slow each other on 2 cores. Every p50 is reported
as a ratio of the floor's p50 from the same run. BLAS is limited to one thread for the floor
as for the router's scoring. Latency is measured, never asserted; on a shared machine only
the ratios are comparable across runs.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from benchmarks._report import missing

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "benchmarks"
NAMESPACES = [
    "acme",
    "globex",
    "initech",
    "umbrella",
    "hooli",
    "stark",
    "wayne",
    "wonka",
    "tyrell",
    "cyberdyne",
    "aperture",
    "soylent",
    "vandelay",
    "dunder",
    "pied",
    "oscorp",
    "gringotts",
    "monarch",
    "nakatomi",
    "weyland",
]


def perturb(text: str, variant: int, seed: str) -> str:
    """Variant 0 is the text as is; 1 drops a word, 2 swaps two, 3 adds a suffix.

    The edit position depends only on (seed, variant), so a tool has at most four distinct
    descriptions however many copies are made: the embedding work stays bounded (~4x the
    union catalog) and the 100k build measures the index, not just the model.
    """
    words = text.split()
    rng = random.Random(f"{seed}/{variant}")
    if variant == 1 and len(words) > 4:
        del words[rng.randrange(len(words))]
    elif variant == 2 and len(words) > 4:
        i = rng.randrange(len(words) - 1)
        words[i], words[i + 1] = words[i + 1], words[i]
    elif variant == 3:
        words.append("(mirror)")
    return " ".join(words)


def make_catalog(size: int, seed: int = 7) -> dict[str, Any]:
    base = json.loads((SHARED / "union" / "catalog.json").read_text(encoding="utf-8"))
    rng = random.Random(seed)
    servers: list[dict[str, Any]] = []
    count, copy = 0, 0
    while count < size:
        ns = NAMESPACES[copy % len(NAMESPACES)]
        for s in base["servers"]:
            if count >= size:
                break
            tools = [
                {
                    **t,
                    "description": perturb(
                        t.get("description") or "", rng.randrange(4), f"{s['id']}/{t['name']}"
                    ),
                }
                for t in s["tools"][: size - count]
            ]
            servers.append(
                {
                    "id": f"{ns}{copy}/{s['id']}",
                    "name": s.get("name") or s["id"],
                    "description": s.get("description") or "",
                    "tools": tools,
                }
            )
            count += len(tools)
        copy += 1
    return {"servers": servers}


def rss_mb() -> float:
    """Peak RSS of this process's own address space (Linux ``VmHWM``). Not ``ru_maxrss``: a
    child started with vfork inherits its parent's peak at exec, so a probe spawned by a
    process that built a 100k index would report the builder's peak, not its own."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def array_mb(ix: Any) -> float:
    """Bytes of the index's numeric arrays (dense matrices and per-tool arrays)."""
    arrays = [ix.tool_vectors, ix.flat_vectors, ix.server_vectors, ix.server_of, ix.prices]
    return sum(a.nbytes for a in arrays) / 2**20


class Floor:
    """A bare onnxruntime session + one matvec + top-k: the floor under every dense route."""

    def __init__(self, matrix: npt.NDArray[np.float32]) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        from toolroute.embed.onnx import (
            MINILM,
            MODEL_ENV,
            default_model_files,
            minilm_model_files,
            model_dir_files,
        )

        # the router's own model: the default, or the one TOOLROUTE_EMBED_MODEL chooses
        chosen = os.environ.get(MODEL_ENV, "")
        model, tokenizer = (
            minilm_model_files()
            if chosen == MINILM
            else model_dir_files(Path(chosen))
            if chosen
            else default_model_files()
        )
        self.tok = Tokenizer.from_file(str(tokenizer))
        self.tok.no_padding()
        self.tok.enable_truncation(256)
        # The router's own session options (embed/onnx.py): the floor differs from the router
        # only in what runs around the session. A floor whose idle threads spin measured
        # slower than the router on a loaded machine, which is no floor.
        opts = ort.SessionOptions()
        opts.inter_op_num_threads = 1
        opts.enable_cpu_mem_arena = False
        opts.enable_mem_pattern = False
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(str(model), opts, providers=["CPUExecutionProvider"])
        self.matrix = matrix

    def route(self, query: str, k: int = 10) -> npt.NDArray[np.intp]:
        enc = self.tok.encode(query)
        ids = np.array([enc.ids], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        feeds["token_type_ids"] = np.zeros_like(ids)
        v = self.session.run(None, feeds)[0][0].mean(axis=0)
        v /= np.linalg.norm(v)
        s = self.matrix @ v
        top = np.argpartition(-s, k)[:k]
        out: npt.NDArray[np.intp] = top[np.argsort(-s[top])]
        return out


def time_blocks(
    paths: dict[str, Any],
    queries: list[str],
    rounds: int,
    cpu: dict[str, list[float]] | None = None,
) -> dict[str, list[float]]:
    """ms per query per path: each round runs every query through one path, then the next.
    With ``cpu``, also this process's CPU ms per query per path there (what a loaded shared
    machine inflates far less than wall time)."""
    from threadpoolctl import threadpool_limits

    ms: dict[str, list[float]] = {name: [] for name in paths}
    if cpu is not None:
        cpu.update({name: [] for name in paths})
    order = list(paths)
    with threadpool_limits(limits=1, user_api="blas"):
        for name in order:  # warm-up
            for q in queries[:5]:
                paths[name](q)
        for _ in range(rounds):
            for name in order:
                fn = paths[name]
                for q in queries:
                    t, c = time.perf_counter(), time.process_time()
                    fn(q)
                    ms[name].append((time.perf_counter() - t) * 1000)
                    if cpu is not None:
                        cpu[name].append((time.process_time() - c) * 1000)
            order = order[1:] + order[:1]
    return ms


def probe(catalog: Path, store: Path, queries: list[str]) -> dict[str, Any]:
    """A fresh process: load the built store (the index snapshot when there is one) and
    route every query with ``default``: load seconds, the first route (one-off per-index
    work included), the warm p50 and the minor page faults of the warm routes (glibc's heap
    tuning, heap.py), peak RSS, and whether the dense matrix is memory-mapped."""
    from toolroute import heap
    from toolroute.router import Router

    if hasattr(heap, "fix_mmap_threshold"):
        heap.fix_mmap_threshold()  # as the toolroute command (the process's entry point) does
    t0 = time.perf_counter()
    with Router(catalog, store=store) as router:
        ix = router.built
        load_s = time.perf_counter() - t0
        t = time.perf_counter()
        router.route(queries[0], k=10)
        first_ms = (time.perf_counter() - t) * 1000
        ms = []
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for q in queries:
            t = time.perf_counter()
            router.route(q, k=10)
            ms.append((time.perf_counter() - t) * 1000)
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
        return {
            "tools": ix.size,
            "load_s": round(load_s, 2),
            "first_route_ms": round(first_ms, 1),
            "load_and_first_route_s": round(load_s + first_ms / 1000, 2),
            "route_p50_ms": round(float(np.percentile(ms, 50)), 2),
            "warm_minor_faults": faults,
            "peak_rss_mb": round(rss_mb(), 1),
            "array_mb": round(array_mb(ix), 1),
            "mapped": isinstance(ix.tool_vectors, np.memmap),
        }


def fresh_processes(
    catalog: Path, store: Path, baseline_src: Path | None, repeats: int = 1
) -> dict[str, Any]:
    """The probe as a child process with this tree's code and, with ``baseline_src``, with
    another tree's (``PYTHONPATH``), alternating, ``repeats`` times each: the before/after of
    a restart in one run, on one store (the baseline ignores files it does not know)."""
    import os

    trees = {"this": REPO / "src"}
    if baseline_src is not None:
        trees = {"baseline": baseline_src, **trees}
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
    for _ in range(repeats):
        for name, src in trees.items():
            env = {**os.environ, "PYTHONPATH": str(src)}
            t = time.perf_counter()
            out = subprocess.run(
                [sys.executable, "-m", "benchmarks.scale", "--probe", str(catalog)]
                + ["--store", str(store)],
                cwd=REPO,
                capture_output=True,
                text=True,
                timeout=3600,
                env=env,
            )
            if out.returncode:
                raise RuntimeError(f"probe with {src} failed:\n{out.stderr[-3000:]}")
            row = json.loads(out.stdout.strip().splitlines()[-1])
            row["process_s"] = round(time.perf_counter() - t, 2)
            row["loadavg_1m"] = round(os.getloadavg()[0], 2)
            runs[name].append(row)
    return runs


def matvec_ms(matrix: npt.NDArray[np.float32], reps: int = 5) -> dict[str, float]:
    """Best-of-``reps`` ms of one query's scoring over ``matrix`` stored as float32, float16
    and int8 (what a compact index would trade for memory), BLAS on one thread."""
    from threadpoolctl import threadpool_limits

    v = matrix[0].astype(np.float32)
    scaled = np.clip(np.asarray(matrix) * 127, -127, 127)
    forms: dict[str, Any] = {
        "float32": (np.asarray(matrix, dtype=np.float32), v),
        "float16": (np.asarray(matrix, dtype=np.float16), v.astype(np.float16)),
        "int8": (scaled.astype(np.int8), np.clip(v * 127, -127, 127).astype(np.int8)),
    }
    del scaled
    out: dict[str, float] = {}
    with threadpool_limits(limits=1, user_api="blas"):
        for name, (m, q) in forms.items():
            best = float("inf")
            for _ in range(reps):
                t = time.perf_counter()
                if name == "int8":
                    m.astype(np.int32) @ q.astype(np.int32)
                else:
                    m @ q
                best = min(best, time.perf_counter() - t)
            out[name] = round(best * 1000, 2)
    return out


def exact_overlap(router: Any, queries: list[str]) -> float | None:
    """Recall@10 of ``default`` against exact search: the share of its top 10 whose exact score
    reaches exact search's 10th best (mirrored tools tie, so a set comparison would count a
    tied mirror as a miss). Above ``intent_exact_top`` tools ``default`` scores sub-intents
    only where a bound says they matter; 0 scores every tool. None for a toolroute without
    that parameter."""
    from dataclasses import fields, replace

    from toolroute.router import top_k

    p = router.params
    if hasattr(p, "multi"):  # parameters grouped by strategy family
        exact_params = replace(p, multi=replace(p.multi, intent_exact_top=0))
    elif "intent_exact_top" in {f.name for f in fields(p)}:  # an older tree's flat knobs
        exact_params = replace(p, intent_exact_top=0)
    else:
        return None
    # the ranking's shortcut against exact scoring: with the abstention off in both (a refused
    # request has no ranking to compare)
    exact_params = replace(exact_params, abstain="off")
    params, router.params = router.params, replace(p, abstain="off")
    try:
        picks = [top_k(router.scores(q, "default"), 10) for q in queries]
    finally:
        router.params = params
    params, router.params = router.params, exact_params
    try:
        hits = []
        for q, pick in zip(queries, picks, strict=True):
            exact = router.scores(q, "default")
            tenth = exact[top_k(exact, 10)[-1]]
            hits.append(float(np.mean(exact[pick] >= tenth - 1e-6)))
    finally:
        router.params = params
    return round(float(np.mean(hits)), 4)


def _pct(v: list[float], q: float) -> float:
    return round(float(np.percentile(v, q)), 2)


def learned_book(router: Any, queries: list[str], seed: int = 11) -> Any:
    """A statistics book as a used gateway's: outcomes of 5,000 calls over 2,000 tools and a
    usage memory of every query (two tools each, one failed), so ``default`` (adaptive)
    pays for its learned ranking and its memory lookup, not for empty tables."""
    from toolroute.stats import Outcome, StatsBook

    ix = router.built
    rng = np.random.default_rng(seed)
    book = StatsBook(ix.catalog)
    rows = rng.choice(ix.size, size=min(2000, ix.size), replace=False)
    for _ in range(5000):
        server, tool = ix.keys[int(rng.choice(rows))]
        book.record(Outcome(server, tool, bool(rng.random() < 0.8), float(rng.random())))
    vectors = router.embedder.embed(queries)
    for q, v in zip(queries, vectors, strict=True):
        for j, ok in ((int(rng.integers(ix.size)), True), (int(rng.integers(ix.size)), False)):
            book.memory.add("bench", q, v, ix.keys[j], ok)
    return book


def measure(
    size: int,
    store: Path,
    queries: list[str],
    strategies: list[str],
    rounds: int,
    baseline_src: Path | None = None,
) -> dict[str, Any]:
    from toolroute.router import Router, top_k

    work = Path(tempfile.mkdtemp(prefix=f"scale-{size}-"))
    cat_path = work / "catalog.json"
    cat_path.write_text(json.dumps(make_catalog(size)), encoding="utf-8")
    with Router(cat_path, store=store) as router:
        t0 = time.perf_counter()
        report = router.index(
            progress=lambda d, t, n=size: print(
                f"\r  {n}: embedded {d}/{t}", end="", file=sys.stderr
            )
        )
        build_s = time.perf_counter() - t0
        print(file=sys.stderr)
        ix = router.built
        row: dict[str, Any] = {
            "tools": ix.size,
            "build_s": round(build_s, 2),
            "embedded": report.embedded,
            "tools_per_s": round(ix.size / build_s, 1),
            "build_peak_rss_mb": round(rss_mb(), 1),
            "array_mb": round(array_mb(ix), 1),
        }
        floor = Floor(ix.tool_vectors)
        paths: dict[str, Any] = {"floor": floor.route}
        for strat in strategies:
            paths[strat] = lambda q, s=strat: top_k(router.scores(q, s), 10)
        # the learning budget: default (adaptive) with a used book vs its relevance (steps)
        book = learned_book(router, queries)
        paths["steps"] = lambda q: top_k(router.scores(q, "steps"), 10)
        paths["default (learned)"] = lambda q: top_k(
            router.scores(q, "default", stats=book, client="bench"), 10
        )
        cpu: dict[str, list[float]] = {}
        ms = time_blocks(paths, queries, rounds, cpu)
        row["default_vs_exact_at_10"] = exact_overlap(router, queries)
        base = float(np.percentile(ms["floor"], 50))
        row["latency_ms"] = {
            name: {
                "p50": _pct(v, 50),
                "p95": _pct(v, 95),
                "ratio_p50": round(_pct(v, 50) / base, 2),
            }
            for name, v in ms.items()
        }
        row["learning_over_floor"] = round(
            (_pct(ms["default (learned)"], 50) - _pct(ms["steps"], 50)) / base, 3
        )
        row["cpu_ms"] = {name: _pct(v, 50) for name, v in cpu.items()}
        c50 = row["cpu_ms"]
        row["learning_over_floor_cpu"] = round(
            (c50["default (learned)"] - c50["steps"]) / c50["floor"], 3
        )
        row["matvec_ms"] = matvec_ms(ix.tool_vectors)
        row["queries"] = len(queries)
        row["rounds"] = rounds
    fresh = fresh_processes(cat_path, store, baseline_src)
    row["fresh_process"] = fresh["this"][0]
    if "baseline" in fresh:
        row["fresh_process_baseline"] = fresh["baseline"][0]
    return row


def markdown(results: dict[str, Any], strategies: list[str]) -> str:
    paths = ["floor", *strategies]
    lines = [
        "| tools | build s | embedded | arrays MB | default top-10 vs exact | "
        + " | ".join(f"{p} p50 ms (x floor)" for p in paths)
        + " |",
        "|" + "---:|" * (5 + len(paths)),
    ]
    for r in results.values():
        lat = " | ".join(
            f"{r['latency_ms'][p]['p50']:.1f} ({r['latency_ms'][p]['ratio_p50']:.2f}x)"
            for p in paths
        )
        lines.append(
            f"| {r['tools']} | {r['build_s']} | {r['embedded']} | {r['array_mb']} | "
            f"{r['default_vs_exact_at_10'] or 'exact'} | {lat} |"
        )
    lines += [
        "",
        "| tools | steps p50 ms | default with a used book p50 ms | learning + memory over "
        "steps, x floor (budget 0.2) | same from CPU ms: floor / steps / default | x floor |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results.values():
        lat, c = r["latency_ms"], r.get("cpu_ms", {})
        cpu = (
            f"{c['floor']} / {c['steps']} / {c['default (learned)']} | "
            f"{r['learning_over_floor_cpu']:.3f}"
            if c
            else "| "
        )
        lines.append(
            f"| {r['tools']} | {lat['steps']['p50']:.1f} | "
            f"{lat['default (learned)']['p50']:.1f} | {r['learning_over_floor']:.3f} | {cpu} |"
        )
    lines += ["", *fresh_table(results)]
    lines += [
        "",
        "| tools | build peak RSS MB | matvec ms f32 / f16 / int8 |",
        "|---:|---:|---:|",
    ]
    for r in results.values():
        mv = r["matvec_ms"]
        lines.append(
            f"| {r['tools']} | {r['build_peak_rss_mb']} | "
            f"{mv['float32']} / {mv['float16']} / {mv['int8']} |"
        )
    any_row = next(iter(results.values()))
    lines += [
        "",
        f"- {any_row['queries']} union queries x {any_row['rounds']} rounds per path, in blocks "
        "(rotating order); floor = bare onnxruntime session + one matvec over the tool matrix + "
        "top-10; BLAS limited to one thread; 2 shared cores, so compare ratios, not ms.",
        "- fresh process: a new process loads the built store (the index snapshot, no "
        "embedding) and routes every query with `default`; first route includes the one-off "
        "per-index work; peak RSS is its own (VmHWM). arrays MB: dense matrices and per-tool "
        "numeric arrays; build peak RSS: the building process (embedding cache reads, BM25, "
        "snapshot write).",
        "- matvec: best of 5 of one query's scores over the tool matrix stored as float32 "
        "(BLAS), float16 and int8 (numpy, no BLAS kernel): what a compact matrix would cost.",
    ]
    return "\n".join(lines) + "\n"


def fresh_table(results: dict[str, Any]) -> list[str]:
    """Fresh-process rows: this tree's, and the baseline tree's where it ran."""
    lines = [
        "| tools | code | fresh process: load s | first route ms | load + first route s "
        "| default p50 ms | warm page faults | peak RSS MB | matrix mapped | load avg |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for r in results.values():
        for code, key in (("baseline", "fresh_process_baseline"), ("this", "fresh_process")):
            runs = r.get(key)
            lines.extend(
                f"| {r['tools']} | {code} | {f['load_s']} | {f['first_route_ms']} | "
                f"{f.get('load_and_first_route_s', '')} | {f['route_p50_ms']} | "
                f"{f.get('warm_minor_faults', '')} | {f['peak_rss_mb']} | "
                f"{'yes' if f['mapped'] else 'no'} | "
                f"{f.get('loadavg_1m', '')} |"
                for f in (runs if isinstance(runs, list) else [runs] if runs else [])
            )
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument(
        "--strategies", nargs="+", default=["default", "hybrid", "dense", "bm25", "baseline-dense"]
    )
    ap.add_argument(
        "--store", type=Path, default=None, help="store dir (reuse it to skip embedding)"
    )
    ap.add_argument("--queries", type=Path, default=REPO / "benchmarks" / "union_queries.jsonl")
    ap.add_argument("--rounds", type=int, default=3, help="blocks per path")
    ap.add_argument("--out", type=Path, help="write the markdown table here (+ .json beside it)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument(
        "--baseline-src",
        type=Path,
        help="also run the fresh-process probe with this source tree (e.g. main's src)",
    )
    ap.add_argument(
        "--fresh-only",
        type=Path,
        metavar="CATALOG",
        help="only the fresh-process probes over CATALOG, already indexed in --store",
    )
    ap.add_argument("--repeats", type=int, default=3, help="probes per tree with --fresh-only")
    ap.add_argument("--probe", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if missing(SHARED / "union" / "catalog.json"):
        return 2

    from toolroute.catalog import load_queries

    texts = [q.text for q in load_queries(args.queries)]
    store = args.store or Path(tempfile.mkdtemp(prefix="toolroute-scale-"))
    if args.probe:
        print(json.dumps(probe(args.probe, store, texts)))
        return 0
    if args.fresh_only:
        fresh = fresh_processes(args.fresh_only, store, args.baseline_src, args.repeats)
        first = fresh["this"][0]
        row = {
            "tools": first.get("tools", "?"),
            "fresh_process": fresh["this"],
            "fresh_process_baseline": fresh.get("baseline"),
        }
        md = "\n".join(fresh_table({"fresh": row})) + "\n"
        if args.out:
            args.out.write_text(md)
            args.out.with_suffix(".json").write_text(json.dumps(fresh, indent=2) + "\n")
        print(md.rstrip("\n"))
        return 0
    from benchmarks.variants import register_strategies

    register_strategies()  # baseline-dense
    results: dict[str, Any] = {}
    for size in args.sizes:
        results[str(size)] = measure(
            size, store, texts, args.strategies, args.rounds, args.baseline_src
        )
        print(f"  {size}: {json.dumps(results[str(size)])}", file=sys.stderr)
    md = markdown(results, args.strategies)
    if args.out:
        args.out.write_text(md)
        args.out.with_suffix(".json").write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2) if args.json else md.rstrip("\n"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

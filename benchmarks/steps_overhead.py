"""What the ``steps`` priors cost on top of ``multi`` at 10k (and more) tools, model excluded.

    python -m benchmarks.steps_overhead [--sizes 10000] [--out benchmarks/results/steps_overhead.md]

The catalog is benchmarks/scale.py's (namespaced copies of the 904-tool union catalog). To time
the scoring stages alone, tools and queries are embedded by a fast deterministic hashing
embedder (quality is irrelevant here) and each query's context is built once, outside the
timer; ``multi``, ``steps`` and each of steps' three stages (on multi's scores) then run on
the same contexts, one BLAS thread, warm, interleaved query by query (the provider graph and
the best file writer are computed on the first query, as in a live router). On a loaded
machine the whole-strategy times swing; the stage times are the overhead ``steps`` adds. The
model's own query time is measured by benchmarks/scale.py (``query embed``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._report import write_report

REPO = Path(__file__).resolve().parents[1]


class _Hashing:
    """Bag of words hashed into 384 dims: fast, deterministic, only for timing."""

    model_id = "bench/hashing-384"
    dim = 384

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        from toolroute.embed.base import l2_normalise
        from toolroute.index.document import tokenise

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for tok in tokenise(t) or ["<empty>"]:
                out[i, int(hashlib.md5(tok.encode()).hexdigest()[:8], 16) % self.dim] += 1.0
        return l2_normalise(out)


def _time_stages(ix: Any, ctxs: list[Any], prm: Any) -> dict[str, list[float]]:
    from threadpoolctl import threadpool_limits

    from toolroute.route import stage as st
    from toolroute.route.expand import expand
    from toolroute.route.precompute import index_providers

    base = [st.multi(ix, c, prm) for c in ctxs]
    stages: dict[str, Callable[[int], Any]] = {
        "multi": lambda i: st.multi(ix, ctxs[i], prm),
        "steps": lambda i: st.steps(ix, ctxs[i], prm),
        "action": lambda i: st.action_prior(ix, ctxs[i], prm, base[i]),
        "destination": lambda i: st.file_steps(ix, ctxs[i], prm, base[i]),
        "expand": lambda i: expand(
            base[i], index_providers(ix), prm.steps.expand_pool, prm.steps.expand_weight
        ),
    }
    timings: dict[str, list[float]] = {k: [] for k in stages}
    with threadpool_limits(limits=1, user_api="blas"):
        for fn in stages.values():
            fn(0)  # warm: provider graph, action classes, best file writer
        # interleaved query by query, so load from other processes hits all alike
        for _ in range(3):
            for i in range(len(ctxs)):
                for name, fn in stages.items():
                    t0 = time.perf_counter()
                    fn(i)
                    timings[name].append((time.perf_counter() - t0) * 1000)
    return timings


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000])
    ap.add_argument("--queries", type=Path, default=REPO / "benchmarks" / "union_queries.jsonl")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()

    from benchmarks.scale import make_catalog
    from toolroute.catalog import load_queries
    from toolroute.route.strategy import RouteParams
    from toolroute.router import Router

    texts = [q.text for q in load_queries(args.queries)]
    lines = [
        "| tools | multi p50 / p95 ms | steps p50 / p95 ms | action words p50 ms "
        "| destination p50 ms | implied steps p50 ms | three stages p50 ms |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for size in args.sizes:
        work = Path(tempfile.mkdtemp(prefix=f"steps-{size}-"))
        cat = work / "catalog.json"
        cat.write_text(json.dumps(make_catalog(size)), encoding="utf-8")
        emb = _Hashing()
        with Router(cat, store=work / "store", embedder=emb, params=RouteParams()) as r:
            ix = r.built
            ctxs = [replace(r.query_context(t, "intent-spans"), embed=emb.embed) for t in texts]
            timings = _time_stages(ix, ctxs, r.params)
        p = {k: (np.percentile(v, 50), np.percentile(v, 95)) for k, v in timings.items()}
        three = p["action"][0] + p["destination"][0] + p["expand"][0]
        lines.append(
            f"| {size} | {p['multi'][0]:.2f} / {p['multi'][1]:.2f} | "
            f"{p['steps'][0]:.2f} / {p['steps'][1]:.2f} | {p['action'][0]:.3f} | "
            f"{p['destination'][0]:.3f} | {p['expand'][0]:.3f} | {three:.3f} |"
        )
        print(lines[-1], file=sys.stderr)
    table = "\n".join(lines) + "\n"
    write_report(table, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

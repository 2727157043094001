"""Query-embedding latency and memory of today's model and a fine-tuned one, in one process.

    python -m benchmarks.embedder_speed --model .toolroute/adapter-onnx [--queries 200]

Alternating blocks of single-query embeddings (so machine load falls on both alike), p50 and
p95 in ms each, and the process's peak RSS after each model loads. The fine-tuned model is the
exported ONNX file itself (``TOOLROUTE_EMBED_MODEL``'s folder), not a derived view.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

import numpy as np


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", type=Path, required=True)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--fit", type=Path, default=None, help="also time the fit head (train_fit)")
    args = ap.parse_args()
    from toolroute.embed.onnx import OnnxEmbedder, model_dir_files

    rss = {}
    base = OnnxEmbedder(threads=1)
    base.embed(["warm"])
    rss["after today's model, MB"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    tuned = OnnxEmbedder(*model_dir_files(args.model), threads=1)
    tuned.embed(["warm"])
    rss["after both, MB"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    texts = [
        f"find the open pull requests of repository number {i} and merge them"
        for i in range(args.queries)
    ]
    lat: dict[str, list[float]] = {"today": [], "tuned": []}
    for b in range(0, len(texts), 20):
        for name, m in (("today", base), ("tuned", tuned)):
            for t in texts[b : b + 20]:
                t0 = time.perf_counter()
                m.embed([t])
                lat[name].append((time.perf_counter() - t0) * 1000)
    out = {
        k: {
            "p50_ms": round(float(np.percentile(v, 50)), 2),
            "p95_ms": round(float(np.percentile(v, 95)), 2),
        }
        for k, v in lat.items()
    }
    out["rss"] = {k: round(v, 1) for k, v in rss.items()}
    if args.fit is not None:  # the head over 10 candidates: its vectors are the router's own
        from benchmarks.train_fit import FitModel

        fit = FitModel.load(args.fit, tuned)
        vecs = tuned.embed(texts[:11])
        head = []
        for _ in range(args.queries):
            t0 = time.perf_counter()
            fit.prob(vecs[0:1], vecs[1:])
            head.append((time.perf_counter() - t0) * 1000)
        out["fit_head_10_candidates"] = {"p50_ms": round(float(np.percentile(head, 50)), 3)}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())

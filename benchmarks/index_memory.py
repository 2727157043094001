"""Indexing memory: peak RSS and throughput of a cold ``toolroute index`` against a bare session.

    python -m benchmarks.index_memory [--catalog FILE] [--rounds 2] [--out FILE] [--json]

Each measurement runs in a fresh process (peak RSS is the child's own ``ru_maxrss``):

- ``bare``: what the issue measured as the floor: a plain onnxruntime session (default options,
  CPU memory arena on) and the model's tokenizer, padding to each batch's longest text, over
  the distinct texts the index needs, length-sorted, in batches of 32;
- ``toolroute index``: ``Router(catalog, store=<empty dir>).index()``, i.e. a cold build that
  embeds every text through the store's cache.

The two alternate for ``--rounds`` rounds (machine noise hits both alike); the table gives the
median of each, texts/s, and toolroute's throughput as a ratio of the bare session's.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "benchmarks"


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _distinct_texts(catalog_path: Path) -> list[str]:
    from toolroute.catalog import load_catalog
    from toolroute.index.build import index_texts
    from toolroute.index.document import TemplateQuestions, build_docs
    from toolroute.index.tdwa import PRESETS

    catalog = load_catalog(catalog_path)
    config = PRESETS["toolroute"]
    docs = build_docs(catalog.servers, TemplateQuestions())
    texts, _, _ = index_texts(catalog, config, docs)
    return list(dict.fromkeys(texts))


def child_bare(catalog_path: Path) -> dict[str, Any]:
    import numpy as np
    import onnxruntime as ort
    from tokenizers import Tokenizer

    from toolroute.embed.onnx import default_model_files

    texts = sorted(_distinct_texts(catalog_path), key=len)
    model, tok_path = default_model_files()
    tok = Tokenizer.from_file(str(tok_path))
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    tok.enable_truncation(256)
    opts = ort.SessionOptions()
    opts.inter_op_num_threads = 1
    session = ort.InferenceSession(str(model), opts, providers=["CPUExecutionProvider"])
    t0 = time.perf_counter()
    for start in range(0, len(texts), 32):
        enc = tok.encode_batch(texts[start : start + 32])
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
        hidden = session.run(
            None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        )[0]
        m = mask[..., None].astype(np.float32)
        pooled = (hidden * m).sum(axis=1) / m.sum(axis=1)
        pooled /= np.linalg.norm(pooled, axis=1, keepdims=True)
    seconds = time.perf_counter() - t0
    return {"texts": len(texts), "seconds": seconds, "peak_rss_mb": _peak_mb()}


def child_index(catalog_path: Path) -> dict[str, Any]:
    from toolroute.heap import fix_mmap_threshold
    from toolroute.router import Router

    fix_mmap_threshold()  # as the toolroute command does

    with tempfile.TemporaryDirectory(prefix="toolroute-index-mem-") as store:
        router = Router(catalog_path, store=store)
        t0 = time.perf_counter()
        report = router.index()
        seconds = time.perf_counter() - t0
        router.close()
    return {"texts": report.embedded, "seconds": seconds, "peak_rss_mb": _peak_mb()}


def _run_child(kind: str, catalog: Path) -> dict[str, Any]:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.index_memory",
            "--child",
            kind,
            "--catalog",
            str(catalog),
        ],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--catalog", type=Path, default=SHARED / "livemcpbench" / "catalog.json")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", type=Path, help="also write the markdown table to this file")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--child", choices=["bare", "index"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if not args.catalog.is_file():
        print(f"error: {args.catalog} not found (../shared missing?)", file=sys.stderr)
        return 2
    if args.child:
        fn = child_bare if args.child == "bare" else child_index
        print(json.dumps(fn(args.catalog)))
        return 0

    runs: dict[str, list[dict[str, Any]]] = {"bare": [], "index": []}
    for r in range(args.rounds):
        for kind in ("bare", "index") if r % 2 == 0 else ("index", "bare"):
            runs[kind].append(_run_child(kind, args.catalog))
            print(f"  round {r + 1} {kind}: {runs[kind][-1]}", file=sys.stderr)
    rows: dict[str, dict[str, float]] = {}
    for kind, rs in runs.items():
        seconds = statistics.median(x["seconds"] for x in rs)
        rows[kind] = {
            "texts": rs[0]["texts"],
            "seconds": round(seconds, 2),
            "texts_per_s": round(rs[0]["texts"] / seconds, 1),
            "peak_rss_mb": round(statistics.median(x["peak_rss_mb"] for x in rs), 1),
        }
    ratio = rows["index"]["texts_per_s"] / rows["bare"]["texts_per_s"]
    result = {
        "catalog": str(args.catalog.name),
        "rounds": args.rounds,
        "rows": rows,
        "throughput_ratio": round(ratio, 3),
    }
    names = {"bare": "bare onnxruntime session (batches of 32)", "index": "toolroute index (cold)"}
    lines = [
        f"Cold indexing of {args.catalog.parent.name}: median of {args.rounds} alternating "
        "rounds, each in a fresh process (2 shared cores: timings are noisy).",
        "",
        "| run | texts | seconds | texts/s | peak RSS MB |",
        "|---|---:|---:|---:|---:|",
    ]
    for kind, row in rows.items():
        lines.append(
            f"| {names[kind]} | {row['texts']} | {row['seconds']} | {row['texts_per_s']} | "
            f"{row['peak_rss_mb']} |"
        )
    lines += ["", f"- toolroute index throughput / bare session: {ratio:.2f}x"]
    md = "\n".join(lines) + "\n"
    if args.out:
        args.out.write_text(md)
        args.out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2) if args.json else md.rstrip("\n"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

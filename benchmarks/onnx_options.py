"""onnxruntime session options against the resident size of the embedding model.

    python benchmarks/onnx_options.py [--out benchmarks/results/onnx_options.md]

The bundled all-MiniLM-L6-v2 ships int8 weights that the graph turns into float32 with
``Cast`` + ``Mul`` before each ``MatMul``; onnxruntime's constant folding does that once at
load, which is most of ``serve``'s memory after its first find_tools (docs/benchmarks.md).
Each variant runs in a fresh process with the router's own options (embed/onnx.py: one
intra-op thread, no CPU arena, no memory patterns, no spinning) plus the variant's, embeds
the 60 union queries one at a time, twice, and reports: RSS after the session and the first
query (VmRSS), CPU ms per query (process time: a loaded shared machine does not inflate it
as it does wall time), and the lowest cosine of its vectors against the default's (a
variant is usable only at ≥ 0.999, and recall is unchanged only when the vectors are).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
VARIANTS = {
    "default (today)": [],
    "graph optimisation: basic": ["level=basic"],
    "graph optimisation: extended": ["level=extended"],
    "graph optimisation: disabled": ["level=disabled"],
    "constant folding off": ["optimization.disable_specified_optimizers=ConstantFolding"],
    "pre-packing off": ["session.disable_prepacking=1"],
    "QDQ fusion off": ["session.disable_quant_qdq=1"],
}


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    return float("nan")


def child(options: list[str], out: Path) -> dict[str, Any]:
    import onnxruntime as ort

    from toolroute.catalog import load_queries
    from toolroute.embed.onnx import OnnxEmbedder
    from toolroute.heap import fix_mmap_threshold, trim_heap

    fix_mmap_threshold()  # as the toolroute command does
    levels = {
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
        "disabled": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    }
    emb = OnnxEmbedder(threads=1)

    def session(self: Any) -> Any:  # embed/onnx.py's session, plus the variant's options
        if self._session_ is not None:
            return self._session_
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        opts.enable_cpu_mem_arena = False
        opts.enable_mem_pattern = False
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        for item in options:
            key, _, value = item.partition("=")
            if key == "level":
                opts.graph_optimization_level = levels[value]
            else:
                opts.add_session_config_entry(key, value)
        s = ort.InferenceSession(
            str(self._model_path), sess_options=opts, providers=["CPUExecutionProvider"]
        )
        self._inputs = {i.name for i in s.get_inputs()}
        self._session_ = s
        trim_heap()
        return s

    type(emb)._session = session  # type: ignore[method-assign]
    queries = [q.text for q in load_queries(REPO / "benchmarks" / "union_queries.jsonl")]
    before = _rss_mb()
    emb.embed(queries[:1])
    after = _rss_mb()
    t = time.process_time()
    vectors = [emb.embed([q])[0] for q in queries * 2][: len(queries)]
    cpu_ms = (time.process_time() - t) / (2 * len(queries)) * 1000
    np.save(out, np.stack(vectors))
    return {"rss_before_mb": round(before, 1), "rss_mb": round(after, 1), "cpu_ms": cpu_ms}


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--out", type=Path, help="write the markdown table here (+ .json beside it)")
    ap.add_argument("--child", nargs="*", help=argparse.SUPPRESS)
    ap.add_argument("--vectors", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        print(json.dumps(child(args.child, args.vectors)))
        return 0
    import os
    import tempfile

    rows: dict[str, Any] = {}
    work = Path(tempfile.mkdtemp(prefix="onnx-options-"))
    ref: np.ndarray | None = None
    for i, (name, options) in enumerate(VARIANTS.items()):
        vec = work / f"{i}.npy"
        out = subprocess.run(
            [sys.executable, __file__, "--vectors", str(vec), "--child", *options],
            check=True,
            capture_output=True,
            text=True,
            timeout=600,
        )
        row = json.loads(out.stdout.strip().splitlines()[-1])
        v = np.load(vec)
        ref = v if ref is None else ref
        row["min_cosine"] = float((ref * v).sum(axis=1).min())
        row["max_abs_diff"] = float(np.abs(ref - v).max())
        row["loadavg_1m"] = round(os.getloadavg()[0], 2)
        rows[name] = row
        print(f"  {name}: {row}", file=sys.stderr)
    lines = [
        "| session options | RSS after the first query MB | CPU ms per query | min cosine vs "
        "today | max abs diff | load avg |",
        "|---|---:|---:|---:|---:|---:|",
        *(
            f"| {n} | {r['rss_mb']} | {r['cpu_ms']:.2f} | {r['min_cosine']:.6f} | "
            f"{r['max_abs_diff']:.2e} | {r['loadavg_1m']} |"
            for n, r in rows.items()
        ),
        "",
        "- each variant in a fresh process (RSS before the session: "
        f"{next(iter(rows.values()))['rss_before_mb']} MB); the 60 union queries embedded one "
        "at a time, twice; CPU ms is process time per query on one intra-op thread.",
    ]
    md = "\n".join(lines) + "\n"
    if args.out:
        args.out.write_text(md)
        args.out.with_suffix(".json").write_text(json.dumps(rows, indent=2) + "\n")
    print(md.rstrip("\n"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""CPU and wall time of one-query embeddings (what every find_tools costs), with onnxruntime's
intra-op pool spinning (its default) and sleeping (toolroute's setting), and on one intra-op
thread (what ``toolroute serve`` uses for queries), in the same run.

    python -m benchmarks.embed_spin [--queries 200] [--rounds 3] [--out F]

All three are the bundled all-MiniLM-L6-v2; they alternate in rounds so machine noise
hits both alike. Prints (and with --out writes) a markdown table: CPU ms and wall ms per query.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path
from typing import Any

import onnxruntime as ort

from toolroute.embed.onnx import OnnxEmbedder

_Options = ort.SessionOptions


class _Spinning(_Options):  # type: ignore[misc]
    """Session options that keep onnxruntime's default: idle pool threads spin."""

    def add_session_config_entry(self, key: str, value: str) -> Any:
        if key != "session.intra_op.allow_spinning":
            return super().add_session_config_entry(key, value)
        return None


def _embedder(spinning: bool, threads: int | None = None) -> OnnxEmbedder:
    ort.SessionOptions = _Spinning if spinning else _Options
    try:
        return OnnxEmbedder(threads=threads)
    finally:
        ort.SessionOptions = _Options


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    queries = [f"what time is it in city number {i} right now" for i in range(args.queries)]
    embedders = {
        "spinning (onnxruntime default)": _embedder(True),
        "sleeping": _embedder(False),
        "sleeping, one thread (toolroute serve)": _embedder(False, threads=1),
    }
    cpu: dict[str, list[float]] = {k: [] for k in embedders}
    wall: dict[str, list[float]] = {k: [] for k in embedders}
    for e in embedders.values():
        e.embed(queries[:5])  # warm
    for _ in range(args.rounds):
        for name, e in embedders.items():
            c, w = time.process_time(), time.perf_counter()
            for q in queries:
                e.embed([q])
            cpu[name].append((time.process_time() - c) * 1000 / len(queries))
            wall[name].append((time.perf_counter() - w) * 1000 / len(queries))
    lines = [
        f"# One-query embeddings: intra-op pool spinning vs sleeping ({os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f})",
        "",
        f"`python -m benchmarks.embed_spin --queries {args.queries} --rounds {args.rounds}`; "
        "median over rounds.",
        "",
        "| intra-op pool | CPU ms / query | wall ms / query |",
        "|---|---:|---:|",
    ]
    lines += [
        f"| {n} | {statistics.median(cpu[n]):.2f} | {statistics.median(wall[n]):.2f} |"
        for n in embedders
    ]
    md = "\n".join(lines) + "\n"
    if args.out:
        args.out.write_text(md)
    print(md.rstrip("\n"))


if __name__ == "__main__":
    main()

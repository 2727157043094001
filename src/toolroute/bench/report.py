"""Bench output: a markdown table and a matplotlib plot next to the JSON."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from toolroute.bench.metrics import RANK_METRICS, SET_METRICS

__all__ = ["markdown_table", "write_outputs"]


def markdown_table(results: Mapping[str, Mapping[str, Any]], title: str = "") -> str:
    with_tokens = any("tool_tokens_per_turn" in r for r in results.values())
    with_llm = any(r.get("llm", {}).get("calls_per_query") for r in results.values())
    head = [
        "strategy",
        *RANK_METRICS,
        *SET_METRICS,
        "p50 ms",
        "p95 ms",
        *(["tokens/turn"] if with_tokens else []),
        *(["LLM calls/q", "LLM ms/q", "LLM tokens/q"] if with_llm else []),
    ]
    lines = [f"### {title}", ""] if title else []
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|---|" + "---:|" * (len(head) - 1))
    for name, r in results.items():
        cells = [f"{r[m]:.3f}" for m in (*RANK_METRICS, *SET_METRICS)]
        cells += [f"{r['latency_ms']['p50']:.1f}", f"{r['latency_ms']['p95']:.1f}"]
        if with_tokens:
            cells.append(f"{r.get('tool_tokens_per_turn', float('nan')):.0f}")
        if with_llm:
            u = r.get("llm", {})
            cells += [
                f"{u.get('calls_per_query', 0):.2f}",
                f"{u.get('latency_ms_per_query', 0):.0f}",
                f"{u.get('tokens_per_query', 0):.0f}",
            ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write_outputs(
    results: Mapping[str, Mapping[str, Any]], out_dir: Path, title: str
) -> list[Path]:
    """Write bench.json, bench.md and bench.png into ``out_dir``; return their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    js, md, png = out_dir / "bench.json", out_dir / "bench.md", out_dir / "bench.png"
    js.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    md.write_text(markdown_table(results, title), encoding="utf-8")

    shown = ("recall@5", "recall@10", "ndcg@10", "mrr", "full@10")
    names = list(results)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(names) + 2), 4.2))
    width = 0.8 / len(shown)
    for j, metric in enumerate(shown):
        xs = [i + (j - (len(shown) - 1) / 2) * width for i in range(len(names))]
        ax.bar(xs, [results[n][metric] for n in names], width, label=metric)
    ax.set_xticks(range(len(names)), names, rotation=30, ha="right")
    ax.set_ylim(0, 1)
    ax.set_ylabel("score")
    ax.set_title(title)
    ax.legend(ncols=len(shown), fontsize=8, loc="upper left")
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    plt.close(fig)
    return [js, md, png]

"""Bench output next to the JSON: a markdown table, a matplotlib plot, and one self-contained
HTML page with both (tables and plots side by side)."""

from __future__ import annotations

import base64
import html
import io
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from toolroute.bench.metrics import RANK_METRICS, SET_METRICS
from toolroute.extra import require

__all__ = ["html_report", "markdown_table", "write_outputs"]


def markdown_table(results: Mapping[str, Mapping[str, Any]], title: str = "") -> str:
    with_tokens = any("tool_tokens_per_turn" in r for r in results.values())
    with_llm = any(r.get("llm", {}).get("calls_per_query") for r in results.values())
    with_fp = any("fp_rate" in r for r in results.values())
    # "no tool fits" said to servable requests, and cautions: shown where abstention spoke
    with_refused = with_fp or any(
        r.get("refused", 0) or r.get("cautioned", 0) for r in results.values()
    )
    head = [
        "strategy",
        *RANK_METRICS,
        *(["FP rate"] if with_fp else []),
        *(["refused", "cautioned"] if with_refused else []),
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
        cells = [f"{r[m]:.3f}" for m in RANK_METRICS]
        if with_fp:  # beside recall: what the strategy answers when no tool serves the need
            cells.append(f"{r['fp_rate']:.3f}" if "fp_rate" in r else "–")
        if with_refused:
            cells += [f"{r.get('refused', 0.0):.3f}", f"{r.get('cautioned', 0.0):.3f}"]
        cells += [f"{r[m]:.3f}" for m in SET_METRICS]
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
    """Write bench.json, bench.md, bench.png and bench.html into ``out_dir``; return their
    paths. bench.html is one self-contained page (tables and plots side by side, the plots
    embedded as base64 PNG) that a researcher can share as it is."""
    out_dir.mkdir(parents=True, exist_ok=True)
    js, md, png = out_dir / "bench.json", out_dir / "bench.md", out_dir / "bench.png"
    page = out_dir / "bench.html"
    js.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    md.write_text(markdown_table(results, title), encoding="utf-8")
    quality, latency = _quality_plot(results, title), _latency_plot(results, title)
    png.write_bytes(quality)
    page.write_text(html_report(results, title, [quality, latency]), encoding="utf-8")
    return [js, md, png, page]


def _png(fig: Any) -> bytes:
    plt = require("matplotlib.pyplot", "plot", "plotting")

    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=120)
    plt.close(fig)
    return buf.getvalue()


def _figure(width: float, height: float) -> tuple[Any, Any]:
    require("matplotlib", "plot", "plotting").use("Agg")
    plt = require("matplotlib.pyplot", "plot", "plotting")
    fig, ax = plt.subplots(figsize=(width, height))
    return fig, ax


def _quality_plot(results: Mapping[str, Mapping[str, Any]], title: str) -> bytes:
    shown = ("recall@5", "recall@10", "ndcg@10", "mrr", "full@10")
    names = list(results)
    fig, ax = _figure(max(6.0, 1.1 * len(names) + 2), 4.2)
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
    return _png(fig)


def _latency_plot(results: Mapping[str, Mapping[str, Any]], title: str) -> bytes:
    names = list(results)
    fig, ax = _figure(max(6.0, 0.8 * len(names) + 2), 3.6)
    xs = range(len(names))
    for offset, key in ((-0.2, "p50"), (0.2, "p95")):
        values = [results[n]["latency_ms"][key] for n in names]
        ax.bar([x + offset for x in xs], values, 0.4, label=f"{key} ms")
    ax.set_xticks(list(xs), names, rotation=30, ha="right")
    ax.set_ylabel("route latency, ms")
    ax.set_title(f"{title}: latency per query")
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    return _png(fig)


_CSS = """
body{font:13px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.4em}.row{display:flex;flex-wrap:wrap;gap:1.5em;align-items:flex-start}
table{border-collapse:collapse}th,td{border:1px solid #ddd;padding:.2em .5em}
th{background:#f0f0f0}td{text-align:right;font-variant-numeric:tabular-nums}
td:first-child{text-align:left}td.best{font-weight:700;background:#e8f4e8}
.plots{flex:1 1 400px;max-width:760px}.plots img{display:block;width:100%;margin-bottom:1em;
border:1px solid #eee}.muted{color:#777}
"""


def html_report(
    results: Mapping[str, Mapping[str, Any]], title: str, plots: Sequence[bytes]
) -> str:
    """One HTML page: the metrics table (best value per column in bold) beside the plots."""
    lines = markdown_table(results).splitlines()
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]]
    best: dict[int, str] = {}
    for j, name in enumerate(head[1:], 1):
        values = [float(r[j]) for r in rows if r[j] not in ("nan", "")]
        if values:
            lower = "ms" in name or "tokens" in name or "LLM" in name
            best[j] = f"{(min if lower else max)(values):g}"
    table = ["<table><tr>", *(f"<th>{html.escape(h)}</th>" for h in head), "</tr>"]
    for r in rows:
        cells = [
            f'<td class="best">{html.escape(c)}</td>'
            if j in best and c not in ("nan", "") and f"{float(c):g}" == best[j]
            else f"<td>{html.escape(c)}</td>"
            for j, c in enumerate(r)
        ]
        table += ["<tr>", *cells, "</tr>"]
    table.append("</table>")
    queries = {int(r.get("queries", 0)) for r in results.values()}
    images = "".join(
        f'<img alt="plot {i}" src="data:image/png;base64,{base64.b64encode(p).decode()}">'
        for i, p in enumerate(plots, 1)
    )
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<title>toolroute bench: {html.escape(title)}</title><style>{_CSS}</style></head><body>"
        f"<h1>toolroute bench: {html.escape(title)}</h1>"
        f'<p class="muted">{len(results)} strategies · queries: '
        f"{', '.join(map(str, sorted(queries)))} · best value per column in bold · "
        "latency warm, per query, query embedding included</p>"
        f'<div class="row"><div>{"".join(table)}</div><div class="plots">{images}</div></div>'
        "</body></html>\n"
    )

"""What toolroute bench simulate writes: a markdown table of the summary, the per-query series
as JSON and plots, and the learning curves."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from toolroute.bench.simulation import REGRET, Simulation, Stat, stat_text
from toolroute.extra import require

__all__ = ["markdown_table", "write_learning_outputs", "write_simulation_outputs"]

_COLUMNS = (
    ("success_rate", "success", 3),
    ("cost_usd", "cost USD/query", 4),
    ("invalid_calls", "invalid calls", 2),
    ("latency_s", "call latency s", 2),
    ("tokens", "tokens", 0),
)

_REGRET_COLUMNS = (
    ("regret_success", "success regret", 3),
    ("regret_cost_usd", "cost regret USD", 4),
)

_POSTED_COLUMN = ("cost_posted_usd", "cost USD/query at τ", 4)
"""Theorem 1's payment rule (EHRR pays its posted price τ_i per call; a strategy posting no
price pays the tool's): tracked by the per-step agent, so shown beside its regret."""


def markdown_table(result: Mapping[str, Mapping[str, Stat]], title: str = "") -> str:
    """One row per strategy: mean ± 95 % half-width of the five summary metrics; with the
    per-step agent (regret known) also the cost under Theorem 1's payment rule."""

    lines = [f"### {title}", ""] if title else []
    columns: tuple[tuple[str, str, int], ...] = _COLUMNS
    if result and all(m in r for r in result.values() for m in REGRET):
        columns = (*_COLUMNS[:2], _POSTED_COLUMN, *_COLUMNS[2:], *_REGRET_COLUMNS)
    lines.append("| strategy | " + " | ".join(h for _, h, _ in columns) + " |")
    lines.append("|---|" + "---:|" * len(columns))
    for name, r in result.items():
        lines.append(f"| {name} | " + " | ".join(stat_text(r[m], d) for m, _, d in columns) + " |")
    return "\n".join(lines) + "\n"


def write_simulation_outputs(
    result: Mapping[str, Mapping[str, Stat]],
    series: Mapping[str, Mapping[str, Sequence[float]]],
    out_dir: str | Path,
    title: str = "EHRR economics simulation",
    setting: Mapping[str, Any] | None = None,
) -> list[Path]:
    """Write simulate.json (``{"summary", "series"}``), simulate.md and simulate.png (running
    success and cumulative cost over the stream, mean over seeds) into ``out_dir``."""
    require("matplotlib", "plot", "plotting").use("Agg")
    plt = require("matplotlib.pyplot", "plot", "plotting")

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    js, md, png = out / "simulate.json", out / "simulate.md", out / "simulate.png"
    payload: dict[str, Any] = {"summary": result, "series": series}
    if setting:
        payload["setting"] = dict(setting)
    js.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    about = ""
    if setting:
        about = "Setting: " + ", ".join(f"{k} = {v}" for k, v in setting.items()) + "\n\n"
    md.write_text(markdown_table(result, title) + ("\n" + about if about else ""), encoding="utf-8")

    fig, (left, right) = plt.subplots(1, 2, figsize=(11.0, 4.2))
    for name, s in series.items():
        xs = range(1, len(s["running_success"]) + 1)
        left.plot(xs, s["running_success"], label=name)
        right.plot(xs, s["cumulative_cost_usd"], label=name)
    left.set(xlabel="query in stream", ylabel="running success rate")
    left.set_ylim(bottom=0)
    right.set(xlabel="query in stream", ylabel="cumulative cost (USD)")
    for ax in (left, right):
        ax.grid(alpha=0.3)
    left.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    plt.close(fig)
    return [js, md, png]


def write_learning_outputs(sim: Simulation, out_dir: str | Path, bins: int = 20) -> list[Path]:
    """Write curves.json and learning.png (success, USD per successful task and invalid calls
    against tasks seen, one figure) and pareto.png (success against cost per query, mean ±
    95 % over seeds, per strategy) into ``out_dir``."""
    require("matplotlib", "plot", "plotting").use("Agg")
    plt = require("matplotlib.pyplot", "plot", "plotting")

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    curves = sim.curves(bins)
    js, learning, pareto = out / "curves.json", out / "learning.png", out / "pareto.png"
    js.write_text(json.dumps(curves, indent=2) + "\n", encoding="utf-8")
    fig, axes = plt.subplots(1, 3, figsize=(15.0, 4.2))
    panels = (
        ("success_rate", "success rate"),
        ("usd_per_success", "USD per successful task"),
        ("invalid_calls", "invalid calls per task"),
    )
    for ax, (metric, label) in zip(axes, panels, strict=True):
        for name, c in curves.items():
            ax.plot(c["tasks"], c[metric], marker=".", label=name)
        ax.set(xlabel="tasks seen", ylabel=label)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle("Learning curves (mean over seeds, per block of tasks)")
    fig.tight_layout()
    fig.savefig(learning, dpi=120)
    plt.close(fig)

    summary = sim.summary
    fig, ax = plt.subplots(figsize=(7.0, 5.0))
    for name, r in summary.items():
        x, y = r["cost_usd"], r["success_rate"]
        ax.errorbar(
            x["mean"] or 0.0,
            y["mean"] or 0.0,
            xerr=x["ci95"] or 0.0,
            yerr=y["ci95"] or 0.0,
            fmt="o",
            capsize=3,
        )
        ax.annotate(name, (x["mean"] or 0.0, y["mean"] or 0.0), fontsize=7,
                    xytext=(4, 4), textcoords="offset points")  # fmt: skip
    ax.set(xlabel="cost USD per task", ylabel="success rate", title="Success against cost")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(pareto, dpi=120)
    plt.close(fig)
    return [js, learning, pareto]

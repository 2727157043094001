"""Calibrate θ, the similarity threshold of Tool Attention.

Eqs. 5–7 and §5.2 of *Tool Attention Is All You Need: Dynamic Tool Gating and Lazy Schema
Loading for Eliminating the MCP/Tools Tax in Scalable Agentic Workflows* (Tool Attention): sweep
the threshold on a queries file and keep the value whose kept top-k set has the best mean F1
against the ground truth (precision over promoted tools, recall over required groups)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from toolroute.catalog.loader import Query
from toolroute.router import Router, top_k

__all__ = ["Calibration", "calibrate", "write_threshold"]


@dataclass(frozen=True, slots=True)
class Calibration:
    best: float
    rows: tuple[tuple[float, float, float, float], ...]
    """(θ, precision, recall, F1), means over queries, for every θ tried."""

    def table(self) -> str:
        lines = ["| θ | precision | recall | F1 |", "|---:|---:|---:|---:|"]
        for t, p, r, f in self.rows:
            mark = " **best**" if t == self.best else ""
            lines.append(f"| {t:.2f}{mark} | {p:.3f} | {r:.3f} | {f:.3f} |")
        return "\n".join(lines) + "\n"


def calibrate(
    router: Router,
    queries: Sequence[Query],
    *,
    strategy: str = "default",
    k: int = 5,
    grid: Sequence[float] | None = None,
) -> Calibration:
    ix = router.built
    ranked: list[list[tuple[float, tuple[str, str]]]] = []
    for q in queries:
        scores = router.scores(q.text, strategy)
        ranked.append([(float(scores[i]), ix.keys[i]) for i in top_k(scores, k)])
    thetas = list(grid) if grid is not None else [round(x, 2) for x in np.arange(0.0, 1.01, 0.02)]
    rows: list[tuple[float, float, float, float]] = []
    for theta in thetas:
        ps, rs, fs = [], [], []
        for q, cands in zip(queries, ranked, strict=True):
            shown = {key for s, key in cands if s >= theta}
            relevant = q.relevant
            p = len(shown & relevant) / len(shown) if shown else 0.0
            r = sum(bool(shown & g) for g in q.groups) / len(q.groups) if q.groups else 0.0
            ps.append(p)
            rs.append(r)
            fs.append(2 * p * r / (p + r) if p + r else 0.0)
        rows.append((theta, float(np.mean(ps)), float(np.mean(rs)), float(np.mean(fs))))
    best = max(rows, key=lambda row: (row[3], -row[0]))[0]
    return Calibration(best=best, rows=tuple(rows))


def write_threshold(path: Path, theta: float) -> None:
    """Set ``threshold`` under ``[toolroute]`` in a toolroute.toml, keeping everything else."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    line = f"threshold = {theta}"
    section = re.search(r"(?m)^\[\s*toolroute\s*\][ \t]*(#.*)?$", text)
    if section is None:
        text = f"[toolroute]\n{line}\n" + (("\n" + text) if text else "")
    else:
        end = re.search(r"(?m)^\[", text[section.end() :])
        body_end = section.end() + (end.start() if end else len(text) - section.end())
        body = text[section.end() : body_end]
        if re.search(r"(?m)^threshold\s*=.*$", body):
            body = re.sub(r"(?m)^threshold\s*=.*$", line, body)
        else:
            body = f"\n{line}" + body
        text = text[: section.end()] + body + text[body_end:]
    path.write_text(text, encoding="utf-8")

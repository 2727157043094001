"""What the commands print on a terminal: rich consoles for stdout and stderr, a progress bar
while embedding, tables that never fold names, and explanations that read at 80 columns (one
block per candidate). ``serve`` prints none of it, and never imports this module (nor rich)."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from toolroute.router import IndexReport, Router

__all__ = [
    "explain_text",
    "index_with_progress",
    "one_line",
    "print_table",
    "progress",
    "stderr",
    "stdout",
]

stdout = Console()
stderr = Console(stderr=True)
"""Read as ``render.stderr`` when used, so that a test can put another console in its place."""

WIDTH = 80
_INDENT = "   "


def one_line(text: str, width: int) -> str:
    """``text`` on one line (newlines and runs of spaces collapsed), clipped with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1].rstrip() + "…"


def print_table(
    console: Console,
    title: str,
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    numeric: frozenset[str] = frozenset({"#", "score"}),
) -> None:
    """A rich table on a terminal (names never wrap, a last ``description`` column is cut with
    an ellipsis); plain aligned columns otherwise, at whatever width the names need."""
    if console.is_terminal:
        table = Table(title=title, title_justify="left")
        for h in headers:
            if h == "description":
                table.add_column(h, overflow="ellipsis", no_wrap=True, ratio=1)
            else:
                table.add_column(h, no_wrap=True, justify="right" if h in numeric else "left")
        for r in rows:
            table.add_row(*r)
        console.print(table)
        return
    widths = [max([len(h), *(len(r[j]) for r in rows)]) for j, h in enumerate(headers)]
    lines = [title]
    for cells in (list(headers), *rows):
        padded = [
            c.rjust(w) if h in numeric else c.ljust(w)
            for c, w, h in zip(cells, widths, headers, strict=True)
        ]
        lines.append("  ".join(padded).rstrip())
    click.echo("\n".join(lines))


@contextmanager
def progress(enabled: bool) -> Iterator[Callable[[str, int, int], None]]:
    """A rich progress bar on stderr; a no-op when disabled or stderr is not a terminal."""
    if not enabled or not stderr.is_terminal:
        yield lambda label, done, total: None
        return
    bars: dict[str, Any] = {}
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=stderr,
        transient=True,
    ) as prog:

        def update(label: str, done: int, total: int) -> None:
            if label not in bars:
                bars[label] = prog.add_task(label, total=total)
            prog.update(bars[label], completed=done, total=total)

        yield update


def index_with_progress(router: Router, show: bool) -> IndexReport:
    """``router.index()``, its embedding shown as a progress bar (with ``show``, on a terminal)."""
    with progress(show) as update:
        return router.index(progress=lambda d, t: update("embedding", d, t))


def _wrap(text: str, width: int = WIDTH) -> list[str]:
    return textwrap.wrap(text, width, initial_indent=_INDENT, subsequent_indent=_INDENT + "  ")


def _money(x: float) -> str:
    return f"${x:.4f}"


def _ehrr_lines(d: Mapping[str, Any]) -> list[str]:
    verdict = "accepted" if d["accepted"] else "rejected (ask above the posted price)"
    return [
        *_wrap(
            f"server  sim {d['server_sim']:.3f} · cost {d['server_cost_s']:.2f} s · "
            f"utility {d['server_utility']:.3f}"
        ),
        *_wrap(
            f"auction ask {_money(d['ask_cost'])} vs posted {_money(d['posted_price'])}: {verdict}"
        ),
        *_wrap(
            f"tool    sim {d['tool_sim']:.3f} · cost {d['tool_cost_s']:.2f} s · "
            f"price {_money(d['price'])} → utility {d['utility']:.3f}"
        ),
    ]


def _stage_lines(d: Mapping[str, Any]) -> list[str]:
    parts = []
    if "dense" in d:
        parts.append(f"dense {d['dense']:.3f}")
    parts.append(f"BM25 {d['bm25']:.2f} ({d['bm25_share']:.2f} of the best)")
    if "server_score" in d:
        parts.append(f"server {d['server_score']:.3f} (#{d['server_rank']})")
    lines = _wrap(" · ".join(parts))
    if "best_intent" in d:
        head = f"best sub-intent {d['best_intent_sim']:.3f}: "
        intent = one_line(d["best_intent"], WIDTH - len(_INDENT) - len(head) - 2)
        lines += _wrap(f'{head}"{intent}"')
    return lines


def _notes_lines(d: Mapping[str, Any]) -> list[str]:
    notes = []
    if "selected" in d:
        notes.append("in the selected set" if d["selected"] else "not in the selected set")
    if "path" in d:
        notes.append(f"{d['path']} path")
    if "llm" in d:
        notes.append(f"LLM: {d['llm']}")
    return _wrap(" · ".join(notes)) if notes else []


def abstain_text(d: Mapping[str, Any]) -> str:
    """The abstention check under ``route --explain``: p that a tool fits against the mode's
    threshold, then every signal the model read (route/abstain.py)."""
    said = (
        "no tool fits"
        if d["no_tool_fits"]
        else "a doubtful fit"
        if d.get("doubtful")
        else "a tool fits"
    )
    head = (
        f"abstention ({d['mode']}): p(fits) {d['p_fits']:.3f} vs threshold "
        f"{d['threshold']:.3f}: {said}"
    )
    signals = " · ".join(f"{k} {v:.3f}" for k, v in d["signals"].items())
    return "\n".join([*_wrap(head), *_wrap(signals)])


def explain_text(strategy: str, query: str, rows: Sequence[tuple[Any, Mapping[str, Any]]]) -> str:
    """One block per candidate: name and score, the description on one line, then what decided
    it (EHRR: both layers' similarity and cost, the auction, the utility; other strategies:
    the stages' own scores). Every line fits in 80 columns."""
    out = [one_line(f"{strategy}: {query}", WIDTH)]
    if not rows:
        out.append("(no candidates)")
    for i, (c, d) in enumerate(rows, 1):
        label = "utility" if "utility" in d else "score"
        head = f"{i}. {c.server} / {c.tool}"
        score = f"{label} {c.score:.3f}"
        out.append("")
        if len(head) + 2 + len(score) <= WIDTH:
            out.append(head + score.rjust(WIDTH - len(head)))
        else:
            out += textwrap.wrap(head, WIDTH, subsequent_indent=_INDENT) + [_INDENT + score]
        if c.description.strip():
            out.append(_INDENT + one_line(c.description, WIDTH - len(_INDENT)))
        out += _ehrr_lines(d) if "server_sim" in d else _stage_lines(d) if "bm25" in d else []
        out += _notes_lines(d)
    return "\n".join(out)

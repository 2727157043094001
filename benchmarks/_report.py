"""What the benchmark scripts share around their measurements: a check that the ../shared data
they read is there, made before any work, and the report they print and write where asked."""

from __future__ import annotations

import json
import sys
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

__all__ = ["missing", "unknown", "write_report", "write_results"]


def missing(path: Path) -> bool:
    """Whether ``path`` (benchmark data under ../shared) is absent; if so, says it on stderr."""
    if path.exists():
        return False
    print(f"error: {path} not found (../shared missing)", file=sys.stderr)
    return True


def unknown(names: Sequence[str], known: Collection[str], what: str) -> bool:
    """Whether a name of ``names`` (a comma-separated option's) is not one of ``known``; if so,
    says the first on stderr with the choices."""
    bad = [n for n in names if n not in known]
    if bad:
        print(f"error: unknown {what} {bad[0]!r}; choose from {', '.join(known)}", file=sys.stderr)
    return bool(bad)


def write_report(
    text: str, out: Path | None, json_out: Path | None = None, summary: Any = None
) -> None:
    """Print a report, and write it to ``out`` (and ``summary`` as JSON to ``json_out``) where
    asked."""
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
    if json_out:
        json_out.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    print(text)


def write_results(text: str, out: Path, data: Any, json_out: Path | None = None) -> None:
    """Write a results table to ``out`` and its figures as JSON to ``json_out`` (default: beside
    it, ``.json``), making their folders."""
    json_out = json_out if json_out is not None else out.with_suffix(".json")
    for path in (out, json_out):
        path.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    json_out.write_text(json.dumps(data, indent=2) + "\n")

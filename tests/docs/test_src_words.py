"""The source speaks to users: its docstrings, comments and help texts are published (the API
page, ``--help``), so they name a paper by its title or short name (never by its file in the
research notes), cite no issue by number, and point at no results file and no file outside the
repository. Measured figures live in benchmarks/results/ and the docs, not in src.

``CLEAN`` lists the parts of src held to this; a part joins it once its text is rewritten.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import REPO

SRC = REPO / "src" / "toolroute"
CLEAN = (
    "index",
    "embed",
    "present",
    "llm",
    "bench",
    "store",
    "catalog",
    "cli",
    "gateway",
    "downstream",
    "papers",
    "learn",
    "extra.py",
    "route",
    "codemode",
    "stats.py",
    "policy.py",
    "__init__.py",
    "config.py",
    "errors.py",
    "heap.py",
    "learn/memory.py",
    "router.py",
    "sdk.py",
    "settings.py",
)
PENDING: set[str] = set()
"""Files of a clean part not rewritten yet."""
FORBIDDEN = {
    "a paper by its research-notes number": re.compile(
        r"\bseeds?\s+`*0\d\d|\b00\d_[0-9a-f]{8,}", re.IGNORECASE
    ),
    "an issue number": re.compile(r"\bissues?\s+#?\d+|\bissue\s+\d+'s", re.IGNORECASE),
    "a results file": re.compile(r"benchmarks/results/"),
    "a file outside the repository": re.compile(r"\bshared/|BASELINES\.md|MODELS\.md"),
}


def _files() -> list[Path]:
    out: list[Path] = []
    for name in CLEAN:
        path = SRC / name
        out += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return [p for p in out if str(p.relative_to(SRC)) not in PENDING]


def _findings(text: str) -> list[str]:
    return [
        f"line {text.count(chr(10), 0, m.start()) + 1}: {what}: {m.group(0)!r}"
        for what, pattern in FORBIDDEN.items()
        for m in pattern.finditer(text)
    ]


@pytest.mark.parametrize("path", _files(), ids=lambda p: str(p.relative_to(SRC)))
def test_published_text_names_papers_and_cites_no_notes_issues_or_results(path: Path) -> None:
    assert _findings(path.read_text(encoding="utf-8")) == []


def test_the_check_sees_each_kind_of_lab_note() -> None:
    text = (
        '"""Weighted average (Seed 001 eq. 1), as issue 24 asked; see seed '
        "``000_33cbc8800e6eb5c6.txt``,\nbenchmarks/results/load.md and "
        'shared/benchmarks/BASELINES.md."""\n'
    )
    assert [f.split(": ")[1] for f in _findings(text)] == [
        "a paper by its research-notes number",
        "a paper by its research-notes number",
        "an issue number",
        "a results file",
        "a file outside the repository",
        "a file outside the repository",
    ]
    assert _findings('"""TDWA, eq. 1 of ScaleMCP; 10 seeds; the issue\'s table."""') == []

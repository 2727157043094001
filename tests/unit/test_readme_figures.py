"""Every figure the README quotes comes from a file under benchmarks/results/ that a committed
command wrote, and says which one.

How to quote a figure (the test below enforces it):

- A table of results: put ``<!-- from: benchmarks/results/FILE -->`` on its own line right
  above the table (several files: separate the paths with spaces). Every number in every cell
  must then appear in one of those files, at the precision the README shows (0.4852 in the
  file reads as 0.485; 1048.6 as 1,049).
- A figure in prose: put the same comment right after it, on the same line:
  ``takes 107 s<!-- from: benchmarks/results/cold_index.md -->``. It covers the last number
  before it on that line.
- Any README table with a numeric cell (``0.485``, ``1,154``, ``91.7 %``, ``0.08 ± 0.02``,
  ``11.9 / 15.7``) and no marker fails this test; so does a marker naming a missing file.
  Prose is only checked where it carries a marker: derived figures ("2.8×") stay free text.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from tests.conftest import REPO

README = REPO / "README.md"
MARKER = re.compile(r"<!--\s*from:\s*(?P<paths>[^>]*?)\s*-->")
NUMBER = re.compile(r"(?<![\w.])[-−]?\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\w.])[-−]?\d+(?:\.\d+)?")
NUMERIC_CELL = re.compile(r"^[-+−]?\d[\d,]*(\.\d+)?(\s*(%|±|/)\s*[-+−]?[\d,]*(\.\d+)?)*$")


def _numbers(text: str) -> list[tuple[float, int]]:
    """(value, decimals shown) of every number in ``text``."""
    out = []
    for m in NUMBER.finditer(text):
        raw = m.group().replace(",", "").replace("−", "-")
        out.append((float(raw), len(raw.split(".")[1]) if "." in raw else 0))
    return out


def _file_numbers(paths: list[str]) -> np.ndarray:
    values: list[float] = []
    for p in paths:
        f = REPO / p
        assert p.startswith("benchmarks/results/") and f.is_file(), f"{p}: no such results file"
        values += [v for v, _ in _numbers(f.read_text(encoding="utf-8"))]
    return np.array(values)


def _found(value: float, decimals: int, pool: np.ndarray) -> bool:
    tol = 0.5 * 10.0**-decimals + 1e-9
    return bool(np.any(np.abs(pool - value) <= tol) or np.any(np.abs(pool + value) <= tol))


def _cells(line: str) -> list[str]:
    return [c.strip().strip("*").strip() for c in line.strip().strip("|").split("|")]


def _tables(lines: list[str]) -> list[tuple[int, list[str]]]:
    """(index of the header line, body lines) of every markdown table."""
    out, i = [], 0
    while i < len(lines):
        if (
            lines[i].startswith("|")
            and i + 1 < len(lines)
            and re.match(r"^\|[-:| ]+\|$", lines[i + 1])
        ):
            j = i + 2
            while j < len(lines) and lines[j].startswith("|"):
                j += 1
            out.append((i, lines[i + 2 : j]))
            i = j
        else:
            i += 1
    return out


def _marker_above(lines: list[str], header: int) -> list[str] | None:
    i = header - 1
    while i >= 0 and not lines[i].strip():
        i -= 1
    m = MARKER.fullmatch(lines[i].strip()) if i >= 0 else None
    return m.group("paths").split() if m else None


def check_readme(text: str) -> list[str]:
    """Every problem with the README's figures, as one line each (empty: all fine)."""
    lines = text.splitlines()
    problems = []
    for header, body in _tables(lines):
        numeric = any(NUMERIC_CELL.match(c) for row in body for c in _cells(row))
        paths = _marker_above(lines, header)
        if paths is None:
            if numeric:
                problems.append(f"README.md:{header + 1}: a table of figures with no marker")
            continue
        pool = _file_numbers(paths)
        for k, row in enumerate(body):
            for cell in _cells(row):
                if not NUMERIC_CELL.match(cell):
                    continue
                for value, dec in _numbers(cell):
                    if not _found(value, dec, pool):
                        problems.append(
                            f"README.md:{header + 3 + k}: {cell!r} is not in {' '.join(paths)}"
                        )
    for n, line in enumerate(lines, 1):
        for m in MARKER.finditer(line):
            before = line[: m.start()]
            if not before.strip():
                continue  # a table marker, checked above
            found = _numbers(MARKER.sub("", before))
            assert found, f"README.md:{n}: a figure marker with no number before it"
            value, dec = found[-1]
            if not _found(value, dec, _file_numbers(m.group("paths").split())):
                problems.append(f"README.md:{n}: {value:g} is not in {m.group('paths')}")
    return problems


def test_every_readme_figure_is_in_the_results_file_it_names() -> None:
    assert check_readme(README.read_text(encoding="utf-8")) == []


def test_the_check_fails_on_an_unsourced_table_and_on_a_wrong_figure() -> None:
    table = "| a | b |\n|---|---:|\n| x | 0.485 |\n"
    assert check_readme(table) == ["README.md:1: a table of figures with no marker"]
    results = next((REPO / "benchmarks" / "results").glob("*.md")).relative_to(REPO)
    wrong = f"costs 123456.789 tokens<!-- from: {results} -->\n"
    assert check_readme(wrong) == [f"README.md:1: 123457 is not in {results}"]


@pytest.mark.parametrize("cell", ["0.485", "1,154", "91.7 %", "0.085 ± 0.018", "11.9 / 15.7"])
def test_numeric_cells_are_recognised(cell: str) -> None:
    assert NUMERIC_CELL.match(cell)

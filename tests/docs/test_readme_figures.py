"""Every figure the README and the docs site (docs/*.md) quote comes from a file under
benchmarks/results/ that a committed command wrote, and says which one.

How to quote a figure (the test below enforces it, in README.md and every page under docs/):

- A table of results: put ``<!-- from: benchmarks/results/FILE -->`` on its own line right
  above the table (several files: separate the paths with spaces). Every number in every cell
  must then appear in one of those files, at the precision the README shows (0.4852 in the
  file reads as 0.485; 1048.6 as 1,049).
- A figure in prose: put the same comment right after it, on the same line:
  ``takes 107 s<!-- from: benchmarks/results/cold_index.md -->``. It covers the last number
  before it on that line.
- A plot on the site is the results file itself (``![…](results/FILE.png)``: mkdocs serves
  benchmarks/results/ under results/), so it cannot drift from its data; a plot naming a file
  that does not exist fails here too.
- Any table with a numeric cell (``0.485``, ``1,154``, ``91.7 %``, ``0.08 ± 0.02``,
  ``11.9 / 15.7``) and no marker fails this test; so does a marker naming a missing file.
  Prose is only checked where it carries a marker: derived figures ("2.8×") stay free text.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import REPO

README = REPO / "README.md"
PAGES = [README, *sorted((REPO / "docs").rglob("*.md"))]
IMAGE = re.compile(r"!\[[^\]]*\]\((?P<src>[^)\s]+)\)")
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


def check_readme(text: str, name: str = "README.md") -> list[str]:
    """Every problem with the figures of one page, as one line each (empty: all fine)."""
    lines = text.splitlines()
    problems = []
    for header, body in _tables(lines):
        numeric = any(NUMERIC_CELL.match(c) for row in body for c in _cells(row))
        paths = _marker_above(lines, header)
        if paths is None:
            if numeric:
                problems.append(f"{name}:{header + 1}: a table of figures with no marker")
            continue
        pool = _file_numbers(paths)
        for k, row in enumerate(body):
            for cell in _cells(row):
                if not NUMERIC_CELL.match(cell):
                    continue
                for value, dec in _numbers(cell):
                    if not _found(value, dec, pool):
                        problems.append(
                            f"{name}:{header + 3 + k}: {cell!r} is not in {' '.join(paths)}"
                        )
    for n, line in enumerate(lines, 1):
        for m in MARKER.finditer(line):
            before = line[: m.start()]
            if not before.strip():
                continue  # a table marker, checked above
            found = _numbers(MARKER.sub("", before))
            assert found, f"{name}:{n}: a figure marker with no number before it"
            value, dec = found[-1]
            if not _found(value, dec, _file_numbers(m.group("paths").split())):
                problems.append(f"{name}:{n}: {value:g} is not in {m.group('paths')}")
        for m in IMAGE.finditer(line):
            src = m.group("src")
            if src.startswith("results/"):
                src = "benchmarks/" + src
            if not src.startswith("benchmarks/results/") or not (REPO / src).is_file():
                problems.append(f"{name}:{n}: the plot {m.group('src')} is not a results file")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_figure_of_the_readme_and_the_docs_is_in_the_results_file_it_names(
    page: Path,
) -> None:
    name = str(page.relative_to(REPO))
    assert check_readme(page.read_text(encoding="utf-8"), name) == []


def test_the_docs_pages_are_checked_too() -> None:
    names = {p.name for p in PAGES}
    assert {"README.md", "benchmarks.md", "economics.md", "replicas.md"} <= names


def test_the_check_fails_on_an_unsourced_table_and_on_a_wrong_figure() -> None:
    table = "| a | b |\n|---|---:|\n| x | 0.485 |\n"
    assert check_readme(table) == ["README.md:1: a table of figures with no marker"]
    results = next((REPO / "benchmarks" / "results").glob("*.md")).relative_to(REPO)
    wrong = f"costs 123456.789 tokens<!-- from: {results} -->\n"
    assert check_readme(wrong) == [f"README.md:1: 123457 is not in {results}"]
    assert check_readme("![plot](results/nothing-here.png)\n", "docs/x.md") == [
        "docs/x.md:1: the plot results/nothing-here.png is not a results file"
    ]


@pytest.mark.parametrize("cell", ["0.485", "1,154", "91.7 %", "0.085 ± 0.018", "11.9 / 15.7"])
def test_numeric_cells_are_recognised(cell: str) -> None:
    assert NUMERIC_CELL.match(cell)


RUN_ALL = REPO / "benchmarks" / "run_all.sh"


def _run_all(*args: str) -> str:
    """What ``benchmarks/run_all.sh --dry-run ARGS`` would run, one ``+ command`` a line."""
    done = subprocess.run(
        ["bash", str(RUN_ALL), "--dry-run", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout


def _outputs(dry_run: str, results: str = "benchmarks/results") -> set[str]:
    """Every results path the commands name, with those of the scripts they call (their
    ``$R``: ``results`` where the script takes it from run_all.sh, else its own folder)."""
    out = set(re.findall(r"(?<![\w/.])(?:benchmarks/results|\.toolroute/bench-quick)\S*", dry_run))
    for script in re.findall(r"bash (benchmarks/\w+\.sh)", dry_run):
        text = (REPO / script).read_text(encoding="utf-8")
        m = re.search(r"^R=(\S+)\n", text, re.MULTILINE)
        assert m, f"{script}: no R=… results folder"
        folder = results if m.group(1).startswith('"${R:-') else m.group(1)
        text = text.replace(m.group(0), "").replace('"$R', folder).replace("$R", folder)
        out |= set(re.findall(r"(?:benchmarks/results|\.toolroute/bench-quick)[\w./-]*", text))
    return {p.rstrip('"') for p in out}


def _quoted() -> set[str]:
    """Every results file a page of the README or the docs quotes (markers and plots)."""
    quoted = set()
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for m in MARKER.finditer(text):
            quoted.update(m.group("paths").split())
        for m in IMAGE.finditer(text):
            quoted.add(
                "benchmarks/" + m.group("src") if m.group("src").startswith("results/") else ""
            )
    return quoted - {""}


def _historical() -> dict[str, str]:
    """run_all.sh's HISTORICAL list: quoted files that need older code, with why."""
    text = RUN_ALL.read_text(encoding="utf-8")
    block = text[text.index("# HISTORICAL:") :].splitlines()[1:]
    rows = [line.lstrip("#").split(maxsplit=1) for line in block if line.startswith("#   ")]
    return {f"benchmarks/results/{name}": why for name, why in rows}


def _covered(path: str, outputs: set[str]) -> bool:
    return any(path in (o, f"{o}.md", f"{o}.json") or path.startswith(f"{o}/") for o in outputs)


def test_run_all_writes_every_results_file_the_docs_quote() -> None:
    outputs = _outputs(_run_all())
    historical = _historical()
    assert historical and all((REPO / p).is_file() for p in historical)
    missing = sorted(p for p in _quoted() - set(historical) if not _covered(p, outputs))
    assert missing == [], "quoted but no command of benchmarks/run_all.sh writes them"


def test_run_all_quick_writes_nothing_under_benchmarks_results() -> None:
    quick = _run_all("--quick")
    assert "benchmarks/adaptive.sh" not in quick  # full size only: it writes results/adaptive
    outputs = _outputs(quick, ".toolroute/bench-quick")
    assert outputs and all(p.startswith(".toolroute/bench-quick") for p in outputs), outputs
    full = _run_all()
    for section in ("gateway", "load", "store", "llm", "faults", "scale"):
        assert _run_all("--quick", "--only", section).strip(), (
            section
        )  # every section has a quick run
        assert _run_all("--only", section).strip() in full


def test_run_all_check_finds_a_quoted_file_no_command_writes() -> None:
    outputs = _outputs(_run_all("--skip", "load"))
    assert not _covered("benchmarks/results/load.md", outputs)
    assert _covered("benchmarks/results/livemcpbench/bench.md", outputs)

"""Package boundaries, read from the source: what CI holds beside the import-cycle check.

    python .ci/boundaries.py src/toolroute [--allowed .ci/boundaries.toml] [--report-only]

Three rules, each with today's exceptions listed in the allowed file so that the lists can only
shrink (a new exception fails, and so does a listed one that is gone: strike it from the list):

- **one-way sub-packages**: no two parts of ``layered`` (a package, e.g. ``toolroute.gateway``)
  import each other, at any level (module, function or ``TYPE_CHECKING``). A part is a
  sub-package, or a module directly in ``layered`` (``core`` for ``gateway/core.py``);
- **private modules**: a module whose name starts with ``_`` is imported only from inside its own
  package (its sub-packages included);
- **function-level imports**: ruff's ``PLC0415`` findings in the package, less those of the
  ``optional`` dependencies (imported where used so that the package works without them: a
  top-level package such as ``psycopg``, or a module of the package itself that imports one at
  its top, such as ``toolroute.store.postgres``, with what is under it), stay at or under
  ``function_imports``; the figure per 1,000 lines is printed beside them.

Import edges come from ``.ci/import_cycles.py`` (relative imports resolved, every kind of edge).
Exits 1 on a violation or a stale exception (0 with ``--report-only``).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from import_cycles import Edge, edges_of, modules_of  # noqa: E402

DEFAULT_ALLOWED = Path(__file__).resolve().parent / "boundaries.toml"


@dataclass(frozen=True, slots=True)
class Allowed:
    """Today's exceptions: what the check tolerates and expects to see."""

    layered: str
    two_way: frozenset[tuple[str, str]]
    private: frozenset[tuple[str, str]]
    optional: tuple[str, ...]
    function_imports: int

    @classmethod
    def read(cls, path: Path) -> Allowed:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        return cls(
            layered=data["layered"],
            two_way=frozenset((min(a, b), max(a, b)) for a, b in data["two_way"]),
            private=frozenset((a, b) for a, b in data["private"]),
            optional=tuple(data["optional"]),
            function_imports=int(data["function_imports"]),
        )


def part_of(module: str, layered: str) -> str | None:
    """The part of ``layered`` a module belongs to (None outside it, or for its ``__init__``)."""
    if not module.startswith(layered + "."):
        return None
    return module[len(layered) + 1 :].split(".", 1)[0]


def two_way(edges: list[Edge], layered: str) -> dict[tuple[str, str], list[Edge]]:
    """Pairs of parts of ``layered`` that import each other, (a, b) sorted, with the edges."""
    by_pair: dict[tuple[str, str], list[Edge]] = {}
    for e in edges:
        a, b = part_of(e.source, layered), part_of(e.target, layered)
        if a and b and a != b:
            by_pair.setdefault((a, b), []).append(e)
    return {
        (a, b): [*by_pair[(a, b)], *by_pair[(b, a)]]
        for a, b in sorted(by_pair)
        if a < b and (b, a) in by_pair
    }


def private_imports(edges: list[Edge]) -> dict[tuple[str, str], list[Edge]]:
    """(importer, private module) for every import of a ``_`` module from outside its package."""
    out: dict[tuple[str, str], list[Edge]] = {}
    for e in edges:
        package, _, last = e.target.rpartition(".")
        if not last.startswith("_") or last.startswith("__"):
            continue
        if e.source != package and not e.source.startswith(package + "."):
            out.setdefault((e.source, e.target), []).append(e)
    return out


def function_imports(root: Path, optional: tuple[str, ...]) -> list[tuple[str, int, str]]:
    """(file, line, imported module) of each PLC0415 finding not of an optional dependency."""
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--isolated", "--select", "PLC0415"]
        + ["--output-format", "json", "--exit-zero", str(root)],
        capture_output=True,
        text=True,
        check=True,
    )
    found = []
    for f in json.loads(done.stdout):
        line = (
            Path(f["filename"]).read_text(encoding="utf-8").splitlines()[f["location"]["row"] - 1]
        )
        match = re.match(r"\s*(?:from|import)\s+([\w.]+)", line)
        module = match.group(1) if match else line.strip()
        if not any(module == o or module.startswith(o + ".") for o in optional):
            found.append((f["filename"], f["location"]["row"], module))
    return sorted(found)


def source_lines(root: Path) -> int:
    return sum(len(p.read_text(encoding="utf-8").splitlines()) for p in root.rglob("*.py"))


def check(root: Path, allowed: Allowed) -> tuple[list[str], list[str]]:
    """(report lines, failures)."""
    modules_of(root)  # fails early on a directory that is no package
    edges = edges_of(root)
    report: list[str] = []
    failures: list[str] = []

    pairs = two_way(edges, allowed.layered)
    report.append(f"two-way dependencies between parts of {allowed.layered}: {len(pairs)}")
    for (a, b), es in pairs.items():
        seen = sorted({(e.source, e.target, e.kind) for e in es})
        first = ", ".join(f"{s} -> {t} ({k})" for s, t, k in seen[:4])
        new = (a, b) not in allowed.two_way
        report.append(f"  {a} <-> {b}{'  NEW' if new else ''}: {first}")
        if new:
            failures.append(f"{a} and {b} now import each other")
    failures += [f"{a} <-> {b} is gone: strike it" for a, b in allowed.two_way - set(pairs)]

    private = private_imports(edges)
    report.append(f"imports of another package's _ module: {len(private)}")
    for (source, target), es in private.items():
        new = (source, target) not in allowed.private
        lines = ", ".join(str(e.line) for e in es)
        report.append(f"  {source} -> {target} (line {lines}){'  NEW' if new else ''}")
        if new:
            failures.append(f"{source} imports {target}, private to its package")
    failures += [f"{s} -> {t} is gone: strike it" for s, t in allowed.private - set(private)]

    found = function_imports(root, allowed.optional)
    per_k = len(found) / max(source_lines(root), 1) * 1000
    report.append(
        f"function-level imports (PLC0415, optional dependencies aside): {len(found)} "
        f"({per_k:.1f} per 1,000 lines), ceiling {allowed.function_imports}"
    )
    if len(found) > allowed.function_imports:
        failures.append(f"{len(found)} function-level imports, over the ceiling")
        report += [f"  {f}:{line} {m}" for f, line, m in found]
    elif len(found) < allowed.function_imports:
        failures.append(f"function-level imports fell to {len(found)}: lower the ceiling to it")
    return report, failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("package", type=Path, help="the package directory, e.g. src/toolroute")
    parser.add_argument("--allowed", type=Path, default=DEFAULT_ALLOWED, help="the exceptions")
    parser.add_argument("--report-only", action="store_true", help="list, but exit 0")
    args = parser.parse_args(argv)
    report, failures = check(args.package.resolve(), Allowed.read(args.allowed))
    print("\n".join(report))
    if failures:
        print(f"{len(failures)} boundary problem(s) ({args.allowed.name} lists the exceptions):")
        print("\n".join(f"  {f}" for f in failures))
    return 1 if failures and not args.report_only else 0


if __name__ == "__main__":
    sys.exit(main())

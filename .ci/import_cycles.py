"""Import cycles inside one Python package, read from the source (nothing is imported).

    python .ci/import_cycles.py src/toolroute [--report-only]

Builds the package's import graph from each module's AST: every ``import`` and ``from … import``
that names a module of the package (relative imports resolved; ``from pkg import mod`` is an
edge to ``pkg.mod`` when that is a module, else to ``pkg``). Each edge is *module-level* (runs
when the module is imported: top level, class bodies, ``try``/``if`` at top level) or
*function-level* (inside a ``def``, deferred to the first call, which is how a cycle is usually
dodged) or *type-level* (under ``if TYPE_CHECKING:``: never run, but two modules that name each
other's types are still one concept split in two). Parent packages' ``__init__`` are not
counted as imported by their submodules.

Prints every cycle, each with the kind of every edge on it, and exits 1 when there is one
(0 with ``--report-only``, which only lists them). A cycle is listed once per strongly connected
group of modules for every edge of the group that no listed cycle covered yet (the shortest
cycle through that edge), so the list explains every edge that keeps the group together.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Kind = Literal["module", "function", "type"]


@dataclass(frozen=True, slots=True)
class Edge:
    source: str
    target: str
    kind: Kind
    line: int


def modules_of(root: Path) -> dict[str, Path]:
    """Dotted name → file of every module of the package at ``root`` (a dir with __init__.py)."""
    if not (root / "__init__.py").is_file():
        raise SystemExit(f"{root}: not a package (no __init__.py)")
    out: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.Module) -> Iterator[tuple[ast.Import | ast.ImportFrom, Kind]]:
    """Every import statement that can run, with where it runs."""

    def walk(node: ast.AST, kind: Kind) -> Iterator[tuple[ast.Import | ast.ImportFrom, Kind]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                yield child, kind
            elif isinstance(child, ast.If) and _is_type_checking(child.test):
                yield from walk(ast.Module(body=child.body, type_ignores=[]), "type")
                for other in child.orelse:  # `else:` of TYPE_CHECKING does run
                    yield from walk(ast.Module(body=[other], type_ignores=[]), kind)
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                yield from walk(child, "function")
            else:
                yield from walk(child, kind)

    yield from walk(tree, "module")


def edges_of(root: Path) -> list[Edge]:
    """The import edges between modules of the package at ``root``."""
    modules = modules_of(root)
    edges: list[Edge] = []
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        edges.extend(
            Edge(name, target, kind, node.lineno)
            for node, kind in _imports(tree)
            for target in _targets(node, name, is_package, modules)
            if target != name
        )
    return edges


def _targets(
    node: ast.Import | ast.ImportFrom, name: str, is_package: bool, modules: dict[str, Path]
) -> Iterator[str]:
    if isinstance(node, ast.Import):
        for alias in node.names:
            found = _deepest(alias.name, modules)
            if found:
                yield found
        return
    base = node.module or ""
    if node.level:
        package = name.split(".") if is_package else name.split(".")[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join([*package, *([base] if base else [])])
    for alias in node.names:
        sub = f"{base}.{alias.name}"
        if sub in modules:
            yield sub
        else:
            found = _deepest(base, modules)
            if found:
                yield found


def _deepest(dotted: str, modules: dict[str, Path]) -> str | None:
    parts = dotted.split(".")
    for n in range(len(parts), 0, -1):
        candidate = ".".join(parts[:n])
        if candidate in modules:
            return candidate
    return None


def _components(nodes: list[str], succ: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for start in nodes:
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(succ[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(succ[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    group = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        group.append(w)
                        if w == v:
                            break
                    if len(group) > 1:
                        out.append(sorted(group))
    return sorted(out)


def _path(start: str, goal: str, succ: dict[str, set[str]], allowed: set[str]) -> list[str]:
    """Shortest path start → goal inside ``allowed`` (breadth first)."""
    before: dict[str, str | None] = {start: None}
    queue = deque([start])
    while queue:
        v = queue.popleft()
        if v == goal:
            break
        for w in sorted(succ[v]):
            if w in allowed and w not in before:
                before[w] = v
                queue.append(w)
    path: list[str] = []
    node: str | None = goal
    while node is not None:
        path.append(node)
        node = before[node]
    return path[::-1]


def cycles(edges: list[Edge]) -> list[list[Edge]]:
    """Cycles covering every edge of every strongly connected group (see the module doc)."""
    by_pair: dict[tuple[str, str], Edge] = {}
    rank = {"module": 0, "function": 1, "type": 2}
    for e in sorted(edges, key=lambda e: (rank[e.kind], e.line)):
        by_pair.setdefault((e.source, e.target), e)  # a module-level edge wins over a deferred one
    nodes = sorted({e.source for e in edges} | {e.target for e in edges})
    succ: dict[str, set[str]] = {n: set() for n in nodes}
    for s, t in by_pair:
        succ[s].add(t)
    found: list[list[Edge]] = []
    for group in _components(nodes, succ):
        members = set(group)
        covered: set[tuple[str, str]] = set()
        for s, t in sorted(p for p in by_pair if p[0] in members and p[1] in members):
            if (s, t) in covered:
                continue
            ring = [s, *_path(t, s, succ, members)]
            pairs = list(zip(ring, ring[1:], strict=False))
            covered.update(pairs)
            found.append([by_pair[p] for p in pairs])
    return found


def render(found: list[list[Edge]]) -> str:
    lines = []
    for ring in found:
        kinds = {e.kind for e in ring}
        label = (
            "module-level"
            if kinds == {"module"}
            else "type-level"
            if "type" in kinds
            else "needs a function-level import"
        )
        path = " -> ".join([e.source for e in ring] + [ring[0].source])
        lines.append(f"cycle ({label}): {path}")
        lines.extend(f"    {e.source} -> {e.target}  ({e.kind}-level, line {e.line})" for e in ring)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("package", type=Path, help="the package directory, e.g. src/toolroute")
    parser.add_argument(
        "--report-only", action="store_true", help="list the cycles but exit 0 (not a CI gate)"
    )
    args = parser.parse_args(argv)
    root: Path = args.package.resolve()
    found = cycles(edges_of(root))
    if not found:
        print(f"no import cycles in {args.package}")
        return 0
    print(f"{len(found)} import cycle(s) in {args.package}:")
    print(render(found))
    return 0 if args.report_only else 1


if __name__ == "__main__":
    sys.exit(main())

"""The strategy surface: what `toolroute strategies` offers, the papers' place, plugins, and
the infrastructure's independence from any paper's method."""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from tests.conftest import REPO, TOOLROUTE, HashingEmbedder
from toolroute import cli
from toolroute.route.strategy import STRATEGIES, builtin_strategies
from toolroute.router import Router

VARIANTS = REPO / "benchmarks" / "variants.py"
SRC = REPO / "src" / "toolroute"
PAPER_MODULES = {"ehrr", "scalemcp", "tool_attention", "pa_rag", "atr"}


def _strategies(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(cli.main, ["strategies", *args])
    return res.exit_code, res.output


def _sections(out: str) -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {}
    title = ""
    for line in out.splitlines():
        if line and not line.startswith(" "):
            title = line.rstrip(":")
            sections[title] = []
        elif line.strip():
            sections[title].append(line.strip())
    return sections


def test_strategies_lists_a_few_product_modes_then_one_line_per_paper() -> None:
    # as a user runs it: a fresh process, where no test has loaded a plugin
    done = subprocess.run(
        [str(TOOLROUTE), "strategies"], capture_output=True, text=True, timeout=120, check=False
    )
    code, out = done.returncode, done.stdout
    assert code == 0, done.stderr
    sections = _sections(out)
    product, papers = list(sections.values())[:2]
    assert len(sections) == 2  # nothing from plugins unless one is loaded
    assert product[0].split()[0] == "default"
    assert len(product) <= 12
    assert [line.split()[0] for line in papers] == [
        "ehrr",
        "scalemcp",
        "tool-attention",
        "pa-rag",
        "atr",
    ]


def test_no_strategy_description_cites_a_seed_an_issue_or_a_results_file() -> None:
    for s in builtin_strategies().values():
        assert not re.search(r"seed \d|issue \d|results/|\.md\b|BASELINES", s.summary), s


def test_every_paper_module_cites_its_paper_by_title() -> None:
    titles = {
        "ehrr": "Clearing MCP Navigation Fog with Economics-Aware Hierarchical Tool",
        "scalemcp": "ScaleMCP: Dynamic and Auto-Synchronizing Model Context Protocol Tools",
        "tool_attention": "Tool Attention Is All You Need",
        "pa_rag": "PA-RAG: Protocol-Aware Retrieval-Augmented Generation",
        "atr": "Adaptive Tool Routing: Dynamic Tool Selection for MCP-Heavy",
    }
    for name, title in titles.items():
        path = SRC / "papers" / name
        source = (path / "__init__.py" if path.is_dir() else path.with_suffix(".py")).read_text()
        doc = ast.get_docstring(ast.parse(source)) or ""
        assert title in " ".join(doc.split()), name


def test_research_variants_come_only_from_the_benchmarks_plugin() -> None:
    assert "ehrr-fixed" not in builtin_strategies()
    code, out = _strategies("--plugin", str(VARIANTS))
    assert code == 0
    plugins = _sections(out)["From plugins"]
    names = {line.split()[0] for line in plugins}
    assert {"ehrr-fixed", "pa-rag-flat", "adaptive-2", "baseline-dense", "full-schema"} <= names
    assert len(_sections(out)["The papers' methods (toolroute.papers)"]) == 5


def test_a_plugin_that_is_not_there_is_one_line_and_exit_2(tmp_path: Path) -> None:
    code, out = _strategies("--plugin", str(tmp_path / "nope.py"))
    assert code == 2 and "no such file" in out and "Traceback" not in out
    empty = tmp_path / "empty.py"
    empty.write_text("X = 1\n")
    code, out = _strategies("--plugin", str(empty))
    assert code == 2 and "register_strategies" in out


def test_the_budget_mode_ranks_as_the_variant_it_was_measured_as(
    tmp_path: Path, catalog_file: Path, research_variants: None
) -> None:
    with Router(catalog_file, store=tmp_path, embedder=HashingEmbedder()) as r:
        for q in ("read a file and write it", "weather in Rome", "list the directory"):
            budget = r.scores(q, "budget")
            thrift = r.scores(q, "adaptive-thrift")
            assert np.array_equal(budget, thrift)
    assert STRATEGIES["adaptive-thrift"].group == "plugin"


def _imports(path: Path) -> set[str]:
    """The toolroute modules a file imports, at any level (type-checking blocks included)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return {m for m in out if m.startswith("toolroute.")}


def _module_file(name: str) -> Path | None:
    rel = Path(*name.split(".")[1:])
    for candidate in (SRC / rel.with_suffix(".py"), SRC / rel / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def test_the_store_stats_and_learning_reach_no_paper_module() -> None:
    """Followed transitively through every import, from the store, stats and learn/."""
    roots = [*(SRC / "store").glob("*.py"), SRC / "stats.py", *(SRC / "learn").glob("*.py")]
    seen: set[Path] = set()
    todo = list(roots)
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for name in _imports(path):
            assert not name.startswith("toolroute.papers"), f"{path} imports {name}"
            found = _module_file(name)
            if found is not None and found.name != "__init__.py":
                todo.append(found)
    assert any(p.name == "estimate.py" for p in seen)

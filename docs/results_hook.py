"""MkDocs hook: serve benchmarks/results/ under ``results/`` in the site.

A page shows a plot or links a table as ``results/<file>``; the file is the one the benchmark
wrote, not a copy under docs/, so a figure on the site is always the one in the repository.
Markdown results are served as plain text files (not pages), so the site stays what nav lists.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

RESULTS = Path(__file__).resolve().parent.parent / "benchmarks" / "results"
SERVED = {".png", ".svg", ".json", ".md", ".html", ".csv", ".jsonl", ".log"}


class ResultFile(File):
    """A results file served as it is, Markdown included (not rendered as a page)."""

    def is_documentation_page(self) -> bool:
        return False

    def is_static_page(self) -> bool:
        return True


def on_files(files: Files, config: Any) -> Files:
    for path in sorted(RESULTS.rglob("*")):
        if not path.is_file() or path.suffix not in SERVED:
            continue
        # src_dir benchmarks/: the file keeps its own path, results/<file>, in the site
        f = ResultFile(
            path.relative_to(RESULTS.parent).as_posix(),
            src_dir=str(RESULTS.parent),
            dest_dir=config["site_dir"],
            use_directory_urls=False,
        )
        files.append(f)
    return files

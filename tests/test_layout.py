"""The suite mirrors the source: every folder of tests/ is a package of src/toolroute, or one of
the few for what spans packages, so the tests of gateway/calls/access.py are found in
tests/gateway/calls/. Tiers are markers (``integration``, ``slow``), never folders."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import REPO

TESTS = REPO / "tests"
SRC = REPO / "src" / "toolroute"
BESIDE_SRC = {"docs", "ci", "conformance", "fixtures", "helpers"}
"""The docs and README end to end, the CI scripts, the MCP conformance suites through the
gateway, the servers tests start, shared helpers."""


def _folders() -> list[Path]:
    """Folders holding Python files (a folder left with only ``__pycache__`` is no folder)."""
    return sorted(
        {p.parent.relative_to(TESTS) for p in TESTS.rglob("*.py")} - {Path(".")},
    )


def test_every_test_folder_is_a_package_of_src_or_one_beside_it() -> None:
    stray = [
        str(d)
        for d in _folders()
        if d.parts[0] not in BESIDE_SRC and not (SRC / d / "__init__.py").is_file()
    ]
    assert stray == [], f"test folders with no src package of that name: {stray}"


def test_every_test_folder_is_a_package_so_equal_file_names_never_collide() -> None:
    assert [str(d) for d in _folders() if not (TESTS / d / "__init__.py").is_file()] == []


MAX_LINES = 600
"""A module past this is more than one concept (issue 47 split the three that were)."""


def test_no_source_module_is_longer_than_one_concept_needs() -> None:
    long = {
        str(p.relative_to(SRC)): n
        for p in SRC.rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}, f"split these by concept (at most {MAX_LINES} lines): {long}"

"""AGENTS.md is read in a clone: every file it links is a file of the repository."""

from __future__ import annotations

import re

from tests.conftest import REPO


def test_every_link_of_agents_md_is_a_file_of_the_repository() -> None:
    text = (REPO / "AGENTS.md").read_text(encoding="utf-8")
    targets = [t.split("#")[0] for t in re.findall(r"\]\(([^)\s]+)\)", text)]
    local = [t for t in targets if t and not re.match(r"[a-z]+://", t)]
    assert local, "AGENTS.md links no file at all: the check reads nothing"
    outside = [t for t in local if not (REPO / t).resolve().is_relative_to(REPO.resolve())]
    missing = [t for t in local if not (REPO / t).exists()]
    assert (outside, missing) == ([], [])

"""What a user reads from the installed product — every command's ``--help`` and the status
page — names no paper section or equation and no path of the source repository (a path such as
``benchmarks/variants.py`` does not exist after ``pip install``). Papers' methods are named as
the strategies they are (``ehrr``); their sections live in the docs."""

from __future__ import annotations

import re

import click
import pytest
from click.testing import CliRunner

from toolroute.cli import main
from toolroute.gateway.http.status_page import SERVER_COLUMNS, TOOL_COLUMNS, render_html

NOTEBOOK = {
    "a paper's section": re.compile(r"§\s*[\dIVX]"),
    "a paper's equation or table": re.compile(r"\b(?:eq|Eq)\.\s*\d|\bTable\s+\d"),
    "a paper's preset name": re.compile(r"\bvar-\d"),
    "a repository path": re.compile(r"\b(?:benchmarks|docs|tests|src|experiments|scripts)/\w"),
    "a smoothing symbol": re.compile(r"λ"),
}


def _notes(text: str) -> list[str]:
    return [f"{what}: {m.group(0)!r}" for what, p in NOTEBOOK.items() for m in p.finditer(text)]


def _commands(group: click.Group = main, above: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command and sub-command, as the words that call it."""
    out = [above]
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if isinstance(cmd, click.Group):
            out += _commands(cmd, (*above, name))
        else:
            out.append((*above, name))
    return out


@pytest.mark.parametrize("command", _commands(), ids=" ".join)
def test_help_names_no_paper_section_and_no_repository_path(command: tuple[str, ...]) -> None:
    result = CliRunner().invoke(main, [*command, "--help"])
    assert result.exit_code == 0, result.output
    assert _notes(result.output) == []


def test_the_status_page_and_its_column_tips_name_no_paper_section() -> None:
    snap = {"servers": [], "generated_at": 0, "tool_count": 0, "strategy": "default", "k": 5}
    page = render_html({**snap, "events": []})
    tips = " ".join(tip for _, tip in (*SERVER_COLUMNS, *TOOL_COLUMNS))
    assert "moving average" in tips  # the tips are really read here
    assert _notes(page) == [] and _notes(tips) == []


def test_the_check_sees_each_kind_of_note() -> None:
    text = "θ (Tool Attention §5.2), EHRR §V, eq. 8, λ = 0.15, var-1, benchmarks/variants.py"
    assert len(_notes(text)) == 6
    assert _notes("the ehrr strategy; a plugin MODULE|FILE.py") == []

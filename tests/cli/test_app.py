"""The ``toolroute`` group names its commands and imports a command's module only when that
command is asked for: ``toolroute --help`` lists them all from their summaries."""

from __future__ import annotations

import importlib
import subprocess
import sys

import click
import pytest

from toolroute.cli import main
from toolroute.cli.app import COMMANDS


def _defined(module: str) -> set[str]:
    """The top-level commands a command module defines (a group's own sub-commands aside)."""
    found = vars(importlib.import_module(f"toolroute.cli.{module}")).values()
    commands = [c for c in found if isinstance(c, click.Command)]
    inner = {id(sub) for g in commands if isinstance(g, click.Group) for sub in g.commands.values()}
    return {c.name for c in commands if id(c) not in inner and c.name is not None}


def test_each_command_module_defines_exactly_the_commands_the_group_names_in_it() -> None:
    for module in {lazy.module for lazy in COMMANDS.values()}:
        named = {name for name, lazy in COMMANDS.items() if lazy.module == module}
        assert _defined(module) == named, module


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_summary_the_group_lists_is_the_commands_own_short_help(name: str) -> None:
    command = main.get_command(click.Context(main), name)
    assert command is not None
    summary = click.Command(name, help=COMMANDS[name].summary)
    assert summary.get_short_help_str(1000) == command.get_short_help_str(1000)


def _modules_after(*args: str) -> list[str]:
    """The command modules a fresh process has imported after ``toolroute ARGS``."""
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from toolroute.cli import main\n"
        "result = CliRunner().invoke(main, sys.argv[1:])\n"
        "assert result.exit_code == 0, result.output\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('toolroute.cli.'))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_toolroute_help_imports_no_command_module_and_a_command_only_its_own() -> None:
    assert _modules_after("--help") == ["toolroute.cli.app"]
    route = _modules_after("route", "--help")
    assert "toolroute.cli.catalog" in route
    assert not {"toolroute.cli.gateway", "toolroute.cli.serve", "toolroute.cli.measure"} & {*route}

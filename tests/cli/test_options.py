"""The CLI options that are ``[toolroute]`` settings take type, default and help from
``ToolrouteSettings``: what the file accepts, the command line accepts, and no more."""

from __future__ import annotations

import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from toolroute.cli import main
from toolroute.settings import DEFAULTS, ToolrouteSettings

SETTING_OPTIONS = {("route", "strategy"), ("route", "k"), ("route", "abstain")}
SETTING_OPTIONS |= {("bench", "abstain"), ("calibrate", "strategy"), ("calibrate", "k")}
OTHER_MEANINGS = {
    "--store": "a data directory holding each config's store in a folder of its own "
    "($TOOLROUTE_STORE), where the setting names one store",
    "--strategy": "bench and simulate compare several strategies (repeatable)",
}
"""Options spelled like a setting that mean something else, and why."""


def _option(command: str, name: str) -> click.Option:
    cmd = main.get_command(click.Context(main), command)
    assert cmd is not None
    (found,) = [p for p in cmd.params if p.name == name]
    assert isinstance(found, click.Option)
    return found


@pytest.mark.parametrize(("command", "name"), sorted(SETTING_OPTIONS))
def test_a_setting_option_has_the_settings_default_and_description(command: str, name: str) -> None:
    option = _option(command, name)
    assert option.default == getattr(DEFAULTS, name)
    assert option.help == ToolrouteSettings.model_fields[name].description


def _spelled_like_a_setting(
    group: click.Group, path: tuple[str, ...] = ()
) -> list[tuple[str, click.Option]]:
    found = []
    for name, cmd in group.commands.items():
        if isinstance(cmd, click.Group):
            found += _spelled_like_a_setting(cmd, (*path, name))
            continue
        for p in cmd.params:
            spelled = {o.lstrip("-").replace("-", "_") for o in p.opts}
            if isinstance(p, click.Option) and spelled & set(ToolrouteSettings.model_fields):
                found.append((" ".join((*path, name)), p))
    return found


def test_every_option_spelled_like_a_setting_is_the_setting_or_says_why_not() -> None:
    """A new ``--threshold`` (or ``-k``) elsewhere takes the setting's definition through
    ``setting_option``, or names here what else it means."""
    for command, option in _spelled_like_a_setting(main):  # type: ignore[arg-type]
        if (command, option.name) in SETTING_OPTIONS:
            continue
        assert option.opts[0] in OTHER_MEANINGS, f"{command} {option.opts[0]}"


def test_the_cli_refuses_what_the_settings_refuse() -> None:
    runner = CliRunner()
    too_many = runner.invoke(main, ["route", "a clock", "-k", "101"])
    assert too_many.exit_code == 2 and "1<=x<=100" in too_many.output
    unknown = runner.invoke(main, ["route", "a clock", "--abstain", "sometimes"])
    assert unknown.exit_code == 2 and "'off', 'default', 'strict'" in unknown.output
    assert isinstance(_option("route", "abstain").type, click.Choice)


def test_reading_the_cli_loads_no_mcp_types() -> None:
    """The settings the options read come without the MCP types (half a second of every
    ``toolroute --help``)."""
    code = "import sys, toolroute.cli; print('mcp_types' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr

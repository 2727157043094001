"""The click group ``main``: it names every ``toolroute`` command and imports a command's module
only when that command runs or shows its own help (click's "Lazily Loading Subcommands"), so
``toolroute --help`` and a light command never pay for a heavy one's imports (the gateway, the
MCP SDK, the benchmark runner); each command module imports what it needs at its top."""

from __future__ import annotations

import importlib
import logging
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import click

from toolroute.heap import fix_mmap_threshold

__all__ = ["COMMANDS", "LazyGroup", "Lazy", "main"]


@dataclass(frozen=True, slots=True)
class Lazy:
    """Where a command lives (a module of this package defining a command of the same name)
    and its help's first sentence, which ``toolroute --help`` lists without importing it."""

    module: str
    summary: str


COMMANDS: Mapping[str, Lazy] = {
    "add": Lazy("registry", "Add SERVER from the registry of [registry] url to the servers file."),
    "approve": Lazy(
        "gateway",
        "Release tools from quarantine (a changed or suspicious description / schema): their "
        "current version is pinned and a running gateway indexes them again within a second.",
    ),
    "auth": Lazy("auth", "Sign in to SERVER, a url server of the config protected by OAuth 2.1."),
    "bench": Lazy(
        "measure",
        "Measure strategies on a benchmark: recall@1/3/5/10, nDCG@5/10, MRR, Full@10, latency.",
    ),
    "calibrate": Lazy(
        "measure", "Find θ for the similarity threshold: the F1-best threshold on QUERIES."
    ),
    "connect": Lazy("connect", "Put toolroute in front of an MCP client's servers, in one step."),
    "demo": Lazy(
        "catalog", "Index the shipped demo catalog and route a few example requests (offline)."
    ),
    "disconnect": Lazy(
        "connect",
        "Undo `toolroute connect CLIENT`: the servers go back into the client's config in place "
        "of toolroute's entry (a backup of the config is kept; the servers file stays).",
    ),
    "index": Lazy("catalog", "Build or incrementally update the index of a catalog."),
    "memory": Lazy(
        "memory",
        "The usage memory: which tool each client called after which find_tools query.",
    ),
    "route": Lazy("catalog", "Rank the catalog's tools for QUERY, best first."),
    "serve": Lazy(
        "serve", "Serve toolroute as one MCP server in front of every server of CONFIG_FILE."
    ),
    "simulate": Lazy(
        "measure", "Simulate an agent over a seeded world of prices, failures and latencies."
    ),
    "status": Lazy(
        "gateway",
        "Each server's state as the running gateway of this config sees it (up, down, "
        "restarting; the error, exit code, restarts, tools) and the tools in quarantine.",
    ),
    "strategies": Lazy(
        "catalog",
        "List the routing strategies: the product's, then the papers' methods, then any a "
        "--plugin added.",
    ),
    "sync": Lazy(
        "gateway",
        "Connect to every MCP server of the config and sync the index with their tools.",
    ),
}


class LazyGroup(click.Group):
    """A group whose commands are imported by name when first asked for; its own help lists
    them from their summaries."""

    def __init__(self, *args: Any, lazy: Mapping[str, Lazy], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = lazy

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy and cmd_name not in self.commands:
            module = importlib.import_module(f"{__package__}.{self.lazy[cmd_name].module}")
            command = getattr(module, cmd_name)
            if not isinstance(command, click.Command):
                raise TypeError(f"{module.__name__}.{cmd_name} is no click command")
            self.add_command(command, cmd_name)
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """click's own listing, with a command not imported yet shown by its summary."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(map(len, names))
        rows = []
        for name in names:
            # a command not imported yet stands in as one with its summary for its help
            command = self.commands.get(name) or click.Command(name, help=self.lazy[name].summary)
            if not command.hidden:
                rows.append((name, command.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, lazy=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="toolroute")
@click.option("-v", "--verbose", count=True, help="More log output on stderr (-vv for debug).")
def main(verbose: int) -> None:
    """toolroute: route an agent's need to the few MCP tools that will work.

    \b
    Quick start (no servers, no network):
      toolroute demo
      toolroute route "convert a docx to pdf" --catalog catalog.json -k 5
      toolroute bench --catalog catalog.json --queries queries.jsonl --strategy default
    """
    # process tuning belongs to the entry point, not to a library object (heap.py)
    fix_mmap_threshold()
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(
        level=level, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
    )

"""The click group ``main`` that every ``toolroute`` command registers on."""

from __future__ import annotations

import logging
import sys

import click


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
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
    from toolroute.heap import fix_mmap_threshold

    # process tuning belongs to the entry point, not to a library object (heap.py)
    fix_mmap_threshold()
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(
        level=level, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
    )

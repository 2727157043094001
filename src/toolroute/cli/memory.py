"""``toolroute memory``: inspect and clear the usage memory of a store (toolroute/learn/memory.py).

The memory is per store, so clearing it in a PostgreSQL store clears it for every replica.
"""

from __future__ import annotations

import json
from typing import Any

import click

from toolroute.cli.common import _friendly, json_option, store_option
from toolroute.store import default_store_target, open_store


def _open(store: Any) -> Any:
    return open_store(store if store is not None else default_store_target())


@click.group()
def memory() -> None:
    """The usage memory: which tool each client called after which find_tools query."""


@memory.command("show")
@store_option
@json_option
@_friendly
def show(store: Any, as_json: bool) -> None:
    """Rows and calls remembered, per client (query texts are never kept, only hashes)."""
    with _open(store) as s:
        rows = s.load_memory()
    per: dict[str, dict[str, float]] = {}
    for r in rows:
        c = per.setdefault(r.client, {"rows": 0, "successes": 0.0, "failures": 0.0})
        c["rows"] += 1
        c["successes"] += r.successes
        c["failures"] += r.failures
    if as_json:
        click.echo(json.dumps(per))
        return
    if not per:
        click.echo("the usage memory is empty")
    for client, c in sorted(per.items()):
        click.echo(
            f"{client or '(local)'}: {c['rows']:.0f} rows, {c['successes']:.0f} successful and "
            f"{c['failures']:.0f} failed calls"
        )


@memory.command("clear")
@store_option
@click.option("--client", default=None, help="Clear only this client's rows ('' for local).")
@json_option
@_friendly
def clear(store: Any, client: str | None, as_json: bool) -> None:
    """Forget what the usage memory learnt (every client's, or one's)."""
    with _open(store) as s:
        dropped = s.clear_memory(client)
    if as_json:
        click.echo(json.dumps({"cleared": dropped}))
    else:
        click.echo(f"cleared {dropped} rows")

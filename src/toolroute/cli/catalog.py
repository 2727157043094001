"""Commands over one catalog: index, route, strategies, demo."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.table import Table

from toolroute.cli.app import main
from toolroute.cli.common import (
    DEMO_QUERIES,
    _friendly,
    _index,
    _local_llm,
    _router,
    catalog_option,
    documents_option,
    json_option,
    local_llm_option,
    questions_option,
    stderr,
    stdout,
    store_option,
)


@main.command()
@catalog_option
@store_option
@documents_option
@questions_option
@local_llm_option
@json_option
@_friendly
def index(
    catalog: Path | None,
    store: Path | None,
    documents: str,
    questions: str,
    local_llm: bool,
    as_json: bool,
) -> None:
    """Build or incrementally update the index of a catalog.

    Only tools whose SHA-256 (name + description + schema) changed are re-indexed, and only
    texts never seen before are embedded. Prints added / updated / removed / unchanged /
    embedded counts.
    """
    with _local_llm(local_llm, not as_json), _router(catalog, store, documents, questions) as r:
        report = _index(r, not as_json)
        if as_json:
            click.echo(json.dumps(report.to_dict()))
        else:
            d = report.to_dict()
            click.echo(" ".join(f"{k}={v}" for k, v in d.items()))


@main.command()
@click.argument("query")
@catalog_option
@store_option
@documents_option
@click.option(
    "--strategy",
    "-s",
    default="default",
    show_default=True,
    help="Routing strategy (see `toolroute strategies`).",
)
@click.option(
    "-k",
    "k",
    type=click.IntRange(min=1),
    default=5,
    show_default=True,
    help="Number of tools to return.",
)
@click.option(
    "--schemas", is_flag=True, help="Include description and input_schema in --json output."
)
@click.option(
    "--explain",
    is_flag=True,
    help="Show what decided each candidate (EHRR: similarity, costs, posted price, accept bit).",
)
@local_llm_option
@json_option
@_friendly
def route(
    query: str,
    catalog: Path | None,
    store: Path | None,
    documents: str,
    strategy: str,
    k: int,
    schemas: bool,
    explain: bool,
    local_llm: bool,
    as_json: bool,
) -> None:
    """Rank the catalog's tools for QUERY, best first."""
    from toolroute.route.strategy import resolve_strategy

    resolve_strategy(strategy)
    with _local_llm(local_llm, not as_json), _router(catalog, store, documents) as router:
        _index(router, not as_json)
        rows = router.explain(query, k=k, strategy=strategy)
    if as_json:
        out = []
        for c, detail in rows:
            d = c.to_dict(full=schemas)
            if explain:
                d["explain"] = detail
            out.append(d)
        click.echo(json.dumps(out, ensure_ascii=False))
        return
    table = Table(title=f"{strategy}: {query}", title_justify="left")
    extra = sorted({key for _, d in rows for key in d} - {"score"}) if explain else []
    for col in ("#", "server", "tool", "score", *extra, "description"):
        table.add_column(col, overflow="fold")
    for i, (c, d) in enumerate(rows, 1):
        cells = [str(d.get(key, "")) for key in extra]
        table.add_row(str(i), c.server, c.tool, f"{c.score:.3f}", *cells, c.description[:60])
    stdout.print(table)


@main.command()
def strategies() -> None:
    """List the routing strategies."""
    from toolroute.route.strategy import STRATEGIES

    for s in STRATEGIES.values():
        click.echo(f"{s.name:16s} {s.summary}")


@main.command()
@store_option
@_friendly
def demo(store: Path | None) -> None:
    """Index the shipped demo catalog and route a few example requests (offline)."""
    with _router(None, store, "toolroute") as router:
        report = _index(router, True)
        n = router.catalog.tool_count
        stderr.print(f"indexed {n} demo tools ({report.embedded} texts embedded)")
        for q in DEMO_QUERIES:
            table = Table(title=f"» {q}", title_justify="left")
            for col in ("server", "tool", "score"):
                table.add_column(col)
            for c in router.route(q, k=4):
                table.add_row(c.server, c.tool, f"{c.score:.3f}")
            stdout.print(table)

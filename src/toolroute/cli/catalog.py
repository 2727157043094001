"""Commands over one catalog: index, route, strategies, demo."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

import click

from toolroute.cli import render
from toolroute.cli.common import (
    DEMO_QUERIES,
    _friendly,
    _local_llm,
    _router,
    catalog_option,
    documents_option,
    json_option,
    local_llm_option,
    plugin_option,
    questions_option,
    store_option,
    synced_option,
)
from toolroute.cli.options import abstain_option, k_option, strategy_option
from toolroute.cli.render import (
    abstain_text,
    explain_text,
    index_with_progress,
    one_line,
    print_table,
)
from toolroute.errors import ConfigError
from toolroute.route.explain import stage_scores
from toolroute.route.strategy import resolve_strategy, strategies_in

Rows = list[tuple[Any, dict[str, Any]]]


@click.command()
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
    questions: str | None,
    local_llm: bool,
    as_json: bool,
) -> None:
    """Build or incrementally update the index of a catalog.

    Only tools whose SHA-256 (name + description + schema) changed are re-indexed, and only
    texts never seen before are embedded. Prints added / updated / removed / unchanged /
    embedded counts.
    """
    with (
        _local_llm(local_llm, not as_json) as llm,
        _router(catalog, store, documents, questions, llm=llm) as r,
    ):
        report = index_with_progress(r, not as_json)
        if as_json:
            click.echo(json.dumps(report.to_dict()))
        else:
            d = report.to_dict()
            click.echo(" ".join(f"{k}={v}" for k, v in d.items()))


@click.command()
@click.argument("query", required=False)
@click.option(
    "--query-file",
    type=click.File("r", encoding="utf-8"),
    default=None,
    metavar="FILE",
    help="Read the request from FILE instead of QUERY (any length; `-` is stdin).",
)
@catalog_option
@synced_option
@store_option
@documents_option
@plugin_option
@strategy_option
@k_option
@click.option(
    "--schemas", is_flag=True, help="Include description and input_schema in --json output."
)
@click.option(
    "--explain",
    is_flag=True,
    help="Show what decided each candidate, one block per tool (the ehrr strategy: "
    "similarity, costs, posted price, accept, utility; the others: dense, BM25, server and "
    "best sub-intent scores). With --json: an `explain` object per candidate.",
)
@click.option(
    "--server",
    default=None,
    metavar="NAME",
    help="List this server's tools in catalog order (its inventory) instead of routing.",
)
@abstain_option
@local_llm_option
@json_option
@_friendly
def route(
    query: str | None,
    query_file: TextIO | None,
    catalog: Path | None,
    config_path: Path | None,
    store: Path | None,
    documents: str,
    strategy: str,
    k: int,
    schemas: bool,
    explain: bool,
    server: str | None,
    abstain: str,
    local_llm: bool,
    as_json: bool,
) -> None:
    """Rank the catalog's tools for QUERY, best first.

    QUERY `-` reads the request from stdin, as does `--query-file -`; use either for a long
    request (a pasted document, a log) that does not fit on a command line.

    \b
    The tools come from --catalog FILE, or from --config FILE: the servers of an MCP client
    config as the last `toolroute sync --config FILE` listed them, e.g.
      toolroute sync --config servers.json
      toolroute route "what time is it in Tokyo" --config servers.json
    With neither, the shipped demo catalog.

    `--server NAME` (no QUERY) lists that server's tools instead, in catalog order.
    """
    if server is not None:
        if query is not None or query_file is not None:
            raise ConfigError("--server lists a server's tools; give it without a request")
        _inventory(catalog, config_path, store, documents, server, schemas, as_json)
        return
    text = _query_text(query, query_file)
    resolve_strategy(strategy)
    notes: dict[str, Any] = {}
    with (
        _local_llm(local_llm, not as_json) as llm,
        _router(catalog, store, documents, config=config_path, llm=llm) as router,
    ):
        router.params = replace(router.params, abstain=abstain)  # type: ignore[arg-type]  # a Choice
        index_with_progress(router, not as_json)
        rows = router.explain(text, k=k, strategy=strategy, notes=notes)
        if explain:
            rows = _with_stage_scores(router, text, strategy, rows)
    verdict = notes.get("abstain")
    if verdict is not None and not verdict.fits:
        d = verdict.to_dict()
        near = ", ".join(d["nearest_servers"]) or "none"
        render.stderr.print(f"no tool fits: {d['message']} (nearest servers: {near}); {d['hint']}")
    elif verdict is not None and verdict.doubtful and rows:
        d = verdict.caution()
        render.stderr.print(f"doubtful fit (p {d['p_fits']}): {d['message']}; {d['hint']}")
    if explain and verdict is not None and not as_json:
        click.echo(abstain_text(verdict.explain()))
    if as_json:
        out = []
        for c, detail in rows:
            d = c.to_dict(full=schemas)
            if explain:
                d["explain"] = detail
            out.append(d)
        click.echo(json.dumps(out, ensure_ascii=False))
    elif explain:
        click.echo(explain_text(strategy, text, rows))
    elif rows or verdict is None or verdict.fits:  # "no tool fits" was said on stderr
        width = max(20, min(render.stdout.width, 100) - 45) if render.stdout.is_terminal else 60
        table = [
            [str(i), c.server, c.tool, f"{c.score:.3f}", one_line(c.description, width)]
            for i, (c, _) in enumerate(rows, 1)
        ]
        title = one_line(f"{strategy}: {text}", 100)
        print_table(render.stdout, title, ("#", "server", "tool", "score", "description"), table)


def _inventory(
    catalog: Path | None,
    config_path: Path | None,
    store: Path | None,
    documents: str,
    server: str,
    schemas: bool,
    as_json: bool,
) -> None:
    """``route --server NAME``: the server's tools in catalog order (nothing is embedded)."""
    with _router(catalog, store, documents, config=config_path) as router:
        tools = router.server_tools(server)
    if as_json:
        out = []
        for t in tools:
            d: dict[str, Any] = {"server": t.server, "tool": t.name}
            if schemas:
                d.update(description=t.description, input_schema=t.input_schema)
            out.append(d)
        click.echo(json.dumps(out, ensure_ascii=False))
        return
    width = max(20, min(render.stdout.width, 100) - 30) if render.stdout.is_terminal else 60
    table = [[str(i), t.name, one_line(t.description, width)] for i, t in enumerate(tools, 1)]
    title = f"{tools[0].server if tools else server}: {len(tools)} tools"
    print_table(render.stdout, title, ("#", "tool", "description"), table)


def _query_text(query: str | None, query_file: TextIO | None) -> str:
    if query is not None and query_file is not None:
        raise ConfigError("give the request either as QUERY or with --query-file, not both")
    if query_file is not None:
        return str(query_file.read())
    if query == "-":
        return sys.stdin.read()
    if query is None:
        raise ConfigError("no request: give QUERY, `-` to read it from stdin, or --query-file")
    return query


def _with_stage_scores(router: Any, text: str, strategy: str, rows: Rows) -> Rows:
    """Non-EHRR rankings get their stages' own scores (EHRR's trace already explains it)."""
    if not rows or all("server_sim" in d for _, d in rows):
        return rows
    ctx = router.query_context(text, resolve_strategy(strategy).embeds)
    keys = [(c.server, c.tool) for c, _ in rows]
    stages = stage_scores(router.built, ctx, router.params, keys, strategy)
    return [(c, {**s, **d}) for (c, d), s in zip(rows, stages, strict=True)]


@click.command()
@plugin_option
@json_option
def strategies(as_json: bool) -> None:
    """List the routing strategies: the product's, then the papers' methods, then any a
    --plugin added."""
    groups = (
        ("product", "Strategies"),
        ("paper", "The papers' methods (toolroute.papers)"),
        ("plugin", "From plugins"),
    )
    if as_json:
        rows = [
            {"name": s.name, "group": g, "summary": s.summary}
            for g, _ in groups
            for s in strategies_in(g)
        ]
        click.echo(json.dumps(rows))
        return
    first = True
    for group, title in groups:
        listed = list(strategies_in(group))
        if not listed:
            continue
        if not first:
            click.echo()
        first = False
        click.echo(f"{title}:")
        for s in listed:
            click.echo(f"  {s.name:16s} {s.summary}")


@click.command()
@store_option
@_friendly
def demo(store: Path | None) -> None:
    """Index the shipped demo catalog and route a few example requests (offline)."""
    with _router(None, store, "toolroute") as router:
        report = index_with_progress(router, True)
        n = router.catalog.tool_count
        render.stderr.print(f"indexed {n} demo tools ({report.embedded} texts embedded)")
        for q in DEMO_QUERIES:
            rows = [[c.server, c.tool, f"{c.score:.3f}"] for c in router.route(q, k=4)]
            print_table(render.stdout, f"» {q}", ("server", "tool", "score"), rows)

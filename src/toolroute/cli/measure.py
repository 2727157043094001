"""Commands that measure strategies on a benchmark: bench, simulate, calibrate."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import click

from toolroute.bench.calibrate import calibrate as run_calibrate
from toolroute.bench.calibrate import write_threshold
from toolroute.bench.report import markdown_table, write_outputs
from toolroute.bench.runner import bench as run_bench
from toolroute.bench.simulate import run_simulation
from toolroute.bench.simulation_report import markdown_table as simulation_table
from toolroute.bench.simulation_report import (
    write_learning_outputs,
    write_simulation_outputs,
)
from toolroute.catalog.loader import load_queries
from toolroute.cli.common import (
    _friendly,
    _local_llm,
    _router,
    catalog_option,
    demo_catalog_path,
    documents_option,
    json_option,
    local_llm_option,
    plugin_option,
    queries_option,
    store_option,
    synced_option,
)
from toolroute.cli.options import abstain_option, k_option, strategy_option
from toolroute.cli.render import index_with_progress, progress
from toolroute.errors import ConfigError
from toolroute.extra import require
from toolroute.present.presenter import Presenter
from toolroute.route.strategy import STRATEGIES, resolve_strategy


@click.command()
@catalog_option
@synced_option
@queries_option
@store_option
@documents_option
@plugin_option
@click.option(
    "--strategy",
    "-s",
    "strategies",
    multiple=True,
    help="Strategy to measure; repeat for several; 'all' for every one registered "
    "(with --plugin, its strategies too). Default: default.",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Write bench.json, bench.md (table), bench.png (plot) and bench.html (one "
    "self-contained page: tables and plots side by side) into this directory.",
)
@click.option(
    "--tokens",
    is_flag=True,
    help="Also measure tool_tokens_per_turn (cl100k) under each strategy's presentation.",
)
@click.option(
    "--out-of-scope",
    "out_of_scope",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    metavar="FILE",
    help="Requests no tool serves (JSON lines, `query` and an empty `relevant`): each "
    "strategy's FP rate, the share still answered with a tool, is reported beside recall.",
)
@abstain_option
@local_llm_option
@json_option
@_friendly
def bench(
    catalog: Path | None,
    config_path: Path | None,
    queries: Path,
    store: Path | None,
    documents: str,
    strategies: tuple[str, ...],
    out: Path | None,
    tokens: bool,
    out_of_scope: Path | None,
    abstain: str,
    local_llm: bool,
    as_json: bool,
) -> None:
    """Measure strategies on a benchmark: recall@1/3/5/10, nDCG@5/10, MRR, Full@10, latency.

    Metrics count required tool groups (relevant_groups: any tool of a group satisfies it);
    latency is warm, per query, query embedding included. Research baselines and variants
    join the strategies measured with --plugin.
    """
    if out is not None:  # fail before the run, not after it
        require("matplotlib", "plot", "bench --out (its plots)")
    names = list(strategies) or ["default"]
    if "all" in names:
        names = list(STRATEGIES)
    for n in names:
        resolve_strategy(n)
    with (
        _local_llm(local_llm, not as_json) as llm,
        _router(catalog, store, documents, config=config_path, llm=llm) as router,
    ):
        router.params = replace(router.params, abstain=abstain)  # type: ignore[arg-type]  # a Choice
        qs = load_queries(queries, router.catalog)
        if out_of_scope is not None:
            extra = load_queries(out_of_scope, router.catalog)
            if any(q.groups for q in extra):
                raise ConfigError(f"{out_of_scope}: out-of-scope requests name no relevant tool")
            qs += extra
        index_with_progress(router, not as_json)
        with progress(not as_json) as update:
            presenter = None
            if tokens:
                presenter = Presenter(router.catalog)
            results = run_bench(router, qs, names, progress=update, tokens=presenter)
    title = config_path.stem if config_path else (catalog or demo_catalog_path()).parent.name
    if out is not None:
        for p in write_outputs(results, out, title):
            click.echo(f"wrote {p}", err=True)
    if as_json:
        click.echo(json.dumps(results))
    else:
        click.echo(markdown_table(results, title))


def _window(text: str | None, option: str = "--window") -> tuple[int, int] | None:
    """``A:B`` as (A, B); a user mistake is a ConfigError (one line, exit 2)."""
    if text is None:
        return None
    a, sep, b = text.partition(":")
    try:
        span = (int(a), int(b))
    except ValueError:
        span = None
    if not sep or span is None or not 0 <= span[0] < span[1]:
        raise ConfigError(f"{option} must be A:B with 0 <= A < B, got {text!r}")
    return span


@click.command()
@catalog_option
@synced_option
@queries_option
@store_option
@documents_option
@plugin_option
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
    help="Candidates presented per route call.",
)
@click.option(
    "--providers",
    type=click.IntRange(min=1, max=8),
    default=3,
    show_default=True,
    help="Competing vendors per server (a marketplace); 1 is the catalog as it is.",
)
@click.option(
    "--planner",
    type=click.Choice(["oracle", "clauses", "llm", "whole"]),
    default="oracle",
    show_default=True,
    help="Step texts of the per-step agent: oracle (knows each step's need), clauses, llm; "
    "whole is the whole-request agent.",
)
@click.option(
    "--attempts",
    type=click.IntRange(min=1),
    default=2,
    show_default=True,
    help="Calls the per-step agent makes on a step before giving up.",
)
@click.option(
    "--prices",
    type=click.Choice(["independent", "positive"]),
    default="independent",
    show_default=True,
    help="Vendor prices independent of hidden quality, or rising with it.",
)
@click.option(
    "--stream",
    type=click.Choice(["once", "zipf", "sessions"]),
    default="once",
    show_default=True,
    help="Task order: each once, a Zipf-recurring stream, or sessions of repeated work.",
)
@click.option("--tasks", type=click.IntRange(min=1), default=None, help="Stream length.")
@click.option("--window", default=None, help="A:B — report tasks A..B-1 of the stream only.")
@click.option(
    "--noise", type=click.FloatRange(0.0, 0.99), default=0.0, help="Noisy agent's error rate."
)
@click.option(
    "--servers-k",
    type=click.IntRange(min=1),
    default=None,
    help="Servers shortlisted by the cascade and ehrr strategies (default: 5 per vendor).",
)
@click.option(
    "--vendor-correlation",
    type=click.FloatRange(0.0, 1.0),
    default=0.0,
    help="Correlation of hidden quality between two tools of one vendor's server.",
)
@click.option("--outage", default=None, help="A:B — one vendor is down for tasks A..B-1.")
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
    config_path: Path | None,
    queries: Path,
    store: Path | None,
    documents: str,
    strategies: tuple[str, ...],
    seeds: int,
    n: int,
    providers: int,
    planner: str,
    attempts: int,
    prices: str,
    stream: str,
    tasks: int | None,
    window: str | None,
    noise: float,
    servers_k: int | None,
    vendor_correlation: float,
    outage: str | None,
    baseline: str,
    out: Path | None,
    as_json: bool,
) -> None:
    """Simulate an agent over a seeded world of prices, failures and latencies.

    Each seed draws one world (every server sold by --providers vendors with their own prices,
    hidden success, post-accept failures and latencies) before any strategy runs; every strategy
    meets the same world and the same luck per call. The per-step agent routes one planner text
    per step; an oracle router that knows the hidden figures runs beside the strategies and
    gives each one's regret. Reports success rate, cost, invalid calls, call latency and schema
    tokens per query. The world and agent are documented in the docs' "Economics and the
    simulation" page.
    """
    if out is not None:  # fail before the run, not after it
        require("matplotlib", "plot", "simulate --out (its plots)")
    names = list(strategies) or ["cascade", "ehrr"]
    span = _window(window)
    down = _window(outage, "--outage")
    for name in names:
        resolve_strategy(name)
    with _router(catalog, store, documents, config=config_path) as router:
        qs = load_queries(queries, router.catalog)
        index_with_progress(router, not as_json)
        with progress(not as_json) as update:
            sim = run_simulation(
                router,
                qs,
                names,
                seeds=seeds,
                n=n,
                progress=update,
                providers=providers,
                planner=planner,  # type: ignore[arg-type]  # click.Choice checked it
                attempts=attempts,
                price_quality=prices,  # type: ignore[arg-type]
                stream=stream,  # type: ignore[arg-type]
                tasks=tasks,
                window=span,
                noise=noise,
                servers_k=servers_k,
                vendor_correlation=vendor_correlation,
                outage=down,
            )
    paired = sim.paired_table(baseline) if baseline in names and len(names) > 1 else ""
    if out is not None:
        for p in write_simulation_outputs(sim.summary, sim.series, out, setting=sim.setting):
            click.echo(f"wrote {p}", err=True)
        if stream != "once":
            for p in write_learning_outputs(sim, out):
                click.echo(f"wrote {p}", err=True)
        if paired:
            (out / "paired.md").write_text(paired, encoding="utf-8")
            click.echo(f"wrote {out / 'paired.md'}", err=True)
    if as_json:
        click.echo(json.dumps(sim.summary))
    else:
        click.echo(simulation_table(sim.summary))
        click.echo(paired)


@click.command()
@catalog_option
@synced_option
@queries_option
@store_option
@documents_option
@plugin_option
@strategy_option
@k_option
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
    config_path: Path | None,
    queries: Path,
    store: Path | None,
    documents: str,
    strategy: str,
    k: int,
    write: Path | None,
    as_json: bool,
) -> None:
    """Find θ for the similarity threshold: the F1-best threshold on QUERIES.

    For each θ, the kept set of a query is its top-k candidates scoring at least θ;
    precision is over that set, recall over the required tool groups.
    """
    resolve_strategy(strategy)
    with _router(catalog, store, documents, config=config_path) as router:
        qs = load_queries(queries, router.catalog)
        index_with_progress(router, not as_json)
        result = run_calibrate(router, qs, strategy=strategy, k=k)
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

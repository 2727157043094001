"""Commands of the MCP gateway over a config's servers: sync, serve."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from toolroute.cli.app import main
from toolroute.cli.common import _friendly, json_option, store_option

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
    type=click.IntRange(0, 65535),
    default=8765,
    show_default=True,
    help="HTTP port (endpoint http://HOST:PORT/mcp; 0: any free port, printed on stderr).",
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

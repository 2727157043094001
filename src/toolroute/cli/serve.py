"""``toolroute serve``: the MCP gateway in front of a config's servers. Over stdio its stdout
carries MCP messages only; it prints no table, so it imports neither the terminal output
(:mod:`~toolroute.cli.render`, rich) nor another command's module."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import anyio
import click

from toolroute.cli.common import CONFIG_HELP, _config, _friendly, settings_option, store_option


@click.command()
@click.argument("config_file", required=False, type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--config",
    "config_path",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    envvar="TOOLROUTE_CONFIG",
    help=CONFIG_HELP,
)
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
    config_file: Path | None,
    config_path: Path | None,
    settings: Path | None,
    store: Path | None,
    transport: str,
    host: str,
    port: int,
) -> None:
    """Serve toolroute as one MCP server in front of every server of CONFIG_FILE.

    Exposes find_tools(query, k) and call_tool(name, arguments). Over stdio, stdout carries
    MCP messages only; logs go to stderr. Edits of the config files and SIGHUP are applied
    live: only the servers that changed are started, stopped or restarted.

    The servers file is the argument, --config, or $TOOLROUTE_CONFIG (for launchers that
    own --config themselves, such as the MCP Inspector:
    `npx @modelcontextprotocol/inspector --cli toolroute serve servers.json`).
    """
    if config_file is not None and config_path is not None and config_file != config_path:
        raise click.UsageError(
            f"two servers files: {config_file} (argument) and {config_path} (--config or "
            "$TOOLROUTE_CONFIG); give one"
        )
    config_path = config_file or config_path
    if config_path is None:
        raise click.UsageError(
            "which servers? toolroute serve SERVERS.json (or --config SERVERS.json, or "
            "TOOLROUTE_CONFIG=SERVERS.json)"
        )

    # the gateway (the SDK's server, the call path, the HTTP stack) only when it serves:
    # `serve --help` stays as quick as the other commands' help
    from toolroute.gateway.ops.serving import serve as run_serve

    cfg = _config(config_path, settings, store)
    # uvloop where it installs (not Windows): less CPU per HTTP request (benchmarks/load.py);
    # the stdlib loop otherwise
    uvloop = importlib.util.find_spec("uvloop") is not None
    anyio.run(
        lambda: run_serve(
            cfg,
            transport,  # type: ignore[arg-type]
            port,
            host,
            reload=lambda: _config(config_path, settings, store),  # edits and SIGHUP
        ),
        backend_options={"use_uvloop": uvloop},
    )

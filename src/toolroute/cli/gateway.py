"""Commands of the MCP gateway over a config's servers: sync, serve, status, approve."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from toolroute.cli.app import main
from toolroute.cli.common import _friendly, _progress, json_option, store_option
from toolroute.errors import ConfigError

CONFIG_HELP = (
    "Servers JSON as MCP clients write it: mcpServers (Claude Desktop, Cursor, Claude "
    "Code's .mcp.json) or servers (VS Code's mcp.json). Default: $TOOLROUTE_CONFIG."
)
config_option = click.option(
    "--config",
    "config_path",
    type=click.Path(path_type=Path, dir_okay=False),
    required=True,
    envvar="TOOLROUTE_CONFIG",
    show_envvar=False,
    help=CONFIG_HELP,
)
settings_option = click.option(
    "--settings",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="toolroute.toml with toolroute's own settings. Default: toolroute.toml beside --config.",
)


def _config(
    config_path: Path, settings: Path | None, store: Path | None, *, secrets: bool = True
) -> Any:
    import logging
    from dataclasses import replace

    # downstream servers' stderr, a line each labelled with its server (downstream/stdio_client.py)
    logging.getLogger("toolroute.downstream").setLevel(logging.INFO)
    # indexing progress at start, "indexing docs: 3,200 of 20,000 tools" (gateway/ops/startup.py)
    logging.getLogger("toolroute.gateway.ops.startup").setLevel(logging.INFO)

    from toolroute.cli.common import config_store
    from toolroute.config import load_config

    cfg = load_config(config_path, settings, secrets=secrets)
    own = str(config_store(cfg, store, config_path))  # this config's own store
    return replace(cfg, settings=cfg.settings.model_copy(update={"store": own}))


@main.command()
@config_option
@settings_option
@store_option
@click.option(
    "--allow-partial",
    is_flag=True,
    help="Exit 0 even when a server is down (its last known tools are kept).",
)
@json_option
@_friendly
def sync(
    config_path: Path, settings: Path | None, store: Path | None, allow_partial: bool, as_json: bool
) -> None:
    """Connect to every MCP server of the config and sync the index with their tools.

    Servers are listed concurrently; only tools whose SHA-256 (name + description + schema)
    changed are re-indexed. A server that fails is reported and keeps its last known tools;
    the command then exits 1 (naming the servers that are down) unless --allow-partial.
    """
    import anyio

    from toolroute.gateway.ops.syncing import sync_once

    cfg = _config(config_path, settings, store)
    with _progress(not as_json) as update:
        result = anyio.run(lambda: sync_once(cfg, progress=lambda d, t: update("embedding", d, t)))
    if as_json:
        click.echo(json.dumps(result.to_dict()))
    else:
        for s in result.servers:
            extra = f"  ({s.error})" if s.error else ""
            click.echo(f"{s.name:24s} {s.status:6s} {s.tools:4d} tools{extra}")
        for h in result.quarantined:
            click.echo(f"quarantined {h.name}@{h.version}: {h.message}")
        click.echo(" ".join(f"{k}={v}" for k, v in result.index.to_dict().items()))
    down = [s for s in result.servers if s.status != "ok"]
    if down and not allow_partial:
        names = ", ".join(f"{s.name} ({s.error})" for s in down)
        click.echo(
            f"error: {len(down)} of {len(result.servers)} servers down: {names}"
            " (--allow-partial to exit 0)",
            err=True,
        )
        sys.exit(1)


@main.command()
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
    import importlib.util

    import anyio

    from toolroute.gateway.ops.serving import serve as run_serve

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


def _store_dir(cfg: Any) -> Any:
    """The store of the config's gateway (a directory, or a PostgreSQL URL)."""
    from toolroute.gateway.ops.app import store_dir_of

    return store_dir_of(cfg)


def _local_dir(cfg: Any) -> Path:
    """Where that gateway keeps its local files (status.json): the store's directory."""
    from toolroute.store import open_store

    with open_store(_store_dir(cfg)) as st:
        return Path(st.directory)


@main.command()
@config_option
@settings_option
@store_option
@json_option
@click.option(
    "--open",
    "open_link",
    is_flag=True,
    help="Print a one-time link to the running HTTP gateway's status page, signed in as "
    "the operator (for a browser, which sends no token; valid once, for 2 minutes).",
)
@_friendly
def status(
    config_path: Path, settings: Path | None, store: Path | None, as_json: bool, open_link: bool
) -> None:
    """Each server's state as the running gateway of this config sees it (up, down,
    restarting; the error, exit code, restarts, tools) and the tools in quarantine.

    Reads status.json, which `toolroute serve` rewrites in its store whenever a state changes;
    with no gateway running it shows the last state one wrote.
    """
    from toolroute.gateway.ops.status import gateway_alive, read_status

    cfg = _config(config_path, settings, store, secrets=False)  # reading needs no token
    if open_link:
        _open_link(_local_dir(cfg), as_json)
        return
    found = read_status(_local_dir(cfg))
    if found is None:
        raise ConfigError("no gateway has run with this config yet (start toolroute serve)")
    alive = gateway_alive(found)
    if as_json:
        click.echo(json.dumps({**found, "running": alive}))
        return
    click.echo(
        f"gateway pid {found.get('pid')}: " + ("running" if alive else "not running (last state)")
    )
    for name, s in found.get("servers", {}).items():
        tools = "?" if s.get("tools") is None else s["tools"]
        extra = f"  ({s['error']})" if s.get("error") else ""
        click.echo(
            f"{name:24s} {s['status']:10s} {tools!s:>5} tools  restarts={s['restarts']}{extra}"
        )
        if s.get("fix"):  # the operator must act (an OAuth sign-in): the exact command
            click.echo(f"{'':24s} fix: {s['fix']}")
    for name, h in found.get("quarantined", {}).items():
        why = ", ".join(h["flags"] or h["changed"])
        click.echo(f"quarantined {name}@{h['version']}: {h['reason']} ({why})")
    for server, progress in found.get("indexing", {}).items():  # not routable yet
        click.echo(f"indexing {server}: {progress}")
    for name, how in found.get("names", {}).items():  # pass-through names not exposed as is
        click.echo(f"name {name}: {how}")
    for part, problem in found.get("faults", {}).items():  # e.g. a full disk: still serving
        click.echo(f"problem: {part}: {problem}")


def _open_link(local_dir: Path, as_json: bool) -> None:
    """A one-time login link signed with the key the running gateway wrote (mode 0600) in its
    store directory: only the user who runs the gateway can read it."""
    from toolroute.gateway.http.login import CODE_TTL_S, mint_code, read_login_file
    from toolroute.gateway.ops.status import gateway_alive

    found = read_login_file(local_dir)
    if found is None or not gateway_alive({"pid": found["pid"], "running": True}):
        raise ConfigError(
            "no HTTP gateway is running with this config (start toolroute serve --transport http)"
        )
    link = f"{found['url']}/status/login?once={mint_code(found['key'])}"
    if as_json:
        click.echo(json.dumps({"url": link, "expires_in_s": CODE_TTL_S}))
    else:
        click.echo(f"open within {CODE_TTL_S:.0f} s (works once): {link}")


@main.command()
@config_option
@settings_option
@store_option
@click.argument("tools", nargs=-1)
@click.option("--all", "approve_all", is_flag=True, help="Approve every tool in quarantine.")
@_friendly
def approve(
    config_path: Path,
    settings: Path | None,
    store: Path | None,
    tools: tuple[str, ...],
    approve_all: bool,
) -> None:
    """Release tools from quarantine (a changed or suspicious description / schema): their
    current version is pinned and a running gateway indexes them again within a second.

    TOOLS are namespaced names (server__tool) as `toolroute sync` or `status` print them.
    """
    from toolroute.gateway.calls.quarantine import approve as approve_tools
    from toolroute.gateway.calls.quarantine import held_tools
    from toolroute.store import open_store

    if not tools and not approve_all:
        raise ConfigError("name the tools to approve, or pass --all")
    cfg = _config(config_path, settings, store, secrets=False)
    with open_store(_store_dir(cfg)) as st:
        held = held_tools(st)
        unknown = [t for t in tools if t not in held]
        if unknown:
            raise ConfigError(_not_held(unknown[0], held, st))
        if not held:
            click.echo("no tool is in quarantine")
            return
        done = approve_tools(st, list(tools))
    for name in done:
        click.echo(f"approved {name}@{held[name]['version']}")


def _not_held(name: str, held: dict[str, Any], store: Any) -> str:
    """Why NAME cannot be approved, with the names it may have meant."""
    import difflib

    from toolroute.catalog.name import qualified_name

    served = {qualified_name(s, t) for s, t in store.tool_hashes()}
    if name in served:
        why = f"{name} is not in quarantine: it is served as it is"
    else:
        why = f"{name} is not in quarantine"
    if held:
        why += f"; held: {', '.join(sorted(held))}"
    else:
        why += " (no tool is)"
    close = [n for n in difflib.get_close_matches(name, [*held, *served], n=3) if n != name]
    if close:
        why += f"; did you mean {' or '.join(close)}?"
    return why

"""Commands over a config's gateway, beside serving it: sync, status, approve."""

from __future__ import annotations

import difflib
import json
import sys
from pathlib import Path
from typing import Any

import anyio
import click

from toolroute.catalog.name import qualified_name
from toolroute.cli import render
from toolroute.cli.common import (
    _config,
    _friendly,
    _local_dir,
    _store_dir,
    gateway_options,
    json_option,
)
from toolroute.errors import ConfigError
from toolroute.gateway.calls.quarantine import approve as approve_tools
from toolroute.gateway.calls.quarantine import held_tools
from toolroute.gateway.http.login import CODE_TTL_S, mint_code, read_login_file
from toolroute.gateway.ops.status import gateway_alive, read_status
from toolroute.gateway.ops.syncing import sync_once
from toolroute.store import open_store


@click.command()
@gateway_options
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
    cfg = _config(config_path, settings, store)
    with render.progress(not as_json) as update:
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


@click.command()
@gateway_options
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


@click.command()
@gateway_options
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

"""``toolroute add``: a server from the operator's MCP registry into the servers file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from toolroute.cli.common import (
    _config,
    _friendly,
    _local_dir,
    gateway_options,
    json_option,
)
from toolroute.errors import RegistryError
from toolroute.registry import command as r


@click.command()
@gateway_options
@json_option
@click.argument("server")
@click.option("--name", default=None, help="Its name in the servers file (default: from SERVER).")
@click.option("-y", "--yes", is_flag=True, help="Add without asking (you have read the plan).")
@click.option("--dry-run", is_flag=True, help="Show what would be written and run; add nothing.")
@_friendly
def add(
    config_path: Path,
    settings: Path | None,
    store: Path | None,
    as_json: bool,
    server: str,
    name: str | None,
    yes: bool,
    dry_run: bool,
) -> None:
    """Add SERVER from the registry of [registry] url to the servers file.

    SERVER is a registry name as find_tools suggests it (io.github.acme/weather), optionally
    with the version it showed (io.github.acme/weather@1.2.0): a registry that now serves
    another version, or other contents for the same version, is refused.

    \b
    Before anything is written you see what would run (the pinned package or the URL) and
    which variables the gateway's environment must set; you are asked to confirm (--yes
    skips the question). Refused, each in one line: a namespace or package type outside the
    [registry] allow-list, an unpinned version, a look-alike package name, a description
    that reads like instructions to the model. The servers file is locked while it is
    written and checked as a whole first, so a running gateway reloads a complete file.

    \b
    Example:
      toolroute add io.github.modelcontextprotocol/time@2026.10.19 --config servers.json
    """
    cfg = _config(config_path, settings, store, secrets=False)
    servers_file = cfg.path or config_path  # loaded from config_path: its resolved path
    reg = cfg.registry
    if not reg.url:
        raise RegistryError(
            f"{cfg.settings_path}: no [registry] url: name the registry to add servers from"
        )
    wanted, _, version = server.partition("@")
    directory = _local_dir(cfg) / "registry"
    client = r.RegistryClient(reg, directory)
    entry = client.lookup(wanted)
    if version and version != entry.version:
        raise RegistryError(
            f"{entry.name}: the registry now serves version {entry.version}, not {version}; "
            f"add {entry.name}@{entry.version} if you mean it"
        )
    if why := r.allowed(entry, reg):
        raise RegistryError(why)
    pins = r.Pins(directory / "pins.json")
    listing = client.listing()
    others = [e for e in listing.entries if e.name != entry.name]
    held = r.flags([*others, entry], pins, r.known_packages(cfg))
    if entry.name in held:
        raise RegistryError(f"{entry.name} refused: {held[entry.name]}")
    pins.note([entry])  # first sight: this version must keep these contents
    p = r.plan(entry, reg, directory / "venvs", name)
    shown = p.to_dict()
    if as_json and dry_run:
        click.echo(json.dumps(shown, indent=2))
        return
    if not as_json:
        _show(p.to_dict(), entry.description, servers_file)
    if dry_run:
        return
    if not yes and not click.confirm("add it?", default=False, err=True):
        raise click.Abort
    added = r.write(servers_file, p, cfg.settings_path)
    if as_json:
        click.echo(json.dumps({**shown, "added": added}, indent=2))
    elif added:
        click.echo(
            f"added {p.server} to {servers_file}: a running gateway starts it now (it follows the "
            "file), or at its next start"
        )
    else:
        click.echo(f"{p.server} is in {servers_file} already, as it would be written")


def _show(p: dict[str, Any], description: str, path: Path | None) -> None:
    click.echo(f"{p['name']} {p['version']} ({p['kind']}): {description}", err=True)
    click.echo(f"  would run: {p['would_run']}", err=True)
    if p["needs"]:
        click.echo(f"  needs in the gateway's environment: {', '.join(p['needs'])}", err=True)
    click.echo(f"  written to {path} as {p['server']!r}", err=True)

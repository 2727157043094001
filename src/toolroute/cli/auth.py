"""``toolroute auth SERVER``: sign in to an OAuth-protected url server (downstream/oauth.py)."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import click

from toolroute.cli.common import (
    _config,
    _friendly,
    _store_dir,
    gateway_options,
    json_option,
)
from toolroute.config import HttpSpec
from toolroute.downstream.signin import sign_in
from toolroute.errors import ConfigError


@click.command()
@gateway_options
@click.argument("server")
@click.option(
    "--no-browser",
    is_flag=True,
    help="Only print the sign-in URL (open it on any machine whose browser can reach the "
    "authorization server; the redirect comes back to this machine's loopback port).",
)
@click.option(
    "--timeout",
    "timeout_s",
    type=click.FloatRange(1, 3600),
    default=300,
    show_default=True,
    help="Seconds to wait for the browser's answer.",
)
@json_option
@_friendly
def auth(
    config_path: Path,
    settings: Path | None,
    store: Path | None,
    server: str,
    no_browser: bool,
    timeout_s: float,
    as_json: bool,
) -> None:
    """Sign in to SERVER, a url server of the config protected by OAuth 2.1.

    Runs the MCP authorization flow: discovers the server's authorization server, registers
    toolroute with it (or uses the entry's oauth.clientId), opens the browser on the sign-in
    page (the URL is also printed) and receives the answer on a loopback port. The tokens
    are stored encrypted with TOOLROUTE_SECRET_KEY; a running gateway of this config picks
    them up within a second and refreshes them before they expire.
    """
    cfg = _config(config_path, settings, store)
    spec = cfg.servers.get(server)
    if spec is None:
        known = ", ".join(sorted(cfg.servers)) or "none"
        raise ConfigError(f"no server named {server!r} in {config_path} (servers: {known})")
    if not isinstance(spec, HttpSpec):
        raise ConfigError(f"server {server} runs a command (stdio): only url servers sign in")
    if any(k.lower() == "authorization" for k in spec.headers):
        raise ConfigError(
            f'server {server} sends its own "Authorization" header: remove it from the entry'
            " to use OAuth instead"
        )

    def show(url: str) -> None:
        if as_json:
            click.echo(json.dumps({"authorize_url": url}))
        else:
            click.echo(f"Sign in to {server} in your browser:\n{url}")

    done = anyio.run(
        lambda: sign_in(
            server,
            spec,
            _store_dir(cfg),
            show=show,
            open_browser=not no_browser,
            timeout_s=timeout_s,
        )
    )
    if as_json:
        click.echo(json.dumps({"server": server, "tools": done.tools, "signed_in": True}))
    else:
        click.echo(
            f"signed in to {server}: {done.tools} tools; a running gateway picks it up within"
            " a second"
        )

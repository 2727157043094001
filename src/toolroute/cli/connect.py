"""``toolroute connect`` / ``disconnect``: put toolroute in front of an MCP client's servers.

``connect CLIENT`` reads the client's config, moves its servers into a toolroute servers file,
and leaves one entry in the client, ``toolroute serve --config <servers file>``; ``disconnect``
puts the servers back. Both keep a timestamped backup of every file they change, ``--dry-run``
prints the unified diff of every file they would write, and running either twice changes
nothing the second time (toolroute is never nested inside toolroute).

Default client files (``HOME``, ``XDG_CONFIG_HOME`` and ``APPDATA`` move them, ``--config-file``
names another):

- claude: Claude Desktop's ``claude_desktop_config.json`` (macOS ``~/Library/Application
  Support/Claude``, Windows ``%APPDATA%\\Claude``, Linux ``~/.config/Claude``);
- cursor: ``~/.cursor/mcp.json`` (a project's ``.cursor/mcp.json`` with --config-file);
- vscode: ``.vscode/mcp.json`` of the current directory when it exists, else the user
  profile's ``mcp.json`` (``~/Library/Application Support/Code/User``, ``%APPDATA%\\Code\\User``,
  ``~/.config/Code/User``);
- claude-code: ``.mcp.json`` of the current directory when it exists, else ``~/.claude.json``
  (its user-scope ``mcpServers``).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from platformdirs import user_config_dir

from toolroute.cli.common import _friendly
from toolroute.config import read_json
from toolroute.errors import ConfigError

CLIENTS = ("claude", "cursor", "vscode", "claude-code")
ENTRY = "toolroute"
"""The name of toolroute's own entry in the client's config."""


@dataclass(frozen=True, slots=True)
class Write:
    """One file to (re)write: its text before (None: new) and after."""

    path: Path
    before: str | None
    after: str

    def diff(self) -> str:
        old = (self.before or "").splitlines(keepends=True)
        new = self.after.splitlines(keepends=True)
        a = str(self.path) if self.before is not None else "/dev/null"
        return "".join(difflib.unified_diff(old, new, a, str(self.path)))


def _config_home() -> Path:
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support"
    if sys.platform == "win32":
        return Path(os.environ.get("APPDATA") or Path.home() / "AppData" / "Roaming")
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")


def client_file(client: str) -> Path:
    """The client's config file where it keeps its MCP servers by default."""
    if client == "claude":
        return _config_home() / "Claude" / "claude_desktop_config.json"
    if client == "cursor":
        return Path.home() / ".cursor" / "mcp.json"
    if client == "vscode":
        workspace = Path.cwd() / ".vscode" / "mcp.json"
        return workspace if workspace.is_file() else _config_home() / "Code" / "User" / "mcp.json"
    project = Path.cwd() / ".mcp.json"
    return project if project.is_file() else Path.home() / ".claude.json"


def _key(client: str, data: dict[str, Any]) -> str:
    """Where the servers are: VS Code's ``servers``, everyone else's ``mcpServers``."""
    if client == "vscode" and "mcpServers" not in data:
        return "servers"
    return "mcpServers"


def default_servers_file(client: str, config_file: Path) -> Path:
    """The toolroute servers file of one client config, in toolroute's per-user config dir
    (one per client file, so a workspace and the user profile never share one)."""
    digest = hashlib.sha256(str(config_file.resolve()).encode()).hexdigest()[:8]
    return (
        Path(user_config_dir("toolroute", appauthor=False)) / "servers" / f"{client}-{digest}.json"
    )


def toolroute_command() -> list[str]:
    """The absolute command that starts this toolroute (a client does not search our PATH)."""
    argv0 = Path(sys.argv[0])
    if argv0.name.startswith("toolroute") and argv0.is_file():
        return [os.path.abspath(argv0)]
    found = shutil.which("toolroute")
    if found:
        return [os.path.abspath(found)]
    return [sys.executable, "-m", "toolroute.cli"]


def _entry(client: str, servers_file: Path) -> dict[str, Any]:
    command, *pre = toolroute_command()
    entry: dict[str, Any] = {
        "command": command,
        "args": [*pre, "serve", "--config", str(servers_file)],
    }
    if client in ("vscode", "claude-code"):
        entry = {"type": "stdio", **entry}
    return entry


def _served_file(entry: Any) -> Path | None:
    """The servers file of a ``toolroute serve --config FILE`` entry; None for any other."""
    if not isinstance(entry, dict) or not isinstance(entry.get("args"), list):
        return None
    args = [str(a) for a in entry["args"]]
    ours = (
        Path(str(entry.get("command", ""))).name.startswith("toolroute") or "toolroute.cli" in args
    )
    if not ours or "serve" not in args or "--config" not in args[:-1]:
        return None
    return Path(args[args.index("--config") + 1]).expanduser()


def _read(path: Path) -> tuple[str | None, dict[str, Any]]:
    if not path.exists():
        return None, {}
    data = read_json(path)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object")
    return path.read_text(encoding="utf-8"), data


def _servers_of(path: Path, data: dict[str, Any], key: str) -> dict[str, Any]:
    servers = data.get(key, {})
    if not isinstance(servers, dict):
        raise ConfigError(f"{path}: {key}: expected an object")
    return dict(servers)


def _dump(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def plan_connect(
    client: str, config_file: Path, servers_file: Path | None
) -> tuple[Path, list[Write]]:
    """The servers file and the files ``connect`` writes: that file (the client's servers
    added) and the client's config (one toolroute entry left); none when already connected."""
    before, data = _read(config_file)
    if before is None:
        raise ConfigError(f"{config_file}: no such file: the client has no servers to connect")
    key = _key(client, data)
    servers = _servers_of(config_file, data, key)
    current = _served_file(servers.get(ENTRY))
    theirs = {n: e for n, e in servers.items() if _served_file(e) is None}
    target = servers_file or current or default_servers_file(client, config_file)
    if not theirs and current is None:
        raise ConfigError(f"{config_file}: {key}: no servers to put behind toolroute")
    moved: dict[str, Any] = {}
    for source in dict.fromkeys(p for p in (current, target) if p is not None):
        _, old = _read(source)
        moved.update(_servers_of(source, old, "mcpServers" if "mcpServers" in old else "servers"))
    moved.update(theirs)  # what the client has now wins over an older copy
    if ENTRY in moved:
        raise ConfigError(f"{config_file}: a server named {ENTRY!r} is not toolroute's; rename it")
    writes = []
    target_before, target_data = _read(target)
    rest = {k: v for k, v in target_data.items() if k not in ("servers", "mcpServers")}
    target_after = _dump({**rest, "mcpServers": moved})
    if target_after != target_before:
        writes.append(Write(target, target_before, target_after))
    client_after = _dump({**data, key: {ENTRY: _entry(client, target)}})
    if client_after != before and (theirs or servers.get(ENTRY) != _entry(client, target)):
        writes.append(Write(config_file, before, client_after))
    return target, writes


def plan_disconnect(client: str, config_file: Path) -> list[Write]:
    """The client's config with its servers back in place of toolroute's entry."""
    before, data = _read(config_file)
    if before is None:
        raise ConfigError(f"{config_file}: no such file")
    key = _key(client, data)
    servers = _servers_of(config_file, data, key)
    served = _served_file(servers.get(ENTRY))
    if served is None:
        return []
    _, kept = _read(served)
    restored = _servers_of(served, kept, "mcpServers" if "mcpServers" in kept else "servers")
    others = {n: e for n, e in servers.items() if n != ENTRY}
    return [Write(config_file, before, _dump({**data, key: {**restored, **others}}))]


def apply(writes: list[Write], *, dry_run: bool) -> list[Path]:
    """Print the diffs (dry run) or write every file, a timestamped backup of each first;
    returns the backups made."""
    backups: list[Path] = []
    if dry_run:
        for w in writes:
            click.echo(w.diff(), nl=False)
        return backups
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for w in writes:
        w.path.parent.mkdir(parents=True, exist_ok=True)
        if w.before is not None:
            backup = w.path.with_name(f"{w.path.name}.{stamp}.bak")
            n = 1
            while backup.exists():  # two runs in one second: never overwrite a backup
                backup = w.path.with_name(f"{w.path.name}.{stamp}-{n}.bak")
                n += 1
            shutil.copy2(w.path, backup)
            backups.append(backup)
        tmp = w.path.with_name(f".{w.path.name}.toolroute-{os.getpid()}")
        tmp.write_text(w.after, encoding="utf-8")
        if w.before is not None:
            shutil.copymode(w.path, tmp)
        tmp.replace(w.path)  # atomic: the client never reads half a file
    return backups


client_argument = click.argument("client", type=click.Choice(CLIENTS))
config_file_option = click.option(
    "--config-file",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    metavar="PATH",
    help="The client's config file. Default: where the client keeps it (see above).",
)
dry_run_option = click.option(
    "--dry-run", is_flag=True, help="Print the unified diff of every file; write nothing."
)


@click.command()
@client_argument
@config_file_option
@click.option(
    "--servers-file",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    metavar="PATH",
    help="Where the client's servers go. Default: a file per client config in toolroute's "
    "per-user config dir (~/.config/toolroute/servers/ on Linux).",
)
@dry_run_option
@click.option("--undo", is_flag=True, help="The same as `toolroute disconnect CLIENT`.")
@_friendly
def connect(
    client: str, config_file: Path | None, servers_file: Path | None, dry_run: bool, undo: bool
) -> None:
    """Put toolroute in front of an MCP client's servers, in one step.

    Moves the servers of CLIENT's config (claude: Claude Desktop, cursor, vscode, claude-code)
    into a toolroute servers file and leaves one entry in the client:
    `toolroute serve --config <servers file>` (the absolute path of this toolroute). A
    timestamped backup of each changed file is kept beside it; run `toolroute sync --config
    <servers file>` next, then restart the client. Running it again moves only servers added
    to the client since; `toolroute disconnect CLIENT` puts them back.

    \b
    Client files: claude  claude_desktop_config.json (macOS ~/Library/Application Support/
                          Claude, Windows %APPDATA%\\Claude, Linux ~/.config/Claude)
                  cursor  ~/.cursor/mcp.json
                  vscode  ./.vscode/mcp.json if present, else the user profile's mcp.json
                  claude-code  ./.mcp.json if present, else ~/.claude.json
    HOME, XDG_CONFIG_HOME and APPDATA move these; --config-file names another file.
    """
    path = config_file or client_file(client)
    if undo:
        _disconnect(client, path, dry_run)
        return
    target, writes = plan_connect(client, path, servers_file)
    if not writes:
        click.echo(f"{client}: already connected through toolroute ({path})", err=True)
        return
    backups = apply(writes, dry_run=dry_run)
    if dry_run:
        return
    for b in backups:
        click.echo(f"backup {b}", err=True)
    click.echo(f"{client}: {path} now starts toolroute serve --config {target}", err=True)
    click.echo(f"next: toolroute sync --config {target}, then restart the client", err=True)


@click.command()
@client_argument
@config_file_option
@dry_run_option
@_friendly
def disconnect(client: str, config_file: Path | None, dry_run: bool) -> None:
    """Undo `toolroute connect CLIENT`: the servers go back into the client's config in place
    of toolroute's entry (a backup of the config is kept; the servers file stays)."""
    _disconnect(client, config_file or client_file(client), dry_run)


def _disconnect(client: str, path: Path, dry_run: bool) -> None:
    writes = plan_disconnect(client, path)
    if not writes:
        click.echo(f"{client}: not connected through toolroute ({path})", err=True)
        return
    backups = apply(writes, dry_run=dry_run)
    for b in backups:
        click.echo(f"backup {b}", err=True)
    if not dry_run:
        click.echo(f"{client}: {path} starts its own servers again", err=True)

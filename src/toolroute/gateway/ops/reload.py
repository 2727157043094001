"""Live reconfiguration: a running gateway follows edits of its servers JSON and toolroute.toml.

A change of either file (watched with ``watchfiles``: inotify/FSEvents on their folders, so an
editor's write-and-rename counts too) or SIGHUP reloads the config. What changed is applied and
nothing else is touched:

- a server added is started and its tools indexed; a server removed is stopped, its tools leave
  the index, and its calls in flight end with ``unavailable`` ("removed from the
  configuration"); a server whose entry changed is restarted: new calls go to the new process,
  the old one's calls in flight have ``call_timeout_s`` to finish;
- a server whose curation or ``[tools]``/``[servers]`` metadata changed is re-listed;
- tokens and allow-lists (``[auth]``), Host/Origin lists and preconditions are swapped in place, and
  the new ``[toolroute]`` settings object is applied in one step (``Shared.apply``: pins,
  ``k``, ``threshold``, "no tool fits", the call timeout);
- only the servers above are listed again, and only their changed tools re-embedded.

Each change is one log line (``added X``, ``removed Y``, ``restarted Z``, ``tokens
reloaded``, ...). Settings that need a restart (store, expose, ...) say so.

A reload applies a complete, valid new config or none (fail closed): the files are read in a
worker thread with a timeout, only from regular files (a FIFO or device is refused, never
waited on), twice-looked-at so a file still being written is not taken; a file missing,
empty, unreadable or invalid, or a toolroute.toml that existed and is now gone, is refused in
one line ("config not reloaded, still serving the previous one: <why>"), shown in status, and
the running config keeps serving. Tokens a running gateway requires are dropped only by an
explicit ``[auth] enabled = false`` (a warning, and a line in status), never by a file caught
empty. A symlink swapped to a new complete file is read like any other edit.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import anyio
from watchfiles import awatch

from toolroute.config import SEPARATOR, GatewayConfig
from toolroute.errors import ConfigError, ToolrouteError
from toolroute.settings import ToolrouteSettings

if TYPE_CHECKING:
    from collections.abc import Collection, Sequence

    from toolroute.downstream.servers import Downstream, Downstreams
    from toolroute.downstream.sync import Listings
    from toolroute.gateway.shell.server import Gateway
    from toolroute.policy import ClientAccess
    from toolroute.router import IndexReport


class HttpFront(Protocol):
    """The HTTP front door's part a reload swaps in place
    (:class:`toolroute.gateway.http._auth.HttpGuard`)."""

    def reconfigure(
        self,
        clients: Sequence[ClientAccess],
        allowed_hosts: Sequence[str],
        allowed_origins: Sequence[str],
    ) -> None: ...


class Resync(Protocol):
    """Re-lists and re-indexes the named servers (``gateway.ops.syncing.resync``)."""

    async def __call__(
        self,
        config: GatewayConfig,
        downstreams: Downstreams,
        gateway: Gateway,
        listings: Listings | None = None,
        only: Collection[str] | None = None,
        *,
        among: Collection[str] | None = None,
        progress: Callable[[int, int], None] | None = None,
        embed_only: bool = False,
        between: Callable[[], Awaitable[None]] | None = None,
    ) -> IndexReport | None: ...


__all__ = [
    "Live",
    "Reload",
    "apply",
    "applied",
    "check_safe",
    "diff",
    "follow_config",
    "note_auth",
]

log = logging.getLogger(__name__)

LOAD_TIMEOUT_S = 10.0
"""Longest a reload waits for the config files to be read (a hung network file system)."""
SETTLE_S = 0.2
"""A reload reads the files, waits this long and looks again: a file still being written is
not taken half-way."""

RESTART_FIELDS = (
    "store",
    "expose",
    "call_gate",
    "strategy",
    "llm",
    "events_log",
    "otel",
    "query_cache",
    "value_usd",
    "values",
    "http.json_response",
    "http.session_idle_s",
    "http.forwarded_allow_ips",
    "relist_interval_s",
    "scopes",
    "milestones",
    "registry",
    "code_mode",
    "code_mode_limits",
)
"""Settings a running gateway does not take over; a change is logged as needing a restart.
Each name is a ``[toolroute]`` setting (:class:`ToolrouteSettings`), a setting of another
table held by the config (``table.setting``) or else a field of the config, as in the two
lists below."""
SWAPPED_FIELDS = (
    "pinned",
    "k",
    "threshold",
    "abstain",
    "tool_preconditions",
    "server_preconditions",
    "approved",
)
"""Settings a running gateway takes at once (:meth:`Shared.apply`, the preconditions, and the
quarantine of the servers listed again)."""
SPEC_FIELDS = ("connect_timeout_s", "call_timeout_s", "max_result_bytes")
"""Settings every downstream is built with: a change restarts them all."""
TOKEN_FIELDS = ("clients", "http.allowed_hosts", "http.allowed_origins")
"""What the HTTP front door checks each request against: swapped in place, in one step."""
_SETTINGS = frozenset(ToolrouteSettings.model_fields)


def _value(config: GatewayConfig, name: str) -> Any:
    """The setting ``name``: a ``[toolroute]`` one from the settings object, a
    ``table.setting`` from the config's table, else the config's own field."""
    table, dot, setting = name.rpartition(".")
    if dot:
        return getattr(getattr(config, table), setting)
    return getattr(config.settings if name in _SETTINGS else config, name)


def applied(running: ToolrouteSettings, new: ToolrouteSettings) -> ToolrouteSettings:
    """``new`` as a running gateway takes it: the settings that need a restart stay as they
    run (:data:`RESTART_FIELDS`), the others are ``new``'s."""
    return new.model_copy(update={f: getattr(running, f) for f in RESTART_FIELDS if f in _SETTINGS})


@dataclass(slots=True)
class Live:
    """The config a serving gateway runs with now, and what a reload needs."""

    config: GatewayConfig
    load: Callable[[], GatewayConfig] | None = None
    """Reads the files again (the CLI's loader, with its --settings and --store)."""
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    """Held by each resync, so a reload and a list_changed re-list never interleave."""
    listings: Listings | None = None
    """The change watcher's :class:`~toolroute.downstream.sync.Listings`."""
    make_downstream: Callable[[GatewayConfig, str], Downstream] | None = None
    """Builds one server's downstream from a config (``gateway.app.make_downstream``)."""
    resync: Resync | None = None
    """Re-lists and re-indexes named servers (``gateway.app.resync``); both are passed in by
    ``serve`` so this module does not import the app that runs it."""
    http: HttpFront | None = None
    """The HTTP front door, when the gateway serves HTTP: a reload swaps its tokens and its
    Host and Origin lists (``serve_http`` sets it)."""
    reloads: int = 0
    last: Reload | None = None


@dataclass(frozen=True, slots=True)
class Reload:
    """What one reload changed."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    restarted: tuple[str, ...] = ()
    relisted: tuple[str, ...] = ()
    """Same entry, but its curation or tool/server metadata changed."""
    tokens: bool = False
    gateway: tuple[str, ...] = ()
    """Gateway settings swapped in place (pinned, k, preconditions, ...)."""
    needs_restart: tuple[str, ...] = ()
    reindexed: int = 0
    """Tools added to or updated in the index (the others kept their vectors)."""
    embedded: int = 0
    """Texts sent to the embedding model (the others came from its cache)."""
    tools: int = 0
    seconds: float = 0.0

    @property
    def servers(self) -> set[str]:
        """The servers to list again."""
        return {*self.added, *self.restarted, *self.relisted}

    def lines(self) -> list[str]:
        """One log line per change."""
        out = [f"added server {n}" for n in self.added]
        out += [f"removed server {n}" for n in self.removed]
        out += [f"restarted server {n}" for n in self.restarted]
        out += [f"re-listed server {n} (curation or metadata changed)" for n in self.relisted]
        if self.tokens:
            out.append("tokens and allow-lists reloaded")
        out += [f"{name} changed" for name in self.gateway]
        out += [f"{name} changed: takes effect at the next start" for name in self.needs_restart]
        return out


def _server_part(config: GatewayConfig, name: str) -> tuple[Any, ...]:
    """What a server is listed with besides its entry: curation and metadata."""
    meta = {k: v for k, v in config.tool_meta.items() if k.partition(SEPARATOR)[0] == name}
    return (config.curation.server(name), config.server_meta.get(name), meta)


def diff(old: GatewayConfig, new: GatewayConfig) -> Reload:
    """What changed between two configs (nothing is applied)."""
    spec_changed = any(_value(old, f) != _value(new, f) for f in SPEC_FIELDS)
    common = [n for n in new.servers if n in old.servers]
    restarted = tuple(n for n in common if spec_changed or old.servers[n] != new.servers[n])
    relisted = tuple(
        n for n in common if n not in restarted and _server_part(old, n) != _server_part(new, n)
    )
    tokens = any(_value(old, f) != _value(new, f) for f in TOKEN_FIELDS)
    return Reload(
        added=tuple(n for n in new.servers if n not in old.servers),
        removed=tuple(n for n in old.servers if n not in new.servers),
        restarted=restarted,
        relisted=relisted,
        tokens=tokens,
        gateway=tuple(f for f in SWAPPED_FIELDS if _value(old, f) != _value(new, f)),
        needs_restart=tuple(f for f in RESTART_FIELDS if _value(old, f) != _value(new, f)),
    )


async def apply(
    live: Live, new: GatewayConfig, downstreams: Downstreams, gateway: Gateway
) -> Reload:
    """Move a serving gateway from ``live.config`` to ``new``: start, stop and restart only
    the servers that changed, re-index only their tools, swap tokens, allow-lists and the
    other in-place settings. Returns what changed (also logged, one line each)."""
    start = time.perf_counter()
    change = diff(live.config, new)
    async with live.lock:  # the change watcher would list the new servers as they connect
        report = await _apply(live, new, change, downstreams, gateway)
    change = replace(
        change,
        reindexed=report.added + report.updated if report is not None else 0,
        embedded=report.embedded if report is not None else 0,
        tools=gateway.shared.router.catalog.tool_count,
        seconds=time.perf_counter() - start,
    )
    for line in change.lines():
        log.warning("config reloaded: %s", line)
    log.warning(
        "config reloaded in %.2f s: %d of %d tools re-indexed, %d texts embedded",
        change.seconds,
        change.reindexed,
        change.tools,
        change.embedded,
    )
    live.reloads += 1
    live.last = change
    return change


async def _apply(
    live: Live, new: GatewayConfig, change: Reload, downstreams: Downstreams, gateway: Gateway
) -> IndexReport | None:
    assert live.make_downstream is not None and live.resync is not None  # set by serve
    make_downstream, resync = live.make_downstream, live.resync
    for name in (*change.added, *change.restarted):
        d = make_downstream(new, name)
        downstreams.add(d, grace_s=new.settings.call_timeout_s)
    for name in change.relisted:
        downstreams[name].curation = new.curation.server(name)
    for name in change.removed:
        downstreams.remove(name)
        if live.listings is not None:
            live.listings.last.pop(name, None)
    live.config = new
    # in place: what each request reads from the gateway
    gateway.clients = {c.client_id: c for c in new.clients}
    if live.http is not None and change.tokens:
        live.http.reconfigure(new.clients, new.http.allowed_hosts, new.http.allowed_origins)
    gateway.shared.tool_preconditions = dict(new.tool_preconditions)
    gateway.shared.server_preconditions = dict(new.server_preconditions)
    # k, the call timeout, θ, pins and "no tool fits", from the next request on: one step
    gateway.shared.apply(applied(gateway.shared.settings, new.settings))
    for name in (*change.added, *change.restarted):  # bounded: a dead one is listed later
        await downstreams[name].settled(new.settings.connect_timeout_s)
    report = await resync(new, downstreams, gateway, live.listings, change.servers)
    bound = gateway.binding.bound  # bind mode: a removed or hidden tool leaves tools/list
    for name in list(bound):
        if name not in gateway.shared.presenter.tools_by_name:
            del bound[name]
    return report


def _stamps(config: GatewayConfig) -> list[tuple[int, int, int] | None]:
    """Each watched file's (inode, size, mtime), None when absent: unchanged stamps on both
    sides of a read mean no writer was under way meanwhile."""
    out: list[tuple[int, int, int] | None] = []
    for path in sorted(_watched(config)):
        try:
            st = os.stat(path)
        except OSError:
            out.append(None)
        else:
            out.append((st.st_ino, st.st_size, st.st_mtime_ns))
    return out


def _read_settled(live: Live) -> GatewayConfig:
    """``live.load()`` between two looks at the files :data:`SETTLE_S` apart (in a worker
    thread); a file that changed meanwhile is refused: the writer's next change is read."""
    assert live.load is not None
    before = _stamps(live.config)
    try:
        new = live.load()
    except OSError as e:  # a read the loader did not name (it names the ones it expects)
        raise ConfigError(f"cannot read the config files: {e.strerror or e}") from None
    time.sleep(SETTLE_S)
    if _stamps(live.config) != before:
        raise ConfigError("the files changed while being read (still being written?)")
    return new


def check_safe(old: GatewayConfig, new: GatewayConfig) -> None:
    """Refuse a new config that would open the gateway or fall back to defaults because a
    file was caught missing or half-written: raises :class:`ConfigError` naming why."""
    where = new.settings_path or old.settings_path
    if old.settings_read and not new.settings_read:
        raise ConfigError(
            f"{where}: missing or empty, but the running config was read from it (a "
            "delete-then-write or a rewrite caught half-way?); to run on the defaults, "
            "write a [toolroute] table with nothing in it"
        )
    if old.clients and not new.clients and not new.auth_off:
        raise ConfigError(
            f"{where}: no [auth] tokens, but the running gateway requires them; to serve "
            "without tokens, write [auth] enabled = false"
        )


async def reload_once(live: Live, downstreams: Downstreams, gateway: Gateway) -> Reload | None:
    """Read the files again (off the event loop, within :data:`LOAD_TIMEOUT_S`) and apply a
    complete, valid and safe new config; anything else (a file missing, empty, unreadable,
    not a regular file, invalid, still being written, or dropping ``[auth]`` without
    ``enabled = false``) is refused in one line and shown in status, and the running config
    keeps serving (None)."""
    if live.load is None:
        return None
    faults = getattr(getattr(gateway, "shared", None), "faults", None)
    try:
        with anyio.move_on_after(LOAD_TIMEOUT_S) as scope:
            new = await anyio.to_thread.run_sync(_read_settled, live, abandon_on_cancel=True)
        if scope.cancelled_caught:
            raise ConfigError(f"reading the config files took over {LOAD_TIMEOUT_S:g} s")
        check_safe(live.config, new)
    except ToolrouteError as e:
        log.error("config not reloaded, still serving the previous one: %s", e)
        if faults is not None:
            faults.note_config("reload", f"not reloaded, still serving the previous one: {e}")
        return None
    if faults is not None:
        faults.note_config("reload", None)
    if new == live.config:
        log.info("config files changed, but not the config")
        return None
    try:
        change = await apply(live, new, downstreams, gateway)
    except Exception:  # top level of the reload: the gateway keeps serving what it has
        log.exception("config reload failed; serving with what was applied")
        return None
    note_auth(new, gateway)
    return change


def note_auth(config: GatewayConfig, gateway: Gateway) -> None:
    """``[auth] enabled = false``: a warning in the log and a line in status (HTTP)."""
    faults = getattr(getattr(gateway, "shared", None), "faults", None)
    line = None
    if config.auth_off:
        line = f"off ([auth] enabled = false in {config.settings_path}): no token is asked"
        log.warning("authentication %s", line)
    if faults is not None:
        faults.note_config("auth", line)


def _watched(config: GatewayConfig) -> set[Path]:
    return {p for p in (config.path, config.settings_path, *config.links) if p is not None}


async def follow_config(live: Live, downstreams: Downstreams, gateway: Gateway) -> None:
    """Reload on every change of the config files and on SIGHUP, until cancelled."""
    stop = anyio.Event()  # the watch thread checks it: shutdown does not wait for a change

    async def stop_on_cancel() -> None:
        try:
            await anyio.sleep_forever()
        finally:
            stop.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(_on_sighup, live, downstreams, gateway)
        tg.start_soon(stop_on_cancel)
        folders = {p.parent for p in _watched(live.config)}
        if not folders:  # a config built in Python: SIGHUP only
            return

        def wanted(_: object, path: str) -> bool:
            return Path(path) in _watched(live.config)

        async for _ in awatch(
            *folders, watch_filter=wanted, debounce=400, step=30, stop_event=stop
        ):
            await reload_once(live, downstreams, gateway)


async def _on_sighup(live: Live, downstreams: Downstreams, gateway: Gateway) -> None:
    hup = getattr(signal, "SIGHUP", None)
    if hup is None:  # Windows: the file watch only
        return
    try:
        with anyio.open_signal_receiver(hup) as signals:
            async for _ in signals:
                log.warning("SIGHUP: reloading the config")
                await reload_once(live, downstreams, gateway)
    except (NotImplementedError, ValueError, RuntimeError):  # not the main thread
        log.info("SIGHUP reload unavailable here; the file watch still reloads")

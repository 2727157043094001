"""Registry servers for a need no connected tool serves: the suggestions ``find_tools`` adds
to a "no tool fits" (or doubtful) answer.

The registry's listing (:class:`~toolroute.registry.client.RegistryClient`, cached) becomes a
catalog of its own: each server with the tools its registry lists, or else one tool that is
the server's description. That catalog is indexed in the store (``registry/index``, its
vectors cached like any tool's) and routed by the gateway's strategy with the same abstention
check, so a suggestion has passed the judgement a connected tool passes: a need no registry
server serves either gets no suggestion. Entries the allow-list refuses or the checks flag
(:mod:`toolroute.registry.policy`) are left out before routing.
"""

from __future__ import annotations

import fnmatch
import functools
import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from toolroute.catalog.models import Catalog, Server, Tool
from toolroute.embed.base import Embedder
from toolroute.errors import RegistryError, ToolrouteError
from toolroute.gateway.calls.quarantine import hold_server
from toolroute.registry.client import Listing, RegistryClient
from toolroute.registry.entry import ServerEntry
from toolroute.registry.install import plan, write
from toolroute.registry.policy import Pins, allowed, flags, known_packages
from toolroute.route.abstain import AbstainMode
from toolroute.route.strategy import RouteParams
from toolroute.router import Router
from toolroute.settings import RegistrySettings
from toolroute.store import open_store

if TYPE_CHECKING:
    from toolroute.config import GatewayConfig
    from toolroute.store import StoreTarget

__all__ = ["Suggester", "Suggestion", "listing_catalog", "suggester_for"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Suggestion:
    """One registry server that would serve the need, and what adding it would run."""

    name: str
    version: str
    description: str
    kind: str
    package: str
    """``identifier@version`` of its package, or its URL."""
    runs: str
    needs: tuple[str, ...]
    score: float
    tools: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "description": self.description,
            "package": self.package,
            "kind": self.kind,
            "would_run": self.runs,
            "needs": list(self.needs),
            "tools": list(self.tools),
            "score": round(self.score, 4),
            "add": f"toolroute add {self.name}@{self.version}",
        }


def _tool_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "_", text).strip("_")[:64] or "server"


def listing_catalog(entries: list[ServerEntry]) -> tuple[Catalog, dict[str, ServerEntry]]:
    """A catalog of registry servers (ids ``r0``, ``r1``, … in listing order) and the entry
    of each id: their listed tools, or one tool described as the server is."""
    servers = []
    by_id: dict[str, ServerEntry] = {}
    for i, e in enumerate(entries):
        sid = f"r{i}"
        by_id[sid] = e
        short = e.name.partition("/")[2]
        label = e.title or short
        if e.tools:
            tools = tuple(
                Tool(sid, _tool_name(t.name), t.description or e.description) for t in e.tools
            )
        else:
            tools = (Tool(sid, _tool_name(short), e.description),)
        servers.append(Server(sid, label, e.description, tools))
    return Catalog(servers=tuple(servers)), by_id


class Suggester:
    """Suggests up to ``settings.suggestions`` registry servers for a need (thread-safe)."""

    def __init__(
        self,
        settings: RegistrySettings,
        directory: Path,
        embedder: Embedder,
        *,
        strategy: str = "default",
        abstain: AbstainMode = "default",
        known: tuple[str, ...] = (),
        client: RegistryClient | None = None,
    ) -> None:
        self.settings = settings
        self.directory = directory
        self.embedder = embedder
        self.strategy = strategy
        self.abstain = abstain
        self.known = known
        """Package names of the configured servers (an entry one slip away is a look-alike)."""
        self.client = client or RegistryClient(settings, directory)
        self.pins = Pins(directory / "pins.json")
        self.held: dict[str, str] = {}
        """Entries of the last listing left out, by name, and why."""
        self._lock = threading.Lock()
        self.on_auto_add: Callable[[Suggestion], str | None] | None = None
        """``auto_add``: adds a suggestion, returns its server name (None: not added)."""
        self._built: tuple[int, Any, dict[str, ServerEntry]] | None = None
        self._retry_at = 0.0
        self._failure = ""
        self._limiter: Any = None  # one suggestion thread at a time (answer)

    def _router(self) -> tuple[Any, dict[str, ServerEntry]]:
        now = time.monotonic()
        if now < self._retry_at:  # the registry failed a moment ago: not asked again yet
            if self._built is not None:
                return self._built[1], self._built[2]
            raise RegistryError(self._failure)
        try:
            listing: Listing = self.client.listing()
        except RegistryError as failed:
            self._retry_at = now + max(30.0, 6 * self.settings.timeout_s)
            self._failure = str(failed)
            raise
        key = hash(tuple(e.digest for e in listing.entries))
        if self._built is not None and self._built[0] == key:
            return self._built[1], self._built[2]
        held = flags(listing.entries, self.pins, self.known)
        self.pins.note(listing.entries)
        for name, why in list(held.items())[:5]:  # what the registry may be lying about
            log.warning("registry server %s not suggested: %s", name, why)
        outside = 0
        for e in listing.entries:
            refused = allowed(e, self.settings) if e.name not in held else None
            if refused is not None:
                held[e.name] = refused
                outside += 1
        if outside:  # the operator chose these, not news
            log.info("%d registry servers outside the [registry] allow-list", outside)
        self.held = held
        kept = [e for e in listing.entries if e.name not in held]
        catalog, by_id = listing_catalog(kept)

        if self._built is not None:
            self._built[1].close()
        router = Router(
            catalog,
            store=self.directory / "index",
            embedder=self.embedder,
            params=RouteParams(abstain=self.abstain),
        )
        if catalog.tool_count:
            router.index()
        self._built = (key, router, by_id)
        return router, by_id

    def suggest(self, query: str, k: int | None = None) -> list[Suggestion]:
        """The registry servers that would serve ``query``, best first; none when the
        abstention check says none does. Raises :class:`RegistryError` when the registry
        cannot be read."""
        k = self.settings.suggestions if k is None else k
        if k <= 0:
            return []
        with self._lock:
            router, by_id = self._router()
            if not router.catalog.tool_count:
                return []
            ranked = router.route(query, k=max(10, 3 * k), strategy=self.strategy)
        out: list[Suggestion] = []
        seen: set[str] = set()
        for c in ranked:
            e = by_id[c.server]
            if e.name in seen:
                continue
            seen.add(e.name)
            try:
                p = plan(e, self.settings, self.directory / "venvs")
            except RegistryError as err:
                log.info("registry server %s not suggested: %s", e.name, err)
                continue
            pkg = next((x for x in e.packages if x.identifier in p.runs), None)
            package = f"{pkg.identifier}@{pkg.version}" if pkg is not None else p.runs
            out.append(
                Suggestion(
                    e.name,
                    e.version,
                    e.description,
                    p.kind,
                    package,
                    p.runs,
                    p.needs,
                    c.score,
                    tuple(t.name for t in e.tools),
                )
            )
            if len(out) >= k:
                break
        return out

    async def answer(self, query: str) -> dict[str, Any]:
        """What ``find_tools`` adds to a "no tool fits" or doubtful answer: the suggested
        servers and a ``request_server`` for the agent to pass on to its user (nothing is
        added: that is the operator's ``toolroute add``), or why the registry could not be
        asked. With ``auto_add``, the best suggestion of an allowed namespace is added, its
        tools held in quarantine until the operator approves them."""
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(1)
        # bounded: the first answer reads and indexes the listing; until that is done
        # find_tools answers without suggestions (the work goes on in its thread)
        found = None
        with anyio.move_on_after(4 * self.settings.timeout_s + 2):
            try:
                found = await anyio.to_thread.run_sync(
                    self.suggest, query, abandon_on_cancel=True, limiter=self._limiter
                )
            except RegistryError as e:
                log.warning("registry suggestions unavailable: %s", e)
                return {"registry": f"unavailable: {e}"}
        if found is None:
            return {"registry": "reading the registry's servers; ask again in a moment"}
        if not found:
            return {}
        out: dict[str, Any] = {"suggested_servers": [x.to_dict() for x in found]}
        if self.settings.auto_add and self.on_auto_add is not None:
            added = await anyio.to_thread.run_sync(self.on_auto_add, found[0])
            if added is not None:
                out["added_server"] = {
                    "name": found[0].name,
                    "server": added,
                    "message": f"{found[0].name} was added as {added}; its tools are held in "
                    "quarantine until the operator approves them (toolroute approve)",
                }
                return out
        names = " or ".join(x.name for x in found)
        out["request_server"] = {
            "message": f"None of the connected servers can do this. {names} could: ask the "
            "operator of this gateway to add it.",
            "commands": [f"toolroute add {x.name}@{x.version}" for x in found],
        }
        out["hint"] = (
            "tell the user which server would serve the need (request_server.message); "
            "you cannot add a server yourself"
        )
        return out

    def close(self) -> None:
        if self._built is not None:
            self._built[1].close()
            self._built = None


def suggester_for(
    config: GatewayConfig, embedder: Embedder, directory: Path, store: StoreTarget
) -> Suggester:
    """The registry suggestions of a gateway of ``config`` (``[registry] url``), given to it
    when it is made: its ``embedder``, strategy and abstention mode; ``auto_add`` adds through
    :func:`~toolroute.registry.install.write`, holding the new server's tools
    (:func:`~toolroute.gateway.calls.quarantine.hold_server`)."""
    settings = config.registry
    suggester = Suggester(
        settings,
        directory,
        embedder,
        strategy=config.settings.strategy,
        abstain=config.settings.abstain,
        known=known_packages(config),
    )
    if settings.auto_add and config.path is not None:
        suggester.on_auto_add = functools.partial(_auto_add, suggester, config, store)
    return suggester


def _auto_add(
    suggester: Suggester, config: GatewayConfig, store_target: StoreTarget, s: Suggestion
) -> str | None:
    """Add ``s`` from an allowed namespace, its tools held until approved (worker thread)."""

    settings = suggester.settings
    if not any(fnmatch.fnmatchcase(s.name, pat) for pat in settings.namespaces):
        return None
    assert config.path is not None
    try:
        entry = suggester.client.listing().find(s.name)
        if entry is None:
            return None
        p = plan(entry, settings, suggester.directory / "venvs")
        if p.install:  # auto_add never installs: a venv is the operator's `toolroute add`
            return None
        with open_store(store_target) as store:
            hold_server(store, p.server, entry.key)
        added = write(config.path, p, config.settings_path)
    except (RegistryError, ToolrouteError) as e:
        log.warning("auto_add of %s refused: %s", s.name, e)
        return None
    log.warning("auto_add: added %s as %s, its tools held until approved", entry.key, p.server)
    return p.server if added else None

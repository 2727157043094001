"""The client of an MCP registry's API: ``GET {url}/v0.1/servers?version=latest&limit=…&cursor=…``.

Every answer is bounded before it is believed: each request has ``timeout_s`` to connect and
between bytes, and a listing (every page) has ``4 × timeout_s`` in all, so a registry that
drips one byte a second cannot hold a caller; a listing reads at most ``max_pages`` pages of
``page_size`` servers, ``max_entries`` servers and ``max_bytes`` bytes, and a cursor seen
twice ends it (an endless listing). A redirect is refused (the operator names the registry,
not the registry where to go next). Each way a registry can answer badly is one line of
:class:`~toolroute.errors.RegistryError`: unreachable, too slow, an HTTP status, a body too
large, not JSON, not a server list, a cursor that loops. An entry that breaks the
``server.json`` schema (:mod:`toolroute.registry.entry`) is left out and counted, the others
are kept.

A listing is cached in ``cache_dir`` (one JSON file per registry URL) and used for
``cache_ttl_s``; after that the first page is asked again with the ETag it came with, and a
``304 Not Modified`` keeps the cached listing for another ``cache_ttl_s``. A registry that
cannot be read then leaves the cached listing in use (its entries were checked when read),
with a warning.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx2

from toolroute.errors import RegistryError
from toolroute.registry.entry import ServerEntry, ServerListPage, parse_entry
from toolroute.settings import RegistrySettings

__all__ = ["Listing", "RegistryClient"]

log = logging.getLogger(__name__)

CACHE_FORMAT = 1
"""Version of a cached listing's file; another version is read as no cache."""


@dataclass(frozen=True, slots=True)
class Listing:
    """The latest version of each server a registry lists (within the bounds)."""

    url: str
    entries: tuple[ServerEntry, ...]
    rejected: tuple[tuple[str, str], ...] = ()
    """(name or position, why) of the entries that broke the schema."""
    truncated: bool = False
    """The listing went on past ``max_pages`` or ``max_entries``: only the first part is here."""
    fetched_at: float = field(default_factory=time.time)
    from_cache: bool = False
    stale: str | None = None
    """Why the registry was not read this time (the cached listing is used instead)."""

    def find(self, name: str) -> ServerEntry | None:
        return next((e for e in self.entries if e.name == name), None)


class RegistryClient:
    """Reads one registry's listing within the bounds of ``settings`` (``transport``: an
    httpx transport for tests; None: the network)."""

    def __init__(
        self,
        settings: RegistrySettings,
        cache_dir: Path | None = None,
        transport: httpx2.BaseTransport | None = None,
    ) -> None:
        if not settings.url:
            raise RegistryError("no registry is configured: set [registry] url in toolroute.toml")
        self.settings = settings
        self.url = settings.url.rstrip("/")
        self.cache_dir = cache_dir
        self._transport = transport

    # -- the listing ---------------------------------------------------------------------------

    def listing(self, *, refresh: bool = False) -> Listing:
        """Every server's latest version: from the cache while it is fresh (``refresh``:
        never), else the registry, asked with the cached ETag (a 304 renews the cache)."""
        cached = self._read_cache()
        if cached is not None and not refresh:
            age = time.time() - cached[0].fetched_at
            if 0 <= age < self.settings.cache_ttl_s:
                return cached[0]
        try:
            fresh = self._fetch(cached[1] if cached is not None else None)
        except RegistryError as e:
            if cached is None:
                raise
            log.warning("%s; using the listing read before", e)  # checked then, kept now
            return replace(cached[0], stale=str(e))
        if fresh is None:  # 304: the cached listing is still the registry's
            assert cached is not None
            renewed = replace(cached[0], fetched_at=time.time())
            self._write_cache(renewed, cached[2], cached[1])
            return renewed
        listing, raws, etag = fresh
        self._write_cache(listing, raws, etag)
        return listing

    def lookup(self, name: str) -> ServerEntry:
        """The latest version of the server named ``name`` (asked with ``search``)."""
        page, _, _ = self._page({"search": name, "version": "latest", "limit": "100"}, None)
        found = None
        for raw in page.servers:
            try:
                entry = parse_entry(raw)
            except ValueError as e:
                if isinstance(raw, dict) and _raw_name(raw) == name:
                    raise RegistryError(f"{self.url}: {name}: {e}") from None
                continue
            if entry.name == name and entry.is_latest and entry.status != "deleted":
                found = entry
        if found is None:
            raise RegistryError(f"{self.url} lists no server named {name!r}")
        return found

    def _fetch(self, etag: str | None) -> tuple[Listing, list[Any], str | None] | None:
        s = self.settings
        deadline = time.monotonic() + 4 * s.timeout_s
        budget = s.max_bytes
        raws: list[Any] = []
        seen: set[str] = set()
        cursor: str | None = None
        first_etag: str | None = None
        truncated = False
        for number in range(s.max_pages):
            params = {"version": "latest", "limit": str(s.page_size)}
            if cursor is not None:
                params["cursor"] = cursor
            got = self._page(params, etag if number == 0 else None, deadline, budget)
            if got is None:
                return None
            page, used, page_etag = got
            budget -= used
            if number == 0:
                first_etag = page_etag
            raws.extend(page.servers)
            cursor = page.next_cursor
            if len(raws) >= s.max_entries:
                truncated = len(raws) > s.max_entries or cursor is not None
                raws = raws[: s.max_entries]
                break
            if cursor is None:
                break
            if cursor in seen:
                raise RegistryError(
                    f"{self.url}: the listing repeats a cursor (an endless listing)"
                )
            seen.add(cursor)
        else:
            truncated = cursor is not None
        if truncated:
            log.warning(
                "%s: the listing goes on past %d pages or %d servers; only those are used",
                self.url,
                s.max_pages,
                s.max_entries,
            )
        entries, rejected = _entries(raws)
        for where, why in rejected[:5]:
            log.warning("%s: entry %s left out: %s", self.url, where, why)
        return Listing(self.url, entries, rejected, truncated), raws, first_etag

    def _page(
        self,
        params: dict[str, str],
        etag: str | None,
        deadline: float | None = None,
        budget: int | None = None,
    ) -> Any:
        """One page: (page, bytes read, ETag), or None on a 304."""
        s = self.settings
        deadline = deadline if deadline is not None else time.monotonic() + 4 * s.timeout_s
        budget = budget if budget is not None else s.max_bytes
        headers = {"Accept": "application/json", "User-Agent": "toolroute"}
        token = os.environ.get(s.token_env, "") if s.token_env else ""
        if token.strip():
            headers["Authorization"] = f"Bearer {token.strip()}"
        if etag:
            headers["If-None-Match"] = etag
        endpoint = f"{self.url}/v0.1/servers"
        try:
            with (
                httpx2.Client(
                    transport=self._transport,
                    timeout=httpx2.Timeout(s.timeout_s),
                    follow_redirects=False,
                    trust_env=False,
                ) as http,
                http.stream("GET", endpoint, params=params, headers=headers) as r,
            ):
                if r.status_code == 304 and etag:
                    return None
                if 300 <= r.status_code < 400:
                    where = r.headers.get("location", "?")[:200]
                    raise RegistryError(
                        f"{self.url}: answered with a redirect to {where}; set [registry] url "
                        "to the registry itself"
                    )
                if r.status_code in (401, 403):
                    why = "set" if token.strip() else "unset: set [registry] token_env"
                    raise RegistryError(
                        f"{self.url}: answered HTTP {r.status_code} (the token is {why})"
                    )
                if r.status_code != 200:
                    raise RegistryError(f"{self.url}: answered HTTP {r.status_code}")
                body = bytearray()
                for chunk in r.iter_bytes():  # decoded: a gzip bomb counts in full
                    body += chunk
                    if len(body) > budget:
                        raise RegistryError(
                            f"{self.url}: the listing is over {s.max_bytes} bytes "
                            "([registry] max_bytes)"
                        )
                    if time.monotonic() > deadline:
                        raise RegistryError(
                            f"{self.url}: the listing took over {4 * s.timeout_s:g} s"
                        )
                page_etag = r.headers.get("etag")
        except httpx2.TimeoutException:
            raise RegistryError(f"{self.url}: no answer within {s.timeout_s:g} s") from None
        except httpx2.HTTPError as e:
            raise RegistryError(f"{self.url}: cannot be reached ({type(e).__name__})") from None
        if time.monotonic() > deadline:
            raise RegistryError(f"{self.url}: the listing took over {4 * s.timeout_s:g} s")
        try:
            data = json.loads(bytes(body))
        except (ValueError, RecursionError):
            raise RegistryError(f"{self.url}: the answer is not JSON") from None
        try:
            page = ServerListPage.model_validate(data)
        except ValueError:
            raise RegistryError(
                f"{self.url}: the answer is not a server list (no `servers` array)"
            ) from None
        return page, len(body), page_etag

    # -- the cache -----------------------------------------------------------------------------

    def _cache_path(self) -> Path | None:
        if self.cache_dir is None:
            return None
        key = hashlib.sha256(self.url.encode()).hexdigest()[:16]
        return self.cache_dir / f"listing-{key}.json"

    def _read_cache(self) -> tuple[Listing, str | None, list[Any]] | None:
        path = self._cache_path()
        if path is None or not path.is_file():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("format") != CACHE_FORMAT or data.get("url") != self.url:
                return None
            raws = list(data["servers"])
            entries, rejected = _entries(raws)
            listing = Listing(
                self.url,
                entries,
                rejected,
                bool(data.get("truncated")),
                float(data["fetched_at"]),
                from_cache=True,
            )
            return listing, data.get("etag"), raws
        except (OSError, ValueError, KeyError, TypeError):
            log.warning("%s: unreadable, asking the registry again", path)
            return None

    def _write_cache(self, listing: Listing, raws: list[Any], etag: str | None) -> None:
        path = self._cache_path()
        if path is None:
            return
        data = {
            "format": CACHE_FORMAT,
            "url": self.url,
            "fetched_at": listing.fetched_at,
            "etag": etag,
            "truncated": listing.truncated,
            "servers": raws,
        }
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(data), encoding="utf-8")
            os.replace(tmp, path)
        except OSError as e:
            log.warning("%s: cannot write the listing cache: %s", path, e)


def _raw_name(raw: dict[str, Any]) -> Any:
    server = raw.get("server", raw)
    return server.get("name") if isinstance(server, dict) else None


def _entries(raws: list[Any]) -> tuple[tuple[ServerEntry, ...], tuple[tuple[str, str], ...]]:
    """The valid, active, latest entries (one per name) and why the others were left out."""
    kept: dict[str, ServerEntry] = {}
    rejected: list[tuple[str, str]] = []
    for i, raw in enumerate(raws):
        try:
            entry = parse_entry(raw)
        except ValueError as e:
            name = _raw_name(raw) if isinstance(raw, dict) else None
            rejected.append((str(name)[:200] if name else f"#{i}", str(e)))
            continue
        if entry.status != "active" or not entry.is_latest:
            continue
        kept.setdefault(entry.name, entry)
    return tuple(kept.values()), tuple(rejected)

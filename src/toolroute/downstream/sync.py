"""Sync the index with live MCP servers (ScaleMCP's Alg. 1): list every server's tools
concurrently, hash them, and let the store create/update/delete only what changed.

A server that fails to answer is reported and keeps its previously indexed tools, so one
broken server never empties the index; the next sync retries it. :class:`Listings` keeps each
server's last listing, so a server that says its tools changed is re-listed alone.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace
from typing import Any

import anyio

from toolroute.catalog.models import Catalog, Server, Tool
from toolroute.catalog.name import qualified_name
from toolroute.config import GatewayConfig
from toolroute.downstream.servers import DownstreamError, Downstreams, ListedServer

__all__ = ["Listings", "ServerStatus", "catalog_from_listing", "list_all"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ServerStatus:
    name: str
    status: str
    """``ok``, or ``error`` (then ``error`` says why and its previous tools were kept)."""
    tools: int
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.status, "tools": self.tools}
        if self.error:
            out["error"] = self.error
        return out


async def list_all(
    downstreams: Downstreams,
    timeout_s: float,
    names: Collection[str] | None = None,
    on_page: Callable[[str, int], None] | None = None,
) -> dict[str, ListedServer | DownstreamError]:
    """Every server's tools (or only those in ``names``), listed concurrently: each server's
    connection, and then each page of its listing, bounded by ``timeout_s`` (a big listing
    takes as many pages as it needs, up to the pager's bound, ``MAX_PAGES``). ``on_page(server,
    tools so far)`` after each page."""
    out: dict[str, ListedServer | DownstreamError] = {}

    async def one(name: str) -> None:
        try:
            with anyio.fail_after(timeout_s):
                await downstreams[name].client()  # connected, or its error at once
            paged = (lambda n: on_page(name, n)) if on_page is not None else None
            out[name] = await downstreams[name].list_tools(page_timeout_s=timeout_s, on_page=paged)
        except DownstreamError as e:
            out[name] = e
        except TimeoutError:
            out[name] = DownstreamError(
                name, None, "timeout", f"timed out: no tools/list page in {timeout_s:g} s"
            )
        except Exception as e:  # one server's surprise must not fail the others
            log.exception("listing %s failed", name)
            out[name] = DownstreamError(name, None, "protocol", f"{type(e).__name__}: {e}")

    async with anyio.create_task_group() as tg:
        for name in downstreams.servers:
            if names is None or name in names:
                tg.start_soon(one, name)
    return out


class Listings:
    """The last listing of each server. :meth:`refresh` lists only the servers asked for (and
    any never listed or whose last listing failed) and reuses the others' last listing: one
    server's tools/list_changed re-lists that server, not all of them."""

    def __init__(self) -> None:
        self.last: dict[str, ListedServer | DownstreamError] = {}

    async def refresh(
        self,
        downstreams: Downstreams,
        timeout_s: float,
        only: Collection[str] | None = None,
        among: Collection[str] | None = None,
    ) -> dict[str, ListedServer | DownstreamError]:
        """Every server's listing, listing again ``only`` those (None: all of them). With
        ``among``, only those servers' last listings, and only ``only`` listed again (a
        gateway still listing its other servers at start does not wait for them)."""
        names = [
            n
            for n in downstreams.servers
            if only is None
            or n in only
            or (among is None and not isinstance(self.last.get(n), ListedServer))
        ]
        if among is not None:
            names = [n for n in names if n in among]
        if names:
            self.last.update(await list_all(downstreams, timeout_s, names))
        return {
            n: self.last[n]
            for n in downstreams.servers
            if n in self.last and (among is None or n in among)
        }


def catalog_from_listing(
    config: GatewayConfig,
    listing: Mapping[str, ListedServer | DownstreamError],
    previous: Catalog | None,
) -> tuple[Catalog, list[ServerStatus]]:
    """The catalog to index: listed servers as they are now, failed ones as they were."""
    kept = {s.id: s for s in previous.servers} if previous is not None else {}
    servers: list[Server] = []
    report: list[ServerStatus] = []
    for name in config.servers:
        got = listing.get(name)
        if isinstance(got, ListedServer):
            meta = config.server_meta.get(name, {})
            tools = tuple(
                Tool(
                    server=name,
                    name=t.name,
                    description=t.description or t.title or "",
                    input_schema=dict(t.input_schema or {}),
                    price=(m := config.tool_meta.get(qualified_name(name, t.name), {})).get(
                        "price"
                    ),
                    latency_s=m.get("latency_s"),
                    success_rate=m.get("success_rate"),
                    title=t.title or "",
                )
                for t in got.tools
            )
            servers.append(
                Server(
                    id=name,
                    name=got.title or name,
                    description=got.instructions[:500],
                    tools=tools,
                    **meta,
                )
            )
            report.append(ServerStatus(name, "ok", len(tools)))
        else:
            error = str(got.detail) if isinstance(got, DownstreamError) else "not listed"
            if name in kept:
                servers.append(replace(kept[name]))
            report.append(
                ServerStatus(name, "error", len(kept[name].tools) if name in kept else 0, error)
            )
    return Catalog(servers=tuple(servers)), report

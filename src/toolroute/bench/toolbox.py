"""Requests that come with their own small toolbox: each is routed over a catalog of just the
tools offered with it, as a gateway holding only those tools would route it.

The most common real setup is a handful of tools, not thousands; there "no tool fits" is the
hard part (a box of a service's siblings, none doing the operation asked). A queries file marks
such a request with ``toolbox``; ``toolroute bench`` then routes it here. The boxes share one
scratch store for the run (their vectors embedded once each), never the bench's own store,
whose catalog a box's index would replace.
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from toolroute.catalog.models import Catalog, ToolKey
from toolroute.router import Router

__all__ = ["Boxes", "box_catalog"]


def box_catalog(catalog: Catalog, box: frozenset[ToolKey]) -> Catalog:
    """The servers of ``catalog`` holding tools of ``box``, with only those tools."""
    servers = []
    for s in catalog.servers:
        tools = tuple(t for t in s.tools if t.key in box)
        if tools:
            servers.append(replace(s, tools=tools))
    return Catalog(servers=tuple(servers))


class Boxes:
    """Routers over small toolboxes, built on the bench router's model, documents and
    parameters, in a scratch store removed on :meth:`close`."""

    def __init__(self, router: Router) -> None:
        self.parent = router
        self._scratch = tempfile.TemporaryDirectory(prefix="toolroute-boxes-")

    def router(self, box: frozenset[ToolKey]) -> Router:
        """An indexed router over ``box`` (close it after use)."""
        p = self.parent
        r = Router(
            box_catalog(p.catalog, box),
            store=Path(self._scratch.name),
            embedder=p.embedder,
            documents=p.documents,
            questions=p.questions,
            params=p.params,
        )
        r.index()
        return r

    def close(self) -> None:
        self._scratch.cleanup()

    def __enter__(self) -> Boxes:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

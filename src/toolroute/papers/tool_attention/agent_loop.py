"""Alg. 1 of *Tool Attention* for a Python agent loop, over the same finder as the MCP gateway.

:class:`ToolAttention` routes, gates and presents one turn's tools and refuses calls of tools
it did not promote that turn, through :class:`toolroute.gateway.find.Finder` and the call gate
of :class:`toolroute.gateway.shared.Shared` — the code the MCP server's ``find_tools`` and call
gate run — with the promotion lasting one turn.
"""

from __future__ import annotations

import time

from toolroute.catalog.name import qualified_name
from toolroute.gateway.find import Finder
from toolroute.gateway.shared import Shared
from toolroute.present.presenter import Presentation, PresentConfig, Presenter, binding_name
from toolroute.route.preconditions import SessionState
from toolroute.router import Router
from toolroute.settings import DEFAULTS

__all__ = ["ToolAttention"]


class ToolAttention:
    """Tool Attention's Alg. 1 for a Python agent loop: route, gate, present, and refuse unpromoted
    calls (``check_call``), e.g. inside a framework's before-model / after-model hooks.

        ta = ToolAttention(router)
        turn = ta.turn("file a GitHub issue about the failing build")
        client.messages.create(..., system=turn.pool, tools=turn.to_anthropic())
    """

    def __init__(
        self, router: Router, config: PresentConfig | None = None, strategy: str = DEFAULTS.strategy
    ) -> None:
        presenter = Presenter(router.catalog, config)
        settings = DEFAULTS.model_copy(update={"k": presenter.config.top_k, "strategy": strategy})
        self.shared = Shared(router, settings=settings, presenter=presenter)
        # a library call: the agent loop keeps its own record, no routing is audited
        self.finder = Finder(self.shared, audit=False)
        self.active: tuple[str, ...] = ()
        """The bound names (:func:`binding_name`) promoted this turn."""
        self._state = SessionState()
        self._names: dict[str, str] = {}  # bound name → server__tool, this turn

    @property
    def router(self) -> Router:
        return self.shared.router

    @property
    def strategy(self) -> str:
        return self.shared.settings.strategy

    @property
    def presenter(self) -> Presenter:
        return self.shared.presenter

    def turn(self, query: str) -> Presentation:
        """This turn's pool and promoted schemas; only they may be called until the next."""
        self._state = SessionState()  # a promotion lasts one turn
        k = self.presenter.config.top_k
        start = time.perf_counter()
        ranked = self.finder.rank(self.router, query, k)
        shown = self.finder.shortlist(query, k, self._state, ranked, start)
        self._names = {
            binding_name(c.server, c.tool): qualified_name(c.server, c.tool) for c in shown.promoted
        }
        self.active = tuple(self._names)
        return shown.presentation

    def check_call(self, name: str) -> str | None:
        """None when ``name`` (a bound name) was promoted this turn, else the rejection text."""
        qualified = self._names.get(name)
        if qualified is not None and self.shared.admits(self._state, qualified):
            return None
        return f"tool_not_available: {name!r}. Available this turn: {list(self.active)}"

"""The gateway's Prometheus metrics, served at ``/metrics`` (HTTP, behind the same guard as
``/status``) in the Prometheus text format by ``prometheus_client``.

Every gateway has its own :class:`~prometheus_client.CollectorRegistry` (never the process-wide
default one), so several gateways in one process, and the tests, never share a counter.

What is counted, and where it is observed:

- :meth:`GatewayMetrics.observed` wraps each ``tools/call`` the gateway answers (one call at
  the top of the gateway's call path): ``find_tools`` counts and latency, downstream tool calls
  (``call_tool``, a bound tool, a pass-through tool) by server and tool with their latency as
  the client waits for it, and every ``isError`` the gateway itself made, by kind (the
  ``error`` field of its JSON: ``unknown_tool``, ``timeout``, ``limit_exceeded``, …); the call
  gate's refusals and the limits' refusals also get counters of their own.
- :meth:`GatewayMetrics.store` times a store operation on the call path (outcomes, routing
  events, budget charges).
- Read at scrape time from the gateway: each downstream server up or not, its tools, the tools
  indexed, the tools held in quarantine.

Tool and server labels are only ever the names of catalogued tools (anything else a client
sends is counted under ``-``), so a client cannot grow the label set.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Awaitable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

from mcp import types
from mcp.shared.exceptions import MCPError
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import Collector
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from toolroute.config import SEPARATOR
from toolroute.errors import StoreError
from toolroute.gateway.calls.access import CLIENT_SCOPE_KEY
from toolroute.gateway.shared import NoMetrics

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from toolroute.gateway.shell.server import Gateway

__all__ = [
    "CONTENT_TYPE_LATEST",
    "GATEWAY_ERRORS",
    "LATENCY_BUCKETS",
    "META_TOOLS",
    "GatewayMetrics",
    "NoMetrics",
]

T = TypeVar("T")

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
"""Seconds: from a cached find_tools (~1 ms) to a call that runs into a 30 s timeout."""
STORE_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1)
"""Seconds: a SQLite write is ~0.1–1 ms, a PostgreSQL round trip a few ms."""

META_TOOLS = frozenset(
    {"find_tools", "call_tool", "request_capability", "set_milestone", "execute"}
)
GATEWAY_ERRORS = frozenset(
    {
        "unknown_tool",
        "invalid_arguments",
        "tool_not_available",
        "precondition_failed",
        "quarantined",
        "capability_limit",
        "limit_exceeded",
        "store_failed",
        "timeout",
        "crashed",
        "unavailable",
        "protocol",
        "too_large",
    }
)
"""The ``error`` kinds of the ``isError`` results the gateway makes itself (any other
``isError`` is the downstream tool's own answer: kind ``tool_error``)."""
CALL_GATE_ERRORS = frozenset({"tool_not_available", "precondition_failed"})
_STORE_FAILED = types.CallToolResult(
    content=[], structured_content={"error": "store_failed"}, is_error=True
)
UNKNOWN = "-"
"""Server and tool label of a call naming no catalogued tool."""


class GatewayMetrics(NoMetrics):
    """The metrics of one gateway, in their own registry (:meth:`exposition` renders them)."""

    enabled = True

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.registry = CollectorRegistry(auto_describe=False)
        r = self.registry
        self.finds = Counter(
            "toolroute_find_tools", "find_tools requests answered, by outcome.", ["outcome"],
            registry=r,
        )  # fmt: skip
        self.find_seconds = Histogram(
            "toolroute_find_tools_seconds", "Time to answer find_tools (s).",
            buckets=LATENCY_BUCKETS, registry=r,
        )  # fmt: skip
        self.found = Counter(
            "toolroute_tools_found", "Tools returned by find_tools, by server.", ["server"],
            registry=r,
        )  # fmt: skip
        self.calls = Counter(
            "toolroute_tool_calls",
            "Tool calls answered (call_tool, bound and pass-through tools), by server, tool "
            "and outcome (ok, or error: an isError result, the tool's own or the gateway's).",
            ["server", "tool", "outcome"],
            registry=r,
        )
        self.call_seconds = Histogram(
            "toolroute_tool_call_seconds",
            "Time to answer a tool call, as the client waits for it (s).",
            ["server", "tool"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.errors = Counter(
            "toolroute_errors",
            "isError results, by kind (the gateway's error field, or tool_error: the tool's "
            "own isError; mcp_error: a JSON-RPC error to a 2026-07-28 client).",
            ["kind"],
            registry=r,
        )
        self.refusals = Counter(
            "toolroute_call_gate_refusals",
            "Calls the call gate refused: tool_not_available (find_tools did not return it), "
            "precondition_failed.",
            ["reason"],
            registry=r,
        )
        self.limited = Counter(
            "toolroute_limit_refusals",
            "Calls refused by [limits], by limit (rate, concurrency, budget).",
            ["limit"],
            registry=r,
        )
        self.store_seconds = Histogram(
            "toolroute_store_seconds", "Time of a store operation on the call path (s).",
            ["operation"], buckets=STORE_BUCKETS, registry=r,
        )  # fmt: skip
        r.register(_GatewayState(gateway))

    # -- observation ---------------------------------------------------------------------
    async def observed(self, params: types.CallToolRequestParams, call: Awaitable[T]) -> T:
        """Await ``call`` (the gateway answering ``params``) and count its answer."""
        start = time.perf_counter()
        if self.gateway.shared.settings.expose == "all" and params.name not in META_TOOLS:
            # pass-through: the exposed name ("get_current_time") as its catalog name
            resolved = await self.gateway.passthrough.resolve(params.name)
            params = params.model_copy(update={"name": resolved or params.name})
        try:
            result = await call
        except MCPError:  # a JSON-RPC error to a 2026-07-28 client: counted, re-raised
            self._count(params, None, time.perf_counter() - start)
            raise
        except (sqlite3.Error, StoreError, OSError):  # the gateway answers store_failed
            self._count(params, _STORE_FAILED, time.perf_counter() - start)
            raise
        self._count(params, result, time.perf_counter() - start)
        return result

    def _count(self, params: types.CallToolRequestParams, result: object, seconds: float) -> None:
        name = params.name
        answer = result if isinstance(result, types.CallToolResult) else None
        is_result = answer is not None
        failed = result is None or (answer is not None and answer.is_error)
        if name == "find_tools":
            self.finds.labels("error" if failed else "ok").inc()
            self.find_seconds.observe(seconds)
            if answer is not None and not failed:
                for c in (answer.structured_content or {}).get("candidates", ()):
                    self.found.labels(self._server(c.get("server"))).inc()
        elif name == "call_tool" or name not in META_TOOLS:
            target = (params.arguments or {}).get("name") if name == "call_tool" else name
            server, tool = self._labels(target)
            if is_result or result is None:  # not an input-required answer (it comes back)
                self.calls.labels(server, tool, "error" if failed else "ok").inc()
                self.call_seconds.labels(server, tool).observe(seconds)
        if not failed:
            return
        kind = "mcp_error" if result is None else _error_kind(result)
        self.errors.labels(kind).inc()
        if kind in CALL_GATE_ERRORS:
            self.refusals.labels(kind).inc()
        elif kind == "limit_exceeded" and answer is not None:
            limit = (answer.structured_content or {}).get("limit")
            self.limited.labels(limit if limit in ("rate", "concurrency", "budget") else "-").inc()

    def _labels(self, name: object) -> tuple[str, str]:
        """``(server, tool)`` of a catalogued tool's name, else ``("-", "-")``."""
        if isinstance(name, str) and name in self.gateway.shared.presenter.tools_by_name:
            server, _, tool = name.partition(SEPARATOR)
            return server, tool
        return UNKNOWN, UNKNOWN

    def _server(self, server: object) -> str:
        return (
            server
            if isinstance(server, str) and server in self.gateway.shared.downstreams.servers
            else "-"
        )

    @contextmanager
    def store(self, operation: str) -> Iterator[None]:
        """Time one store operation (failed ones too: a slow failure is worth seeing)."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.store_seconds.labels(operation).observe(time.perf_counter() - start)

    # -- exposition ------------------------------------------------------------------------
    def exposition(self) -> bytes:
        """The registry in the Prometheus text format (:data:`CONTENT_TYPE_LATEST`)."""
        return generate_latest(self.registry)


def _error_kind(result: object) -> str:
    payload = getattr(result, "structured_content", None)
    kind = payload.get("error") if isinstance(payload, dict) else None
    return kind if kind in GATEWAY_ERRORS else "tool_error"


class _GatewayState(Collector):
    """What the gateway holds now, read at each scrape (no bookkeeping on the call path)."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway

    def collect(self) -> Iterable[Metric]:
        g = self.gateway
        up = GaugeMetricFamily(
            "toolroute_downstream_up", "1 when the downstream server is connected.",
            labels=["server"],
        )  # fmt: skip
        tools = GaugeMetricFamily(
            "toolroute_downstream_tools", "Tools the server listed at its last listing.",
            labels=["server"],
        )  # fmt: skip
        restarts = GaugeMetricFamily(
            "toolroute_downstream_restarts", "Times the server was restarted after it failed.",
            labels=["server"],
        )  # fmt: skip
        for name, d in sorted(g.shared.downstreams.servers.items()):
            up.add_metric([name], 1.0 if d.status == "up" else 0.0)
            tools.add_metric([name], float(d.tools or 0))
            restarts.add_metric([name], float(d.restarts))
        yield up
        yield tools
        yield restarts
        yield GaugeMetricFamily(
            "toolroute_index_tools", "Tools in the index find_tools searches.",
            value=float(g.shared.router.catalog.tool_count),
        )  # fmt: skip
        yield GaugeMetricFamily(
            "toolroute_quarantined_tools",
            "Tools held in quarantine (changed since pinned; not indexed, not callable).",
            value=float(len(g.shared.quarantined)),
        )


# -- serving (serving.py) -------------------------------------------------------------------
def mount_metrics(app: Starlette, gateway: Gateway) -> None:
    """``GET /metrics`` on the gateway's Starlette ``app`` (when its metrics are on). The
    guard has checked the bearer token; a client with an allow-list is refused (403): the
    metrics name every server and tool."""
    metrics = gateway.shared.metrics
    if not isinstance(metrics, GatewayMetrics):
        return

    async def endpoint(request: Request) -> Response:
        client = gateway.clients.get(request.scope.get(CLIENT_SCOPE_KEY) or "")
        if client is not None and client.restricted:
            return PlainTextResponse(
                "the metrics name every server and tool: only a client without an allow-list "
                "may read them",
                status_code=403,
            )
        return Response(metrics.exposition(), media_type=CONTENT_TYPE_LATEST)

    app.add_route("/metrics", endpoint, methods=["GET"])

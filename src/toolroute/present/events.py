"""Routing events: one structured record per routing decision, to a JSON-lines log and to the
store, for FinOps dashboards and audits, as §5.7 of *Tool Attention Is All You Need: Dynamic
Tool Gating and Lazy Schema Loading for Eliminating the MCP/Tools Tax in Scalable Agentic
Workflows* (Tool Attention) describes."""

from __future__ import annotations

import hashlib
import json
import os
import time
import uuid
from contextlib import suppress
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from toolroute.errors import ToolrouteError
from toolroute.store.base import open_private, private_dir

__all__ = ["EventLog", "OtelExporter", "RoutingEvent", "query_hash"]


def query_hash(query: str) -> str:
    """The query is not logged, only its SHA-256 prefix (privacy)."""
    return hashlib.sha256(query.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class RoutingEvent:
    query_hash: str
    strategy: str
    candidates: list[dict[str, Any]]
    """``{"name", "score"}`` of every candidate considered, best first."""
    gated_out: list[dict[str, str]]
    """``{"name", "reason"}`` of candidates not promoted."""
    active: list[str]
    phase1_tokens: int
    phase2_tokens: int
    latency_ms: float
    turn_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    at: float = field(default_factory=time.time)

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, sort_keys=True)


class EventSink(Protocol):
    def emit(self, event: RoutingEvent) -> None: ...


class EventLog:
    """Appends each event as one JSON line (the store keeps its own copy, table
    ``routing_events``). ``emit`` raises OSError when the file cannot be written (full
    disk, no permission): the gateway notes it once and goes on without the line. The file
    is created 0600 and missing folders 0700 whatever the umask: events name clients and
    tools."""

    part = "events log"
    """What the gateway's status calls this sink when writing it fails."""

    def __init__(self, path: Path) -> None:
        self.path = path
        # a directory that cannot be made now fails each emit, noted there: the gateway
        # starts and serves without its log rather than not at all
        with suppress(OSError):
            private_dir(path.parent)

    def emit(self, event: RoutingEvent) -> None:
        fd = open_private(self.path, os.O_WRONLY | os.O_APPEND)
        with os.fdopen(fd, "a", encoding="utf-8") as f:
            f.write(event.to_json() + "\n")


class OtelExporter:
    """Routing events as OpenTelemetry spans (``toolroute.route``), through the OpenTelemetry
    API; spans go wherever the application's SDK sends them (``pip install
    'toolroute[otel]'`` and configure a TracerProvider). Without an SDK they are no-ops."""

    def __init__(self, tracer_name: str = "toolroute") -> None:
        try:
            from opentelemetry import trace
        except ImportError:
            raise ToolrouteError(
                "the OpenTelemetry exporter needs opentelemetry-api: pip install 'toolroute[otel]'"
            ) from None
        self._tracer = trace.get_tracer(tracer_name)

    def emit(self, event: RoutingEvent) -> None:
        with self._tracer.start_as_current_span("toolroute.route") as span:
            span.set_attribute("toolroute.turn_id", event.turn_id)
            span.set_attribute("toolroute.query_hash", event.query_hash)
            span.set_attribute("toolroute.strategy", event.strategy)
            span.set_attribute("toolroute.active", list(event.active))
            span.set_attribute("toolroute.gated_out", [g["name"] for g in event.gated_out])
            span.set_attribute("toolroute.phase1_tokens", event.phase1_tokens)
            span.set_attribute("toolroute.phase2_tokens", event.phase2_tokens)
            span.set_attribute("toolroute.latency_ms", event.latency_ms)

"""Routing events (seed 002 §5.7): one structured record per routing decision, to a JSON-lines
log and to the store, for FinOps dashboards and audits."""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["EventLog", "RoutingEvent", "query_hash"]


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


class EventLog:
    """Appends each event as one JSON line (the store keeps its own copy, table
    ``routing_events``)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)

    def emit(self, event: RoutingEvent) -> None:
        with self.path.open("a", encoding="utf-8") as f:
            f.write(event.to_json() + "\n")

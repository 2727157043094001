from __future__ import annotations

import json
from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from toolroute.present.events import EventLog, OtelExporter, RoutingEvent, query_hash


def _event() -> RoutingEvent:
    return RoutingEvent(
        query_hash=query_hash("what time is it"),
        strategy="default",
        candidates=[{"name": "time__now", "score": 0.8}],
        gated_out=[{"name": "git__log", "reason": "beyond top-k"}],
        active=["time__now"],
        phase1_tokens=120,
        phase2_tokens=80,
        latency_ms=9.5,
    )


def test_jsonl_log_appends_one_line_per_event(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "logs" / "events.jsonl")
    log.emit(_event())
    log.emit(_event())
    lines = (tmp_path / "logs" / "events.jsonl").read_text().splitlines()
    assert len(lines) == 2
    first = json.loads(lines[0])
    assert first["query_hash"] == query_hash("what time is it") != "what time is it"
    assert first["phase1_tokens"] == 120 and first["active"] == ["time__now"]
    assert json.loads(lines[1])["turn_id"] != first["turn_id"]


def test_otel_exporter_emits_a_span_per_routing_decision() -> None:
    from opentelemetry import trace

    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    trace.set_tracer_provider(provider)
    OtelExporter().emit(_event())
    (span,) = [s for s in spans.get_finished_spans() if s.name == "toolroute.route"]
    assert span.attributes is not None
    assert span.attributes["toolroute.phase2_tokens"] == 80
    assert tuple(span.attributes["toolroute.gated_out"]) == ("git__log",)

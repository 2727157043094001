"""`toolroute bench` over requests that come with their own small toolbox (bench/toolbox.py):
each routed over just its box, servable ones refused and unservable ones answered counted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolroute import demo_catalog
from toolroute.bench.runner import bench
from toolroute.bench.toolbox import box_catalog
from toolroute.catalog import load_queries
from toolroute.embed.onnx import OnnxEmbedder
from toolroute.route.strategy import RouteParams
from toolroute.router import Router

pytestmark = pytest.mark.integration  # the real model

GIT = [{"server": "git", "tool": t} for t in ("git_status", "git_diff", "git_log")]


def _queries(tmp_path: Path, rows: list[dict]) -> Path:
    p = tmp_path / "q.jsonl"
    p.write_text("".join(json.dumps({"id": i, **r}) + "\n" for i, r in enumerate(rows)))
    return p


def _bench(tmp_path: Path, onnx: OnnxEmbedder, rows: list[dict], abstain: str) -> dict:
    """`default`'s bench row over the demo catalog's store, each row over its own box."""
    params = RouteParams(abstain=abstain)  # type: ignore[arg-type]
    with Router(demo_catalog(), store=tmp_path / "s", embedder=onnx, params=params) as router:
        router.index()
        qs = load_queries(_queries(tmp_path, rows), router.catalog)
        return bench(router, qs, ["default"])["default"]


def test_a_box_holds_only_its_own_tools() -> None:
    cat = demo_catalog()
    box = box_catalog(cat, frozenset({("git", "git_log"), ("time", "convert_time")}))
    assert sorted(t.key for t in box.tools()) == [("git", "git_log"), ("time", "convert_time")]
    assert [s.id for s in box.servers] == ["time", "git"]  # the catalog's order


def test_each_request_is_routed_over_its_box_and_refusals_are_counted(
    tmp_path: Path, onnx: OnnxEmbedder
) -> None:
    rows = [
        # servable: the time tool is in its box, beside git siblings
        {
            "query": "what time is it in Tokyo right now",
            "relevant": [{"server": "time", "tool": "get_current_time"}],
            "toolbox": [*GIT, {"server": "time", "tool": "get_current_time"}],
        },
        # unservable: a box of git siblings that cannot tell the time
        {"query": "what time is it in Tokyo right now", "relevant": [], "toolbox": GIT},
    ]
    got = _bench(tmp_path, onnx, rows, "off")
    # over its box of four, the time tool ranks first; with abstention off, the git-only box
    # still answers (a false one: FP rate 1.0) and nothing servable is refused
    assert got["recall@1"] == 1.0
    assert got["fp_rate"] == 1.0
    assert got["refused"] == 0.0
    assert got["queries"] == 1 and got["out_of_scope"] == 1
    # the boxes never replaced the bench store's catalog: indexing it again changes nothing
    with Router(demo_catalog(), store=tmp_path / "s", embedder=onnx) as again:
        report = again.index()
    assert (report.added, report.removed, report.unchanged) == (0, 0, demo_catalog().tool_count)


def test_abstention_refusals_of_servable_requests_are_reported(
    tmp_path: Path, onnx: OnnxEmbedder
) -> None:
    rows = [
        {
            "query": "bake me a chocolate cake",
            "relevant": [{"server": "git", "tool": "git_log"}],
            "toolbox": GIT,
        }
    ]
    got = _bench(tmp_path, onnx, rows, "default")
    # labelled servable, but no git tool bakes: "no tool fits" is counted as a refusal
    assert got["refused"] == 1.0
    assert got["recall@5"] == 0.0

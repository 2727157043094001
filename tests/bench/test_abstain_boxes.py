"""The abstention's small-toolbox training sets: built from dev splits the measured sets do not
hold, held out from each other (they share CLINC's out-of-scope requests), and read as the
router meets them: each request over its own box."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from benchmarks import abstain_train as at
from benchmarks.small_toolbox import HERE

from tests.conftest import BENCHMARKS, needs_shared


def _rows(name: str) -> list[dict]:
    return [json.loads(x) for x in (HERE / f"{name}.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("name", ["sgd", "clinc"])
def test_the_dev_toolboxes_hold_no_out_of_scope_request_of_the_measured_ones(name: str) -> None:
    dev, test = _rows(f"{name}_dev"), _rows(name)
    measured = {r["query"] for r in test}
    assert {r["kind"] for r in dev} == {"servable", "removed", "oos"}
    assert not {r["query"] for r in dev if r["kind"] == "oos"} & measured
    # servable and removed ones may repeat a stock reply; collect_boxes skips those
    assert sum(r["query"] in measured for r in dev) <= 5


def test_a_toolbox_set_is_held_out_from_the_other_and_from_no_catalog() -> None:
    assert at.shares_catalog("sgd_box", "clinc_box")
    assert not at.shares_catalog("sgd_box", "union")
    assert not at.shares_catalog("metatool", "clinc_box")
    assert at.shares_catalog("union", "mcpbench")


def test_a_toolbox_set_is_read_request_by_request_over_its_own_box(tmp_path, monkeypatch) -> None:
    """collect_boxes on the first rows of the dev file, with the default embedder: one row of
    signals per request, servable ones labelled in scope with their R@5, the others out."""
    from toolroute.embed.onnx import OnnxEmbedder

    dev = _rows("clinc_dev")
    picked = [next(r for r in dev if r["kind"] == k) for k in ("servable", "removed", "oos")]
    folder = tmp_path / "boxes"
    folder.mkdir()
    for stem in ("clinc_dev", "clinc"):
        rows = picked if stem == "clinc_dev" else [{"query": "not one of them"}]
        (folder / f"{stem}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "clinc_dev_catalog.json").write_text((HERE / "clinc_dev_catalog.json").read_text())
    monkeypatch.setattr("benchmarks.small_toolbox.HERE", folder)
    got = at.collect_boxes("clinc_box", tmp_path / "store", OnnxEmbedder())
    assert got["kind"] == ["in", "near", "far"]
    assert got["label"] == [1, 0, 0]
    assert got["r5"][0] in (0.0, 1.0) and got["r5"][1:] == [0.0, 0.0]
    x = np.array(got["x"])
    assert x.shape == (3, len(at.FEATURES)) and np.isfinite(x).all()
    assert x[0, at.FEATURES.index("cos1")] > 0.3  # the servable request meets its own tool


@needs_shared()
def test_small_boxes_of_real_mcp_servers_hold_the_tool_or_none_of_it(tmp_path: Path) -> None:
    from benchmarks.small_toolbox import MCP_MAX, build_mcp

    build_mcp(BENCHMARKS, tmp_path)
    rows = [json.loads(x) for x in (tmp_path / "mcp.jsonl").read_text().splitlines()]
    kinds = {k: [r for r in rows if r["kind"] == k] for k in ("servable", "removed", "oos")}
    assert all(kinds.values()) and len(kinds["oos"]) == 60
    for r in rows:
        box = {(b["server"], b["tool"]) for b in r["toolbox"]}
        assert 1 <= len(box) <= MCP_MAX and len({s for s, _ in box}) == 1
        assert {(x["server"], x["tool"]) for x in r["relevant"]} <= box
    for s, m in zip(kinds["servable"], kinds["removed"], strict=True):
        assert s["query"] == m["query"] and not m["relevant"]
        need = {(x["server"], x["tool"]) for x in s["relevant"]}
        assert need and not need & {(b["server"], b["tool"]) for b in m["toolbox"]}
    # the hand-written near requests: each over its whole server, the servable ones' tools in it
    near = [json.loads(x) for x in (tmp_path / "mcp_near.jsonl").read_text().splitlines()]
    assert [sum(r["kind"] == k for r in near) for k in ("servable", "near")] == [80, 80]
    for r in near:
        box = {(b["server"], b["tool"]) for b in r["toolbox"]}
        assert 2 <= len(box) <= MCP_MAX and len({s for s, _ in box}) == 1
        need = {(x["server"], x["tool"]) for x in r["relevant"]}
        assert (r["kind"] == "near") == (not need) and need <= box


def test_a_near_request_naming_a_tool_its_server_lacks_is_refused() -> None:
    from benchmarks.small_toolbox import _near_row

    server = {"id": "s", "tools": [{"name": "get"}, {"name": "list"}]}
    row = {"id": "n1", "server": "s", "kind": "servable", "query": "q", "tools": ["get"]}
    assert _near_row(row, {"s": server})["toolbox"] == [
        {"server": "s", "tool": "get"},
        {"server": "s", "tool": "list"},
    ]
    with pytest.raises(ValueError, match="n1"):
        _near_row({**row, "tools": ["merge"]}, {"s": server})
    with pytest.raises(ValueError, match="n1"):
        _near_row({**row, "kind": "far"}, {"s": server})


def test_the_mcp_boxes_are_held_out_with_the_union_and_lend_no_out_of_scope_requests() -> None:
    for other in ("union", *at.UNION_PARTS):
        assert at.shares_catalog("mcp_box", other) and at.shares_catalog(other, "mcp_box")
    assert not at.shares_catalog("mcp_box", "sgd_box")
    assert not at.shares_catalog("mcp_box", "sealtools")
    near = np.eye(3)
    sets = {
        "sgd_box": {"vec": near[:2], "kind": np.array(["near", "in"])},
        "mcp_box": {"vec": near[1:], "kind": np.array(["near", "near"])},
    }
    # a removed request of a real server is in scope of the union: no oos_gap neighbour
    assert at.requests_of(sets, ["sgd_box", "mcp_box"]).tolist() == [[1.0, 0.0, 0.0]]


def test_out_of_scope_answered_is_paired_alone_and_only_where_a_set_has_such_requests() -> None:
    """The pooled unservable measure mixes removed and out-of-scope requests; the issue's target
    is the latter alone, so it gets its own paired line, absent for a set without any."""
    from benchmarks.small_toolbox import paired_lines

    base = {"servable R@1": [1.0, 1.0], "servable refused": [0.0, 0.0]}
    base |= {"unservable answered": [1.0] * 40, "unservable answered plainly": [0.0] * 40}
    got = {k: list(v) for k, v in base.items()}
    near = paired_lines("mcp_near", "arm", {"per": got}, {"per": base})
    assert not any("out-of-scope" in x for x in near)
    base["out-of-scope answered"] = [0.0] * 40
    got["out-of-scope answered"] = [1.0] * 40
    lines = paired_lines("sgd", "arm", {"per": got}, {"per": base})
    oos = [x for x in lines if "out-of-scope" in x]
    assert len(oos) == 1 and oos[0].endswith("worse |")

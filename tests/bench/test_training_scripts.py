"""The model-training scripts' pure parts: near misses, small toolboxes, the fit head's maths.

None of them needs torch (the CI installs no training extra) nor ../shared.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np
from benchmarks import small_toolbox as stb
from benchmarks import train_data
from benchmarks.train_fit import FitModel, features


def _build() -> train_data.Build:
    b = train_data.Build()
    for svc in ("Flights_1", "Flights_2"):  # the same operations under two service versions
        for op in ("SearchOnewayFlight", "ReserveOnewayFlight"):
            b.tool(
                f"sgd/{svc}/{op}",
                "flights",
                op,
                "d",
                group=f"sgd/{svc}",
                key=f"sgd/Flights/{op}",
                source="sgd",
            )
    b.tool(
        "sgd/Alarm_1/AddAlarm",
        "alarm",
        "AddAlarm",
        "d",
        group="sgd/Alarm_1",
        key="sgd/Alarm/AddAlarm",
        source="sgd",
    )
    for tid in list(b.tools):
        b.rows["train"].append({"query": "q", "tool": tid, "source": "sgd"})
    return b


def test_a_near_miss_is_never_the_same_operation_under_another_service_version() -> None:
    b = _build()
    for seed in range(20):
        train_data._near_misses(b, random.Random(seed))
        for row in b.rows["train"]:
            assert b.tools[row["negative"]]["key"] != b.tools[row["tool"]]["key"]
            if row["tool"].startswith("sgd/Flights_1"):
                assert row["negative"].startswith("sgd/Flights_1")  # a sibling, same service


def test_a_one_intent_service_draws_its_near_miss_from_its_source() -> None:
    b = _build()
    train_data._near_misses(b, random.Random(0))
    row = next(r for r in b.rows["train"] if r["tool"] == "sgd/Alarm_1/AddAlarm")
    assert row["negative"] != "sgd/Alarm_1/AddAlarm"


def _servers() -> list[dict]:
    return [
        {
            "id": f"Svc_{s}",
            "name": f"Svc_{s}",
            "description": "",
            "tools": [{"name": f"Op{t}", "description": "", "input_schema": {}} for t in range(4)],
        }
        for s in range(6)
    ]


def test_small_toolboxes_hold_the_tool_when_servable_and_no_same_operation_when_removed() -> None:
    servers = _servers()
    turns = {f"Svc_{s}/Op{t}": [f"please op{t}"] for s in range(6) for t in range(4)}
    rows = stb._rows("t", servers, turns, ["hello there"], random.Random(1), 60)
    kinds = {r["kind"] for r in rows}
    assert kinds == {"servable", "removed", "oos"}
    for r in rows:
        box = {(b["server"], b["tool"]) for b in r["toolbox"]}
        assert 1 <= len(box) <= 20
        rel = {(x["server"], x["tool"]) for x in r["relevant"]}
        if r["kind"] == "servable":
            assert rel and rel <= box
        else:
            assert not rel
        if r["kind"] == "removed":
            op = r["query"].split("op")[1]
            assert all(t != f"Op{op}" for _, t in box)


def test_features_are_the_cosine_the_product_and_the_distance() -> None:
    q = np.array([[0.6, 0.8]])
    t = np.array([[1.0, 0.0]])
    assert np.allclose(features(q, t), [[0.6, 0.6, 0.0, 0.4, 0.8]])


@dataclass
class _Tool:
    key: tuple[str, str]
    name: str
    description: str


class _Embedder:
    """Query along x; a tool about 'fit' along x, any other along y."""

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.array(
            [[1.0, 0.0] if i == 0 or "fit" in t else [0.0, 1.0] for i, t in enumerate(texts)]
        )


def _head(theta: float, rerank: bool = False) -> FitModel:
    # one hidden unit reading the cosine: p = sigmoid(10 * cos - 5)
    w1 = np.zeros((5, 1))
    w1[0, 0] = 10.0
    weights = {
        "w1": w1,
        "b1": np.array([0.0]),
        "w2": np.array([[1.0]]),
        "b2": np.array([-5.0]),
        "theta": np.array(theta),
    }
    return FitModel(weights, _Embedder(), rerank=rerank)


def test_the_fit_model_keeps_the_order_or_reorders_by_its_probability() -> None:
    tools = [_Tool(("s", "other"), "other", "x"), _Tool(("s", "fit"), "fit", "x")]
    assert _head(0.5).keep("q", tools, [7, 9]) == [7, 9]
    assert _head(0.5, rerank=True).keep("q", tools, [7, 9]) == [9, 7]


def test_the_fit_model_refuses_when_no_candidate_reaches_its_threshold() -> None:
    tools = [_Tool(("s", "other"), "other", "x"), _Tool(("s", "fit"), "fit", "x")]
    assert _head(0.999).keep("q", tools, [7, 9]) == []
    assert _head(0.5).keep("q", tools[:1], [7]) == []

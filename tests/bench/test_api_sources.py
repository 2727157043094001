"""The API-style training sources (NESTFUL, RestBench, ToolAlpaca's evaluation files) and the
trainer's multi-step requests: read from tiny snapshots made here with git, no torch."""

from __future__ import annotations

import json
import random
from pathlib import Path

from benchmarks import train_data
from benchmarks.train_embedder import compound

from tests.bench.test_training_scripts import _snapshot

_OAS = {
    "paths": {
        "/search/person": {
            "get": {
                "summary": "Search People",
                "description": "Search for people.",
                "parameters": [{"name": "query"}],
            }
        },
        "/person/{person_id}/movie_credits": {
            "parameters": [{"name": "person_id"}],
            "get": {"summary": "Get Movie Credits", "description": "Get a person's movies."},
        },
        "/person/{person_id}": {"get": {"summary": "Get Details", "description": "A person."}},
    }
}
_QUERIES = [
    {
        "query": "give me the number of movies directed by Sofia Coppola",
        "solution": ["GET /search/person", "GET /person/{person_id}/movie_credits"],
    },
    {"query": "who is Tom Hanks", "solution": ["GET /search/person", "GET /nowhere"]},
]


def _restbench(root: Path) -> train_data.Build:
    files = {"specs/tmdb_oas.json": json.dumps(_OAS), "datasets/tmdb.json": json.dumps(_QUERIES)}
    files |= {"specs/spotify_oas.json": json.dumps({"paths": {}}), "datasets/spotify.json": "[]"}
    _snapshot(root, "Yifan-Song793+RestGPT", files)
    return train_data.build(root, train_data.EvalSets(), only=("restbench",))


def test_a_request_needing_several_operations_gets_a_row_each_and_never_the_others_as_negatives(
    tmp_path: Path,
) -> None:
    b = _restbench(tmp_path)
    rows = [r for split in ("train", "dev") for r in b.rows[split]]
    coppola = [r for r in rows if "Coppola" in r["query"]]
    search, credits = (
        "restbench/tmdb/GET /search/person",
        ("restbench/tmdb/GET /person/{person_id}/movie_credits"),
    )
    assert {r["tool"] for r in coppola} == {search, credits}
    for r in coppola:
        assert r["also"] == [credits if r["tool"] == search else search]
        assert r["negative"] not in (search, credits)  # the third operation
    hanks = [r for r in rows if "Hanks" in r["query"]]
    assert [r["tool"] for r in hanks] == [search] and "also" not in hanks[0]  # unknown op: gone
    text = b.tools[credits]["text"]
    assert text == "tmdb: get movie credits: Get a person's movies.: person id"


def test_nestful_and_toolalpaca_read_functions_with_their_servers_and_parameters(
    tmp_path: Path,
) -> None:
    spec = [
        {
            "name": "SkyFlightSearch",
            "description": "Find flights.",
            "host": "sky-scrapper.p.rapidapi.com",
            "query_parameters": {"date": {}},
        },
        {"name": "SkyAirport", "description": "Find airports.", "host": "sky-scrapper.p.x"},
    ]
    data = [{"input": "Fly to  London", "output": [{"name": "SkyAirport"}, {"name": "Nope"}]}]
    glaive = [{"name": "calc_tip", "description": "Tip.", "query_parameters": {"bill": {}}}]
    _snapshot(
        tmp_path,
        "IBM+NESTFUL",
        {
            "data/executable/executable-spec.json": json.dumps(spec),
            "data/executable/executable-data.json": json.dumps(data),
            "data/non-executable/non-executable-glaive-spec.json": json.dumps(glaive),
            "data/non-executable/non-executable-glaive-data.json": "[]",
        },
    )
    api = {
        "Name": "Axolotl",
        "Function_Description": {
            "getFacts": 'Get facts.\nParameters: {"category": "string"}\nOutput: facts',
            "getImage": "Get an image.\nParameters: {}\nOutput: an image",
            "components": "schemas",
        },
        "Instructions": ["Tell me axolotl facts", "Show me one"],
        "Golden_Answers": [[{"Action": "getFacts"}], [{"Action": "getImage"}]],
    }
    _snapshot(
        tmp_path,
        "tangqiaoyu+ToolAlpaca",
        {"data/eval_simulated.json": json.dumps([api]), "data/eval_real.json": "[]"},
    )
    b = train_data.build(tmp_path, train_data.EvalSets(), only=("nestful", "toolalpaca"))
    tools = b.tools
    assert tools["nestful/rapidapi/SkyFlightSearch"]["text"] == (
        "sky scrapper: sky flight search: Find flights.: date"
    )
    assert tools["nestful/glaive/calc_tip"]["text"] == "functions: calc tip: Tip.: bill"
    assert (
        tools["toolalpaca/Axolotl/getFacts"]["text"] == "axolotl: get facts: Get facts.: category"
    )
    assert "toolalpaca/Axolotl/components" not in tools
    rows = [r for split in ("train", "dev") for r in b.rows[split]]
    assert {(r["query"], r["tool"]) for r in rows} == {
        ("Fly to London", "nestful/rapidapi/SkyAirport"),
        ("Tell me axolotl facts", "toolalpaca/Axolotl/getFacts"),
        ("Show me one", "toolalpaca/Axolotl/getImage"),
    }


def test_a_multi_step_request_joins_requests_of_other_groups_and_masks_their_tools() -> None:
    tools = {f"s/{g}/{t}": {"group": f"s/{g}", "key": f"s/{g}/{t}"} for g in "abcd" for t in "xy"}
    rows = [
        {
            "query": f"do {tid}?",
            "tool": tid,
            "negative": tid[:-1] + ("y" if tid[-1] == "x" else "x"),
        }
        for tid in tools
    ]
    rows[0]["also"] = ["s/a/y"]
    batch = next(compound(rows, 3, random.Random(1), tools))
    assert len(batch) == 3
    for r in batch:
        parts = [p for p in rows if p["query"].rstrip("?") in r["query"].lower()]
        assert 2 <= len(parts) <= 3 and r["tool"] in {p["tool"] for p in parts}
        assert len({tools[p["tool"]]["group"] for p in parts}) == len(parts)
        owned = {p["tool"] for p in parts} | {t for p in parts for t in p.get("also", [])}
        assert set(r["also"]) == owned - {r["tool"]}
        target = next(p for p in parts if p["tool"] == r["tool"])
        assert r["negative"] == target["negative"] and r["source"] == "compound"
    assert len({p for r in batch for p in [r["tool"], *r["also"]]}) >= 6  # no tool twice


def test_the_removed_auc_counts_how_often_a_served_cosine_beats_an_unserved_one() -> None:
    from benchmarks.train_embedder import pooled_auc

    assert pooled_auc([0.9, 0.8], [0.1, 0.2]) == 1.0
    assert pooled_auc([0.1], [0.9, 0.8]) == 0.0
    assert pooled_auc([0.5, 0.7], [0.5, 0.6]) == (0.5 + 0 + 1 + 1) / 4
    assert pooled_auc([], [0.3]) != pooled_auc([], [0.3])  # nan: nothing to compare

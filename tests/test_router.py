from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.conftest import SMALL_CATALOG, HashingEmbedder
from toolroute import Router
from toolroute.errors import ConfigError
from toolroute.route.strategy import STRATEGIES


def _router(tmp_path: Path, catalog: Path, emb: HashingEmbedder, **kw) -> Router:  # type: ignore[no-untyped-def]
    return Router(catalog, store=tmp_path / "store", embedder=emb, **kw)


def test_unchanged_catalog_is_not_reembedded(
    tmp_path: Path, catalog_file: Path, embedder: HashingEmbedder
) -> None:
    with _router(tmp_path, catalog_file, embedder) as r:
        first = r.index()
        assert first.added == 7 and first.embedded > 0
    with _router(tmp_path, catalog_file, HashingEmbedder()) as r:
        again = r.index()
    assert again.to_dict() == {
        "added": 0,
        "updated": 0,
        "removed": 0,
        "unchanged": 7,
        "embedded": 0,
    }


def test_changed_description_reembeds_only_that_tool(tmp_path: Path, catalog_file: Path) -> None:
    with _router(tmp_path, catalog_file, HashingEmbedder()) as r:
        r.index()
    data = json.loads(json.dumps(SMALL_CATALOG))
    data["servers"][2]["tools"][0]["description"] = "Hourly weather forecast for any city"
    catalog_file.write_text(json.dumps(data))
    emb = HashingEmbedder()
    with _router(tmp_path, catalog_file, emb) as r:
        rep = r.index()
    assert (rep.updated, rep.unchanged) == (1, 6)
    assert rep.embedded == len(emb.calls) > 0
    assert all("hourly weather forecast" in t.lower() for t in emb.calls), emb.calls


def test_route_returns_candidates_with_schemas(
    tmp_path: Path, catalog_file: Path, embedder: HashingEmbedder
) -> None:
    with _router(tmp_path, catalog_file, embedder) as r:
        cands = r.route("what is the current time in a timezone", k=3)
    assert cands[0].tool == "get_current_time"
    assert cands[0].input_schema["properties"]["timezone"]["type"] == "string"
    assert [c.score for c in cands] == sorted((c.score for c in cands), reverse=True)


@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_every_strategy_ranks_and_returns_at_most_k(
    tmp_path: Path, catalog_file: Path, strategy: str
) -> None:
    with _router(tmp_path, catalog_file, HashingEmbedder()) as r:
        cands = r.route("read a file from disk and then write a file", k=4, strategy=strategy)
    assert 1 <= len(cands) <= 4
    assert len({(c.server, c.tool) for c in cands}) == len(cands)
    assert all(np.isfinite(c.score) for c in cands)


def test_cascade_returns_only_tools_of_kept_servers(tmp_path: Path, catalog_file: Path) -> None:
    from toolroute.route.strategy import CascadeParams, RouteParams

    with _router(
        tmp_path,
        catalog_file,
        HashingEmbedder(),
        params=RouteParams(cascade=CascadeParams(servers_k=1)),
    ) as r:
        cands = r.route("weather forecast alerts", k=7, strategy="cascade")
    assert {c.server for c in cands} == {"weather"}


def test_lexical_strategy_does_not_embed_the_query(tmp_path: Path, catalog_file: Path) -> None:
    emb = HashingEmbedder()
    with _router(tmp_path, catalog_file, emb) as r:
        r.index()
        emb.calls.clear()
        r.route("read file", strategy="bm25")
    assert emb.calls == []


def test_bad_arguments_are_config_errors(
    tmp_path: Path, catalog_file: Path, embedder: HashingEmbedder
) -> None:
    with _router(tmp_path, catalog_file, embedder) as r:
        with pytest.raises(ConfigError, match="unknown strategy 'nope'"):
            r.route("x", strategy="nope")
        with pytest.raises(ConfigError, match="k must be at least 1"):
            r.route("x", k=0)
        with pytest.raises(ConfigError, match="empty"):
            r.route("   ")
    with pytest.raises(ConfigError, match="unknown document preset"):
        _router(tmp_path, catalog_file, embedder, documents="nope")


def test_document_presets_all_index(tmp_path: Path, catalog_file: Path) -> None:
    for preset in ("concat", "var-1", "var-2", "toolroute"):
        with _router(tmp_path / preset, catalog_file, HashingEmbedder(), documents=preset) as r:
            assert r.route("list files in a directory", k=1)[0].tool == "list_directory"


def test_multi_top_tools_equal_scoring_every_sub_intent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sub-intent bound prunes work, never the top: same top 20 as the full product."""
    from dataclasses import replace

    from toolroute.catalog import catalog_from_dict
    from toolroute.route import stage as strategy  # the stages (multi, _lift) live in stage.py
    from toolroute.route.stage import MultiParams
    from toolroute.router import top_k

    rng = np.random.default_rng(3)
    near = ["fetch", "news", "headlines", "draw", "word", "cloud", "chart", "image", "text"]
    far = [
        "alpha",
        "beta",
        "gamma",
        "delta",
        "epsilon",
        "zeta",
        "theta",
        "kappa",
        "lambda",
        "sigma",
        "omega",
    ]
    servers = [
        {
            "id": f"s{i}",
            "name": f"server {i}",
            "description": " ".join(rng.choice(far, 6)),
            "tools": [
                {
                    "name": f"t{j}",
                    "description": " ".join(rng.choice(near if i < 3 else far, 6)),
                }
                for j in range(20)
            ],
        }
        for i in range(30)
    ]
    lifted: list[int] = []
    lift = strategy._lift

    def spy(*args: Any) -> Any:
        lifted.append(len(args[3]))
        return lift(*args)

    monkeypatch.setattr(strategy, "_lift", spy)
    with Router(
        catalog_from_dict({"servers": servers}), store=tmp_path, embedder=HashingEmbedder()
    ) as r:
        query = "fetch the news headlines, then draw a word cloud of them"
        r.params = replace(r.params, multi=MultiParams(intent_exact_top=20))
        bounded = r.scores(query, "default")
        assert lifted and max(lifted) < 200  # the bound skipped most of the 600 tools
        r.params = replace(r.params, multi=MultiParams(intent_exact_top=0))
        full = r.scores(query, "default")
        top = top_k(full, 20)
        assert top_k(bounded, 20) == top
        assert np.allclose(bounded[top], full[top], atol=1e-6)
        assert (bounded <= full + 1e-6).all()  # elsewhere a lower bound


def test_a_router_reads_no_llm_from_the_environment(
    tmp_path: Path, catalog_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLROUTE_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    with _router(tmp_path, catalog_file, HashingEmbedder()) as r:
        assert r.params.llm is None  # entry points build it from their configuration


def test_the_llm_given_to_a_router_reaches_its_strategies(
    tmp_path: Path, catalog_file: Path
) -> None:
    from toolroute.llm.client import ChatLLM, LLMConfig
    from toolroute.route.strategy import CascadeParams, RouteParams

    chat = ChatLLM(LLMConfig(base_url="http://127.0.0.1:9/v1", model="m"))
    with _router(tmp_path, catalog_file, HashingEmbedder(), llm=chat) as r:
        assert r.params.llm is chat
    params = RouteParams(cascade=CascadeParams(servers_k=2))
    with _router(tmp_path, catalog_file, HashingEmbedder(), llm=chat, params=params) as r:
        assert r.params.llm is chat and r.params.cascade.servers_k == 2


def test_making_a_router_leaves_the_process_malloc_settings_alone(
    tmp_path: Path, catalog_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolroute import heap

    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    monkeypatch.setattr(heap, "_done", False)
    with _router(tmp_path, catalog_file, HashingEmbedder()) as r:
        r.index()
    assert heap._done is False  # the entry point (CLI, gateway) tunes the process


def test_register_strategy_adds_a_named_strategy_and_refuses_a_silent_overwrite(
    tmp_path: Path, catalog_file: Path, embedder: HashingEmbedder
) -> None:
    from toolroute.route.strategy import register_strategy, resolve_strategy

    def reverse_bm25(ix, q, p):  # type: ignore[no-untyped-def]
        return -ix.tool_lexical.scores(q.text)

    made = register_strategy(
        "test-reverse", lambda: STRATEGIES["bm25"].__class__("x", reverse_bm25, "none", "test")
    )
    try:
        assert resolve_strategy("test-reverse") is made and made.name == "test-reverse"
        with pytest.raises(ConfigError, match="already registered"):
            register_strategy("bm25", lambda: made)
        with _router(tmp_path, catalog_file, embedder) as r:
            assert r.route("read a file", k=1, strategy="test-reverse")[0].tool != "read_file"
    finally:
        del STRATEGIES["test-reverse"]

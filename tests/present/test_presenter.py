from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import HashingEmbedder
from toolroute import Router
from toolroute.catalog import load_catalog
from toolroute.catalog.candidate import Candidate
from toolroute.papers.tool_attention.agent_loop import ToolAttention
from toolroute.present.presenter import PresentConfig, Presenter, binding_name
from toolroute.present.tokens import TokenCounter


def _words(texts: list[str]) -> list[int]:
    """A stand-in tokenizer for unit tests: whitespace words (the real one is cl100k)."""
    return [len(t.split()) for t in texts]


def _presenter(catalog_file: Path, **cfg: object) -> Presenter:
    return Presenter(
        load_catalog(catalog_file),
        PresentConfig(**cfg),  # type: ignore[arg-type]
        TokenCounter(_words),
    )


def _cand(server: str, tool: str, score: float) -> Candidate:
    return Candidate(server, tool, score, f"{tool} does things", {"type": "object"})


def test_pool_is_stable_and_per_tool_for_small_catalogs(catalog_file: Path) -> None:
    p = _presenter(catalog_file)
    assert p.pool == _presenter(catalog_file).pool  # same catalog, same prefix (cacheable)
    assert "- time__get_current_time: Get the current time in a timezone" in p.pool
    assert p.pool_tokens == len(p.pool.split())


def test_large_catalogs_get_a_server_pool(catalog_file: Path) -> None:
    p = _presenter(catalog_file, pool_limit=3)
    assert p.pool.startswith("Servers") and "- fs (3 tools)" in p.pool


def test_top_k_threshold_and_pinned_decide_what_is_promoted(catalog_file: Path) -> None:
    p = _presenter(catalog_file, top_k=2, threshold=0.3, pinned=("weather__get_alerts",))
    shown = p.present(
        [
            _cand("fs", "read_file", 0.9),
            _cand("fs", "write_file", 0.5),
            _cand("fs", "list_directory", 0.4),
            _cand("time", "convert_time", 0.1),
        ]
    )
    assert shown.names == ("weather__get_alerts", "fs__read_file", "fs__write_file")
    reasons = dict(shown.gated_out)
    assert reasons["fs__list_directory"] == "beyond top-k"
    assert "below threshold" in reasons["time__convert_time"]
    assert shown.phase2_tokens > 0 and shown.tokens == shown.phase1_tokens + shown.phase2_tokens


def test_full_schema_costs_more_than_the_two_phases(catalog_file: Path) -> None:
    p = _presenter(catalog_file, top_k=1)
    assert p.present([_cand("fs", "read_file", 1.0)]).phase2_tokens < p.full_schema_tokens()


def test_exports_bind_to_openai_and_anthropic(catalog_file: Path) -> None:
    shown = _presenter(catalog_file).present([_cand("fs", "read_file", 1.0)])
    assert shown.to_openai() == [
        {
            "type": "function",
            "function": {
                "name": "fs__read_file",
                "description": "read_file does things",
                "parameters": {"type": "object"},
            },
        }
    ]
    assert shown.to_anthropic()[0]["input_schema"] == {"type": "object"}


@pytest.mark.parametrize(
    ("server", "tool"),
    [("a", "b"), ("web search", "get.page"), ("s" * 40, "t" * 40), ("中文", "搜索")],
)
def test_binding_names_are_legal_and_distinct(server: str, tool: str) -> None:
    name = binding_name(server, tool)
    assert re.fullmatch(r"[A-Za-z0-9_-]{1,64}", name)
    assert name != binding_name(server, tool + "x")


def test_tool_attention_refuses_tools_not_promoted(tmp_path: Path, catalog_file: Path) -> None:
    with Router(catalog_file, store=tmp_path, embedder=HashingEmbedder()) as r:
        ta = ToolAttention(r, PresentConfig(top_k=1))
        ta.presenter.tokens = TokenCounter(_words)
        turn = ta.turn("weather forecast for a city")
        assert ta.check_call(turn.to_anthropic()[0]["name"]) is None
        assert "tool_not_available" in (ta.check_call("fs__read_file") or "")


def test_names_that_sanitise_alike_still_bind_apart() -> None:
    assert binding_name("my.srv", "t") != binding_name("my_srv", "t")
    assert binding_name("my_srv", "t") == "my_srv__t"  # legal names are kept as they are

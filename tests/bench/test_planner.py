"""Planners of the per-step agent (issue 12): oracle, clauses, llm (offline), whole."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import SMALL_CATALOG, HashingEmbedder
from toolroute.bench.planner import PLANNERS, greedy_match, oracle_text, plan_steps
from toolroute.catalog import Query, Server, Tool, catalog_from_dict
from toolroute.errors import ConfigError

SMALL = catalog_from_dict(SMALL_CATALOG)
Q = Query(
    "q",
    "read the file notes.txt and then write a summary file",
    (frozenset({("fs", "read_file")}), frozenset({("fs", "write_file")})),
    "complex",
)


def test_the_oracle_text_drops_the_server_and_tool_names() -> None:
    server = Server("word-server", "Word Server", "", ())
    tool = Tool(
        "word-server", "convert_to_pdf", "convert_to_pdf: Word Server turns a document into PDF"
    )
    text = oracle_text(tool, server)
    assert text == "turns a document into PDF"
    assert oracle_text(Tool("s", "getWeather", ""), Server("s", "S", "", ())) == "get weather"


def test_oracle_planner_writes_one_functional_text_per_group() -> None:
    (steps,) = plan_steps([Q], SMALL, "oracle")
    assert steps == (
        "Read the contents of a file from disk",
        "Write text content to a file on disk",
    )


def test_whole_planner_routes_the_request_for_every_group() -> None:
    assert plan_steps([Q], SMALL, "whole") == [(Q.text, Q.text)]


def test_clause_and_offline_llm_planners_match_each_step_to_a_clause() -> None:
    embed = HashingEmbedder().embed
    for planner in ("clauses", "llm"):
        (steps,) = plan_steps([Q], SMALL, planner, embed=embed)
        assert steps == ("read the file notes.txt", "write a summary file"), planner
    with pytest.raises(ConfigError, match="embedder"):
        plan_steps([Q], SMALL, "clauses")
    with pytest.raises(ConfigError, match="planner"):
        plan_steps([Q], SMALL, "psychic")  # type: ignore[arg-type]
    assert PLANNERS == ("whole", "oracle", "clauses", "llm")


def test_greedy_matching_takes_the_best_pair_first_and_reuses_clauses_when_out() -> None:
    sims = np.array([[0.9, 0.8], [0.95, 0.1], [0.2, 0.3]])
    assert greedy_match(sims) == [1, 0, 1]

"""Tool Attention's place: its strategy and its Alg. 1 for a Python agent loop live with the
paper; the import path the agent loop had before still names the same class."""

from __future__ import annotations

from toolroute.gateway.attention import ToolAttention as before
from toolroute.papers import tool_attention
from toolroute.papers.tool_attention.agent_loop import ToolAttention
from toolroute.route.strategy import builtin_strategies


def test_the_agent_loop_is_importable_from_where_it_was() -> None:
    assert before is ToolAttention


def test_the_papers_strategy_is_registered_from_its_package() -> None:
    assert builtin_strategies()["tool-attention"].score is tool_attention.iso_score

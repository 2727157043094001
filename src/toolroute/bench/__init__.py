"""Bench: metrics over required-tool groups, the strategy runner, tables and plots."""

from toolroute.bench.metrics import RANK_METRICS, hit_ranks, query_metrics
from toolroute.bench.report import markdown_table, write_outputs
from toolroute.bench.runner import bench

__all__ = ["RANK_METRICS", "bench", "hit_ranks", "markdown_table", "query_metrics", "write_outputs"]

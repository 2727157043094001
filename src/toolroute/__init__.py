"""toolroute: an MCP tool router that hands an agent only the few tools that will work."""

from toolroute.bench.metrics import query_metrics
from toolroute.catalog import (
    Catalog,
    Query,
    Server,
    Tool,
    demo_catalog,
    load_catalog,
    load_queries,
)
from toolroute.embed import Embedder, OnnxEmbedder, OpenAIEmbedder, SentenceTransformerEmbedder
from toolroute.errors import (
    CatalogError,
    ConfigError,
    EmbedError,
    SearchIndexError,
    StoreError,
    ToolrouteError,
)
from toolroute.index import PRESETS, DocConfig, TemplateQuestions
from toolroute.route import STRATEGIES, RouteParams
from toolroute.router import Candidate, IndexReport, Router

__all__ = [
    "PRESETS",
    "STRATEGIES",
    "Candidate",
    "Catalog",
    "CatalogError",
    "ConfigError",
    "DocConfig",
    "EmbedError",
    "Embedder",
    "IndexReport",
    "OnnxEmbedder",
    "OpenAIEmbedder",
    "Query",
    "RouteParams",
    "Router",
    "SearchIndexError",
    "SentenceTransformerEmbedder",
    "Server",
    "StoreError",
    "TemplateQuestions",
    "Tool",
    "ToolrouteError",
    "demo_catalog",
    "load_catalog",
    "load_queries",
    "query_metrics",
]

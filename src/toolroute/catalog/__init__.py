"""Catalog: servers, tools, content hashes, and the catalog/queries file loaders."""

from toolroute.catalog.loader import (
    Query,
    catalog_from_dict,
    demo_catalog,
    load_catalog,
    load_queries,
)
from toolroute.catalog.models import Catalog, Server, Tool, ToolKey, tool_hash

__all__ = [
    "Catalog",
    "Query",
    "Server",
    "Tool",
    "ToolKey",
    "catalog_from_dict",
    "demo_catalog",
    "load_catalog",
    "load_queries",
    "tool_hash",
]

import toolroute


def test_public_api_is_pinned() -> None:
    assert sorted(toolroute.__all__) == sorted(
        [
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
    )
    for name in toolroute.__all__:
        assert getattr(toolroute, name) is not None


def test_demo_catalog_opens_the_shipped_catalog_with_no_file_to_find() -> None:
    catalog = toolroute.demo_catalog()
    assert len(catalog.servers) == 11
    assert catalog.tool_count == 77
    assert "time" in {s.id for s in catalog.servers}

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
            "load_catalog",
            "load_queries",
            "query_metrics",
        ]
    )
    for name in toolroute.__all__:
        assert getattr(toolroute, name) is not None

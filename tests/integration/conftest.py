from __future__ import annotations

from pathlib import Path

import pytest

from toolroute.embed.onnx import OnnxEmbedder


@pytest.fixture(scope="session")
def onnx() -> OnnxEmbedder:
    return OnnxEmbedder()


@pytest.fixture(scope="session")
def shared_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One store for the session: the embedding cache is shared by every benchmark test."""
    return tmp_path_factory.mktemp("store")

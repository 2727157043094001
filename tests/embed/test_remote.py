"""OpenAIEmbedder against a real HTTP server on loopback speaking the /v1/embeddings shape."""

from __future__ import annotations

from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import numpy as np
import pytest

from tests.conftest import HashingEmbedder, loopback_http, read_json, reply_json
from toolroute.embed.remote import OpenAIEmbedder, SentenceTransformerEmbedder
from toolroute.errors import EmbedError

SEEN: list[dict[str, object]] = []


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = read_json(self)
        SEEN.append({"path": self.path, "auth": self.headers.get("Authorization"), **body})
        if body["model"] == "broken":
            self.send_response(500)
            self.end_headers()
            return
        vecs = HashingEmbedder().embed(body["input"])
        # Out of order on purpose: clients must sort by index.
        data = [{"index": i, "embedding": v.tolist()} for i, v in enumerate(vecs)][::-1]
        reply_json(self, 200, {"data": data})

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    SEEN.clear()
    with loopback_http(_Handler) as url:
        yield url


def test_openai_embedder_batches_orders_and_normalises(server: str) -> None:
    emb = OpenAIEmbedder(server, "m", dim=256, api_key="k", batch_size=2)
    texts = ["read a file", "write a file", "weather in Rome"]
    got = emb.embed(texts)
    assert np.allclose(got, HashingEmbedder().embed(texts), atol=1e-6)
    assert [s["path"] for s in SEEN] == ["/v1/embeddings", "/v1/embeddings"]
    assert SEEN[0]["auth"] == "Bearer k" and SEEN[0]["input"] == texts[:2]
    assert emb.model_id.endswith(":m")


def test_openai_embedder_errors_are_embed_errors(server: str) -> None:
    with pytest.raises(EmbedError, match="HTTP 500"):
        OpenAIEmbedder(server, "broken", dim=256).embed(["x"])
    with pytest.raises(EmbedError, match="dimension 256, expected 8"):
        OpenAIEmbedder(server, "m", dim=8).embed(["x"])


def test_unreachable_endpoint_is_an_embed_error() -> None:
    emb = OpenAIEmbedder("http://127.0.0.1:9/v1", "m", dim=4, timeout_s=2)
    with pytest.raises(EmbedError, match="127.0.0.1:9"):
        emb.embed(["x"])


def test_sentence_transformers_absent_gives_an_install_hint() -> None:
    pytest.importorskip("numpy")
    try:
        import sentence_transformers  # noqa: F401
    except ImportError:
        with pytest.raises(EmbedError, match=r"pip install 'toolroute\[st\]'"):
            SentenceTransformerEmbedder("all-MiniLM-L6-v2")
    else:
        pytest.skip("sentence-transformers is installed; the hub-loading path is exercised")

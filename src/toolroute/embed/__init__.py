"""Embedders: the protocol, the offline ONNX default, hub/server implementations, the cache."""

from toolroute.embed.base import Embedder, Matrix, SpanEmbedder, l2_normalise
from toolroute.embed.cache import CachedEmbedder
from toolroute.embed.onnx import DEFAULT_MODEL_ID, OnnxEmbedder
from toolroute.embed.remote import OpenAIEmbedder, SentenceTransformerEmbedder

__all__ = [
    "DEFAULT_MODEL_ID",
    "CachedEmbedder",
    "Embedder",
    "Matrix",
    "OnnxEmbedder",
    "OpenAIEmbedder",
    "SentenceTransformerEmbedder",
    "SpanEmbedder",
    "l2_normalise",
]

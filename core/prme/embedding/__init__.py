"""Embedders: offline all-MiniLM-L6-v2 (onnxruntime), Bedrock Titan, and a hashing test double."""

from __future__ import annotations

from prme.embedding.hashing import HashingEmbedder
from prme.embedding.minilm import MiniLmEmbedder

__all__ = ["HashingEmbedder", "MiniLmEmbedder"]

"""Amazon Bedrock embeddings (Titan Text Embeddings v2): the embedder of the AWS deployment."""

from __future__ import annotations

import contextvars
import json
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from numpy.typing import NDArray

from prme.embedding.segments import embed_segmented_each
from prme.errors import EmbeddingUnavailableError
from prme.model.search import EmbeddingModelInfo


class BedrockEmbedder:
    """One InvokeModel call per text (Titan v2 embeds one input per request), normalised.

    The texts of one call are requested concurrently (up to `max_concurrency` at a time), so
    a record embedded as several sentences waits about as long as for one request. boto3
    clients are safe to share between threads."""

    def __init__(
        self, client: Any, model_id: str, dimension: int, *, max_concurrency: int = 8
    ) -> None:
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        self._client = client
        self._model_id = model_id
        self._info = EmbeddingModelInfo(name=model_id, version="bedrock", dimension=dimension)
        # Threads start on first use; one pool per embedder, shared by its calls.
        self._pool = ThreadPoolExecutor(max_workers=max_concurrency, thread_name_prefix="bedrock")
        self._max_concurrency = max_concurrency

    @property
    def model(self) -> EmbeddingModelInfo:
        return self._info

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        out = np.zeros((len(texts), self._info.dimension), dtype=np.float32)
        if len(texts) == 1 or self._max_concurrency == 1:
            vectors = [self._embed_one(text) for text in texts]
        else:
            # Each task runs in a copy of the caller's context, so the request's deadline
            # (a context variable) bounds the pool's calls too. Results keep the input order
            # and the first failure in that order is re-raised.
            futures = [
                self._pool.submit(contextvars.copy_context().run, self._embed_one, text)
                for text in texts
            ]
            vectors = [future.result() for future in futures]
        for row, vector in enumerate(vectors):
            out[row] = vector
        return out

    def _embed_one(self, text: str) -> NDArray[np.float32]:
        from botocore.exceptions import BotoCoreError, ClientError

        body = {"inputText": text, "dimensions": self._info.dimension, "normalize": True}
        try:
            response = self._client.invoke_model(
                modelId=self._model_id,
                body=json.dumps(body),
                contentType="application/json",
                accept="application/json",
            )
            vector = json.loads(response["body"].read())["embedding"]
        except (ClientError, BotoCoreError, KeyError, ValueError) as exc:
            # Provider text stays in the chained cause (logs), never in the message.
            raise EmbeddingUnavailableError() from exc
        if len(vector) != self._info.dimension:
            raise EmbeddingUnavailableError("Embedding model returned an unexpected dimension")
        values = np.asarray(vector, dtype=np.float32)
        norm = float(np.linalg.norm(values))
        if norm:
            values /= norm
        return values

    def embed_segmented(self, groups: Sequence[Sequence[str]]) -> NDArray[np.float32]:
        # One request per segment, sent concurrently: splitting a record into sentences
        # multiplies its requests, not its wait (PRME_VECTOR_SEGMENTS=whole keeps one).
        return embed_segmented_each(self.embed, groups)

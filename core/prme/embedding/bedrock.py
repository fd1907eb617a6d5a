"""Amazon Bedrock embeddings (Titan Text Embeddings v2): the embedder of the AWS deployment."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from prme.embedding.segments import embed_segmented_each
from prme.errors import EmbeddingUnavailableError
from prme.model.search import EmbeddingModelInfo


class BedrockEmbedder:
    """One InvokeModel call per text (Titan v2 embeds one input per request), normalised."""

    def __init__(self, client: Any, model_id: str, dimension: int) -> None:
        self._client = client
        self._model_id = model_id
        self._info = EmbeddingModelInfo(name=model_id, version="bedrock", dimension=dimension)

    @property
    def model(self) -> EmbeddingModelInfo:
        return self._info

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        from botocore.exceptions import BotoCoreError, ClientError

        out = np.zeros((len(texts), self._info.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
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
            out[row] = values / norm if norm else values
        return out

    def embed_segmented(self, groups: Sequence[Sequence[str]]) -> NDArray[np.float32]:
        # One request per segment: splitting a record into sentences multiplies its requests
        # (PRME_VECTOR_SEGMENTS=whole keeps one per record).
        return embed_segmented_each(self.embed, groups)

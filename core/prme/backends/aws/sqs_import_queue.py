"""`SqsImportQueue`: sends the chunks of a bulk import to the ingest queue, one message each.

A message carries the chunk's items; the consumer believes it only when the job saved by
the API lists that chunk with the same digest (`prme.engine.imports`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from prme.errors import StorageUnavailableError
from prme.model.imports import ImportChunkMessage

_BATCH_ENTRIES = 10  # SQS's SendMessageBatch limit
# A batch's messages together may not pass SQS's message size limit (262,144 bytes).
_BATCH_BYTES = 250_000


def _batches(bodies: Sequence[str]) -> list[list[str]]:
    batches: list[list[str]] = []
    size = 0
    for body in bodies:
        weight = len(body.encode("utf-8"))
        if not batches or len(batches[-1]) >= _BATCH_ENTRIES or size + weight > _BATCH_BYTES:
            batches.append([])
            size = 0
        batches[-1].append(body)
        size += weight
    return batches


class SqsImportQueue:
    """The queue's URL is resolved at the first send: only the function that submits imports
    (the api) is granted it, not every function that opens the backend."""

    def __init__(self, client: Any, queue_name: str) -> None:
        self._client = client
        self._queue_name = queue_name
        self._queue_url: str | None = None

    def _url(self) -> str:
        if self._queue_url is None:
            try:
                answer = self._client.get_queue_url(QueueName=self._queue_name)
            except (ClientError, BotoCoreError) as exc:
                raise StorageUnavailableError("import queue unavailable") from exc
            self._queue_url = str(answer["QueueUrl"])
        return self._queue_url

    def send_chunks(self, chunks: Sequence[ImportChunkMessage]) -> None:
        url = self._url()
        for batch in _batches([chunk.body() for chunk in chunks]):
            entries = [{"Id": str(i), "MessageBody": body} for i, body in enumerate(batch)]
            try:
                response = self._client.send_message_batch(QueueUrl=url, Entries=entries)
            except (ClientError, BotoCoreError) as exc:
                raise StorageUnavailableError("import queue unavailable") from exc
            if response.get("Failed"):
                raise StorageUnavailableError("import queue refused some chunks")

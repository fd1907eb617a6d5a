"""`SqsWorkQueue`: announces pending work on SQS after the ledger commit (transactional outbox).

A message only points at a work item saved in the ledger, so a lost send loses nothing:
the sweeper re-announces overdue pending items.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from prme.engine.work_refs import WorkRef
from prme.errors import StorageUnavailableError
from prme.model.records import WorkItem

_BATCH = 10  # SQS's SendMessageBatch limit


class SqsWorkQueue:
    """Materialization and extraction work go to their own queues (different timeouts)."""

    def __init__(self, client: Any, queue_urls: str | Mapping[str, str]) -> None:
        self._client = client
        if isinstance(queue_urls, str):
            queue_urls = {"materialize": queue_urls, "extract": queue_urls}
        self._queue_urls = dict(queue_urls)

    def enqueue(self, items: Sequence[WorkItem]) -> None:
        for family in ("materialize", "extract"):
            mine = [item for item in items if item.kind.family == family]
            if mine:
                self._send(self._queue_urls[family], mine)

    def _send(self, queue_url: str, items: Sequence[WorkItem]) -> None:
        for start in range(0, len(items), _BATCH):
            chunk = items[start : start + _BATCH]
            entries = [
                {"Id": str(i), "MessageBody": json.dumps(WorkRef.of(item).to_message())}
                for i, item in enumerate(chunk)
            ]
            try:
                response = self._client.send_message_batch(QueueUrl=queue_url, Entries=entries)
            except (ClientError, BotoCoreError) as exc:
                raise StorageUnavailableError("work queue unavailable") from exc
            if response.get("Failed"):
                raise StorageUnavailableError("work queue refused some messages")

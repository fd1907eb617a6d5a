"""`SqsWorkQueue`: announces pending work on SQS after the ledger commit (transactional outbox).

A message only points at a work item saved in the ledger, so a lost send loses nothing:
the sweeper re-announces overdue pending items.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from prme.engine.work_refs import WorkRef
from prme.errors import StorageUnavailableError
from prme.model.records import WorkItem

_BATCH = 10  # SQS's SendMessageBatch limit


class SqsWorkQueue:
    def __init__(self, client: Any, queue_url: str) -> None:
        self._client = client
        self._queue_url = queue_url

    def enqueue(self, items: Sequence[WorkItem]) -> None:
        for start in range(0, len(items), _BATCH):
            chunk = items[start : start + _BATCH]
            entries = [
                {"Id": str(i), "MessageBody": json.dumps(WorkRef.of(item).to_message())}
                for i, item in enumerate(chunk)
            ]
            try:
                response = self._client.send_message_batch(
                    QueueUrl=self._queue_url, Entries=entries
                )
            except (ClientError, BotoCoreError) as exc:
                raise StorageUnavailableError("work queue unavailable") from exc
            if response.get("Failed"):
                raise StorageUnavailableError("work queue refused some messages")

"""`MemoryClient`: the embedded engine in-process, with the operations of the HTTP routes."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, TypeVar

from pydantic import ValidationError

from prme.composition import open_backend
from prme.engine.extraction import IngestResult
from prme.engine.identity import Principal, resolve_owner
from prme.engine.ingest_fast import FastIngestResult
from prme.engine.materialize import ProcessingReport
from prme.engine.store import StoreResult
from prme.errors import InvalidRequestError
from prme.model.bindings import MemoryValueBinding
from prme.model.enums import ProcessingStatus
from prme.model.inputs import FastIngestInput, IngestInput, RetrieveInput, StoreInput
from prme.model.records import Event, MemoryNode, OwnerKey, WorkItem
from prme.retrieval.receipts import RetrievalReceipt
from prme.retrieval.results import RetrievalResponse
from prme.settings import Settings

DEFAULT_USER_ID = "default"


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


_Input = TypeVar("_Input", StoreInput, RetrieveInput, IngestInput, FastIngestInput)


def _validated(model: type[_Input], fields: dict[str, Any]) -> _Input:
    try:
        return model.model_validate({k: v for k, v in fields.items() if v is not UNSET})
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = tuple(str(part) for part in first["loc"])
        raise InvalidRequestError(f"{'.'.join(loc)}: {first['msg']}", field=loc) from None


class MemoryClient:
    """Long-term memory in a local directory. Use it as a context manager.

    Calls act for `user_id` (default: "default"); the embedded tenant is `local`.
    """

    def __init__(self, path: str | Path = "./memory", *, settings: Settings | None = None) -> None:
        self._settings = settings or Settings()
        # The embedded default uses `path`; PRME_BACKEND=aws talks to the configured AWS instead.
        self._backend = open_backend(self._settings, Path(path))
        self._engine = self._backend.engine
        self._principal = Principal.operator(
            self._settings.tenant_id, default_owner_id=DEFAULT_USER_ID
        )

    def __enter__(self) -> MemoryClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._backend.close()

    def _owner(self, user_id: str | None) -> OwnerKey:
        return resolve_owner(self._principal, user_id)

    def store(
        self,
        content: str,
        *,
        retrieval_content: str | None = None,
        value_bindings: Sequence[MemoryValueBinding] | None = None,
        role: str = "user",
        speaker: str | None = None,
        user_id: str | None = None,
        session_id: str | None = None,
        node_type: str | None = None,
        scope: str | None = None,
        metadata: dict[str, Any] | None = None,
        epistemic_type: str | None = None,
        source_type: str | None = None,
        confidence: float | None = None,
        event_time: datetime | str | None = None,
        ttl_days: int | None = UNSET,
    ) -> StoreResult:
        """Store a memory. Omit ttl_days for the node type's default; None disables expiry."""
        request = _validated(
            StoreInput,
            {
                "content": content,
                "retrieval_content": retrieval_content,
                "value_bindings": list(value_bindings) if value_bindings is not None else None,
                "role": role,
                "speaker": speaker,
                "session_id": session_id,
                "node_type": node_type,
                "scope": scope,
                "metadata": metadata,
                "epistemic_type": epistemic_type,
                "source_type": source_type,
                "confidence": confidence,
                "event_time": event_time,
                "ttl_days": ttl_days,
            },
        )
        return self._engine.store(self._owner(user_id), request)

    def retrieve(
        self,
        query: str,
        *,
        user_id: str | None = None,
        limit: int | None = None,
        token_budget: int | None = None,
        min_score: float | None = None,
        max_per_source: int | None = None,
        max_per_evidence: int | None = None,
        mode: str | None = None,
        filters: dict[str, Any] | None = None,
        reference_time: datetime | str | None = None,
        context_format: Literal["reader", "auditable"] = "reader",
    ) -> RetrievalResponse:
        request = _validated(
            RetrieveInput,
            {
                "query": query,
                "limit": limit,
                "token_budget": token_budget,
                "min_score": min_score,
                "max_per_source": max_per_source,
                "max_per_evidence": max_per_evidence,
                "mode": mode,
                "filters": filters,
                "reference_time": reference_time,
                "context_format": context_format,
            },
        )
        return self._engine.retrieve(self._owner(user_id), request)

    def get_event(self, event_id: str, *, user_id: str | None = None) -> Event:
        return self._engine.get_event(self._owner(user_id), event_id)

    def get_event_nodes(self, event_id: str, *, user_id: str | None = None) -> list[MemoryNode]:
        return self._engine.list_event_nodes(self._owner(user_id), event_id)

    def get_node(self, node_id: str, *, user_id: str | None = None) -> MemoryNode:
        return self._engine.get_node(self._owner(user_id), node_id)

    def get_processing_status(
        self, event_id: str, *, user_id: str | None = None
    ) -> tuple[ProcessingStatus, list[WorkItem]]:
        return self._engine.get_processing_status(self._owner(user_id), event_id)

    def get_retrieval_receipt(
        self, request_id: str, *, user_id: str | None = None
    ) -> RetrievalReceipt:
        return self._engine.get_receipt(self._owner(user_id), request_id)

    def process_pending(
        self, *, user_id: str | None = None, budget_ms: int | None = None
    ) -> ProcessingReport:
        return self._engine.process_pending(self._owner(user_id), budget_ms=budget_ms)

    def ingest(
        self,
        content: str,
        *,
        role: str = "user",
        speaker: str | None = None,
        user_id: str | None = None,
        session_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        scope: str | None = None,
        event_time: datetime | str | None = None,
        wait_for_extraction: bool = False,
        idempotency_key: str | None = None,
    ) -> IngestResult:
        """Keep a message verbatim and extract grounded memories from it."""
        request = _validated(
            IngestInput,
            {
                "content": content,
                "role": role,
                "speaker": speaker,
                "session_id": session_id,
                "metadata": metadata,
                "scope": scope,
                "event_time": event_time,
                "wait_for_extraction": wait_for_extraction,
            },
        )
        return self._engine.ingest(self._owner(user_id), request, idempotency_key=idempotency_key)

    def ingest_fast(
        self,
        items: Sequence[dict[str, Any]],
        *,
        user_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> FastIngestResult:
        """Commit an ordered batch of raw sources; call process_pending until none is left."""
        request = _validated(FastIngestInput, {"items": list(items)})
        return self._engine.ingest_fast(
            self._owner(user_id), request, idempotency_key=idempotency_key
        )

    def get_extraction_status(
        self, event_id: str, *, user_id: str | None = None
    ) -> tuple[ProcessingStatus, list[WorkItem]]:
        return self._engine.get_extraction_status(self._owner(user_id), event_id)

    def retry_extraction(
        self, event_id: str, *, user_id: str | None = None
    ) -> tuple[ProcessingStatus, list[WorkItem]]:
        return self._engine.retry_extraction(self._owner(user_id), event_id)

    def process_extractions(
        self, *, user_id: str | None = None, budget_ms: int | None = None
    ) -> ProcessingReport:
        return self._engine.process_extractions(self._owner(user_id), budget_ms=budget_ms)

    def promote(
        self, node_id: str, *, user_id: str | None = None, idempotency_key: str | None = None
    ) -> MemoryNode:
        return self._engine.promote(self._owner(user_id), node_id, idempotency_key=idempotency_key)

    def archive(
        self, node_id: str, *, user_id: str | None = None, idempotency_key: str | None = None
    ) -> MemoryNode:
        return self._engine.archive(self._owner(user_id), node_id, idempotency_key=idempotency_key)

    def reinforce(
        self,
        node_id: str,
        *,
        evidence_id: str | None = None,
        user_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> MemoryNode:
        return self._engine.reinforce(
            self._owner(user_id), node_id, evidence_id=evidence_id, idempotency_key=idempotency_key
        )

    def supersede(
        self,
        old_node_id: str,
        new_node_id: str,
        *,
        evidence_id: str | None = None,
        user_id: str | None = None,
    ) -> tuple[MemoryNode, MemoryNode]:
        return self._engine.supersede(
            self._owner(user_id),
            old_node_id=old_node_id,
            new_node_id=new_node_id,
            evidence_id=evidence_id,
        )

    # -- relevance feedback and answer citations --

    # -- alias proposals and reviews --

    # -- grounded quantity aggregation --

"""`MemoryClient`: the embedded engine in-process, one method per owner operation of the table."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, TextIO, TypeVar

from pydantic import ValidationError

from prme.composition import open_backend
from prme.engine.aliases import AliasScanReport
from prme.engine.identity import Principal, resolve_owner
from prme.engine.ingest import IngestResult
from prme.engine.ingest_fast import FastIngestResult
from prme.engine.manage import DEFAULT_PAGE as DEFAULT_LIST_PAGE
from prme.engine.reindex import ReindexProgress, ReindexReport
from prme.engine.store import StoreResult
from prme.engine.work_dispatch import ProcessingReport
from prme.errors import InvalidRequestError, require_input_policy
from prme.export_files import ImportTotals, TransferProgress, read_export, write_export
from prme.model import listings
from prme.model.aliases import AliasDecision, AliasProposalItem, AliasStatus
from prme.model.bindings import MemoryValueBinding, ToolArgumentResolution
from prme.model.enums import ProcessingStatus, Scope
from prme.model.erasure import OwnerErasure
from prme.model.feedback import (
    AnswerCitationInput,
    AnswerCitationPage,
    AnswerCitationRecord,
    RelevanceInput,
    RelevancePage,
    RelevanceRecord,
    ReplayReport,
)
from prme.model.inputs import FastIngestInput, IngestInput, RetrieveInput, StoreInput
from prme.model.portability import (
    EXPORT_FORMAT_VERSION,
    ExportPage,
    ImportBatch,
    ImportReport,
    LineError,
)
from prme.model.quantities import (
    QuantityAggregation,
    QuantityAggregationQuery,
    QuantityQuestionAnswer,
)
from prme.model.records import Event, MemoryEdge, MemoryNode, OwnerKey, WorkItem
from prme.operations import client_docstring
from prme.retrieval.receipts import RetrievalReceipt
from prme.retrieval.results import RetrievalResponse
from prme.settings import Settings

DEFAULT_USER_ID = "default"
# The request models say "the authenticated owner"; a client has no key, only its default user.
_USER_ID_HELP = f"Whose memory; omitted means the client's default user, {DEFAULT_USER_ID!r}"


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


_Input = TypeVar(
    "_Input",
    StoreInput,
    RetrieveInput,
    IngestInput,
    FastIngestInput,
    RelevanceInput,
    AnswerCitationInput,
    listings.NodeFilter,
    listings.EventFilter,
    ImportBatch,
)


def _validated(model: type[_Input], fields: dict[str, Any]) -> _Input:
    try:
        return model.model_validate({k: v for k, v in fields.items() if v is not UNSET})
    except ValidationError as exc:
        raise InvalidRequestError.from_validation(exc) from None


def _from_arguments(model: type[_Input], arguments: dict[str, Any]) -> _Input:
    """The request a method's arguments make: every argument named like a field of `model`
    (an UNSET one left out), so the field list is the model's alone."""
    return _validated(model, {k: v for k, v in arguments.items() if k in model.model_fields})


_Method = TypeVar("_Method", bound=Callable[..., Any])


def _operation(name: str) -> Callable[[_Method], _Method]:
    """Document a method as the client's form of operation `name`: the table's text, the
    method's own note, and the descriptions of the request model's fields."""

    def document(method: _Method) -> _Method:
        method.__doc__ = client_docstring(name, method.__doc__, user_id=_USER_ID_HELP)
        return method

    return document


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

    @_operation("store")
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
        request = _from_arguments(
            StoreInput,
            {
                **locals(),
                "value_bindings": list(value_bindings) if value_bindings is not None else None,
            },
        )
        return self._engine.store(self._owner(user_id), request)

    @_operation("retrieve")
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
        ranking_multipliers: dict[str, float] | None = None,
    ) -> RetrievalResponse:
        request = _from_arguments(RetrieveInput, locals())
        return self._engine.retrieve(self._owner(user_id), request)

    @_operation("get_event")
    def get_event(self, event_id: str, *, user_id: str | None = None) -> Event:
        return self._engine.get_event(self._owner(user_id), event_id)

    @_operation("get_event_nodes")
    def get_event_nodes(self, event_id: str, *, user_id: str | None = None) -> list[MemoryNode]:
        return self._engine.get_event_nodes(self._owner(user_id), event_id)

    @_operation("get_node")
    def get_node(self, node_id: str, *, user_id: str | None = None) -> MemoryNode:
        return self._engine.get_node(self._owner(user_id), node_id)

    @_operation("list_nodes")
    def list_nodes(
        self,
        *,
        node_type: str | None = None,
        lifecycle_state: str | None = None,
        scope: str | None = None,
        session_id: str | None = None,
        include_inactive: bool = False,
        limit: int = DEFAULT_LIST_PAGE,
        after_id: str | None = None,
        user_id: str | None = None,
    ) -> listings.NodePage:
        """Pass the page's next_after_id as after_id until it is None."""
        node_filter = _from_arguments(listings.NodeFilter, locals())
        return self._engine.list_nodes(
            self._owner(user_id), node_filter, limit=limit, after_id=after_id
        )

    @_operation("list_events")
    def list_events(
        self,
        *,
        session_id: str | None = None,
        role: str | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        limit: int = DEFAULT_LIST_PAGE,
        after_id: str | None = None,
        user_id: str | None = None,
    ) -> listings.EventPage:
        """Pass the page's next_after_id as after_id until it is None."""
        event_filter = _from_arguments(listings.EventFilter, locals())
        return self._engine.list_events(
            self._owner(user_id), event_filter, limit=limit, after_id=after_id
        )

    @_operation("delete_memory")
    def delete_memory(
        self, event_id: str, *, user_id: str | None = None
    ) -> listings.MemoryDeletion:
        return self._engine.delete_memory(self._owner(user_id), event_id)

    @_operation("get_stats")
    def get_stats(self, *, user_id: str | None = None) -> listings.OwnerStats:
        return self._engine.get_stats(self._owner(user_id))

    @_operation("export_owner")
    def export_owner(self, *, cursor: str | None = None, user_id: str | None = None) -> ExportPage:
        """`export_to` writes a whole export file."""
        return self._engine.export_owner(self._owner(user_id), cursor)

    @_operation("import_records")
    def import_records(
        self,
        records: Sequence[dict[str, Any]],
        *,
        version: int = EXPORT_FORMAT_VERSION,
        first_line: int = 2,
        user_id: str | None = None,
    ) -> ImportReport:
        """`import_from` imports a whole export file."""
        batch = _validated(
            ImportBatch, {"records": list(records), "version": version, "first_line": first_line}
        )
        return self._engine.import_records(self._owner(user_id), batch)

    def export_to(
        self, out: TextIO, *, user_id: str | None = None, progress: TransferProgress | None = None
    ) -> int:
        """Write the user's whole export as NDJSON to `out`; returns the records written.
        `progress(done, total)` is called after each page."""
        owner = self._owner(user_id)
        return write_export(lambda cursor: self._engine.export_owner(owner, cursor), out, progress)

    def import_from(
        self,
        lines: Iterable[str],
        *,
        user_id: str | None = None,
        progress: TransferProgress | None = None,
    ) -> ImportTotals:
        """Import an export file (its lines, e.g. an open file) into the user's memory, a batch
        at a time. Raises LineError for a line that is not a record (the batches before it are
        written; importing the file again skips them). `progress(done, total)` follows each
        batch."""
        owner = self._owner(user_id)
        try:
            return read_export(lines, lambda b: self._engine.import_records(owner, b), progress)
        except LineError as exc:
            raise InvalidRequestError(str(exc)) from None

    @_operation("erase_owner")
    def erase_owner(self, *, confirm: str, user_id: str | None = None) -> OwnerErasure:
        return self._engine.erase_owner(self._owner(user_id), confirm=confirm)

    @_operation("get_processing_status")
    def get_processing_status(
        self, event_id: str, *, user_id: str | None = None
    ) -> tuple[ProcessingStatus, list[WorkItem]]:
        return self._engine.get_processing_status(self._owner(user_id), event_id)

    @_operation("get_retrieval_receipt")
    def get_retrieval_receipt(
        self, request_id: str, *, user_id: str | None = None
    ) -> RetrievalReceipt:
        return self._engine.get_retrieval_receipt(self._owner(user_id), request_id)

    @_operation("process_materializations")
    def process_materializations(
        self, *, user_id: str | None = None, budget_ms: int | None = None
    ) -> ProcessingReport:
        return self._engine.process_materializations(self._owner(user_id), budget_ms=budget_ms)

    # The name before the operations table gave every surface one name; kept for callers.
    process_pending = process_materializations

    @_operation("reindex")
    def reindex(
        self, *, user_id: str | None = None, progress: ReindexProgress | None = None
    ) -> ReindexReport:
        """Re-embed and re-index every record of the user with the current embedder and
        vector settings (needed after changing PRME_MINILM_PRECISION, PRME_VECTOR_*).
        `progress(done, total)` is called after each batch."""
        return self._engine.reindex(self._owner(user_id), progress=progress)

    @_operation("ingest")
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
        request = _from_arguments(IngestInput, locals())
        return self._engine.ingest(self._owner(user_id), request, idempotency_key=idempotency_key)

    @_operation("ingest_fast")
    def ingest_fast(
        self,
        items: Sequence[dict[str, Any]],
        *,
        user_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> FastIngestResult:
        """Commit an ordered batch of raw sources; call process_materializations until none is left."""
        request = _validated(FastIngestInput, {"items": list(items)})
        return self._engine.ingest_fast(
            self._owner(user_id), request, idempotency_key=idempotency_key
        )

    @_operation("get_extraction_status")
    def get_extraction_status(
        self, event_id: str, *, user_id: str | None = None
    ) -> tuple[ProcessingStatus, list[WorkItem]]:
        return self._engine.get_extraction_status(self._owner(user_id), event_id)

    @_operation("retry_extraction")
    def retry_extraction(
        self, event_id: str, *, user_id: str | None = None
    ) -> tuple[ProcessingStatus, list[WorkItem]]:
        return self._engine.retry_extraction(self._owner(user_id), event_id)

    @_operation("process_extractions")
    def process_extractions(
        self, *, user_id: str | None = None, budget_ms: int | None = None
    ) -> ProcessingReport:
        return self._engine.process_extractions(self._owner(user_id), budget_ms=budget_ms)

    @_operation("promote")
    def promote(
        self, node_id: str, *, user_id: str | None = None, idempotency_key: str | None = None
    ) -> MemoryNode:
        return self._engine.promote(self._owner(user_id), node_id, idempotency_key=idempotency_key)

    @_operation("archive")
    def archive(
        self, node_id: str, *, user_id: str | None = None, idempotency_key: str | None = None
    ) -> MemoryNode:
        return self._engine.archive(self._owner(user_id), node_id, idempotency_key=idempotency_key)

    @_operation("reinforce")
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

    @_operation("supersede")
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

    @_operation("record_relevance")
    def record_relevance(
        self,
        request_id: str,
        labels: dict[str, bool],
        *,
        feedback_id: str | None = None,
        surface: Literal["results", "context"] = "results",
        method: Literal["explicit_user", "structured_evaluation"] = "explicit_user",
        user_id: str | None = None,
    ) -> RelevanceRecord:
        request = _from_arguments(RelevanceInput, locals())
        return self._engine.record_relevance(self._owner(user_id), request)

    @_operation("get_relevance")
    def get_relevance(self, feedback_id: str, *, user_id: str | None = None) -> RelevanceRecord:
        return self._engine.get_relevance(self._owner(user_id), feedback_id)

    @_operation("list_relevance")
    def list_relevance(
        self, *, limit: int = 100, after_id: str | None = None, user_id: str | None = None
    ) -> RelevancePage:
        return self._engine.list_relevance(self._owner(user_id), limit=limit, after_id=after_id)

    @_operation("record_answer_citations")
    def record_answer_citations(
        self,
        request_id: str,
        answer_id: str,
        cited_node_ids: Sequence[str],
        *,
        method: Literal["model_reported", "application_verified", "human_verified"],
        citation_id: str | None = None,
        answer_sha256: str | None = None,
        user_id: str | None = None,
    ) -> AnswerCitationRecord:
        request = _from_arguments(
            AnswerCitationInput, {**locals(), "cited_node_ids": list(cited_node_ids)}
        )
        return self._engine.record_answer_citations(self._owner(user_id), request)

    @_operation("get_answer_citations")
    def get_answer_citations(
        self, citation_id: str, *, user_id: str | None = None
    ) -> AnswerCitationRecord:
        return self._engine.get_answer_citations(self._owner(user_id), citation_id)

    @_operation("list_answer_citations")
    def list_answer_citations(
        self, *, limit: int = 100, after_id: str | None = None, user_id: str | None = None
    ) -> AnswerCitationPage:
        return self._engine.list_answer_citations(
            self._owner(user_id), limit=limit, after_id=after_id
        )

    @_operation("replay_retrieval")
    def replay_retrieval(self, request_id: str, *, user_id: str | None = None) -> ReplayReport:
        return self._engine.replay_retrieval(self._owner(user_id), request_id)

    @_operation("resolve_tool_arguments")
    def resolve_tool_arguments(
        self, request_id: str, arguments: dict[str, Any], *, user_id: str | None = None
    ) -> ToolArgumentResolution:
        """Swap visible presentation values for their lookups, as saved with that retrieval."""
        require_input_policy(arguments, where="arguments")
        return self._engine.resolve_tool_arguments(self._owner(user_id), request_id, arguments)

    # -- alias proposals and reviews --

    @staticmethod
    def _check_choice(kind: type[StrEnum], value: str | None, field: str) -> None:
        allowed = [member.value for member in kind]
        if value is not None and value not in allowed:
            raise InvalidRequestError(
                f"{field} must be one of {', '.join(allowed)}", field=(field,)
            )

    @_operation("propose_aliases")
    def propose_aliases(self, *, user_id: str | None = None) -> AliasScanReport:
        """Scan this user's entity names and journal new alias proposals (never a merge)."""
        return self._engine.propose_aliases(self._owner(user_id))

    @_operation("list_alias_proposals")
    def list_alias_proposals(
        self,
        *,
        status: str | None = None,
        scope: str | None = None,
        limit: int = 100,
        user_id: str | None = None,
    ) -> list[AliasProposalItem]:
        self._check_choice(AliasStatus, status, "status")
        self._check_choice(Scope, scope, "scope")
        return self._engine.list_alias_proposals(
            self._owner(user_id),
            status=AliasStatus(status) if status is not None else None,
            scope=Scope(scope) if scope is not None else None,
            limit=limit,
        )

    @_operation("review_alias_proposal")
    def review_alias_proposal(
        self,
        proposal_operation_id: str,
        *,
        decision: str,
        reviewer_id: str,
        reason: str | None = None,
        user_id: str | None = None,
    ) -> AliasProposalItem:
        """Accept (a verified alias_of link) or reject (with a reason) one proposal."""
        self._check_choice(AliasDecision, decision, "decision")
        return self._engine.review_alias_proposal(
            self._owner(user_id),
            proposal_operation_id,
            actor=self._principal,
            decision=AliasDecision(decision),
            reviewer_id=reviewer_id,
            reason=reason,
        )

    @_operation("get_node_edges")
    def get_node_edges(self, node_id: str, *, user_id: str | None = None) -> list[MemoryEdge]:
        return self._engine.get_node_edges(self._owner(user_id), node_id)

    # -- grounded quantity aggregation --
    @_operation("aggregate_quantities")
    def aggregate_quantities(
        self,
        query: QuantityAggregationQuery | dict[str, Any],
        *,
        user_id: str | None = None,
    ) -> QuantityAggregation:
        """Exact per-unit totals of the extracted quantities that match `query` and still hold."""
        if not isinstance(query, QuantityAggregationQuery):
            try:
                query = QuantityAggregationQuery.model_validate(query)
            except ValidationError as exc:
                raise InvalidRequestError.from_validation(exc, prefix=("query",)) from None
        return self._engine.aggregate_quantities(self._owner(user_id), query)

    @_operation("aggregate_quantities_text")
    def aggregate_quantities_text(
        self, question: str, *, user_id: str | None = None
    ) -> QuantityQuestionAnswer:
        """Answer one supported question shape; otherwise an unsupported plan, memory unread."""
        return self._engine.aggregate_quantities_text(self._owner(user_id), question)

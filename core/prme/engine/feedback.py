"""Relevance judgments, answer citations and receipt replay: records about one saved retrieval.

Every record is validated against the saved receipt only (never the live graph), journaled
under a prefix-namespaced id, and returned as first written on an identical retry.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from prme.engine.deps import EngineDeps
from prme.engine.journal import list_journal, list_journal_of_subject, read_journal
from prme.engine.reads import get_receipt, get_receipt_record
from prme.errors import BadRequestError, ConflictError, InvalidRequestError, NotFoundError
from prme.model.bindings import (
    MemoryValueBinding,
    SavedValueBinding,
    ToolArgumentResolution,
    VisibleValueBinding,
)
from prme.model.feedback import (
    AnswerCitationInput,
    AnswerCitationPage,
    AnswerCitationRecord,
    CitedEntry,
    LabelExposure,
    RelevanceInput,
    RelevancePage,
    RelevanceRecord,
    ReplayReport,
)
from prme.model.records import VALUE_BINDINGS_METADATA_KEY, JournalRecord, OwnerKey
from prme.retrieval.receipts import RetrievalReceipt
from prme.retrieval.value_bindings import bindings_from_metadata, resolve_tool_arguments

MAX_PAGE = 1000
DEFAULT_PAGE = 100
# Most records of one kind a listing of one retrieval's records reads per call on a ledger
# that cannot look them up by retrieval (DynamoDB); the embedded ledger reads only those.
SUBJECT_SCAN_LIMIT = 2000

_Record = TypeVar("_Record", RelevanceRecord, AnswerCitationRecord)
_Page = TypeVar("_Page", RelevancePage, AnswerCitationPage)


@dataclass(frozen=True)
class _Collection(Generic[_Record]):
    """One kind of record in the journal: its id prefix, operation name and payload model."""

    prefix: str
    operation: str
    model: type[_Record]
    not_found: str


RELEVANCE = _Collection(
    "relevance:", "relevance_feedback", RelevanceRecord, "Relevance record not found"
)
CITATIONS = _Collection(
    "citation:", "answer_citation", AnswerCitationRecord, "Answer citation record not found"
)


def _full_entries(receipt: RetrievalReceipt) -> dict[str, dict[str, object]]:
    """Context entries that carry their text (folded repeats only point at another entry)."""
    return {
        str(e["node_id"]): e for e in receipt.context.entries if e.get("representation") == "full"
    }


# -- relevance ---------------------------------------------------------------------------


def record_relevance(deps: EngineDeps, owner: OwnerKey, request: RelevanceInput) -> RelevanceRecord:
    feedback_id = str(request.feedback_id or uuid.UUID(deps.ids()))
    existing = _read(deps, owner, RELEVANCE, feedback_id)
    if existing is not None:
        return _same_relevance(existing, request)
    saved = get_receipt_record(deps, owner, str(request.request_id))
    receipt = RetrievalReceipt.from_payload(saved.payload)
    record = RelevanceRecord(
        feedback_id=feedback_id,
        request_id=receipt.request_id,
        user_id=owner.owner_id,
        surface=request.surface,
        method=request.method,
        labels={str(k): v for k, v in sorted(request.labels.items(), key=lambda kv: str(kv[0]))},
        exposures=_exposures(receipt, request),
        receipt_schema_version=receipt.schema_version,
        receipt_checksum=saved.checksum,
        created_at=deps.clock.now(),
    )
    return _append(
        deps,
        owner,
        RELEVANCE,
        feedback_id,
        record,
        on_existing=lambda f: _same_relevance(f, request),
    )


def _exposures(receipt: RetrievalReceipt, request: RelevanceInput) -> list[LabelExposure]:
    hashes = {c.node_id: c.content_sha256 for c in receipt.candidates}
    exposures: list[LabelExposure] = []
    if request.surface == "results":
        positions = {node_id: i + 1 for i, node_id in enumerate(receipt.returned_node_ids)}
        for node, relevant in request.labels.items():
            node_id = str(node)
            if node_id not in positions:
                raise BadRequestError(f"Label for a node the retrieval did not return: {node_id}")
            exposures.append(
                LabelExposure(
                    node_id=node_id,
                    relevant=relevant,
                    content_sha256=hashes[node_id],
                    position=positions[node_id],
                )
            )
    else:
        entries = {str(e["node_id"]): e for e in receipt.context.entries}
        for node, relevant in request.labels.items():
            node_id = str(node)
            entry = entries.get(node_id)
            if entry is None:
                raise BadRequestError(f"Label for a node that is not in the context: {node_id}")
            if relevant and entry.get("representation") != "full":
                raise BadRequestError(
                    f"A positive context label needs an entry with its content: {node_id}"
                )
            exposures.append(
                LabelExposure(
                    node_id=node_id,
                    relevant=relevant,
                    content_sha256=hashes[node_id],
                    context_ref=str(entry["ref"]),
                )
            )
    return sorted(exposures, key=lambda e: e.node_id)


def _same_relevance(first: RelevanceRecord, request: RelevanceInput) -> RelevanceRecord:
    same = (
        first.request_id == str(request.request_id)
        and first.surface == request.surface
        and first.method == request.method
        and first.labels == {str(k): v for k, v in request.labels.items()}
    )
    if not same:
        raise BadRequestError("feedback_id was already used for another judgment")
    return first


def get_relevance(deps: EngineDeps, owner: OwnerKey, feedback_id: str) -> RelevanceRecord:
    return _get(deps, owner, RELEVANCE, feedback_id)


def list_relevance(
    deps: EngineDeps,
    owner: OwnerKey,
    *,
    limit: int = DEFAULT_PAGE,
    after_id: str | None = None,
    request_id: str | None = None,
) -> RelevancePage:
    return _page(
        deps,
        owner,
        RELEVANCE,
        RelevancePage,
        limit=limit,
        after_id=after_id,
        request_id=request_id,
    )


# -- answer citations --------------------------------------------------------------------


def record_answer_citations(
    deps: EngineDeps, owner: OwnerKey, request: AnswerCitationInput
) -> AnswerCitationRecord:
    citation_id = str(request.citation_id or uuid.UUID(deps.ids()))
    existing = _read(deps, owner, CITATIONS, citation_id)
    if existing is not None:
        return _same_citation(existing, request)
    saved = get_receipt_record(deps, owner, str(request.request_id))
    receipt = RetrievalReceipt.from_payload(saved.payload)
    full = _full_entries(receipt)
    hashes = {c.node_id: c.content_sha256 for c in receipt.candidates}
    cited: list[CitedEntry] = []
    for node in request.cited_node_ids:
        node_id = str(node)
        entry = full.get(node_id)
        if entry is None:
            raise BadRequestError(
                f"Cited node is not a content-bearing entry of the saved context: {node_id}"
            )
        cited.append(
            CitedEntry(
                node_id=node_id, context_ref=str(entry["ref"]), content_sha256=hashes[node_id]
            )
        )
    record = AnswerCitationRecord(
        citation_id=citation_id,
        request_id=receipt.request_id,
        user_id=owner.owner_id,
        answer_id=request.answer_id,
        answer_sha256=request.answer_sha256,
        method=request.method,
        cited_node_ids=[c.node_id for c in cited],
        cited_entries=cited,
        no_citations=not cited,
        receipt_checksum=saved.checksum,
        context_sha256=receipt.context.context_sha256,
        created_at=deps.clock.now(),
    )
    return _append(
        deps,
        owner,
        CITATIONS,
        citation_id,
        record,
        on_existing=lambda f: _same_citation(f, request),
    )


def _same_citation(
    first: AnswerCitationRecord, request: AnswerCitationInput
) -> AnswerCitationRecord:
    same = (
        first.request_id == str(request.request_id)
        and first.answer_id == request.answer_id
        and first.answer_sha256 == request.answer_sha256
        and first.method == request.method
        and first.cited_node_ids == [str(n) for n in request.cited_node_ids]
    )
    if not same:
        raise ConflictError("citation_id was already used with other input")
    return first


def get_answer_citations(
    deps: EngineDeps, owner: OwnerKey, citation_id: str
) -> AnswerCitationRecord:
    return _get(deps, owner, CITATIONS, citation_id)


def list_answer_citations(
    deps: EngineDeps,
    owner: OwnerKey,
    *,
    limit: int = DEFAULT_PAGE,
    after_id: str | None = None,
    request_id: str | None = None,
) -> AnswerCitationPage:
    return _page(
        deps,
        owner,
        CITATIONS,
        AnswerCitationPage,
        limit=limit,
        after_id=after_id,
        request_id=request_id,
    )


# -- receipt replay ----------------------------------------------------------------------


def replay_receipt(deps: EngineDeps, owner: OwnerKey, request_id: str) -> ReplayReport:
    """Recompute a saved ranking from the receipt alone and say whether it matches."""
    record = get_receipt_record(deps, owner, request_id)
    receipt = RetrievalReceipt.from_payload(record.payload)
    replayed = receipt.replay_ranking()
    saved = receipt.saved_ranking()
    return ReplayReport(
        request_id=receipt.request_id,
        schema_version=receipt.schema_version,
        # get_receipt_record refuses a record that fails its checksum (500), so a report
        # only exists for a receipt that verified.
        receipt_checksum_valid=True,
        saved_ranking=saved,
        replayed_ranking=replayed,
        matches=replayed == saved,
        returned_node_ids=receipt.returned_node_ids,
        ranking_profile_id=receipt.config.ranking_profile_id,
    )


def resolve_saved_tool_arguments(
    deps: EngineDeps, owner: OwnerKey, request_id: str, arguments: dict[str, Any]
) -> ToolArgumentResolution:
    """The exact value-binding rule applied to a tool call made from one saved context.

    Only bindings that retrieval exposed (their presentation survived packing) take part. The
    receipt names them; their forms are read from the nodes the ledger still holds readable, so
    a memory deleted since the retrieval puts no value in (nor does an unreadable one)."""
    exposed = get_receipt(deps, owner, request_id).context.visible_value_bindings
    held = deps.ledger.get_nodes(owner, sorted({saved.node_id for saved in exposed}))
    visible = [
        VisibleValueBinding.from_binding(saved.node_id, binding)
        for saved in exposed
        if saved.node_id in held
        for binding in bindings_from_metadata(
            held[saved.node_id].metadata.get(VALUE_BINDINGS_METADATA_KEY)
        )
        if _exposes(saved, binding, held[saved.node_id].content)
    ]
    return resolve_tool_arguments(arguments, visible)


def _exposes(
    saved: SavedValueBinding | VisibleValueBinding, binding: MemoryValueBinding, content: str
) -> bool:
    if isinstance(saved, SavedValueBinding):
        return saved.exposes(binding, node_content=content)
    return saved.exposes(binding)  # a receipt saved before digests, with the forms


# -- shared journal plumbing -------------------------------------------------------------


def _request_id(value: str) -> str:
    """A retrieval's request id as receipts name it; refused as the HTTP query refuses it."""
    try:
        return str(uuid.UUID(value))
    except ValueError:
        raise InvalidRequestError(
            "request_id: Input should be a valid UUID", field=("request_id",)
        ) from None


def _read(
    deps: EngineDeps, owner: OwnerKey, kind: _Collection[_Record], record_id: str
) -> _Record | None:
    record = read_journal(deps, owner, kind.prefix + record_id)
    if record is None or record.operation != kind.operation:
        return None
    return kind.model.model_validate(record.payload)


def _get(deps: EngineDeps, owner: OwnerKey, kind: _Collection[_Record], record_id: str) -> _Record:
    found = _read(deps, owner, kind, record_id)
    if found is None:
        raise NotFoundError(kind.not_found)
    return found


def _append(
    deps: EngineDeps,
    owner: OwnerKey,
    kind: _Collection[_Record],
    record_id: str,
    record: _Record,
    *,
    on_existing: Callable[[_Record], _Record],
) -> _Record:
    journal = JournalRecord.build(
        record_id=kind.prefix + record_id,
        owner=owner,
        operation=kind.operation,
        subject_id=record.request_id,
        created_at=record.created_at,
        payload=record.model_dump(mode="json"),
    )
    try:
        deps.ledger.append_journal(journal)
    except ConflictError:
        # A concurrent call with the same id won: judge this one against what it saved.
        first = _read(deps, owner, kind, record_id)
        if first is None:
            raise
        return on_existing(first)
    return record


def _page(
    deps: EngineDeps,
    owner: OwnerKey,
    kind: _Collection[_Record],
    page_model: Callable[..., _Page],
    *,
    limit: int,
    after_id: str | None,
    request_id: str | None = None,
) -> _Page:
    if not 1 <= limit <= MAX_PAGE:
        raise InvalidRequestError(f"limit must be 1 to {MAX_PAGE}", field=("limit",))
    cursor = kind.prefix + after_id if after_id is not None else None
    if request_id is not None:
        # Journaled with the retrieval's request id as their subject.
        found, next_full = list_journal_of_subject(
            deps,
            owner,
            kind.prefix,
            _request_id(request_id),
            after_id=cursor,
            limit=limit,
            scan_limit=SUBJECT_SCAN_LIMIT,
        )
        items = [
            kind.model.model_validate(r.payload) for r in found if r.operation == kind.operation
        ]
        next_id = next_full.removeprefix(kind.prefix) if next_full is not None else None
        return page_model(items=items, next_after_id=next_id)
    # One record more than the page: the cursor is null exactly when nothing follows.
    records = list_journal(deps, owner, kind.prefix, after_id=cursor, limit=limit + 1)
    page, more = records[:limit], len(records) > limit
    items = [kind.model.model_validate(r.payload) for r in page if r.operation == kind.operation]
    next_after = page[-1].id.removeprefix(kind.prefix) if more else None
    return page_model(items=items, next_after_id=next_after)

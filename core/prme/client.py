"""`MemoryClient` and `AsyncMemoryClient`: one method per owner operation of the table, served
in-process for a directory or over HTTP for a server URL, returning the same response models.

Each method is written once, as a request builder (`_Calls`) that turns its arguments into a
`Call`; the blocking and the async client wrap every builder, so both keep its signature.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable, Coroutine, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import (
    Any,
    Concatenate,
    Literal,
    ParamSpec,
    TextIO,
    TypeVar,
    get_args,
    get_type_hints,
)

import httpx
from pydantic import BaseModel, ValidationError

from prme.client_calls import Call, InProcess
from prme.composition import Backend, open_backend
from prme.engine.aliases import AliasScanReport
from prme.engine.deadlines import pass_budget_ms
from prme.engine.identity import Principal, resolve_owner
from prme.engine.manage import DEFAULT_PAGE as DEFAULT_LIST_PAGE
from prme.engine.reindex import ReindexProgress, ReindexReport
from prme.errors import InvalidRequestError, require_input_policy
from prme.export_files import ImportTotals, TransferProgress, read_export, write_export
from prme.http import (
    assertion_schemas,
    conflict_schemas,
    graph_schemas,
    judgment_schemas,
    learning_schemas,
    schemas,
)
from prme.http.node_batch_schemas import NodeBatchRequest, NodeBatchResponse
from prme.http.organizer_schemas import OrganizeRequest
from prme.http.receipt_listing_schemas import NodeRetrievalsQuery, RetrievalListQuery
from prme.model import (
    assertions,
    erasure,
    feedback,
    imports,
    learning,
    listings,
    portability,
    quantities,
    uploads,
    usage,
)
from prme.model.bindings import MemoryValueBinding, ToolArgumentResolution
from prme.model.caller import CallerIdentity
from prme.model.conditions import ConditionInput
from prme.model.enums import Scope
from prme.model.extraction import SavedExtraction
from prme.model.graph import DEFAULT_MAX_HOPS, DEFAULT_OPERATION_LIMIT
from prme.model.inputs import RetrieveInput
from prme.model.limits import LimitsReport
from prme.model.organizer import DEFAULT_BUDGET_MS, OrganizeReport, OrganizerJob
from prme.model.quantities import QuantityAggregationQuery
from prme.model.receipt_listing import (
    DEFAULT_RETRIEVAL_PAGE,
    MAX_NODE_SCAN,
    NodeRetrievalPage,
    RetrievalPage,
)
from prme.operations import BY_NAME, Operation, Shape, client_docstring, presented
from prme.remote import AsyncHttpTransport, HttpTransport, RetryPolicy
from prme.retrieval.context_rebuild import RebuiltContext
from prme.retrieval.receipts import RetrievalReceipt
from prme.settings import Settings

__all__ = ["AsyncMemoryClient", "MemoryClient", "RetryPolicy"]

DEFAULT_USER_ID = "default"
DEFAULT_TIMEOUT_S = 30.0
# The request models say "the authenticated owner"; an embedded client has no key, only its
# default user, and a remote one acts as its key allows.
_USER_ID_HELP = (
    f"Whose memory; omitted means the client's default user: {DEFAULT_USER_ID!r} in a "
    "directory; over HTTP, the key's own user (an operator key must name one)"
)


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()

_Model = TypeVar("_Model", bound=BaseModel)
_Params = ParamSpec("_Params")
_Result = TypeVar("_Result")


def _validated(model: type[_Model], fields: dict[str, Any]) -> _Model:
    try:
        return model.model_validate({k: v for k, v in fields.items() if v is not UNSET})
    except ValidationError as exc:
        raise InvalidRequestError.from_validation(exc) from None


def _from_arguments(model: type[_Model], arguments: dict[str, Any]) -> _Model:
    """The request a method's arguments make: every argument named like a field of `model`
    (an UNSET one left out), so the field list is the model's alone."""
    return _validated(model, {k: v for k, v in arguments.items() if k in model.model_fields})


def _engine_input(model: type[_Model], body: BaseModel) -> _Model:
    """The engine's input a request body carries, as the HTTP route derives it."""
    return model.model_validate(body.model_dump(exclude={"user_id"}, exclude_unset=True))


def _processing_pass(name: str, budget_ms: int | None) -> Callable[[InProcess], Any]:
    def run(at: InProcess) -> schemas.MaterializationResponse:
        # Lowered as the HTTP route lowers it, so the answer says what the pass was given.
        given_ms = pass_budget_ms(budget_ms)
        report = getattr(at.engine, name)(at.owner, budget_ms=given_ms)
        return schemas.MaterializationResponse.of(report, requested_ms=budget_ms, given_ms=given_ms)

    return run


def _extraction_state(name: str, event_id: str) -> Callable[[InProcess], Any]:
    def read(at: InProcess) -> schemas.ExtractionStatusResponse:
        status, work = getattr(at.engine, name)(at.owner, event_id)
        return schemas.ExtractionStatusResponse.of(event_id, status, work)

    return read


def _cursor(query: schemas.NodeListQuery | schemas.EventListQuery) -> str | None:
    return str(query.after_id) if query.after_id is not None else None


class _Calls:
    """The request builder of every client method: its arguments become the call that both
    transports serve. The clients expose these under the same names (see `_blocking`)."""

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
        idempotency_key: str | None = None,
    ) -> Call[schemas.StoreResponse]:
        """Store a memory. Omit ttl_days for the node type's default; None disables expiry."""
        body = _from_arguments(
            schemas.StoreRequest,
            {
                **locals(),
                "value_bindings": list(value_bindings) if value_bindings is not None else None,
            },
        )
        return Call("store", user_id, body=body, idempotency_key=idempotency_key)

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
        ranking_profile: Literal["active", "none"] = "active",
    ) -> Call[schemas.RetrieveResponse]:
        body = _from_arguments(schemas.RetrieveRequest, locals())
        return Call(
            "retrieve",
            user_id,
            body=body,
            local=lambda at: at.engine.retrieve(at.owner, _engine_input(RetrieveInput, body)),
        )

    def get_event(
        self, event_id: str, *, user_id: str | None = None
    ) -> Call[schemas.EventResponse]:
        return Call("get_event", user_id, {"event_id": event_id})

    def get_event_nodes(
        self, event_id: str, *, user_id: str | None = None
    ) -> Call[list[schemas.NodeResponse]]:
        return Call("get_event_nodes", user_id, {"event_id": event_id})

    def get_node(self, node_id: str, *, user_id: str | None = None) -> Call[schemas.NodeResponse]:
        return Call("get_node", user_id, {"node_id": node_id})

    def list_nodes(
        self,
        *,
        node_type: str | None = None,
        lifecycle_state: str | None = None,
        scope: str | None = None,
        session_id: str | None = None,
        include_inactive: bool = False,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        text: str | None = None,
        limit: int = DEFAULT_LIST_PAGE,
        after_id: str | None = None,
        user_id: str | None = None,
    ) -> Call[schemas.NodePageResponse]:
        """Pass the page's next_after_id as after_id until it is None."""
        query = _from_arguments(schemas.NodeListQuery, locals())
        return Call(
            "list_nodes",
            user_id,
            query=query,
            local=lambda at: at.engine.list_nodes(
                at.owner, query.node_filter(), limit=query.limit, after_id=_cursor(query)
            ),
        )

    def list_events(
        self,
        *,
        session_id: str | None = None,
        role: str | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        text: str | None = None,
        limit: int = DEFAULT_LIST_PAGE,
        after_id: str | None = None,
        user_id: str | None = None,
    ) -> Call[schemas.EventPageResponse]:
        """Pass the page's next_after_id as after_id until it is None."""
        query = _from_arguments(schemas.EventListQuery, locals())
        return Call(
            "list_events",
            user_id,
            query=query,
            local=lambda at: at.engine.list_events(
                at.owner, query.event_filter(), limit=query.limit, after_id=_cursor(query)
            ),
        )

    def delete_memory(
        self, event_id: str, *, user_id: str | None = None
    ) -> Call[listings.MemoryDeletion]:
        return Call("delete_memory", user_id, {"event_id": event_id})

    def get_stats(self, *, user_id: str | None = None) -> Call[listings.OwnerStats]:
        return Call("get_stats", user_id, local=lambda at: at.engine.get_stats(at.owner))

    def get_limits(self) -> Call[LimitsReport]:
        """In a directory: the limits `prme serve` holds tenants to (in-process calls are
        not counted against them)."""
        return Call("get_limits", local=lambda at: at.engine.get_limits(at.principal.tenant_id))

    def export_owner(
        self, *, cursor: str | None = None, user_id: str | None = None
    ) -> Call[portability.ExportPage]:
        """`export_to` writes a whole export file."""
        return Call(
            "export_owner",
            user_id,
            query={"cursor": cursor},
            local=lambda at: at.engine.export_owner(at.owner, cursor),
        )

    def import_records(
        self,
        records: Sequence[dict[str, Any]],
        *,
        version: int = portability.EXPORT_FORMAT_VERSION,
        first_line: int = 2,
        user_id: str | None = None,
    ) -> Call[portability.ImportReport]:
        """`import_from` imports a whole export file."""
        body = _from_arguments(schemas.ImportRequest, {**locals(), "records": list(records)})
        return Call(
            "import_records",
            user_id,
            body=body,
            local=lambda at: at.engine.import_records(
                at.owner, _engine_input(portability.ImportBatch, body)
            ),
        )

    def erase_owner(
        self, *, confirm: str, user_id: str | None = None
    ) -> Call[erasure.OwnerErasure]:
        return Call(
            "erase_owner",
            user_id,
            query={"confirm": confirm},
            local=lambda at: at.engine.erase_owner(at.owner, confirm=confirm),
        )

    def get_usage(
        self,
        *,
        user_id: str | None = None,
        start: datetime | None = None,
        end: datetime | None = None,
        period: usage.UsagePeriod = "day",
    ) -> Call[usage.UsageReport]:
        """An operator's call: user_id narrows the sum to one user (the whole tenant when
        omitted); start and end are timezone-aware."""
        query = {"start": start, "end": end, "period": period}

        def read(at: InProcess) -> usage.UsageReport:
            return at.engine.get_usage(
                at.principal.tenant_id, user_id=user_id, start=start, end=end, period=period
            )

        wire = {
            name: value.isoformat() if isinstance(value, datetime) else value
            for name, value in query.items()
        }
        return Call("get_usage", user_id, query=wire, local=read)

    def get_processing_status(
        self, event_id: str, *, user_id: str | None = None
    ) -> Call[schemas.ProcessingStatusResponse]:
        def read(at: InProcess) -> schemas.ProcessingStatusResponse:
            status, work = at.engine.get_processing_status(at.owner, event_id)
            return schemas.ProcessingStatusResponse(
                event_id=event_id,
                processing_status=status,
                work=[schemas.WorkItemResponse.of(item) for item in work],
            )

        return Call("get_processing_status", user_id, {"event_id": event_id}, local=read)

    def get_retrieval_receipt(
        self, request_id: str, *, user_id: str | None = None
    ) -> Call[RetrievalReceipt]:
        return Call("get_retrieval_receipt", user_id, {"request_id": request_id})

    def process_materializations(
        self, *, user_id: str | None = None, budget_ms: int | None = None
    ) -> Call[schemas.MaterializationResponse]:
        body = _from_arguments(schemas.MaterializationRequest, locals())
        local = _processing_pass("process_materializations", body.budget_ms)
        return Call("process_materializations", user_id, body=body, local=local)

    def reindex(
        self, *, user_id: str | None = None, progress: ReindexProgress | None = None
    ) -> Call[ReindexReport]:
        """Re-embed and re-index every record of the user with the current embedder and
        vector settings (needed after changing PRME_MINILM_PRECISION, PRME_VECTOR_*).
        `progress(done, total)` is called after each batch. In-process only."""
        return Call(
            "reindex", user_id, local=lambda at: at.engine.reindex(at.owner, progress=progress)
        )

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
    ) -> Call[schemas.IngestResponse]:
        """Keep a message verbatim and extract grounded memories from it."""
        body = _from_arguments(schemas.IngestRequest, locals())
        return Call("ingest", user_id, body=body, idempotency_key=idempotency_key)

    def ingest_fast(
        self,
        items: Sequence[dict[str, Any]],
        *,
        user_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> Call[schemas.FastIngestResponse]:
        """Commit an ordered batch of raw sources; call process_materializations until none is left."""
        body = _validated(schemas.FastIngestRequest, {"items": list(items), "user_id": user_id})
        return Call("ingest_fast", user_id, body=body, idempotency_key=idempotency_key)

    def get_extraction_status(
        self, event_id: str, *, user_id: str | None = None
    ) -> Call[schemas.ExtractionStatusResponse]:
        local = _extraction_state("get_extraction_status", event_id)
        return Call("get_extraction_status", user_id, {"event_id": event_id}, local=local)

    def retry_extraction(
        self, event_id: str, *, user_id: str | None = None
    ) -> Call[schemas.ExtractionStatusResponse]:
        local = _extraction_state("retry_extraction", event_id)
        return Call("retry_extraction", user_id, {"event_id": event_id}, local=local)

    def process_extractions(
        self, *, user_id: str | None = None, budget_ms: int | None = None
    ) -> Call[schemas.MaterializationResponse]:
        body = _from_arguments(schemas.MaterializationRequest, locals())
        local = _processing_pass("process_extractions", body.budget_ms)
        return Call("process_extractions", user_id, body=body, local=local)

    def promote(
        self, node_id: str, *, user_id: str | None = None, idempotency_key: str | None = None
    ) -> Call[schemas.NodeResponse]:
        return Call("promote", user_id, {"node_id": node_id}, idempotency_key=idempotency_key)

    def archive(
        self, node_id: str, *, user_id: str | None = None, idempotency_key: str | None = None
    ) -> Call[schemas.NodeResponse]:
        return Call("archive", user_id, {"node_id": node_id}, idempotency_key=idempotency_key)

    def reinforce(
        self,
        node_id: str,
        *,
        evidence_id: str | None = None,
        user_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> Call[schemas.NodeResponse]:
        body = _from_arguments(schemas.ReinforceRequest, locals())
        evidence = str(body.evidence_id) if body.evidence_id is not None else None
        return Call(
            "reinforce",
            user_id,
            {"node_id": node_id},
            body=body,
            idempotency_key=idempotency_key,
            local=lambda at: at.engine.reinforce(
                at.owner, node_id, evidence_id=evidence, idempotency_key=idempotency_key
            ),
        )

    def supersede(
        self,
        old_node_id: str,
        new_node_id: str,
        *,
        evidence_id: str | None = None,
        user_id: str | None = None,
    ) -> Call[list[schemas.NodeResponse]]:
        """The result is the old node (now superseded) and the new one, in that order."""
        body = _from_arguments(schemas.SupersedenceRequest, locals())
        return Call(
            "supersede",
            user_id,
            body=body,
            local=lambda at: at.engine.supersede(
                at.owner,
                old_node_id=str(body.old_node_id),
                new_node_id=str(body.new_node_id),
                evidence_id=str(body.evidence_id) if body.evidence_id else None,
            ),
        )

    def evaluate_condition(
        self,
        node_id: str,
        state: str,
        *,
        evidence_id: str | None = None,
        evaluation_method: str = UNSET,
        reason: str | None = None,
        evaluated_at: datetime | None = None,
        user_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> Call[schemas.NodeResponse]:
        body = _from_arguments(conflict_schemas.ConditionRequest, locals())
        return Call(
            "evaluate_condition",
            user_id,
            {"node_id": node_id},
            body=body,
            idempotency_key=idempotency_key,
            local=lambda at: at.engine.evaluate_condition(
                at.owner,
                node_id,
                _engine_input(ConditionInput, body),
                idempotency_key=idempotency_key,
            ),
        )

    def mark_contradiction(
        self,
        node_a_id: str,
        node_b_id: str,
        *,
        evidence_id: str | None = None,
        user_id: str | None = None,
    ) -> Call[list[schemas.NodeResponse]]:
        """The result is node a, then node b, both contested."""
        body = _from_arguments(conflict_schemas.ContradictionRequest, locals())
        return Call(
            "mark_contradiction",
            user_id,
            body=body,
            local=lambda at: at.engine.mark_contradiction(
                at.owner,
                node_a_id=str(body.node_a_id),
                node_b_id=str(body.node_b_id),
                evidence_id=str(body.evidence_id) if body.evidence_id else None,
            ),
        )

    def resolve_contradiction(
        self,
        winner_id: str,
        loser_id: str,
        *,
        evidence_id: str | None = None,
        user_id: str | None = None,
    ) -> Call[list[schemas.NodeResponse]]:
        """The result is the winner (now stable), then the loser (now deprecated)."""
        body = _from_arguments(conflict_schemas.ResolutionRequest, locals())
        return Call(
            "resolve_contradiction",
            user_id,
            body=body,
            local=lambda at: at.engine.resolve_contradiction(
                at.owner,
                winner_id=str(body.winner_id),
                loser_id=str(body.loser_id),
                evidence_id=str(body.evidence_id) if body.evidence_id else None,
            ),
        )

    # -- relevance feedback and answer citations --

    def record_relevance(
        self,
        request_id: str,
        labels: dict[str, bool],
        *,
        feedback_id: str | None = None,
        surface: Literal["results", "context"] = "results",
        method: Literal["explicit_user", "structured_evaluation"] = "explicit_user",
        user_id: str | None = None,
    ) -> Call[feedback.RelevanceRecord]:
        body = _from_arguments(judgment_schemas.RelevanceRequest, locals())
        return Call("record_relevance", user_id, body=body)

    def evaluate_learning(
        self,
        *,
        scopes: Sequence[Scope | str] | None = None,
        holdout_share: float = learning.DEFAULT_HOLDOUT_SHARE,
        max_records: int = learning.DEFAULT_MAX_RECORDS,
        user_id: str | None = None,
    ) -> Call[learning.LearningEvaluation]:
        body = _from_arguments(
            learning_schemas.LearningEvaluationRequest,
            {**locals(), "scopes": None if scopes is None else list(scopes)},
        )
        return Call("evaluate_learning", user_id, body=body)

    def get_relevance(
        self, feedback_id: str, *, user_id: str | None = None
    ) -> Call[feedback.RelevanceRecord]:
        return Call("get_relevance", user_id, {"feedback_id": feedback_id})

    def list_relevance(
        self,
        *,
        limit: int = 100,
        after_id: str | None = None,
        request_id: str | None = None,
        user_id: str | None = None,
    ) -> Call[feedback.RelevancePage]:
        query = {"limit": limit, "after_id": after_id, "request_id": request_id}
        return Call("list_relevance", user_id, query=query)

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
    ) -> Call[feedback.AnswerCitationRecord]:
        body = _from_arguments(
            judgment_schemas.AnswerCitationRequest,
            {**locals(), "cited_node_ids": list(cited_node_ids)},
        )
        return Call("record_answer_citations", user_id, body=body)

    def get_answer_citations(
        self, citation_id: str, *, user_id: str | None = None
    ) -> Call[feedback.AnswerCitationRecord]:
        return Call("get_answer_citations", user_id, {"citation_id": citation_id})

    def list_answer_citations(
        self,
        *,
        limit: int = 100,
        after_id: str | None = None,
        request_id: str | None = None,
        user_id: str | None = None,
    ) -> Call[feedback.AnswerCitationPage]:
        query = {"limit": limit, "after_id": after_id, "request_id": request_id}
        return Call("list_answer_citations", user_id, query=query)

    def replay_retrieval(
        self, request_id: str, *, user_id: str | None = None
    ) -> Call[feedback.ReplayReport]:
        return Call("replay_retrieval", user_id, {"request_id": request_id})

    def get_retrieval_context(
        self, request_id: str, *, user_id: str | None = None
    ) -> Call[RebuiltContext]:
        return Call("get_retrieval_context", user_id, {"request_id": request_id})

    def resolve_tool_arguments(
        self, request_id: str, arguments: dict[str, Any], *, user_id: str | None = None
    ) -> Call[ToolArgumentResolution]:
        """Swap visible presentation values for their lookups, as saved with that retrieval."""
        require_input_policy(arguments, where="arguments")
        body = _from_arguments(judgment_schemas.ResolveToolArgumentsRequest, locals())
        return Call(
            "resolve_tool_arguments",
            user_id,
            {"request_id": request_id},
            body=body,
            local=lambda at: at.engine.resolve_tool_arguments(at.owner, request_id, body.arguments),
        )

    # -- ranking profiles learned from feedback --
    def create_ranking_profile(
        self,
        weights: dict[str, Any] | learning.RankingWeights,
        *,
        evaluation: dict[str, Any] | learning.ProfileEvaluation | None = None,
        scopes: Sequence[str] = (),
        baseline_profile_id: str | None = None,
        profile_id: str | None = None,
        user_id: str | None = None,
    ) -> Call[learning.RankingProfile]:
        """Save weights with the holdout evaluation that scored them (evaluate_learning's)."""
        fields = dict(locals(), scopes=list(scopes))
        body = _from_arguments(learning_schemas.RankingProfileRequest, fields)
        return Call("create_ranking_profile", user_id, body=body)

    def get_ranking_profile(
        self, profile_id: str, *, user_id: str | None = None
    ) -> Call[learning.RankingProfile]:
        return Call("get_ranking_profile", user_id, {"profile_id": profile_id})

    def list_ranking_profiles(
        self, *, limit: int = 50, after_id: str | None = None, user_id: str | None = None
    ) -> Call[learning_schemas.RankingProfileListResponse]:
        query = _from_arguments(learning_schemas.RankingProfileListQuery, locals())

        def listed(at: InProcess) -> learning_schemas.RankingProfileListResponse:
            after = str(query.after_id) if query.after_id else None
            items = at.engine.list_ranking_profiles(at.owner, limit=query.limit, after_id=after)
            return learning_schemas.RankingProfileListResponse(items=items)

        return Call("list_ranking_profiles", user_id, query=query, local=listed)

    def get_active_ranking_profile(
        self, *, scopes: Sequence[str] = (), user_id: str | None = None
    ) -> Call[learning.ActiveRankingProfile]:
        query = _from_arguments(
            learning_schemas.RankingSlotQuery, {"scopes": list(scopes), "user_id": user_id}
        )
        return Call(
            "get_active_ranking_profile",
            user_id,
            query=query,
            local=lambda at: at.engine.get_active_ranking_profile(at.owner, query.scopes),
        )

    def list_ranking_profile_history(
        self, *, scopes: Sequence[str] = (), limit: int = 20, user_id: str | None = None
    ) -> Call[list[learning.RankingProfileState]]:
        query = _from_arguments(
            learning_schemas.RankingHistoryQuery,
            {"scopes": list(scopes), "limit": limit, "user_id": user_id},
        )
        return Call(
            "list_ranking_profile_history",
            user_id,
            query=query,
            local=lambda at: at.engine.list_ranking_profile_history(
                at.owner, query.scopes, limit=query.limit
            ),
        )

    def activate_ranking_profile(
        self,
        profile_id: str,
        *,
        change_id: str | None = None,
        scopes: Sequence[str] | None = None,
        user_id: str | None = None,
    ) -> Call[learning.RankingProfileState]:
        """Refused (409) unless its evaluation recommends it and change_id is the slot's current."""
        fields = dict(locals(), scopes=None if scopes is None else list(scopes))
        body = _from_arguments(learning_schemas.ActivateRankingProfileRequest, fields)
        return Call(
            "activate_ranking_profile",
            user_id,
            {"profile_id": profile_id},
            body=body,
            local=lambda at: at.engine.activate_ranking_profile(
                at.owner,
                profile_id,
                actor=at.principal,
                change_id=body.change_id,
                scopes=body.scopes,
            ),
        )

    def deactivate_ranking_profile(
        self, *, change_id: str, scopes: Sequence[str] = (), user_id: str | None = None
    ) -> Call[learning.RankingProfileState]:
        body = _from_arguments(
            learning_schemas.DeactivateRankingProfileRequest,
            {"change_id": change_id, "scopes": list(scopes), "user_id": user_id},
        )
        return Call(
            "deactivate_ranking_profile",
            user_id,
            body=body,
            local=lambda at: at.engine.deactivate_ranking_profile(
                at.owner, actor=at.principal, change_id=body.change_id, scopes=body.scopes
            ),
        )

    def rollback_ranking_profile(
        self,
        profile_id: str,
        *,
        change_id: str,
        scopes: Sequence[str] = (),
        user_id: str | None = None,
    ) -> Call[learning.RankingProfileState]:
        body = _from_arguments(
            learning_schemas.RollbackRankingProfileRequest,
            {
                "profile_id": profile_id,
                "change_id": change_id,
                "scopes": list(scopes),
                "user_id": user_id,
            },
        )
        return Call(
            "rollback_ranking_profile",
            user_id,
            body=body,
            local=lambda at: at.engine.rollback_ranking_profile(
                at.owner,
                actor=at.principal,
                change_id=body.change_id,
                scopes=body.scopes,
                profile_id=str(body.profile_id),
            ),
        )

    # -- alias proposals and reviews --

    def propose_aliases(self, *, user_id: str | None = None) -> Call[AliasScanReport]:
        """Scan this user's entity names and journal new alias proposals (never a merge).
        In-process only."""
        return Call(
            "propose_aliases", user_id, local=lambda at: at.engine.propose_aliases(at.owner)
        )

    def list_alias_proposals(
        self,
        *,
        status: str | None = None,
        scope: str | None = None,
        limit: int = 100,
        user_id: str | None = None,
    ) -> Call[judgment_schemas.AliasProposalListResponse]:
        query = _from_arguments(judgment_schemas.AliasProposalQuery, locals())

        def listed(at: InProcess) -> judgment_schemas.AliasProposalListResponse:
            items = at.engine.list_alias_proposals(
                at.owner, status=query.status, scope=query.scope, limit=query.limit
            )
            return judgment_schemas.AliasProposalListResponse(
                items=[judgment_schemas.AliasProposalResponse.of(item) for item in items]
            )

        return Call("list_alias_proposals", user_id, query=query, local=listed)

    def review_alias_proposal(
        self,
        proposal_operation_id: str,
        *,
        decision: str,
        reviewer_id: str,
        reason: str | None = None,
        user_id: str | None = None,
    ) -> Call[judgment_schemas.AliasProposalResponse]:
        """Accept (a verified alias_of link) or reject (with a reason) one proposal."""
        body = _from_arguments(judgment_schemas.AliasReviewRequest, locals())
        return Call(
            "review_alias_proposal",
            user_id,
            {"proposal_operation_id": proposal_operation_id},
            body=body,
            local=lambda at: at.engine.review_alias_proposal(
                at.owner,
                proposal_operation_id,
                actor=at.principal,
                decision=body.decision,
                reviewer_id=body.reviewer_id,
                reason=body.reason,
            ),
        )

    def get_node_edges(
        self, node_id: str, *, user_id: str | None = None
    ) -> Call[list[judgment_schemas.EdgeResponse]]:
        return Call("get_node_edges", user_id, {"node_id": node_id})

    # -- grounded quantity aggregation --

    def aggregate_quantities(
        self,
        query: QuantityAggregationQuery | dict[str, Any],
        *,
        user_id: str | None = None,
    ) -> Call[quantities.QuantityAggregation]:
        """Exact per-unit totals of the extracted quantities that match `query` and still hold."""
        body = _from_arguments(judgment_schemas.QuantityAggregationRequest, locals())
        return Call(
            "aggregate_quantities",
            user_id,
            body=body,
            local=lambda at: at.engine.aggregate_quantities(at.owner, body.query),
        )

    def aggregate_quantities_text(
        self, question: str, *, user_id: str | None = None
    ) -> Call[quantities.QuantityQuestionAnswer]:
        """Answer one supported question shape; otherwise an unsupported plan, memory unread."""
        body = _from_arguments(judgment_schemas.QuantityQuestionRequest, locals())
        return Call(
            "aggregate_quantities_text",
            user_id,
            body=body,
            local=lambda at: at.engine.aggregate_quantities_text(at.owner, body.question),
        )

    # -- bulk imports --

    def submit_import(
        self,
        items: Sequence[dict[str, Any]],
        *,
        user_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> Call[imports.BulkImportStatus]:
        """A local client commits the chunks before it returns; a remote one returns while
        workers commit them: poll get_import until the status is completed."""
        body = _validated(schemas.BulkImportRequest, {"items": list(items), "user_id": user_id})
        return Call("submit_import", user_id, body=body, idempotency_key=idempotency_key)

    def get_import(
        self, import_id: str, *, user_id: str | None = None
    ) -> Call[imports.BulkImportStatus]:
        return Call("get_import", user_id, {"import_id": import_id})

    def open_import_upload(
        self, size_bytes: int, *, user_id: str | None = None, idempotency_key: str | None = None
    ) -> Call[uploads.ImportUploadOpened]:
        """The answer's `upload` says where to PUT the file (and whether with the API key);
        then call start_import_upload."""
        body = _validated(
            schemas.ImportUploadRequest, {"size_bytes": size_bytes, "user_id": user_id}
        )
        return Call("open_import_upload", user_id, body=body, idempotency_key=idempotency_key)

    def start_import_upload(
        self, import_id: str, *, user_id: str | None = None, idempotency_key: str | None = None
    ) -> Call[imports.BulkImportStatus]:
        return Call(
            "start_import_upload",
            user_id,
            {"import_id": import_id},
            idempotency_key=idempotency_key,
        )

    # -- graph and provenance reads of one node --

    def get_node_provenance(
        self,
        node_id: str,
        *,
        operation_cursor: str | None = None,
        operation_limit: int = DEFAULT_OPERATION_LIMIT,
        user_id: str | None = None,
    ) -> Call[graph_schemas.NodeProvenanceResponse]:
        query = _from_arguments(graph_schemas.ProvenanceQuery, locals())
        return Call(
            "get_node_provenance",
            user_id,
            {"node_id": node_id},
            query=query,
            local=lambda at: graph_schemas.NodeProvenanceResponse.of(
                at.engine.get_node_provenance(
                    at.owner,
                    node_id,
                    operation_cursor=query.operation_cursor,
                    operation_limit=query.operation_limit,
                )
            ),
        )

    def get_node_neighborhood(
        self, node_id: str, *, max_hops: int = DEFAULT_MAX_HOPS, user_id: str | None = None
    ) -> Call[graph_schemas.NodeNeighborhoodResponse]:
        query = _from_arguments(graph_schemas.NeighborhoodQuery, locals())
        return Call(
            "get_node_neighborhood",
            user_id,
            {"node_id": node_id},
            query=query,
            local=lambda at: graph_schemas.NodeNeighborhoodResponse.of(
                at.engine.get_node_neighborhood(at.owner, node_id, max_hops=query.max_hops)
            ),
        )

    def get_node_chain(
        self,
        node_id: str,
        *,
        direction: Literal["forward", "backward", "both"] = "forward",
        user_id: str | None = None,
    ) -> Call[graph_schemas.NodeChainResponse]:
        query = _from_arguments(graph_schemas.ChainQuery, locals())
        return Call(
            "get_node_chain",
            user_id,
            {"node_id": node_id},
            query=query,
            local=lambda at: graph_schemas.NodeChainResponse.of(
                at.engine.get_node_chain(at.owner, node_id, direction=query.direction)
            ),
        )

    # -- assertions: exact counts and the state of a fact --

    def aggregate_assertions(
        self,
        query: assertions.AssertionQuery | dict[str, Any],
        *,
        user_id: str | None = None,
    ) -> Call[assertions.AssertionAggregation]:
        """Exact counts per group of the extracted assertions that match `query`."""
        body = _from_arguments(assertion_schemas.AssertionAggregationRequest, locals())
        return Call(
            "aggregate_assertions",
            user_id,
            body=body,
            local=lambda at: at.engine.aggregate_assertions(at.owner, body.query),
        )

    def get_assertion_state(
        self,
        query: assertions.AssertionStateQuery | dict[str, Any],
        *,
        user_id: str | None = None,
    ) -> Call[assertions.AssertionState]:
        """The value(s) of one fact and its timeline; `query` names its subject and predicate."""
        body = _from_arguments(assertion_schemas.AssertionStateRequest, locals())
        return Call(
            "get_assertion_state",
            user_id,
            body=body,
            local=lambda at: at.engine.get_assertion_state(at.owner, body.query),
        )

    def get_event_extraction(
        self, event_id: str, *, user_id: str | None = None
    ) -> Call[SavedExtraction]:
        return Call("get_event_extraction", user_id, {"event_id": event_id})

    def organize(
        self,
        *,
        jobs: Sequence[OrganizerJob] | None = None,
        budget_ms: int = DEFAULT_BUDGET_MS,
        user_id: str | None = None,
    ) -> Call[OrganizeReport]:
        body = _from_arguments(
            OrganizeRequest, {**locals(), "jobs": None if jobs is None else list(jobs)}
        )
        return Call("organize", user_id, body=body)

    def get_caller(self) -> Call[CallerIdentity]:
        """In a directory: the client itself, an operator of its tenant without a key
        (keyless), acting for its default user when a call names none."""
        return Call("get_caller", local=lambda at: at.engine.get_caller(at.principal))

    # -- receipt listings --

    def list_retrievals(
        self,
        *,
        cursor: str | None = None,
        limit: int = DEFAULT_RETRIEVAL_PAGE,
        since: datetime | None = None,
        until: datetime | None = None,
        user_id: str | None = None,
    ) -> Call[RetrievalPage]:
        query = _from_arguments(RetrievalListQuery, locals())
        return Call(
            "list_retrievals",
            user_id,
            query=query,
            local=lambda at: at.engine.list_retrievals(
                at.owner,
                cursor=query.cursor,
                limit=query.limit,
                since=query.since,
                until=query.until,
            ),
        )

    def list_node_retrievals(
        self,
        node_id: str,
        *,
        cursor: str | None = None,
        scan_limit: int = MAX_NODE_SCAN,
        user_id: str | None = None,
    ) -> Call[NodeRetrievalPage]:
        query = _from_arguments(NodeRetrievalsQuery, locals())
        return Call(
            "list_node_retrievals",
            user_id,
            {"node_id": node_id},
            query=query,
            local=lambda at: at.engine.list_node_retrievals(
                at.owner, node_id, cursor=query.cursor, scan_limit=query.scan_limit
            ),
        )

    def get_nodes(
        self, node_ids: Sequence[str], *, user_id: str | None = None
    ) -> Call[NodeBatchResponse]:
        body = _from_arguments(NodeBatchRequest, {**locals(), "node_ids": list(node_ids)})
        return Call(
            "get_nodes",
            user_id,
            body=body,
            local=lambda at: at.engine.get_nodes(at.owner, [str(n) for n in body.node_ids]),
        )


class InProcessTransport:
    """Calls served by the engine in this process, answered with the same response models
    as the HTTP routes (through the converters the routes use)."""

    def __init__(self, path: Path, settings: Settings) -> None:
        # The embedded default uses `path`; PRME_BACKEND=aws talks to the configured AWS instead.
        self.backend: Backend = open_backend(settings, path)
        self.principal = Principal.operator(settings.tenant_id, default_owner_id=DEFAULT_USER_ID)

    def run(self, call: Call[_Result]) -> _Result:
        operation = BY_NAME[call.operation]
        at = InProcess(
            self.backend.engine, self.principal, resolve_owner(self.principal, call.user_id)
        )
        result = call.local(at) if call.local is not None else _table_call(operation, call, at)
        if operation.response is None:
            return result  # type: ignore[no-any-return]
        return presented(operation.response, result)  # type: ignore[no-any-return]

    def close(self) -> None:
        self.backend.close()


def _table_call(operation: Operation, call: Call[Any], at: InProcess) -> Any:
    """The engine call of a table-built shape, made as `prme.http.table_routes` makes it."""
    method = getattr(at.engine, operation.engine_method)
    if operation.shape is Shape.READ_ONE:
        (the_id,) = call.path.values()
        return method(at.owner, the_id)
    if operation.shape is Shape.MOVE_ONE:
        (the_id,) = call.path.values()
        return method(at.owner, the_id, idempotency_key=call.idempotency_key)
    if operation.shape is Shape.WRITE_BODY and operation.engine_input is not None:
        assert call.body is not None  # noqa: S101 - a written body's builder always makes one
        takes_key = operation.http is not None and operation.http.idempotency_key
        keys = {"idempotency_key": call.idempotency_key} if takes_key else {}
        return method(at.owner, _engine_input(operation.engine_input, call.body), **keys)
    if operation.shape is Shape.LIST_PAGE and isinstance(call.query, dict):
        query = call.query
        return method(
            at.owner,
            limit=query["limit"],
            after_id=query["after_id"],
            request_id=query.get("request_id"),
        )
    raise TypeError(f"{operation.name}: an ADAPTER operation's call needs its in-process form")


def _import_lines(
    lines: Iterable[str],
    write: Callable[[portability.ImportBatch], portability.ImportReport],
    progress: TransferProgress | None,
) -> ImportTotals:
    try:
        return read_export(lines, write, progress)
    except portability.LineError as exc:
        raise InvalidRequestError(str(exc)) from None


def _is_url(target: str | Path) -> bool:
    return isinstance(target, str) and target.startswith(("http://", "https://"))


def _where(target: str | Path) -> str:
    """What a client's repr shows of its target: a URL without any user-info part (which
    could hold a secret), or the path."""
    if not _is_url(target):
        return repr(str(target))
    url = httpx.URL(str(target))
    return repr(str(url.copy_with(username=None, password=None, query=None, fragment=None)))


@functools.cache
def _method_signature(build: Callable[..., Any]) -> inspect.Signature:
    """The builder's signature, returning what its call results in (`Call[X]` -> X)."""
    (result,) = get_args(get_type_hints(build)["return"])
    return inspect.signature(build, eval_str=True).replace(return_annotation=result)


def _adopt(method: Callable[..., Any], build: Callable[..., Any]) -> None:
    """Give a client method its builder's name, signature and the table's docstring."""
    method.__name__ = build.__name__
    method.__qualname__ = build.__name__
    method.__doc__ = client_docstring(build.__name__, build.__doc__, user_id=_USER_ID_HELP)
    method.__signature__ = _method_signature(build)  # type: ignore[attr-defined]


def _blocking(
    build: Callable[Concatenate[_Calls, _Params], Call[_Result]],
) -> Callable[Concatenate[MemoryClient, _Params], _Result]:
    def method(self: MemoryClient, /, *args: _Params.args, **kwargs: _Params.kwargs) -> _Result:
        return self._transport.run(build(_CALLS, *args, **kwargs))

    _adopt(method, build)
    return method


def _awaitable(
    build: Callable[Concatenate[_Calls, _Params], Call[_Result]],
) -> Callable[Concatenate[AsyncMemoryClient, _Params], Coroutine[Any, Any, _Result]]:
    async def method(
        self: AsyncMemoryClient, /, *args: _Params.args, **kwargs: _Params.kwargs
    ) -> _Result:
        return await self._run(build(_CALLS, *args, **kwargs))

    _adopt(method, build)
    return method


_CALLS = _Calls()


class MemoryClient:
    """Long-term memory in a local directory, or on a PRME server. Use it as a context manager.

    `MemoryClient("./memory")` (a path) runs the engine in this process;
    `MemoryClient("https://memory.example.com", api_key=...)` calls that server's HTTP API
    (retrying refusals and lost connections by `retries`, each request at most `timeout`
    seconds). Both return the same response models and raise the same `prme.errors`.
    """

    def __init__(
        self,
        target: str | Path = "./memory",
        *,
        api_key: str | None = None,
        settings: Settings | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        retries: RetryPolicy | None = None,
    ) -> None:
        self._where = _where(target)
        self._transport: HttpTransport | InProcessTransport
        if _is_url(target):
            self._transport = HttpTransport(
                str(target).rstrip("/"),
                api_key=api_key,
                timeout=timeout,
                retries=retries or RetryPolicy(),
            )
        else:
            if api_key is not None:
                raise ValueError("api_key is for a server URL (http:// or https://), not a path")
            self._transport = InProcessTransport(Path(target), settings or Settings())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._where})"

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
        self._transport.close()

    def export_to(
        self, out: TextIO, *, user_id: str | None = None, progress: TransferProgress | None = None
    ) -> int:
        """Write the user's whole export as NDJSON to `out`, a page at a time; returns the
        records written. `progress(done, total)` is called after each page."""
        return write_export(
            lambda cursor: self.export_owner(cursor=cursor, user_id=user_id), out, progress
        )

    def import_from(
        self,
        lines: Iterable[str],
        *,
        user_id: str | None = None,
        progress: TransferProgress | None = None,
    ) -> ImportTotals:
        """Import an export file (its lines, e.g. an open file) into the user's memory, a batch
        at a time. A line that is not a record is an InvalidRequestError naming it (the batches
        before it are written; importing the file again skips them). `progress(done, total)`
        follows each batch."""
        return _import_lines(
            lines,
            lambda batch: self.import_records(
                batch.records, version=batch.version, first_line=batch.first_line, user_id=user_id
            ),
            progress,
        )

    store = _blocking(_Calls.store)
    retrieve = _blocking(_Calls.retrieve)
    get_event = _blocking(_Calls.get_event)
    get_event_nodes = _blocking(_Calls.get_event_nodes)
    get_node = _blocking(_Calls.get_node)
    list_nodes = _blocking(_Calls.list_nodes)
    list_events = _blocking(_Calls.list_events)
    delete_memory = _blocking(_Calls.delete_memory)
    get_stats = _blocking(_Calls.get_stats)
    get_limits = _blocking(_Calls.get_limits)
    export_owner = _blocking(_Calls.export_owner)
    import_records = _blocking(_Calls.import_records)
    erase_owner = _blocking(_Calls.erase_owner)
    get_usage = _blocking(_Calls.get_usage)
    get_processing_status = _blocking(_Calls.get_processing_status)
    get_retrieval_receipt = _blocking(_Calls.get_retrieval_receipt)
    process_materializations = _blocking(_Calls.process_materializations)
    # The name before the operations table gave every surface one name; kept for callers.
    process_pending = process_materializations
    reindex = _blocking(_Calls.reindex)
    ingest = _blocking(_Calls.ingest)
    ingest_fast = _blocking(_Calls.ingest_fast)
    get_extraction_status = _blocking(_Calls.get_extraction_status)
    retry_extraction = _blocking(_Calls.retry_extraction)
    process_extractions = _blocking(_Calls.process_extractions)
    promote = _blocking(_Calls.promote)
    archive = _blocking(_Calls.archive)
    reinforce = _blocking(_Calls.reinforce)
    supersede = _blocking(_Calls.supersede)
    evaluate_condition = _blocking(_Calls.evaluate_condition)
    mark_contradiction = _blocking(_Calls.mark_contradiction)
    resolve_contradiction = _blocking(_Calls.resolve_contradiction)
    record_relevance = _blocking(_Calls.record_relevance)
    evaluate_learning = _blocking(_Calls.evaluate_learning)
    get_relevance = _blocking(_Calls.get_relevance)
    list_relevance = _blocking(_Calls.list_relevance)
    record_answer_citations = _blocking(_Calls.record_answer_citations)
    get_answer_citations = _blocking(_Calls.get_answer_citations)
    list_answer_citations = _blocking(_Calls.list_answer_citations)
    replay_retrieval = _blocking(_Calls.replay_retrieval)
    get_retrieval_context = _blocking(_Calls.get_retrieval_context)
    resolve_tool_arguments = _blocking(_Calls.resolve_tool_arguments)
    propose_aliases = _blocking(_Calls.propose_aliases)
    list_alias_proposals = _blocking(_Calls.list_alias_proposals)
    review_alias_proposal = _blocking(_Calls.review_alias_proposal)
    create_ranking_profile = _blocking(_Calls.create_ranking_profile)
    get_ranking_profile = _blocking(_Calls.get_ranking_profile)
    list_ranking_profiles = _blocking(_Calls.list_ranking_profiles)
    get_active_ranking_profile = _blocking(_Calls.get_active_ranking_profile)
    list_ranking_profile_history = _blocking(_Calls.list_ranking_profile_history)
    activate_ranking_profile = _blocking(_Calls.activate_ranking_profile)
    deactivate_ranking_profile = _blocking(_Calls.deactivate_ranking_profile)
    rollback_ranking_profile = _blocking(_Calls.rollback_ranking_profile)
    get_node_edges = _blocking(_Calls.get_node_edges)
    aggregate_quantities = _blocking(_Calls.aggregate_quantities)
    aggregate_quantities_text = _blocking(_Calls.aggregate_quantities_text)
    submit_import = _blocking(_Calls.submit_import)
    get_import = _blocking(_Calls.get_import)
    open_import_upload = _blocking(_Calls.open_import_upload)
    start_import_upload = _blocking(_Calls.start_import_upload)
    get_node_provenance = _blocking(_Calls.get_node_provenance)
    get_node_neighborhood = _blocking(_Calls.get_node_neighborhood)
    get_node_chain = _blocking(_Calls.get_node_chain)
    aggregate_assertions = _blocking(_Calls.aggregate_assertions)
    get_assertion_state = _blocking(_Calls.get_assertion_state)
    get_event_extraction = _blocking(_Calls.get_event_extraction)
    organize = _blocking(_Calls.organize)
    get_caller = _blocking(_Calls.get_caller)
    list_retrievals = _blocking(_Calls.list_retrievals)
    list_node_retrievals = _blocking(_Calls.list_node_retrievals)
    get_nodes = _blocking(_Calls.get_nodes)


class AsyncMemoryClient:
    """`MemoryClient` with every method a coroutine. Use it with `async with`.

    Over HTTP it uses httpx's asynchronous client; in a directory the engine runs on one
    worker thread of its own, so the event loop never waits on storage or the embedder.
    """

    def __init__(
        self,
        target: str | Path = "./memory",
        *,
        api_key: str | None = None,
        settings: Settings | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        retries: RetryPolicy | None = None,
    ) -> None:
        self._where = _where(target)
        self._remote: AsyncHttpTransport | None = None
        self._local: InProcessTransport | None = None
        self._worker: ThreadPoolExecutor | None = None
        if _is_url(target):
            self._remote = AsyncHttpTransport(
                str(target).rstrip("/"),
                api_key=api_key,
                timeout=timeout,
                retries=retries or RetryPolicy(),
            )
        else:
            if api_key is not None:
                raise ValueError("api_key is for a server URL (http:// or https://), not a path")
            # One thread: the engine's calls run in order, as they do in a blocking client.
            self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="prme-client")
            self._local = InProcessTransport(Path(target), settings or Settings())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._where})"

    async def __aenter__(self) -> AsyncMemoryClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        if self._remote is not None:
            await self._remote.close()
        if self._local is not None and self._worker is not None:
            await asyncio.get_running_loop().run_in_executor(self._worker, self._local.close)
            self._worker.shutdown()

    async def export_to(
        self, out: TextIO, *, user_id: str | None = None, progress: TransferProgress | None = None
    ) -> int:
        """Write the user's whole export as NDJSON to `out`, a page at a time; returns the
        records written. `progress(done, total)` is called after each page."""
        loop = asyncio.get_running_loop()

        def page(cursor: str | None) -> portability.ExportPage:
            # The file is written on a worker thread; each page is fetched on the event loop.
            fetched = self.export_owner(cursor=cursor, user_id=user_id)
            return asyncio.run_coroutine_threadsafe(fetched, loop).result()

        return await asyncio.to_thread(write_export, page, out, progress)

    async def import_from(
        self,
        lines: Iterable[str],
        *,
        user_id: str | None = None,
        progress: TransferProgress | None = None,
    ) -> ImportTotals:
        """Import an export file (its lines, e.g. an open file) into the user's memory, a batch
        at a time. A line that is not a record is an InvalidRequestError naming it (the batches
        before it are written; importing the file again skips them). `progress(done, total)`
        follows each batch."""
        loop = asyncio.get_running_loop()

        def write(batch: portability.ImportBatch) -> portability.ImportReport:
            written = self.import_records(
                batch.records, version=batch.version, first_line=batch.first_line, user_id=user_id
            )
            return asyncio.run_coroutine_threadsafe(written, loop).result()

        return await asyncio.to_thread(_import_lines, lines, write, progress)

    async def _run(self, call: Call[_Result]) -> _Result:
        if self._remote is not None:
            return await self._remote.run(call)
        assert self._local is not None  # noqa: S101 - one of the two is set by __init__
        run = functools.partial(self._local.run, call)
        return await asyncio.get_running_loop().run_in_executor(self._worker, run)

    store = _awaitable(_Calls.store)
    retrieve = _awaitable(_Calls.retrieve)
    get_event = _awaitable(_Calls.get_event)
    get_event_nodes = _awaitable(_Calls.get_event_nodes)
    get_node = _awaitable(_Calls.get_node)
    list_nodes = _awaitable(_Calls.list_nodes)
    list_events = _awaitable(_Calls.list_events)
    delete_memory = _awaitable(_Calls.delete_memory)
    get_stats = _awaitable(_Calls.get_stats)
    get_limits = _awaitable(_Calls.get_limits)
    export_owner = _awaitable(_Calls.export_owner)
    import_records = _awaitable(_Calls.import_records)
    erase_owner = _awaitable(_Calls.erase_owner)
    get_usage = _awaitable(_Calls.get_usage)
    get_processing_status = _awaitable(_Calls.get_processing_status)
    get_retrieval_receipt = _awaitable(_Calls.get_retrieval_receipt)
    process_materializations = _awaitable(_Calls.process_materializations)
    process_pending = process_materializations
    reindex = _awaitable(_Calls.reindex)
    ingest = _awaitable(_Calls.ingest)
    ingest_fast = _awaitable(_Calls.ingest_fast)
    get_extraction_status = _awaitable(_Calls.get_extraction_status)
    retry_extraction = _awaitable(_Calls.retry_extraction)
    process_extractions = _awaitable(_Calls.process_extractions)
    promote = _awaitable(_Calls.promote)
    archive = _awaitable(_Calls.archive)
    reinforce = _awaitable(_Calls.reinforce)
    supersede = _awaitable(_Calls.supersede)
    evaluate_condition = _awaitable(_Calls.evaluate_condition)
    mark_contradiction = _awaitable(_Calls.mark_contradiction)
    resolve_contradiction = _awaitable(_Calls.resolve_contradiction)
    record_relevance = _awaitable(_Calls.record_relevance)
    evaluate_learning = _awaitable(_Calls.evaluate_learning)
    get_relevance = _awaitable(_Calls.get_relevance)
    list_relevance = _awaitable(_Calls.list_relevance)
    record_answer_citations = _awaitable(_Calls.record_answer_citations)
    get_answer_citations = _awaitable(_Calls.get_answer_citations)
    list_answer_citations = _awaitable(_Calls.list_answer_citations)
    replay_retrieval = _awaitable(_Calls.replay_retrieval)
    get_retrieval_context = _awaitable(_Calls.get_retrieval_context)
    resolve_tool_arguments = _awaitable(_Calls.resolve_tool_arguments)
    propose_aliases = _awaitable(_Calls.propose_aliases)
    list_alias_proposals = _awaitable(_Calls.list_alias_proposals)
    review_alias_proposal = _awaitable(_Calls.review_alias_proposal)
    create_ranking_profile = _awaitable(_Calls.create_ranking_profile)
    get_ranking_profile = _awaitable(_Calls.get_ranking_profile)
    list_ranking_profiles = _awaitable(_Calls.list_ranking_profiles)
    get_active_ranking_profile = _awaitable(_Calls.get_active_ranking_profile)
    list_ranking_profile_history = _awaitable(_Calls.list_ranking_profile_history)
    activate_ranking_profile = _awaitable(_Calls.activate_ranking_profile)
    deactivate_ranking_profile = _awaitable(_Calls.deactivate_ranking_profile)
    rollback_ranking_profile = _awaitable(_Calls.rollback_ranking_profile)
    get_node_edges = _awaitable(_Calls.get_node_edges)
    aggregate_quantities = _awaitable(_Calls.aggregate_quantities)
    aggregate_quantities_text = _awaitable(_Calls.aggregate_quantities_text)
    submit_import = _awaitable(_Calls.submit_import)
    get_import = _awaitable(_Calls.get_import)
    open_import_upload = _awaitable(_Calls.open_import_upload)
    start_import_upload = _awaitable(_Calls.start_import_upload)
    get_node_provenance = _awaitable(_Calls.get_node_provenance)
    get_node_neighborhood = _awaitable(_Calls.get_node_neighborhood)
    get_node_chain = _awaitable(_Calls.get_node_chain)
    aggregate_assertions = _awaitable(_Calls.aggregate_assertions)
    get_assertion_state = _awaitable(_Calls.get_assertion_state)
    get_event_extraction = _awaitable(_Calls.get_event_extraction)
    organize = _awaitable(_Calls.organize)
    get_caller = _awaitable(_Calls.get_caller)
    list_retrievals = _awaitable(_Calls.list_retrievals)
    list_node_retrievals = _awaitable(_Calls.list_node_retrievals)
    get_nodes = _awaitable(_Calls.get_nodes)

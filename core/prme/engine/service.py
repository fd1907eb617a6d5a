"""`MemoryEngine`: the facade every edge calls, one method per operation of the operations table."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from prme.engine import (
    aliases,
    assertions,
    conditions,
    contradictions,
    erase,
    expiry,
    feedback,
    graph,
    import_uploads,
    imports,
    ingest,
    ingest_fast,
    learning_fit,
    lifecycle,
    manage,
    metering,
    node_batch,
    organizer,
    portability,
    quantities,
    ranking_profiles,
    reads,
    receipt_listing,
    retrieve,
    store,
    work_dispatch,
)
from prme.engine.deps import EngineDeps
from prme.engine.extraction import saved_extraction
from prme.engine.identity import Principal, describe_caller
from prme.engine.ingest import IngestResult
from prme.engine.ingest_fast import FastIngestResult
from prme.engine.limits import unlimited_report
from prme.engine.receipt_context import get_retrieval_context
from prme.engine.reindex import ReindexProgress, ReindexReport, reindex_owner
from prme.engine.store import StoreResult
from prme.engine.work_dispatch import ProcessingReport, SweepReport
from prme.engine.work_refs import WorkRef
from prme.model import listings
from prme.model.aliases import AliasDecision, AliasProposalItem, AliasStatus
from prme.model.assertions import (
    AssertionAggregation,
    AssertionQuery,
    AssertionState,
    AssertionStateQuery,
)
from prme.model.bindings import ToolArgumentResolution
from prme.model.caller import CallerIdentity
from prme.model.conditions import ConditionInput
from prme.model.enums import ProcessingStatus, Scope, WorkFailure, WorkFamily
from prme.model.erasure import OwnerErasure
from prme.model.extraction import SavedExtraction
from prme.model.feedback import (
    AnswerCitationInput,
    AnswerCitationPage,
    AnswerCitationRecord,
    RelevanceInput,
    RelevancePage,
    RelevanceRecord,
    ReplayReport,
)
from prme.model.graph import (
    DEFAULT_MAX_HOPS,
    DEFAULT_OPERATION_LIMIT,
    ChainDirection,
    NodeChain,
    NodeNeighborhood,
    NodeProvenance,
)
from prme.model.imports import BulkImportInput, BulkImportStatus, ImportChunkMessage, ImportJob
from prme.model.inputs import (
    FastIngestInput,
    IngestInput,
    RetrieveInput,
    StoreInput,
)
from prme.model.learning import (
    ActiveRankingProfile,
    LearningEvaluation,
    LearningInput,
    RankingProfile,
    RankingProfileInput,
    RankingProfileState,
)
from prme.model.limits import LimitsReport
from prme.model.node_batch import NodeBatch
from prme.model.organizer import OrganizeInput, OrganizeReport, OrganizerPass
from prme.model.portability import ExportPage, ImportBatch, ImportReport
from prme.model.quantities import (
    QuantityAggregation,
    QuantityAggregationQuery,
    QuantityQuestionAnswer,
)
from prme.model.receipt_listing import (
    DEFAULT_RETRIEVAL_PAGE,
    MAX_NODE_SCAN,
    NodeRetrievalPage,
    RetrievalPage,
)
from prme.model.records import Event, MemoryEdge, MemoryNode, OwnerKey, WorkItem
from prme.model.uploads import ImportUploadOpened, UploadRequest
from prme.model.usage import UsagePeriod, UsageReport
from prme.retrieval.context_rebuild import RebuiltContext
from prme.retrieval.receipts import RetrievalReceipt
from prme.retrieval.response_size import ResponseBudget
from prme.retrieval.results import RetrievalResponse


class MemoryEngine:
    def __init__(self, deps: EngineDeps) -> None:
        self.deps = deps

    def store(
        self, owner: OwnerKey, request: StoreInput, *, idempotency_key: str | None = None
    ) -> StoreResult:
        return store.store_memory(self.deps, owner, request, idempotency_key)

    def ingest_fast(
        self, owner: OwnerKey, request: FastIngestInput, *, idempotency_key: str | None = None
    ) -> FastIngestResult:
        return ingest_fast.ingest_fast(self.deps, owner, request, idempotency_key)

    def ingest(
        self, owner: OwnerKey, request: IngestInput, *, idempotency_key: str | None = None
    ) -> IngestResult:
        return ingest.ingest_message(self.deps, owner, request, idempotency_key)

    def get_extraction_status(
        self, owner: OwnerKey, event_id: str
    ) -> tuple[ProcessingStatus, list[WorkItem]]:
        return reads.get_processing_status(self.deps, owner, event_id, family="extract")

    def get_event_extraction(self, owner: OwnerKey, event_id: str) -> SavedExtraction:
        return saved_extraction(self.deps, owner, event_id)

    def retry_extraction(
        self, owner: OwnerKey, event_id: str
    ) -> tuple[ProcessingStatus, list[WorkItem]]:
        reads.get_event(self.deps, owner, event_id)
        ingest.retry_extraction(self.deps, owner, event_id)
        return self.get_extraction_status(owner, event_id)

    def process_extractions(
        self, owner: OwnerKey | None = None, *, budget_ms: int | None = None
    ) -> ProcessingReport:
        return work_dispatch.process_extractions(self.deps, owner, budget_ms=budget_ms)

    def retrieve(
        self,
        owner: OwnerKey,
        request: RetrieveInput,
        *,
        response_budget: ResponseBudget | None = None,
    ) -> RetrievalResponse:
        response = retrieve.retrieve_memories(
            self.deps, owner, request, response_budget=response_budget
        )
        metering.meter_retrieval(self.deps, owner, response)
        return response

    def get_event(self, owner: OwnerKey, event_id: str) -> Event:
        return reads.get_event(self.deps, owner, event_id)

    def get_event_nodes(self, owner: OwnerKey, event_id: str) -> list[MemoryNode]:
        return reads.list_event_nodes(self.deps, owner, event_id)

    def get_node(self, owner: OwnerKey, node_id: str) -> MemoryNode:
        return reads.get_node(self.deps, owner, node_id)

    def get_nodes(self, owner: OwnerKey, node_ids: Sequence[str]) -> NodeBatch:
        return node_batch.get_nodes(self.deps, owner, node_ids)

    # -- managing stored memory (engine/manage.py) --

    def list_nodes(
        self,
        owner: OwnerKey,
        node_filter: listings.NodeFilter | None = None,
        *,
        limit: int = manage.DEFAULT_PAGE,
        after_id: str | None = None,
    ) -> listings.NodePage:
        return manage.list_nodes(
            self.deps, owner, node_filter or listings.NodeFilter(), limit=limit, after_id=after_id
        )

    def list_events(
        self,
        owner: OwnerKey,
        event_filter: listings.EventFilter | None = None,
        *,
        limit: int = manage.DEFAULT_PAGE,
        after_id: str | None = None,
    ) -> listings.EventPage:
        return manage.list_events(
            self.deps, owner, event_filter or listings.EventFilter(), limit=limit, after_id=after_id
        )

    def delete_memory(self, owner: OwnerKey, event_id: str) -> listings.MemoryDeletion:
        deletion = manage.delete_memory(self.deps, owner, event_id)
        metering.meter_deletion(self.deps, owner, deletion)
        return deletion

    def erase_owner(self, owner: OwnerKey, *, confirm: str) -> OwnerErasure:
        return erase.erase_owner(self.deps, owner, confirm=confirm)

    def get_stats(self, owner: OwnerKey) -> listings.OwnerStats:
        return manage.get_stats(self.deps, owner)

    # -- moving an owner's memory (engine/portability.py) --

    def export_owner(self, owner: OwnerKey, cursor: str | None = None) -> ExportPage:
        return portability.export_owner(self.deps, owner, cursor)

    def import_records(self, owner: OwnerKey, batch: ImportBatch) -> ImportReport:
        return portability.import_records(self.deps, owner, batch)

    def get_processing_status(
        self, owner: OwnerKey, event_id: str
    ) -> tuple[ProcessingStatus, list[WorkItem]]:
        return reads.get_processing_status(self.deps, owner, event_id)

    def get_retrieval_receipt(self, owner: OwnerKey, request_id: str) -> RetrievalReceipt:
        return reads.get_receipt(self.deps, owner, request_id)

    def get_retrieval_context(self, owner: OwnerKey, request_id: str) -> RebuiltContext:
        return get_retrieval_context(self.deps, owner, request_id)

    def process_queued(self, refs: Sequence[WorkRef]) -> ProcessingReport:
        return work_dispatch.process_work_refs(self.deps, refs)

    def fail_work(self, ref: WorkRef, reason: WorkFailure) -> bool:
        return work_dispatch.fail_work(self.deps, ref, reason)

    def promote(
        self, owner: OwnerKey, node_id: str, *, idempotency_key: str | None = None
    ) -> MemoryNode:
        return lifecycle.promote(self.deps, owner, node_id, idempotency_key=idempotency_key)

    def archive(
        self, owner: OwnerKey, node_id: str, *, idempotency_key: str | None = None
    ) -> MemoryNode:
        return lifecycle.archive(self.deps, owner, node_id, idempotency_key=idempotency_key)

    def reinforce(
        self,
        owner: OwnerKey,
        node_id: str,
        *,
        evidence_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> MemoryNode:
        return lifecycle.reinforce(
            self.deps, owner, node_id, evidence_id=evidence_id, idempotency_key=idempotency_key
        )

    def supersede(
        self, owner: OwnerKey, *, old_node_id: str, new_node_id: str, evidence_id: str | None = None
    ) -> tuple[MemoryNode, MemoryNode]:
        return lifecycle.supersede(
            self.deps,
            owner,
            old_node_id=old_node_id,
            new_node_id=new_node_id,
            evidence_id=evidence_id,
        )

    def archive_expired(self, *, limit: int = 100) -> int:
        """Archive up to `limit` expired nodes (the count returned); the same maintenance pass
        deletes up to ten times as many expired receipts."""
        expiry.delete_expired_receipts(self.deps, limit=10 * limit)
        return expiry.archive_expired_nodes(self.deps, limit=limit)

    def organize(self, owner: OwnerKey, request: OrganizeInput) -> OrganizeReport:
        """Run the organizer's jobs over the owner's memory within the request's budget."""
        return organizer.organize(self.deps, owner, request)

    def organize_owners(
        self, tenant_ids: Callable[[], Sequence[str]], *, budget_ms: int
    ) -> OrganizerPass | None:
        """Inside the organizer's daily window, the organizer over every owner of the tenants
        `tenant_ids` lists, sharing `budget_ms`; None outside it (nothing read)."""
        return organizer.organize_owners(self.deps, tenant_ids, budget_ms=budget_ms)

    def sweep_overdue(self, *, overdue_seconds: int | Mapping[WorkFamily, int]) -> SweepReport:
        """Re-announce overdue queued work of every family; fail what stays overdue."""
        return work_dispatch.sweep_overdue_work(self.deps, overdue_seconds=overdue_seconds)

    def process_materializations(
        self, owner: OwnerKey | None = None, *, budget_ms: int | None = None
    ) -> ProcessingReport:
        return work_dispatch.process_pending_work(self.deps, owner, budget_ms=budget_ms)

    def reindex(self, owner: OwnerKey, *, progress: ReindexProgress | None = None) -> ReindexReport:
        return reindex_owner(self.deps, owner, progress=progress)

    def list_owners(self, tenant_id: str) -> list[str]:
        """Every owner of a tenant with stored events (operator use: reindexing a tenant)."""
        return self.deps.ledger.list_owners(tenant_id)

    # -- relevance feedback and answer citations (engine/feedback.py) --

    def record_relevance(self, owner: OwnerKey, request: RelevanceInput) -> RelevanceRecord:
        return feedback.record_relevance(self.deps, owner, request)

    def get_relevance(self, owner: OwnerKey, feedback_id: str) -> RelevanceRecord:
        return feedback.get_relevance(self.deps, owner, feedback_id)

    def list_relevance(
        self,
        owner: OwnerKey,
        *,
        limit: int = 100,
        after_id: str | None = None,
        request_id: str | None = None,
    ) -> RelevancePage:
        return feedback.list_relevance(
            self.deps, owner, limit=limit, after_id=after_id, request_id=request_id
        )

    def record_answer_citations(
        self, owner: OwnerKey, request: AnswerCitationInput
    ) -> AnswerCitationRecord:
        return feedback.record_answer_citations(self.deps, owner, request)

    def get_answer_citations(self, owner: OwnerKey, citation_id: str) -> AnswerCitationRecord:
        return feedback.get_answer_citations(self.deps, owner, citation_id)

    def list_answer_citations(
        self,
        owner: OwnerKey,
        *,
        limit: int = 100,
        after_id: str | None = None,
        request_id: str | None = None,
    ) -> AnswerCitationPage:
        return feedback.list_answer_citations(
            self.deps, owner, limit=limit, after_id=after_id, request_id=request_id
        )

    def evaluate_learning(self, owner: OwnerKey, request: LearningInput) -> LearningEvaluation:
        return learning_fit.evaluate_learning(self.deps, owner, request)

    def replay_retrieval(self, owner: OwnerKey, request_id: str) -> ReplayReport:
        return feedback.replay_receipt(self.deps, owner, request_id)

    def resolve_tool_arguments(
        self, owner: OwnerKey, request_id: str, arguments: dict[str, Any]
    ) -> ToolArgumentResolution:
        return feedback.resolve_saved_tool_arguments(self.deps, owner, request_id, arguments)

    # -- alias proposals and reviews (engine/aliases.py) --

    def propose_aliases(
        self, owner: OwnerKey | None = None, *, budget: aliases.AliasScanBudget | None = None
    ) -> aliases.AliasScanReport:
        """Scan one owner's entity names for alias proposals, or (None) every owner with
        pending alias work, within `budget`; an unfinished scan continues on the next call."""
        return aliases.propose_aliases(self.deps, owner, budget=budget)

    def list_alias_proposals(
        self,
        owner: OwnerKey,
        *,
        status: AliasStatus | None = None,
        scope: Scope | None = None,
        limit: int = aliases.DEFAULT_LIST_LIMIT,
    ) -> list[AliasProposalItem]:
        return aliases.list_alias_proposals(
            self.deps, owner, status=status, scope=scope, limit=limit
        )

    def review_alias_proposal(
        self,
        owner: OwnerKey,
        proposal_operation_id: str,
        *,
        actor: Principal,
        decision: AliasDecision,
        reviewer_id: str,
        reason: str | None = None,
    ) -> AliasProposalItem:
        return aliases.review_alias_proposal(
            self.deps,
            owner,
            proposal_operation_id,
            actor=actor,
            decision=decision,
            reviewer_id=reviewer_id,
            reason=reason,
        )

    def get_node_edges(self, owner: OwnerKey, node_id: str) -> list[MemoryEdge]:
        return aliases.list_node_edges(self.deps, owner, node_id)

    # -- grounded quantity aggregation (engine/quantities.py) --
    def aggregate_quantities(
        self, owner: OwnerKey, query: QuantityAggregationQuery
    ) -> QuantityAggregation:
        return quantities.aggregate_quantities(self.deps, owner, query)

    def aggregate_quantities_text(self, owner: OwnerKey, question: str) -> QuantityQuestionAnswer:
        return quantities.aggregate_text(self.deps, owner, question)

    # -- per-tenant limits (engine/limits.py) --

    def get_caller(self, principal: Principal) -> CallerIdentity:
        """Who the caller is: tenant, role, owner, key id (engine/identity.py)."""
        return describe_caller(principal)

    def get_limits(self, tenant_id: str) -> LimitsReport:
        """The limits of a tenant, the use of each and when it resets."""
        if self.deps.limits is None:
            return unlimited_report(tenant_id)
        return self.deps.limits.report(tenant_id)

    # -- bulk imports (engine/imports.py) --

    def submit_import(
        self, owner: OwnerKey, request: BulkImportInput, *, idempotency_key: str | None = None
    ) -> ImportJob:
        return imports.submit_import(self.deps, owner, request, idempotency_key)

    def get_import(self, owner: OwnerKey, import_id: str) -> ImportJob:
        return imports.get_import(self.deps, owner, import_id)

    def open_import_upload(
        self, owner: OwnerKey, request: UploadRequest, *, idempotency_key: str | None = None
    ) -> ImportUploadOpened:
        job, target = import_uploads.open_upload_import(self.deps, owner, request, idempotency_key)
        return ImportUploadOpened(job=BulkImportStatus.of(job), upload=target)

    def start_import_upload(
        self, owner: OwnerKey, import_id: str, *, idempotency_key: str | None = None
    ) -> ImportJob:
        # Starting twice is harmless (chunks already handed over are not sent again): the key
        # adds nothing a repeat would not already give.
        del idempotency_key
        return import_uploads.start_upload_import(self.deps, owner, import_id)

    def commit_import_chunk(self, message: ImportChunkMessage) -> imports.ChunkOutcome:
        return imports.commit_import_chunk(self.deps, message)

    # -- metering (engine/metering.py) --
    def get_usage(
        self,
        tenant_id: str,
        *,
        user_id: str | None = None,
        start: datetime | None = None,
        end: datetime | None = None,
        period: UsagePeriod = "day",
    ) -> UsageReport:
        return metering.usage_report(
            self.deps, tenant_id, user_id=user_id, start=start, end=end, period=period
        )

    # -- conditional memories and contradictions (engine/conditions.py, contradictions.py) --

    def evaluate_condition(
        self,
        owner: OwnerKey,
        node_id: str,
        request: ConditionInput,
        *,
        idempotency_key: str | None = None,
    ) -> MemoryNode:
        return conditions.evaluate_condition(
            self.deps, owner, node_id, request, idempotency_key=idempotency_key
        )

    def mark_contradiction(
        self, owner: OwnerKey, *, node_a_id: str, node_b_id: str, evidence_id: str | None = None
    ) -> tuple[MemoryNode, MemoryNode]:
        return contradictions.mark_contradiction(
            self.deps, owner, node_a_id=node_a_id, node_b_id=node_b_id, evidence_id=evidence_id
        )

    def resolve_contradiction(
        self, owner: OwnerKey, *, winner_id: str, loser_id: str, evidence_id: str | None = None
    ) -> tuple[MemoryNode, MemoryNode]:
        return contradictions.resolve_contradiction(
            self.deps, owner, winner_id=winner_id, loser_id=loser_id, evidence_id=evidence_id
        )

    # -- graph and provenance reads (engine/graph.py) --
    def get_node_provenance(
        self,
        owner: OwnerKey,
        node_id: str,
        *,
        operation_cursor: str | None = None,
        operation_limit: int = DEFAULT_OPERATION_LIMIT,
    ) -> NodeProvenance:
        return graph.get_node_provenance(
            self.deps,
            owner,
            node_id,
            operation_cursor=operation_cursor,
            operation_limit=operation_limit,
        )

    def get_node_neighborhood(
        self, owner: OwnerKey, node_id: str, *, max_hops: int = DEFAULT_MAX_HOPS
    ) -> NodeNeighborhood:
        return graph.get_node_neighborhood(self.deps, owner, node_id, max_hops=max_hops)

    def get_node_chain(
        self, owner: OwnerKey, node_id: str, *, direction: ChainDirection = "forward"
    ) -> NodeChain:
        return graph.get_node_chain(self.deps, owner, node_id, direction=direction)

    # -- assertions (engine/assertions.py) --
    def aggregate_assertions(self, owner: OwnerKey, query: AssertionQuery) -> AssertionAggregation:
        return assertions.aggregate_assertions(self.deps, owner, query)

    def get_assertion_state(self, owner: OwnerKey, query: AssertionStateQuery) -> AssertionState:
        return assertions.get_assertion_state(self.deps, owner, query)

    # -- receipt listings for the inspector (engine/receipt_listing.py) --
    def list_retrievals(
        self,
        owner: OwnerKey,
        *,
        cursor: str | None = None,
        limit: int = DEFAULT_RETRIEVAL_PAGE,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> RetrievalPage:
        return receipt_listing.list_retrievals(
            self.deps, owner, cursor=cursor, limit=limit, since=since, until=until
        )

    def list_node_retrievals(
        self,
        owner: OwnerKey,
        node_id: str,
        *,
        cursor: str | None = None,
        scan_limit: int = MAX_NODE_SCAN,
    ) -> NodeRetrievalPage:
        return receipt_listing.list_node_retrievals(
            self.deps, owner, node_id, cursor=cursor, scan_limit=scan_limit
        )

    # -- ranking profiles (engine/ranking_profiles.py) --
    def create_ranking_profile(
        self, owner: OwnerKey, request: RankingProfileInput
    ) -> RankingProfile:
        return ranking_profiles.create_ranking_profile(self.deps, owner, request)

    def get_ranking_profile(self, owner: OwnerKey, profile_id: str) -> RankingProfile:
        return ranking_profiles.get_ranking_profile(self.deps, owner, profile_id)

    def list_ranking_profiles(
        self,
        owner: OwnerKey,
        *,
        limit: int = ranking_profiles.DEFAULT_PROFILE_PAGE,
        after_id: str | None = None,
    ) -> list[RankingProfile]:
        return ranking_profiles.list_ranking_profiles(
            self.deps, owner, limit=limit, after_id=after_id
        )

    def get_active_ranking_profile(
        self, owner: OwnerKey, scopes: Sequence[Scope] = ()
    ) -> ActiveRankingProfile:
        return ranking_profiles.get_active_ranking_profile(self.deps, owner, scopes)

    def list_ranking_profile_history(
        self,
        owner: OwnerKey,
        scopes: Sequence[Scope] = (),
        *,
        limit: int = ranking_profiles.DEFAULT_HISTORY,
    ) -> list[RankingProfileState]:
        return ranking_profiles.list_ranking_profile_history(self.deps, owner, scopes, limit=limit)

    def activate_ranking_profile(
        self,
        owner: OwnerKey,
        profile_id: str,
        *,
        actor: Principal,
        change_id: str | None = None,
        scopes: Sequence[Scope] | None = None,
    ) -> RankingProfileState:
        return ranking_profiles.activate_ranking_profile(
            self.deps, owner, profile_id, actor=actor, change_id=change_id, scopes=scopes
        )

    def deactivate_ranking_profile(
        self, owner: OwnerKey, *, actor: Principal, change_id: str, scopes: Sequence[Scope]
    ) -> RankingProfileState:
        return ranking_profiles.deactivate_ranking_profile(
            self.deps, owner, actor=actor, change_id=change_id, scopes=scopes
        )

    def rollback_ranking_profile(
        self,
        owner: OwnerKey,
        *,
        actor: Principal,
        change_id: str,
        scopes: Sequence[Scope],
        profile_id: str,
    ) -> RankingProfileState:
        return ranking_profiles.rollback_ranking_profile(
            self.deps, owner, actor=actor, change_id=change_id, scopes=scopes, profile_id=profile_id
        )

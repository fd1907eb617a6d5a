"""Hybrid retrieval: vector + BM25 candidates, rank fusion, filters, caps, packing and a receipt."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from prme.engine.config import EngineConfig
from prme.engine.contradiction_links import contradicted_by
from prme.engine.deadlines import share_of_deadline
from prme.engine.deps import EngineDeps
from prme.engine.ranking_profiles import profile_for_retrieval
from prme.engine.session_context import SessionContext, expand_session_context
from prme.errors import EmbeddingUnavailableError, PrmeError
from prme.model.bindings import SavedValueBinding
from prme.model.canonical import sha256_text
from prme.model.enums import (
    DEFAULT_EXCLUDED_EPISTEMIC_TYPES,
    INACTIVE_LIFECYCLE_STATES,
    LifecycleState,
    NodeType,
    RetrievalMode,
)
from prme.model.extraction import states_current_value
from prme.model.inputs import RetrieveInput
from prme.model.learning import RankingWeights
from prme.model.records import VALUE_BINDINGS_METADATA_KEY, JournalRecord, MemoryNode, OwnerKey
from prme.model.search import IndexFilter, IndexQuery
from prme.retrieval.caps import Selection, select_results
from prme.retrieval.fusion import (
    CORRECTION,
    CURRENT_VALUE,
    NAMED_ENTITY,
    FusedCandidate,
    FusionConfig,
    FusionInput,
    context_scores,
    fuse,
    query_features,
    weak_lexical_hits,
)
from prme.retrieval.packing import PackedContext, pack_context, packing_order
from prme.retrieval.query_analysis import (
    asks_for_current_state,
    mentioned_periods,
    named_speakers,
)
from prme.retrieval.receipts import (
    RECEIPT_OPERATION,
    RECEIPT_SCHEMA_VERSION,
    RECEIPT_SCHEMA_VERSION_UNFOLDED,
    ReceiptConfig,
    ReceiptContext,
    RetrievalReceipt,
    SessionContextEntry,
    stored_receipt_payload,
)
from prme.retrieval.response_size import ResponseBudget, fit_response
from prme.retrieval.results import (
    ContextBundle,
    ExcludedCandidate,
    ResponseSizeLimit,
    RetrievalMetrics,
    RetrievalResponse,
    RetrievalResult,
)
from prme.retrieval.update_wording import (
    names_mentioned,
    worded_as_change,
    worded_as_correction,
)
from prme.retrieval.value_bindings import bindings_from_metadata, visible_bindings
from prme.retrieval.weight_fit import apply_weights

VECTOR_FAILURE = "VECTOR"
# Shares of what is left of the request's deadline: a hung embedder costs the vector channel
# (a degraded answer), not the lexical search; the search leaves time to read the candidates
# from the ledger and save the receipt.
EMBED_SHARE_OF_DEADLINE = 0.3
SEARCH_SHARE_OF_DEADLINE = 0.6


def build_index_filter(request: RetrieveInput, now: datetime) -> IndexFilter:
    f = request.filters
    default_mode = (request.mode or RetrievalMode.DEFAULT) is RetrievalMode.DEFAULT
    return IndexFilter(
        exclude_node_types=frozenset(f.exclude_node_types or ()) if f else frozenset(),
        source_types=frozenset(f.source_types) if f and f.source_types is not None else None,
        exclude_lifecycle_states=INACTIVE_LIFECYCLE_STATES if default_mode else frozenset(),
        exclude_epistemic_types=DEFAULT_EXCLUDED_EPISTEMIC_TYPES if default_mode else frozenset(),
        scopes=f.scopes if f else None,
        event_time_from=f.event_time_from if f else None,
        event_time_to=f.event_time_to if f else None,
        time_from=f.time_from if f else None,
        time_to=f.time_to if f else None,
        not_expired_at=now,
        conditions_must_hold=default_mode,
    )


@dataclass
class Candidates:
    """Both channels' hits joined per node, hydrated from the ledger and re-filtered."""

    nodes: dict[str, MemoryNode]
    ranks: dict[str, dict[str, int]]
    scores: dict[str, dict[str, float]]
    semantic: dict[str, float]
    vector_hits: int
    lexical_hits: int
    failures: list[str] = field(default_factory=list)
    model_key: str | None = None


def gather_candidates(
    deps: EngineDeps, owner: OwnerKey, request: RetrieveInput, flt: IndexFilter, k: int
) -> Candidates:
    failures: list[str] = []
    vector: tuple[float, ...] | None = None
    model_key: str | None = None
    with share_of_deadline(EMBED_SHARE_OF_DEADLINE):
        try:
            vector = tuple(float(x) for x in deps.embedder.embed([request.query])[0])
            model_key = deps.embedder.model.key
        except EmbeddingUnavailableError:
            failures.append(VECTOR_FAILURE)
    if flt.source_types is not None and not flt.source_types:
        # An empty allow-list admits nothing: no need to ask the index.
        return Candidates({}, {}, {}, {}, 0, 0, failures, model_key)
    with share_of_deadline(SEARCH_SHARE_OF_DEADLINE):
        hits = deps.index.search(
            owner,
            IndexQuery(
                text=request.query,
                vector=vector,
                embedding_model=model_key,
                vector_k=k,
                lexical_k=k,
                filters=flt,
            ),
        )
    if hits.vector_failure and VECTOR_FAILURE not in failures:
        failures.append(VECTOR_FAILURE)
    ranks: dict[str, dict[str, int]] = {}
    scores: dict[str, dict[str, float]] = {}
    for channel, channel_hits in (("vector", hits.vector), ("lexical", hits.lexical)):
        rank, previous = 0, None
        for position, (node_id, score) in enumerate(channel_hits, start=1):
            # Equal scores share a rank, so identical records tie and the tie-break decides.
            if score != previous:
                rank, previous = position, score
            ranks.setdefault(node_id, {})[channel] = rank
            scores.setdefault(node_id, {})[channel] = score
    # The ledger is the truth: a node archived or expired since it was indexed drops out here.
    # An eventually consistent read (half the cost) suffices: the index already lags the
    # ledger, a node not yet readable is dropped like one not yet indexed, and the filter
    # below re-checks the state read; lifecycle moves and deletes keep strong reads.
    nodes = deps.ledger.get_nodes(owner, list(ranks), consistent=False) if ranks else {}
    live = {nid: node for nid, node in nodes.items() if flt.matches(node)}
    return Candidates(
        nodes=live,
        ranks=ranks,
        scores=scores,
        semantic=dict(hits.semantic),
        vector_hits=len(hits.vector),
        lexical_hits=len(hits.lexical),
        failures=failures,
        model_key=model_key,
    )


def _update_features(node: MemoryNode) -> dict[str, float]:
    """A claim that superseded an earlier value is the current one; a record worded as the
    speaker's change ("I moved to", "no longer", "Got promoted! I'm a Senior Designer now")
    says so itself, even when extraction found no earlier value to supersede. Both get the
    whole bonus: with half, the older record that repeats the question's words ("My job title
    is ...") kept winning (updates benchmark: 183 to 198 of 207 first, held-out 68 to 70/75)."""
    features = {CORRECTION: 1.0} if worded_as_correction(node.content) else {}
    if states_current_value(node.metadata) or worded_as_change(node.content):
        features[CURRENT_VALUE] = 1.0
    return features


def _named_entities(nodes: Mapping[str, MemoryNode]) -> set[str]:
    """The entity nodes among the candidates whose name a candidate record contains."""
    entities = {nid: n.content for nid, n in nodes.items() if n.node_type is NodeType.ENTITY}
    if not entities:
        return set()
    records = (n.content for n in nodes.values() if n.node_type is not NodeType.ENTITY)
    return names_mentioned(entities, records)


def fusion_config_for(
    config: EngineConfig, query: str, ranking_weights: RankingWeights | None = None
) -> FusionConfig:
    """The fusion settings of a retrieval of `query`: the engine's scoring settings, with
    what `ranking_weights` (a ranking profile's) overrides. The one place weights meet the
    ranking."""
    fusion_config = FusionConfig(
        rrf_k=config.scoring.rrf_k,
        recency_boost=config.scoring.rrf_recency_boost,
        tie_break=config.scoring.rrf_tie_break,
        current_state=asks_for_current_state(query),
        weak_lexical_share=config.scoring.weak_lexical_share,
        speaker_boost=config.scoring.speaker_boost,
        time_mention_boost=config.scoring.time_mention_boost,
        session_neighbour_weight=config.scoring.session_neighbour_weight,
        session_neighbour_span=config.scoring.session_neighbour_span,
        current_value_boost=config.scoring.current_value_boost,
        correction_boost=config.scoring.correction_boost,
        current_state_entities_last=config.scoring.current_state_entities_last,
    )
    if ranking_weights is None:
        return fusion_config
    return apply_weights(fusion_config, ranking_weights)


def drop_weak_lexical_ranks(candidates: Candidates, share: float) -> None:
    """Weak lexical hits (`weak_lexical_hits`) are fused without their lexical rank."""
    if share <= 0:
        return
    lexical = {nid: s["lexical"] for nid, s in candidates.scores.items() if "lexical" in s}
    for node_id in weak_lexical_hits(lexical, share):
        candidates.ranks[node_id].pop("lexical", None)


def _ranking_settings(
    deps: EngineDeps, owner: OwnerKey, request: RetrieveInput, flt: IndexFilter
) -> tuple[FusionConfig, str | None]:
    """A retrieval's fusion settings and the ranking profile that set them: the owner's profile
    active for its scope filter, unless the request asks for none (nothing is read then). The
    receipt saves the settings, so a replay ranks with them whatever is active later."""
    wanted = request.ranking_profile == "active"
    profile = profile_for_retrieval(deps, owner, flt.scopes) if wanted else None
    if profile is None:
        return fusion_config_for(deps.config, request.query), None
    return fusion_config_for(deps.config, request.query, profile.weights), profile.profile_id


def retrieve_memories(
    deps: EngineDeps,
    owner: OwnerKey,
    request: RetrieveInput,
    *,
    response_budget: ResponseBudget | None = None,
) -> RetrievalResponse:
    """Rank, select and pack; with `response_budget`, the records a surface sends are cut (in
    rank order) to what its response can carry, and the response says how many were left out.
    Unless the request asks for none, the owner's ranking profile active for its scope filter
    sets fused-ranking weights (the receipt saves the settings used and names the profile)."""
    started = time.perf_counter()
    config = deps.config
    now = deps.clock.now()
    request_id = deps.ids()
    # No limit asked: as many results as the token budget holds (up to fill_limit).
    requested = request.limit if request.limit is not None else config.retrieval.default_limit
    fill_budget = requested is None
    limit = config.retrieval.fill_limit if requested is None else requested
    budget = request.token_budget
    if budget is None:
        budget = config.retrieval.default_token_budget
    flt = build_index_filter(request, now)

    # A budget fill ranks deeper; an explicit limit keeps a margin for caps and filters.
    candidate_depth = (
        max(config.retrieval.candidate_k, config.retrieval.fill_candidate_k)
        if fill_budget
        else max(config.retrieval.candidate_k, limit * 3)
    )
    candidates = gather_candidates(deps, owner, request, flt, candidate_depth)
    searched = time.perf_counter()

    fusion_config, profile_id = _ranking_settings(deps, owner, request, flt)
    drop_weak_lexical_ranks(candidates, fusion_config.weak_lexical_share)
    speakers = {n.speaker for n in candidates.nodes.values() if n.speaker}
    named = named_speakers(request.query, speakers) if speakers else set()
    periods = mentioned_periods(request.query)
    named_entities = _named_entities(candidates.nodes) if fusion_config.current_state else set()
    fused = fuse(
        [
            FusionInput(
                nid,
                candidates.ranks[nid],
                node.effective_time.timestamp(),
                query_features(node.speaker, node.effective_time, named, periods)
                | _update_features(node)
                | ({NAMED_ENTITY: 1.0} if nid in named_entities else {}),
                node.session_id,
            )
            for nid, node in candidates.nodes.items()
        ],
        fusion_config,
    )
    has_cosine = any(nid in candidates.semantic for nid in candidates.nodes)
    min_score_skipped = (
        request.min_score is not None and bool(candidates.failures) and not has_cosine
    )
    selection = select_results(
        [candidates.nodes[c.node_id] for c in fused],
        semantic=candidates.semantic,
        min_score=request.min_score,
        apply_min_score=not min_score_skipped,
        max_per_source=request.max_per_source,
        max_per_evidence=request.max_per_evidence,
        limit=limit,
    )
    context = SessionContext(selection)
    plain_fill = fill_budget and request.min_score is None
    if plain_fill and request.max_per_source is None and request.max_per_evidence is None:
        context = expand_session_context(
            deps,
            owner,
            flt,
            selection,
            anchors=config.retrieval.session_context_anchors,
            radius=config.retrieval.session_context_radius,
        )
        selection = context.selection

    def pack(nodes: list[MemoryNode]) -> PackedContext:
        return pack_context(
            nodes,
            token_budget=budget,
            counter=deps.token_counter,
            context_format=request.context_format,
            fold_repeated_text=config.packing.fold_repeated_text,
            layout=config.packing.reader_layout,
        )

    packed = pack(selection.selected)
    if fill_budget:
        # The results are the records the context holds; the rest did not fit the budget.
        selection = selection.keep_only({e.node_id for e in packed.entries}, "token_budget")
    size_limit: ResponseSizeLimit | None = None
    if response_budget is not None:
        cut = fit_response(
            selection,
            response_budget,
            candidates=len(fused) + len(context.fetched),
            context_format=request.context_format,
            in_context=packed.lines.keys(),
        )
        if cut.omitted:
            selection = cut.selection
            # Packing admits in rank order, so a ranked prefix packs as the prefix of the
            # context it had: only the records cut for size leave it.
            packed = pack(selection.selected)
            size_limit = ResponseSizeLimit(
                omitted=cut.omitted,
                max_response_bytes=response_budget.max_bytes,
                message=f"{cut.omitted} ranked records were left out to keep the response under "
                f"{response_budget.max_bytes} bytes; ask for fewer (limit or token_budget) or "
                "narrow the query",
            )
    bundle = _bundle(request, budget, selection, packed)
    decay = config.packing.session_context_rank_fusion_score_decay
    scores_of_context = context_scores(
        context.anchor_of, context.fetched, fused, candidates.semantic, decay
    )
    results = _results(
        selection,
        fused,
        candidates,
        scores_of_context,
        contradicted_by(deps, owner, selection.selected),
    )

    selected = {node.id: node.content for node in selection.selected}
    receipt = RetrievalReceipt(
        schema_version=(
            RECEIPT_SCHEMA_VERSION
            if config.packing.fold_repeated_text
            else RECEIPT_SCHEMA_VERSION_UNFOLDED
        ),
        request_id=request_id,
        owner_id=owner.owner_id,
        created_at=now,
        query=request.query,
        query_sha256=sha256_text(request.query),
        reference_time=request.reference_time or now,
        config=ReceiptConfig(
            retrieval_profile=config.retrieval_profile,
            ranking_profile_id=profile_id,
            fusion=fusion_config,
            mode=(request.mode or RetrievalMode.DEFAULT).value,
            limit=limit,
            token_budget=budget,
            min_score=request.min_score,
            min_score_skipped=min_score_skipped,
            max_per_source=request.max_per_source,
            max_per_evidence=request.max_per_evidence,
            context_format=request.context_format,
            packing_order=packing_order(request.context_format, config.packing.reader_layout),
            fold_repeated_text=config.packing.fold_repeated_text,
            session_context_rank_fusion_score_decay=(
                config.packing.session_context_rank_fusion_score_decay
            ),
            filters=request.filters.model_dump(mode="json") if request.filters else {},
            embedding_model=candidates.model_key,
            token_counter=deps.token_counter.name,
            fill_budget=fill_budget,
            vector_text=config.vector_text,
            vector_session_context=config.vector_session_context,
            vector_segments=config.vector_segments,
            session_context_anchors=(
                config.retrieval.session_context_anchors if context.anchor_of else 0
            ),
            session_context_radius=(
                config.retrieval.session_context_radius if context.anchor_of else 0
            ),
            candidate_depth=candidate_depth,
        ),
        backend_failures=candidates.failures,
        # Written into the saved payload below as plain rows: see `_receipt_candidate_rows`.
        candidates=[],
        returned_node_ids=[r.node_id for r in results],
        context=ReceiptContext(
            context_sha256=packed.context_sha256,
            tokens_used=packed.tokens_used,
            entries=[e.model_dump(mode="json") for e in packed.entries],
            excluded=[e.model_dump(mode="json") for e in packed.excluded],
            visible_value_bindings=[
                SavedValueBinding.of(visible, node_content=selected[visible.node_id])
                for visible in bundle.visible_value_bindings
            ],
        ),
        session_context=[
            SessionContextEntry(node_id=node_id, anchor=anchor)
            for node_id, anchor in context.anchor_of.items()
        ],
    )
    persisted = save_receipt(
        deps,
        owner,
        receipt,
        candidate_rows=_receipt_candidate_rows(fused, candidates, selection)
        + _context_rows(context, selection, scores_of_context),
    )
    finished = time.perf_counter()
    metrics = RetrievalMetrics(
        request_id=request_id,
        receipt_persisted=persisted,
        candidates=len(fused),
        vector_candidates=candidates.vector_hits,
        lexical_candidates=candidates.lexical_hits,
        returned=len(results),
        packed=sum(1 for e in packed.entries if e.representation == "full"),
        backend_failures=candidates.failures,
        min_score_skipped=min_score_skipped,
        current_state_query=fusion_config.current_state,
        ranking_profile_id=profile_id,
        limit=limit,
        token_budget=budget,
        tokens_used=packed.tokens_used,
        max_per_source=request.max_per_source,
        max_per_evidence=request.max_per_evidence,
        min_score=request.min_score,
        timings_ms={
            "search": round((searched - started) * 1000, 3),
            "total": round((finished - started) * 1000, 3),
        },
    )
    return RetrievalResponse(
        results=results,
        bundle=bundle,
        value_bindings=bundle.value_bindings(),
        metrics=metrics,
        size_limit=size_limit,
    )


def save_receipt(
    deps: EngineDeps,
    owner: OwnerKey,
    receipt: RetrievalReceipt,
    *,
    candidate_rows: list[dict[str, Any]] | None = None,
) -> bool:
    """Journal the receipt in its compact form; a failure to save it never fails the retrieval.
    `candidate_rows` (JSON-ready `ReceiptCandidate` fields) replace its candidates when given."""
    full = receipt.model_dump(mode="json")
    if candidate_rows is not None:
        full["candidates"] = candidate_rows
    payload = stored_receipt_payload(full)
    try:
        deps.ledger.append_journal(
            JournalRecord.build(
                record_id=receipt.request_id,
                owner=owner,
                operation=RECEIPT_OPERATION,
                subject_id=receipt.request_id,
                created_at=receipt.created_at,
                payload=payload,
                expires_at=receipt.created_at + timedelta(days=deps.config.receipt_retention_days),
            )
        )
    except PrmeError:
        return False
    return True


def _bundle(
    request: RetrieveInput, budget: int, selection: Selection, packed: PackedContext
) -> ContextBundle:
    visible = visible_bindings(
        [
            (
                node.id,
                packed.lines[node.id],
                bindings_from_metadata(node.metadata.get(VALUE_BINDINGS_METADATA_KEY)),
            )
            for node in selection.selected
            if node.id in packed.lines
        ]
    )
    excluded = [
        ExcludedCandidate(node_id=nid, reason=reason) for nid, reason in selection.excluded.items()
    ]
    return ContextBundle(
        context=packed.context,
        context_format=request.context_format,
        context_sha256=packed.context_sha256,
        token_budget=budget,
        tokens_used=packed.tokens_used,
        entries=packed.entries,
        context_references={e.ref: e.node_id for e in packed.entries},
        excluded=[*excluded, *(e for e in packed.excluded if e.node_id not in selection.excluded)],
        visible_value_bindings=visible,
    )


# The fields a result copies from its node as they are: all but those computed here.
_FIELDS_FROM_NODE = tuple(
    name
    for name in RetrievalResult.model_fields
    if name
    not in {
        "node_id",
        "score",
        "semantic_relevance",
        "evidence_refs",
        "conflict_flag",
        "contradicts_id",
    }
)


def _results(
    selection: Selection,
    fused: list[FusedCandidate],
    candidates: Candidates,
    scores_of_context: dict[str, tuple[float, float | None]],
    contradicts: dict[str, str],
) -> list[RetrievalResult]:
    score_by_id = {c.node_id: c.score for c in fused}
    semantic = dict(candidates.semantic)
    for node_id, (score, cosine) in scores_of_context.items():
        score_by_id[node_id] = score
        if cosine is not None:
            semantic[node_id] = cosine
    # Built from validated nodes and engine values: construction skips re-validating them.
    return [
        RetrievalResult.model_construct(
            node_id=node.id,
            score=score_by_id[node.id],
            semantic_relevance=semantic.get(node.id),
            evidence_refs=list(node.evidence_refs),
            conflict_flag=node.lifecycle_state is LifecycleState.CONTESTED,
            contradicts_id=contradicts.get(node.id),
            **{name: getattr(node, name) for name in _FIELDS_FROM_NODE},
        )
        for node in selection.selected
    ]


def _context_rows(
    context: SessionContext,
    selection: Selection,
    scores_of_context: dict[str, tuple[float, float | None]],
) -> list[dict[str, Any]]:
    """Receipt rows for the records read only as session context (not fused)."""
    rows: list[dict[str, Any]] = []
    for node_id, node in context.fetched.items():
        anchor = context.anchor_of[node_id]
        score, cosine = scores_of_context[node_id]
        rows.append(
            {
                "node_id": node_id,
                "content_sha256": node.content_sha256,
                "time": node.effective_time.timestamp(),
                "features": {},
                "session_id": node.session_id,
                "context_of": anchor,
                "ranks": {},
                "channel_scores": {},
                "semantic_relevance": cosine,
                "score": score,
                "evidence_refs": list(node.evidence_refs),
                "outcome": selection.excluded.get(node_id, "returned"),
            }
        )
    return rows


def _receipt_candidate_rows(
    fused: list[FusedCandidate], candidates: Candidates, selection: Selection
) -> list[dict[str, Any]]:
    """Every fused candidate as the compact receipt is made from: the fields of
    `ReceiptCandidate` as JSON values, less its score provenance, which the compact form
    drops and a read recomputes from the saved ranks. Plain rows, because building and
    dumping a model per candidate (about 250 of them when the budget is filled) was a
    sizeable share of retrieval time."""
    rows: list[dict[str, Any]] = []
    for c in fused:
        node = candidates.nodes[c.node_id]
        rows.append(
            {
                "node_id": c.node_id,
                "content_sha256": node.content_sha256,
                "time": c.time,
                "features": c.features,
                "session_id": c.session,
                "ranks": c.ranks,
                "channel_scores": candidates.scores.get(c.node_id, {}),
                "semantic_relevance": candidates.semantic.get(c.node_id),
                "score": c.score,
                "evidence_refs": list(node.evidence_refs),
                "outcome": selection.excluded.get(c.node_id, "returned"),
            }
        )
    return rows

"""Rules of POST /v1/retrieve at the engine level, on in-memory fakes of the ports."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from prme.engine.config import EngineConfig, PackingConfig
from prme.errors import EmbeddingUnavailableError
from prme.model.inputs import RetrieveInput, StoreInput
from prme.model.search import EmbeddingModelInfo, IndexQuery
from prme.retrieval.receipts import RetrievalReceipt
from tests.harness.engines import ALICE, BOB, Harness, memory_harness


def store(h: Harness, content: str, **fields: Any) -> str:
    result = h.engine.store(ALICE, StoreInput.model_validate({"content": content, **fields}))
    assert result.node_id is not None
    return result.node_id


def retrieve(h: Harness, query: str, **fields: Any) -> Any:
    return h.engine.retrieve(ALICE, RetrieveInput.model_validate({"query": query, **fields}))


class BrokenEmbedder:
    """An embedder whose model is unreachable after the fact (queries fail)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.broken = False

    @property
    def model(self) -> EmbeddingModelInfo:
        info: EmbeddingModelInfo = self.inner.model
        return info

    def embed(self, texts: Any) -> Any:
        if self.broken:
            raise EmbeddingUnavailableError()
        return self.inner.embed(texts)

    def embed_segmented(self, groups: Any) -> Any:
        if self.broken:
            raise EmbeddingUnavailableError()
        return self.inner.embed_segmented(groups)


def test_lexical_and_vector_candidates_are_fused(harness: Harness) -> None:
    hiking = store(harness, "We went hiking in the Alps last summer.")
    store(harness, "My sister plays the violin.")
    response = retrieve(harness, "hiking Alps")
    assert response.results[0].node_id == hiking
    receipt = harness.engine.get_retrieval_receipt(ALICE, response.metrics.request_id)
    top = receipt.candidates[0]
    assert set(top.ranks) == {"vector", "lexical"}
    assert top.score == pytest.approx(1 / 21 + 1 / 21)


def test_current_state_question_prefers_newer_memories(harness: Harness) -> None:
    old = store(harness, "I live in Porto.", event_time="2020-01-01T00:00:00Z")
    new = store(harness, "I live in Lisbon.", event_time="2024-01-01T00:00:00Z")
    response = retrieve(harness, "Where do I live now?")
    assert response.metrics.current_state_query is True
    assert [r.node_id for r in response.results[:2]] == [new, old]
    receipt = harness.engine.get_retrieval_receipt(ALICE, response.metrics.request_id)
    newest = receipt.candidates[0]
    assert newest.score_provenance["adjustments"][0]["op"] == "recency_boost"


def test_equal_scores_break_ties_by_newer_event_time(harness: Harness) -> None:
    a = store(harness, "apple pie recipe", event_time="2020-01-01T00:00:00Z")
    b = store(harness, "apple pie recipe", event_time="2023-01-01T00:00:00Z")
    response = retrieve(harness, "apple pie recipe")
    assert [r.node_id for r in response.results] == [b, a]


def test_default_mode_hides_hypothetical_and_explicit_mode_shows_it(harness: Harness) -> None:
    hypo = store(harness, "Maybe I will adopt a cat.", epistemic_type="hypothetical")
    assert hypo not in [r.node_id for r in retrieve(harness, "adopt a cat").results]
    assert hypo in [r.node_id for r in retrieve(harness, "adopt a cat", mode="explicit").results]


def test_filters_exclude_node_types_and_source_types(harness: Harness) -> None:
    note = store(harness, "coffee with Dana", node_type="note")
    fact = store(harness, "coffee with Dana is on Friday", node_type="fact", role="tool")
    only_facts = retrieve(harness, "coffee Dana", filters={"exclude_node_types": ["note"]})
    assert [r.node_id for r in only_facts.results] == [fact]
    stated = retrieve(harness, "coffee Dana", filters={"source_types": ["user_stated"]})
    assert [r.node_id for r in stated.results] == [note]
    assert retrieve(harness, "coffee Dana", filters={"source_types": []}).results == []


@pytest.mark.parametrize(
    "filters",
    [{"exclude_node_types": ["memo"]}, {"source_types": ["rumour"]}, {"scope": []}, {"x": 1}],
)
def test_unknown_filter_values_are_rejected(filters: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        RetrieveInput.model_validate({"query": "q", "filters": filters})


def test_scope_and_time_filters(harness: Harness) -> None:
    early = store(
        harness, "team offsite planning", scope="project", event_time="2023-01-05T00:00:00Z"
    )
    late = store(
        harness, "team offsite planning", scope="personal", event_time="2023-06-05T00:00:00Z"
    )
    by_scope = retrieve(harness, "team offsite", filters={"scope": "project"})
    assert [r.node_id for r in by_scope.results] == [early]
    by_time = retrieve(harness, "team offsite", filters={"event_time_from": "2023-03-01T00:00:00Z"})
    assert [r.node_id for r in by_time.results] == [late]


def test_min_score_compares_semantic_relevance(harness: Harness) -> None:
    store(harness, "granite countertop installation")
    store(harness, "zebra")
    response = retrieve(harness, "granite countertop installation", min_score=0.9)
    assert len(response.results) == 1
    assert response.results[0].semantic_relevance is not None
    assert response.results[0].semantic_relevance >= 0.9
    assert {e.reason for e in response.bundle.excluded} == {"min_score"}


def test_min_score_is_skipped_when_the_vector_path_fails() -> None:
    h = memory_harness()
    broken = BrokenEmbedder(h.embedder)
    h = memory_harness(embedder=broken)
    store(h, "granite countertop installation")
    broken.broken = True
    response = retrieve(h, "granite countertop", min_score=0.99)
    assert response.metrics.backend_failures == ["VECTOR"]
    assert response.metrics.min_score_skipped is True
    assert len(response.results) == 1
    receipt = h.engine.get_retrieval_receipt(ALICE, response.metrics.request_id)
    assert receipt.config.min_score_skipped is True


def test_embedding_model_mismatch_marks_vector_path_failed() -> None:
    from prme.embedding.hashing import HashingEmbedder

    h = memory_harness(embedder=HashingEmbedder(name="model-a"))
    store(h, "granite countertop installation")
    other = memory_harness(embedder=HashingEmbedder(name="model-b"))
    other_engine_deps = other.engine.deps
    # Same stores, a different query model: the spaces must not be mixed.
    mixed = type(other_engine_deps)(
        ledger=h.ledger,
        index=h.index,
        queue=h.queue,
        embedder=other_engine_deps.embedder,
        clock=h.clock,
        token_counter=other_engine_deps.token_counter,
    )
    response = type(h.engine)(mixed).retrieve(ALICE, RetrieveInput(query="granite countertop"))
    assert response.metrics.backend_failures == ["VECTOR"]
    assert len(response.results) == 1  # lexical still answers
    assert response.results[0].semantic_relevance is None


def test_max_per_source_caps_identical_text_from_one_event(harness: Harness) -> None:
    from prme.engine.store import build_store_commit

    # Two nodes with the same evidence and bytes (as extraction can produce), plus another source.
    commit = build_store_commit(
        harness.engine.deps, ALICE, StoreInput(content="budget is 500 euros")
    )
    harness.ledger.commit_store(commit)
    twin = commit.node.model_copy(update={"id": "twin-node"})
    harness.ledger.nodes[(ALICE.tenant_id, ALICE.owner_id, twin.id)] = twin  # type: ignore[attr-defined]
    from prme.engine.materialize import materialize_nodes

    materialize_nodes(harness.engine.deps, [(commit.work, commit.node), (commit.work, twin)])
    other = store(harness, "budget is 500 euros")
    response = retrieve(harness, "budget euros", max_per_source=1)
    ids = [r.node_id for r in response.results]
    assert other in ids
    assert len(ids) == 2
    assert [e.reason for e in response.bundle.excluded] == ["source_limit"]
    assert response.metrics.max_per_source == 1


def test_max_per_evidence_caps_nodes_sharing_evidence_even_if_text_differs(
    harness: Harness,
) -> None:
    from prme.engine.materialize import materialize_nodes
    from prme.engine.store import build_store_commit

    commit = build_store_commit(
        harness.engine.deps, ALICE, StoreInput(content="budget is 500 euros")
    )
    harness.ledger.commit_store(commit)
    sibling = commit.node.model_copy(update={"id": "sibling", "content": "budget euros approved"})
    harness.ledger.nodes[(ALICE.tenant_id, ALICE.owner_id, sibling.id)] = sibling  # type: ignore[attr-defined]
    materialize_nodes(harness.engine.deps, [(commit.work, commit.node), (commit.work, sibling)])
    response = retrieve(harness, "budget euros", max_per_evidence=1)
    assert len(response.results) == 1
    assert [e.reason for e in response.bundle.excluded] == ["evidence_limit"]


def test_limit_and_token_budget_never_truncate_records(harness: Harness) -> None:
    for i in range(5):
        store(harness, f"note {i} about the garden " + "word " * (20 * i))
    response = retrieve(harness, "garden", limit=3, token_budget=60)
    assert len(response.results) == 3
    assert response.bundle.tokens_used <= 60
    packed = [e for e in response.bundle.entries if e.representation == "full"]
    for entry in packed:
        node = next(r for r in response.results if r.node_id == entry.node_id)
        assert node.content in response.bundle.context  # whole record, never cut
    reasons = [e.reason for e in response.bundle.excluded]
    assert reasons.count("limit") == 2
    assert "token_budget" in reasons


def test_reader_context_names_the_speaker_once(harness: Harness) -> None:
    store(harness, "I went to the support group yesterday.", speaker="Caroline", role="participant")
    store(harness, "Melanie: I painted a sunrise.", speaker="Melanie", role="participant")
    context = retrieve(harness, "support group painted sunrise").bundle.context
    assert "Caroline: I went to the support group yesterday." in context
    assert "Melanie: Melanie: " not in context
    assert "Melanie: I painted a sunrise." in context


def test_auditable_context_has_speaker_key(harness: Harness) -> None:
    import json

    store(harness, "I went to the support group.", speaker="Caroline", role="participant")
    bundle = retrieve(harness, "support group", context_format="auditable").bundle
    line = json.loads(bundle.context.splitlines()[0])
    assert line["speaker"] == "Caroline"
    assert line["node_id"] == bundle.entries[0].node_id


def test_repeated_text_is_folded_into_the_first_record(harness: Harness) -> None:
    store(harness, "weekly sync at 10am", event_time="2024-01-01T00:00:00Z")
    store(harness, "weekly sync at 10am", event_time="2024-01-08T00:00:00Z")
    bundle = retrieve(harness, "weekly sync").bundle
    assert bundle.context.count("weekly sync at 10am") == 1
    assert [e.representation for e in bundle.entries] == ["full", "folded"]
    assert bundle.entries[1].folded_into == bundle.entries[0].ref


def test_folding_can_be_disabled_and_receipt_schema_says_so() -> None:
    h = memory_harness(EngineConfig(packing=PackingConfig(fold_repeated_text=False)))
    store(h, "weekly sync at 10am")
    store(h, "weekly sync at 10am")
    response = retrieve(h, "weekly sync")
    assert response.bundle.context.count("weekly sync at 10am") == 2
    receipt = h.engine.get_retrieval_receipt(ALICE, response.metrics.request_id)
    assert receipt.schema_version == 23
    assert receipt.config.fold_repeated_text is False


def test_receipt_replays_without_the_store(harness: Harness) -> None:
    for i in range(6):
        store(harness, f"trip {i} to the coast", event_time=f"202{i}-05-01T00:00:00Z")
    response = retrieve(harness, "latest trip to the coast")
    receipt = harness.engine.get_retrieval_receipt(ALICE, response.metrics.request_id)
    saved = RetrievalReceipt.model_validate_json(receipt.model_dump_json())
    assert saved.replay_ranking() == [r.node_id for r in response.results][: len(saved.candidates)]
    assert saved.replay_matches()
    assert saved.schema_version == 24
    assert saved.context.context_sha256 == response.bundle.context_sha256
    assert saved.config.fusion.rrf_k == 20


def test_receipt_failure_does_not_fail_retrieval(harness: Harness) -> None:
    store(harness, "a memory")
    harness.ledger.fail_journal = True  # type: ignore[attr-defined]
    response = retrieve(harness, "memory")
    assert response.metrics.receipt_persisted is False
    assert len(response.results) == 1


def test_retrieval_is_owner_isolated(harness: Harness) -> None:
    store(harness, "alice's secret recipe")
    response = harness.engine.retrieve(BOB, RetrieveInput(query="secret recipe"))
    assert response.results == []


def test_non_neutral_ranking_multipliers_are_rejected() -> None:
    with pytest.raises(ValidationError):
        RetrieveInput(query="q", ranking_multipliers={"recency": 2.0})
    assert RetrieveInput(query="q", ranking_multipliers={"recency": 1.0}).query == "q"


def test_speaker_name_is_not_a_lexical_search_field(tmp_path: Any) -> None:
    from tests.harness.engines import embedded_harness

    h = embedded_harness(tmp_path / "d")
    store(h, "I painted a sunrise over the lake.", speaker="Zebulon", role="participant")
    hits = h.index.search(ALICE, IndexQuery(text="Zebulon"))
    assert hits.lexical == ()

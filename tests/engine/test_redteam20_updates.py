"""Red-team tests of knowledge updates on ingest: hostile subjects, racing supersedences and
the largest extraction commit, on every backend."""

from __future__ import annotations

import random
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

from prme.engine.extraction import MAX_ARTIFACT_EDGES, MAX_ARTIFACT_NODES, MAX_SUPERSEDED
from prme.model.enums import LifecycleState
from prme.model.extraction import (
    ExtractedClaim,
    ExtractedEntity,
    ExtractedRelationship,
    Extraction,
    stored_assertion_key,
)
from prme.model.inputs import IngestInput
from prme.model.records import MemoryNode, NodeChange
from tests.harness.engines import ALICE, Harness
from tests.harness.redteam20 import say, with_extractor


def _claims(h: Harness, note: MemoryNode) -> list[MemoryNode]:
    (event_id,) = note.evidence_refs
    nodes = h.ledger.list_event_nodes(ALICE, event_id)
    return [n for n in nodes if stored_assertion_key(n.metadata) is not None]


def test_a_subject_whose_key_outgrows_a_sort_key_still_extracts_and_supersedes(
    any_backend: Harness,
) -> None:
    h = any_backend
    # "ΐ" casefolds to three characters of two bytes each: a 193-character subject makes
    # an assertion key of over 1,100 UTF-8 bytes, past DynamoDB's 1,024-byte sort key.
    name = "Ana-" + "ΐ" * 190
    first = say(h, f"{name} lives in Porto.")
    assert _claims(h, first), "the claim is extracted and stored"
    second = say(h, f"{name} lives in Berlin.")
    (old,) = _claims(h, first)
    assert h.ledger.get_node(ALICE, old.id).lifecycle_state is LifecycleState.SUPERSEDED  # type: ignore[union-attr]
    assert _claims(h, second)


def test_two_ingests_racing_to_supersede_one_claim_supersede_it_once(
    racing_backend: Harness,
) -> None:
    h = racing_backend
    lisbon = say(h, "I live in Lisbon.")
    h.clock.advance(minutes=1)
    # Both extractions plan against Lisbon before either commits.
    barrier = threading.Barrier(2, timeout=30)
    waited: set[int] = set()
    commit = h.ledger.commit_node_change
    commits: list[NodeChange] = []

    def racing_commit(change: NodeChange) -> None:
        commits.append(change)
        if threading.get_ident() not in waited:
            waited.add(threading.get_ident())
            barrier.wait()
        commit(change)

    h.ledger.commit_node_change = racing_commit  # type: ignore[method-assign]

    def ingest(text: str) -> str:
        result = h.engine.ingest(
            ALICE, IngestInput.model_validate({"content": text, "wait_for_extraction": True})
        )
        assert result.node_id is not None
        return result.node_id

    with ThreadPoolExecutor(2) as pool:
        madrid_id, berlin_id = pool.map(ingest, ["I moved to Madrid.", "I moved to Berlin."])
    h.ledger.commit_node_change = commit  # type: ignore[method-assign]
    assert len(commits) >= 3, "one extraction met the other's commit and planned again"

    old = h.ledger.get_node(ALICE, lisbon.id)
    assert old is not None and old.lifecycle_state is LifecycleState.SUPERSEDED
    edges = [e for e in h.ledger.list_node_edges(ALICE, lisbon.id) if e.edge_type == "supersedes"]
    assert len(edges) == 1
    recorded = [
        s
        for note_id in (madrid_id, berlin_id)
        for s in h.engine.get_event_extraction(ALICE, _event_of(h, note_id)).superseded
        if s.old_node_id == lisbon.id
    ]
    assert [(s.edge_id, s.new_node_id) for s in recorded] == [
        (edges[0].id, edges[0].source_node_id)
    ]
    # Neither new claim was lost: both are stored, at least one of them current.
    states = [h.ledger.get_node(ALICE, i) for i in (madrid_id, berlin_id)]
    assert all(n is not None for n in states)
    assert any(n is not None and n.lifecycle_state is not LifecycleState.SUPERSEDED for n in states)


def _event_of(h: Harness, node_id: str) -> str:
    node = h.ledger.get_node(ALICE, node_id)
    assert node is not None
    return node.evidence_refs[0]


class _ScriptedExtractor:
    """Answers each source with the extraction scripted for it (else nothing)."""

    def __init__(self, script: dict[str, Extraction]) -> None:
        self.script = script

    def extract(self, text: str, *, reference_time: datetime) -> Extraction:
        return self.script.get(text, Extraction(extractor="scripted/1"))


def _wide(seed: int, length: int) -> str:
    """`length` characters of four UTF-8 bytes each, varied so compression gains little."""
    rng = random.Random(seed)
    return "".join(chr(0x20000 + rng.randrange(0x5000)) for _ in range(length))


def _claim(subject: str, obj: str, statement: str, **fields: Any) -> ExtractedClaim:
    return ExtractedClaim.model_validate(
        {
            "evidence_quote": statement[:2000],
            "statement": statement,
            "subject": subject,
            "predicate": "lives in",
            "object": obj,
            **fields,
        }
    )


def test_the_largest_extraction_with_every_supersedence_commits_in_one_change(
    any_backend: Harness,
) -> None:
    """Worst case of one extraction's commit: the most nodes (each a claim with an assertion
    key, fields at their longest in four-byte characters), the most edges, the most
    supersedences, a claim on the source's note, and their history references."""
    h = any_backend
    subjects = [_wide(i, 200) for i in range(8)]
    earlier = "earlier"
    new = _wide(99, 2000)  # the whole source is also a claim: it rides on the note
    entity = _wide(98, 200)
    script = {
        earlier: Extraction(
            extractor="scripted/1",
            claims=tuple(
                _claim(s, _wide(10 + i, 500), _wide(20 + i, 2000)) for i, s in enumerate(subjects)
            ),
        ),
        new: Extraction(
            extractor="scripted/1",
            entities=(ExtractedEntity(evidence_quote=new, name=entity, kind="place"),),
            claims=(
                _claim(_wide(97, 200), _wide(96, 500), new),
                *(
                    _claim(
                        subjects[i % len(subjects)],
                        _wide(40 + i, 500),
                        _wide(60 + i, 2000),
                        replaces_object=_wide(80 + i, 500),
                    )
                    for i in range(30)
                ),
            ),
            relationships=tuple(
                ExtractedRelationship(
                    evidence_quote=new, source=entity, relation=f"r{i}", target=entity
                )
                for i in range(30)
            ),
        ),
    }
    engine = with_extractor(h, _ScriptedExtractor(script))
    engine.ingest(
        ALICE, IngestInput.model_validate({"content": earlier, "wait_for_extraction": True})
    )
    h.clock.advance(minutes=1)
    result = engine.ingest(
        ALICE, IngestInput.model_validate({"content": new, "wait_for_extraction": True})
    )

    saved = engine.get_event_extraction(ALICE, result.event_id)
    assert len(saved.node_ids) == MAX_ARTIFACT_NODES - 1 and saved.annotated_node_ids
    assert len(saved.edge_ids) == MAX_ARTIFACT_EDGES + MAX_SUPERSEDED
    assert len(saved.superseded) == MAX_SUPERSEDED
    for s in saved.superseded:
        old = h.ledger.get_node(ALICE, s.old_node_id)
        assert old is not None and old.lifecycle_state is LifecycleState.SUPERSEDED


def test_moving_back_to_an_earlier_value_leaves_one_current_value_and_a_bounded_chain(
    any_backend: Harness,
) -> None:
    h = any_backend
    notes = [
        say(h, text) for text in ("I live in Lisbon.", "I live in Berlin.", "I live in Lisbon.")
    ]
    current = [
        n
        for n in h.ledger.list_assertion_nodes(ALICE, "i|lives_in", 50)
        if n.lifecycle_state not in (LifecycleState.SUPERSEDED,)
    ]
    assert [n.content for n in current] == ["I live in Lisbon."]
    chain = h.engine.get_node_chain(ALICE, notes[0].id, direction="both")
    assert len(chain.nodes) == len({n.id for n in chain.nodes}) == 3
    assert not chain.truncated

"""Rules of POST /v1/store at the engine level: validation, inference, TTL, projection."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from prme.errors import ValueBindingError
from prme.model.bindings import MemoryValueBinding
from prme.model.enums import (
    EpistemicType,
    LifecycleState,
    NodeType,
    ProcessingStatus,
    Role,
    SourceType,
)
from prme.model.inputs import StoreInput
from tests.harness.engines import ALICE, Harness


def store_input(**fields: Any) -> StoreInput:
    return StoreInput.model_validate({"content": "I moved to Lisbon in May.", **fields})


@pytest.mark.parametrize(
    "fields",
    [
        {"event_time": "2024-03-10T07:30:00"},  # no timezone offset
        {"confidence": float("nan")},
        {"confidence": float("inf")},
        {"confidence": 1.01},
        {"confidence": -0.1},
        {"ttl_days": -1},
        {"ttl_days": 1.5},
        {"ttl_days": True},
        {"ttl_days": "3"},
        {"speaker": "   "},
        {"speaker": "x" * 201},
        {"speaker": "Ann\nBob"},
        {"speaker": "Ann\u202eBob"},
        {"speaker": "Ann\x07"},
        {"metadata": {"prme_speaker_v1": "Caroline"}},
        {"metadata": {"prme_value_bindings_v1": []}},
        {"metadata": {"prme_extraction_v1": {"kind": "quantity", "value": "5"}}},
        {"namespace": "work"},
        {"colour": "blue"},
        {"role": "narrator"},
        {"node_type": "memo"},
        {"content": ""},
        {"content": "   "},
    ],
)
def test_invalid_store_input_is_rejected(fields: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        store_input(**fields)


def test_speaker_is_trimmed_and_kept_on_event_and_node(harness: Harness) -> None:
    result = harness.engine.store(ALICE, store_input(speaker="  Caroline ", role="participant"))
    event = harness.engine.get_event(ALICE, result.event_id)
    assert result.node_id is not None
    node = harness.engine.get_node(ALICE, result.node_id)
    assert event.speaker == "Caroline"
    assert node.speaker == "Caroline"
    assert event.metadata["prme_speaker_v1"] == "Caroline"
    # The speaker is an assertion, not a role: the participant stays user_stated.
    assert node.source_type is SourceType.USER_STATED
    assert event.role is Role.PARTICIPANT


@pytest.mark.parametrize(
    ("role", "source", "epistemic"),
    [
        ("user", SourceType.USER_STATED, EpistemicType.ASSERTED),
        ("participant", SourceType.USER_STATED, EpistemicType.ASSERTED),
        ("assistant", SourceType.SYSTEM_INFERRED, EpistemicType.INFERRED),
        ("system", SourceType.SYSTEM_INFERRED, EpistemicType.INFERRED),
        ("tool", SourceType.TOOL_OUTPUT, EpistemicType.OBSERVED),
    ],
)
def test_role_infers_source_and_epistemic_type(
    harness: Harness, role: str, source: SourceType, epistemic: EpistemicType
) -> None:
    result = harness.engine.store(ALICE, store_input(role=role))
    assert result.node_id is not None
    node = harness.engine.get_node(ALICE, result.node_id)
    assert node.source_type is source
    assert node.epistemic_type is epistemic


def test_explicit_classification_wins_over_inference(harness: Harness) -> None:
    result = harness.engine.store(
        ALICE,
        store_input(role="user", source_type="external_document", epistemic_type="hypothetical"),
    )
    assert result.node_id is not None
    node = harness.engine.get_node(ALICE, result.node_id)
    assert node.source_type is SourceType.EXTERNAL_DOCUMENT
    assert node.epistemic_type is EpistemicType.HYPOTHETICAL


def test_ttl_omitted_uses_node_type_default_from_creation(harness: Harness) -> None:
    created = harness.clock.now()
    result = harness.engine.store(
        ALICE, store_input(node_type="task", event_time="2001-01-01T00:00:00Z")
    )
    assert result.node_id is not None
    node = harness.engine.get_node(ALICE, result.node_id)
    assert node.ttl_days == 90
    # Measured from node creation, not from the historical event time.
    assert node.expires_at == created + timedelta(days=90)


def test_ttl_null_disables_expiry_and_integer_overrides(harness: Harness) -> None:
    no_ttl = harness.engine.store(ALICE, store_input(node_type="task", ttl_days=None))
    short = harness.engine.store(ALICE, store_input(node_type="fact", ttl_days=3))
    assert no_ttl.node_id is not None and short.node_id is not None
    assert harness.engine.get_node(ALICE, no_ttl.node_id).expires_at is None
    node = harness.engine.get_node(ALICE, short.node_id)
    assert node.ttl_days == 3
    assert node.expires_at == harness.clock.now() + timedelta(days=3)


def test_retrieval_content_projects_node_while_event_stays_verbatim(harness: Harness) -> None:
    result = harness.engine.store(
        ALICE,
        store_input(
            content="The telescope recorded the observation successfully.",
            retrieval_content="Telescope observation: success.",
        ),
    )
    event = harness.engine.get_event(ALICE, result.event_id)
    assert result.node_id is not None
    node = harness.engine.get_node(ALICE, result.node_id)
    assert event.content == "The telescope recorded the observation successfully."
    assert node.content == "Telescope observation: success."
    assert node.evidence_refs == (result.event_id,)
    response = harness.engine.retrieve(ALICE, _retrieve("telescope observation"))
    assert response.results[0].content == "Telescope observation: success."
    assert "Telescope observation: success." in response.bundle.context
    assert "recorded the observation successfully" not in response.bundle.context


def test_store_defaults(harness: Harness) -> None:
    result = harness.engine.store(ALICE, store_input())
    assert result.processing_status is ProcessingStatus.COMPLETED
    assert result.node_id is not None
    node = harness.engine.get_node(ALICE, result.node_id)
    assert node.node_type is NodeType.NOTE
    assert node.lifecycle_state is LifecycleState.TENTATIVE
    assert 0 <= node.confidence <= 1
    assert node.created_at == datetime(2025, 1, 1, tzinfo=UTC)


def test_binding_presentation_must_be_in_source_and_indexed_text(harness: Harness) -> None:
    binding = MemoryValueBinding(
        reference="city-1",
        kind="city",
        presentation="Salt Lake City(Utah)",
        lookup="Salt Lake City",
    )
    with pytest.raises(ValueBindingError):
        harness.engine.store(
            ALICE,
            StoreInput(
                content="Current City: Salt Lake City(Utah)",
                retrieval_content="Current city is Salt Lake City",
                value_bindings=[binding],
            ),
        )
    # Nothing was written for the rejected request.
    assert harness.ledger.count_pending_work(None) == 0
    assert not harness.ledger.events  # type: ignore[attr-defined]


def test_event_is_immutable(harness: Harness) -> None:
    result = harness.engine.store(ALICE, store_input())
    event = harness.engine.get_event(ALICE, result.event_id)
    with pytest.raises(ValidationError):
        event.content = "changed"  # type: ignore[misc]


def _retrieve(query: str, **fields: Any) -> Any:
    from prme.model.inputs import RetrieveInput

    return RetrieveInput.model_validate({"query": query, **fields})


def test_idempotency_key_replays_the_first_result(harness: Harness) -> None:
    first = harness.engine.store(ALICE, store_input(), idempotency_key="k-1")
    again = harness.engine.store(ALICE, store_input(), idempotency_key="k-1")
    assert (again.event_id, again.node_id) == (first.event_id, first.node_id)
    assert len(harness.ledger.events) == 1  # type: ignore[attr-defined]


def test_idempotency_key_with_other_input_conflicts(harness: Harness) -> None:
    from prme.errors import ConflictError

    harness.engine.store(ALICE, store_input(), idempotency_key="k-1")
    with pytest.raises(ConflictError):
        harness.engine.store(ALICE, store_input(content="something else"), idempotency_key="k-1")
    # Omitted ttl_days and an explicit null are different inputs.
    with pytest.raises(ConflictError):
        harness.engine.store(ALICE, store_input(ttl_days=None), idempotency_key="k-1")


def test_idempotency_keys_are_per_owner(harness: Harness) -> None:
    from tests.harness.engines import BOB

    mine = harness.engine.store(ALICE, store_input(), idempotency_key="shared")
    theirs = harness.engine.store(BOB, store_input(), idempotency_key="shared")
    assert mine.event_id != theirs.event_id


def test_ttl_archive_journals_the_transition(harness: Harness) -> None:
    result = harness.engine.store(ALICE, store_input(ttl_days=2))
    harness.clock.advance(days=3)
    assert harness.engine.archive_expired() == 1
    records = [
        j
        for j in harness.ledger.journal.values()  # type: ignore[attr-defined]
        if j.operation == "ttl_expiry_archive"
    ]
    assert len(records) == 1
    assert records[0].subject_id == result.node_id
    assert records[0].payload["from_state"] == "tentative"
    assert records[0].payload["to_state"] == "archived"
    assert records[0].verify()

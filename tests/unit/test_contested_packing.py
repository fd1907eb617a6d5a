"""A contested claim says so in the packed context, in both formats; other records carry no tag."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from prme.model.enums import (
    EpistemicType,
    LifecycleState,
    NodeType,
    Scope,
    SourceType,
)
from prme.model.records import MemoryNode
from prme.retrieval.packing import ContextFormat, PackingLayout, pack_context
from tests.harness.engines import TOKEN_COUNTER

AT = datetime(2024, 3, 2, 18, 30, tzinfo=UTC)


def node(node_id: str, content: str, state: LifecycleState) -> MemoryNode:
    return MemoryNode(
        id=node_id,
        tenant_id="t",
        owner_id="o",
        node_type=NodeType.FACT,
        content=content,
        content_sha256="0" * 64,
        scope=Scope.PERSONAL,
        source_type=SourceType.USER_STATED,
        epistemic_type=EpistemicType.ASSERTED,
        confidence=0.8,
        lifecycle_state=state,
        created_at=AT,
        updated_at=AT,
    )


@pytest.mark.parametrize("layout", ["ranked", "sessions"])
def test_reader_lines_tag_contested_claims(layout: PackingLayout) -> None:
    packed = pack_context(
        [
            node("n1", "Ana lives in Porto.", LifecycleState.CONTESTED),
            node("n2", "Ana likes tea.", LifecycleState.STABLE),
        ],
        token_budget=500,
        counter=TOKEN_COUNTER,
        context_format="reader",
        fold_repeated_text=True,
        layout=layout,
    )
    assert "[contested] Ana lives in Porto." in packed.lines["n1"]
    assert "contested" not in packed.lines["n2"]
    assert packed.context.count("[contested]") == 1


def test_auditable_records_name_the_contested_state() -> None:
    fmt: ContextFormat = "auditable"
    packed = pack_context(
        [
            node("n1", "Ana lives in Porto.", LifecycleState.CONTESTED),
            node("n2", "Ana likes tea.", LifecycleState.TENTATIVE),
        ],
        token_budget=500,
        counter=TOKEN_COUNTER,
        context_format=fmt,
        fold_repeated_text=True,
    )
    records = [json.loads(line) for line in packed.context.splitlines()]
    assert [r.get("state") for r in records] == ["contested", None]

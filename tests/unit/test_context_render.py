"""The packer and the rebuild of a saved context render through one path: the full entries of
a packed context, rendered again, give the packed text in every format and layout."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from prme.model.enums import EpistemicType, LifecycleState, NodeType, Scope, SourceType
from prme.model.records import MemoryNode
from prme.retrieval.packing import (
    ContextFormat,
    PackingLayout,
    layout_of,
    pack_context,
    packing_order,
    render_context,
)
from tests.harness.engines import TOKEN_COUNTER

AT = datetime(2024, 3, 2, 18, 30, tzinfo=UTC)


def node(i: int, content: str, session: str, state: LifecycleState) -> MemoryNode:
    return MemoryNode(
        id=f"n{i}",
        tenant_id="t",
        owner_id="o",
        node_type=NodeType.FACT,
        content=content,
        content_sha256="0" * 64,
        scope=Scope.PERSONAL,
        session_id=session,
        source_type=SourceType.USER_STATED,
        epistemic_type=EpistemicType.ASSERTED,
        confidence=0.8,
        lifecycle_state=state,
        event_time=AT - timedelta(days=i % 3, minutes=i),
        created_at=AT,
        updated_at=AT,
        metadata={"speaker": "Ana"} if i % 2 else {},
    )


# Ranked out of time order, over three days and two sessions, one text said twice, one
# contested claim, and a long record that the budget leaves out.
RANKED = [
    node(1, "We booked the lake cabin.", "s1", LifecycleState.STABLE),
    node(2, "The cabin has two rooms.", "s2", LifecycleState.CONTESTED),
    node(3, "We booked the lake cabin.", "s1", LifecycleState.TENTATIVE),
    node(4, "word " * 400, "s2", LifecycleState.STABLE),
    node(5, "Ben brings the canoe.", "s1", LifecycleState.STABLE),
    node(6, "We leave on Friday at nine.", "s2", LifecycleState.STABLE),
]


@pytest.mark.parametrize("context_format", ["reader", "auditable"])
@pytest.mark.parametrize("layout", ["ranked", "sessions"])
def test_rendering_the_packed_entries_again_gives_the_packed_text(
    context_format: ContextFormat, layout: PackingLayout
) -> None:
    packed = pack_context(
        RANKED,
        token_budget=380,
        counter=TOKEN_COUNTER,
        context_format=context_format,
        fold_repeated_text=True,
        layout=layout,
    )
    assert [e.representation for e in packed.entries].count("folded") == 1
    assert [e.node_id for e in packed.excluded] == ["n4"]
    by_id = {n.id: n for n in RANKED}
    full = [(e.ref, by_id[e.node_id]) for e in packed.entries if e.representation == "full"]
    saved_layout = layout_of(packing_order(context_format, layout))
    rebuilt = render_context(full, context_format=context_format, layout=saved_layout)
    assert rebuilt == packed.context

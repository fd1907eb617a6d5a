"""Domain records built directly, for unit tests that need one without a store."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from prme.model.canonical import sha256_text
from prme.model.enums import EpistemicType, LifecycleState, NodeType, Scope, SourceType
from prme.model.records import MemoryNode

NOW = datetime(2024, 5, 1, tzinfo=UTC)


def note_node(
    content: str, *, node_id: str = "n1", metadata: dict[str, Any] | None = None
) -> MemoryNode:
    """A tentative, user-stated note of owner `o` in tenant `t`, created at NOW."""
    return MemoryNode(
        id=node_id,
        tenant_id="t",
        owner_id="o",
        node_type=NodeType.NOTE,
        content=content,
        content_sha256=sha256_text(content),
        scope=Scope.PERSONAL,
        source_type=SourceType.USER_STATED,
        epistemic_type=EpistemicType.ASSERTED,
        confidence=0.7,
        lifecycle_state=LifecycleState.TENTATIVE,
        created_at=NOW,
        updated_at=NOW,
        metadata=metadata or {},
    )

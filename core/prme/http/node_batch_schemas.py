"""Request and response of POST /v1/nodes/batch-get: many memory nodes read by id in one call."""

from __future__ import annotations

from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, field_validator

from prme.http.schemas import USER_ID, NodeResponse
from prme.model.node_batch import MAX_NODE_BATCH, NodeBatch


class NodeBatchRequest(BaseModel):
    """POST /v1/nodes/batch-get: which of the owner's memory nodes to read."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "example": {
                "node_ids": [
                    "5a0c3e8e-7a4b-4f0e-9a55-0d8f2b1c6e21",
                    "c1f0b7d2-3e44-4f5a-8b6c-9d0e1f2a3b4c",
                ]
            }
        },
    )

    node_ids: list[UUID] = Field(
        min_length=1,
        max_length=MAX_NODE_BATCH,
        description=f"The memory nodes' UUIDs, 1 to {MAX_NODE_BATCH}, each at most once; the "
        "answer keeps this order",
    )
    user_id: str | None = USER_ID

    @field_validator("node_ids")
    @classmethod
    def _each_once(cls, node_ids: list[UUID]) -> list[UUID]:
        if len(set(node_ids)) != len(node_ids):
            raise ValueError("an id is repeated: give each id once")
        return node_ids


class NodeBatchResponse(BaseModel):
    """The nodes found, in the order asked, and the ids that were not."""

    items: list[NodeResponse] = Field(
        description="The owner's nodes among node_ids, in the order asked"
    )
    missing_ids: list[str] = Field(
        description="The ids asked that name no readable node of this owner, in the order "
        "asked: unknown, deleted, another owner's or unreadable (indistinguishable)"
    )

    @classmethod
    def of(cls, batch: NodeBatch) -> NodeBatchResponse:
        return cls(
            items=[NodeResponse.of(node) for node in batch.items],
            missing_ids=list(batch.missing_ids),
        )

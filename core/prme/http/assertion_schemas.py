"""Bodies of the assertion routes: an aggregation query or a fact's state query, with the owner."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from prme.http.schemas import USER_ID
from prme.model.assertions import AssertionQuery, AssertionStateQuery


class AssertionAggregationRequest(BaseModel):
    """POST /v1/assertions/aggregate: a structured aggregation query."""

    model_config = ConfigDict(extra="forbid")

    user_id: str | None = USER_ID
    query: AssertionQuery = Field(
        description="Which assertions to count: subjects, predicates, objects, polarities, "
        "scopes, lifecycle_states, retrieval_mode, event_time_from/to, valid_at, knowledge_at, "
        "group_by, group_limit, sample_limit"
    )


class AssertionStateRequest(BaseModel):
    """POST /v1/assertions/state: one fact, named by its subject and predicate."""

    model_config = ConfigDict(extra="forbid")

    user_id: str | None = USER_ID
    query: AssertionStateQuery = Field(
        description="The fact: subject and predicate, with optional scope, valid_at, "
        "knowledge_at and limit"
    )

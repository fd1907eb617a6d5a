"""The assertion routes' adapters: exact aggregation over extracted claims, and a fact's state."""

from __future__ import annotations

from fastapi import FastAPI

from prme.engine.identity import resolve_owner
from prme.engine.service import MemoryEngine
from prme.http.assertion_schemas import AssertionAggregationRequest, AssertionStateRequest
from prme.http.dependencies import Caller, served
from prme.model.assertions import AssertionAggregation, AssertionState


def register(app: FastAPI, engine: MemoryEngine) -> None:
    """Add this capability's routes to the app."""

    @served(app, "aggregate_assertions")
    def aggregate_assertions(
        body: AssertionAggregationRequest, caller: Caller
    ) -> AssertionAggregation:
        """Count every stored assertion of the owner that matches, per group."""
        return engine.aggregate_assertions(resolve_owner(caller, body.user_id), body.query)

    @served(app, "get_assertion_state")
    def get_assertion_state(body: AssertionStateRequest, caller: Caller) -> AssertionState:
        """The value(s) of one fact at valid_at as known at knowledge_at, and its timeline."""
        return engine.get_assertion_state(resolve_owner(caller, body.user_id), body.query)

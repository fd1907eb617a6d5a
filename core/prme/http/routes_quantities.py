"""The quantity routes' adapters: a structured aggregation query, and a few fixed question shapes."""

from __future__ import annotations

from fastapi import FastAPI

from prme.engine.identity import resolve_owner
from prme.engine.service import MemoryEngine
from prme.http.dependencies import Caller, served
from prme.http.judgment_schemas import QuantityAggregationRequest, QuantityQuestionRequest
from prme.model.quantities import (
    QuantityAggregation,
    QuantityQuestionAnswer,
)


def register(app: FastAPI, engine: MemoryEngine) -> None:
    """Add this capability's routes to the app."""

    @served(app, "aggregate_quantities")
    def aggregate_quantities(
        body: QuantityAggregationRequest, caller: Caller
    ) -> QuantityAggregation:
        """Total every stored quantity of the owner that matches and still holds, per unit."""
        return engine.aggregate_quantities(resolve_owner(caller, body.user_id), body.query)

    @served(app, "aggregate_quantities_text")
    def aggregate_quantities_text(
        body: QuantityQuestionRequest, caller: Caller
    ) -> QuantityQuestionAnswer:
        """Plan a supported question and aggregate; unsupported wording reads no memory."""
        owner = resolve_owner(caller, body.user_id)
        return engine.aggregate_quantities_text(owner, body.question)

"""Routes of grounded quantity aggregation: a structured query, and a few fixed question shapes."""

from __future__ import annotations

from fastapi import FastAPI
from pydantic import BaseModel, ConfigDict, Field, field_validator

from prme.engine.identity import resolve_owner
from prme.engine.service import MemoryEngine
from prme.http.dependencies import ERRORS, Caller
from prme.model.quantities import (
    MAX_QUESTION_CHARS,
    QuantityAggregation,
    QuantityAggregationQuery,
    QuantityQuestionAnswer,
)


class QuantityAggregationRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    user_id: str | None = Field(default=None, min_length=1, max_length=256)
    query: QuantityAggregationQuery


class QuantityQuestionRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    user_id: str | None = Field(default=None, min_length=1, max_length=256)
    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)

    @field_validator("question")
    @classmethod
    def _question_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("question must contain non-whitespace text")
        return value


def register(app: FastAPI, engine: MemoryEngine) -> None:
    """Add this capability's routes to the app."""

    @app.post("/v1/quantities/aggregate", response_model=QuantityAggregation, responses=ERRORS)
    def aggregate_quantities(
        body: QuantityAggregationRequest, caller: Caller
    ) -> QuantityAggregation:
        """Total every stored quantity of the owner that matches and still holds, per unit."""
        return engine.aggregate_quantities(resolve_owner(caller, body.user_id), body.query)

    @app.post(
        "/v1/quantities/aggregate-text", response_model=QuantityQuestionAnswer, responses=ERRORS
    )
    def aggregate_quantities_text(
        body: QuantityQuestionRequest, caller: Caller
    ) -> QuantityQuestionAnswer:
        """Plan a supported question and aggregate; unsupported wording reads no memory."""
        owner = resolve_owner(caller, body.user_id)
        return engine.aggregate_quantities_text(owner, body.question)

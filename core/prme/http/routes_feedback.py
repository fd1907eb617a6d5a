"""Relevance judgments, answer citations and receipt replay; each route calls one engine method."""

from __future__ import annotations

from typing import Annotated, Any
from uuid import UUID

from fastapi import FastAPI, Query
from pydantic import BaseModel, ConfigDict, Field

from prme.engine.feedback import MAX_PAGE
from prme.engine.identity import resolve_owner
from prme.engine.service import MemoryEngine
from prme.http.dependencies import READ_ERRORS, Caller, UserIdQuery
from prme.http.schemas import ErrorResponse
from prme.model.bindings import ToolArgumentResolution
from prme.model.feedback import (
    AnswerCitationInput,
    AnswerCitationPage,
    AnswerCitationRecord,
    RelevanceInput,
    RelevancePage,
    RelevanceRecord,
    ReplayReport,
)


class RelevanceRequest(RelevanceInput):
    user_id: str | None = Field(default=None, min_length=1, max_length=256)


class AnswerCitationRequest(AnswerCitationInput):
    user_id: str | None = Field(default=None, min_length=1, max_length=256)


class ResolveToolArgumentsRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    arguments: dict[str, Any] = Field(description="The tool call's JSON argument object")
    user_id: str | None = Field(default=None, min_length=1, max_length=256)


PageLimit = Annotated[int, Query(ge=1, le=MAX_PAGE, description="Records per page")]
AfterId = Annotated[
    UUID | None, Query(description="The last id of the previous page; pages sort by UUID")
]

_RECORD_ERRORS: dict[int | str, dict[str, Any]] = {
    **READ_ERRORS,
    400: {
        "model": ErrorResponse,
        "description": "A label or citation names a node the saved retrieval did not expose "
        "that way, or the id was already used for another judgment",
    },
}
_CITATION_ERRORS: dict[int | str, dict[str, Any]] = {
    **_RECORD_ERRORS,
    400: {
        "model": ErrorResponse,
        "description": "A cited node is not a content-bearing entry of the saved context",
    },
    409: {"model": ErrorResponse, "description": "citation_id was already used with other input"},
}


def register(app: FastAPI, engine: MemoryEngine) -> None:
    """Add the relevance, answer-citation and replay routes."""

    @app.post("/v1/relevance", response_model=RelevanceRecord, responses=_RECORD_ERRORS)
    def record_relevance(body: RelevanceRequest, caller: Caller) -> RelevanceRecord:
        owner = resolve_owner(caller, body.user_id)
        request = RelevanceInput.model_validate(body.model_dump(exclude={"user_id"}))
        return engine.record_relevance(owner, request)

    @app.get("/v1/relevance", response_model=RelevancePage, responses=READ_ERRORS)
    def list_relevance(
        caller: Caller,
        limit: PageLimit = 100,
        after_id: AfterId = None,
        user_id: UserIdQuery = None,
    ) -> RelevancePage:
        owner = resolve_owner(caller, user_id)
        cursor = str(after_id) if after_id is not None else None
        return engine.list_relevance(owner, limit=limit, after_id=cursor)

    @app.get("/v1/relevance/{feedback_id}", response_model=RelevanceRecord, responses=READ_ERRORS)
    def get_relevance(
        feedback_id: UUID, caller: Caller, user_id: UserIdQuery = None
    ) -> RelevanceRecord:
        return engine.get_relevance(resolve_owner(caller, user_id), str(feedback_id))

    @app.post(
        "/v1/answer-citations", response_model=AnswerCitationRecord, responses=_CITATION_ERRORS
    )
    def record_answer_citations(
        body: AnswerCitationRequest, caller: Caller
    ) -> AnswerCitationRecord:
        owner = resolve_owner(caller, body.user_id)
        request = AnswerCitationInput.model_validate(body.model_dump(exclude={"user_id"}))
        return engine.record_answer_citations(owner, request)

    @app.get("/v1/answer-citations", response_model=AnswerCitationPage, responses=READ_ERRORS)
    def list_answer_citations(
        caller: Caller,
        limit: PageLimit = 100,
        after_id: AfterId = None,
        user_id: UserIdQuery = None,
    ) -> AnswerCitationPage:
        owner = resolve_owner(caller, user_id)
        cursor = str(after_id) if after_id is not None else None
        return engine.list_answer_citations(owner, limit=limit, after_id=cursor)

    @app.get(
        "/v1/answer-citations/{citation_id}",
        response_model=AnswerCitationRecord,
        responses=READ_ERRORS,
    )
    def get_answer_citations(
        citation_id: UUID, caller: Caller, user_id: UserIdQuery = None
    ) -> AnswerCitationRecord:
        return engine.get_answer_citations(resolve_owner(caller, user_id), str(citation_id))

    @app.post(
        "/v1/retrievals/{request_id}/resolve-tool-arguments",
        response_model=ToolArgumentResolution,
        responses={
            **READ_ERRORS,
            400: {
                "model": ErrorResponse,
                "description": "A value matches presentations visible with different lookups, "
                "or the arguments are not a finite JSON object",
            },
        },
    )
    def resolve_tool_arguments(
        request_id: UUID, body: ResolveToolArgumentsRequest, caller: Caller
    ) -> ToolArgumentResolution:
        owner = resolve_owner(caller, body.user_id)
        return engine.resolve_tool_arguments(owner, str(request_id), body.arguments)

    @app.get(
        "/v1/retrievals/{request_id}/replay", response_model=ReplayReport, responses=READ_ERRORS
    )
    def replay_retrieval(
        request_id: UUID, caller: Caller, user_id: UserIdQuery = None
    ) -> ReplayReport:
        return engine.replay_receipt(resolve_owner(caller, user_id), str(request_id))

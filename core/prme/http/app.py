"""FastAPI app factory: each route validates, resolves the owner and calls one engine method."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from fastapi import FastAPI
from starlette.routing import Route

from prme.engine.deadlines import pass_budget_ms
from prme.engine.identity import resolve_owner
from prme.engine.service import MemoryEngine
from prme.http import routes_aliases, routes_feedback, routes_quantities
from prme.http.auth import LoopbackOnlyMiddleware
from prme.http.body_policy import BodyPolicyMiddleware
from prme.http.deadlines import RequestDeadlineMiddleware
from prme.http.dependencies import (
    ERRORS,
    READ_ERRORS,
    WRITE_ERRORS,
    ApiRuntime,
    Caller,
    IdempotencyKey,
    UserIdQuery,
    key_text,
)
from prme.http.errors import install_error_handlers
from prme.http.request_log import RequestLogMiddleware
from prme.http.response_budget import http_response_budget
from prme.http.schemas import (
    ErrorResponse,
    EventResponse,
    ExtractionStatusResponse,
    FastIngestRequest,
    FastIngestResponse,
    IngestRequest,
    IngestResponse,
    MaterializationRequest,
    MaterializationResponse,
    NodeResponse,
    ProcessingStatusResponse,
    ReinforceRequest,
    RetrieveRequest,
    RetrieveResponse,
    StoreRequest,
    StoreResponse,
    SupersedenceRequest,
    WorkItemResponse,
)
from prme.mcp.endpoint import LazyMcpEndpoint
from prme.model.inputs import FastIngestInput, IngestInput, RetrieveInput, StoreInput
from prme.retrieval.receipts import RetrievalReceipt
from prme.retrieval.response_size import ResponseBudget


def create_app(runtime: ApiRuntime) -> FastAPI:
    app = FastAPI(
        title="PRME Cloud",
        version="0.1.0",
        description="Long-term memory for LLM agents: verbatim sources, typed memory nodes, "
        "hybrid retrieval and replayable receipts.",
    )
    app.state.runtime = runtime
    install_error_handlers(app)
    app.add_middleware(RequestDeadlineMiddleware, budget_ms=runtime.request_budget_ms)
    app.add_middleware(LoopbackOnlyMiddleware, policy=runtime.auth)
    # Added after those, so it wraps them: no route, parser or auth check sees a body first.
    app.add_middleware(BodyPolicyMiddleware, max_body_bytes=runtime.max_body_bytes)
    # Outermost and reads no body: every response, a 413 included, has its log line and id.
    app.add_middleware(RequestLogMiddleware)
    engine = runtime.engine

    @app.get("/health", include_in_schema=False)
    def health() -> dict[str, str]:
        return {"status": "ok"}

    _write_routes(app, engine)
    _read_routes(app, engine, http_response_budget(runtime.max_response_bytes))
    _lifecycle_routes(app, engine)
    routes_feedback.register(app, engine)
    routes_aliases.register(app, engine)
    routes_quantities.register(app, engine)
    # MCP over streamable HTTP, with the same bearer keys (issue 7).
    mcp = LazyMcpEndpoint(
        engine, runtime.credentials, runtime.auth, max_response_bytes=runtime.max_response_bytes
    )
    app.router.routes.append(Route("/mcp", mcp, methods=["GET", "POST", "DELETE"]))
    return app


def _write_routes(app: FastAPI, engine: MemoryEngine) -> None:
    """Admission: store, ingest (with extraction), fast ingest, and the processing passes."""

    @app.post("/v1/store", response_model=StoreResponse, responses=WRITE_ERRORS)
    def store(
        body: StoreRequest, caller: Caller, idempotency_key: IdempotencyKey = None
    ) -> StoreResponse:
        owner = resolve_owner(caller, body.user_id)
        request = StoreInput.model_validate(
            body.model_dump(exclude={"user_id"}, exclude_unset=True)
        )
        key = key_text(idempotency_key)
        result = engine.store(owner, request, idempotency_key=key)
        return StoreResponse(
            event_id=result.event_id,
            node_id=result.node_id,
            processing_status=result.processing_status,
        )

    @app.post("/v1/ingest", response_model=IngestResponse, responses=WRITE_ERRORS)
    def ingest(
        body: IngestRequest, caller: Caller, idempotency_key: IdempotencyKey = None
    ) -> IngestResponse:
        owner = resolve_owner(caller, body.user_id)
        request = IngestInput.model_validate(
            body.model_dump(exclude={"user_id"}, exclude_unset=True)
        )
        key = key_text(idempotency_key)
        result = engine.ingest(owner, request, idempotency_key=key)
        return IngestResponse(
            event_id=result.event_id,
            node_id=result.node_id,
            processing_status=result.processing_status,
            extraction_status=result.extraction_status,
        )

    @app.get(
        "/v1/events/{event_id}/extraction-status",
        response_model=ExtractionStatusResponse,
        responses=READ_ERRORS,
    )
    def get_extraction_status(
        event_id: UUID, caller: Caller, user_id: UserIdQuery = None
    ) -> ExtractionStatusResponse:
        owner = resolve_owner(caller, user_id)
        return ExtractionStatusResponse.of(
            str(event_id), *engine.get_extraction_status(owner, str(event_id))
        )

    @app.post(
        "/v1/events/{event_id}/retry-extraction",
        response_model=ExtractionStatusResponse,
        responses=READ_ERRORS,
    )
    def retry_extraction(
        event_id: UUID, caller: Caller, user_id: UserIdQuery = None
    ) -> ExtractionStatusResponse:
        owner = resolve_owner(caller, user_id)
        return ExtractionStatusResponse.of(
            str(event_id), *engine.retry_extraction(owner, str(event_id))
        )

    @app.post("/v1/extractions/process", response_model=MaterializationResponse, responses=ERRORS)
    def process_extractions(
        body: MaterializationRequest, caller: Caller
    ) -> MaterializationResponse:
        # Lowered here as the engine would, so the response can say what the pass was given.
        given_ms = pass_budget_ms(body.budget_ms)
        report = engine.process_extractions(resolve_owner(caller, body.user_id), budget_ms=given_ms)
        return MaterializationResponse.of(report, requested_ms=body.budget_ms, given_ms=given_ms)

    @app.post("/v1/ingest/fast", response_model=FastIngestResponse, responses=WRITE_ERRORS)
    def ingest_fast(
        body: FastIngestRequest, caller: Caller, idempotency_key: IdempotencyKey = None
    ) -> FastIngestResponse:
        owner = resolve_owner(caller, body.user_id)
        request = FastIngestInput.model_validate(
            body.model_dump(exclude={"user_id"}, exclude_unset=True)
        )
        key = key_text(idempotency_key)
        result = engine.ingest_fast(owner, request, idempotency_key=key)
        return FastIngestResponse(event_ids=result.event_ids, accepted=result.accepted)

    @app.post(
        "/v1/materializations/process", response_model=MaterializationResponse, responses=ERRORS
    )
    def process_materializations(
        body: MaterializationRequest, caller: Caller
    ) -> MaterializationResponse:
        # Lowered here as the engine would, so the response can say what the pass was given.
        given_ms = pass_budget_ms(body.budget_ms)
        report = engine.process_pending(resolve_owner(caller, body.user_id), budget_ms=given_ms)
        return MaterializationResponse.of(report, requested_ms=body.budget_ms, given_ms=given_ms)


def _read_routes(app: FastAPI, engine: MemoryEngine, response_budget: ResponseBudget) -> None:
    """Retrieval, sources, nodes, processing state and receipts."""

    @app.post("/v1/retrieve", response_model=RetrieveResponse, responses=ERRORS)
    def retrieve(body: RetrieveRequest, caller: Caller) -> RetrieveResponse:
        owner = resolve_owner(caller, body.user_id)
        request = RetrieveInput.model_validate(
            body.model_dump(exclude={"user_id"}, exclude_unset=True)
        )
        response = engine.retrieve(owner, request, response_budget=response_budget)
        return RetrieveResponse(
            results=response.results,
            bundle=response.bundle,
            value_bindings=response.value_bindings,
            metrics=response.metrics,
            size_limit=response.size_limit,
        )

    @app.get("/v1/events/{event_id}", response_model=EventResponse, responses=READ_ERRORS)
    def get_event(event_id: UUID, caller: Caller, user_id: UserIdQuery = None) -> EventResponse:
        return EventResponse.of(engine.get_event(resolve_owner(caller, user_id), str(event_id)))

    @app.get(
        "/v1/events/{event_id}/nodes", response_model=list[NodeResponse], responses=READ_ERRORS
    )
    def get_event_nodes(
        event_id: UUID, caller: Caller, user_id: UserIdQuery = None
    ) -> list[NodeResponse]:
        nodes = engine.list_event_nodes(resolve_owner(caller, user_id), str(event_id))
        return [NodeResponse.of(node) for node in nodes]

    @app.get(
        "/v1/events/{event_id}/processing-status",
        response_model=ProcessingStatusResponse,
        responses=READ_ERRORS,
    )
    def get_processing_status(
        event_id: UUID, caller: Caller, user_id: UserIdQuery = None
    ) -> ProcessingStatusResponse:
        status, work = engine.get_processing_status(resolve_owner(caller, user_id), str(event_id))
        return ProcessingStatusResponse(
            event_id=str(event_id),
            processing_status=status,
            work=[WorkItemResponse.of(item) for item in work],
        )

    @app.get("/v1/nodes/{node_id}", response_model=NodeResponse, responses=READ_ERRORS)
    def get_node(node_id: UUID, caller: Caller, user_id: UserIdQuery = None) -> NodeResponse:
        return NodeResponse.of(engine.get_node(resolve_owner(caller, user_id), str(node_id)))

    @app.get("/v1/retrievals/{request_id}", response_model=RetrievalReceipt, responses=READ_ERRORS)
    def get_retrieval(
        request_id: UUID, caller: Caller, user_id: UserIdQuery = None
    ) -> RetrievalReceipt:
        return engine.get_receipt(resolve_owner(caller, user_id), str(request_id))


def _lifecycle_routes(app: FastAPI, engine: MemoryEngine) -> None:
    """Forward-only lifecycle moves and supersedence."""
    move_errors: dict[int | str, dict[str, Any]] = {
        **READ_ERRORS,
        409: {
            "model": ErrorResponse,
            "description": "The node's state does not allow the move, or the Idempotency-Key "
            "was used for another request",
        },
    }

    @app.put("/v1/nodes/{node_id}/promote", response_model=NodeResponse, responses=move_errors)
    def promote(
        node_id: UUID,
        caller: Caller,
        idempotency_key: IdempotencyKey = None,
        user_id: UserIdQuery = None,
    ) -> NodeResponse:
        key = key_text(idempotency_key)
        owner = resolve_owner(caller, user_id)
        return NodeResponse.of(engine.promote(owner, str(node_id), idempotency_key=key))

    @app.put("/v1/nodes/{node_id}/archive", response_model=NodeResponse, responses=move_errors)
    def archive(
        node_id: UUID,
        caller: Caller,
        idempotency_key: IdempotencyKey = None,
        user_id: UserIdQuery = None,
    ) -> NodeResponse:
        key = key_text(idempotency_key)
        owner = resolve_owner(caller, user_id)
        return NodeResponse.of(engine.archive(owner, str(node_id), idempotency_key=key))

    @app.put("/v1/nodes/{node_id}/reinforce", response_model=NodeResponse, responses=move_errors)
    def reinforce(
        node_id: UUID,
        caller: Caller,
        body: ReinforceRequest | None = None,
        idempotency_key: IdempotencyKey = None,
        user_id: UserIdQuery = None,
    ) -> NodeResponse:
        key = key_text(idempotency_key)
        evidence = str(body.evidence_id) if body and body.evidence_id else None
        node = engine.reinforce(
            resolve_owner(caller, user_id), str(node_id), evidence_id=evidence, idempotency_key=key
        )
        return NodeResponse.of(node)

    @app.post("/v1/supersedences", response_model=list[NodeResponse], responses=move_errors)
    def supersede(body: SupersedenceRequest, caller: Caller) -> list[NodeResponse]:
        old, new = engine.supersede(
            resolve_owner(caller, body.user_id),
            old_node_id=str(body.old_node_id),
            new_node_id=str(body.new_node_id),
            evidence_id=str(body.evidence_id) if body.evidence_id else None,
        )
        return [NodeResponse.of(old), NodeResponse.of(new)]

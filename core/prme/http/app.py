"""The FastAPI app factory: middleware, error handlers, and every route (table-built or adapter)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from fastapi import FastAPI
from starlette.routing import Route

from prme.engine.deadlines import pass_budget_ms
from prme.engine.identity import resolve_owner
from prme.engine.service import MemoryEngine
from prme.engine.work_dispatch import ProcessingReport
from prme.http import (
    routes_aliases,
    routes_assertions,
    routes_caller,
    routes_conflicts,
    routes_graph,
    routes_keys,
    routes_learning,
    routes_limits,
    routes_manage,
    routes_node_batch,
    routes_portability,
    routes_quantities,
    routes_receipt_listing,
    routes_uploads,
    routes_usage,
    table_routes,
)
from prme.http.admission import admitted
from prme.http.auth import LoopbackOnlyMiddleware
from prme.http.body_policy import BodyPolicyMiddleware
from prme.http.deadlines import RequestDeadlineMiddleware
from prme.http.dependencies import (
    ApiRuntime,
    Caller,
    EventIdPath,
    IdempotencyKey,
    NodeIdPath,
    RequestIdPath,
    UserIdQuery,
    key_text,
    served,
)
from prme.http.docs_pages import install_docs_pages
from prme.http.errors import install_error_handlers
from prme.http.inspector import install_inspector
from prme.http.judgment_schemas import ResolveToolArgumentsRequest
from prme.http.request_log import RequestLogMiddleware
from prme.http.response_budget import http_response_budget
from prme.http.schemas import (
    ExtractionStatusResponse,
    MaterializationRequest,
    MaterializationResponse,
    NodeResponse,
    ProcessingStatusResponse,
    ReinforceRequest,
    RetrieveRequest,
    RetrieveResponse,
    SupersedenceRequest,
    WorkItemResponse,
)
from prme.mcp.endpoint import LazyMcpEndpoint
from prme.model.bindings import ToolArgumentResolution
from prme.model.enums import ProcessingStatus
from prme.model.inputs import RetrieveInput
from prme.model.records import OwnerKey, WorkItem
from prme.operations import CAPABILITY_DESCRIPTIONS, Capability
from prme.retrieval.response_size import ResponseBudget


def create_app(runtime: ApiRuntime) -> FastAPI:
    app = FastAPI(
        title="PRME Cloud",
        version="0.1.0",
        description="Long-term memory for LLM agents: verbatim sources, typed memory nodes, "
        "hybrid retrieval and replayable receipts.",
        openapi_tags=[
            {"name": capability.value, "description": CAPABILITY_DESCRIPTIONS[capability]}
            for capability in Capability
            if capability is not Capability.OPERATOR
        ],
        # Replaced by install_docs_pages: FastAPI's pages fetch their scripts from a CDN.
        docs_url=None,
        redoc_url=None,
    )
    install_docs_pages(app)
    install_inspector(app)
    app.state.runtime = runtime
    install_error_handlers(app)
    app.add_middleware(RequestDeadlineMiddleware, budget_ms=runtime.request_budget_ms)
    app.add_middleware(LoopbackOnlyMiddleware, policy=runtime.auth)
    # Added after those, so it wraps them: no route, parser or auth check sees a body first.
    app.add_middleware(
        BodyPolicyMiddleware,
        max_body_bytes=runtime.max_body_bytes,
        streamed_puts=routes_uploads.STREAMED_PATH,
    )
    # Outermost and reads no body: every response, a 413 included, has its log line and id.
    app.add_middleware(RequestLogMiddleware)
    # Every served operation is admitted against its tenant's limits before it runs.
    engine = admitted(runtime.engine)

    @app.get("/health", include_in_schema=False)
    def health() -> dict[str, str]:
        return {"status": "ok"}

    _write_routes(app, engine)
    _read_routes(app, engine, http_response_budget(runtime.max_response_bytes))
    _lifecycle_routes(app, engine)
    # Before the table's routes: /v1/learning/profiles/active is no profile id.
    routes_learning.register(app, engine)
    table_routes.register(app, engine)
    routes_aliases.register(app, engine)
    routes_manage.register(app, engine)
    routes_portability.register(app, engine)
    routes_quantities.register(app, engine)
    routes_keys.register(app, runtime)
    routes_limits.register(app, engine)
    routes_uploads.register(app, runtime)
    routes_usage.register(app, engine)
    routes_conflicts.register(app, engine)
    routes_graph.register(app, engine)
    routes_assertions.register(app, engine)
    routes_caller.register(app, engine)
    routes_receipt_listing.register(app, engine)
    routes_node_batch.register(app, engine)
    # MCP over streamable HTTP, with the same bearer keys (issue 7).
    mcp = LazyMcpEndpoint(
        engine,
        runtime.credentials,
        runtime.auth,
        max_response_bytes=runtime.max_response_bytes,
        tools=runtime.mcp_tools,
    )
    app.router.routes.append(Route("/mcp", mcp, methods=["GET", "POST", "DELETE"]))
    return app


def _write_routes(app: FastAPI, engine: MemoryEngine) -> None:
    """Admission: store, ingest (with extraction), fast ingest, and the processing passes."""

    # Each pair of routes differs only in the engine method behind it.
    for name, read in (
        ("get_extraction_status", engine.get_extraction_status),
        ("retry_extraction", engine.retry_extraction),
    ):
        _extraction_status_route(app, name, read)
    for name, run in (
        ("process_extractions", engine.process_extractions),
        ("process_materializations", engine.process_materializations),
    ):
        _processing_pass_route(app, name, run)


def _extraction_status_route(
    app: FastAPI,
    name: str,
    read: Callable[[OwnerKey, str], tuple[ProcessingStatus, list[WorkItem]]],
) -> None:
    @served(app, name)
    def extraction_status(
        event_id: EventIdPath, caller: Caller, user_id: UserIdQuery = None
    ) -> ExtractionStatusResponse:
        owner = resolve_owner(caller, user_id)
        return ExtractionStatusResponse.of(str(event_id), *read(owner, str(event_id)))


class _ProcessingPass(Protocol):
    def __call__(
        self, owner: OwnerKey | None = None, *, budget_ms: int | None = None
    ) -> ProcessingReport: ...


def _processing_pass_route(app: FastAPI, name: str, run: _ProcessingPass) -> None:
    @served(app, name)
    def processing_pass(body: MaterializationRequest, caller: Caller) -> MaterializationResponse:
        # Lowered here as the engine would, so the response can say what the pass was given.
        given_ms = pass_budget_ms(body.budget_ms)
        report = run(resolve_owner(caller, body.user_id), budget_ms=given_ms)
        return MaterializationResponse.of(report, requested_ms=body.budget_ms, given_ms=given_ms)


def _read_routes(app: FastAPI, engine: MemoryEngine, response_budget: ResponseBudget) -> None:
    """Retrieval, sources, nodes, processing state and receipts."""

    @served(app, "retrieve")
    def retrieve(body: RetrieveRequest, caller: Caller) -> RetrieveResponse:
        owner = resolve_owner(caller, body.user_id)
        request = RetrieveInput.model_validate(
            body.model_dump(exclude={"user_id"}, exclude_unset=True)
        )
        response = engine.retrieve(owner, request, response_budget=response_budget)
        return RetrieveResponse.model_validate(response, from_attributes=True)

    @served(app, "get_processing_status")
    def get_processing_status(
        event_id: EventIdPath, caller: Caller, user_id: UserIdQuery = None
    ) -> ProcessingStatusResponse:
        status, work = engine.get_processing_status(resolve_owner(caller, user_id), str(event_id))
        return ProcessingStatusResponse(
            event_id=str(event_id),
            processing_status=status,
            work=[WorkItemResponse.of(item) for item in work],
        )

    @served(app, "resolve_tool_arguments")
    def resolve_tool_arguments(
        request_id: RequestIdPath, body: ResolveToolArgumentsRequest, caller: Caller
    ) -> ToolArgumentResolution:
        owner = resolve_owner(caller, body.user_id)
        return engine.resolve_tool_arguments(owner, str(request_id), body.arguments)


def _lifecycle_routes(app: FastAPI, engine: MemoryEngine) -> None:
    """Forward-only lifecycle moves and supersedence."""

    @served(app, "reinforce")
    def reinforce(
        node_id: NodeIdPath,
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

    @served(app, "supersede")
    def supersede(body: SupersedenceRequest, caller: Caller) -> list[NodeResponse]:
        old, new = engine.supersede(
            resolve_owner(caller, body.user_id),
            old_node_id=str(body.old_node_id),
            new_node_id=str(body.new_node_id),
            evidence_id=str(body.evidence_id) if body.evidence_id else None,
        )
        return [NodeResponse.of(old), NodeResponse.of(new)]

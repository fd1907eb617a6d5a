"""The MCP tools of the operations table: table-built and adapter tools, with the HTTP API's rules.

Every tool resolves its owner through the caller's principal (a configured owner on stdio,
the bearer key on streamable HTTP), validates its arguments with the same input models as
the routes, calls one engine method and returns JSON (memory_retrieve's text is the context a
model reads). Failures come back as tool errors whose structured content carries the HTTP
category and status; no internal text is included. A server lists the table's default tools
or every tool.
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any, Literal, TypeVar
from uuid import UUID

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.context import Context
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp_types import (
    CallToolResult,
    InputRequiredResult,
    TextContent,
    ToolAnnotations,
)
from mcp_types import Tool as McpToolSchema
from pydantic import BaseModel, Field, ValidationError

from prme.engine.aliases import DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT
from prme.engine.deadlines import pass_budget_ms
from prme.engine.identity import Principal, resolve_owner
from prme.engine.manage import MAX_PAGE as MAX_LIST_PAGE
from prme.engine.ranking_profiles import (
    DEFAULT_HISTORY,
    DEFAULT_PROFILE_PAGE,
    MAX_HISTORY,
    MAX_PROFILE_PAGE,
)
from prme.engine.service import MemoryEngine
from prme.errors import (
    CATEGORY_BY_STATUS,
    AuthenticationError,
    InvalidRequestError,
    PermissionDeniedError,
    PrmeError,
    public_body,
    require_input_policy,
    status_for,
    validation_details,
)
from prme.http.conflict_schemas import ContradictionRequest, ResolutionRequest
from prme.http.graph_schemas import (
    ChainQuery,
    NeighborhoodQuery,
    NodeChainResponse,
    NodeNeighborhoodResponse,
    NodeProvenanceResponse,
    ProvenanceQuery,
)
from prme.http.judgment_schemas import (
    AliasProposalQuery,
    AliasReviewRequest,
    AnswerCitationRequest,
    QuantityAggregationRequest,
    QuantityQuestionRequest,
    RelevanceRequest,
    ResolveToolArgumentsRequest,
)
from prme.http.learning_schemas import (
    ActivateRankingProfileRequest,
    DeactivateRankingProfileRequest,
    LearningEvaluationRequest,
    RankingHistoryQuery,
    RankingProfileListQuery,
    RankingProfileListResponse,
    RankingProfileRequest,
    RankingSlotQuery,
    RollbackRankingProfileRequest,
)
from prme.http.organizer_schemas import OrganizeRequest
from prme.http.schemas import (
    FastIngestRequest,
    IngestRequest,
    IngestResponse,
    MaterializationRequest,
    MaterializationResponse,
    NodeListQuery,
    NodePageResponse,
    NodeResponse,
    ReinforceRequest,
    RetrieveRequest,
    StoreRequest,
    StoreResponse,
    SupersedenceRequest,
)
from prme.model.aliases import AliasDecision, AliasStatus
from prme.model.assertions import AssertionQuery, AssertionStateQuery
from prme.model.conditions import ConditionInput, ConditionState, EvaluationMethod
from prme.model.enums import LifecycleState, NodeType, Role, Scope, SourceType
from prme.model.feedback import AnswerCitationInput, RelevanceInput
from prme.model.graph import (
    DEFAULT_MAX_HOPS,
    DEFAULT_OPERATION_LIMIT,
    HISTORY_POSITION_PATTERN,
    MAX_HOPS,
    MAX_OPERATION_LIMIT,
    ChainDirection,
)
from prme.model.inputs import (
    FastIngestInput,
    IngestInput,
    RetrievalFilters,
    RetrieveInput,
    StoreInput,
)
from prme.model.learning import LearningInput, RankingProfileInput
from prme.model.listings import NodeFilter, SearchText
from prme.model.organizer import (
    DEFAULT_BUDGET_MS,
    MAX_BUDGET_MS,
    OrganizeInput,
    OrganizerJob,
)
from prme.model.quantities import QuantityAggregationQuery
from prme.model.records import MemoryNode, OwnerKey
from prme.operations import (
    ID_DESCRIPTIONS,
    IDEMPOTENCY_KEY_DESCRIPTION,
    OPERATIONS,
    McpToolSet,
    Operation,
    Shape,
    mcp_description,
    mcp_tool,
    presented,
)
from prme.retrieval.packing import ContextFormat
from prme.retrieval.response_size import (
    DEFAULT_MAX_RESPONSE_BYTES,
    ResponseBudget,
    carried_size,
    json_fragment,
    record_text_bytes,
)

logger = logging.getLogger("prme.mcp")

PrincipalSource = Callable[[], Principal]
# How the server is reached: it decides what an authorization error tells the caller.
McpTransport = Literal["http", "stdio"]

DEFAULT_INSTRUCTIONS = """\
PRME is long-term memory for this user. Keep what the user tells you with memory_store (one
exact fact, verbatim) or memory_ingest (a whole message; facts are extracted). Before answering
anything that may depend on earlier conversations, call memory_retrieve and answer from the
context it returns. When the user corrects something, store the correction and supersede the
old memory with memory_supersede."""

INSTRUCTIONS = """\
PRME is long-term memory for this user. Store what the user, tools and you learn with
memory_store (exact words) or memory_ingest (extracts facts, entities and quantities).
Before answering from memory, call memory_retrieve with include_context=true and answer
from the returned context; cite the node ids you used with memory_record_answer_citations.
When a tool argument comes from a memory that has value bindings, pass the presentation
form you saw and call memory_resolve_tool_arguments to get the exact lookup form."""


def described(model: type[BaseModel], field: str, **constraints: Any) -> Any:
    """A tool argument's schema: the description of the same field on the operation's request
    model (written once, there), with any bounds the tool adds."""
    return Field(description=model.model_fields[field].description, **constraints)


# A tool argument omitted by the caller; distinct from an explicit null.
_OMITTED: Any = "__omitted__"

UserId = Annotated[str | None, described(StoreRequest, "user_id")]
NodeId = Annotated[UUID, Field(description=ID_DESCRIPTIONS["node_id"])]
RequestId = Annotated[UUID, Field(description=ID_DESCRIPTIONS["request_id"])]
IdempotencyKey = Annotated[UUID | None, Field(description=IDEMPOTENCY_KEY_DESCRIPTION)]


def _error_result(category: str, status: int, body: dict[str, Any]) -> CallToolResult:
    fields = dict(body)
    # Inside the `error` object the error's stable code is named `code`.
    code = fields.pop("error", None)
    error = {"category": category, "status": status, **({"code": code} if code else {}), **fields}
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps({"error": error}))],
        structured_content={"error": error},
        is_error=True,
    )


def _ok(value: Any) -> CallToolResult:
    if isinstance(value, CallToolResult):
        return value
    if isinstance(value, BaseModel):
        data: Any = value.model_dump(mode="json")
    else:
        data = value
    payload = data if isinstance(data, dict) else {"items": data}
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(payload, ensure_ascii=False))],
        structured_content=payload,
    )


# A result's field names, ids, enums, scores and times in the structured result, and its
# reference line (or result line) and value bindings' kinds in the text beside it.
_RETRIEVE_PER_RECORD_BYTES = 4_096
# Metrics, the context's scalar fields, the text's headings, the JSON-RPC envelope and the
# Lambda envelope.
_RETRIEVE_FIXED_BYTES = 32 * 1024
# The text content is a string in the JSON-RPC body, itself a string in Lambda's response.
_TEXT_LEVEL = 2


def retrieve_tool_budget(max_bytes: int, *, include_context: bool) -> ResponseBudget:
    """The byte measure of a memory_retrieve result as sent: the structured content inside
    the JSON-RPC body (two encodings deep on Lambda), and the text content (`retrieve_text`):
    with the context, a record's context line and its value bindings; without it, the
    record's content quoted on its result line."""

    def record_bytes(node: MemoryNode, context_format: ContextFormat, in_context: bool) -> int:
        shown = include_context and in_context
        structured = record_text_bytes(
            node,
            context_format,
            level=2,
            with_context=shown,
            binding_copies=1 if shown else 0,
            rendered_bindings=shown,
        )
        return (
            _RETRIEVE_PER_RECORD_BYTES
            + structured
            + _text_record_bytes(
                node, context_format, include_context=include_context, in_context=in_context
            )
        )

    return ResponseBudget(
        max_bytes=max_bytes,
        record_bytes=record_bytes,
        fixed_bytes=_RETRIEVE_FIXED_BYTES,
        per_candidate_bytes=0,
    )


def _text_record_bytes(
    node: MemoryNode, context_format: ContextFormat, *, include_context: bool, in_context: bool
) -> int:
    """A record's own text in `retrieve_text`, as carried in a Lambda response."""
    if not include_context:
        return carried_size(node.content, _TEXT_LEVEL + 1)
    if not in_context:
        return 0
    # An auditable line is a JSON object inside the text: its strings are one encoding deeper.
    line_level = _TEXT_LEVEL + 1 if context_format == "auditable" else _TEXT_LEVEL
    line = sum(
        carried_size(text, line_level)
        for text in (node.content, node.speaker or "", node.session_id or "")
    )
    # The bindings' listing quotes presentations that the metadata's JSON holds.
    return line + carried_size(json_fragment(node.metadata), _TEXT_LEVEL)


def retrieve_text(out: dict[str, Any]) -> str:
    """What a model reads of a memory_retrieve result: the packed context, its references and
    any value bindings (or, without the context, one line per ranked result), then the
    retrieval's id. Everything else is in the structured content."""
    parts: list[str] = []
    if "context" in out:
        parts.append(out["context"] or "(no memories matched)")
        references = out["context_references"]
        if references:
            parts.append(
                "References:\n" + "\n".join(f"{ref} -> {node}" for ref, node in references.items())
            )
        if out["value_bindings_text"]:
            parts.append(out["value_bindings_text"])
    else:
        lines = [
            f"{r['node_id']}: {json.dumps(r['content'], ensure_ascii=False)}"
            for r in out["results"]
        ]
        parts.append("\n".join(lines) or "(no memories matched)")
    footer = f"request_id: {out['metrics']['request_id']}"
    if "size_limit" in out:
        footer += f"\n{out['size_limit']['omitted']} more ranked memories left out for size"
    parts.append(footer)
    return "\n\n".join(parts)


def _retrieve_result(out: dict[str, Any]) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=retrieve_text(out))], structured_content=out
    )


def _text(value: UUID | None) -> str | None:
    return str(value) if value is not None else None


def _body(response: type[BaseModel], result: object) -> dict[str, Any]:
    """The tool's answer: the HTTP response body of the same operation."""
    return response.model_validate(result, from_attributes=True).model_dump(mode="json")


def _present(fields: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not _OMITTED and v is not None}


def _input_fields(model: type[BaseModel], arguments: dict[str, Any]) -> dict[str, Any]:
    """The given tool arguments (not omitted, not null) that are fields of the input model."""
    return _present({k: v for k, v in arguments.items() if k in model.model_fields})


class PrmeMcpServer(MCPServer):
    """MCPServer whose argument and unexpected failures are structured like every other error."""

    # The tools this server lists; the others are not registered.
    offered: frozenset[str] = frozenset()

    async def list_tools(self) -> list[McpToolSchema]:
        # A model reads every listed schema on every turn: the SDK's per-argument titles
        # ("Content" for content) repeat the names and cost about a tenth of the bytes.
        return [
            tool.model_copy(update={"input_schema": _untitled(tool.input_schema)})
            for tool in await super().list_tools()
        ]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        try:
            # The same input policy as HTTP bodies; on stdio nothing else has checked them.
            require_input_policy(arguments, where="arguments")
        except InvalidRequestError as error:
            return _error_result("invalid_request", 422, public_body(error))
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            logger.exception("tool %s failed unexpectedly", name)
            return _error_result("internal", 500, {"detail": "The tool failed unexpectedly"})
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                # Locations and messages only: rejected values are the caller's data.
                detail = validation_details(
                    list(cause.errors(include_input=False, include_url=False))
                )
                return _error_result("invalid_request", 422, {"detail": detail})
            raise


def _untitled(schema: Any, *, top: bool = True) -> Any:
    """A JSON schema without the titles below its top level (the names of properties and
    definitions are kept, a property called "title" included)."""
    if isinstance(schema, list):
        return [_untitled(item, top=False) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and not top and isinstance(value, str):
            continue
        if key in ("properties", "$defs") and isinstance(value, dict):
            out[key] = {name: _untitled(sub, top=False) for name, sub in value.items()}
        else:
            out[key] = _untitled(value, top=False)
    return out


_Model = TypeVar("_Model", bound=BaseModel)


def validated(model: type[_Model], fields: dict[str, Any] | None) -> _Model:
    """Tool arguments through the same input model as the HTTP route."""
    try:
        return model.model_validate(fields or {})
    except ValidationError as exc:
        raise InvalidRequestError.from_validation(exc) from None


class _Runner:
    """Resolves the owner for a call, runs it, and turns the outcome into a tool result."""

    def __init__(self, principal: PrincipalSource, transport: McpTransport) -> None:
        self._principal = principal
        self._transport = transport

    def __call__(self, user_id: str | None, action: Callable[[OwnerKey], Any]) -> CallToolResult:
        return self.acting(user_id, lambda owner, _actor: action(owner))

    def acting(
        self, user_id: str | None, action: Callable[[OwnerKey, Principal], Any]
    ) -> CallToolResult:
        """Like a plain call, for actions that record who made them (the caller's key)."""
        try:
            principal = self._principal()
            owner = resolve_owner(principal, user_id)
            return _ok(action(owner, principal))
        except PrmeError as exc:
            status = status_for(exc)
            if status >= 500:
                logger.warning("tool failed: %s", type(exc).__name__, exc_info=exc.__cause__)
            category = CATEGORY_BY_STATUS.get(status, "internal")
            return _error_result(category, status, self._public_body(exc))

    def _public_body(self, error: PrmeError) -> dict[str, Any]:
        """The error as the caller may see it; on stdio no API key is involved, so an access
        error names the one owner the server was started for."""
        if self._transport == "stdio" and isinstance(
            error, PermissionDeniedError | AuthenticationError
        ):
            principal = self._principal()
            return {
                "detail": f"This stdio MCP server acts only for user_id {principal.owner_id!r} "
                f"of tenant {principal.tenant_id!r} (set by --user-id or PRME_MCP_USER_ID): "
                "omit user_id, or start the server for the other user"
            }
        return public_body(error)


def _tool(
    server: PrmeMcpServer, name: str
) -> Callable[[Callable[..., CallToolResult]], Callable[..., CallToolResult]]:
    """Register the decorated function as MCP tool `name`: its description and hints come from
    the operations table (the descriptions of every operation the tool serves)."""
    tool = mcp_tool(name)
    annotations = (
        ToolAnnotations(read_only_hint=True)
        if tool.read_only
        else ToolAnnotations(read_only_hint=False, destructive_hint=tool.destructive)
    )

    def register(fn: Callable[..., CallToolResult]) -> Callable[..., CallToolResult]:
        if name not in server.offered:
            return fn
        return server.tool(name=name, annotations=annotations, description=mcp_description(name))(
            fn
        )

    return register


@contextmanager
def _root_logger_kept() -> Iterator[None]:
    """Undo what the SDK's server constructor does to the root logger (a `basicConfig` with a
    Rich handler, which has no switch to turn it off): the root logger is the application's,
    and a Rich handler formats tracebacks for seconds on whichever thread logs, the event
    loop included."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        yield
    finally:
        for handler in list(root.handlers):
            if handler not in handlers:
                root.removeHandler(handler)
                handler.close()
        root.setLevel(level)


def build_mcp_server(
    engine: MemoryEngine,
    principal: PrincipalSource,
    *,
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    tools: McpToolSet = "default",
    transport: McpTransport = "http",
) -> PrmeMcpServer:
    """The PRME tools bound to one engine; `principal` says who is calling right now, and a
    memory_retrieve result holds ranked records up to `max_response_bytes` as sent. `tools`
    picks the table's default tools or every tool."""
    instructions = INSTRUCTIONS if tools == "full" else DEFAULT_INSTRUCTIONS
    with _root_logger_kept():
        server = PrmeMcpServer(
            name="prme", instructions=instructions, version="0.1.0", log_level="WARNING"
        )
    server.offered = offered_tools(tools)
    run = _Runner(principal, transport)
    _memory_tools(server, engine, run, max_response_bytes)
    _lifecycle_tools(server, engine, run)
    _judgment_tools(server, engine, run)
    _table_tools(server, engine, run)
    _manage_tools(server, engine, run)
    _conflict_tools(server, engine, run)
    _graph_tools(server, engine, run)
    _assertion_tools(server, engine, run)
    _organizer_tools(server, engine, run)
    _learning_tools(server, engine, run)
    return server


def offered_tools(tools: McpToolSet) -> frozenset[str]:
    """The names of the MCP tools a server lists."""
    return frozenset(
        op.mcp.name
        for op in OPERATIONS
        if op.mcp is not None and (tools == "full" or op.mcp.default)
    )


def _memory_tools(
    server: PrmeMcpServer, engine: MemoryEngine, run: _Runner, max_response_bytes: int
) -> None:
    """Store, ingest, retrieve, read, and resolve tool arguments."""

    @_tool(server, "memory_store")
    def memory_store(
        *,
        content: Annotated[str, described(StoreRequest, "content")],
        retrieval_content: Annotated[
            str | None, described(StoreRequest, "retrieval_content")
        ] = None,
        value_bindings: Annotated[
            list[dict[str, Any]] | None, described(StoreRequest, "value_bindings")
        ] = None,
        role: Annotated[Role, described(StoreRequest, "role")] = Role.USER,
        speaker: Annotated[str | None, described(StoreRequest, "speaker")] = None,
        session_id: Annotated[str | None, described(StoreRequest, "session_id")] = (None),
        node_type: Annotated[NodeType | None, described(StoreRequest, "node_type")] = None,
        scope: Annotated[Scope | None, described(StoreRequest, "scope")] = (None),
        metadata: Annotated[dict[str, Any] | None, described(StoreRequest, "metadata")] = None,
        epistemic_type: Annotated[str | None, described(StoreRequest, "epistemic_type")] = None,
        source_type: Annotated[SourceType | None, described(StoreRequest, "source_type")] = None,
        confidence: Annotated[float | None, described(StoreRequest, "confidence")] = None,
        event_time: Annotated[str | None, described(StoreRequest, "event_time")] = None,
        ttl_days: Annotated[
            int | Literal["type_default"] | None,
            # Its own form: JSON has no "omitted", so the node type's default is a word here.
            Field(
                description="Days until the memory expires from creation; null never expires; "
                "type_default uses the configured default for its node type"
            ),
        ] = "type_default",
        user_id: UserId = None,
        idempotency_key: IdempotencyKey = None,
    ) -> CallToolResult:
        # ttl_days is read below: null there means "never expires", not "omitted".
        fields = _input_fields(StoreInput, {**locals(), "ttl_days": None})
        if ttl_days != "type_default":
            fields["ttl_days"] = ttl_days

        def action(owner: OwnerKey) -> dict[str, Any]:
            result = engine.store(
                owner, validated(StoreInput, fields), idempotency_key=_text(idempotency_key)
            )
            return _body(StoreResponse, result)

        return run(user_id, action)

    @_tool(server, "memory_retrieve")
    def memory_retrieve(
        *,
        query: Annotated[str, described(RetrieveRequest, "query")],
        include_context: Annotated[
            bool,
            Field(
                description="Also return the exact packed context to answer from, its "
                "references (m1, m2, ... to node ids) and the visible value bindings"
            ),
        ] = True,
        limit: Annotated[int | None, described(RetrieveRequest, "limit")] = None,
        token_budget: Annotated[int | None, described(RetrieveRequest, "token_budget")] = None,
        min_score: Annotated[float | None, described(RetrieveRequest, "min_score")] = None,
        max_per_source: Annotated[int | None, described(RetrieveRequest, "max_per_source")] = (
            None
        ),
        max_per_evidence: Annotated[
            int | None, described(RetrieveRequest, "max_per_evidence")
        ] = None,
        mode: Annotated[
            Literal["default", "explicit"] | None, described(RetrieveRequest, "mode")
        ] = None,
        exclude_node_types: Annotated[
            list[NodeType] | None, described(RetrievalFilters, "exclude_node_types")
        ] = None,
        source_types: Annotated[
            list[SourceType] | None, described(RetrievalFilters, "source_types")
        ] = None,
        scope: Annotated[list[Scope] | None, described(RetrievalFilters, "scope")] = None,
        event_time_from: Annotated[
            str | None, described(RetrievalFilters, "event_time_from")
        ] = None,
        event_time_to: Annotated[str | None, described(RetrievalFilters, "event_time_to")] = None,
        reference_time: Annotated[str | None, described(RetrieveRequest, "reference_time")] = None,
        user_id: UserId = None,
    ) -> CallToolResult:
        filters = _input_fields(RetrievalFilters, locals())
        fields = _input_fields(RetrieveInput, {**locals(), "filters": filters or None})

        def action(owner: OwnerKey) -> CallToolResult:
            response = engine.retrieve(
                owner,
                validated(RetrieveInput, fields),
                response_budget=retrieve_tool_budget(
                    max_response_bytes, include_context=include_context
                ),
            )
            out: dict[str, Any] = {
                "results": [r.model_dump(mode="json") for r in response.results],
                "metrics": response.metrics.model_dump(mode="json"),
            }
            if response.size_limit is not None:
                out["size_limit"] = response.size_limit.model_dump(mode="json")
            if include_context:
                bundle = response.bundle
                out["context"] = bundle.context
                out["context_sha256"] = bundle.context_sha256
                out["tokens_used"] = bundle.tokens_used
                out["context_references"] = bundle.context_references
                out["value_bindings"] = [
                    b.model_dump(mode="json", exclude={"lookup"}) for b in bundle.value_bindings()
                ]
                out["value_bindings_text"] = bundle.render_value_bindings()
            return _retrieve_result(out)

        return run(user_id, action)

    @_tool(server, "memory_resolve_tool_arguments")
    def memory_resolve_tool_arguments(
        request_id: RequestId,
        arguments: Annotated[dict[str, Any], described(ResolveToolArgumentsRequest, "arguments")],
        user_id: UserId = None,
    ) -> CallToolResult:
        return run(
            user_id, lambda owner: engine.resolve_tool_arguments(owner, str(request_id), arguments)
        )

    @_tool(server, "memory_ingest")
    def memory_ingest(
        *,
        content: Annotated[str, described(IngestRequest, "content")],
        role: Annotated[Role, described(IngestRequest, "role")] = Role.USER,
        speaker: Annotated[str | None, described(IngestRequest, "speaker")] = None,
        session_id: Annotated[str | None, described(IngestRequest, "session_id")] = None,
        scope: Annotated[Scope | None, described(IngestRequest, "scope")] = None,
        metadata: Annotated[dict[str, Any] | None, described(IngestRequest, "metadata")] = None,
        event_time: Annotated[str | None, described(IngestRequest, "event_time")] = None,
        wait_for_extraction: Annotated[
            bool, described(IngestRequest, "wait_for_extraction")
        ] = False,
        user_id: UserId = None,
        idempotency_key: IdempotencyKey = None,
    ) -> CallToolResult:
        fields = _input_fields(IngestInput, locals())

        def action(owner: OwnerKey) -> dict[str, Any]:
            result = engine.ingest(
                owner, validated(IngestInput, fields), idempotency_key=_text(idempotency_key)
            )
            return _body(IngestResponse, result)

        return run(user_id, action)

    @_tool(server, "memory_ingest_fast")
    def memory_ingest_fast(
        items: Annotated[list[dict[str, Any]], described(FastIngestRequest, "items")],
        user_id: UserId = None,
        idempotency_key: IdempotencyKey = None,
    ) -> CallToolResult:

        def action(owner: OwnerKey) -> dict[str, Any]:
            request = validated(FastIngestInput, {"items": items})
            result = engine.ingest_fast(owner, request, idempotency_key=_text(idempotency_key))
            return {"event_ids": result.event_ids, "accepted": result.accepted}

        return run(user_id, action)

    @_tool(server, "memory_process_materializations")
    def memory_process_materializations(
        budget_ms: Annotated[
            int, described(MaterializationRequest, "budget_ms", ge=0, le=60_000)
        ] = 5000,
        user_id: UserId = None,
    ) -> CallToolResult:

        def action(owner: OwnerKey) -> MaterializationResponse:
            given_ms = pass_budget_ms(budget_ms)
            report = engine.process_materializations(owner, budget_ms=given_ms)
            return MaterializationResponse.of(report, requested_ms=budget_ms, given_ms=given_ms)

        return run(user_id, action)


def _lifecycle_tools(server: PrmeMcpServer, engine: MemoryEngine, run: _Runner) -> None:
    """Supersede, promote, archive and reinforce memories."""

    @_tool(server, "memory_supersede")
    def memory_supersede(
        old_node_id: Annotated[UUID, described(SupersedenceRequest, "old_node_id")],
        new_node_id: Annotated[UUID, described(SupersedenceRequest, "new_node_id")],
        evidence_id: Annotated[UUID | None, described(SupersedenceRequest, "evidence_id")] = (None),
        user_id: UserId = None,
    ) -> CallToolResult:

        def action(owner: OwnerKey) -> list[dict[str, Any]]:
            old, new = engine.supersede(
                owner,
                old_node_id=str(old_node_id),
                new_node_id=str(new_node_id),
                evidence_id=_text(evidence_id),
            )
            return [NodeResponse.of(n).model_dump(mode="json") for n in (old, new)]

        return run(user_id, action)

    @_tool(server, "memory_reinforce")
    def memory_reinforce(
        node_id: NodeId,
        evidence_id: Annotated[UUID | None, described(ReinforceRequest, "evidence_id")] = (None),
        user_id: UserId = None,
        idempotency_key: IdempotencyKey = None,
    ) -> CallToolResult:
        return run(
            user_id,
            lambda owner: NodeResponse.of(
                engine.reinforce(
                    owner,
                    str(node_id),
                    evidence_id=_text(evidence_id),
                    idempotency_key=_text(idempotency_key),
                )
            ),
        )


def _judgment_tools(server: PrmeMcpServer, engine: MemoryEngine, run: _Runner) -> None:
    """Relevance, citations, receipts, alias review and quantity aggregation."""

    @_tool(server, "memory_record_relevance")
    def memory_record_relevance(
        *,
        request_id: Annotated[UUID, described(RelevanceRequest, "request_id")],
        labels: Annotated[dict[str, bool], described(RelevanceRequest, "labels")],
        surface: Annotated[
            Literal["results", "context"], described(RelevanceRequest, "surface")
        ] = "results",
        method: Annotated[
            Literal["explicit_user", "structured_evaluation"], described(RelevanceRequest, "method")
        ] = "explicit_user",
        feedback_id: Annotated[str | None, described(RelevanceRequest, "feedback_id")] = None,
        user_id: UserId = None,
    ) -> CallToolResult:
        fields = _present(
            {
                "request_id": request_id,
                "labels": labels,
                "surface": surface,
                "method": method,
                "feedback_id": feedback_id,
            }
        )
        return run(
            user_id, lambda owner: engine.record_relevance(owner, validated(RelevanceInput, fields))
        )

    @_tool(server, "memory_record_answer_citations")
    def memory_record_answer_citations(
        *,
        request_id: Annotated[UUID, described(AnswerCitationRequest, "request_id")],
        answer_id: Annotated[str, described(AnswerCitationRequest, "answer_id")],
        cited_node_ids: Annotated[list[str], described(AnswerCitationRequest, "cited_node_ids")],
        method: Annotated[
            Literal["model_reported", "application_verified", "human_verified"],
            described(AnswerCitationRequest, "method"),
        ] = "model_reported",
        answer_sha256: Annotated[
            str | None, described(AnswerCitationRequest, "answer_sha256")
        ] = None,
        citation_id: Annotated[str | None, described(AnswerCitationRequest, "citation_id")] = None,
        user_id: UserId = None,
    ) -> CallToolResult:
        fields = _present(
            {
                "request_id": request_id,
                "answer_id": answer_id,
                "cited_node_ids": cited_node_ids,
                "method": method,
                "answer_sha256": answer_sha256,
                "citation_id": citation_id,
            }
        )
        return run(
            user_id,
            lambda owner: engine.record_answer_citations(
                owner, validated(AnswerCitationInput, fields)
            ),
        )

    @_tool(server, "memory_list_alias_proposals")
    def memory_list_alias_proposals(
        status: Annotated[AliasStatus | None, described(AliasProposalQuery, "status")] = None,
        scope: Annotated[Scope | None, described(AliasProposalQuery, "scope")] = None,
        limit: Annotated[
            int, described(AliasProposalQuery, "limit", ge=1, le=MAX_LIST_LIMIT)
        ] = DEFAULT_LIST_LIMIT,
        user_id: UserId = None,
    ) -> CallToolResult:
        return run(
            user_id,
            lambda owner: [
                item.model_dump(mode="json")
                for item in engine.list_alias_proposals(
                    owner, status=status, scope=scope, limit=limit
                )
            ],
        )

    @_tool(server, "memory_review_alias_proposal")
    def memory_review_alias_proposal(
        proposal_operation_id: Annotated[
            UUID, Field(description=ID_DESCRIPTIONS["proposal_operation_id"])
        ],
        decision: Annotated[AliasDecision, described(AliasReviewRequest, "decision")],
        reviewer_id: Annotated[str, described(AliasReviewRequest, "reviewer_id")],
        reason: Annotated[str | None, described(AliasReviewRequest, "reason")] = None,
        user_id: UserId = None,
    ) -> CallToolResult:
        return run.acting(
            user_id,
            lambda owner, actor: engine.review_alias_proposal(
                owner,
                str(proposal_operation_id),
                actor=actor,
                decision=decision,
                reviewer_id=reviewer_id,
                reason=reason,
            ),
        )

    @_tool(server, "memory_aggregate_quantities")
    def memory_aggregate_quantities(
        question: Annotated[str | None, described(QuantityQuestionRequest, "question")] = None,
        query: Annotated[
            dict[str, Any] | None, described(QuantityAggregationRequest, "query")
        ] = None,
        user_id: UserId = None,
    ) -> CallToolResult:

        def action(owner: OwnerKey) -> Any:
            if (question is None) == (query is None):
                raise InvalidRequestError("give exactly one of question or query")
            if question is not None:
                return engine.aggregate_quantities_text(owner, question)
            return engine.aggregate_quantities(owner, validated(QuantityAggregationQuery, query))

        return run(user_id, action)


def _table_tools(server: PrmeMcpServer, engine: MemoryEngine, run: _Runner) -> None:
    """A tool for every operation that reads or moves one record by id (`Shape.READ_ONE`,
    `Shape.MOVE_ONE`): its id argument is named and described as in the route's path."""
    for operation in OPERATIONS:
        if operation.mcp is None or operation.shape not in (Shape.READ_ONE, Shape.MOVE_ONE):
            continue
        (id_name,) = operation.path_ids
        moves = operation.shape is Shape.MOVE_ONE
        call = getattr(engine, operation.engine_method)

        def tool(
            *,
            user_id: str | None = None,
            idempotency_key: UUID | None = None,
            _operation: Operation = operation,
            _id_name: str = id_name,
            _call: Callable[..., Any] = call,
            **ids: UUID,
        ) -> CallToolResult:
            keys = (
                {"idempotency_key": _text(idempotency_key)}
                if _operation.shape is Shape.MOVE_ONE
                else {}
            )

            def action(owner: OwnerKey) -> Any:
                return presented(_operation.response, _call(owner, str(ids[_id_name]), **keys))

            return run(user_id, action)

        id_annotation = Annotated[UUID, Field(description=ID_DESCRIPTIONS[id_name])]
        parameters = [
            inspect.Parameter(id_name, inspect.Parameter.KEYWORD_ONLY, annotation=id_annotation),
            inspect.Parameter(
                "user_id", inspect.Parameter.KEYWORD_ONLY, annotation=UserId, default=None
            ),
        ]
        if moves:
            parameters.append(
                inspect.Parameter(
                    "idempotency_key",
                    inspect.Parameter.KEYWORD_ONLY,
                    annotation=IdempotencyKey,
                    default=None,
                )
            )
        # The SDK builds the argument schema from the signature, so the bound defaults above
        # stay hidden and the id argument takes the path's name.
        tool.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
        # The SDK titles the argument schema after the function's name, as for every other tool.
        tool.__name__ = tool.__qualname__ = operation.mcp.name
        _tool(server, operation.mcp.name)(tool)


# A model reads every listed node: a small first page, more only when asked.
_MCP_LIST_PAGE = 20


def _manage_tools(server: PrmeMcpServer, engine: MemoryEngine, run: _Runner) -> None:
    """Listing the owner's memories (forgetting one is a table-built tool)."""

    @_tool(server, "memory_list")
    def memory_list(
        *,
        node_type: Annotated[NodeType | None, described(NodeListQuery, "node_type")] = None,
        lifecycle_state: Annotated[
            LifecycleState | None, described(NodeListQuery, "lifecycle_state")
        ] = None,
        scope: Annotated[Scope | None, described(NodeListQuery, "scope")] = None,
        session_id: Annotated[
            str | None, described(NodeListQuery, "session_id", min_length=1, max_length=256)
        ] = None,
        include_inactive: Annotated[bool, described(NodeListQuery, "include_inactive")] = False,
        text: Annotated[SearchText | None, described(NodeListQuery, "text")] = None,
        limit: Annotated[
            int, described(NodeListQuery, "limit", ge=1, le=MAX_LIST_PAGE)
        ] = _MCP_LIST_PAGE,
        after_id: Annotated[UUID | None, described(NodeListQuery, "after_id")] = None,
        user_id: UserId = None,
    ) -> CallToolResult:
        node_filter = NodeFilter(
            node_type=node_type,
            lifecycle_state=lifecycle_state,
            scope=scope,
            session_id=session_id,
            include_inactive=include_inactive,
            text=text,
        )
        return run(
            user_id,
            lambda owner: NodePageResponse.of(
                engine.list_nodes(owner, node_filter, limit=limit, after_id=_text(after_id))
            ),
        )


def _conflict_tools(server: PrmeMcpServer, engine: MemoryEngine, run: _Runner) -> None:
    """Condition evaluations of conditional memories, and contradictions."""

    @_tool(server, "memory_evaluate_condition")
    def memory_evaluate_condition(
        *,
        node_id: NodeId,
        state: Annotated[ConditionState, described(ConditionInput, "state")],
        evidence_id: Annotated[UUID | None, described(ConditionInput, "evidence_id")] = None,
        evaluation_method: Annotated[
            EvaluationMethod | None, described(ConditionInput, "evaluation_method")
        ] = None,
        reason: Annotated[str | None, described(ConditionInput, "reason")] = None,
        evaluated_at: Annotated[str | None, described(ConditionInput, "evaluated_at")] = None,
        user_id: UserId = None,
        idempotency_key: IdempotencyKey = None,
    ) -> CallToolResult:
        fields = _input_fields(ConditionInput, locals())

        def action(owner: OwnerKey) -> NodeResponse:
            node = engine.evaluate_condition(
                owner,
                str(node_id),
                validated(ConditionInput, fields),
                idempotency_key=_text(idempotency_key),
            )
            return NodeResponse.of(node)

        return run(user_id, action)

    @_tool(server, "memory_mark_contradiction")
    def memory_mark_contradiction(
        node_a_id: Annotated[UUID, described(ContradictionRequest, "node_a_id")],
        node_b_id: Annotated[UUID, described(ContradictionRequest, "node_b_id")],
        evidence_id: Annotated[UUID | None, described(ContradictionRequest, "evidence_id")] = None,
        user_id: UserId = None,
    ) -> CallToolResult:

        def action(owner: OwnerKey) -> list[dict[str, Any]]:
            nodes = engine.mark_contradiction(
                owner,
                node_a_id=str(node_a_id),
                node_b_id=str(node_b_id),
                evidence_id=_text(evidence_id),
            )
            return [NodeResponse.of(n).model_dump(mode="json") for n in nodes]

        return run(user_id, action)

    @_tool(server, "memory_resolve_contradiction")
    def memory_resolve_contradiction(
        winner_id: Annotated[UUID, described(ResolutionRequest, "winner_id")],
        loser_id: Annotated[UUID, described(ResolutionRequest, "loser_id")],
        evidence_id: Annotated[UUID | None, described(ResolutionRequest, "evidence_id")] = None,
        user_id: UserId = None,
    ) -> CallToolResult:

        def action(owner: OwnerKey) -> list[dict[str, Any]]:
            nodes = engine.resolve_contradiction(
                owner,
                winner_id=str(winner_id),
                loser_id=str(loser_id),
                evidence_id=_text(evidence_id),
            )
            return [NodeResponse.of(n).model_dump(mode="json") for n in nodes]

        return run(user_id, action)


def _graph_tools(server: PrmeMcpServer, engine: MemoryEngine, run: _Runner) -> None:
    """A node's provenance, neighborhood and supersedence chain (the graph reads)."""

    @_tool(server, "memory_get_provenance")
    def memory_get_provenance(
        node_id: NodeId,
        operation_cursor: Annotated[
            str | None,
            described(
                ProvenanceQuery,
                "operation_cursor",
                max_length=300,
                pattern=HISTORY_POSITION_PATTERN,
            ),
        ] = None,
        operation_limit: Annotated[
            int,
            described(ProvenanceQuery, "operation_limit", ge=1, le=MAX_OPERATION_LIMIT),
        ] = DEFAULT_OPERATION_LIMIT,
        user_id: UserId = None,
    ) -> CallToolResult:
        return run(
            user_id,
            lambda owner: NodeProvenanceResponse.of(
                engine.get_node_provenance(
                    owner,
                    str(node_id),
                    operation_cursor=operation_cursor,
                    operation_limit=operation_limit,
                )
            ),
        )

    @_tool(server, "memory_get_neighborhood")
    def memory_get_neighborhood(
        node_id: NodeId,
        max_hops: Annotated[
            int, described(NeighborhoodQuery, "max_hops", ge=1, le=MAX_HOPS)
        ] = DEFAULT_MAX_HOPS,
        user_id: UserId = None,
    ) -> CallToolResult:
        return run(
            user_id,
            lambda owner: NodeNeighborhoodResponse.of(
                engine.get_node_neighborhood(owner, str(node_id), max_hops=max_hops)
            ),
        )

    @_tool(server, "memory_get_chain")
    def memory_get_chain(
        node_id: NodeId,
        direction: Annotated[ChainDirection, described(ChainQuery, "direction")] = "forward",
        user_id: UserId = None,
    ) -> CallToolResult:
        return run(
            user_id,
            lambda owner: NodeChainResponse.of(
                engine.get_node_chain(owner, str(node_id), direction=direction)
            ),
        )


def _assertion_tools(server: PrmeMcpServer, engine: MemoryEngine, run: _Runner) -> None:
    """Exact assertion counts and a fact's state: flat arguments, validated by the query
    models the routes use."""

    @_tool(server, "memory_aggregate_assertions")
    def memory_aggregate_assertions(
        *,
        group_by: Annotated[list[str] | None, described(AssertionQuery, "group_by")] = None,
        subjects: Annotated[list[str] | None, described(AssertionQuery, "subjects")] = None,
        predicates: Annotated[list[str] | None, described(AssertionQuery, "predicates")] = None,
        objects: Annotated[list[str] | None, described(AssertionQuery, "objects")] = None,
        polarities: Annotated[list[str] | None, described(AssertionQuery, "polarities")] = None,
        scopes: Annotated[list[str] | None, described(AssertionQuery, "scopes")] = None,
        lifecycle_states: Annotated[
            list[str] | None, described(AssertionQuery, "lifecycle_states")
        ] = None,
        retrieval_mode: Annotated[str | None, described(AssertionQuery, "retrieval_mode")] = None,
        event_time_from: Annotated[str | None, described(AssertionQuery, "event_time_from")] = None,
        event_time_to: Annotated[str | None, described(AssertionQuery, "event_time_to")] = None,
        valid_at: Annotated[str | None, described(AssertionQuery, "valid_at")] = None,
        knowledge_at: Annotated[str | None, described(AssertionQuery, "knowledge_at")] = None,
        group_limit: Annotated[int | None, described(AssertionQuery, "group_limit")] = None,
        sample_limit: Annotated[int | None, described(AssertionQuery, "sample_limit")] = None,
        user_id: UserId = None,
    ) -> CallToolResult:
        fields = _input_fields(AssertionQuery, locals())
        return run(
            user_id,
            lambda owner: engine.aggregate_assertions(owner, validated(AssertionQuery, fields)),
        )

    @_tool(server, "memory_get_assertion_state")
    def memory_get_assertion_state(
        *,
        subject: Annotated[str, described(AssertionStateQuery, "subject")],
        predicate: Annotated[str, described(AssertionStateQuery, "predicate")],
        scope: Annotated[str | None, described(AssertionStateQuery, "scope")] = None,
        valid_at: Annotated[str | None, described(AssertionStateQuery, "valid_at")] = None,
        knowledge_at: Annotated[str | None, described(AssertionStateQuery, "knowledge_at")] = None,
        limit: Annotated[int | None, described(AssertionStateQuery, "limit")] = None,
        user_id: UserId = None,
    ) -> CallToolResult:
        fields = _input_fields(AssertionStateQuery, locals())
        return run(
            user_id,
            lambda owner: engine.get_assertion_state(owner, validated(AssertionStateQuery, fields)),
        )


def _organizer_tools(server: PrmeMcpServer, engine: MemoryEngine, run: _Runner) -> None:
    """The organizer's run over the owner's memory."""

    @_tool(server, "memory_organize")
    def memory_organize(
        jobs: Annotated[list[OrganizerJob] | None, described(OrganizeRequest, "jobs")] = None,
        budget_ms: Annotated[
            int, described(OrganizeRequest, "budget_ms", ge=1, le=MAX_BUDGET_MS)
        ] = DEFAULT_BUDGET_MS,
        user_id: UserId = None,
    ) -> CallToolResult:
        fields = _present({"jobs": jobs, "budget_ms": budget_ms})
        return run(user_id, lambda owner: engine.organize(owner, validated(OrganizeInput, fields)))


ProfileId = Annotated[UUID, Field(description=ID_DESCRIPTIONS["profile_id"])]
SlotScopes = Annotated[
    list[Scope] | None, described(RankingSlotQuery, "scopes", max_length=len(Scope))
]


def _learning_tools(server: PrmeMcpServer, engine: MemoryEngine, run: _Runner) -> None:
    """Learning from feedback: evaluate a proposal on a holdout; ranking profiles: save, list,
    read a slot and its history, and change a slot."""

    @_tool(server, "memory_evaluate_learning")
    def memory_evaluate_learning(
        scopes: Annotated[
            list[Scope] | None, described(LearningEvaluationRequest, "scopes")
        ] = None,
        holdout_share: Annotated[
            float | None, described(LearningEvaluationRequest, "holdout_share")
        ] = None,
        max_records: Annotated[
            int | None, described(LearningEvaluationRequest, "max_records")
        ] = None,
        user_id: UserId = None,
    ) -> CallToolResult:
        fields = _present(
            {"scopes": scopes, "holdout_share": holdout_share, "max_records": max_records}
        )
        return run(
            user_id,
            lambda owner: engine.evaluate_learning(owner, validated(LearningInput, fields)),
        )

    @_tool(server, "memory_create_ranking_profile")
    def memory_create_ranking_profile(
        *,
        weights: Annotated[dict[str, Any], described(RankingProfileRequest, "weights")],
        evaluation: Annotated[
            dict[str, Any] | None, described(RankingProfileRequest, "evaluation")
        ] = None,
        scopes: Annotated[
            list[Scope] | None,
            described(RankingProfileRequest, "scopes", max_length=len(Scope)),
        ] = None,
        baseline_profile_id: Annotated[
            UUID | None, described(RankingProfileRequest, "baseline_profile_id")
        ] = None,
        profile_id: Annotated[UUID | None, described(RankingProfileRequest, "profile_id")] = None,
        user_id: UserId = None,
    ) -> CallToolResult:
        fields = _present(
            {
                "weights": weights,
                "evaluation": evaluation,
                "scopes": scopes,
                "baseline_profile_id": baseline_profile_id,
                "profile_id": profile_id,
            }
        )
        return run(
            user_id,
            lambda owner: engine.create_ranking_profile(
                owner, validated(RankingProfileInput, fields)
            ),
        )

    @_tool(server, "memory_list_ranking_profiles")
    def memory_list_ranking_profiles(
        limit: Annotated[
            int, described(RankingProfileListQuery, "limit", ge=1, le=MAX_PROFILE_PAGE)
        ] = DEFAULT_PROFILE_PAGE,
        after_id: Annotated[UUID | None, described(RankingProfileListQuery, "after_id")] = None,
        user_id: UserId = None,
    ) -> CallToolResult:
        return run(
            user_id,
            lambda owner: RankingProfileListResponse(
                items=engine.list_ranking_profiles(owner, limit=limit, after_id=_text(after_id))
            ),
        )

    @_tool(server, "memory_get_active_ranking_profile")
    def memory_get_active_ranking_profile(
        scopes: SlotScopes = None, user_id: UserId = None
    ) -> CallToolResult:
        return run(user_id, lambda owner: engine.get_active_ranking_profile(owner, scopes or []))

    @_tool(server, "memory_list_ranking_profile_history")
    def memory_list_ranking_profile_history(
        scopes: SlotScopes = None,
        limit: Annotated[
            int, described(RankingHistoryQuery, "limit", ge=1, le=MAX_HISTORY)
        ] = DEFAULT_HISTORY,
        user_id: UserId = None,
    ) -> CallToolResult:
        return run(
            user_id,
            lambda owner: [
                state.model_dump(mode="json")
                for state in engine.list_ranking_profile_history(owner, scopes or [], limit=limit)
            ],
        )

    @_tool(server, "memory_activate_ranking_profile")
    def memory_activate_ranking_profile(
        profile_id: ProfileId,
        change_id: Annotated[
            str | None,
            described(ActivateRankingProfileRequest, "change_id", min_length=1, max_length=64),
        ] = None,
        scopes: Annotated[
            list[Scope] | None,
            described(ActivateRankingProfileRequest, "scopes", max_length=len(Scope)),
        ] = None,
        user_id: UserId = None,
    ) -> CallToolResult:
        return run.acting(
            user_id,
            lambda owner, actor: engine.activate_ranking_profile(
                owner, str(profile_id), actor=actor, change_id=change_id, scopes=scopes
            ),
        )

    @_tool(server, "memory_deactivate_ranking_profile")
    def memory_deactivate_ranking_profile(
        change_id: Annotated[
            str,
            described(DeactivateRankingProfileRequest, "change_id", min_length=1, max_length=64),
        ],
        scopes: SlotScopes = None,
        user_id: UserId = None,
    ) -> CallToolResult:
        return run.acting(
            user_id,
            lambda owner, actor: engine.deactivate_ranking_profile(
                owner, actor=actor, change_id=change_id, scopes=scopes or []
            ),
        )

    @_tool(server, "memory_rollback_ranking_profile")
    def memory_rollback_ranking_profile(
        profile_id: Annotated[UUID, described(RollbackRankingProfileRequest, "profile_id")],
        change_id: Annotated[
            str,
            described(RollbackRankingProfileRequest, "change_id", min_length=1, max_length=64),
        ],
        scopes: SlotScopes = None,
        user_id: UserId = None,
    ) -> CallToolResult:
        return run.acting(
            user_id,
            lambda owner, actor: engine.rollback_ranking_profile(
                owner,
                actor=actor,
                change_id=change_id,
                scopes=scopes or [],
                profile_id=str(profile_id),
            ),
        )

"""The operations table: every use case PRME offers, declared once for every surface.

Each entry names one operation and says where it is served: its engine method (always the
operation's name), its HTTP route, its MCP tool and its `MemoryClient` method, who may call it
(any owner, or an operator), its capability (the OpenAPI tag) and the text every surface shows
(the OpenAPI summary and description, the MCP tool description, the client docstring). Field
descriptions and examples live on the request and response models, not here.

The HTTP routes, MCP tools and client methods are thin adapters registered under an entry;
`tests/unit/test_operations_table.py` fails when a surface serves an operation the table does
not list, misses one it lists, or names it differently.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel

from prme.http import (
    assertion_schemas,
    conflict_schemas,
    graph_schemas,
    judgment_schemas,
    learning_schemas,
    node_batch_schemas,
    organizer_schemas,
    schemas,
)
from prme.model import (
    assertions,
    bindings,
    caller,
    erasure,
    extraction,
    feedback,
    imports,
    inputs,
    learning,
    listings,
    organizer,
    portability,
    quantities,
    receipt_listing,
    uploads,
    usage,
)
from prme.model.limits import Limited, LimitsReport
from prme.retrieval import context_rebuild, receipts


class Capability(StrEnum):
    """What an operation is for; the OpenAPI tag of its route."""

    MEMORIES = "memories"
    PROCESSING = "processing"
    LIFECYCLE = "lifecycle"
    RECEIPTS = "receipts"
    FEEDBACK = "feedback"
    ALIASES = "aliases"
    QUANTITIES = "quantities"
    KEYS = "keys"
    OPERATOR = "operator"
    LIMITS = "limits"
    USAGE = "usage"
    GRAPH = "graph"
    ASSERTIONS = "assertions"
    LEARNING = "learning"


CAPABILITY_DESCRIPTIONS: Mapping[Capability, str] = {
    Capability.MEMORIES: "Store sources and memories, retrieve a context, read what is stored.",
    Capability.PROCESSING: "Indexing and extraction state of each source, and processing passes.",
    Capability.LIFECYCLE: "Forward-only lifecycle moves and supersedence of memory nodes, "
    "condition evaluations and contradictions.",
    Capability.RECEIPTS: "Saved retrieval receipts: explain, replay, resolve tool arguments.",
    Capability.FEEDBACK: "Relevance judgments and answer citations against saved retrievals.",
    Capability.ALIASES: "Alias proposals between entity memories, their review and the links.",
    Capability.QUANTITIES: "Exact totals of extracted amounts and counts, per unit.",
    Capability.KEYS: "API keys of a tenant's users, managed by the tenant's operator keys.",
    Capability.OPERATOR: "Tenant-wide maintenance, served to operators and workers only.",
    Capability.LIMITS: "The tenant's limits (rate, storage, retrievals a day) and its use of them.",
    Capability.USAGE: "Metered usage of the operator's tenant, summed per period and kind.",
    Capability.GRAPH: "A node's evidence and operation history, neighborhood and supersedence.",
    Capability.ASSERTIONS: "Exact counts of extracted assertions, and the state of a fact over time.",
    Capability.LEARNING: "Ranking weights learned from judgments and citations, evaluated on "
    "judged retrievals held out, and saved as profiles activated, deactivated and rolled back "
    "per scope slot.",
}


class Caller(StrEnum):
    """Who may invoke an operation."""

    # Any authenticated key, acting for its own owner (or, as an operator key, for a user_id).
    OWNER = "owner"
    # Operators only: tenant-wide passes run by deployments and workers, and the tenant's key
    # management (served over HTTP to operator keys; an owner key is refused with 403).
    OPERATOR = "operator"


class Errors(StrEnum):
    """The HTTP error set an operation's route lists, besides its own `errors`."""

    # 401, 403, 422, 503: every authenticated route that validates input and may meet an outage.
    BASE = "base"
    # BASE plus 404 (unknown or foreign id) and 500 (a stored record that cannot be read).
    READ = "read"
    # BASE plus 409 (Idempotency-Key reused) and a 503 that says whether the source was kept.
    WRITE = "write"


class Shape(StrEnum):
    """How an operation's arguments and result look; the common shapes need no adapter code.

    For a table-built shape, the HTTP route and the MCP tool are made from the entry alone
    (`prme.http.table_routes`, `prme.mcp.server`): adding such an operation is one entry
    and one engine method (and a typed `MemoryClient` method, when `client` is set).
    """

    # Anything else: the surfaces register a thin adapter under the operation's name.
    ADAPTER = "adapter"
    # Read one record by the id in the path: `engine.<name>(owner, id)`.
    READ_ONE = "read_one"
    # Move one node's lifecycle, idempotently: `engine.<name>(owner, id, idempotency_key=...)`.
    MOVE_ONE = "move_one"
    # Write a body that is the engine's input plus user_id: `engine.<name>(owner, input)`, with
    # `idempotency_key=` when the route takes an Idempotency-Key (HTTP only: the MCP tools of
    # these take flat arguments).
    WRITE_BODY = "write_body"
    # A page of the owner's records about retrievals, in id order, optionally of one retrieval:
    # `engine.<name>(owner, limit=, after_id=, request_id=)`.
    LIST_PAGE = "list_page"


# What each id in a route's path (and the same MCP tool argument) is.
ID_DESCRIPTIONS: Mapping[str, str] = {
    "event_id": "A source event's UUID, as returned by a store or ingest",
    "node_id": "A memory node's UUID, as returned by a store, a retrieval or an event's nodes",
    "request_id": "A retrieval's metrics.request_id, which names its saved receipt",
    "feedback_id": "A relevance judgment's UUID",
    "citation_id": "An answer-citation record's UUID",
    "proposal_operation_id": "An alias proposal's id, as listed",
    "key_id": "An API key's id, as listed (not its secret)",
    "import_id": "A bulk import's id, as returned when it was submitted",
    "profile_id": "A ranking profile's UUID, as returned when it was created",
}

IDEMPOTENCY_KEY_DESCRIPTION = (
    "A UUID you choose: a retry with the same key and the same input returns the first result "
    "instead of writing twice; other input under a used key is refused (409)"
)


@dataclass(frozen=True)
class HttpRoute:
    method: Literal["GET", "POST", "PUT", "DELETE"]
    path: str
    errors: Errors = Errors.BASE
    # Statuses this route adds to its error set, with what each means here.
    extra_errors: Mapping[int, str] = field(default_factory=dict)
    # Whether the route takes an Idempotency-Key header (a remote client sends one it makes
    # when the caller gives none, and repeats it on every retry).
    idempotency_key: bool = False
    # The status of a successful answer (202: accepted, carried on by workers).
    status: int = 200


# Which MCP tools a server lists: the small set a model needs (`default`), or every tool.
McpToolSet = Literal["default", "full"]


@dataclass(frozen=True)
class McpTool:
    name: str
    read_only: bool
    destructive: bool = False
    # Said once after the descriptions of the operations the tool serves: advice for an agent
    # (when to call it), which HTTP callers do not need.
    note: str = ""
    # Listed in the default tool set: every tool's schema is sent to the model on every turn.
    default: bool = False


@dataclass(frozen=True)
class Operation:
    name: str
    capability: Capability
    summary: str
    description: str
    caller: Caller = Caller.OWNER
    # The HTTP body (path ids and query parameters aside); its fields carry the descriptions.
    request: type[BaseModel] | None = None
    # What the HTTP route returns (the MCP tool returns the same fields as JSON).
    response: Any = None
    # The engine's input model, for a WRITE_BODY operation: the request less user_id.
    engine_input: type[BaseModel] | None = None
    http: HttpRoute | None = None
    mcp: McpTool | None = None
    # Whether `MemoryClient` has a method of this name.
    client: bool = True
    # What serves it: the engine (`MemoryEngine`), or the key service (`CredentialService`).
    served_by: Literal["engine", "credentials"] = "engine"
    shape: Shape = Shape.ADAPTER
    # How a call counts against its tenant's limits (`prme.model.limits.Limited`), checked
    # before it runs wherever it is served over HTTP or MCP (`prme.http.admission`).
    limited: Limited = Limited.REQUEST
    # Whether each call that does the work records a usage entry of this operation's name
    # (`prme.engine.metering`; docs/usage.md lists the units of each).
    metered: bool = False

    @property
    def engine_method(self) -> str:
        return self.name

    @property
    def path_ids(self) -> tuple[str, ...]:
        """The names of the ids in the route's path, in order."""
        if self.http is None:
            return ()
        return tuple(re.findall(r"\{(\w+)\}", self.http.path))


_MOVE_CONFLICT = {
    409: "The node's state does not allow the move, or the Idempotency-Key was used for "
    "another request"
}
_RECORD_REJECTED = (
    "A label or citation names a node the saved retrieval did not expose that way, or the id "
    "was already used for another judgment"
)
_AGGREGATE_TOOL = McpTool(
    "memory_aggregate_quantities", read_only=True, note="Give question or query, not both."
)


OPERATIONS: tuple[Operation, ...] = (
    # -- memories --
    Operation(
        "store",
        Capability.MEMORIES,
        "Store one memory verbatim",
        "Remember one piece of information exactly as given (a direct store). Returns event_id "
        "(the immutable source), node_id (the memory) and processing_status (completed when the "
        "memory is searchable).",
        http=HttpRoute("POST", "/v1/store", Errors.WRITE, idempotency_key=True),
        mcp=McpTool(
            "memory_store",
            read_only=False,
            default=True,
            note="Call it for one exact fact the user states that must be kept word for word "
            "(a name, a number, a date, a preference, a decision). To remember a whole message, "
            "call memory_ingest instead.",
        ),
        request=schemas.StoreRequest,
        response=schemas.StoreResponse,
        metered=True,
        engine_input=inputs.StoreInput,
        shape=Shape.WRITE_BODY,
        limited=Limited.STORE,
    ),
    Operation(
        "ingest",
        Capability.MEMORIES,
        "Keep a message and extract memories from it",
        "Keep a message verbatim and derive grounded facts, entities and quantities from it.",
        http=HttpRoute("POST", "/v1/ingest", Errors.WRITE, idempotency_key=True),
        mcp=McpTool(
            "memory_ingest",
            read_only=False,
            default=True,
            note="Call it with a whole user message (or a tool result) worth remembering: "
            "the facts are extracted from it for you. For one exact fact to keep verbatim, "
            "call memory_store instead.",
        ),
        request=schemas.IngestRequest,
        response=schemas.IngestResponse,
        metered=True,
        engine_input=inputs.IngestInput,
        shape=Shape.WRITE_BODY,
        limited=Limited.STORE,
    ),
    Operation(
        "ingest_fast",
        Capability.MEMORIES,
        "Save a batch of raw sources",
        "Save a batch of raw sources in one transaction, in order; process materializations "
        "until pending is 0 to make them searchable.",
        http=HttpRoute("POST", "/v1/ingest/fast", Errors.WRITE, idempotency_key=True),
        mcp=McpTool(
            "memory_ingest_fast",
            read_only=False,
            note="Call memory_process_materializations until pending is 0.",
        ),
        request=schemas.FastIngestRequest,
        response=schemas.FastIngestResponse,
        metered=True,
        engine_input=inputs.FastIngestInput,
        shape=Shape.WRITE_BODY,
        limited=Limited.STORE,
    ),
    Operation(
        "retrieve",
        Capability.MEMORIES,
        "Retrieve ranked memories and a packed context",
        "Search memory (meaning and keywords) and pack the best memories into a "
        "token-budgeted context. Answer from the context; each line's reference (m1, ...) maps "
        "to a node id in the context references. Value bindings list typed values whose "
        "presentation form appears in the context; their lookup forms are not shown: resolve "
        "tool arguments with metrics.request_id to get them. That id also names the receipt "
        "that explains and replays the ranking.",
        http=HttpRoute("POST", "/v1/retrieve"),
        mcp=McpTool(
            "memory_retrieve",
            read_only=True,
            default=True,
            note="Call it before answering anything that may depend on what the user said or "
            "did before (their preferences, plans, people, past events), and answer from the "
            "context it returns. The text result is that context, its references (m1 -> node "
            "id) and any value bindings; the structured result holds `context`, "
            "`context_references`, `value_bindings`, the ranked results and metrics.request_id. "
            "To pass a value binding to another tool, convert the arguments with "
            "memory_resolve_tool_arguments (full tool set).",
        ),
        request=schemas.RetrieveRequest,
        response=schemas.RetrieveResponse,
        limited=Limited.RETRIEVAL,
        metered=True,
    ),
    Operation(
        "get_event",
        Capability.MEMORIES,
        "Read one source event",
        "Read one source event verbatim (what was originally said).",
        http=HttpRoute("GET", "/v1/events/{event_id}", Errors.READ),
        mcp=McpTool("memory_get_event", read_only=True),
        request=None,
        response=schemas.EventResponse,
        shape=Shape.READ_ONE,
    ),
    Operation(
        "get_event_nodes",
        Capability.MEMORIES,
        "List the memory nodes an event backs",
        "Every memory node that names one source event as evidence: derived from it, or "
        "reinforced by it.",
        http=HttpRoute("GET", "/v1/events/{event_id}/nodes", Errors.READ),
        request=None,
        response=list[schemas.NodeResponse],
        shape=Shape.READ_ONE,
    ),
    Operation(
        "get_node",
        Capability.MEMORIES,
        "Read one memory node",
        "Read one memory node: content, type, lifecycle, provenance, dates, evidence.",
        http=HttpRoute("GET", "/v1/nodes/{node_id}", Errors.READ),
        mcp=McpTool("memory_get_node", read_only=True),
        request=None,
        response=schemas.NodeResponse,
        shape=Shape.READ_ONE,
    ),
    Operation(
        "list_nodes",
        Capability.MEMORIES,
        "List memory nodes",
        "List the owner's memories a page at a time, in id order, with filters; superseded, "
        "deprecated and archived ones only when asked.",
        http=HttpRoute("GET", "/v1/nodes"),
        mcp=McpTool(
            "memory_list",
            read_only=True,
            default=True,
            note="Call it when the user asks what is remembered about them, or to find the "
            "memory they want forgotten. To answer a question, call memory_retrieve instead.",
        ),
        request=None,
        response=schemas.NodePageResponse,
    ),
    Operation(
        "list_events",
        Capability.MEMORIES,
        "List source events",
        "List the owner's source events (what was stored or ingested, verbatim) a page at a "
        "time, in id order, with filters.",
        http=HttpRoute("GET", "/v1/events"),
        request=None,
        response=schemas.EventPageResponse,
    ),
    Operation(
        "delete_memory",
        Capability.MEMORIES,
        "Delete one memory",
        "Delete a source event and the memories derived from it, from every read, retrieval "
        "and the search index; a journal record keeps the ids and counts, never the content. "
        "A repeated delete returns the same record.",
        http=HttpRoute(
            "DELETE",
            "/v1/events/{event_id}",
            Errors.READ,
            {503: "The memory may be deleted from the ledger only: repeat the delete"},
        ),
        mcp=McpTool(
            "memory_forget",
            read_only=False,
            destructive=True,
            default=True,
            note="Call it only when the user asks to forget something. A memory's event_id is "
            "the first of its evidence_refs (memory_list shows them).",
        ),
        request=None,
        response=listings.MemoryDeletion,
        metered=True,
        # Table-built like a read: engine.delete_memory(owner, event_id) on the path's id.
        shape=Shape.READ_ONE,
        limited=Limited.RELEASE,
    ),
    Operation(
        "get_stats",
        Capability.MEMORIES,
        "Count an owner's memory",
        "Counts of the owner's stored events, memory nodes per lifecycle state and type, "
        "and pending work.",
        http=HttpRoute("GET", "/v1/stats"),
        request=None,
        response=listings.OwnerStats,
    ),
    Operation(
        "export_owner",
        Capability.MEMORIES,
        "Export the owner's memory a page at a time",
        "One page of the owner's memory as export records (source events verbatim, memory "
        "nodes, edges; never vectors, receipts, feedback or keys): the first page also carries "
        "the file's header. Write the header and each record as one NDJSON line, and pass "
        "next_cursor back until it is null.",
        http=HttpRoute("GET", "/v1/export"),
        request=None,
        response=portability.ExportPage,
    ),
    Operation(
        "import_records",
        Capability.MEMORIES,
        "Import a batch of export records",
        "Write a batch of export records (the lines after an export's header) into the "
        "owner's memory, whoever the file was exported from, and index them. The batch is "
        "checked whole first: a bad record is refused with its line number and nothing of the "
        "batch is written. Records the owner already has (same id) are skipped, so importing "
        "a file again adds nothing.",
        http=HttpRoute(
            "POST",
            "/v1/import",
            extra_errors={409: "The owner already has an event of that id with other content"},
        ),
        request=schemas.ImportRequest,
        response=portability.ImportReport,
        limited=Limited.STORE,
        metered=True,
    ),
    Operation(
        "submit_import",
        Capability.MEMORIES,
        "Start a bulk import of raw sources",
        "Accept a batch of raw sources (the items of a fast ingest, many more of them) as an "
        "import job, checked whole first: a bad item is refused and nothing is written. The "
        "items are split into chunks that workers commit, each in one transaction and never "
        "twice; follow the job with GET /v1/imports/{import_id} until it is completed, then "
        "process materializations to make the sources searchable.",
        http=HttpRoute("POST", "/v1/imports", Errors.WRITE, idempotency_key=True, status=202),
        request=schemas.BulkImportRequest,
        response=imports.BulkImportStatus,
        engine_input=imports.BulkImportInput,
        shape=Shape.WRITE_BODY,
        limited=Limited.STORE,
    ),
    Operation(
        "get_import",
        Capability.MEMORIES,
        "Progress of a bulk import",
        "An import's status, its chunks done of total, the items saved and failed, and why "
        "items failed (by item index, never their content).",
        http=HttpRoute("GET", "/v1/imports/{import_id}", Errors.READ),
        request=None,
        response=imports.BulkImportStatus,
        shape=Shape.READ_ONE,
    ),
    Operation(
        "open_import_upload",
        Capability.MEMORIES,
        "Open a bulk import for a large NDJSON file",
        "For a file too large to send inline: save an import awaiting its file and answer "
        "where to send it (a presigned URL on AWS, a path on this API when embedded), valid "
        "for an hour. Send the file there in one PUT of exactly the declared size, one raw "
        "source per line (the items of a fast ingest), then call POST "
        "/v1/imports/{import_id}/start.",
        http=HttpRoute(
            "POST", "/v1/imports/uploads", Errors.WRITE, idempotency_key=True, status=201
        ),
        request=schemas.ImportUploadRequest,
        response=uploads.ImportUploadOpened,
        engine_input=uploads.UploadRequest,
        shape=Shape.WRITE_BODY,
    ),
    Operation(
        "start_import_upload",
        Capability.MEMORIES,
        "Start a bulk import whose file was sent",
        "Check the uploaded file's size, split it into chunks (a line that is not a valid item "
        "becomes a failed item named by its line number, never its content) and hand the "
        "chunks to the workers; the file is deleted once they have them. Calling it again "
        "sends only chunks not yet committed. Follow the job with GET /v1/imports/{import_id}.",
        http=HttpRoute(
            "POST",
            "/v1/imports/{import_id}/start",
            Errors.READ,
            idempotency_key=True,
            status=202,
            extra_errors={
                400: "The file has not arrived, or is not the declared size",
                409: "The import's items came inline: it has no file to start",
            },
        ),
        request=None,
        response=imports.BulkImportStatus,
        shape=Shape.MOVE_ONE,
        limited=Limited.STORE,
    ),
    Operation(
        "erase_owner",
        Capability.MEMORIES,
        "Erase a user completely",
        "Remove everything stored for one user of the operator's tenant: sources, memories, "
        "journal, receipts, feedback, alias records, idempotency records, queued work, search "
        "documents and the user's API keys. Irreversible: confirm must repeat the user id. "
        "The receipt counts what each store lost and names the user only by a hash; complete "
        "is false when the user was too large for one call: call again to continue.",
        caller=Caller.OPERATOR,
        http=HttpRoute(
            "DELETE",
            "/v1/owner",
            extra_errors={
                503: "The erasure stopped part-way: repeat the call, it continues where it stopped"
            },
        ),
        request=None,
        response=erasure.OwnerErasure,
        limited=Limited.RELEASE,
    ),
    # -- processing --
    Operation(
        "get_processing_status",
        Capability.PROCESSING,
        "Processing state of an event",
        "Whether an event's memories are indexed, with every work item behind that state.",
        http=HttpRoute("GET", "/v1/events/{event_id}/processing-status", Errors.READ),
        request=None,
        response=schemas.ProcessingStatusResponse,
    ),
    Operation(
        "get_extraction_status",
        Capability.PROCESSING,
        "Extraction state of an event",
        "Whether extraction from an ingested message has finished, with its work items.",
        http=HttpRoute("GET", "/v1/events/{event_id}/extraction-status", Errors.READ),
        request=None,
        response=schemas.ExtractionStatusResponse,
    ),
    Operation(
        "retry_extraction",
        Capability.PROCESSING,
        "Retry a failed extraction",
        "Queue extraction of an ingested message again after it failed; returns its state.",
        http=HttpRoute("POST", "/v1/events/{event_id}/retry-extraction", Errors.READ),
        request=None,
        response=schemas.ExtractionStatusResponse,
    ),
    Operation(
        "process_materializations",
        Capability.PROCESSING,
        "Build and index pending memories",
        "Build and index the owner's pending memories within a time budget; returns processed, "
        "pending, failed, and budget_ms (the time the pass was given; budget_lowered when less "
        "than asked).",
        http=HttpRoute("POST", "/v1/materializations/process"),
        mcp=McpTool("memory_process_materializations", read_only=False),
        request=schemas.MaterializationRequest,
        response=schemas.MaterializationResponse,
    ),
    Operation(
        "process_extractions",
        Capability.PROCESSING,
        "Run pending extractions",
        "Run the owner's pending extractions within a time budget; returns processed, pending "
        "and failed counts.",
        http=HttpRoute("POST", "/v1/extractions/process"),
        request=schemas.MaterializationRequest,
        response=schemas.MaterializationResponse,
    ),
    # -- lifecycle --
    Operation(
        "promote",
        Capability.LIFECYCLE,
        "Promote a tentative memory to stable",
        "Promote a tentative memory to stable once it is confirmed.",
        http=HttpRoute(
            "PUT",
            "/v1/nodes/{node_id}/promote",
            Errors.READ,
            _MOVE_CONFLICT,
            idempotency_key=True,
        ),
        mcp=McpTool("memory_promote", read_only=False),
        request=None,
        response=schemas.NodeResponse,
        shape=Shape.MOVE_ONE,
    ),
    Operation(
        "archive",
        Capability.LIFECYCLE,
        "Archive a memory",
        "Archive a memory: it leaves default retrieval; its source stays.",
        http=HttpRoute(
            "PUT",
            "/v1/nodes/{node_id}/archive",
            Errors.READ,
            _MOVE_CONFLICT,
            idempotency_key=True,
        ),
        mcp=McpTool("memory_archive", read_only=False, destructive=True),
        request=None,
        response=schemas.NodeResponse,
        shape=Shape.MOVE_ONE,
    ),
    Operation(
        "reinforce",
        Capability.LIFECYCLE,
        "Record a confirmation of a memory",
        "Record one more confirmation of a memory.",
        http=HttpRoute(
            "PUT",
            "/v1/nodes/{node_id}/reinforce",
            Errors.READ,
            _MOVE_CONFLICT,
            idempotency_key=True,
        ),
        mcp=McpTool("memory_reinforce", read_only=False),
        request=schemas.ReinforceRequest,
        response=schemas.NodeResponse,
    ),
    Operation(
        "supersede",
        Capability.LIFECYCLE,
        "Replace a memory with a newer one",
        "Mark a memory as replaced by a newer one (store the correction first).",
        http=HttpRoute("POST", "/v1/supersedences", Errors.READ, _MOVE_CONFLICT),
        mcp=McpTool(
            "memory_supersede",
            read_only=False,
            default=True,
            note="Call it when the user corrects or updates something remembered: store the "
            "new fact first, then supersede the old memory's node id (from the retrieval's "
            "references) with the new one.",
        ),
        request=schemas.SupersedenceRequest,
        response=list[schemas.NodeResponse],
    ),
    # -- receipts --
    Operation(
        "get_retrieval_receipt",
        Capability.RECEIPTS,
        "Read a retrieval's receipt",
        "The saved receipt of a retrieval: every candidate's ranks and scores, the "
        "configuration and the context checksum, enough to explain and replay the ranking.",
        http=HttpRoute("GET", "/v1/retrievals/{request_id}", Errors.READ),
        mcp=McpTool("memory_get_retrieval_receipt", read_only=True),
        request=None,
        response=receipts.RetrievalReceipt,
        shape=Shape.READ_ONE,
    ),
    Operation(
        "replay_retrieval",
        Capability.RECEIPTS,
        "Replay a retrieval from its receipt",
        "Recompute a saved retrieval's ranking and context from its receipt and say whether "
        "they match.",
        http=HttpRoute("GET", "/v1/retrievals/{request_id}/replay", Errors.READ),
        request=None,
        response=feedback.ReplayReport,
        shape=Shape.READ_ONE,
    ),
    Operation(
        "resolve_tool_arguments",
        Capability.RECEIPTS,
        "Resolve tool arguments to exact lookup forms",
        "Prepare a tool call's arguments with the exact value-binding rule. Every complete "
        "string value equal to a presentation form visible in that retrieval's context is "
        "replaced by its lookup form; nothing else changes (no partial, fuzzy or "
        "case-insensitive matching). `binding_uses` says what matched where (JSON pointers). A "
        "value that maps to different lookups is an error instead of a guess.",
        http=HttpRoute(
            "POST",
            "/v1/retrievals/{request_id}/resolve-tool-arguments",
            Errors.READ,
            {
                400: "A value matches presentations visible with different lookups, or the "
                "arguments are not a finite JSON object"
            },
        ),
        mcp=McpTool("memory_resolve_tool_arguments", read_only=True),
        request=judgment_schemas.ResolveToolArgumentsRequest,
        response=bindings.ToolArgumentResolution,
    ),
    # -- feedback --
    Operation(
        "record_relevance",
        Capability.FEEDBACK,
        "Record relevance judgments",
        "Save the user's explicit judgment of which retrieved memories were relevant.",
        http=HttpRoute("POST", "/v1/relevance", Errors.READ, {400: _RECORD_REJECTED}),
        mcp=McpTool("memory_record_relevance", read_only=False),
        request=judgment_schemas.RelevanceRequest,
        response=feedback.RelevanceRecord,
        engine_input=feedback.RelevanceInput,
        shape=Shape.WRITE_BODY,
    ),
    Operation(
        "list_relevance",
        Capability.FEEDBACK,
        "List relevance judgments",
        "The owner's relevance judgments, a page at a time in id order; with request_id, only "
        "those of that retrieval.",
        http=HttpRoute("GET", "/v1/relevance", Errors.READ),
        request=None,
        response=feedback.RelevancePage,
        shape=Shape.LIST_PAGE,
    ),
    Operation(
        "get_relevance",
        Capability.FEEDBACK,
        "Read one relevance judgment",
        "One saved relevance judgment.",
        http=HttpRoute("GET", "/v1/relevance/{feedback_id}", Errors.READ),
        request=None,
        response=feedback.RelevanceRecord,
        shape=Shape.READ_ONE,
    ),
    Operation(
        "record_answer_citations",
        Capability.FEEDBACK,
        "Record an answer's citations",
        "Record which memories from a retrieval's context supported an answer.",
        http=HttpRoute(
            "POST",
            "/v1/answer-citations",
            Errors.READ,
            {
                400: "A cited node is not a content-bearing entry of the saved context",
                409: "citation_id was already used with other input",
            },
        ),
        mcp=McpTool("memory_record_answer_citations", read_only=False),
        request=judgment_schemas.AnswerCitationRequest,
        response=feedback.AnswerCitationRecord,
        engine_input=feedback.AnswerCitationInput,
        shape=Shape.WRITE_BODY,
    ),
    Operation(
        "list_answer_citations",
        Capability.FEEDBACK,
        "List answer citations",
        "The owner's answer citations, a page at a time in id order; with request_id, only "
        "those of that retrieval.",
        http=HttpRoute("GET", "/v1/answer-citations", Errors.READ),
        request=None,
        response=feedback.AnswerCitationPage,
        shape=Shape.LIST_PAGE,
    ),
    Operation(
        "get_answer_citations",
        Capability.FEEDBACK,
        "Read one answer's citations",
        "One saved answer-citation record.",
        http=HttpRoute("GET", "/v1/answer-citations/{citation_id}", Errors.READ),
        request=None,
        response=feedback.AnswerCitationRecord,
        shape=Shape.READ_ONE,
    ),
    # -- learning from feedback (issue 22) --
    Operation(
        "evaluate_learning",
        Capability.LEARNING,
        "Learn ranking weights and evaluate them on a holdout",
        "Fit fused-ranking weights (channel weights, rrf_k and the boosts) to the owner's "
        "judged retrievals: nodes judged relevant or cited in an answer should rank first "
        "(NDCG@10). A share of the judged retrievals, chosen by a hash of each request id, is "
        "held out of the fit; the answer gives the metric of the baseline and of the proposal "
        "on both parts, and recommends the proposal only when it gains on the holdout without "
        "losing on the training set. Reads saved receipts only; nothing is written or "
        "activated.",
        http=HttpRoute(
            "POST",
            "/v1/learning/evaluate",
            extra_errors={
                400: "Too few judged retrievals to fit and hold out (error not_enough_judgments)"
            },
        ),
        mcp=McpTool("memory_evaluate_learning", read_only=True),
        request=learning_schemas.LearningEvaluationRequest,
        response=learning.LearningEvaluation,
        engine_input=learning.LearningInput,
        shape=Shape.WRITE_BODY,
    ),
    Operation(
        "create_ranking_profile",
        Capability.LEARNING,
        "Save a ranking profile",
        "Save learned ranking weights with the holdout evaluation that scored them. Saving "
        "changes no ranking; only a profile whose evaluation recommends it can be activated.",
        http=HttpRoute(
            "POST",
            "/v1/learning/profiles",
            Errors.READ,
            {409: "The owner already has a profile of that profile_id"},
        ),
        mcp=McpTool("memory_create_ranking_profile", read_only=False),
        request=learning_schemas.RankingProfileRequest,
        response=learning.RankingProfile,
        engine_input=learning.RankingProfileInput,
        shape=Shape.WRITE_BODY,
    ),
    Operation(
        "get_ranking_profile",
        Capability.LEARNING,
        "Read a ranking profile",
        "One saved ranking profile: its scopes, weights and holdout evaluation.",
        http=HttpRoute("GET", "/v1/learning/profiles/{profile_id}", Errors.READ),
        mcp=McpTool("memory_get_ranking_profile", read_only=True),
        request=None,
        response=learning.RankingProfile,
        shape=Shape.READ_ONE,
    ),
    Operation(
        "list_ranking_profiles",
        Capability.LEARNING,
        "List ranking profiles",
        "A page of the owner's saved ranking profiles, in profile_id order.",
        http=HttpRoute("GET", "/v1/learning/profiles"),
        mcp=McpTool("memory_list_ranking_profiles", read_only=True),
        request=None,
        response=learning_schemas.RankingProfileListResponse,
    ),
    Operation(
        "get_active_ranking_profile",
        Capability.LEARNING,
        "Read a scope slot's active ranking profile",
        "The slot's current state (whose change_id the next change names) and the profile "
        "that ranks retrievals filtered to exactly those scopes: the slot's own, else the "
        "owner-wide one.",
        http=HttpRoute("GET", "/v1/learning/profiles/active"),
        mcp=McpTool("memory_get_active_ranking_profile", read_only=True),
        request=None,
        response=learning.ActiveRankingProfile,
    ),
    Operation(
        "list_ranking_profile_history",
        Capability.LEARNING,
        "List a scope slot's profile changes",
        "Every activation, deactivation and rollback of one scope slot, newest first, with "
        "who made it and when.",
        http=HttpRoute("GET", "/v1/learning/profiles/history"),
        mcp=McpTool("memory_list_ranking_profile_history", read_only=True),
        request=None,
        response=list[learning.RankingProfileState],
    ),
    Operation(
        "activate_ranking_profile",
        Capability.LEARNING,
        "Activate a ranking profile",
        "Rank the owner's retrievals of a scope slot by this profile. Refused unless its "
        "holdout evaluation exists and recommends it, or when the slot changed since it was "
        "read.",
        http=HttpRoute(
            "POST",
            "/v1/learning/profiles/{profile_id}/activate",
            Errors.READ,
            {
                409: "The change_id is stale (stale_ranking_change), or the profile was not "
                "evaluated on a holdout (ranking_profile_not_evaluated) or not recommended by "
                "its evaluation (ranking_profile_not_recommended)"
            },
        ),
        mcp=McpTool("memory_activate_ranking_profile", read_only=False),
        request=learning_schemas.ActivateRankingProfileRequest,
        response=learning.RankingProfileState,
    ),
    Operation(
        "deactivate_ranking_profile",
        Capability.LEARNING,
        "Deactivate a scope slot's ranking profile",
        "Leave a scope slot without a profile: its retrievals fall back to the owner-wide "
        "profile, or to the engine's settings.",
        http=HttpRoute(
            "POST",
            "/v1/learning/profiles/deactivate",
            extra_errors={409: "The change_id is stale (stale_ranking_change)"},
        ),
        mcp=McpTool("memory_deactivate_ranking_profile", read_only=False),
        request=learning_schemas.DeactivateRankingProfileRequest,
        response=learning.RankingProfileState,
    ),
    Operation(
        "rollback_ranking_profile",
        Capability.LEARNING,
        "Roll a scope slot back to an earlier profile",
        "Make active again a profile that was active in this scope slot before its current change.",
        http=HttpRoute(
            "POST",
            "/v1/learning/profiles/rollback",
            Errors.READ,
            {
                409: "The change_id is stale (stale_ranking_change), or the profile was never "
                "active in this slot before (ranking_profile_never_active)"
            },
        ),
        mcp=McpTool("memory_rollback_ranking_profile", read_only=False),
        request=learning_schemas.RollbackRankingProfileRequest,
        response=learning.RankingProfileState,
    ),
    # -- aliases --
    Operation(
        "list_alias_proposals",
        Capability.ALIASES,
        "List alias proposals",
        "Pairs of entity memories that may name the same thing, with evidence and any review. "
        "Proposals are advice: nothing is linked until reviewed.",
        http=HttpRoute("GET", "/v1/alias-proposals"),
        mcp=McpTool("memory_list_alias_proposals", read_only=True),
        request=None,
        response=judgment_schemas.AliasProposalListResponse,
    ),
    Operation(
        "review_alias_proposal",
        Capability.ALIASES,
        "Accept or reject an alias proposal",
        "Accept (adds a verified alias link, merges nothing) or reject an alias proposal. Only "
        "act on a person's explicit decision.",
        http=HttpRoute(
            "POST",
            "/v1/alias-proposals/{proposal_operation_id}/review",
            Errors.READ,
            {
                409: "The proposal was already reviewed with another decision, or a node "
                "changed since it was assessed (stale)"
            },
        ),
        mcp=McpTool("memory_review_alias_proposal", read_only=False),
        request=judgment_schemas.AliasReviewRequest,
        response=judgment_schemas.AliasProposalResponse,
    ),
    Operation(
        "get_node_edges",
        Capability.ALIASES,
        "List a node's edges",
        "The edges of one memory node, such as the verified alias links an accepted proposal "
        "created.",
        http=HttpRoute("GET", "/v1/nodes/{node_id}/edges", Errors.READ),
        request=None,
        response=list[judgment_schemas.EdgeResponse],
        shape=Shape.READ_ONE,
    ),
    Operation(
        "propose_aliases",
        Capability.ALIASES,
        "Scan entity names for alias proposals",
        "Scan the owner's entity names for alias proposals within a budget; an unfinished scan "
        "continues on the next call.",
    ),
    # -- quantities: one MCP tool serves both, taking a question or a structured query --
    Operation(
        "aggregate_quantities",
        Capability.QUANTITIES,
        "Total matching quantities per unit",
        "Exact totals of amounts and counts extracted from the owner's messages, per unit "
        "(never converted), each value re-checked against its source.",
        http=HttpRoute("POST", "/v1/quantities/aggregate"),
        mcp=_AGGREGATE_TOOL,
        request=judgment_schemas.QuantityAggregationRequest,
        response=quantities.QuantityAggregation,
    ),
    Operation(
        "aggregate_quantities_text",
        Capability.QUANTITIES,
        "Answer a supported quantity question",
        "Plan a supported question (such as 'How much did I raise?') and aggregate; "
        "unsupported wording reads no memory.",
        http=HttpRoute("POST", "/v1/quantities/aggregate-text"),
        mcp=_AGGREGATE_TOOL,
        request=judgment_schemas.QuantityQuestionRequest,
        response=quantities.QuantityQuestionAnswer,
    ),
    # -- keys: a tenant's operator provisions its users' keys --
    Operation(
        "create_key",
        Capability.KEYS,
        "Create an owner key",
        "Create an API key that acts for one user of the operator's tenant. The secret is in "
        "this response only. On a keyless local server, the first key ends keyless access and "
        "the response says so.",
        caller=Caller.OPERATOR,
        http=HttpRoute("POST", "/v1/keys"),
        request=schemas.KeyRequest,
        response=schemas.IssuedKeyResponse,
        client=False,
        served_by="credentials",
    ),
    Operation(
        "list_keys",
        Capability.KEYS,
        "List the tenant's keys",
        "Every API key of the operator's tenant, active and revoked, without secrets; "
        "user_id narrows it to one user's keys.",
        caller=Caller.OPERATOR,
        http=HttpRoute("GET", "/v1/keys"),
        response=schemas.KeyListResponse,
        client=False,
        served_by="credentials",
    ),
    Operation(
        "revoke_key",
        Capability.KEYS,
        "Revoke an owner key",
        "Revoke one owner key of the operator's tenant; it authenticates nothing from then on. "
        "Operator keys are revoked with the prme CLI on the server.",
        caller=Caller.OPERATOR,
        http=HttpRoute("DELETE", "/v1/keys/{key_id}", Errors.READ),
        response=schemas.KeyResponse,
        client=False,
        served_by="credentials",
    ),
    # -- limits: what the tenant may use, read by any of its keys --
    Operation(
        "get_limits",
        Capability.LIMITS,
        "Read the tenant's limits and use",
        "Each limit of the key's tenant (requests a second and the burst, stored records and "
        "bytes, retrievals a day), what the tenant has used of it and when that use starts "
        "over. A request over the rate or the day's retrievals answers 429 with Retry-After; "
        "a write past the stored records or bytes answers 403. Any key of the tenant may read "
        "it, and reading it counts against no limit.",
        http=HttpRoute("GET", "/v1/limits"),
        request=None,
        response=LimitsReport,
        limited=Limited.EXEMPT,
    ),
    # -- operator: tenant-wide passes for deployments and workers --
    Operation(
        "reindex",
        Capability.OPERATOR,
        "Rebuild an owner's search index entries",
        "Rebuild every search index entry of one owner from the ledger.",
        caller=Caller.OPERATOR,
    ),
    Operation(
        "commit_import_chunk",
        Capability.OPERATOR,
        "Commit one chunk of a bulk import",
        "Commit one chunk of a bulk import (the import queue's consumer), when the import's "
        "job lists that chunk with the same digest, and count it in the job once.",
        caller=Caller.OPERATOR,
        client=False,
    ),
    Operation(
        "process_queued",
        Capability.OPERATOR,
        "Process announced work items",
        "Process the work items a queue delivered (the work consumers).",
        caller=Caller.OPERATOR,
        client=False,
    ),
    Operation(
        "fail_work",
        Capability.OPERATOR,
        "Fail a work item for good",
        "Mark a work item failed for good (a dead-lettered message).",
        caller=Caller.OPERATOR,
        client=False,
    ),
    Operation(
        "sweep_overdue",
        Capability.OPERATOR,
        "Re-announce overdue work",
        "Re-announce overdue queued work of every family; fail what stays overdue.",
        caller=Caller.OPERATOR,
        client=False,
    ),
    Operation(
        "archive_expired",
        Capability.OPERATOR,
        "Archive expired memories",
        "Archive memories whose TTL has passed, a batch at a time.",
        caller=Caller.OPERATOR,
        client=False,
    ),
    Operation(
        "list_owners",
        Capability.OPERATOR,
        "List a tenant's owners",
        "Every owner of a tenant with stored events (for reindexing a tenant).",
        caller=Caller.OPERATOR,
        client=False,
    ),
    # -- metering: what each tenant used, for its operator (issue 19) --
    Operation(
        "get_usage",
        Capability.USAGE,
        "Sum the tenant's usage",
        "The operator's tenant's metered usage (records written and returned, context tokens, "
        "bytes, embedding and extraction model calls) summed per UTC day or month and per kind "
        "of operation, for the whole tenant or one user. Each operation counts once, however "
        "often it was retried.",
        caller=Caller.OPERATOR,
        http=HttpRoute("GET", "/v1/usage"),
        request=None,
        response=usage.UsageReport,
    ),
    # -- conditional memories and contradictions (issue 20) --
    Operation(
        "evaluate_condition",
        Capability.LIFECYCLE,
        "Evaluate a conditional memory's condition",
        "Record whether a conditional memory's condition holds (unknown, true, false or "
        "expired), with who decided it, why and the evidence. A conditional memory is part of "
        "default retrieval only while its condition is true; explicit mode returns it always.",
        http=HttpRoute(
            "PUT",
            "/v1/nodes/{node_id}/condition",
            Errors.READ,
            {
                409: "The memory is superseded, deprecated or archived, or the "
                "Idempotency-Key was used for another request"
            },
            idempotency_key=True,
        ),
        mcp=McpTool("memory_evaluate_condition", read_only=False),
        request=conflict_schemas.ConditionRequest,
        response=schemas.NodeResponse,
    ),
    Operation(
        "mark_contradiction",
        Capability.LIFECYCLE,
        "Mark two memories as contradicting each other",
        "Mark two active memories of one scope as contradicting each other: both become "
        "contested and are linked by a contradicts edge. Retrieval flags contested results "
        "(conflict_flag, contradicts_id) and tags them in the context. Returns both nodes. "
        "The same request again is answered without a second link; the same pair with other "
        "evidence is refused (422).",
        http=HttpRoute(
            "POST",
            "/v1/contradictions",
            Errors.READ,
            {409: "One of the memories is superseded, deprecated or archived"},
        ),
        mcp=McpTool(
            "memory_mark_contradiction",
            read_only=False,
            note="Call it when two remembered statements cannot both be true and the user has "
            "not said which holds; once they do, call memory_resolve_contradiction.",
        ),
        request=conflict_schemas.ContradictionRequest,
        response=list[schemas.NodeResponse],
    ),
    Operation(
        "resolve_contradiction",
        Capability.LIFECYCLE,
        "Settle a contradiction between two memories",
        "Settle a contradiction: the winner becomes stable, the loser deprecated (it leaves "
        "default retrieval). Both must be contested and linked by a contradicts edge (422 "
        "otherwise). Returns the winner, then the loser; the same request again is answered "
        "as it was.",
        http=HttpRoute("POST", "/v1/contradictions/resolve", Errors.READ),
        mcp=McpTool("memory_resolve_contradiction", read_only=False),
        request=conflict_schemas.ResolutionRequest,
        response=list[schemas.NodeResponse],
    ),
    # -- graph and provenance reads of one node (issue 20) --
    Operation(
        "get_node_provenance",
        Capability.GRAPH,
        "Read a node's evidence and operation history",
        "Where a memory node came from and what was done to it: its source events (ids, "
        "roles, sessions, times and content digests) and a page of the journal records that "
        "operated on it, oldest first, each checked against its checksum. Page with "
        "operation_cursor.",
        http=HttpRoute("GET", "/v1/nodes/{node_id}/provenance", Errors.READ),
        mcp=McpTool("memory_get_provenance", read_only=True),
        request=None,
        response=graph_schemas.NodeProvenanceResponse,
    ),
    Operation(
        "get_node_neighborhood",
        Capability.GRAPH,
        "Read the nodes near a node",
        "The memory nodes reachable from one node over the owner's edges (either direction) "
        "within max_hops, nearest first, each with its distance and the edge types that "
        "reached it; the start node is not listed.",
        http=HttpRoute("GET", "/v1/nodes/{node_id}/neighborhood", Errors.READ),
        mcp=McpTool("memory_get_neighborhood", read_only=True),
        request=None,
        response=graph_schemas.NodeNeighborhoodResponse,
    ),
    Operation(
        "get_node_chain",
        Capability.GRAPH,
        "Read a node's supersedence chain",
        "The chain of memories that replaced one another through a node: forward to what "
        "replaced it and on to the current one, backward to what it replaced, or both.",
        http=HttpRoute("GET", "/v1/nodes/{node_id}/chain", Errors.READ),
        mcp=McpTool("memory_get_chain", read_only=True),
        request=None,
        response=graph_schemas.NodeChainResponse,
    ),
    # -- assertions: exact counts over extracted claims, and a fact's value over time --
    Operation(
        "aggregate_assertions",
        Capability.ASSERTIONS,
        "Count matching assertions per group",
        "Exact counts of the subject/predicate/object assertions extracted from the owner's "
        "messages, per group, from a scan of every stored node (not a ranked subset), with "
        "sample node ids and their source events.",
        http=HttpRoute("POST", "/v1/assertions/aggregate"),
        mcp=McpTool("memory_aggregate_assertions", read_only=True),
        request=assertion_schemas.AssertionAggregationRequest,
        response=assertions.AssertionAggregation,
    ),
    Operation(
        "get_assertion_state",
        Capability.ASSERTIONS,
        "Read the value of a fact over time",
        "The value(s) of one fact (a subject and a predicate) at valid_at as known at "
        "knowledge_at (both default now), newest first, and every stored assertion of it, "
        "oldest first. Disagreeing values are all returned as ambiguous, never chosen.",
        http=HttpRoute("POST", "/v1/assertions/state"),
        mcp=McpTool(
            "memory_get_assertion_state",
            read_only=True,
            note="Call it for the current value of one fact, e.g. subject I, predicate live.",
        ),
        request=assertion_schemas.AssertionStateRequest,
        response=assertions.AssertionState,
    ),
    # -- knowledge updates on ingest (issue 20) --
    Operation(
        "get_event_extraction",
        Capability.PROCESSING,
        "Read an event's saved extraction",
        "The saved record of one source's completed extraction: the extractor, the reference "
        "time relative dates were resolved against, the validated artifacts, the nodes and "
        "edges it created, the note that took a claim stating the whole source, and the "
        "earlier claims it superseded. 404 for an unknown or foreign event, and for one whose "
        "extraction has not completed.",
        http=HttpRoute("GET", "/v1/events/{event_id}/extraction", Errors.READ),
        mcp=McpTool("memory_get_event_extraction", read_only=True),
        request=None,
        response=extraction.SavedExtraction,
        shape=Shape.READ_ONE,
    ),
    # -- the organizer (issue 20) --
    Operation(
        "organize",
        Capability.LIFECYCLE,
        "Organize the owner's memory",
        "Run the organizer's maintenance jobs over the owner's memories within a time budget: "
        "promote tentative memories old enough and with evidence, decay salience and "
        "confidence, archive and deprecate memories under the thresholds, supersede "
        "same-text duplicates and archive expired ones. Every change is journaled; a job "
        "that runs out of time stops between memories (complete: false) and the next call "
        "continues where it stopped.",
        http=HttpRoute("POST", "/v1/organize"),
        mcp=McpTool("memory_organize", read_only=False),
        request=organizer_schemas.OrganizeRequest,
        response=organizer.OrganizeReport,
        engine_input=organizer.OrganizeInput,
        shape=Shape.WRITE_BODY,
    ),
    Operation(
        "organize_owners",
        Capability.OPERATOR,
        "Organize every owner",
        "The organizer over every owner of the given tenants within one time budget (the "
        "maintenance function's pass).",
        caller=Caller.OPERATOR,
        client=False,
    ),
    # -- the memory inspector (issue 21) --
    Operation(
        "get_caller",
        Capability.KEYS,
        "Read who the key is",
        "The caller as its key makes it: the tenant, the role (an owner key acting for one "
        "user, or an operator key acting for any user it names), that user for an owner key, "
        "whether this is a local server's keyless access, and the key's id (never its secret). "
        "A page signing in with a key calls it first; reading it counts against no limit.",
        http=HttpRoute("GET", "/v1/me"),
        request=None,
        response=caller.CallerIdentity,
        limited=Limited.EXEMPT,
    ),
    # -- receipt listings for the inspector (issue 21) --
    Operation(
        "list_retrievals",
        Capability.RECEIPTS,
        "List saved retrievals",
        "The owner's saved retrieval receipts, newest first, one summary each (request id, "
        "time, query, counts of results and candidates, tokens, context format, profile); "
        "open one with its request_id. Expired receipts are not listed. Page with cursor "
        "until next_cursor is null; a page may hold fewer than limit while more follow.",
        http=HttpRoute("GET", "/v1/retrievals"),
        request=None,
        response=receipt_listing.RetrievalPage,
    ),
    Operation(
        "list_node_retrievals",
        Capability.RECEIPTS,
        "List the retrievals that ranked a memory",
        "The saved retrievals that ranked one memory node, newest first, with what became of "
        "it in each: returned, or the reason it was left out, its rank in the fused order and "
        "its reference in the packed context. Each call reads at most scan_limit receipts "
        "(scanned says how many); pass next_cursor to look further back.",
        http=HttpRoute("GET", "/v1/nodes/{node_id}/retrievals", Errors.READ),
        request=None,
        response=receipt_listing.NodeRetrievalPage,
    ),
    Operation(
        "get_retrieval_context",
        Capability.RECEIPTS,
        "Rebuild a retrieval's packed context",
        "The packed context of a saved retrieval, rendered again from its receipt (which keeps "
        "the context's digest and entries, not its text) and the memories as stored now, with "
        "each reference's memory and whether the text is exactly what the model saw. Memories "
        "deleted since are left out of the text and listed; memories changed since are listed.",
        http=HttpRoute("GET", "/v1/retrievals/{request_id}/context", Errors.READ),
        request=None,
        response=context_rebuild.RebuiltContext,
        shape=Shape.READ_ONE,
    ),
    # -- batch reads for the inspector (issue 21) --
    Operation(
        "get_nodes",
        Capability.MEMORIES,
        "Read many memory nodes",
        "Read up to 100 of the owner's memory nodes by id in one call: the nodes found, in "
        "the order asked, and the ids not found (unknown, deleted, another owner's or "
        "unreadable, which a caller cannot tell apart). One request against the limits, "
        "however many ids.",
        http=HttpRoute("POST", "/v1/nodes/batch-get"),
        request=node_batch_schemas.NodeBatchRequest,
        response=node_batch_schemas.NodeBatchResponse,
    ),
)

BY_NAME: Mapping[str, Operation] = {operation.name: operation for operation in OPERATIONS}


def operation(name: str) -> Operation:
    """The table's entry of `name`; a KeyError names an operation the table does not declare."""
    return BY_NAME[name]


def mcp_tool(tool_name: str) -> McpTool:
    """The table's declaration of an MCP tool; a KeyError names a tool the table does not list."""
    for op in OPERATIONS:
        if op.mcp is not None and op.mcp.name == tool_name:
            return op.mcp
    raise KeyError(tool_name)


def mcp_description(tool_name: str) -> str:
    """The description of an MCP tool: the descriptions of every operation it serves."""
    served = [op for op in OPERATIONS if op.mcp is not None and op.mcp.name == tool_name]
    if not served:
        raise KeyError(tool_name)
    note = served[0].mcp.note if served[0].mcp is not None else ""
    return "\n\n".join([op.description for op in served] + ([note] if note else []))


def client_docstring(name: str, note: str | None = None, *, user_id: str | None = None) -> str:
    """A `MemoryClient` method's docstring: the operation's summary and description, the
    method's own note (what differs in Python), and what each field of the request means;
    `user_id` says what the argument means in the client, whose callers are not authenticated
    owners."""
    op = BY_NAME[name]
    parts = [f"{op.summary}.", op.description]
    if note:
        parts.append(inspect.cleandoc(note))
    if op.request is not None:
        texts = {field: info.description for field, info in op.request.model_fields.items()}
        if user_id and "user_id" in texts:
            texts["user_id"] = user_id
        fields = [f"    {field_name}: {text}" for field_name, text in texts.items() if text]
        if fields:
            parts.append("Arguments:\n" + "\n".join(fields))
    return "\n\n".join(parts)


def presented(response: Any, result: Any) -> Any:
    """What a table-built surface returns for an engine result: a list item by item; a record
    through its response model's `of`; a result object by its attributes; a model the engine
    returns goes as it is."""
    if get_origin(response) is list:
        (item,) = get_args(response)
        return [presented(item, each) for each in result]
    if isinstance(result, response):
        return result
    of = getattr(response, "of", None)
    if of is not None:
        return of(result)
    return response.model_validate(result, from_attributes=True)

"""Every surface serves exactly the operations the table declares, under the table's names."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from mcp_types import CallToolResult

import prme.http.dependencies
import prme.http.table_routes
import prme.mcp.server
import prme.operations
from prme.backends.embedded.service import EmbeddedBackend, open_embedded
from prme.client import MemoryClient
from prme.embedding.hashing import HashingEmbedder
from prme.engine.credentials import CredentialService
from prme.engine.identity import Principal
from prme.engine.service import MemoryEngine
from prme.http.app import create_app
from prme.http.auth import AuthPolicy
from prme.http.dependencies import ApiRuntime
from prme.http.schemas import EventResponse
from prme.mcp.server import build_mcp_server
from prme.model.inputs import StoreInput
from prme.model.records import Event, OwnerKey
from prme.operations import (
    ID_DESCRIPTIONS,
    OPERATIONS,
    Caller,
    Capability,
    Errors,
    HttpRoute,
    McpTool,
    Operation,
    Shape,
    client_docstring,
    mcp_description,
)
from tests.harness.engines import TOKEN_COUNTER

# MemoryClient methods that are not operations: the context manager and an older name.
# Methods that are no operation: closing, and loops over operations (whole export files).
CLIENT_PLUMBING = {"close", "process_pending", "export_to", "import_from"}
# Tool arguments whose JSON form differs from the model field's, so they say so themselves:
# ttl_days takes the word "type_default" where Python and HTTP omit the field.
MCP_OWN_FORMS = {("memory_store", "ttl_days")}


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBackend]:
    data: Path = tmp_path_factory.mktemp("operations")
    backend = open_embedded(data, embedder=HashingEmbedder(), token_counter=TOKEN_COUNTER)
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def app(backend: EmbeddedBackend) -> FastAPI:
    runtime = ApiRuntime(engine=backend.engine, credentials=backend.credentials, auth=AuthPolicy())
    return create_app(runtime)


def _api_routes(app: FastAPI) -> list[APIRoute]:
    return [r for r in app.routes if isinstance(r, APIRoute) and r.include_in_schema]


def test_operation_names_are_unique_and_say_what_they_do() -> None:
    names = [op.name for op in OPERATIONS]
    assert len(names) == len(set(names))
    for op in OPERATIONS:
        assert op.name.isidentifier() and op.name == op.name.lower(), op.name
        assert op.summary and not op.summary.endswith("."), op.name
        assert op.description.endswith("."), op.name
        if op.caller is Caller.OPERATOR:
            # Operator work is never offered to a model; its HTTP routes refuse owner keys
            # (tests/api/test_key_routes.py).
            assert op.mcp is None, op.name


def test_the_http_routes_are_the_tables(app: FastAPI) -> None:
    routes = {route.name: route for route in _api_routes(app)}
    declared = {op.name: op for op in OPERATIONS if op.http is not None}
    assert set(routes) == set(declared)
    for name, op in declared.items():
        route = routes[name]
        assert op.http is not None
        assert (route.path, route.methods) == (op.http.path, {op.http.method}), name
        assert route.operation_id == name
        assert route.tags == [op.capability.value]
        assert route.response_model == op.response, name
        # The table's request model is the route's body (routes without one take ids only);
        # an optional body (reinforce) is the model or nothing.
        body = route.body_field.field_info.annotation if route.body_field else None
        assert body in (op.request, op.request | None if op.request else None), name


def test_openapi_documents_every_operation(app: FastAPI) -> None:
    document = app.openapi()
    assert document["components"]["securitySchemes"]["bearerAuth"]["scheme"] == "bearer"
    tags = {tag["name"] for tag in document["tags"]}
    for op in OPERATIONS:
        if op.http is None:
            continue
        published = document["paths"][op.http.path][op.http.method.lower()]
        assert published["operationId"] == op.name
        assert published["summary"] == op.summary
        assert published["description"] == op.description
        assert published["tags"] == [op.capability.value]
        assert op.capability.value in tags
        assert published["security"] == [{"bearerAuth": []}]
        for status in op.http.extra_errors:
            assert str(status) in published["responses"], (op.name, status)
        for parameter in published.get("parameters", []):
            # Path ids, query parameters and headers are described like body fields.
            assert parameter.get("description"), (op.name, parameter["name"])


def test_the_mcp_tools_are_the_tables(backend: EmbeddedBackend) -> None:
    server = build_mcp_server(backend.engine, lambda: Principal.operator("local"), tools="full")
    tools = {tool.name: tool for tool in asyncio.run(server.list_tools())}
    declared = {op.mcp.name: op.mcp for op in OPERATIONS if op.mcp is not None}
    assert set(tools) == set(declared)
    for name, tool in tools.items():
        assert tool.description == mcp_description(name)
        hints = tool.annotations
        assert hints is not None
        assert hints.read_only_hint is declared[name].read_only, name
        if not declared[name].read_only:
            assert hints.destructive_hint is declared[name].destructive, name


def test_each_tool_argument_schema_is_titled_by_its_tool(backend: EmbeddedBackend) -> None:
    """The SDK titles an argument schema after the function it wraps; a tool built from the
    table is titled after its own name too, as the hand-written tools were, not after the
    shared builder (five tools once all published the title toolArguments)."""
    server = build_mcp_server(backend.engine, lambda: Principal.operator("local"), tools="full")
    for tool in asyncio.run(server.list_tools()):
        assert tool.input_schema["title"] == f"{tool.name}Arguments"


def test_every_tool_argument_is_described_like_its_model_field(backend: EmbeddedBackend) -> None:
    """A tool argument that is a field of the operation's request model carries the model's
    description: field descriptions are written once, on the model."""
    server = build_mcp_server(backend.engine, lambda: Principal.operator("local"), tools="full")
    tools = {tool.name: tool for tool in asyncio.run(server.list_tools())}
    for op in OPERATIONS:
        if op.mcp is None or op.request is None:
            continue
        properties: dict[str, Any] = tools[op.mcp.name].input_schema["properties"]
        for field_name, info in op.request.model_fields.items():
            if (op.mcp.name, field_name) in MCP_OWN_FORMS:
                continue
            if field_name in properties and info.description:
                shown = properties[field_name].get("description")
                assert shown == info.description, (op.name, field_name)


def test_the_client_has_every_owner_operation_by_its_name() -> None:
    methods = {
        name
        for name, member in inspect.getmembers(MemoryClient, inspect.isfunction)
        if not name.startswith("_")
    }
    declared = {op.name for op in OPERATIONS if op.client}
    assert methods - CLIENT_PLUMBING == declared
    for name in declared:
        method = getattr(MemoryClient, name)
        assert method.__doc__.startswith(client_docstring(name).split("\n\n")[0]), name
        if (request := next(op.request for op in OPERATIONS if op.name == name)) is None:
            continue
        parameters = set(inspect.signature(method).parameters)
        # Every field of the request body is an argument of the same name.
        missing = set(request.model_fields) - parameters
        assert not missing, (name, missing)


def test_the_engine_has_one_method_per_operation() -> None:
    methods = {
        name
        for name, member in inspect.getmembers(MemoryEngine, inspect.isfunction)
        if not name.startswith("_")
    }
    declared = {op.engine_method for op in OPERATIONS if op.served_by == "engine"}
    assert methods == declared
    for op in OPERATIONS:
        if op.served_by == "credentials":
            assert callable(getattr(CredentialService, op.name, None)), op.name


def test_the_client_docstrings_say_what_an_omitted_user_id_means_there() -> None:
    """The client has no API key: an omitted user_id is its default user, not "the
    authenticated owner" the HTTP request models speak of."""
    for op in OPERATIONS:
        if not op.client or op.request is None or "user_id" not in op.request.model_fields:
            continue
        doc = getattr(MemoryClient, op.name).__doc__
        assert "authenticated owner" not in doc, op.name
        assert "user_id: Whose memory; omitted means the client's default user" in doc, op.name


def test_tool_descriptions_name_the_tools_and_fields_they_send_an_agent_to() -> None:
    """The table's texts speak of operations in words ("process materializations"); an agent
    reads a tool description and needs the tool names and result fields it refers to."""
    assert "memory_process_materializations" in mcp_description("memory_ingest_fast")
    retrieve = mcp_description("memory_retrieve")
    assert "memory_resolve_tool_arguments" in retrieve
    for field_name in ("context", "context_references", "value_bindings"):
        assert f"`{field_name}`" in retrieve, field_name


def test_a_path_id_is_described_alike_as_a_tool_argument(backend: EmbeddedBackend) -> None:
    """An id the route takes in its path is the same id when its tool takes it as an argument,
    so both surfaces show the table's one description of it."""
    server = build_mcp_server(backend.engine, lambda: Principal.operator("local"), tools="full")
    tools = {tool.name: tool for tool in asyncio.run(server.list_tools())}
    for op in OPERATIONS:
        if op.mcp is None:
            continue
        properties: dict[str, Any] = tools[op.mcp.name].input_schema["properties"]
        for id_name in op.path_ids:
            shown = properties[id_name].get("description")
            assert shown == ID_DESCRIPTIONS[id_name], (op.name, id_name)


class _EngineWithEventEcho(MemoryEngine):
    """An engine with one operation more, as a contributor would add it."""

    def get_event_echo(self, owner: OwnerKey, event_id: str) -> Event:
        return self.get_event(owner, event_id)


_ECHO = Operation(
    "get_event_echo",
    Capability.MEMORIES,
    "Read one source event again",
    "The same record as get_event, under another route.",
    http=HttpRoute("GET", "/v1/event-echoes/{event_id}", Errors.READ),
    mcp=McpTool("memory_get_event_echo", read_only=True),
    response=EventResponse,
    client=False,
    shape=Shape.READ_ONE,
)


def test_a_new_read_operation_is_one_entry_and_one_engine_method(
    backend: EmbeddedBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Given only a table entry and an engine method, the HTTP route (with its error responses
    and texts) and the MCP tool exist and answer like get_event."""
    operations = (*OPERATIONS, _ECHO)
    by_name = {op.name: op for op in operations}
    monkeypatch.setattr(prme.operations, "OPERATIONS", operations)
    monkeypatch.setattr(prme.operations, "BY_NAME", by_name)
    monkeypatch.setattr(prme.http.table_routes, "OPERATIONS", operations)
    monkeypatch.setattr(prme.http.dependencies, "OPERATIONS", by_name)
    monkeypatch.setattr(prme.mcp.server, "OPERATIONS", operations)
    engine = _EngineWithEventEcho(backend.engine.deps)
    stored = engine.store(
        OwnerKey(tenant_id="local", owner_id="default"), StoreInput(content="The boat is blue.")
    )

    runtime = ApiRuntime(
        engine=engine, credentials=backend.credentials, auth=AuthPolicy(open_tenant="local")
    )
    app = create_app(runtime)
    with TestClient(app, base_url="http://127.0.0.1:8000") as client:
        echoed = client.get(f"/v1/event-echoes/{stored.event_id}")
        read = client.get(f"/v1/events/{stored.event_id}")
        unknown = client.get(f"/v1/event-echoes/{uuid4()}")
    assert echoed.status_code == 200
    assert echoed.json() == read.json()
    assert unknown.status_code == 404
    published = app.openapi()["paths"]["/v1/event-echoes/{event_id}"]["get"]
    assert published["summary"] == _ECHO.summary
    assert {"401", "403", "404", "422", "500", "503"} <= set(published["responses"])

    server = build_mcp_server(
        engine, lambda: Principal.operator("local", default_owner_id="default"), tools="full"
    )
    tools = {tool.name for tool in asyncio.run(server.list_tools())}
    assert "memory_get_event_echo" in tools
    result = asyncio.run(server.call_tool("memory_get_event_echo", {"event_id": stored.event_id}))
    assert isinstance(result, CallToolResult) and not result.is_error
    assert result.structured_content is not None
    assert result.structured_content["content"] == "The boat is blue."

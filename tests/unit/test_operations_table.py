"""Every surface serves exactly the operations the table declares, under the table's names."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute

from prme.backends.embedded.service import EmbeddedBackend, open_embedded
from prme.client import MemoryClient
from prme.embedding.hashing import HashingEmbedder
from prme.engine.identity import Principal
from prme.engine.service import MemoryEngine
from prme.http.app import create_app
from prme.http.auth import AuthPolicy
from prme.http.dependencies import ApiRuntime
from prme.mcp.server import build_mcp_server
from prme.operations import OPERATIONS, Caller, client_docstring, mcp_description
from tests.harness.engines import TOKEN_COUNTER

# MemoryClient methods that are not operations: the context manager and an older name.
CLIENT_PLUMBING = {"close", "process_pending"}
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
            # Tenant-wide passes are never served to an owner's key.
            assert op.http is None and op.mcp is None, op.name


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
    server = build_mcp_server(backend.engine, lambda: Principal.operator("local"))
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


def test_every_tool_argument_is_described_like_its_model_field(backend: EmbeddedBackend) -> None:
    """A tool argument that is a field of the operation's request model carries the model's
    description: field descriptions are written once, on the model."""
    server = build_mcp_server(backend.engine, lambda: Principal.operator("local"))
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
    declared = {op.engine_method for op in OPERATIONS}
    assert methods == declared

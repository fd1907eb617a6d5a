"""Every argument of a store or a retrieval reaches the engine, from MCP and from the client.

The MCP tools and the client take a request's fields by the input model's field names; these
tests pin that no field is lost on the way and that each surface's "omitted" stays distinct
from an explicit null (ttl_days: omitted is the node type's default, null never expires).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from mcp_types import CallToolResult

from prme.client import InProcessTransport, MemoryClient
from prme.engine.identity import Principal
from prme.engine.service import MemoryEngine
from prme.http.schemas import NodeResponse
from prme.mcp.server import PrmeMcpServer, build_mcp_server
from prme.model.records import OwnerKey
from prme.settings import Settings

OWNER = OwnerKey(tenant_id="local", owner_id="default")

STORED_FIELDS: dict[str, Any] = {
    "content": "The ferry to Ischia leaves at 07:40 from pier 3.",
    "retrieval_content": "ferry to Ischia at 07:40, pier 3",
    "speaker": "Marta",
    "session_id": "trip-planning",
    "node_type": "event",
    "scope": "project",
    "metadata": {"source": "timetable"},
    "epistemic_type": "asserted",
    "source_type": "external_document",
    "confidence": 0.7,
    "event_time": "2026-06-01T07:40:00+02:00",
}


def _holds_every_field(node: NodeResponse) -> None:
    # The node holds the compact form; the event keeps the content verbatim.
    assert node.content == STORED_FIELDS["retrieval_content"]
    assert node.speaker == "Marta"
    assert node.session_id == "trip-planning"
    assert (node.node_type, node.scope) == ("event", "project")
    assert node.metadata["source"] == "timetable"
    assert (node.epistemic_type, node.source_type) == ("asserted", "external_document")
    assert node.confidence == pytest.approx(0.7)
    assert node.event_time == datetime(2026, 6, 1, 5, 40, tzinfo=UTC)


@pytest.fixture
def client(tmp_path: Path) -> Iterator[MemoryClient]:
    with MemoryClient(tmp_path, settings=Settings(embedder="hashing")) as memory:
        yield memory


def _engine(client: MemoryClient) -> MemoryEngine:
    # The MCP server under test runs on the same engine as the embedded client.
    transport = client._transport
    assert isinstance(transport, InProcessTransport)
    return transport.backend.engine


def _server(client: MemoryClient) -> PrmeMcpServer:
    return build_mcp_server(
        _engine(client),
        lambda: Principal.operator("local", default_owner_id="default"),
        tools="full",
    )


def _call(server: PrmeMcpServer, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = asyncio.run(server.call_tool(tool, arguments))
    assert isinstance(result, CallToolResult)
    assert not result.is_error, result.structured_content
    content: dict[str, Any] | None = result.structured_content
    assert content is not None
    return content


def _stored_node(client: MemoryClient, node_id: str | None) -> NodeResponse:
    assert node_id is not None
    return client.get_node(node_id)


def test_the_client_store_passes_every_field(client: MemoryClient) -> None:
    stored = client.store(**STORED_FIELDS)
    _holds_every_field(_stored_node(client, stored.node_id))


def test_the_mcp_store_passes_every_field(client: MemoryClient) -> None:
    stored = _call(_server(client), "memory_store", STORED_FIELDS)
    _holds_every_field(_stored_node(client, stored["node_id"]))


def test_ttl_days_omitted_null_and_given_differ_on_both_surfaces(client: MemoryClient) -> None:
    note: dict[str, Any] = {"content": "Water the basil.", "node_type": "note"}
    server = _server(client)
    by_client = [
        client.store(**note),
        client.store(**note, ttl_days=None),
        client.store(**note, ttl_days=3),
    ]
    by_tool = [
        _call(server, "memory_store", note),
        _call(server, "memory_store", {**note, "ttl_days": None}),
        _call(server, "memory_store", {**note, "ttl_days": 3}),
    ]
    for omitted, never, three in (
        [_stored_node(client, s.node_id) for s in by_client],
        [_stored_node(client, s["node_id"]) for s in by_tool],
    ):
        # A note's default is 90 days; null never expires; 3 is 3.
        assert (omitted.ttl_days, never.ttl_days, three.ttl_days) == (90, None, 3)
        assert never.expires_at is None


def _kept_for_filters(client: MemoryClient) -> dict[str, str]:
    """Three memories that differ in source, type, scope and time, by name."""
    rows: dict[str, dict[str, Any]] = {
        "tool": {"source_type": "tool_output", "event_time": "2026-03-01T10:00:00Z"},
        "task": {"node_type": "task", "event_time": "2026-04-01T10:00:00Z"},
        "team": {"scope": "project", "event_time": "2026-05-01T10:00:00Z"},
    }
    ids = {}
    for name, fields in rows.items():
        stored = client.store(f"Harbour schedule note {name}", **fields)
        assert stored.node_id is not None
        ids[stored.node_id] = name
    return ids


FILTER_CASES: list[tuple[dict[str, Any], set[str]]] = [
    ({"source_types": ["tool_output"]}, {"tool"}),
    ({"exclude_node_types": ["task"]}, {"tool", "team"}),
    ({"scope": ["project"]}, {"team"}),
    ({"event_time_from": "2026-03-15T00:00:00Z"}, {"task", "team"}),
    ({"event_time_to": "2026-04-15T00:00:00Z"}, {"tool", "task"}),
]


@pytest.mark.parametrize(("filters", "expected"), FILTER_CASES)
def test_every_retrieval_filter_reaches_the_engine(
    client: MemoryClient, filters: dict[str, Any], expected: set[str]
) -> None:
    names = _kept_for_filters(client)
    query = "harbour schedule note"

    by_client = client.retrieve(query, filters=filters)
    by_tool = _call(_server(client), "memory_retrieve", {"query": query, **filters})

    assert {names[r.node_id] for r in by_client.results} == expected
    assert {names[r["node_id"]] for r in by_tool["results"]} == expected

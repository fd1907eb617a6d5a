"""What a model sees of the MCP tools: the default tool set the table declares, descriptions
that say when to call each, memory_retrieve's text, and stdio's own access error."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from mcp_types import CallToolResult

from prme.backends.embedded.service import EmbeddedBackend, open_embedded
from prme.embedding.hashing import HashingEmbedder
from prme.engine.identity import Principal
from prme.mcp.server import McpTransport, build_mcp_server, retrieve_tool_budget
from prme.operations import OPERATIONS, McpToolSet, mcp_description
from prme.retrieval.response_size import carried_size
from tests.harness.engines import TOKEN_COUNTER
from tests.harness.records import note_node

DECLARED_DEFAULT = {op.mcp.name for op in OPERATIONS if op.mcp is not None and op.mcp.default}
DECLARED = {op.mcp.name for op in OPERATIONS if op.mcp is not None}
ALICE = Principal.owner("local", "alice")


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBackend]:
    built = open_embedded(
        tmp_path_factory.mktemp("mcp") / "memory",
        embedder=HashingEmbedder(),
        token_counter=TOKEN_COUNTER,
    )
    yield built
    built.close()


def listed(backend: EmbeddedBackend, tools: McpToolSet) -> set[str]:
    server = build_mcp_server(backend.engine, lambda: ALICE, tools=tools)
    return {tool.name for tool in asyncio.run(server.list_tools())}


def call(
    backend: EmbeddedBackend,
    name: str,
    arguments: dict[str, Any],
    *,
    transport: McpTransport = "http",
) -> CallToolResult:
    server = build_mcp_server(backend.engine, lambda: ALICE, transport=transport)
    result = asyncio.run(server.call_tool(name, arguments))
    assert isinstance(result, CallToolResult)
    return result


def test_the_default_set_is_what_the_table_declares(backend: EmbeddedBackend) -> None:
    assert listed(backend, "default") == DECLARED_DEFAULT
    assert {"memory_store", "memory_ingest", "memory_retrieve", "memory_supersede"} <= (
        DECLARED_DEFAULT
    )
    assert listed(backend, "full") == DECLARED


def test_listed_schemas_carry_no_titles_below_the_top(backend: EmbeddedBackend) -> None:
    """Each argument's title only repeats its name, in every turn's tool list."""
    server = build_mcp_server(backend.engine, lambda: ALICE, tools="full")
    for tool in asyncio.run(server.list_tools()):
        schema = tool.input_schema
        assert schema["title"] == f"{tool.name}Arguments"
        below = json.dumps({k: v for k, v in schema.items() if k != "title"})
        assert '"title"' not in below, tool.name
        assert all("description" in each for each in schema["properties"].values()), tool.name


def test_a_default_tool_says_when_to_call_it() -> None:
    """The advice is the tool's note, said to agents only: the operation's description (the
    OpenAPI text for HTTP users) does not carry it."""
    for op in OPERATIONS:
        if op.mcp is None or not op.mcp.default:
            continue
        assert op.mcp.note.startswith("Call it "), op.name
        assert op.mcp.note in mcp_description(op.mcp.name)
        assert "Call it " not in op.description, op.name


def test_retrieve_text_is_the_context_and_its_references(backend: EmbeddedBackend) -> None:
    stored = call(backend, "memory_store", {"content": "My sister Ana moved to Porto in May."})
    assert stored.structured_content is not None
    node_id = stored.structured_content["node_id"]
    result = call(backend, "memory_retrieve", {"query": "Where does Ana live?"})
    found = result.structured_content
    assert found is not None
    (content,) = result.content
    text = getattr(content, "text", "")
    assert text.startswith(found["context"])
    assert "My sister Ana moved to Porto in May." in text
    assert f"References:\nm1 -> {node_id}" in text
    assert text.endswith(f"request_id: {found['metrics']['request_id']}")
    # The JSON is the structured content only: the text is far smaller than it.
    assert '"results"' not in text
    assert len(text) * 3 < len(json.dumps(found))

    bare = call(backend, "memory_retrieve", {"query": "Ana", "include_context": False})
    (bare_content,) = bare.content
    assert f'{node_id}: "My sister Ana moved to Porto in May."' in getattr(bare_content, "text", "")


def test_stdio_access_errors_name_the_configured_owner(backend: EmbeddedBackend) -> None:
    arguments = {"query": "x", "user_id": "bob"}
    over_stdio = call(backend, "memory_retrieve", arguments, transport="stdio")
    over_http = call(backend, "memory_retrieve", arguments)
    assert over_stdio.is_error and over_http.is_error
    assert over_stdio.structured_content is not None and over_http.structured_content is not None
    stdio_error = over_stdio.structured_content["error"]
    assert (stdio_error["category"], stdio_error["status"]) == ("permission_denied", 403)
    assert "API key" not in stdio_error["detail"]
    assert "stdio" in stdio_error["detail"]
    assert "'alice'" in stdio_error["detail"] and "'local'" in stdio_error["detail"]
    # The name the caller asked for is not echoed; over HTTP the key is what is refused.
    assert "bob" not in stdio_error["detail"]
    assert "API key" in over_http.structured_content["error"]["detail"]


def test_the_retrieve_budget_counts_the_text_a_model_reads() -> None:
    """Without the context, each result's content is quoted in the text: its bytes count
    again, one encoding deeper than in the structured content."""
    content = '"quoted" 中文 ' * 2000
    node = note_node(content)
    bare = retrieve_tool_budget(6_000_000, include_context=False).record_bytes(
        node, "reader", False
    )
    quoted = carried_size(node.content, 3)
    assert bare >= carried_size(node.content, 2) + quoted
    with_context = retrieve_tool_budget(6_000_000, include_context=True).record_bytes(
        node, "reader", True
    )
    # In the context, the line (content at the text's level) and the structured copies.
    assert with_context >= 2 * carried_size(node.content, 2) + carried_size(node.content, 2)


@pytest.mark.parametrize("tools", ["default", "full"])
def test_the_instructions_name_only_listed_tools(backend: EmbeddedBackend, tools: str) -> None:
    chosen: McpToolSet = "full" if tools == "full" else "default"
    server = build_mcp_server(backend.engine, lambda: ALICE, tools=chosen)
    names = {tool.name for tool in asyncio.run(server.list_tools())}
    instructions = server.instructions or ""
    mentioned = {word.strip(".,()") for word in instructions.split() if word.startswith("memory_")}
    assert mentioned <= names

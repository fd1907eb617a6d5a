"""MCP tool arguments pass the same input policy as HTTP bodies, on stdio too, where no HTTP
middleware has looked at them; so do MemoryClient's free-form arguments."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp_types import CallToolResult

from prme.backends.embedded.service import open_embedded
from prme.client import MemoryClient
from prme.embedding.hashing import HashingEmbedder
from prme.engine.identity import Principal
from prme.errors import InvalidRequestError
from prme.mcp.server import build_mcp_server
from prme.model.records import OwnerKey
from prme.settings import Settings

REQUEST_ID = "6f1c3c1e-8a51-4f6e-9a43-3f1b2f0c9d11"


def deep(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(levels):
        value = {"a": value}
    return value


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        # Free-form JSON no input model looks into: only the edge policy stops these.
        ("memory_resolve_tool_arguments", {"request_id": REQUEST_ID, "arguments": {"n": math.nan}}),
        ("memory_resolve_tool_arguments", {"request_id": REQUEST_ID, "arguments": deep(60)}),
        *(
            ("memory_store", arguments)
            for arguments in [
                {"content": "hi", "metadata": {"score": math.nan}},
                {"content": "hi", "metadata": {"score": math.inf}},
                {"content": "hi", "metadata": deep(220)},
                {"content": "hi \ud800"},
                {"content": "hi", "speaker": "Caroline\u200b"},
                {"content": "hi", "session_id": "s\x00"},
                {"content": "hi", "confidence": math.nan},
            ]
        ),
    ],
)
def test_hostile_tool_arguments_are_invalid_requests(
    tmp_path: Path, tool: str, arguments: dict[str, Any]
) -> None:
    backend = open_embedded(tmp_path / "memory", embedder=HashingEmbedder())
    server = build_mcp_server(
        backend.engine, lambda: Principal.owner("local", "alice"), tools="full"
    )
    try:
        result = anyio.run(server.call_tool, tool, arguments)

        assert isinstance(result, CallToolResult)
        assert result.is_error
        assert result.structured_content is not None
        error = result.structured_content["error"]
        assert (error["category"], error["status"]) == ("invalid_request", 422)
        assert (
            backend.engine.deps.ledger.list_nodes(OwnerKey(tenant_id="local", owner_id="alice"))
            == []
        )
    finally:
        backend.close()


@pytest.mark.parametrize("arguments", [{"n": math.nan}, {"s": "x\ud800"}, deep(60)])
def test_client_tool_arguments_pass_the_policy_before_any_lookup(
    tmp_path: Path, arguments: dict[str, Any]
) -> None:
    """Refused as invalid (422) before the unknown retrieval id could answer not found."""
    with (
        MemoryClient(tmp_path / "memory", settings=Settings(embedder="hashing")) as memory,
        pytest.raises(InvalidRequestError),
    ):
        memory.resolve_tool_arguments(REQUEST_ID, arguments)

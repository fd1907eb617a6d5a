"""The MCP tools through a real MCP SDK client: streamable HTTP (a live server) and stdio."""

from __future__ import annotations

import json
import logging
import os
import socket
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import uvicorn
from fastapi import FastAPI
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult

from prme.engine.config import EngineConfig
from prme.model.enums import CredentialRole
from prme.operations import OPERATIONS, McpToolSet
from tests.harness.http import TENANT, api_app

# Every tool (PRME_MCP_TOOLS=full), and the few the table offers a model by default.
FULL_TOOLS = {
    "memory_store",
    "memory_retrieve",
    "memory_ingest",
    "memory_ingest_fast",
    "memory_process_materializations",
    "memory_get_event",
    "memory_get_node",
    "memory_list",
    "memory_forget",
    "memory_supersede",
    "memory_promote",
    "memory_archive",
    "memory_reinforce",
    "memory_record_relevance",
    "memory_record_answer_citations",
    "memory_get_retrieval_receipt",
    "memory_list_alias_proposals",
    "memory_review_alias_proposal",
    "memory_aggregate_quantities",
    "memory_resolve_tool_arguments",
    "memory_evaluate_condition",
    "memory_mark_contradiction",
    "memory_resolve_contradiction",
    "memory_get_provenance",
    "memory_get_neighborhood",
    "memory_get_chain",
    "memory_aggregate_assertions",
    "memory_get_assertion_state",
    "memory_get_event_extraction",
    "memory_organize",
    "memory_evaluate_learning",
    "memory_create_ranking_profile",
    "memory_get_ranking_profile",
    "memory_list_ranking_profiles",
    "memory_get_active_ranking_profile",
    "memory_list_ranking_profile_history",
    "memory_activate_ranking_profile",
    "memory_deactivate_ranking_profile",
    "memory_rollback_ranking_profile",
}
DEFAULT_TOOLS = {op.mcp.name for op in OPERATIONS if op.mcp is not None and op.mcp.default}
CITY = {
    "content": '{"plan":"Current City: Salt Lake City(Utah)"}',
    "retrieval_content": "Confirmed plan\nCurrent City: Salt Lake City(Utah)",
    "value_bindings": [
        {
            "reference": "current-city-1",
            "kind": "city",
            "presentation": "Salt Lake City(Utah)",
            "lookup": "Salt Lake City",
        }
    ],
}

Session = Callable[[Client], Awaitable[None]]


@dataclass
class LiveMcp:
    url: str
    keys: dict[str, str]
    app: FastAPI

    def run(self, key: str | None, session: Session) -> None:
        headers = {"Authorization": f"Bearer {key}"} if key is not None else {}

        async def main() -> None:
            async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
                transport = streamable_http_client(self.url, http_client=http)
                async with Client(transport) as client:
                    await session(client)

        anyio.run(main)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(params=["embedded", "aws"])
def live_mcp(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LiveMcp]:
    """The whole API, every MCP tool included, served by uvicorn on a loopback port."""
    yield from serve(request, tmp_path, "full")


@pytest.fixture(params=["embedded"])
def live_default_mcp(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LiveMcp]:
    """The API as deployed by default: /mcp lists the default tools."""
    yield from serve(request, tmp_path, "default")


def serve(request: pytest.FixtureRequest, tmp_path: Path, tools: McpToolSet) -> Iterator[LiveMcp]:
    with api_app(request, tmp_path, mcp_tools=tools) as (app, _, keys):
        port = free_port()
        server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
        )
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 20
        while not server.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.02)
        yield LiveMcp(f"http://127.0.0.1:{port}/mcp", keys, app)
        server.should_exit = True
        thread.join(timeout=10)


def ok(result: CallToolResult) -> dict[str, Any]:
    content = structured(result)
    # The text content carries the same JSON for clients that ignore structured content.
    assert json.loads(text_of(result)) == content
    return content


def structured(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    content: dict[str, Any] | None = result.structured_content
    assert content is not None
    return content


def text_of(result: CallToolResult) -> str:
    (text,) = result.content
    shown: str = getattr(text, "text", "")
    return shown


def retrieved(result: CallToolResult) -> dict[str, Any]:
    """A memory_retrieve result: the JSON is structured content; the text is what a model
    reads, the context and its references, not the JSON."""
    found = structured(result)
    text = text_of(result)
    if "context" in found:
        assert text.startswith(found["context"] or "(no memories matched)")
        for ref, node_id in found["context_references"].items():
            assert f"{ref} -> {node_id}" in text
        assert found["value_bindings_text"] in text
    else:
        for item in found["results"]:
            assert f"{item['node_id']}: {json.dumps(item['content'])}" in text
    assert f"request_id: {found['metrics']['request_id']}" in text
    assert '"metrics"' not in text and '"results"' not in text
    return found


def error(result: CallToolResult) -> dict[str, Any]:
    assert result.is_error
    assert result.structured_content is not None
    failure: dict[str, Any] = result.structured_content["error"]
    return failure


async def store_retrieve_resolve(client: Client) -> None:
    """The value-binding round trip an agent makes: store, retrieve with context, resolve."""
    stored = ok(await client.call_tool("memory_store", CITY))
    assert stored["processing_status"] == "completed"
    found = retrieved(
        await client.call_tool("memory_retrieve", {"query": "Which city is current?"})
    )
    assert "Current City: Salt Lake City(Utah)" in found["context"]
    assert found["context_references"]["m1"] == stored["node_id"]
    assert found["results"][0]["node_id"] == stored["node_id"]
    binding = found["value_bindings"][0]
    assert binding["presentation"] == "Salt Lake City(Utah)"
    assert "lookup" not in binding  # lookups stay out of the model's context
    assert "Salt Lake City(Utah)" in found["value_bindings_text"]
    request_id = found["metrics"]["request_id"]
    resolved = ok(
        await client.call_tool(
            "memory_resolve_tool_arguments",
            {"request_id": request_id, "arguments": {"city": "Salt Lake City(Utah)", "n": 2}},
        )
    )
    assert resolved["arguments"] == {"city": "Salt Lake City", "n": 2}
    assert resolved["replacements"][0]["path"] == "/city"
    assert resolved["replacements"][0]["node_id"] == stored["node_id"]
    # Without the context the retrieval still saves its receipt, which the tool reads.
    bare = retrieved(
        await client.call_tool(
            "memory_retrieve", {"query": "Which city?", "include_context": False}
        )
    )
    assert "context" not in bare
    receipt = ok(
        await client.call_tool(
            "memory_get_retrieval_receipt", {"request_id": bare["metrics"]["request_id"]}
        )
    )
    assert receipt["returned_node_ids"] == [r["node_id"] for r in bare["results"]]


# -- streamable HTTP -----------------------------------------------------------------------


@pytest.mark.parametrize("live_mcp", ["embedded"], indirect=True)
def test_http_conditions_and_contradictions_through_the_tools(live_mcp: LiveMcp) -> None:
    async def session(client: Client) -> None:
        pickup = ok(
            await client.call_tool(
                "memory_store",
                {
                    "content": "Pick Ana up at the airport at six",
                    "epistemic_type": "conditional",
                    "metadata": {"condition": "Ana booked the Friday flight"},
                },
            )
        )["node_id"]
        query = {"query": "When do I pick Ana up at the airport?"}
        found = retrieved(await client.call_tool("memory_retrieve", query))
        assert pickup not in [r["node_id"] for r in found["results"]]
        refused = error(
            await client.call_tool("memory_evaluate_condition", {"node_id": pickup, "state": "?"})
        )
        assert refused["status"] == 422
        arguments = {
            "node_id": pickup,
            "state": "true",
            "evaluation_method": "tool",
            "reason": "Booking confirmation",
            "idempotency_key": "c0ffee00-0000-4000-8000-0000000000aa",
        }
        node = ok(await client.call_tool("memory_evaluate_condition", arguments))
        assert node["metadata"]["prme_condition_v1"]["state"] == "true"
        assert ok(await client.call_tool("memory_evaluate_condition", arguments)) == node
        reused = error(
            await client.call_tool("memory_evaluate_condition", {**arguments, "state": "false"})
        )
        assert reused["status"] == 409
        ok(await client.call_tool("memory_process_materializations", {}))
        found = retrieved(await client.call_tool("memory_retrieve", query))
        assert pickup in [r["node_id"] for r in found["results"]]

        porto = ok(await client.call_tool("memory_store", {"content": "Ana lives in Porto"}))
        lisbon = ok(await client.call_tool("memory_store", {"content": "Ana lives in Lisbon"}))
        pair = {"node_a_id": porto["node_id"], "node_b_id": lisbon["node_id"]}
        marked = ok(await client.call_tool("memory_mark_contradiction", pair))["items"]
        assert [n["lifecycle_state"] for n in marked] == ["contested", "contested"]
        found = retrieved(
            await client.call_tool("memory_retrieve", {"query": "Where does Ana live?"})
        )
        flags = {r["node_id"]: r["contradicts_id"] for r in found["results"] if r["conflict_flag"]}
        assert flags == {porto["node_id"]: lisbon["node_id"], lisbon["node_id"]: porto["node_id"]}
        assert "[contested]" in found["context"]
        settled = ok(
            await client.call_tool(
                "memory_resolve_contradiction",
                {"winner_id": lisbon["node_id"], "loser_id": porto["node_id"]},
            )
        )["items"]
        assert [n["lifecycle_state"] for n in settled] == ["stable", "deprecated"]

    live_mcp.run(live_mcp.keys["alice"], session)


def test_http_lists_every_tool_with_a_description(live_mcp: LiveMcp) -> None:
    async def session(client: Client) -> None:
        listed = await client.list_tools()
        tools = {tool.name: tool for tool in listed.tools}
        assert set(tools) == FULL_TOOLS
        for tool in tools.values():
            assert tool.description is not None and len(tool.description) > 40, tool.name
            assert not tool.description.startswith(" "), tool.name
        retrieve = tools["memory_retrieve"].input_schema["properties"]
        assert {"include_context", "exclude_node_types", "source_types"} <= set(retrieve)
        assert "value_bindings" in tools["memory_store"].input_schema["properties"]
        # What an agent is told a store defaults to is what the engine does.
        node_type = tools["memory_store"].input_schema["properties"]["node_type"]
        assert f"default {EngineConfig().default_node_type.value}," in node_type["description"]

    live_mcp.run(live_mcp.keys["alice"], session)


def test_http_lists_the_default_tools_unless_told_otherwise(live_default_mcp: LiveMcp) -> None:
    """A model is sent every listed schema on every turn: by default /mcp lists the table's
    default tools, which say when to call them; the full set's other tools are not served."""

    async def session(client: Client) -> None:
        listed = await client.list_tools()
        tools = {tool.name: tool for tool in listed.tools}
        assert set(tools) == DEFAULT_TOOLS
        assert {"memory_store", "memory_ingest", "memory_retrieve", "memory_supersede"} <= set(
            tools
        )
        for tool in tools.values():
            assert tool.description is not None and "Call it " in tool.description, tool.name
        unknown = await client.call_tool("memory_process_materializations", {})
        assert unknown.is_error
        stored = ok(await client.call_tool("memory_store", {"content": "My cat is Miso."}))
        answer = await client.call_tool("memory_retrieve", {"query": "What is my cat called?"})
        found = retrieved(answer)
        assert found["context_references"]["m1"] == stored["node_id"]
        assert "My cat is Miso." in text_of(answer)

    live_default_mcp.run(live_default_mcp.keys["alice"], session)


@pytest.mark.parametrize("live_mcp", ["embedded"], indirect=True)
def test_http_first_call_leaves_the_root_logger_alone(live_mcp: LiveMcp) -> None:
    # Given an application whose root logger has no handler and a level of its own choosing
    root = logging.getLogger()
    saved_handlers, saved_level = list(root.handlers), root.level
    chosen_level = logging.ERROR + 5
    root.handlers = []
    root.setLevel(chosen_level)
    try:
        # When the first /mcp call builds the MCP server (the SDK configures logging there)
        async def session(client: Client) -> None:
            assert (await client.list_tools()).tools

        live_mcp.run(live_mcp.keys["alice"], session)
        # Then the root logger is as the application left it: no Rich handler formatting
        # tracebacks on the event loop, no level changed
        assert root.handlers == []
        assert root.level == chosen_level
    finally:
        root.handlers = saved_handlers
        root.setLevel(saved_level)


def test_http_store_retrieve_with_context_and_resolve(live_mcp: LiveMcp) -> None:
    live_mcp.run(live_mcp.keys["alice"], store_retrieve_resolve)


def test_http_keys_bind_the_owner(live_mcp: LiveMcp) -> None:
    stored: dict[str, Any] = {}

    async def as_alice(client: Client) -> None:
        stored.update(ok(await client.call_tool("memory_store", {"content": "Alice's secret"})))
        denied = error(await client.call_tool("memory_store", {"content": "x", "user_id": "bob"}))
        assert (denied["category"], denied["status"]) == ("permission_denied", 403)

    async def as_stranger(client: Client) -> None:
        missing = error(await client.call_tool("memory_get_node", {"node_id": stored["node_id"]}))
        assert (missing["category"], missing["status"], missing["code"]) == (
            "not_found",
            404,
            "not_found",
        )

    async def as_operator(client: Client) -> None:
        unnamed = error(await client.call_tool("memory_get_node", {"node_id": stored["node_id"]}))
        assert unnamed["category"] == "invalid_request"
        node = ok(
            await client.call_tool(
                "memory_get_node", {"node_id": stored["node_id"], "user_id": "alice"}
            )
        )
        assert node["content"] == "Alice's secret"

    live_mcp.run(live_mcp.keys["alice"], as_alice)
    live_mcp.run(live_mcp.keys["bob"], as_stranger)
    live_mcp.run(live_mcp.keys["other"], as_stranger)
    live_mcp.run(live_mcp.keys["operator"], as_operator)


def test_a_review_through_mcp_records_the_callers_key(live_mcp: LiveMcp) -> None:
    runtime = live_mcp.app.state.runtime
    issued = runtime.credentials.create(
        tenant_id=TENANT, owner_id="alice", role=CredentialRole.OWNER
    )
    reviewed: dict[str, Any] = {}

    async def store_entities(client: Client) -> None:
        for name in ("IBM", "International Business Machines"):
            ok(await client.call_tool("memory_store", {"content": name, "node_type": "entity"}))

    async def review(client: Client) -> None:
        [item] = ok(await client.call_tool("memory_list_alias_proposals", {}))["items"]
        arguments = {
            "proposal_operation_id": item["proposal"]["proposal_operation_id"],
            "decision": "accepted",
            "reviewer_id": "human:someone-else",
        }
        reviewed.update(ok(await client.call_tool("memory_review_alias_proposal", arguments)))

    live_mcp.run(issued.secret, store_entities)
    assert runtime.engine.propose_aliases(None).proposals_created == 1
    live_mcp.run(issued.secret, review)
    assert reviewed["review"]["reviewer_id"] == "human:someone-else"
    assert reviewed["review"]["reviewed_by_key_id"] == issued.credential.key_id
    assert reviewed["review"]["reviewed_by_role"] == "owner"


@pytest.mark.parametrize("key", [None, "not-a-real-key"])
def test_http_refuses_calls_without_a_valid_key(live_mcp: LiveMcp, key: str | None) -> None:
    async def session(client: Client) -> None:
        await client.list_tools()  # pragma: no cover - the connection must fail first

    # The SDK client cannot even list the tools (it reports the refusal as an error)...
    with pytest.raises(Exception):  # noqa: B017, PT011 - the SDK wraps the failure in a group
        live_mcp.run(key, session)
    # ...because the endpoint answers 401 before any MCP processing.
    with httpx2.Client() as http:
        response = http.post(
            live_mcp.url,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
            headers={"accept": "application/json, text/event-stream"}
            | ({"Authorization": f"Bearer {key}"} if key else {}),
        )
    assert response.status_code == 401
    assert response.json()["category"] == "unauthenticated"
    assert response.headers["www-authenticate"] == "Bearer"


def test_http_errors_are_structured_and_sanitized(live_mcp: LiveMcp) -> None:
    async def session(client: Client) -> None:
        wrong_type = error(await client.call_tool("memory_store", {"content": 5}))
        assert (wrong_type["category"], wrong_type["status"]) == ("invalid_request", 422)
        assert wrong_type["detail"][0]["loc"] == ["content"]
        naive_time = error(
            await client.call_tool(
                "memory_store", {"content": "x", "event_time": "2024-03-10T07:30:00"}
            )
        )
        assert naive_time["status"] == 422
        bad_id = error(await client.call_tool("memory_get_event", {"event_id": "not-a-uuid"}))
        assert (bad_id["category"], bad_id["status"]) == ("invalid_request", 422)
        unknown = error(
            await client.call_tool(
                "memory_record_relevance",
                {"request_id": "22222222-2222-4222-8222-222222222222", "labels": {"a": True}},
            )
        )
        assert (unknown["category"], unknown["status"]) == ("invalid_request", 422)  # label key
        for failure in (wrong_type, naive_time, bad_id, unknown):
            text = json.dumps(failure)
            assert "Traceback" not in text and "errors.pydantic.dev" not in text

    live_mcp.run(live_mcp.keys["alice"], session)


def test_http_every_tool_answers(live_mcp: LiveMcp) -> None:
    """One pass over the tools an agent uses beyond store and retrieve."""

    async def session(client: Client) -> None:
        old = ok(await client.call_tool("memory_store", {"content": "I live in Porto."}))
        new = ok(await client.call_tool("memory_store", {"content": "I moved to Lisbon."}))
        assert (
            ok(await client.call_tool("memory_get_event", {"event_id": old["event_id"]}))["content"]
            == "I live in Porto."
        )
        promoted = ok(await client.call_tool("memory_promote", {"node_id": new["node_id"]}))
        assert promoted["lifecycle_state"] == "stable"
        ok(await client.call_tool("memory_reinforce", {"node_id": new["node_id"]}))
        superseded = ok(
            await client.call_tool(
                "memory_supersede",
                {"old_node_id": old["node_id"], "new_node_id": new["node_id"]},
            )
        )
        assert superseded["items"][0]["lifecycle_state"] == "superseded"
        batch = ok(
            await client.call_tool(
                "memory_ingest_fast", {"items": [{"content": "Note one"}, {"content": "Note two"}]}
            )
        )
        assert batch["accepted"] == 2
        report = ok(await client.call_tool("memory_process_materializations", {}))
        assert report["pending"] == 0
        ingested = ok(
            await client.call_tool(
                "memory_ingest",
                {"content": "I raised $1,200 for the library.", "wait_for_extraction": True},
            )
        )
        assert ingested["extraction_status"] == "completed"
        totals = ok(
            await client.call_tool(
                "memory_aggregate_quantities", {"question": "How much did I raise?"}
            )
        )
        assert totals["plan"]["status"] == "ready"
        assert [g["total"] for g in totals["aggregation"]["groups"]] == ["1200"]
        found = retrieved(await client.call_tool("memory_retrieve", {"query": "Where do I live?"}))
        request_id, node_id = found["metrics"]["request_id"], found["results"][0]["node_id"]
        judged = ok(
            await client.call_tool(
                "memory_record_relevance", {"request_id": request_id, "labels": {node_id: True}}
            )
        )
        assert judged["labels"] == {node_id: True}
        cited = ok(
            await client.call_tool(
                "memory_record_answer_citations",
                {
                    "request_id": request_id,
                    "answer_id": "a-1",
                    "cited_node_ids": [found["context_references"]["m1"]],
                },
            )
        )
        assert cited["method"] == "model_reported"
        ok(await client.call_tool("memory_store", {"content": "IBM", "node_type": "entity"}))
        ok(
            await client.call_tool(
                "memory_store",
                {"content": "International Business Machines", "node_type": "entity"},
            )
        )
        assert ok(await client.call_tool("memory_list_alias_proposals", {}))["items"] == []
        missing = error(
            await client.call_tool(
                "memory_review_alias_proposal",
                {
                    "proposal_operation_id": "33333333-3333-4333-8333-333333333333",
                    "decision": "rejected",
                    "reviewer_id": "human:alice",
                    "reason": "different things",
                },
            )
        )
        assert missing["status"] == 404
        archived = ok(await client.call_tool("memory_archive", {"node_id": old["node_id"]}))
        assert archived["lifecycle_state"] == "archived"

    live_mcp.run(live_mcp.keys["alice"], session)


# -- stdio ---------------------------------------------------------------------------------


def stdio_params(
    data_dir: Path, *args: str, settings: dict[str, str] | None = None
) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRME_")}
    env["PRME_EMBEDDER"] = "hashing"
    env.update(settings or {})
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "prme.cli", "--data-dir", str(data_dir), "mcp", *args],
        env=env,
    )


def run_stdio(params: StdioServerParameters, session: Session) -> None:
    async def main() -> None:
        async with Client(params) as client:
            await session(client)

    anyio.run(main)


def test_stdio_serves_the_tools_for_the_configured_owner(tmp_path: Path) -> None:
    params = stdio_params(
        tmp_path / "memory", "--user-id", "alice", settings={"PRME_MCP_TOOLS": "full"}
    )

    async def session(client: Client) -> None:
        assert {tool.name for tool in (await client.list_tools()).tools} == FULL_TOOLS
        await store_retrieve_resolve(client)
        denied = error(await client.call_tool("memory_retrieve", {"query": "x", "user_id": "bob"}))
        assert (denied["category"], denied["status"]) == ("permission_denied", 403)
        # Stdio has no API key: the error names the owner the server was started for.
        assert "API key" not in denied["detail"]
        assert "stdio" in denied["detail"] and "'alice'" in denied["detail"]
        assert "'bob'" not in denied["detail"]

    run_stdio(params, session)

    # The memories belong to alice in the directory: another owner's stdio server sees none.
    # Without PRME_MCP_TOOLS it lists the default tools only.
    async def as_bob(client: Client) -> None:
        listed = await client.list_tools()
        assert {tool.name for tool in listed.tools} == DEFAULT_TOOLS
        found = retrieved(
            await client.call_tool("memory_retrieve", {"query": "Which city is current?"})
        )
        assert found["results"] == []

    run_stdio(stdio_params(tmp_path / "memory", "--user-id", "bob"), as_bob)


def test_graph_reads_through_mcp_match_their_routes(live_mcp: LiveMcp) -> None:
    made: dict[str, str] = {}

    async def as_alice(client: Client) -> None:
        old = ok(await client.call_tool("memory_store", {"content": "I work at Initech"}))
        new = ok(await client.call_tool("memory_store", {"content": "I work at Globex now"}))
        made.update(old=old["node_id"], new=new["node_id"])
        pair = {"old_node_id": old["node_id"], "new_node_id": new["node_id"]}
        ok(await client.call_tool("memory_supersede", pair))

        found = ok(await client.call_tool("memory_get_provenance", {"node_id": old["node_id"]}))
        assert [e["event_id"] for e in found["evidence"]] == [old["event_id"]]
        assert {o["operation"] for o in found["operations"]} == {"direct_store", "supersede"}
        assert all(o["verified"] for o in found["operations"])
        page = {"node_id": old["node_id"], "operation_limit": 1}
        first = ok(await client.call_tool("memory_get_provenance", page))
        assert len(first["operations"]) == 1 and first["next_operation_cursor"]
        near = ok(await client.call_tool("memory_get_neighborhood", {"node_id": old["node_id"]}))
        assert [n["node"]["id"] for n in near["neighbors"]] == [new["node_id"]]
        chain = ok(await client.call_tool("memory_get_chain", {"node_id": old["node_id"]}))
        assert [n["id"] for n in chain["nodes"]] == [old["node_id"], new["node_id"]]
        refused = error(
            await client.call_tool("memory_get_provenance", {**page, "operation_limit": 0})
        )
        assert refused["category"] == "invalid_request"
        malformed = error(await client.call_tool("memory_get_chain", {"node_id": "not-a-node"}))
        assert malformed["category"] == "invalid_request"

    async def as_stranger(client: Client) -> None:
        for tool in ("memory_get_provenance", "memory_get_neighborhood", "memory_get_chain"):
            missing = error(await client.call_tool(tool, {"node_id": made["old"]}))
            assert (missing["category"], missing["status"]) == ("not_found", 404)

    live_mcp.run(live_mcp.keys["alice"], as_alice)
    live_mcp.run(live_mcp.keys["bob"], as_stranger)


def test_memory_organize_runs_the_owners_jobs_and_refuses_an_unknown_one(
    live_mcp: LiveMcp,
) -> None:
    async def session(client: Client) -> None:
        for _ in range(2):
            ok(await client.call_tool("memory_store", {"content": "My locker is number 12"}))
        report = ok(await client.call_tool("memory_organize", {"jobs": ["dedup"]}))
        assert report["jobs_run"] == ["dedup"]
        assert report["per_job"]["dedup"]["changed"] == 1
        assert report["complete"] is True
        refused = await client.call_tool("memory_organize", {"jobs": ["compact"]})
        assert refused.is_error

    live_mcp.run(live_mcp.keys["alice"], session)

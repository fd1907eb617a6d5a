"""What the MCP tools cost a model: the bytes and tokens of the tool list it is sent every turn
(default and full sets), and of one memory_retrieve result's text beside its JSON.

Run: `.venv/bin/python -m benchmarks.mcp_tool_schemas [--json PATH]`. Tokens are counted with
the project's tokenizer (cl100k, as the context packer counts them). Sizes only, no timing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

from mcp_types import CallToolResult

from benchmarks.results import start_run, write_result
from prme.backends.embedded.service import open_embedded
from prme.embedding.hashing import HashingEmbedder
from prme.engine.identity import Principal
from prme.mcp.server import build_mcp_server
from prme.operations import McpToolSet
from prme.retrieval.tokens import Cl100kTokenCounter

RESULTS = Path(__file__).resolve().parent / "results" / "mcp_tool_schemas.json"
# One memory of about 60 characters, as in the measure.
MEMORY = "My sister Ana moved to Porto in May and works at the harbour."


def tool_list_json(tools: list[Any]) -> str:
    """The tools as a tools/list result carries them (compact JSON, as a client forwards it)."""
    listed = [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools]
    return json.dumps({"tools": listed}, ensure_ascii=False, separators=(",", ":"))


def measure(data_dir: Path) -> dict[str, Any]:
    counter = Cl100kTokenCounter()
    backend = open_embedded(data_dir, embedder=HashingEmbedder())
    try:
        principal = Principal.owner("local", "bench")
        sets: dict[str, Any] = {}
        servers = {}
        tool_sets: tuple[McpToolSet, ...] = ("default", "full")
        for tools in tool_sets:
            server = build_mcp_server(backend.engine, lambda: principal, tools=tools)
            servers[tools] = server
            listed = asyncio.run(server.list_tools())
            text = tool_list_json(listed)
            sets[tools] = {
                "tools": len(listed),
                "bytes": len(text.encode()),
                "tokens": counter.count(text),
                "names": sorted(tool.name for tool in listed),
            }
        server = servers["default"]
        asyncio.run(server.call_tool("memory_store", {"content": MEMORY}))
        result = asyncio.run(server.call_tool("memory_retrieve", {"query": "Where does Ana live?"}))
        if not isinstance(result, CallToolResult) or result.is_error:
            raise RuntimeError("memory_retrieve failed")
        model_text = getattr(result.content[0], "text", "")
        # What the text content was before: the whole JSON result.
        json_text = json.dumps(result.structured_content, ensure_ascii=False)
        retrieve = {
            "memory_chars": len(MEMORY),
            "text_bytes": len(model_text.encode()),
            "text_tokens": counter.count(model_text),
            "json_bytes": len(json_text.encode()),
            "json_tokens": counter.count(json_text),
        }
    finally:
        backend.close()
    return {"tool_lists": sets, "retrieve_one_memory": retrieve}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", type=Path, default=RESULTS)
    args = parser.parse_args()
    run_start = start_run()
    with tempfile.TemporaryDirectory() as tmp:
        report = measure(Path(tmp) / "memory")
    print(f"{'tool list':<10} {'tools':>5} {'bytes':>7} {'tokens':>7}")
    for name, row in report["tool_lists"].items():
        print(f"{name:<10} {row['tools']:>5} {row['bytes']:>7} {row['tokens']:>7}")
    retrieve = report["retrieve_one_memory"]
    print(f"\nmemory_retrieve, one {retrieve['memory_chars']}-character memory:")
    print(f"{'rendering':<10} {'bytes':>7} {'tokens':>7}")
    print(f"{'text':<10} {retrieve['text_bytes']:>7} {retrieve['text_tokens']:>7}")
    print(f"{'json':<10} {retrieve['json_bytes']:>7} {retrieve['json_tokens']:>7}")
    write_result(
        args.json,
        "benchmarks.mcp_tool_schemas",
        report,
        parameters={},
        started=run_start,
    )


if __name__ == "__main__":
    main()

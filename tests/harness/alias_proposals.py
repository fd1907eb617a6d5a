"""Alias proposals on a running `prme serve`: the API has no route that scans for them (the
maintenance job, `prme worker`, or `MemoryClient.propose_aliases` does), so a test stores the
entity memories through the API and runs the scan on the server's data directory in-process,
as a second process on the same SQLite files would."""

from __future__ import annotations

from typing import Any

import httpx

from prme.backends.embedded.service import open_embedded
from prme.embedding.hashing import HashingEmbedder
from prme.model.records import OwnerKey
from tests.harness.engines import TOKEN_COUNTER
from tests.harness.live_server import LOCAL_TENANT, LiveServer


def store_entities(api: httpx.Client, names: list[str]) -> dict[str, dict[str, Any]]:
    """Store each name as an entity memory of the key's owner; the store's answer (with
    `node_id` and `event_id`) by name."""
    stored: dict[str, dict[str, Any]] = {}
    for name in names:
        answer = api.post("/v1/store", json={"content": name, "node_type": "entity"})
        answer.raise_for_status()
        stored[name] = answer.json()
    return stored


def scan_for_aliases(server: LiveServer, owner: str) -> int:
    """Run one alias scan for `owner` on the live server's data directory; proposals made.

    Safe beside the server: the ledger is SQLite in WAL mode with a busy timeout, every write
    is one transaction, and the server reads proposals from the ledger on each request. The
    backend is opened without recovering pending work, so it never races the server's own
    processing; the scan only journals proposals and closes this owner's alias work."""
    backend = open_embedded(
        server.data_dir,
        embedder=HashingEmbedder(),
        token_counter=TOKEN_COUNTER,
        recover_pending=False,
    )
    try:
        report = backend.engine.propose_aliases(OwnerKey(tenant_id=LOCAL_TENANT, owner_id=owner))
    finally:
        backend.close()
    return report.proposals_created

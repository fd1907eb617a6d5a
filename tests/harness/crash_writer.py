"""A child process for the crash tests: stores memories and prints each acknowledged id.

PRME_TEST_CRASH_BEFORE_COMMIT: die after the index write, before the ledger commit.
PRME_TEST_INDEX_DOWN: the index refuses writes; die right after the first acknowledgment.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from prme.backends.embedded.service import open_embedded
from prme.embedding.hashing import HashingEmbedder
from prme.errors import IndexUnavailableError
from prme.model.inputs import StoreInput
from prme.model.records import OwnerKey
from prme.retrieval.tokens import WhitespaceTokenCounter


def main() -> None:
    data_dir = Path(sys.argv[1])
    backend = open_embedded(
        data_dir, embedder=HashingEmbedder(), token_counter=WhitespaceTokenCounter()
    )
    if os.environ.get("PRME_TEST_CRASH_BEFORE_COMMIT"):

        def die_instead_of_commit(commit: object) -> None:
            print(f"indexed {commit.event.id}", flush=True)  # type: ignore[attr-defined]
            os._exit(137)

        backend.ledger.commit_store = die_instead_of_commit  # type: ignore[method-assign]
    index_down = bool(os.environ.get("PRME_TEST_INDEX_DOWN"))
    if index_down:

        def refuse(documents: object) -> None:
            raise IndexUnavailableError()

        backend.index.upsert = refuse  # type: ignore[method-assign]
    owner = OwnerKey(tenant_id="local", owner_id="alice")
    i = 0
    while True:
        result = backend.engine.store(
            owner, StoreInput(content=f"memory number {i} about pelicans")
        )
        print(f"acked {result.event_id} {result.processing_status.value}", flush=True)
        if index_down:
            os._exit(137)
        i += 1


if __name__ == "__main__":
    main()

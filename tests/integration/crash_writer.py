"""A child process for the crash tests: stores memories and prints each acknowledged id.

With PRME_TEST_CRASH_AFTER_COMMIT set it kills itself right after the ledger commit of
the first store, before the index write, as a power cut between the two would.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from prme.backends.embedded.service import open_embedded
from prme.embedding.hashing import HashingEmbedder
from prme.model.inputs import StoreInput
from prme.model.records import OwnerKey
from prme.retrieval.tokens import WhitespaceTokenCounter


def main() -> None:
    data_dir = Path(sys.argv[1])
    backend = open_embedded(
        data_dir, embedder=HashingEmbedder(), token_counter=WhitespaceTokenCounter()
    )
    if os.environ.get("PRME_TEST_CRASH_AFTER_COMMIT"):
        ledger = backend.ledger
        original = ledger.commit_store

        def commit_then_die(commit: object) -> None:
            original(commit)  # type: ignore[arg-type]
            print(f"committed {commit.event.id}", flush=True)  # type: ignore[attr-defined]
            os._exit(137)

        ledger.commit_store = commit_then_die  # type: ignore[method-assign]
    owner = OwnerKey(tenant_id="local", owner_id="alice")
    i = 0
    while True:
        result = backend.engine.store(
            owner, StoreInput(content=f"memory number {i} about pelicans")
        )
        print(f"acked {result.event_id}", flush=True)
        i += 1


if __name__ == "__main__":
    main()

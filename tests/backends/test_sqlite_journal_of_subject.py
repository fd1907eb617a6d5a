"""The embedded ledger lists one retrieval's judgments through the `journal_by_subject` index:
the records of other retrievals are never read."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from prme.backends.embedded.service import LEDGER_FILE
from prme.model.feedback import RelevanceInput
from prme.model.inputs import RetrieveInput, StoreInput
from tests.harness.engines import ALICE, embedded_harness


def test_one_retrievals_judgments_are_read_through_the_subject_index(tmp_path: Path) -> None:
    h = embedded_harness(tmp_path / "data")
    h.engine.store(ALICE, StoreInput(content="Dana likes oolong tea"))
    response = h.engine.retrieve(ALICE, RetrieveInput(query="tea"))
    request_id, node_id = response.metrics.request_id, response.results[0].node_id
    h.engine.record_relevance(
        ALICE, RelevanceInput.model_validate({"request_id": request_id, "labels": {node_id: True}})
    )
    statements: list[str] = []
    h.ledger._conn.set_trace_callback(statements.append)  # type: ignore[attr-defined]
    page = h.engine.list_relevance(ALICE, request_id=request_id)
    h.ledger._conn.set_trace_callback(None)  # type: ignore[attr-defined]
    h.index.close()  # type: ignore[attr-defined]
    h.ledger.close()  # type: ignore[attr-defined]

    assert [r.request_id for r in page.items] == [request_id]
    (listing,) = [s for s in statements if "subject_id=" in s]
    conn = sqlite3.connect(tmp_path / "data" / LEDGER_FILE)
    plan = " ".join(str(row[-1]) for row in conn.execute(f"EXPLAIN QUERY PLAN {listing}"))
    conn.close()
    # A walk of the subject's entries in id order: no scan of the prefix, no sort.
    assert "USING INDEX journal_by_subject" in plan and "TEMP B-TREE" not in plan, plan

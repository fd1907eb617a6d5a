"""A batch read of memory nodes by id on every backend: order kept, foreign, unknown, deleted
and unreadable ids listed as missing alike, and the size and shape rules."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from prme.backends.embedded.service import LEDGER_FILE
from prme.errors import InvalidRequestError
from prme.model.inputs import FastIngestInput, StoreInput
from prme.model.node_batch import MAX_NODE_BATCH
from prme.model.records import OwnerKey
from tests.harness.aws import aws_harness
from tests.harness.engines import ALICE, BOB, OTHER_TENANT_ALICE, Harness, embedded_harness
from tests.harness.poison import Poison, dynamodb_poison, sqlite_poison


def store(h: Harness, content: str, owner: OwnerKey = ALICE) -> Any:
    return h.engine.store(owner, StoreInput(content=content))


def test_found_nodes_come_in_the_order_asked_and_the_rest_are_missing(
    any_backend: Harness,
) -> None:
    h = any_backend
    tea, oslo, gone = (store(h, text) for text in ("I like tea", "I live in Oslo", "I was 30"))
    h.engine.delete_memory(ALICE, gone.event_id)
    bobs = store(h, "Bob likes coffee", BOB)
    same_name_elsewhere = store(h, "Alice of another tenant", OTHER_TENANT_ALICE)
    unknown = str(uuid.uuid4())
    asked = [
        oslo.node_id,
        bobs.node_id,
        unknown,
        tea.node_id,
        gone.node_id,
        same_name_elsewhere.node_id,
    ]

    batch = h.engine.get_nodes(ALICE, asked)

    assert [node.id for node in batch.items] == [oslo.node_id, tea.node_id]
    assert [node.content for node in batch.items] == ["I live in Oslo", "I like tea"]
    # Another owner's, another tenant's, unknown and deleted: the same answer for each.
    assert batch.missing_ids == [bobs.node_id, unknown, gone.node_id, same_name_elsewhere.node_id]
    # Each node reads as the one-node read answers it.
    assert batch.items[0] == h.engine.get_node(ALICE, oslo.node_id)


def test_a_full_batch_reads_every_node(any_backend: Harness) -> None:
    h = any_backend
    for first in range(0, MAX_NODE_BATCH - 1, 33):
        notes = [{"content": f"note number {i}"} for i in range(first, first + 33)]
        h.engine.ingest_fast(ALICE, FastIngestInput.model_validate({"items": notes}))
    while h.engine.process_materializations(ALICE).pending:
        pass
    node_ids = [node.id for node in h.ledger.list_nodes(ALICE)]
    assert len(node_ids) == MAX_NODE_BATCH - 1
    asked = [*reversed(node_ids), str(uuid.uuid4())]

    batch = h.engine.get_nodes(ALICE, asked)

    assert [node.id for node in batch.items] == asked[:-1]
    assert batch.missing_ids == asked[-1:]


@pytest.mark.parametrize(
    ("node_ids", "why"),
    [
        ([], "1 to 100"),
        ([str(uuid.uuid4()) for _ in range(MAX_NODE_BATCH + 1)], "1 to 100"),
        (["not-a-uuid"], "valid UUID"),
        (["b3c4d5e6-0000-4000-8000-000000000001"] * 2, "repeated"),
    ],
)
def test_a_batch_out_of_shape_is_refused(
    any_backend: Harness, node_ids: list[str], why: str
) -> None:
    with pytest.raises(InvalidRequestError, match=why):
        any_backend.engine.get_nodes(ALICE, node_ids)


@pytest.fixture(params=["embedded", "aws"])
def poisonable(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Harness, Poison]]:
    if request.param == "embedded":
        h = embedded_harness(tmp_path / "data")
        yield h, sqlite_poison(tmp_path / "data" / LEDGER_FILE)
        h.index.close()  # type: ignore[attr-defined]
        h.ledger.close()  # type: ignore[attr-defined]
    else:
        dynamodb, table, opensearch, alias = request.getfixturevalue("aws_resources")
        yield aws_harness(dynamodb, table, opensearch, alias), dynamodb_poison(dynamodb, table)


def test_an_unreadable_node_is_missing_and_the_others_are_read(
    poisonable: tuple[Harness, Poison],
) -> None:
    h, poison = poisonable
    kept, broken = store(h, "I like tea"), store(h, "I live in Oslo")
    poison("node", ALICE, broken.node_id, "invalid_json")

    batch = h.engine.get_nodes(ALICE, [broken.node_id, kept.node_id])

    assert [node.id for node in batch.items] == [kept.node_id]
    assert batch.missing_ids == [broken.node_id]

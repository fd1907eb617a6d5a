"""Session-context vectors on every backend: a record's vector carries the record said before it.

The index keeps each record's own embedding (`content_vector`) and searches a mix of it with
the own embedding of the previous record of the same session (`session_predecessor`).
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from opensearchpy.exceptions import ConnectionError as OpenSearchConnectionError

from prme.backends.aws.bootstrap import ensure_index
from prme.backends.aws.opensearch_index import OpenSearchIndex, RecentSessionWrites
from prme.backends.aws.resources import CONTENT_VECTOR_FIELD, index_body, index_name
from prme.backends.embedded.sqlite_index import SqliteVectorIndex
from prme.backends.memory import InMemoryIndex
from prme.engine.config import EngineConfig
from prme.engine.indexing import index_nodes, session_context_vector
from prme.errors import IndexUnavailableError
from prme.model.enums import (
    LifecycleState,
    ProcessingStatus,
)
from prme.model.inputs import FastIngestInput, StoreInput
from prme.model.records import OwnerKey
from prme.model.search import IndexQuery
from prme.ports import SearchIndex
from prme.settings import Settings
from tests.harness.aws import AwsNames, aws_harness
from tests.harness.engines import (
    ALICE,
    BOB,
    OTHER_TENANT_ALICE,
    Harness,
    embedded_harness,
    memory_harness,
)
from tests.harness.session_turns import (
    QUESTION,
    REPLY,
    T0,
    W,
    assert_indexed_as,
    at,
    cosine_in_index,
    document,
    mixed,
    own,
    say,
    unit,
)

# -- the mixing function ---------------------------------------------------------------


def test_the_mix_is_the_normalized_weighted_sum() -> None:
    own, before = (1.0, 0.0, 0.0), (0.0, 1.0, 0.0)
    mixed = session_context_vector(own, before, 0.6)
    assert mixed == pytest.approx((1 / np.sqrt(1.36), 0.6 / np.sqrt(1.36), 0.0))
    assert float(np.linalg.norm(mixed)) == pytest.approx(1.0)
    assert session_context_vector(own, before, 4.0) == pytest.approx(
        tuple(np.array([1.0, 4.0, 0.0]) / np.sqrt(17.0))
    )


def test_without_predecessor_or_weight_the_own_vector_is_kept() -> None:
    own = (0.6, 0.8)
    assert session_context_vector(own, None, 0.6) == own
    assert session_context_vector(own, (1.0, 0.0), 0.0) == own
    # A mix with no direction, or of another dimension, keeps the own vector too.
    assert session_context_vector((1.0, 0.0), (-1.0, 0.0), 1.0) == (1.0, 0.0)
    assert session_context_vector(own, (1.0, 0.0, 0.0), 0.6) == own


def test_the_weight_is_a_validated_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings.env_name("vector_session_context") == "PRME_VECTOR_SESSION_CONTEXT"
    monkeypatch.delenv("PRME_VECTOR_SESSION_CONTEXT", raising=False)
    assert Settings().engine.vector_session_context == 0.6
    monkeypatch.setenv("PRME_VECTOR_SESSION_CONTEXT", "0")
    assert Settings().engine.vector_session_context == 0.0
    for bad in ("-0.1", "4.5"):
        monkeypatch.setenv("PRME_VECTOR_SESSION_CONTEXT", bad)
        with pytest.raises(ValueError, match="vector_session_context"):
            Settings()


# -- the index lookup, on every backend -------------------------------------------------


def predecessor(
    index: SearchIndex, owner: OwnerKey, session_id: str, before: datetime, model: str
) -> tuple[str, tuple[float, ...]] | None:
    """One lookup through the batched port method."""
    (found,) = index.session_predecessors(owner, [(session_id, before)], model)
    return found


def expect(
    found: tuple[str, tuple[float, ...]] | None, node_id: str, vector: tuple[float, ...]
) -> None:
    assert found is not None
    assert found[0] == node_id
    assert found[1] == pytest.approx(vector)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(11)


def test_predecessor_is_the_latest_earlier_record_of_that_session(
    any_backend: Harness, rng: np.random.Generator
) -> None:
    h = any_backend
    model, dim = h.embedder.model.key, h.embedder.model.dimension
    v = {name: unit(rng, dim) for name in "abcdefghij"}
    h.index.upsert(
        [
            document("a", v["a"], model=model, event_time=at(0)),
            # No event time: its creation is its effective time.
            document("b", v["b"], model=model, created_at=at(1)),
            # Created late but said early, and created early but said late.
            document("c", v["c"], model=model, event_time=at(0.5), created_at=at(30)),
            document("d", v["d"], model=model, event_time=at(5), created_at=at(-30)),
            document("e", v["e"], model=model, event_time=at(2)),  # equal to `before`
            document("f", v["f"], model=model, event_time=at(3)),  # later
            document("g", v["g"], model=model, session_id="s2", event_time=at(1.5)),
            document("h", v["h"], model=model, session_id=None, event_time=at(1.5)),
            document("i", v["i"], model=model, owner=BOB, event_time=at(1.5)),
            document("j", v["j"], model=model, owner=OTHER_TENANT_ALICE, event_time=at(1.5)),
        ]
    )

    expect(predecessor(h.index, ALICE, "s1", at(2), model), "b", v["b"])
    expect(predecessor(h.index, ALICE, "s1", at(1), model), "c", v["c"])
    assert predecessor(h.index, ALICE, "s1", at(0), model) is None
    expect(predecessor(h.index, ALICE, "s2", at(2), model), "g", v["g"])
    assert predecessor(h.index, ALICE, "s9", at(9), model) is None
    expect(predecessor(h.index, BOB, "s1", at(9), model), "i", v["i"])
    expect(predecessor(h.index, OTHER_TENANT_ALICE, "s1", at(9), model), "j", v["j"])
    assert predecessor(h.index, BOB, "s2", at(9), model) is None

    # The batch form answers each lookup in order, as the single form does.
    lookups = [("s1", at(2)), ("s1", at(0)), ("s2", at(2)), ("s9", at(9)), ("s1", at(1))]
    assert h.index.session_predecessors(ALICE, lookups, model) == [
        predecessor(h.index, ALICE, session, before, model) for session, before in lookups
    ]
    assert [
        found and found[0] for found in h.index.session_predecessors(ALICE, lookups, model)
    ] == [
        "b",
        None,
        "g",
        None,
        "c",
    ]
    assert h.index.session_predecessors(ALICE, [], model) == []


def test_predecessor_ties_go_to_the_greatest_node_id_and_any_state_counts(
    any_backend: Harness, rng: np.random.Generator
) -> None:
    h = any_backend
    model, dim = h.embedder.model.key, h.embedder.model.dimension
    v = [unit(rng, dim) for _ in range(3)]
    h.index.upsert(
        [
            document("n-1", v[0], model=model, event_time=at(1)),
            document(
                "n-2", v[1], model=model, event_time=at(1), lifecycle_state=LifecycleState.ARCHIVED
            ),
            document("n-0", v[2], model=model, event_time=at(1)),
        ]
    )
    expect(predecessor(h.index, ALICE, "s1", at(2), model), "n-2", v[1])


def test_predecessor_returns_the_own_vector_or_the_vector_of_older_documents(
    any_backend: Harness, rng: np.random.Generator
) -> None:
    h = any_backend
    model, dim = h.embedder.model.key, h.embedder.model.dimension
    own, mixed, old = unit(rng, dim), unit(rng, dim), unit(rng, dim)
    h.index.upsert([document("new", mixed, model=model, content_vector=own, event_time=at(2))])
    expect(predecessor(h.index, ALICE, "s1", at(3), model), "new", own)
    # A document written before content vectors existed has only its vector.
    h.index.upsert([document("old", old, model=model, content_vector=None, event_time=at(1))])
    expect(predecessor(h.index, ALICE, "s1", at(2), model), "old", old)


def test_a_predecessor_of_another_embedding_model_is_none(
    any_backend: Harness, rng: np.random.Generator
) -> None:
    h = any_backend
    model, dim = h.embedder.model.key, h.embedder.model.dimension
    h.index.upsert(
        [
            document("same", unit(rng, dim), model=model, event_time=at(1)),
            document("other", unit(rng, dim), model="other-model@1/64", event_time=at(2)),
        ]
    )
    assert predecessor(h.index, ALICE, "s1", at(3), model) is None
    assert predecessor(h.index, ALICE, "s1", at(2), model) is not None


class _DownClient:
    def search(self, **_: Any) -> Any:
        raise OpenSearchConnectionError("N/A", "down", Exception("down"))

    def msearch(self, **_: Any) -> Any:
        raise OpenSearchConnectionError("N/A", "down", Exception("down"))


def _down_index(kind: str, tmp_path: Path) -> SearchIndex:
    if kind == "memory":
        index = InMemoryIndex()
        index.available = False
        return index
    if kind == "embedded":
        closed = SqliteVectorIndex(tmp_path / "index.sqlite3")
        closed.close()
        return closed
    return OpenSearchIndex(_DownClient(), "unused")


@pytest.mark.parametrize("kind", ["memory", "embedded", "aws"])
def test_a_failed_lookup_raises_index_unavailable(kind: str, tmp_path: Path) -> None:
    with pytest.raises(IndexUnavailableError):
        predecessor(_down_index(kind, tmp_path), ALICE, "s1", T0, "m@1/4")
    with pytest.raises(IndexUnavailableError):
        _down_index(kind, tmp_path).session_neighbours(ALICE, [("s1", T0, "n1")], 2)


# -- the engine: what gets indexed -----------------------------------------------------


@pytest.fixture(params=["memory", "embedded", "aws"])
def build(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[float], Harness]]:
    """Makes one harness with a given session-context weight (one per test on AWS)."""
    made: list[Harness] = []

    def make(weight: float = W) -> Harness:
        config = EngineConfig(vector_session_context=weight)
        if request.param == "memory":
            h = memory_harness(config)
        elif request.param == "embedded":
            h = embedded_harness(tmp_path / f"data-{len(made)}", config)
        else:
            dynamodb, table, opensearch, alias = request.getfixturevalue("aws_resources")
            h = aws_harness(dynamodb, table, opensearch, alias, config=config)
        made.append(h)
        return h

    yield make
    for h in made:
        if isinstance(h.index, SqliteVectorIndex):
            h.index.close()
            h.ledger.close()  # type: ignore[attr-defined]


def test_a_reply_is_indexed_with_the_turn_before_it(build: Callable[[float], Harness]) -> None:
    h = build(W)
    question = say(h, QUESTION, 0)
    reply = say(h, REPLY, 1)

    expected = mixed(own(h, reply), own(h, question))
    assert_indexed_as(h, reply, expected)
    # Clearly not the reply's own vector (the two texts share only the speaker's name).
    assert cosine_in_index(h, reply, own(h, reply)) < 0.95
    # The first turn of a session has nothing before it: its own vector.
    assert_indexed_as(h, question, own(h, question))


def test_weight_zero_indexes_the_own_vector(build: Callable[[float], Harness]) -> None:
    h = build(0.0)
    say(h, QUESTION, 0)
    reply = say(h, REPLY, 1)
    assert_indexed_as(h, reply, own(h, reply))


def test_records_without_a_session_keep_their_own_vector(
    build: Callable[[float], Harness],
) -> None:
    h = build(W)
    say(h, QUESTION, 0, session=None)
    reply = say(h, REPLY, 1, session=None)
    other_session = say(h, "Nice, which one?", 2, session="s2")
    assert_indexed_as(h, reply, own(h, reply))
    assert_indexed_as(h, other_session, own(h, other_session))


def test_reindexing_gives_the_same_vector(build: Callable[[float], Harness]) -> None:
    h = build(W)
    question = say(h, QUESTION, 0)
    reply = say(h, REPLY, 1)
    expected = mixed(own(h, reply), own(h, question))

    # A state change re-indexes the reply through ordinary work.
    h.engine.promote(ALICE, reply.id)
    assert h.engine.process_materializations(ALICE).processed == 1
    assert_indexed_as(h, reply, expected)
    # Alone, or in a batch with its predecessor, or after it: the same vector every time.
    fresh = h.engine.get_node(ALICE, reply.id)
    for batch in ([fresh], [fresh, question], [question, fresh]):
        assert index_nodes(h.engine.deps, batch) is None
        assert_indexed_as(h, reply, expected)
        assert_indexed_as(h, question, own(h, question))


def test_a_turn_stored_late_mixes_with_its_own_predecessor(
    build: Callable[[float], Harness],
) -> None:
    h = build(W)
    first = say(h, "We adopted a kitten named Miso.", 0)
    third = say(h, "Ha, mine hides under the sofa all day.", 2)
    second = say(h, "She chews every cable she finds.", 1)  # said before `third`, stored after

    assert_indexed_as(h, second, mixed(own(h, second), own(h, first)))
    # An indexed record is not rewritten when an earlier turn arrives later...
    assert_indexed_as(h, third, mixed(own(h, third), own(h, first)))
    # ...a reindex of it picks the new predecessor up.
    assert index_nodes(h.engine.deps, [third]) is None
    assert_indexed_as(h, third, mixed(own(h, third), own(h, second)))


def test_a_batch_mixes_with_the_latest_earlier_record_of_batch_or_index(
    build: Callable[[float], Harness],
) -> None:
    h = build(W)
    first = say(h, "We adopted a kitten named Miso.", 0)
    second = say(h, "She chews every cable she finds.", 1)
    third = say(h, "Ha, mine hides under the sofa all day.", 2)

    # `second` is indexed but not in this batch: it is still `third`'s predecessor.
    assert index_nodes(h.engine.deps, [first, third]) is None
    assert_indexed_as(h, third, mixed(own(h, third), own(h, second)))
    assert_indexed_as(h, first, own(h, first))


def test_fast_ingest_turns_mix_with_the_turn_before_them_in_the_batch(
    build: Callable[[float], Harness],
) -> None:
    h = build(W)
    opening = say(h, "Guess where I spent Saturday.", -1)
    turns = [QUESTION, REPLY, "Which piece did you make?"]
    result = h.engine.ingest_fast(
        ALICE,
        FastIngestInput.model_validate(
            {
                "items": [
                    {"content": text, "session_id": "s1", "speaker": "Ana", "event_time": at(i)}
                    for i, text in enumerate(turns)
                ]
            }
        ),
    )
    assert h.engine.process_materializations(ALICE).processed == len(turns)
    nodes = [h.engine.get_event_nodes(ALICE, event_id)[0] for event_id in result.event_ids]

    # The first of the batch follows the indexed opening; the others follow the batch's
    # previous turn, which is later than anything the index holds.
    assert_indexed_as(h, nodes[0], mixed(own(h, nodes[0]), own(h, opening)))
    assert_indexed_as(h, nodes[1], mixed(own(h, nodes[1]), own(h, nodes[0])))
    assert_indexed_as(h, nodes[2], mixed(own(h, nodes[2]), own(h, nodes[1])))


def test_a_failed_predecessor_lookup_leaves_the_work_pending(any_backend: Harness) -> None:
    from tests.harness.switchable_index import SwitchableIndex

    h = any_backend
    say(h, QUESTION, 0)

    class LookupDown(SwitchableIndex):
        def session_predecessors(
            self, owner: OwnerKey, lookups: list[tuple[str, datetime]], embedding_model: str
        ) -> list[tuple[str, tuple[float, ...]] | None]:
            raise IndexUnavailableError()

    deps = h.engine.deps
    engine = type(h.engine)(type(deps)(**{**deps.__dict__, "index": LookupDown(h.index)}))
    result = engine.store(ALICE, StoreInput(content=REPLY, session_id="s1", event_time=at(1)))
    status, work = h.engine.get_processing_status(ALICE, result.event_id)
    assert status is ProcessingStatus.PENDING
    assert [w.last_error for w in work] == ["index_unavailable"]
    assert h.engine.process_materializations(ALICE).processed == 1
    assert result.node_id is not None
    reply = h.engine.get_node(ALICE, result.node_id)
    (question_node,) = [n for n in h.ledger.list_nodes(ALICE) if n.content == QUESTION]
    assert_indexed_as(h, reply, mixed(own(h, reply), own(h, question_node)))


# -- adapters: older data and visibility ------------------------------------------------

_V1_DOCS = """
CREATE TABLE docs (
    rowid INTEGER PRIMARY KEY, tenant TEXT NOT NULL, owner TEXT NOT NULL, node_id TEXT NOT NULL,
    node_type TEXT NOT NULL, source_type TEXT NOT NULL, epistemic_type TEXT NOT NULL,
    lifecycle_state TEXT NOT NULL, scope TEXT NOT NULL, session_id TEXT,
    event_time REAL, created_at REAL NOT NULL, expires_at REAL,
    model TEXT, vector BLOB, text TEXT NOT NULL,
    UNIQUE (tenant, owner, node_id));
"""


def test_an_sqlite_index_written_before_content_vectors_keeps_working(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite3"
    old = (0.6, 0.8, 0.0, 0.0)
    with sqlite3.connect(path) as conn:
        conn.executescript(_V1_DOCS)
        conn.execute(
            "INSERT INTO docs (tenant, owner, node_id, node_type, source_type, epistemic_type, "
            "lifecycle_state, scope, session_id, event_time, created_at, model, vector, text) "
            "VALUES ('t1', 'alice', 'old', 'note', 'user_stated', 'observed', 'tentative', "
            "'personal', 's1', ?, ?, 'm@1/4', ?, 'an old record')",
            (at(0).timestamp(), at(0).timestamp(), np.asarray(old, dtype=np.float32).tobytes()),
        )
    conn.close()

    index = SqliteVectorIndex(path)
    try:
        expect(predecessor(index, ALICE, "s1", at(1), "m@1/4"), "old", old)
        own_vector, searched = (0.0, 0.0, 1.0, 0.0), (0.0, 0.0, 0.8, 0.6)
        index.upsert(
            [
                document(
                    "new",
                    searched,
                    model="m@1/4",
                    content_vector=own_vector,
                    event_time=at(1),
                )
            ]
        )
        expect(predecessor(index, ALICE, "s1", at(2), "m@1/4"), "new", own_vector)
        hits = index.search(
            ALICE, IndexQuery(text="record", vector=searched, embedding_model="m@1/4")
        )
        assert hits.semantic["new"] == pytest.approx(1.0, abs=1e-6)
    finally:
        index.close()
    # Opening it again (the column exists now) changes nothing.
    SqliteVectorIndex(path).close()


def test_bootstrap_adds_the_content_vector_field_to_an_existing_index(
    opensearch_url: str, aws_names: AwsNames
) -> None:
    from prme.backends.aws.opensearch_index import build_opensearch_client

    client = build_opensearch_client(opensearch_url, auth="none", region=None)
    alias, name = aws_names.index_alias, index_name(aws_names.index_alias)
    body = index_body(4)
    del body["mappings"]["properties"][CONTENT_VECTOR_FIELD]  # as created before the field
    client.indices.create(index=name, body=body)
    client.indices.put_alias(index=name, name=alias)
    try:
        assert ensure_index(client, alias, 4) is False
        mapping = client.indices.get_mapping(index=name)[name]["mappings"]["properties"]
        assert mapping[CONTENT_VECTOR_FIELD]["type"] == "float"
        index = OpenSearchIndex(client, alias, refresh_on_write=True)
        index.upsert(
            [
                document(
                    "n1",
                    (0.0, 0.6, 0.8, 0.0),
                    model="m@1/4",
                    content_vector=(1.0, 0.0, 0.0, 0.0),
                    event_time=at(0),
                )
            ]
        )
        expect(predecessor(index, ALICE, "s1", at(1), "m@1/4"), "n1", (1.0, 0.0, 0.0, 0.0))
    finally:
        client.indices.delete(index=name)
        client.close()


def test_opensearch_sees_its_own_session_writes_before_the_refresh(
    aws_resources: tuple[Any, str, Any, str],
) -> None:
    _, _, client, alias = aws_resources
    index = OpenSearchIndex(client, alias, refresh_on_write=False)
    v = (1.0,) + (0.0,) * 63
    index.upsert([document("n1", v, model="m@1/64", event_time=at(0))])
    # Without a refresh on write the search may not see n1 yet; this process remembers it.
    expect(predecessor(index, ALICE, "s1", at(1), "m@1/64"), "n1", v)
    assert predecessor(index, BOB, "s1", at(1), "m@1/64") is None
    assert predecessor(index, ALICE, "s2", at(1), "m@1/64") is None
    assert predecessor(index, ALICE, "s1", at(0), "m@1/64") is None


def test_recent_writes_are_bounded_and_ordered() -> None:
    recent = RecentSessionWrites(limit=2)
    v = (1.0, 0.0)
    recent.add(
        [
            document("a", v, model="m", event_time=at(0)),
            document("b", v, model="m", event_time=at(1)),
            document("c", v, model="m", event_time=at(1), session_id=None),
        ]
    )
    found = recent.latest_before(ALICE, "s1", int(at(5).timestamp() * 1000))
    assert found is not None and found.node_id == "b"
    recent.add([document("z", v, model="m", event_time=at(9), session_id="s2")])
    # Over the limit the oldest write is forgotten first.
    found = recent.latest_before(ALICE, "s1", int(at(5).timestamp() * 1000))
    assert found is not None and found.node_id == "b"
    assert recent.latest_before(ALICE, "s1", int(at(1).timestamp() * 1000)) is None


def test_fast_ingest_turns_without_times_keep_the_order_they_were_sent_in(
    build: Callable[[float], Harness],
) -> None:
    # No event_time: each turn's time is when it was recorded, and one batch is recorded at
    # once. The order the turns were sent in must still be their order (for session
    # neighbours and for each turn's predecessor), whatever order the work runs in.
    h = build(W)
    turns = [QUESTION, REPLY, "Which piece did you make?", "The blue bowl, it leaks."]
    result = h.engine.ingest_fast(
        ALICE,
        FastIngestInput.model_validate(
            {"items": [{"content": t, "session_id": "s1", "speaker": "Ana"} for t in turns]}
        ),
    )
    assert h.engine.process_materializations(ALICE).processed == len(turns)
    nodes = [h.engine.get_event_nodes(ALICE, event_id)[0] for event_id in result.event_ids]

    times = [node.effective_time for node in nodes]
    assert times == sorted(times) and len(set(times)) == len(times)
    assert_indexed_as(h, nodes[0], own(h, nodes[0]))
    for earlier, later in itertools.pairwise(nodes):
        assert_indexed_as(h, later, mixed(own(h, later), own(h, earlier)))

"""`OpenSearchIndex` against a real OpenSearch node (Lucene k-NN): channels, filters, isolation, errors;
the filter rules also against the embedded SQLite index."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from opensearchpy.exceptions import OpenSearchException

from prme.backends.aws.bootstrap import ensure_index
from prme.backends.aws.opensearch_index import OpenSearchIndex, build_opensearch_client
from prme.backends.aws.resources import index_name
from prme.backends.embedded.sqlite_index import SqliteVectorIndex
from prme.errors import IndexUnavailableError
from prme.model.enums import EpistemicType, LifecycleState, NodeType, Scope, SourceType
from prme.model.records import OwnerKey
from prme.model.search import IndexDocument, IndexFilter, IndexHits, IndexQuery
from prme.ports import SearchIndex
from tests.harness.aws import AwsNames
from tests.harness.engines import ALICE, BOB, OTHER_TENANT_ALICE

DIM = 8
MODEL = "test-model@1/8"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def unit_vector(rng: np.random.Generator) -> tuple[float, ...]:
    v = rng.normal(size=DIM)
    return tuple(float(x) for x in v / np.linalg.norm(v))


def cosine(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    x, y = np.asarray(a), np.asarray(b)
    return float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y)))


def doc(
    node_id: str,
    text: str,
    vector: tuple[float, ...] | None,
    owner: OwnerKey = ALICE,
    **fields: Any,
) -> IndexDocument:
    values: dict[str, Any] = {
        "tenant_id": owner.tenant_id,
        "owner_id": owner.owner_id,
        "node_id": node_id,
        "text": text,
        "vector": vector,
        "embedding_model": MODEL if vector is not None else None,
        "node_type": NodeType.FACT,
        "source_type": SourceType.USER_STATED,
        "epistemic_type": EpistemicType.OBSERVED,
        "lifecycle_state": LifecycleState.STABLE,
        "scope": Scope.PERSONAL,
        "created_at": T0,
    }
    values.update(fields)
    return IndexDocument.model_validate(values)


def query(text: str, vector: tuple[float, ...] | None = None, **fields: Any) -> IndexQuery:
    return IndexQuery.model_validate(
        {"text": text, "vector": vector, "embedding_model": MODEL, **fields}
    )


@pytest.fixture
def client(opensearch_url: str) -> Any:
    return build_opensearch_client(opensearch_url, auth="none", region=None)


@pytest.fixture
def alias(client: Any, aws_names: AwsNames) -> Iterator[str]:
    ensure_index(client, aws_names.index_alias, DIM)
    yield aws_names.index_alias
    client.indices.delete(index=index_name(aws_names.index_alias))


@pytest.fixture
def index(client: Any, alias: str) -> SearchIndex:
    return OpenSearchIndex(client, alias, refresh_on_write=True)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(7)


def ids(pairs: tuple[tuple[str, float], ...]) -> list[str]:
    return [node_id for node_id, _ in pairs]


# -- both channels ---------------------------------------------------------------------


def test_upsert_then_both_channels_return_hits(
    index: SearchIndex, rng: np.random.Generator
) -> None:
    vectors = [unit_vector(rng) for _ in range(3)]
    index.upsert(
        [
            doc("n1", "I adopted a dog named Rex", vectors[0]),
            doc("n2", "My sister lives in Lisbon", vectors[1]),
            doc("n3", "Rex loves the beach", vectors[2]),
        ]
    )

    hits = index.search(ALICE, query("Rex the dog", vectors[0]))

    assert hits.vector_failure is None
    assert ids(hits.vector)[0] == "n1"
    assert hits.vector[0][1] == pytest.approx(1.0, abs=1e-4)
    assert set(ids(hits.vector)) == {"n1", "n2", "n3"}
    assert ids(hits.lexical) == ["n1", "n3"]
    assert all(score > 0 for _, score in hits.lexical)
    assert set(hits.semantic) == {"n1", "n2", "n3"}


def test_upsert_replaces_a_document_by_node_id(
    index: SearchIndex, rng: np.random.Generator
) -> None:
    first, second = unit_vector(rng), unit_vector(rng)
    index.upsert([doc("n1", "apple pie recipe", first)])
    index.upsert([doc("n1", "banana bread recipe", second)])

    assert index.search(ALICE, query("apple")).lexical == ()
    hits = index.search(ALICE, query("banana recipe", second))
    assert ids(hits.lexical) == ["n1"]
    assert ids(hits.vector) == ["n1"]
    assert hits.semantic["n1"] == pytest.approx(1.0, abs=1e-4)


def test_empty_upsert_sends_nothing() -> None:
    class NoCalls:
        def bulk(self, **_: Any) -> Any:
            raise AssertionError("no request expected")

    OpenSearchIndex(NoCalls(), "unused").upsert([])


def test_without_query_vector_only_the_lexical_channel_runs(
    index: SearchIndex, rng: np.random.Generator
) -> None:
    index.upsert([doc("n1", "quarterly report draft", unit_vector(rng))])

    hits = index.search(ALICE, query("report"))

    assert hits == IndexHits(lexical=hits.lexical, vector_failure="no_query_vector")
    assert ids(hits.lexical) == ["n1"]


# -- cosines ---------------------------------------------------------------------------


def test_semantic_scores_equal_numpy_cosines(index: SearchIndex, rng: np.random.Generator) -> None:
    # Unnormalised vectors: the adapter must report the cosine, not a dot product.
    vectors = {f"n{i:02d}": tuple(float(x) for x in rng.normal(size=DIM)) for i in range(20)}
    index.upsert([doc(nid, f"shared word {nid}", v) for nid, v in vectors.items()])
    q = tuple(float(x) for x in rng.normal(size=DIM))

    hits = index.search(ALICE, query("shared", q, vector_k=3, lexical_k=20))

    expected = {nid: cosine(v, q) for nid, v in vectors.items()}
    top3 = sorted(expected, key=lambda nid: -expected[nid])[:3]
    assert ids(hits.vector) == top3
    for nid, score in hits.vector:
        assert score == pytest.approx(expected[nid], abs=1e-4)
    # Lexical-only hits get their cosine too, computed from the stored vector.
    assert set(hits.semantic) == set(vectors)
    for nid, score in hits.semantic.items():
        assert score == pytest.approx(expected[nid], abs=1e-4)


# -- embedding models ------------------------------------------------------------------


def test_vectors_of_another_model_disable_the_vector_channel_for_that_owner(
    index: SearchIndex, rng: np.random.Generator
) -> None:
    v = unit_vector(rng)
    index.upsert(
        [
            doc("n1", "garden tomatoes", v),
            doc("n2", "garden roses", unit_vector(rng), embedding_model="old-model@0/8"),
            doc("n1", "garden tomatoes", v, owner=BOB),
        ]
    )

    hits = index.search(ALICE, query("garden", v))
    assert hits.vector_failure == "embedding_model_mismatch"
    assert hits.vector == ()
    assert hits.semantic == {}
    assert set(ids(hits.lexical)) == {"n1", "n2"}

    # Filters do not hide the other model: its vectors still make cosines incomparable.
    filtered = index.search(ALICE, query("garden", v, filters={"exclude_node_types": ["fact"]}))
    assert filtered.vector_failure == "embedding_model_mismatch"

    bob = index.search(BOB, query("garden", v))
    assert bob.vector_failure is None
    assert ids(bob.vector) == ["n1"]


def test_a_failing_vector_query_still_returns_lexical_hits(
    index: SearchIndex, rng: np.random.Generator
) -> None:
    index.upsert([doc("n1", "tax return deadline", unit_vector(rng))])

    hits = index.search(ALICE, query("tax", (1.0, 0.0)))  # wrong dimension for the field

    assert hits.vector_failure == "vector_search_failed"
    assert hits.vector == ()
    assert ids(hits.lexical) == ["n1"]


# -- isolation -------------------------------------------------------------------------


def test_tenants_and_owners_see_only_their_own_documents(
    index: SearchIndex, rng: np.random.Generator
) -> None:
    owners = (ALICE, BOB, OTHER_TENANT_ALICE)
    vectors = {owner: unit_vector(rng) for owner in owners}
    for owner in owners:
        private = f"own-{owner.tenant_id}-{owner.owner_id}"
        index.upsert(
            [
                doc("shared", "alpha launch codes", vectors[owner], owner=owner),
                doc(private, "alpha launch notes", vectors[owner], owner=owner),
            ]
        )

    for owner in owners:
        private = f"own-{owner.tenant_id}-{owner.owner_id}"
        q = vectors[owner]
        hits = index.search(owner, query("alpha launch", q))
        assert set(ids(hits.lexical)) == {"shared", private}
        assert set(ids(hits.vector)) == {"shared", private}
        # Same node id, different vectors: the score proves whose "shared" came back.
        assert hits.semantic["shared"] == pytest.approx(1.0, abs=1e-4)

    assert index.search(OwnerKey(tenant_id="t3", owner_id="alice"), query("alpha")) == IndexHits(
        vector_failure="no_query_vector"
    )


# -- filters ---------------------------------------------------------------------------


def test_an_empty_source_type_allow_list_matches_nothing(
    index: SearchIndex, rng: np.random.Generator
) -> None:
    v = unit_vector(rng)
    index.upsert([doc("n1", "weekly standup", v)])

    hits = index.search(ALICE, query("standup", v, filters={"source_types": []}))

    assert hits.lexical == () and hits.vector == ()
    assert hits.vector_failure is None


def _random_doc(i: int, rnd: random.Random, rng: np.random.Generator) -> IndexDocument:
    created = T0 + timedelta(hours=rnd.randrange(0, 240))
    event_time = T0 + timedelta(hours=rnd.randrange(0, 240)) if rnd.random() < 0.6 else None
    expires = T0 + timedelta(hours=rnd.randrange(0, 240)) if rnd.random() < 0.4 else None
    return doc(
        f"n{i:02d}",
        f"memo number {i}",
        unit_vector(rng),
        node_type=rnd.choice(list(NodeType)),
        source_type=rnd.choice(list(SourceType)),
        epistemic_type=rnd.choice(list(EpistemicType)),
        lifecycle_state=rnd.choice(list(LifecycleState)),
        scope=rnd.choice(list(Scope)),
        session_id=rnd.choice([None, "s1", "s2"]),
        created_at=created,
        event_time=event_time,
        expires_at=expires,
    )


def _random_filter(rnd: random.Random) -> IndexFilter:
    """Two to four random rules: enough to combine them, few enough to leave matches."""

    def some(values: list[Any]) -> frozenset[Any]:
        return frozenset(rnd.sample(values, rnd.randrange(1, len(values))))

    def at() -> datetime:
        return T0 + timedelta(hours=rnd.randrange(0, 240))

    rules: dict[str, Any] = {
        "exclude_node_types": lambda: some(list(NodeType)),
        "source_types": lambda: some(list(SourceType)),
        "exclude_lifecycle_states": lambda: some(list(LifecycleState)),
        "exclude_epistemic_types": lambda: some(list(EpistemicType)),
        "scopes": lambda: some(list(Scope)),
        "event_time_from": at,
        "event_time_to": at,
        "time_from": at,
        "time_to": at,
        "not_expired_at": at,
    }
    chosen = rnd.sample(sorted(rules), rnd.randrange(2, 5))
    return IndexFilter.model_validate({name: rules[name]() for name in chosen})


HAND_WRITTEN_FILTERS = [
    IndexFilter(),
    IndexFilter(exclude_node_types=frozenset({NodeType.FACT, NodeType.EVENT})),
    IndexFilter(source_types=frozenset({SourceType.USER_STATED})),
    IndexFilter(exclude_lifecycle_states=frozenset({LifecycleState.ARCHIVED})),
    IndexFilter(exclude_epistemic_types=frozenset({EpistemicType.HYPOTHETICAL})),
    IndexFilter(scopes=frozenset({Scope.PROJECT, Scope.AGENT})),
    IndexFilter(scopes=frozenset()),
    IndexFilter(event_time_from=T0 + timedelta(hours=100)),
    IndexFilter(event_time_to=T0 + timedelta(hours=100)),
    IndexFilter(time_from=T0 + timedelta(hours=50), time_to=T0 + timedelta(hours=150)),
    IndexFilter(not_expired_at=T0 + timedelta(hours=120)),
]


@pytest.fixture(params=["opensearch", "sqlite"])
def filtering_index(request: pytest.FixtureRequest, tmp_path: Path) -> SearchIndex:
    """The filter rules are one contract: the embedded SQLite index must agree with the
    OpenSearch query and with `IndexFilter.matches` on every rule."""
    if request.param == "sqlite":
        return SqliteVectorIndex(tmp_path / "index.sqlite")
    found: SearchIndex = request.getfixturevalue("index")
    return found


def test_every_filter_rule_matches_the_reference_semantics(
    filtering_index: SearchIndex, rng: np.random.Generator
) -> None:
    index = filtering_index
    rnd = random.Random(20260101)
    docs = [_random_doc(i, rnd, rng) for i in range(30)]
    # A document exactly on a bound checks the inclusive/exclusive edges.
    docs.append(
        _random_doc(30, rnd, rng).model_copy(
            update={
                "event_time": T0 + timedelta(hours=100),
                "expires_at": T0 + timedelta(hours=120),
            }
        )
    )
    index.upsert(docs)
    q = unit_vector(rng)
    filters = HAND_WRITTEN_FILTERS + [_random_filter(rnd) for _ in range(40)]

    for flt in filters:
        hits = index.search(ALICE, query("memo", q, filters=flt, vector_k=100, lexical_k=100))
        expected = {d.node_id for d in docs if flt.matches(d)}
        assert set(ids(hits.lexical)) == expected, flt
        # k exceeds the matching set, so Lucene's filtered search returns all of it exactly.
        assert set(ids(hits.vector)) == expected, flt
        assert hits.vector_failure is None


# -- failures --------------------------------------------------------------------------


def test_a_rejected_bulk_item_raises_after_the_rest_is_written(
    index: SearchIndex, rng: np.random.Generator
) -> None:
    good = doc("n1", "renew passport", unit_vector(rng))
    bad = doc("n2", "renew visa", (1.0, 0.0, 0.0))  # the field holds 8 dimensions

    with pytest.raises(IndexUnavailableError) as raised:
        index.upsert([good, bad])

    assert raised.value.detail == IndexUnavailableError.default_detail
    assert ids(index.search(ALICE, query("renew")).lexical) == ["n1"]


def test_a_missing_alias_is_an_unavailable_index(client: Any, aws_names: AwsNames) -> None:
    index = OpenSearchIndex(client, f"{aws_names.index_alias}-missing")

    with pytest.raises(IndexUnavailableError):
        index.search(ALICE, query("anything", (1.0,) * DIM))


def test_an_unreachable_node_raises_index_unavailable() -> None:
    client = build_opensearch_client(
        "http://127.0.0.1:9", auth="none", region=None, timeout_s=1.0, max_retries=0
    )
    index = OpenSearchIndex(client, "prme-unreachable")

    with pytest.raises(IndexUnavailableError) as searched:
        index.search(ALICE, query("anything", (1.0,) * DIM))
    with pytest.raises(IndexUnavailableError) as upserted:
        index.upsert([doc("n1", "anything", (1.0,) * DIM)])

    for raised in (searched, upserted):
        assert isinstance(raised.value.__cause__, OpenSearchException)
        assert "127.0.0.1" not in str(raised.value)


# -- client construction ---------------------------------------------------------------


def test_aws_clients_sign_requests_with_sigv4(monkeypatch: pytest.MonkeyPatch) -> None:
    url = "https://search-prme.eu-west-1.es.amazonaws.com"
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)

    client = build_opensearch_client(url, auth="es", region="eu-west-1")

    connection = client.transport.connection_pool.connections[0]
    assert connection.use_ssl is True
    assert connection.host == f"{url}:443"
    signed = connection.http_auth("GET", f"{url}/_cluster/health", None, {})
    assert "/eu-west-1/es/aws4_request" in signed["Authorization"]
    assert signed["Authorization"].startswith("AWS4-HMAC-SHA256 Credential=testing/")


def test_a_local_client_is_plain_http_without_auth() -> None:
    client = build_opensearch_client("http://127.0.0.1:9250", auth="none", region=None)

    connection = client.transport.connection_pool.connections[0]
    assert connection.use_ssl is False
    assert connection.http_auth is None


# -- what searches return ---------------------------------------------------------------


class RecordingClient:
    """The real client, keeping every search answer the adapter received."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.answers: list[dict[str, Any]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def msearch(self, **kwargs: Any) -> Any:
        response = self._client.msearch(**kwargs)
        self.answers.extend(response["responses"])
        return response

    def search(self, **kwargs: Any) -> Any:
        response = self._client.search(**kwargs)
        self.answers.append(response)
        return response


def test_searches_never_bring_back_stored_documents_or_vectors(
    client: Any, alias: str, rng: np.random.Generator
) -> None:
    # Given documents with vectors, most of which only the lexical channel finds
    vectors = {f"n{i:02d}": unit_vector(rng) for i in range(12)}
    OpenSearchIndex(client, alias, refresh_on_write=True).upsert(
        [
            doc(nid, f"shared word {nid}", v, session_id="s1", event_time=T0 + timedelta(i))
            for i, (nid, v) in enumerate(vectors.items())
        ]
    )
    recording = RecordingClient(client)
    index = OpenSearchIndex(recording, alias, refresh_on_write=True)
    q = unit_vector(rng)

    # When the owner searches, reads session neighbours and is erased
    hits = index.search(ALICE, query("shared", q, vector_k=2, lexical_k=12))
    neighbours = index.session_neighbours(ALICE, [("s1", T0 + timedelta(5), "n05")], 2)
    removed = index.delete_owner(ALICE)

    # Then every answer carried ids and scores only, and lexical-only hits still got cosines
    hits_seen = [hit for answer in recording.answers for hit in answer["hits"]["hits"]]
    assert len(hits_seen) > len(vectors)
    assert all("_source" not in hit for hit in hits_seen)
    assert set(hits.semantic) == set(vectors)
    for nid, score in hits.semantic.items():
        assert score == pytest.approx(cosine(vectors[nid], q), abs=1e-4)
    assert neighbours == [["n04", "n06", "n03", "n07"]]
    assert removed == len(vectors)

"""One suite for both clients: `MemoryClient` on a directory and on a live `prme serve`, and
`AsyncMemoryClient` on both, return the same response models with the same contents, raise
the same `prme.errors` classes, and retry a lost write with the same Idempotency-Key."""

from __future__ import annotations

import asyncio
import io
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from prme.client import AsyncMemoryClient, MemoryClient, RetryPolicy
from prme.errors import (
    AuthenticationError,
    ConflictError,
    InvalidRequestError,
    NotFoundError,
    OperationNotServedError,
)
from prme.http import graph_schemas, judgment_schemas, schemas
from prme.model import erasure, feedback, listings
from prme.model.receipt_listing import NodeRetrievalPage, RetrievalPage
from prme.settings import Settings
from tests.harness.live_server import LiveServer, flaky_relay, live_server

SURFACES = ["embedded", "remote"]
NO_WAIT = RetryPolicy(attempts=3, base_delay=0, max_delay=0)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with live_server(tmp_path_factory.mktemp("served")) as running:
        yield running


def _open(surface: str, tmp_path: Path, server: LiveServer) -> MemoryClient:
    if surface == "embedded":
        return MemoryClient(tmp_path / "memory", settings=Settings(embedder="hashing"))
    return MemoryClient(server.url, api_key=server.operator_key, retries=NO_WAIT)


@pytest.fixture(params=SURFACES)
def client(
    request: pytest.FixtureRequest, tmp_path: Path, server: LiveServer
) -> Iterator[MemoryClient]:
    with _open(request.param, tmp_path, server) as opened:
        yield opened


@pytest.fixture
def user() -> str:
    # The server is shared by the module's tests: each test writes as a user of its own.
    return f"user-{uuid.uuid4().hex[:12]}"


def test_store_read_list_and_count(client: MemoryClient, user: str) -> None:
    stored = client.store("I moved to Lisbon in May.", speaker="Ana", session_id="c1", user_id=user)
    assert type(stored) is schemas.StoreResponse
    assert stored.processing_status == "completed"
    assert stored.node_id is not None

    node = client.get_node(stored.node_id, user_id=user)
    assert type(node) is schemas.NodeResponse
    assert (node.content, node.node_type, node.lifecycle_state) == (
        "I moved to Lisbon in May.",
        "note",
        "tentative",
    )
    assert (node.user_id, node.ttl_days, node.evidence_refs) == (user, 90, [stored.event_id])
    event = client.get_event(stored.event_id, user_id=user)
    assert type(event) is schemas.EventResponse
    assert (event.content, event.speaker, event.session_id) == (
        "I moved to Lisbon in May.",
        "Ana",
        "c1",
    )
    assert [n.id for n in client.get_event_nodes(stored.event_id, user_id=user)] == [node.id]

    fact = client.store("My blood type is A+.", node_type="fact", ttl_days=None, user_id=user)
    facts = client.list_nodes(node_type="fact", user_id=user)
    assert type(facts) is schemas.NodePageResponse
    assert ([n.id for n in facts.items], facts.next_after_id) == ([fact.node_id], None)
    first = client.list_events(limit=1, user_id=user)
    rest = client.list_events(limit=5, after_id=first.next_after_id, user_id=user)
    assert type(first) is schemas.EventPageResponse
    assert {e.id for e in first.items + rest.items} == {stored.event_id, fact.event_id}
    stats = client.get_stats(user_id=user)
    assert type(stats) is listings.OwnerStats
    assert (stats.events, sum(stats.nodes_by_type.values())) == (2, 2)

    answer = client.retrieve("What is my blood type?", user_id=user)
    assert type(answer) is schemas.RetrieveResponse
    assert answer.results[0].node_id == fact.node_id
    assert "A+" in answer.bundle.context
    state = client.get_processing_status(fact.event_id, user_id=user)
    assert type(state) is schemas.ProcessingStatusResponse
    assert state.processing_status == "completed"


def test_lifecycle_supersede_and_delete(client: MemoryClient, user: str) -> None:
    old = client.store("My gym is FitLab", user_id=user)
    new = client.store("My gym is now PowerHouse", user_id=user)
    assert old.node_id is not None and new.node_id is not None

    superseded, current = client.supersede(old.node_id, new.node_id, user_id=user)
    assert (superseded.lifecycle_state, current.id) == ("superseded", new.node_id)
    assert client.promote(new.node_id, user_id=user).lifecycle_state == "stable"
    reinforced = client.reinforce(new.node_id, evidence_id=new.event_id, user_id=user)
    assert reinforced.confidence >= current.confidence
    assert client.archive(new.node_id, user_id=user).lifecycle_state == "archived"

    deleted = client.delete_memory(old.event_id, user_id=user)
    assert type(deleted) is listings.MemoryDeletion
    assert deleted.event_id == old.event_id
    assert client.delete_memory(old.event_id, user_id=user) == deleted  # a repeat is the record
    with pytest.raises(NotFoundError):
        client.get_event(old.event_id, user_id=user)
    assert client.get_stats(user_id=user).events == 1


def test_conditions_and_contradictions(client: MemoryClient, user: str) -> None:
    task = client.store(
        "Pick Ana up at six",
        epistemic_type="conditional",
        metadata={"condition": "Ana's flight is booked"},
        user_id=user,
    )
    assert task.node_id is not None
    key = str(uuid.uuid4())
    node = client.evaluate_condition(
        task.node_id, "true", reason="Booked", idempotency_key=key, user_id=user
    )
    assert type(node) is schemas.NodeResponse
    assert node.metadata["prme_condition_v1"]["state"] == "true"
    assert (
        client.evaluate_condition(
            task.node_id, "true", reason="Booked", idempotency_key=key, user_id=user
        )
        == node
    )
    with pytest.raises(ConflictError):
        client.evaluate_condition(task.node_id, "false", idempotency_key=key, user_id=user)
    with pytest.raises(InvalidRequestError):
        client.evaluate_condition(task.node_id, "maybe", user_id=user)

    porto = client.store("Ana lives in Porto", user_id=user).node_id
    lisbon = client.store("Ana lives in Lisbon", user_id=user).node_id
    assert porto is not None and lisbon is not None
    marked = client.mark_contradiction(porto, lisbon, user_id=user)
    assert [(n.id, n.lifecycle_state) for n in marked] == [
        (porto, "contested"),
        (lisbon, "contested"),
    ]
    winner, loser = client.resolve_contradiction(lisbon, porto, user_id=user)
    assert (winner.lifecycle_state, loser.lifecycle_state) == ("stable", "deprecated")
    with pytest.raises(NotFoundError):
        client.mark_contradiction(porto, str(uuid.uuid4()), user_id=user)


def test_receipts_and_feedback(client: MemoryClient, user: str) -> None:
    stored = client.store("The ferry leaves at 07:40 from pier 3.", user_id=user)
    answer = client.retrieve("When does the ferry leave?", user_id=user)
    request_id = answer.metrics.request_id
    assert client.get_retrieval_receipt(request_id, user_id=user).request_id == request_id
    replay = client.replay_retrieval(request_id, user_id=user)
    assert type(replay) is feedback.ReplayReport
    assert replay.matches
    judged = client.record_relevance(request_id, {str(stored.node_id): True}, user_id=user)
    assert client.get_relevance(judged.feedback_id, user_id=user) == judged
    assert [r.feedback_id for r in client.list_relevance(user_id=user).items] == [
        judged.feedback_id
    ]
    proposals = client.list_alias_proposals(user_id=user)
    assert type(proposals) is judgment_schemas.AliasProposalListResponse
    assert proposals.items == []


def test_export_and_import_round_trip(client: MemoryClient, user: str) -> None:
    client.store("The spare key is under the blue pot.", node_type="fact", user_id=user)
    client.store("Water the basil on Sundays.", user_id=user)
    exported = io.StringIO()
    assert client.export_to(exported, user_id=user) == 4  # two events, two nodes
    copy = f"{user}-copy"
    totals = client.import_from(io.StringIO(exported.getvalue()), user_id=copy)
    assert (totals.events, totals.nodes) == (2, 2)
    contents = {n.content for n in client.list_nodes(user_id=copy).items}
    assert contents == {"The spare key is under the blue pot.", "Water the basil on Sundays."}
    answer = client.retrieve("Where is the spare key?", user_id=copy)
    assert answer.results[0].content == "The spare key is under the blue pot."
    with pytest.raises(InvalidRequestError):
        client.import_from(io.StringIO("not an export\n"), user_id=copy)
    erased = client.erase_owner(confirm=copy, user_id=copy)
    assert type(erased) is erasure.OwnerErasure and erased.complete
    assert client.get_stats(user_id=copy).events == 0


def _comparable(result: BaseModel | list[Any]) -> str:
    """A result's JSON with what differs between two memories made alike blanked: ids (each
    replaced by the order it first appears in) and times."""
    if isinstance(result, list):
        text = "[" + ",".join(item.model_dump_json() for item in result) + "]"
    else:
        text = result.model_dump_json()
    ids: dict[str, str] = {}
    uuid_shape = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    text = re.sub(uuid_shape, lambda m: ids.setdefault(m.group(0), f"id{len(ids)}"), text)
    return re.sub(r'"\d{4}-\d\d-\d\dT[^"]*"', '"<time>"', text)


def _transcript(client: MemoryClient, user: str) -> list[str]:
    stored = client.store(
        "Pay the rent on the 3rd.", node_type="task", metadata={"k": 1}, user_id=user
    )
    assert stored.node_id is not None
    other = client.store("Rent is 900 euros.", node_type="fact", user_id=user)
    assert other.node_id is not None
    return [
        _comparable(stored),
        _comparable(client.get_node(stored.node_id, user_id=user)),
        _comparable(client.get_event(stored.event_id, user_id=user)),
        _comparable(client.get_event_nodes(stored.event_id, user_id=user)),
        _comparable(client.list_nodes(node_type="task", user_id=user)),
        _comparable(client.get_stats(user_id=user)),
        _comparable(client.supersede(stored.node_id, other.node_id, user_id=user)),
        _comparable(client.delete_memory(stored.event_id, user_id=user)),
        _comparable(client.get_stats(user_id=user)),
    ]


def test_both_clients_give_the_same_results(tmp_path: Path, server: LiveServer) -> None:
    with _open("embedded", tmp_path, server) as local, _open("remote", tmp_path, server) as remote:
        user = f"same-{uuid.uuid4().hex[:8]}"
        assert _transcript(local, user) == _transcript(remote, user)


def test_typed_errors_are_the_same_on_both(client: MemoryClient, user: str) -> None:
    with pytest.raises(NotFoundError):
        client.get_node(str(uuid.uuid4()), user_id=user)
    with pytest.raises(InvalidRequestError) as bad_id:
        client.get_node("not-a-uuid", user_id=user)
    assert bad_id.value.field == ("node_id",)
    with pytest.raises(InvalidRequestError) as empty:
        client.store("", user_id=user)
    assert empty.value.field == ("content",)
    # Checked by the engine in-process and by the route over HTTP: the same class and field.
    with pytest.raises(InvalidRequestError) as no_page:
        client.list_relevance(limit=0, user_id=user)
    assert no_page.value.field == ("limit",)
    key = str(uuid.uuid4())
    client.store("first", idempotency_key=key, user_id=user)
    with pytest.raises(ConflictError):
        client.store("something else", idempotency_key=key, user_id=user)


def test_a_bad_key_is_an_authentication_error_that_never_shows_the_key(
    server: LiveServer,
) -> None:
    secret = "prme_0123456789abcdef_not-a-real-secret"
    with MemoryClient(server.url, api_key=secret, retries=NO_WAIT) as client:
        with pytest.raises(AuthenticationError) as refused:
            client.get_stats(user_id="anyone")
        shown = [repr(client), str(client), str(refused.value), repr(refused.value)]
    assert not [text for text in shown if secret in text or "0123456789abcdef" in text]
    with MemoryClient(server.url, api_key=server.operator_key) as good:
        assert server.operator_key not in repr(good)


def test_operations_without_a_route_say_so_over_http(server: LiveServer) -> None:
    with (
        MemoryClient(server.url, api_key=server.operator_key) as client,
        pytest.raises(OperationNotServedError),
    ):
        client.propose_aliases(user_id="anyone")


def test_a_write_whose_answer_was_lost_is_retried_with_the_same_key(
    server: LiveServer, user: str
) -> None:
    with (
        flaky_relay(server.url, fail_once_after_forwarding={"/v1/store"}) as relay,
        MemoryClient(relay_url(relay), api_key=server.operator_key, retries=NO_WAIT) as client,
    ):
        stored = client.store("Stored once, answered twice.", user_id=user)
        stores = [r for r in relay.relayed if r.path == "/v1/store"]
        assert [r.status for r in stores] == [503, 200]
        assert stores[0].idempotency_key is not None
        assert stores[0].idempotency_key == stores[1].idempotency_key
        events = client.list_events(user_id=user).items
    assert [e.id for e in events] == [stored.event_id]


def relay_url(relay: Any) -> str:
    host, port = relay.server_address[:2]
    return f"http://{host}:{port}"


async def _async_round(client: AsyncMemoryClient, user: str) -> list[str]:
    stored = await client.store("Async memories count too.", node_type="fact", user_id=user)
    assert type(stored) is schemas.StoreResponse and stored.node_id is not None
    node, listed, stats = await asyncio.gather(
        client.get_node(stored.node_id, user_id=user),
        client.list_nodes(user_id=user),
        client.get_stats(user_id=user),
    )
    answer = await client.retrieve("memories count", user_id=user)
    deleted = await client.delete_memory(stored.event_id, user_id=user)
    with pytest.raises(NotFoundError):
        await client.get_node(stored.node_id, user_id=user)
    assert answer.results[0].node_id == stored.node_id
    return [_comparable(x) for x in (stored, node, listed, stats, deleted)]


def test_the_async_client_gives_the_same_results_on_both(
    tmp_path: Path, server: LiveServer
) -> None:
    async def both() -> tuple[list[str], list[str]]:
        user = f"async-{uuid.uuid4().hex[:8]}"
        local = AsyncMemoryClient(tmp_path / "memory", settings=Settings(embedder="hashing"))
        remote = AsyncMemoryClient(server.url, api_key=server.operator_key, retries=NO_WAIT)
        async with local, remote:
            return await _async_round(local, user), await _async_round(remote, user)

    embedded, served = asyncio.run(both())
    assert embedded == served


def test_usage_is_read_with_a_range_on_both(client: MemoryClient, user: str) -> None:
    from datetime import UTC, datetime, timedelta

    key = str(uuid.uuid4())
    for _ in range(2):
        client.store("Usage counts this once", user_id=user, idempotency_key=key)
    now = datetime.now(UTC)
    report = client.get_usage(
        user_id=user, start=now - timedelta(days=1), end=now + timedelta(days=1), period="month"
    )
    assert [(t.kind, t.operations, t.units.records) for t in report.totals] == [("store", 1, 1)]
    assert report.user_id == user


def test_graph_reads_are_the_same_on_both(client: MemoryClient, user: str) -> None:
    old = client.store("My desk is on floor 2", user_id=user)
    new = client.store("My desk moved to floor 5", user_id=user)
    assert old.node_id is not None and new.node_id is not None
    client.supersede(old.node_id, new.node_id, user_id=user)

    first = client.get_node_provenance(old.node_id, operation_limit=1, user_id=user)
    assert type(first) is graph_schemas.NodeProvenanceResponse
    assert first.evidence[0].event_id == old.event_id
    assert first.next_operation_cursor is not None
    rest = client.get_node_provenance(
        old.node_id, operation_cursor=first.next_operation_cursor, user_id=user
    )
    operations = [o.operation for o in first.operations + rest.operations]
    assert sorted(operations) == ["direct_store", "supersede"]
    near = client.get_node_neighborhood(new.node_id, max_hops=1, user_id=user)
    assert [n.node.id for n in near.neighbors] == [old.node_id]
    chain = client.get_node_chain(new.node_id, direction="backward", user_id=user)
    assert [n.id for n in chain.nodes] == [new.node_id, old.node_id]
    with pytest.raises(InvalidRequestError):
        client.get_node_provenance(old.node_id, operation_limit=0, user_id=user)
    with pytest.raises(NotFoundError):
        client.get_node_chain(str(uuid.uuid4()), user_id=user)


def test_receipt_listings_are_the_same_on_both(client: MemoryClient, user: str) -> None:
    tea = client.store("Ana drinks oolong tea", user_id=user)
    client.store("Ana plays chess", user_id=user)
    first = client.retrieve("What does Ana drink?", user_id=user).metrics.request_id
    second = client.retrieve("chess", limit=1, user_id=user).metrics.request_id
    assert tea.node_id is not None

    page = client.list_retrievals(limit=1, user_id=user)
    assert type(page) is RetrievalPage
    rest = client.list_retrievals(cursor=page.next_cursor, user_id=user)
    assert [r.request_id for r in page.retrievals + rest.retrievals] == [second, first]
    since = page.retrievals[0].created_at
    bounded = client.list_retrievals(since=since, user_id=user)
    assert [r.request_id for r in bounded.retrievals] == [second]
    ranked = client.list_node_retrievals(tea.node_id, user_id=user)
    assert type(ranked) is NodeRetrievalPage
    assert {r.request_id: r.outcome for r in ranked.retrievals}[first] == "returned"
    with pytest.raises(InvalidRequestError):
        client.list_retrievals(cursor="nope", user_id=user)
    with pytest.raises(NotFoundError):
        client.list_node_retrievals(str(uuid.uuid4()), user_id=user)

"""Searching an owner's listings on every backend: a caseless text filter on nodes and events,
time bounds on nodes, and filtered paging that stays bounded and visits every match once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from prme.engine import manage
from prme.model.inputs import StoreInput
from prme.model.listings import MAX_SEARCH_TEXT_CHARS, EventFilter, NodeFilter
from prme.model.records import Event, MemoryNode, OwnerKey
from tests.harness.engines import ALICE, BOB, OTHER_TENANT_ALICE, Harness, memory_harness

JAN = datetime(2024, 1, 1, tzinfo=UTC)


def _store(h: Harness, owner: OwnerKey, content: str, **fields: object) -> tuple[str, str]:
    """The event id and node id of a direct store."""
    result = h.engine.store(owner, StoreInput.model_validate({"content": content, **fields}))
    assert result.node_id is not None
    return result.event_id, result.node_id


def _nodes(
    h: Harness, owner: OwnerKey, flt: NodeFilter, limit: int = 100
) -> tuple[list[MemoryNode], int]:
    """Every page of a listing, and how many pages came back short with more to read."""
    seen: list[MemoryNode] = []
    short = 0
    after: str | None = None
    for _ in range(200):
        page = h.engine.list_nodes(owner, flt, limit=limit, after_id=after)
        seen.extend(page.items)
        if page.next_after_id is None:
            return seen, short
        short += len(page.items) < limit
        after = page.next_after_id
    raise AssertionError("the listing never ended")


def _events(h: Harness, owner: OwnerKey, flt: EventFilter, limit: int = 100) -> list[Event]:
    seen: list[Event] = []
    after: str | None = None
    for _ in range(200):
        page = h.engine.list_events(owner, flt, limit=limit, after_id=after)
        seen.extend(page.items)
        if page.next_after_id is None:
            return seen
        after = page.next_after_id
    raise AssertionError("the listing never ended")


def _node_ids(h: Harness, owner: OwnerKey, **flt: object) -> set[str]:
    return {n.id for n in _nodes(h, owner, NodeFilter.model_validate(flt))[0]}


def _event_ids(h: Harness, owner: OwnerKey, **flt: object) -> set[str]:
    return {e.id for e in _events(h, owner, EventFilter.model_validate(flt))}


def test_text_finds_caseless_substrings_of_the_owners_memory_only(any_backend: Harness) -> None:
    # Given alice's memories, and the same words stored by bob and by another tenant's alice
    h = any_backend
    tea_event, tea = _store(h, ALICE, "Alice drinks GREEN Tea every morning")
    _, street = _store(h, ALICE, "Alice lives on Hauptstraße 5")
    _, cafe = _store(h, ALICE, "Meet at the Café Central")
    _store(h, ALICE, "Nothing to see")
    _store(h, BOB, "Bob drinks green tea too")
    _store(h, OTHER_TENANT_ALICE, "Other alice drinks green tea")

    # When each owner searches, Then case, folding and normalization are ignored, and no
    # search ever returns another owner's memory
    assert _node_ids(h, ALICE, text="green tea") == {tea}
    assert _node_ids(h, ALICE, text="HAUPTSTRASSE") == {street}
    assert _node_ids(h, ALICE, text="CAFE\u0301") == {cafe}  # typed decomposed, stored composed
    assert _node_ids(h, ALICE, text="cafe ") == set()  # an accent is not ignored
    assert _node_ids(h, ALICE, text="drinks") == {tea}
    assert _event_ids(h, ALICE, text="Green TEA") == {tea_event}
    bobs = _nodes(h, BOB, NodeFilter(text="green tea"))[0]
    assert [n.owner_id for n in bobs] == ["bob"]
    others = _events(h, OTHER_TENANT_ALICE, EventFilter(text="green tea"))
    assert [(e.tenant_id, e.content) for e in others] == [
        (OTHER_TENANT_ALICE.tenant_id, "Other alice drinks green tea")
    ]


def test_like_wildcards_in_text_match_only_themselves(any_backend: Harness) -> None:
    h = any_backend
    _, percent = _store(h, ALICE, "I am 100% sure")
    _, zeros = _store(h, ALICE, "I am 1000 sure")
    _, underscore = _store(h, ALICE, "the file is a_b.txt")
    _, plain = _store(h, ALICE, "the file is axb.txt")
    _, backslash = _store(h, ALICE, "path C:\\temp")

    assert _node_ids(h, ALICE, text="%") == {percent}
    assert _node_ids(h, ALICE, text="0% s") == {percent}
    assert _node_ids(h, ALICE, text="_") == {underscore}
    assert _node_ids(h, ALICE, text="a_b") == {underscore}
    assert _node_ids(h, ALICE, text="\\") == {backslash}
    assert _node_ids(h, ALICE, text="a%b") == set()
    assert _node_ids(h, ALICE, text="file") == {underscore, plain}
    assert _event_ids(h, ALICE, text="%") == {
        e.id for e in _events(h, ALICE, EventFilter()) if "%" in e.content
    }
    assert zeros not in _node_ids(h, ALICE, text="0%")


def test_node_time_bounds_read_the_event_time_else_the_creation_time(any_backend: Harness) -> None:
    h = any_backend
    # Given memories of events in January, February and March, and one with no event time
    _, january = _store(h, ALICE, "January note", event_time=JAN.isoformat())
    _, february = _store(
        h, ALICE, "February note", event_time=(JAN + timedelta(days=31)).isoformat()
    )
    _, march = _store(h, ALICE, "March note", event_time=(JAN + timedelta(days=60)).isoformat())
    _, undated = _store(h, ALICE, "A note without a date")
    created = next(n for n in _nodes(h, ALICE, NodeFilter())[0] if n.id == undated).created_at

    # When listed with bounds, Then since is inclusive, until exclusive, on the event time
    feb_1 = JAN + timedelta(days=31)
    assert _node_ids(h, ALICE, since=feb_1) >= {february, march}
    assert january not in _node_ids(h, ALICE, since=feb_1)
    assert _node_ids(h, ALICE, until=feb_1) - {undated} == {january}
    assert _node_ids(h, ALICE, since=JAN, until=feb_1 + timedelta(days=1)) - {undated} == {
        january,
        february,
    }
    # And a node whose source has no event time is placed at its creation
    assert undated in _node_ids(h, ALICE, since=created, until=created + timedelta(seconds=1))
    assert undated not in _node_ids(h, ALICE, until=created)
    assert _node_ids(h, ALICE, since=JAN, until=JAN + timedelta(days=90), text="note") >= {
        january,
        february,
        march,
    }


def test_filtered_paging_is_bounded_and_visits_every_match_once(
    any_backend: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a listing that reads at most three records a call, one at a time
    h = any_backend
    monkeypatch.setattr(manage, "SCAN_BUDGET", 3)
    monkeypatch.setattr(manage, "READ_CHUNK", 1)
    matching_nodes: set[str] = set()
    matching_events: set[str] = set()
    for i in range(14):
        dated = (JAN + timedelta(days=i)).isoformat()
        content = f"entry {i}: " + ("green TEA" if i % 3 == 0 else "coffee")
        event_id, node_id = _store(h, ALICE, content, event_time=dated)
        if i % 3 == 0 and 2 <= i < 12:
            matching_nodes.add(node_id)
            matching_events.add(event_id)
    _store(h, BOB, "bob's green tea", event_time=(JAN + timedelta(days=5)).isoformat())
    flt = NodeFilter(
        text="green tea", since=JAN + timedelta(days=2), until=JAN + timedelta(days=12)
    )

    # When every page of the filtered listing is read, at several page sizes
    for limit in (1, 2, 5):
        seen, short = _nodes(h, ALICE, flt, limit=limit)
        # Then each match comes exactly once, in id order, and some pages came back short
        # (the scan budget ran out) with a cursor to continue from
        assert [n.id for n in seen] == sorted(matching_nodes)
        assert short > 0
    events = _events(
        h,
        ALICE,
        EventFilter(
            text="GREEN tea", since=JAN + timedelta(days=2), until=JAN + timedelta(days=12)
        ),
        limit=2,
    )
    assert [e.id for e in events] == sorted(matching_events)


def test_a_text_search_folds_a_bounded_number_of_characters_a_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given ten memories of 20 characters, and a search that may fold 50 a call
    h = memory_harness()
    monkeypatch.setattr(manage, "TEXT_SCAN_CHARS", 50)
    ids = sorted(_store(h, ALICE, f"memory number {i:06d}")[1] for i in range(10))
    # When the first page is read, Then it stops after the third record (60 characters)
    page = h.engine.list_nodes(ALICE, NodeFilter(text="MEMORY"), limit=100)
    assert [n.id for n in page.items] == ids[:3]
    assert page.next_after_id == ids[2]
    # And the pages that follow reach every record once; a listing without text is not bounded
    # by characters
    assert [n.id for n in _nodes(h, ALICE, NodeFilter(text="memory"))[0]] == ids
    assert [n.id for n in h.engine.list_nodes(ALICE, NodeFilter(), limit=100).items] == ids
    events = h.engine.list_events(ALICE, EventFilter(text="number"), limit=100)
    assert len(events.items) == 3
    assert events.next_after_id is not None


@pytest.mark.parametrize(
    "text",
    [
        "",
        "x" * (MAX_SEARCH_TEXT_CHARS + 1),
        "tea\x00",
        "tea\ud800",
        "tea\x07",
        "line\nbreak",
        "\x9b",  # a C1 control
    ],
)
def test_a_hostile_text_is_refused_before_anything_is_read(text: str) -> None:
    with pytest.raises(ValidationError):
        NodeFilter(text=text)
    with pytest.raises(ValidationError):
        EventFilter(text=text)
    assert NodeFilter(text="x" * MAX_SEARCH_TEXT_CHARS).text is not None

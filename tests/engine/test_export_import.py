"""Exporting an owner's memory and importing it elsewhere, on every backend: the round trip keeps
retrieval the same, re-importing adds nothing, and an import refuses hostile records whole."""

from __future__ import annotations

import io
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from prme.engine import portability as engine_portability
from prme.errors import ConflictError, InvalidRequestError
from prme.export_files import read_export, write_export
from prme.model import portability
from prme.model.enums import LifecycleState, NodeType, RetrievalMode
from prme.model.inputs import IngestInput, RetrieveInput, StoreInput
from prme.model.portability import EXPORT_FORMAT_VERSION, ImportBatch, LineError
from prme.model.records import OwnerKey
from tests.harness.engines import ALICE, BOB, Harness, embedded_harness, memory_harness
from tests.harness.records import note_node

QUERIES = (
    "Which city does Alice live in?",
    "What does Alice drink in the morning?",
    "How much was the bike?",
    "Where does Ana work?",
)


def _store(h: Harness, content: str, day: int, **fields: Any) -> str:
    fields.setdefault("session_id", "chat-1" if day % 2 else "chat-2")
    result = h.engine.store(
        ALICE,
        StoreInput.model_validate(
            {"content": content, "event_time": f"2024-03-{day:02d}T10:00:00+00:00", **fields}
        ),
    )
    assert result.node_id is not None
    return result.node_id


def _varied_memory(h: Harness) -> None:
    """Stores of several types, sessions and times, an extracting ingest, a superseded node,
    an archived one, a TTL, a value binding; in time order, as a conversation arrives."""
    _store(h, "Alice drinks green tea every morning.", 1, node_type="preference")
    old_city = _store(h, "Alice lives in Lisbon.", 2, node_type="fact")
    _store(h, "We decided to take the train to Porto for the trip.", 3, node_type="decision")
    h.engine.ingest(
        ALICE,
        IngestInput.model_validate(
            {
                "content": "I paid $1,200 for the new bike yesterday. My sister Ana works at "
                "Siemens.",
                "speaker": "Alice",
                "session_id": "chat-1",
                "event_time": "2024-03-04T10:00:00+00:00",
                "wait_for_extraction": True,
            }
        ),
    )
    archived = _store(h, "Alice once collected stamps.", 5, node_type="note")
    _store(h, "Remind Alice about the dentist.", 6, ttl_days=400)
    new_city = _store(
        h,
        "Current City: Salt Lake City(Utah)",
        7,
        node_type="fact",
        value_bindings=[
            {
                "reference": "current-city-1",
                "kind": "city",
                "presentation": "Salt Lake City(Utah)",
                "lookup": "Salt Lake City",
            }
        ],
    )
    _store(h, "Alice said the coffee in Porto was too strong.", 8, speaker="Alice")
    h.engine.supersede(ALICE, old_node_id=old_city, new_node_id=new_city)
    h.engine.archive(ALICE, archived)
    # The lifecycle moves' index updates are queued work; an export is taken once it is done.
    h.engine.process_materializations(ALICE)


def _export(h: Harness, owner: OwnerKey) -> str:
    out = io.StringIO()
    write_export(lambda cursor: h.engine.export_owner(owner, cursor), out)
    return out.getvalue()


def _import(h: Harness, owner: OwnerKey, text: str) -> portability.ImportReport | Any:
    return read_export(io.StringIO(text), lambda batch: h.engine.import_records(owner, batch))


def _retrievals(h: Harness, owner: OwnerKey) -> list[Any]:
    seen = []
    for query in QUERIES:
        for mode in (RetrievalMode.DEFAULT, RetrievalMode.EXPLICIT):
            response = h.engine.retrieve(owner, RetrieveInput(query=query, mode=mode))
            seen.append(
                (
                    [
                        (r.content, r.node_type, r.lifecycle_state, r.node_id, r.score)
                        for r in response.results
                    ],
                    response.bundle.context,
                    [b.reference for b in response.value_bindings],
                )
            )
    return seen


def _nodes(h: Harness, owner: OwnerKey) -> list[dict[str, Any]]:
    nodes = h.ledger.list_nodes(owner)
    return sorted(
        (n.model_dump(exclude={"tenant_id", "owner_id"}) for n in nodes), key=lambda n: n["id"]
    )


@pytest.fixture
def small_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pages, batches and ledger transactions of a few records, so a small memory crosses
    several of each."""
    monkeypatch.setattr(engine_portability, "EXPORT_PAGE_RECORDS", 3)
    monkeypatch.setattr(portability, "IMPORT_BATCH_RECORDS", 6)
    monkeypatch.setattr(engine_portability, "_COMMIT_ACTIONS", 7)


@pytest.mark.usefixtures("small_pages")
def test_an_owner_imported_into_another_retrieves_the_same(any_backend: Harness) -> None:
    h = any_backend
    _varied_memory(h)
    exported = _export(h, ALICE)
    lines = exported.splitlines()
    header = json.loads(lines[0])
    counts = header["counts"]
    assert counts["events"] == 8
    assert counts["nodes"] == len(_nodes(h, ALICE))
    assert counts["edges"] >= 1  # the supersedence
    assert len(lines) == 1 + counts["events"] + counts["nodes"] + counts["edges"]
    assert "alice" not in exported and "t1" not in exported.replace('"t1', "")

    totals = _import(h, BOB, exported)

    imported = (totals.events, totals.nodes, totals.edges, totals.skipped, totals.pending)
    assert imported == (8, counts["nodes"], counts["edges"], 0, 0)
    assert _nodes(h, BOB) == _nodes(h, ALICE)
    states = {n["lifecycle_state"] for n in _nodes(h, BOB)}
    assert {LifecycleState.SUPERSEDED, LifecycleState.ARCHIVED} <= states
    assert any(n["node_type"] is NodeType.ENTITY for n in _nodes(h, BOB))
    assert _retrievals(h, BOB) == _retrievals(h, ALICE)
    assert h.engine.get_stats(BOB) == h.engine.get_stats(ALICE)

    again = _import(h, BOB, exported)
    assert (again.events, again.nodes, again.edges, again.skipped) == (0, 0, 0, len(lines) - 1)
    assert _export(h, BOB).splitlines()[1:] == lines[1:]


def test_an_export_imported_into_a_fresh_data_directory_retrieves_the_same(
    tmp_path: Path,
) -> None:
    source = embedded_harness(tmp_path / "source")
    target = embedded_harness(tmp_path / "target")
    _varied_memory(source)

    _import(target, ALICE, _export(source, ALICE))

    assert _nodes(target, ALICE) == _nodes(source, ALICE)
    assert _retrievals(target, ALICE) == _retrievals(source, ALICE)
    for h in (source, target):
        h.index.close()  # type: ignore[attr-defined]
        h.ledger.close()  # type: ignore[attr-defined]


# -- hostile input ---------------------------------------------------------------------------


def _records(h: Harness) -> list[dict[str, Any]]:
    _store(h, "Alice lives in Lisbon.", 2)
    _store(h, "Alice drinks green tea.", 3)
    return [json.loads(line) for line in _export(h, ALICE).splitlines()[1:]]


def _refused(h: Harness, records: list[dict[str, Any]], **batch: Any) -> str:
    """The 422 an import of `records` into BOB gets, after checking nothing was written."""
    fields = {"version": EXPORT_FORMAT_VERSION, "records": records, **batch}
    with pytest.raises(InvalidRequestError) as refused:
        h.engine.import_records(BOB, ImportBatch.model_validate(fields))
    assert h.ledger.count_events(BOB) == 0
    assert h.ledger.list_nodes(BOB) == []
    return refused.value.detail


def test_an_unknown_format_version_is_refused() -> None:
    h = memory_harness()
    detail = _refused(h, _records(h), version=2)
    assert "version 2 is not supported" in detail
    header = json.dumps({"kind": "header", "format": "prme-owner-export", "version": 9})
    with pytest.raises(LineError, match="line 1: has format version 9"):
        _import(h, BOB, header + "\n")


def test_each_bad_record_is_refused_with_its_line_and_nothing_of_the_batch_is_written() -> None:
    h = memory_harness()
    records = _records(h)  # two events, then their two nodes
    event, node = records[0], records[2]
    elsewhere = {"reference": "city", "kind": "city", "presentation": "Paris", "lookup": "Paris"}
    cases: list[tuple[list[dict[str, Any]], str]] = [
        ([event, {**node, "evidence_refs": [_uuid(1)]}], "line 3: names event"),
        ([event, event], "line 3: repeats the id of line 2"),
        ([event, {**event, "kind": "receipt"}], "line 3: `kind` must be one of"),
        ([event, {**event, "surprise": 1}], "line 3: unknown field 'surprise'"),
        ([{**event, "content": "Alice lives in Paris."}], "line 2: event content does not match"),
        ([event, {**node, "confidence": "very"}], "line 3: invalid node (fields: confidence)"),
        ([{**event, "metadata": {"x": float("nan")}}], "line 2: numbers must be finite"),
        ([event, {**node, "metadata": {"prme_value_bindings_v1": "no"}}], "line 3: metadata"),
        (
            [event, {**node, "metadata": {"prme_value_bindings_v1": [elsewhere]}}],
            "line 3: value binding 0 (reference 'city'): presentation does not occur",
        ),
        ([event, {**event, "content": "x" * 700_000}], "line 3: is larger than"),
    ]
    for batch, expected in cases:
        detail = _refused(h, batch)
        assert detail.startswith(expected), (expected, detail)
        assert "Lisbon" not in detail and "Paris" not in detail


def test_records_no_store_writes_are_refused_with_their_line(any_backend: Harness) -> None:
    """Ids that are not lowercase UUIDs could never be read or deleted through the API; an empty
    one made an export page forever (its cursor resumed before it), a long one was a retryable
    503 on DynamoDB (key size). A store's bounds hold for session labels and content too."""
    h = any_backend
    records = _records(h)
    event, node = records[0], records[2]
    long_text = "y" * 100_001
    cases: list[tuple[list[dict[str, Any]], str]] = [
        ([event, {**node, "id": ""}], "line 3: node id must be a lowercase UUID"),
        ([event, {**node, "id": "n" * 2000}], "line 3: node id must be a lowercase UUID"),
        ([event, {**node, "id": node["id"].upper()}], "line 3: node id must be"),
        ([{**event, "id": "my-event"}], "line 2: event id must be"),
        ([event, {**node, "evidence_refs": [event["id"], "e2"]}], "line 3: node evidence_refs"),
        ([event, {**node, "session_id": "s" * 257}], "line 3: node session_id must have"),
        ([{**event, "session_id": "chat\u200b"}], "line 2: event session_id must not contain"),
        (
            [{**event, "content": long_text, "content_sha256": _sha(long_text)}],
            "line 2: event content is longer than 100000",
        ),
    ]
    for batch, expected in cases:
        detail = _refused(h, batch)
        assert detail.startswith(expected), (expected, detail)
    _varied_memory(h)
    edges = [r for r in _export(h, ALICE).splitlines() if '"kind":"edge"' in r]
    edge = json.loads(edges[0])
    for end in ("source_node_id", "target_node_id"):
        detail = _refused(h, [{**edge, end: ""}])
        assert detail.startswith(f"line 2: edge {end} must be a lowercase UUID"), detail


def test_an_edge_to_a_node_not_imported_is_refused() -> None:
    h = memory_harness()
    _varied_memory(h)
    records = [json.loads(line) for line in _export(h, ALICE).splitlines()[1:]]
    edge = next(r for r in records if r["kind"] == "edge")
    detail = _refused(h, [{**edge, "target_node_id": _uuid(2)}], first_line=40)
    assert detail.startswith("line 40: names node")


def test_a_record_claiming_another_owner_lands_with_the_caller_only() -> None:
    h = memory_harness()
    records = _records(h)
    claimed = [{**r, "tenant_id": "t2", "owner_id": "mallory"} for r in records]

    report = h.engine.import_records(
        BOB, ImportBatch(version=EXPORT_FORMAT_VERSION, records=claimed)
    )

    assert (report.events, report.nodes) == (2, 2)
    assert h.ledger.count_events(BOB) == 2
    mallory = OwnerKey(tenant_id="t2", owner_id="mallory")
    assert h.ledger.count_events(mallory) == 0
    assert h.ledger.count_events(OwnerKey(tenant_id="t1", owner_id="mallory")) == 0


def test_an_event_id_the_owner_has_with_other_content_is_a_conflict() -> None:
    h = memory_harness()
    records = _records(h)
    h.engine.import_records(BOB, ImportBatch(version=EXPORT_FORMAT_VERSION, records=records))
    other = records[0] | {"content": "Changed.", "content_sha256": _sha("Changed.")}

    with pytest.raises(ConflictError, match="line 2: the owner has event"):
        h.engine.import_records(BOB, ImportBatch(version=EXPORT_FORMAT_VERSION, records=[other]))


def _uuid(number: int) -> str:
    return str(uuid.UUID(int=number))


def _sha(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()


def test_file_lines_that_are_not_records_name_their_line() -> None:
    h = memory_harness()
    text = _export(memory_harness(), ALICE)  # a header alone
    for bad, expected in (
        ("{not json", "line 3: is not JSON"),
        ("[1, 2]", "line 3: must be a JSON object"),
        ("x" * 700_000, "line 3: is larger than"),
    ):
        good = json.dumps(_records(memory_harness())[0])
        with pytest.raises(LineError, match=expected):
            _import(h, BOB, text + good + "\n" + bad + "\n")
        # The bad line's batch holds the good line before it: nothing was written.
        assert h.ledger.count_events(BOB) == 0
    with pytest.raises(LineError, match="line 1: the file is empty"):
        _import(h, BOB, "")


def test_export_pages_stay_within_their_byte_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    h = memory_harness()
    _varied_memory(h)
    monkeypatch.setattr(engine_portability, "EXPORT_PAGE_BYTES", 900)
    pages, cursor = [], None
    while True:
        page = h.engine.export_owner(ALICE, cursor)
        pages.append([portability.record_bytes(r) for r in page.records])
        if page.next_cursor is None:
            break
        cursor = page.next_cursor

    assert all(sum(sizes) <= 900 or len(sizes) == 1 for sizes in pages)
    assert any(len(sizes) > 1 for sizes in pages)
    assert sum(len(sizes) for sizes in pages) == len(_export(h, ALICE).splitlines()) - 1


def test_file_batches_are_bounded_and_number_their_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(portability, "IMPORT_BATCH_BYTES", 60)
    lines = [json.dumps({"kind": "event", "n": i, "pad": "x" * 20}) for i in range(5)]
    lines.insert(2, "")  # a blank line ends a batch: each batch's lines follow its first

    batches = list(portability.import_batches(lines, first_line=2))

    numbered = [
        (batch.first_line + i, record["n"])
        for batch in batches
        for i, record in enumerate(batch.records)
    ]
    assert numbered == [(2, 0), (3, 1), (5, 2), (6, 3), (7, 4)]
    assert all(
        sum(portability.record_bytes(r) for r in b.records) <= 60 or len(b.records) == 1
        for b in batches
    )


@pytest.mark.slow
def test_a_batch_larger_than_one_ledger_transaction_is_written_whole(any_backend: Harness) -> None:
    """40 nodes need 120 ledger writes (node, evidence link, index work): more than one
    DynamoDB transaction holds (100), so the import splits them."""
    h = any_backend
    records: list[dict[str, Any]] = []
    nodes: list[dict[str, Any]] = []
    for i in range(40):
        word = "".join(chr(97 + (i // 26**k) % 26) for k in range(3))
        content = f"Imported memory about the place called Zz{word}"
        node = note_node(content, node_id=_uuid(1000 + i)).model_copy(
            update={"evidence_refs": (_uuid(i),)}
        )
        event = {
            "kind": "event",
            "id": _uuid(i),
            "content": content,
            "content_sha256": node.content_sha256,
            "role": "user",
            "ingested_at": "2024-05-01T00:00:00Z",
        }
        records.append(event)
        nodes.append(portability.record_of(node))

    report = h.engine.import_records(
        BOB, ImportBatch(version=EXPORT_FORMAT_VERSION, records=records + nodes)
    )

    assert (report.events, report.nodes, report.pending) == (40, 40, 0)
    assert len(h.ledger.list_nodes(BOB)) == 40
    found = h.engine.retrieve(BOB, RetrieveInput(query="Zzlba", limit=3))
    assert "Imported memory about the place called Zzlba" in [r.content for r in found.results]

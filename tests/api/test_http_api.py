"""The HTTP contract: routes, status codes, auth matrix and error bodies, on the embedded backend."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from prme.backends.embedded.service import open_embedded
from prme.embedding.hashing import HashingEmbedder
from prme.http.app import create_app
from prme.http.auth import AuthPolicy
from prme.http.dependencies import ApiRuntime
from prme.model.enums import CredentialRole, WorkFailure
from tests.harness.engines import TOKEN_COUNTER
from tests.harness.http import TENANT, Api, bearer


def store(api: Api, headers: dict[str, str], **body: Any) -> dict[str, Any]:
    response = api.client.post(
        "/v1/store", json={"content": "I moved to Lisbon in May.", **body}, headers=headers
    )
    assert response.status_code == 200, response.text
    payload: dict[str, Any] = response.json()
    return payload


def test_store_with_every_field_round_trips(api: Api) -> None:
    body = {
        "content": "The telescope recorded the observation successfully.",
        "retrieval_content": "Telescope observation: success.",
        "role": "tool",
        "source_type": "tool_output",
        "epistemic_type": "observed",
        "session_id": "observation-42",
        "scope": "project",
        "event_time": "2024-03-10T07:30:00Z",
        "confidence": 0.81,
        "ttl_days": None,
        "metadata": {"instrument": "cobalt"},
        "speaker": "Cobalt",
        "node_type": "fact",
        "user_id": "alice",
    }
    stored = store(api, api.alice, **body)
    assert stored["processing_status"] == "completed"
    event = api.client.get(f"/v1/events/{stored['event_id']}", headers=api.alice).json()
    assert event["content"] == body["content"]
    assert event["speaker"] == "Cobalt"
    node = api.client.get(f"/v1/nodes/{stored['node_id']}", headers=api.alice).json()
    assert node["content"] == "Telescope observation: success."
    assert node["ttl_days"] is None and node["expires_at"] is None
    assert node["session_id"] == "observation-42"
    assert node["event_time"].startswith("2024-03-10T07:30:00")
    assert node["valid_from"].startswith("2024-03-10T07:30:00")
    assert node["metadata"]["instrument"] == "cobalt"
    nodes = api.client.get(f"/v1/events/{stored['event_id']}/nodes", headers=api.alice).json()
    assert [n["id"] for n in nodes] == [stored["node_id"]]
    status = api.client.get(
        f"/v1/events/{stored['event_id']}/processing-status", headers=api.alice
    ).json()
    assert status["processing_status"] == "completed"


@pytest.mark.parametrize(
    "body",
    [
        {"namespace": "work"},
        {"unknown": 1},
        {"event_time": "2024-03-10T07:30:00"},
        {"confidence": "NaN"},
        {"confidence": 2},
        {"metadata": {"prme_speaker_v1": "x"}},
        {"speaker": "bad\u202ename"},
        {"ttl_days": -3},
    ],
)
def test_invalid_store_bodies_are_422_and_write_nothing(api: Api, body: dict[str, Any]) -> None:
    response = api.client.post("/v1/store", json={"content": "x", **body}, headers=api.alice)
    assert response.status_code == 422
    assert isinstance(response.json()["detail"], list)
    retrieved = api.client.post("/v1/retrieve", json={"query": "x"}, headers=api.alice).json()
    assert retrieved["results"] == []


def test_binding_admission_failure_is_422(api: Api) -> None:
    response = api.client.post(
        "/v1/store",
        json={
            "content": "City: Paris",
            "value_bindings": [
                {"reference": "c1", "kind": "city", "presentation": "Lyon", "lookup": "LYS"}
            ],
        },
        headers=api.alice,
    )
    assert response.status_code == 422


def test_auth_matrix(api: Api) -> None:
    c = api.client
    assert c.post("/v1/store", json={"content": "x"}).status_code == 401
    assert (
        c.post("/v1/store", json={"content": "x"}, headers=bearer("prme_nope")).status_code == 401
    )
    assert (
        c.post(
            "/v1/store", json={"content": "x"}, headers={"Authorization": "Basic abc"}
        ).status_code
        == 401
    )
    # An owner key may omit user_id or name itself; another owner is 403.
    assert (
        c.post(
            "/v1/store", json={"content": "x", "user_id": "alice"}, headers=api.alice
        ).status_code
        == 200
    )
    assert (
        c.post("/v1/store", json={"content": "x", "user_id": "bob"}, headers=api.alice).status_code
        == 403
    )
    assert (
        c.post("/v1/retrieve", json={"query": "x", "user_id": "bob"}, headers=api.alice).status_code
        == 403
    )
    # An operator key must name user_id.
    assert c.post("/v1/store", json={"content": "x"}, headers=api.operator).status_code == 422
    assert (
        c.post(
            "/v1/store", json={"content": "x", "user_id": "carol"}, headers=api.operator
        ).status_code
        == 200
    )


def test_revoked_key_is_rejected(api: Api) -> None:
    issued = api.credentials.create(tenant_id=TENANT, owner_id="dave", role=CredentialRole.OWNER)
    headers = bearer(issued.secret)
    assert api.client.post("/v1/store", json={"content": "x"}, headers=headers).status_code == 200
    api.credentials.revoke(issued.credential.key_id)
    assert api.client.post("/v1/store", json={"content": "x"}, headers=headers).status_code == 401


def test_foreign_ids_are_404_and_malformed_ids_422(api: Api) -> None:
    stored = store(api, api.alice)
    retrieval = api.client.post("/v1/retrieve", json={"query": "Lisbon"}, headers=api.alice).json()
    request_id = retrieval["metrics"]["request_id"]
    paths = [
        f"/v1/events/{stored['event_id']}",
        f"/v1/events/{stored['event_id']}/nodes",
        f"/v1/events/{stored['event_id']}/processing-status",
        f"/v1/nodes/{stored['node_id']}",
        f"/v1/retrievals/{request_id}",
    ]
    for path in paths:
        assert api.client.get(path, headers=api.alice).status_code == 200, path
        assert api.client.get(path, headers=api.bob).status_code == 404, path
        assert api.client.get(path, headers=api.other_tenant).status_code == 404, path
        assert (
            api.client.get(path, headers=api.operator, params={"user_id": "bob"}).status_code == 404
        )
        assert (
            api.client.get(path, headers=api.operator, params={"user_id": "alice"}).status_code
            == 200
        )
    for template in ("/v1/events/{}", "/v1/nodes/{}", "/v1/retrievals/{}", "/v1/events/{}/nodes"):
        assert api.client.get(template.format("not-a-uuid"), headers=api.alice).status_code == 422
        assert api.client.get(template.format(uuid.uuid4()), headers=api.alice).status_code == 404


def test_retrieve_response_shape_and_receipt(api: Api) -> None:
    store(
        api,
        api.alice,
        speaker="Caroline",
        role="participant",
        content="I went to the support group.",
    )
    response = api.client.post(
        "/v1/retrieve",
        json={"query": "support group", "limit": 5, "token_budget": 500},
        headers=api.alice,
    )
    assert response.status_code == 200
    body = response.json()
    result = body["results"][0]
    for key in (
        "node_id",
        "content",
        "score",
        "semantic_relevance",
        "source_type",
        "scope",
        "session_id",
        "event_time",
        "valid_from",
        "evidence_refs",
    ):
        assert key in result
    assert "Caroline: I went to the support group." in body["bundle"]["context"]
    assert body["metrics"]["receipt_persisted"] is True
    receipt = api.client.get(
        f"/v1/retrievals/{body['metrics']['request_id']}", headers=api.alice
    ).json()
    from prme.retrieval.receipts import RetrievalReceipt

    assert RetrievalReceipt.model_validate(receipt).replay_ranking() == [
        r["node_id"] for r in body["results"]
    ]


@pytest.mark.parametrize(
    "body",
    [
        {"query": "x", "filters": {"source_types": ["rumour"]}},
        {"query": "x", "filters": {"exclude_node_types": ["memo"]}},
        {"query": "x", "limit": -1},
        {"query": "x", "max_per_source": 0},
        {"query": "x", "min_score": 1.5},
        {"query": "x", "ranking_multipliers": {"recency": 3.0}},
        {"query": ""},
        {"query": "x", "namespace": "n"},
    ],
)
def test_invalid_retrieve_bodies_are_422(api: Api, body: dict[str, Any]) -> None:
    assert api.client.post("/v1/retrieve", json=body, headers=api.alice).status_code == 422


def test_empty_source_types_returns_nothing(api: Api) -> None:
    store(api, api.alice)
    body = {"query": "Lisbon", "filters": {"source_types": []}}
    assert api.client.post("/v1/retrieve", json=body, headers=api.alice).json()["results"] == []


def test_value_bindings_in_retrieve_response(api: Api) -> None:
    store(
        api,
        api.alice,
        content='{"plan":"Current City: Salt Lake City(Utah)"}',
        retrieval_content="Confirmed plan\nCurrent City: Salt Lake City(Utah)",
        value_bindings=[
            {
                "reference": "current-city-1",
                "kind": "city",
                "presentation": "Salt Lake City(Utah)",
                "lookup": "Salt Lake City",
            }
        ],
    )
    body = api.client.post("/v1/retrieve", json={"query": "Which city?"}, headers=api.alice).json()
    assert [b["presentation"] for b in body["value_bindings"]] == ["Salt Lake City(Utah)"]
    assert body["value_bindings"][0]["lookup"] == "Salt Lake City"


def test_openapi_and_docs_are_served(api: Api) -> None:
    schema = api.client.get("/openapi.json").json()
    for path in (
        "/v1/store",
        "/v1/retrieve",
        "/v1/events/{event_id}",
        "/v1/nodes/{node_id}",
        "/v1/events/{event_id}/nodes",
        "/v1/events/{event_id}/processing-status",
        "/v1/retrievals/{request_id}",
    ):
        assert path in schema["paths"]
    store_responses = schema["paths"]["/v1/store"]["post"]["responses"]
    assert {"200", "401", "403", "422", "503"} <= set(store_responses)
    assert api.client.get("/docs").status_code == 200


def test_keyless_loopback_mode_acts_as_default_owner(tmp_path: Path) -> None:
    backend = open_embedded(tmp_path / "d", embedder=HashingEmbedder(), token_counter=TOKEN_COUNTER)
    app = create_app(
        ApiRuntime(
            engine=backend.engine,
            credentials=backend.credentials,
            auth=AuthPolicy(open_tenant="local"),
        )
    )
    # Keyless mode answers only requests addressed to this machine by a loopback name.
    with TestClient(app, base_url="http://127.0.0.1:8000") as client:
        stored = client.post("/v1/store", json={"content": "hello"}).json()
        assert client.get(f"/v1/events/{stored['event_id']}").json()["user_id"] == "default"
        # Once a key exists, keyless calls stop working.
        backend.credentials.create(tenant_id="local", owner_id="alice", role=CredentialRole.OWNER)
        assert client.post("/v1/store", json={"content": "hello"}).status_code == 401
    backend.close()


def test_store_idempotency_key_header(api: Api) -> None:
    key = str(uuid.uuid4())
    headers = {**api.alice, "Idempotency-Key": key}
    first = api.client.post("/v1/store", json={"content": "once only"}, headers=headers)
    again = api.client.post("/v1/store", json={"content": "once only"}, headers=headers)
    assert first.status_code == again.status_code == 200
    assert first.json() == again.json()
    changed = api.client.post("/v1/store", json={"content": "other"}, headers=headers)
    assert changed.status_code == 409
    bad = api.client.post(
        "/v1/store", json={"content": "x"}, headers={**api.alice, "Idempotency-Key": "nope"}
    )
    assert bad.status_code == 422


def test_fast_ingest_then_materialization_passes(api: Api) -> None:
    key = str(uuid.uuid4())
    body = {
        "items": [
            {
                "content": "We booked the ferry to Naxos.",
                "session_id": "trip",
                "event_time": "2024-05-01T10:00:00+02:00",
            },
            {"content": "Ferry leaves at 7am.", "role": "participant", "speaker": "Nikos"},
        ]
    }
    headers = {**api.alice, "Idempotency-Key": key}
    first = api.client.post("/v1/ingest/fast", json=body, headers=headers)
    assert first.status_code == 200, first.text
    ids = first.json()["event_ids"]
    assert first.json()["accepted"] == 2
    assert [
        api.client.get(f"/v1/events/{i}", headers=api.alice).json()["content"] for i in ids
    ] == [
        "We booked the ferry to Naxos.",
        "Ferry leaves at 7am.",
    ]
    # Retried after an ambiguous failure: the same ids, nothing written twice.
    assert api.client.post("/v1/ingest/fast", json=body, headers=headers).json()["event_ids"] == ids
    changed = {"items": list(reversed(body["items"]))}
    assert api.client.post("/v1/ingest/fast", json=changed, headers=headers).status_code == 409

    count = api.client.post(
        "/v1/materializations/process", json={"budget_ms": 0}, headers=api.alice
    )
    assert count.json() | {"budget_ms": 0, "budget_lowered": False} == count.json()
    assert count.json() | {"processed": 0, "pending": 2, "failed": 0} == count.json()
    done = api.client.post("/v1/materializations/process", json={}, headers=api.alice).json()
    assert done | {"processed": 2, "pending": 0, "failed": 0, "budget_lowered": False} == done
    status = api.client.get(f"/v1/events/{ids[1]}/processing-status", headers=api.alice).json()
    assert status["processing_status"] == "completed"
    hits = api.client.post("/v1/retrieve", json={"query": "ferry Naxos"}, headers=api.alice).json()
    assert {r["evidence_refs"][0] for r in hits["results"]} == set(ids)


@pytest.mark.parametrize(
    "body",
    [
        {"items": []},
        {"items": [{"content": "x"}] * 50},
        {"items": [{"content": "x", "retrieval_content": "y"}]},
        {"items": [{"content": "x"}], "namespace": "n"},
    ],
)
def test_invalid_fast_ingest_is_422_and_writes_nothing(api: Api, body: dict[str, Any]) -> None:
    response = api.client.post("/v1/ingest/fast", json=body, headers=api.alice)
    assert response.status_code == 422
    count = api.client.post(
        "/v1/materializations/process", json={"budget_ms": 0}, headers=api.alice
    )
    assert count.json()["pending"] == 0


def test_too_large_batch_names_the_limit(api: Api) -> None:
    response = api.client.post(
        "/v1/ingest/fast", json={"items": [{"content": "x"}] * 50}, headers=api.alice
    )
    assert "at most 49 items" in response.text


def test_operators_must_name_the_owner_for_materialization(api: Api) -> None:
    assert (
        api.client.post("/v1/materializations/process", json={}, headers=api.operator).status_code
        == 422
    )
    named = api.client.post(
        "/v1/materializations/process", json={"user_id": "alice"}, headers=api.operator
    )
    assert named.status_code == 200
    assert (
        api.client.post(
            "/v1/materializations/process", json={"budget_ms": -1}, headers=api.alice
        ).status_code
        == 422
    )


def test_lifecycle_routes(api: Api) -> None:
    stored = store(api, api.alice, content="I prefer aisle seats")
    node = stored["node_id"]
    key = str(uuid.uuid4())
    headers = {**api.alice, "Idempotency-Key": key}
    promoted = api.client.put(f"/v1/nodes/{node}/promote", headers=headers)
    assert promoted.status_code == 200
    assert promoted.json()["lifecycle_state"] == "stable"
    assert api.client.put(f"/v1/nodes/{node}/promote", headers=headers).status_code == 200
    assert api.client.put(f"/v1/nodes/{node}/promote", headers=api.alice).status_code == 409
    assert api.client.put(f"/v1/nodes/{node}/archive", headers=headers).status_code == 409
    reinforced = api.client.put(
        f"/v1/nodes/{node}/reinforce", json={"evidence_id": stored["event_id"]}, headers=api.alice
    )
    assert reinforced.status_code == 200
    assert reinforced.json()["confidence"] > promoted.json()["confidence"]
    assert api.client.put(f"/v1/nodes/{node}/reinforce", headers=api.alice).status_code == 200
    assert api.client.put(f"/v1/nodes/{node}/archive", headers=api.bob).status_code == 404
    assert api.client.put("/v1/nodes/not-a-uuid/archive", headers=api.alice).status_code == 422
    assert (
        api.client.put(
            f"/v1/nodes/{node}/archive", headers={**api.alice, "Idempotency-Key": "x"}
        ).status_code
        == 422
    )
    archived = api.client.put(f"/v1/nodes/{node}/archive", headers=api.alice)
    assert archived.json()["lifecycle_state"] == "archived"


def test_supersedence_route(api: Api) -> None:
    old = store(api, api.alice, content="My dentist is Dr. Alves")
    new = store(api, api.alice, content="My new dentist is Dr. Reis")
    body = {
        "old_node_id": old["node_id"],
        "new_node_id": new["node_id"],
        "evidence_id": new["event_id"],
    }
    response = api.client.post("/v1/supersedences", json=body, headers=api.alice)
    assert response.status_code == 200, response.text
    assert [n["lifecycle_state"] for n in response.json()] == ["superseded", "tentative"]
    assert api.client.post("/v1/supersedences", json=body, headers=api.alice).status_code == 200
    changed = {**body, "evidence_id": old["event_id"]}
    assert api.client.post("/v1/supersedences", json=changed, headers=api.alice).status_code == 422
    assert api.client.post("/v1/supersedences", json=body, headers=api.bob).status_code == 404
    assert (
        api.client.post("/v1/supersedences", json={**body, "x": 1}, headers=api.alice).status_code
        == 422
    )


def test_ingest_routes_and_the_503_receipt_shape(api: Api) -> None:
    body = {"content": "We ran 12 km on Sunday.", "wait_for_extraction": True}
    response = api.client.post("/v1/ingest", json=body, headers=api.alice)
    assert response.status_code == 200, response.text
    event_id = response.json()["event_id"]
    assert response.json()["extraction_status"] == "completed"
    status = api.client.get(f"/v1/events/{event_id}/extraction-status", headers=api.alice).json()
    assert status["extraction_status"] == "completed"
    assert (
        api.client.get(f"/v1/events/{event_id}/extraction-status", headers=api.bob).status_code
        == 404
    )
    retried = api.client.post(f"/v1/events/{event_id}/retry-extraction", headers=api.alice)
    assert retried.json()["extraction_status"] == "completed"
    pending = api.client.post(
        "/v1/ingest", json={"content": "Ana moved to Porto."}, headers=api.alice
    )
    assert pending.json()["extraction_status"] == "pending"
    processed = api.client.post("/v1/extractions/process", json={}, headers=api.alice).json()
    assert processed | {"processed": 1, "pending": 0, "failed": 0} == processed
    assert (
        api.client.post(
            "/v1/ingest", json={"content": "x", "node_type": "fact"}, headers=api.alice
        ).status_code
        == 422
    )
    assert (
        api.client.post(
            "/v1/ingest", json={"content": "x", "namespace": "n"}, headers=api.alice
        ).status_code
        == 422
    )


def test_failed_waiting_ingest_answers_the_accepted_503_receipt(tmp_path: Path) -> None:
    from datetime import datetime

    from prme.engine.deps import EngineDeps
    from prme.engine.service import MemoryEngine
    from prme.errors import ExtractionUnavailableError
    from prme.model.extraction import Extraction

    class TimingOut:
        name = "timing-out"

        def extract(self, text: str, *, reference_time: datetime) -> Extraction:
            raise ExtractionUnavailableError(
                "upstream said: quota for sk-123", reason_code=WorkFailure.EXTRACTOR_TIMEOUT
            )

    backend = open_embedded(tmp_path / "d", embedder=HashingEmbedder(), token_counter=TOKEN_COUNTER)
    engine = MemoryEngine(EngineDeps(**{**backend.engine.deps.__dict__, "extractor": TimingOut()}))
    app = create_app(
        ApiRuntime(
            engine=engine, credentials=backend.credentials, auth=AuthPolicy(open_tenant="local")
        )
    )
    with TestClient(app, base_url="http://localhost") as client:
        response = client.post(
            "/v1/ingest", json={"content": "We ran 12 km.", "wait_for_extraction": True}
        )
        assert response.status_code == 503
        body = response.json()
        assert body["accepted"] is True
        assert body["reason_code"] == "Timeout"
        assert body["detail"].startswith("Source saved; processing did not complete.")
        assert "sk-123" not in response.text
        # The receipt's event is real and its work can be inspected.
        assert client.get(f"/v1/events/{body['event_id']}").status_code == 200
        status = client.get(f"/v1/events/{body['event_id']}/extraction-status").json()
        assert status["extraction_status"] == "pending"
    backend.close()

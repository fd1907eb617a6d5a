"""GET /v1/alias-proposals, POST .../review and GET /v1/nodes/{id}/edges over HTTP."""

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
from prme.model.enums import CredentialRole
from tests.harness.engines import TOKEN_COUNTER
from tests.harness.http import TENANT, Api, bearer

REVIEWER = "human:catalog-owner"


def entity(api: Api, headers: dict[str, str], name: str, **body: Any) -> str:
    response = api.client.post(
        "/v1/store", json={"content": name, "node_type": "entity", **body}, headers=headers
    )
    assert response.status_code == 200, response.text
    node_id: str = response.json()["node_id"]
    return node_id


def proposals(api: Api, headers: dict[str, str], **params: Any) -> list[dict[str, Any]]:
    response = api.client.get("/v1/alias-proposals", params=params, headers=headers)
    assert response.status_code == 200, response.text
    items: list[dict[str, Any]] = response.json()["items"]
    return items


def post_review(api: Api, headers: dict[str, str], proposal_id: str, **body: Any) -> Any:
    return api.client.post(
        f"/v1/alias-proposals/{proposal_id}/review",
        json={"reviewer_id": REVIEWER, **body},
        headers=headers,
    )


def scanned_pair(api: Api, *names: str) -> tuple[list[str], dict[str, Any]]:
    """Alice's entities, scanned by the maintenance pass; the one proposal it made."""
    node_ids = [entity(api, api.alice, name) for name in names]
    engine = api.client.app.state.runtime.engine  # type: ignore[attr-defined]
    assert engine.propose_aliases(None).proposals_created == 1
    [item] = proposals(api, api.alice)
    return node_ids, item


def test_listing_shows_the_decoded_proposal_and_its_journal(api: Api) -> None:
    node_ids, item = scanned_pair(api, "IBM", "International Business Machines")
    assert item["status"] == "pending"
    assert item["review"] is None and item["review_journal"] is None
    proposal = item["proposal"]
    assert {n["node_id"] for n in proposal["nodes"]} == set(node_ids)
    assert {n["name"] for n in proposal["nodes"]} == {"IBM", "International Business Machines"}
    assert proposal["signals"][0]["name"] == "acronym"
    assert proposal["scope"] == "personal"
    journal = item["proposal_journal"]
    assert journal["id"] == f"alias_proposal:{item['proposal_operation_id']}"
    assert journal["operation"] == "alias_proposal"
    assert journal["payload"] == proposal
    assert set(journal) == {"id", "operation", "subject_id", "created_at", "payload", "checksum"}
    assert proposals(api, api.alice, status="accepted") == []
    assert proposals(api, api.alice, scope="project") == []
    assert proposals(api, api.alice, status="pending", scope="personal", limit=1) == [item]
    # An operator names the owner; another owner or tenant sees nothing.
    assert proposals(api, api.operator, user_id="alice") == [item]
    assert proposals(api, api.bob) == []
    assert proposals(api, api.other_tenant) == []


def test_accepting_adds_a_verified_traversable_link(api: Api) -> None:
    node_ids, item = scanned_pair(api, "Dr. Smith", "John Smith")
    pid = item["proposal_operation_id"]
    response = post_review(api, api.alice, pid, decision="accepted", reason="Same doctor")
    assert response.status_code == 200, response.text
    accepted = response.json()
    assert accepted["status"] == "accepted"
    assert accepted["review"]["reviewer_id"] == REVIEWER
    assert accepted["review_journal"]["id"] == f"alias_review:{pid}"
    for node_id in node_ids:
        edges = api.client.get(f"/v1/nodes/{node_id}/edges", headers=api.alice).json()
        assert [(e["edge_type"], e["verified"]) for e in edges] == [("alias_of", True)]
        assert edges[0]["id"] == accepted["review"]["edge_id"]
        assert edges[0]["operation_id"] == f"alias_review:{pid}"
        node = api.client.get(f"/v1/nodes/{node_id}", headers=api.alice).json()
        assert node["lifecycle_state"] == "tentative"  # still active, unchanged
    # The identical retry answers with the first decision; another decision is a conflict.
    again = post_review(api, api.alice, pid, decision="accepted", reason="Same doctor")
    assert again.status_code == 200
    assert again.json() == accepted
    conflict = post_review(api, api.alice, pid, decision="rejected", reason="Not the same")
    assert conflict.status_code == 409
    assert proposals(api, api.alice) == [accepted]


def test_rejecting_needs_a_reason_and_links_nothing(api: Api) -> None:
    node_ids, item = scanned_pair(api, "IBM", "International Business Machines")
    pid = item["proposal_operation_id"]
    missing = post_review(api, api.alice, pid, decision="rejected")
    assert missing.status_code == 422
    assert proposals(api, api.alice)[0]["status"] == "pending"
    response = post_review(api, api.alice, pid, decision="rejected", reason="A band, not a firm")
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "rejected"
    assert response.json()["review"]["edge_id"] is None
    edges = api.client.get(f"/v1/nodes/{node_ids[0]}/edges", headers=api.alice)
    assert edges.status_code == 200
    assert edges.json() == []


@pytest.mark.parametrize(
    "body",
    [
        {"decision": "accepted", "unknown": 1},
        {"decision": "merged"},
        {"decision": "accepted", "reviewer_id": ""},
        {"decision": "accepted", "reviewer_id": "x" * 201},
        {"decision": "rejected", "reason": "x" * 2001},
        {"decision": "rejected", "reason": "   "},
    ],
)
def test_invalid_reviews_are_422_and_write_nothing(api: Api, body: dict[str, Any]) -> None:
    _, item = scanned_pair(api, "IBM", "International Business Machines")
    response = post_review(api, api.alice, item["proposal_operation_id"], **body)
    assert response.status_code == 422, response.text
    assert proposals(api, api.alice)[0]["status"] == "pending"


def test_ids_of_others_are_404_and_naming_another_user_is_403(api: Api) -> None:
    node_ids, item = scanned_pair(api, "IBM", "International Business Machines")
    pid = item["proposal_operation_id"]
    accept = {"decision": "accepted"}
    for headers in (api.bob, api.other_tenant):
        assert post_review(api, headers, pid, **accept).status_code == 404
        edges = api.client.get(f"/v1/nodes/{node_ids[0]}/edges", headers=headers)
        assert edges.status_code == 404
    assert post_review(api, api.alice, str(uuid.uuid4()), **accept).status_code == 404
    assert post_review(api, api.alice, "not-a-uuid", **accept).status_code == 422
    assert api.client.get("/v1/nodes/not-a-uuid/edges", headers=api.alice).status_code == 422
    assert post_review(api, api.alice, pid, user_id="bob", **accept).status_code == 403
    listing = api.client.get("/v1/alias-proposals", params={"user_id": "bob"}, headers=api.alice)
    assert listing.status_code == 403
    for params in ({"limit": 0}, {"limit": 501}, {"status": "merged"}, {"scope": "galaxy"}):
        response = api.client.get("/v1/alias-proposals", params=params, headers=api.alice)
        assert response.status_code == 422, params
    assert api.client.get("/v1/alias-proposals").status_code == 401
    assert proposals(api, api.alice)[0]["status"] == "pending"


def test_accepting_after_a_node_was_archived_is_a_409(api: Api) -> None:
    node_ids, item = scanned_pair(api, "IBM", "International Business Machines")
    archived = api.client.put(f"/v1/nodes/{node_ids[1]}/archive", headers=api.alice)
    assert archived.status_code == 200
    response = post_review(api, api.alice, item["proposal_operation_id"], decision="accepted")
    assert response.status_code == 409
    assert api.client.get(f"/v1/nodes/{node_ids[0]}/edges", headers=api.alice).json() == []


@pytest.mark.parametrize("role", [CredentialRole.OWNER, CredentialRole.OPERATOR])
def test_a_review_records_the_key_that_made_it(api: Api, role: CredentialRole) -> None:
    # Given a reviewer with a key of its own
    issued = api.credentials.create(
        tenant_id=TENANT, owner_id="alice" if role is CredentialRole.OWNER else None, role=role
    )
    reviewer = bearer(issued.secret)
    _, item = scanned_pair(api, "IBM", "International Business Machines")
    pid = item["proposal_operation_id"]
    # A body cannot name the key: the field is not part of the request
    forged = post_review(
        api, reviewer, pid, decision="accepted", user_id="alice", reviewed_by_key_id="k-forged"
    )
    assert forged.status_code == 422
    # When it decides under a label that names someone else
    response = post_review(
        api, reviewer, pid, decision="accepted", user_id="alice", reviewer_id="human:bob"
    )
    assert response.status_code == 200, response.text
    # Then the review keeps the label but records the caller's key and role
    review = response.json()["review"]
    assert review["reviewer_id"] == "human:bob"
    assert review["reviewed_by_key_id"] == issued.credential.key_id
    assert review["reviewed_by_role"] == role.value
    assert proposals(api, api.alice)[0]["review"] == review
    assert response.json()["review_journal"]["payload"] == review


def test_a_keyless_local_review_records_no_key(tmp_path: Path) -> None:
    # Given the keyless loopback mode of `prme serve` (no key exists)
    backend = open_embedded(tmp_path / "d", embedder=HashingEmbedder(), token_counter=TOKEN_COUNTER)
    runtime = ApiRuntime(
        engine=backend.engine,
        credentials=backend.credentials,
        auth=AuthPolicy(open_tenant="local"),
    )
    try:
        # A loopback Host, as a local caller sends: keyless mode is for loopback only.
        with TestClient(create_app(runtime), base_url="http://127.0.0.1:8765") as client:
            for name in ("IBM", "International Business Machines"):
                client.post("/v1/store", json={"content": name, "node_type": "entity"})
            assert backend.engine.propose_aliases(None).proposals_created == 1
            [item] = client.get("/v1/alias-proposals").json()["items"]
            response = client.post(
                f"/v1/alias-proposals/{item['proposal_operation_id']}/review",
                json={"decision": "accepted", "reviewer_id": "human:admin"},
            )
        # Then the review says plainly that no key made it
        review = response.json()["review"]
        assert (review["reviewed_by_key_id"], review["reviewed_by_role"]) == (None, "operator")
    finally:
        backend.close()

"""The IAM-enforced scenarios: each Lambda function's work run under its role, and which
scenarios exercise each function's grants (shared by the tests and the IAM removal benchmark)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import Any, cast

import pytest

from prme.model.enums import CredentialRole
from tests.harness.iam import IamDeployment, enter_function
from tests.harness.lambda_events import (
    ALICE,
    TENANT,
    FakeLambdaContext,
    load_event,
    sqs_records,
    until_searchable,
)

RunAs = Callable[[str], None]


def role_switcher(
    deployment: IamDeployment,
    monkeypatch: pytest.MonkeyPatch,
    statements: Mapping[str, list[dict[str, Any]]] | None = None,
) -> RunAs:
    """`run_as(function)`: from then on, handlers run as `function` would be deployed, with its
    environment and its role's statements (or the ones given for it here)."""

    def run_as(function: str) -> None:
        if function not in deployment.keys:
            given = (statements or {}).get(function)
            deployment.keys[function] = deployment.create_user(function, given)
        enter_function(monkeypatch, deployment.environment(function, deployment.keys[function]))

    return run_as


def api_key(deployment: IamDeployment) -> str:
    """Alice's owner key, issued as an operator would (outside every function's role)."""
    from prme.backends.aws.dynamodb_ledger import DynamoDbLedger
    from prme.backends.clock import SystemClock
    from prme.engine.credentials import CredentialService

    ledger = DynamoDbLedger(deployment.admin("dynamodb"), deployment.binding.table_name)
    issued = CredentialService(ledger, SystemClock()).create(
        tenant_id=TENANT, owner_id="alice", role=CredentialRole.OWNER
    )
    return issued.secret


def operator_key(deployment: IamDeployment) -> str:
    """An operator key of alice's tenant, issued outside every function's role."""
    from prme.backends.aws.dynamodb_ledger import DynamoDbLedger
    from prme.backends.clock import SystemClock
    from prme.engine.credentials import CredentialService

    ledger = DynamoDbLedger(deployment.admin("dynamodb"), deployment.binding.table_name)
    issued = CredentialService(ledger, SystemClock()).create(
        tenant_id=TENANT, owner_id=None, role=CredentialRole.OPERATOR
    )
    return issued.secret


def age_pending_work(deployment: IamDeployment) -> None:
    """Make Alice's pending work look untouched since before its queue could still be
    delivering it (the sweeper waits that long), as the clock would see it later."""
    from datetime import timedelta

    from prme.backends.aws.dynamodb_ledger import DynamoDbLedger
    from prme.backends.aws.resources import queue_specs

    ledger = DynamoDbLedger(deployment.admin("dynamodb"), deployment.binding.table_name)
    specs = queue_specs(deployment.binding.queue_prefix)
    for family in ("materialize", "extract"):
        span = specs[family].delivery_span_s
        for work in ledger.list_pending_work(ALICE, 100, family=family):
            earlier = work.updated_at - timedelta(seconds=span + 1)
            ledger.save_work(work.model_copy(update={"updated_at": earlier}))


def api_call(
    key: str,
    path: str,
    body: dict[str, Any] | None = None,
    *,
    method: str | None = None,
    query: str = "",
) -> tuple[int, dict[str, Any]]:
    """A POST with `body` through API Gateway's v2 event, or a GET without one (or `method`)."""
    from functions import api

    event = load_event("apigw_v2_store.json" if body is not None else "apigw_v2_get_event.json")
    event["headers"]["authorization"] = f"Bearer {key}"
    event["rawPath"] = event["requestContext"]["http"]["path"] = path
    event["rawQueryString"] = query
    if method is not None:
        event["requestContext"]["http"]["method"] = method
    if body is not None:
        event["body"] = json.dumps(body)
    response = api.handler(event, FakeLambdaContext())
    return response["statusCode"], json.loads(response["body"])


def retrieved_nodes(key: str, query: str, expected: set[str]) -> dict[str, str]:
    """The node id of each content a retrieve through the API finds, once `expected` is
    searchable (or a bound passed)."""

    def read() -> dict[str, str]:
        status, body = api_call(key, "/v1/retrieve", {"query": query})
        assert status == 200, body
        return {hit["content"]: hit["node_id"] for hit in body["results"]}

    return until_searchable(read, lambda found: set(found) == expected)


def retrieved_contents(key: str, query: str, expected: set[str]) -> set[str]:
    return set(retrieved_nodes(key, query, expected))


def drain(deployment: IamDeployment, queue: str) -> list[str]:
    sqs, bodies = deployment.admin("sqs"), list[str]()
    while True:
        response = sqs.receive_message(
            QueueUrl=deployment.queue_urls[queue],
            MaxNumberOfMessages=10,
            MessageAttributeNames=["All"],
        )
        messages = response.get("Messages", [])
        if not messages:
            return bodies
        for message in messages:
            reason = message.get("MessageAttributes", {}).get("prme_reason", {})
            bodies.append(reason.get("StringValue", message["Body"]))
            sqs.delete_message(
                QueueUrl=deployment.queue_urls[queue], ReceiptHandle=message["ReceiptHandle"]
            )


def ingest_rejects_into_its_dlq(deployment: IamDeployment, run_as: RunAs) -> None:
    from functions import ingest_consumer

    run_as("ingest")
    event = sqs_records("sqs_ingest_batch.json", ["not json at all"])
    # Before the DLQ grant: GetQueueUrl on the DLQ was denied, the record failed and was
    # retried until SQS's redrive moved it, without its reason.
    assert ingest_consumer.handler(event, FakeLambdaContext()) == {"batchItemFailures": []}
    assert drain(deployment, "ingest-dlq") == ["invalid_message:not_json"]


def api_stores_and_retrieves(deployment: IamDeployment, run_as: RunAs) -> None:
    key = api_key(deployment)
    run_as("api")
    status, stored = api_call(key, "/v1/store", {"content": "I moved to Lisbon in May."})
    assert status == 200, stored
    assert stored["processing_status"] == "completed"
    expected = {"I moved to Lisbon in May."}
    assert retrieved_contents(key, "Lisbon", expected) == expected
    status, progress = api_call(key, f"/v1/events/{stored['event_id']}/processing-status")
    assert (status, progress["processing_status"]) == (200, "completed"), progress
    # An ingest announces its extraction; a fast ingest announces its materialization.
    status, ingested = api_call(key, "/v1/ingest", {"content": "I adopted 2 cats last week."})
    assert (status, ingested["extraction_status"]) == (200, "pending"), ingested
    assert len(drain(deployment, "extract")) == 1
    status, fast = api_call(key, "/v1/ingest/fast", {"items": [{"content": "a quick note"}]})
    assert (status, fast["accepted"]) == (200, 1), fast
    assert len(drain(deployment, "materialize")) == 1
    # A caller may run the pass itself: it closes the work item in the API function.
    status, report = api_call(key, "/v1/materializations/process", {})
    assert (status, report["processed"], report["failed"]) == (200, 1, 0), report
    # The inspector's reads under the same role: who the key is, the receipt listing (its
    # own partition), a receipt's rebuilt context, the receipts that ranked a memory, and the
    # batch read of memories (BatchGetItem).
    status, me = api_call(key, "/v1/me")
    assert (status, me["role"]) == (200, "owner"), me
    status, listed = api_call(key, "/v1/retrievals")
    assert status == 200 and listed["retrievals"], listed
    request_id = listed["retrievals"][0]["request_id"]
    status, context = api_call(key, f"/v1/retrievals/{request_id}/context")
    assert (status, context["matches"]) == (200, True), context
    status, ranked = api_call(key, f"/v1/nodes/{stored['node_id']}/retrievals")
    assert status == 200 and ranked["retrievals"], ranked
    status, batch = api_call(key, "/v1/nodes/batch-get", {"node_ids": [stored["node_id"]]})
    assert (status, [n["id"] for n in batch["items"]]) == (200, [stored["node_id"]]), batch
    # Deleting one memory: ledger items in a transaction of Deletes, then index documents.
    path = f"/v1/events/{stored['event_id']}"
    status, deleted = api_call(key, path, method="DELETE")
    assert (status, deleted["deleted_node_ids"]) == (200, [stored["node_id"]]), deleted
    assert api_call(key, path)[0] == 404


def api_keeps_ranking_profiles(deployment: IamDeployment, run_as: RunAs) -> None:
    """A profile saved, activated, read by a retrieval and in its receipt, listed and
    deactivated: the profile, slot-state and change items in the owner's partition (PutItem,
    GetItem, Query, a conditional TransactWriteItems) under the api role's grants alone."""
    key = api_key(deployment)
    run_as("api")
    evaluation = {
        "holdout_size": 30,
        "metric": "ndcg@10",
        "baseline_metric": 0.5,
        "proposal_metric": 0.7,
        "gain": 0.2,
        "recommended": True,
        "input_checksum": "e" * 64,
    }
    status, profile = api_call(
        key, "/v1/learning/profiles", {"weights": {"rrf_k": 15}, "evaluation": evaluation}
    )
    assert status == 200, profile
    profile_id = profile["profile_id"]
    status, state = api_call(key, f"/v1/learning/profiles/{profile_id}/activate", {})
    assert (status, state["active_profile_id"]) == (200, profile_id), state
    status, retrieval = api_call(key, "/v1/retrieve", {"query": "anything at all"})
    assert (status, retrieval["metrics"]["ranking_profile_id"]) == (200, profile_id), retrieval
    status, listed = api_call(key, "/v1/learning/profiles")
    assert (status, [p["profile_id"] for p in listed["items"]]) == (200, [profile_id]), listed
    status, active = api_call(key, "/v1/learning/profiles/active")
    assert (status, active["state"]) == (200, state), active
    status, off = api_call(
        key, "/v1/learning/profiles/deactivate", {"change_id": state["change_id"], "scopes": []}
    )
    assert (status, off["active_profile_id"]) == (200, None), off
    status, history = api_call(key, "/v1/learning/profiles/history", query="limit=5")
    changes = cast(list[dict[str, Any]], history)
    assert (status, [h["action"] for h in changes]) == (200, ["deactivate", "activate"]), history


def ingest_then_extract(deployment: IamDeployment, run_as: RunAs) -> None:
    from functions import extractor

    key = api_key(deployment)
    run_as("api")
    content = {"content": "I adopted 2 cats from Lisbon Animal Rescue last week."}
    status, ingested = api_call(key, "/v1/ingest", content)
    assert status == 200, ingested

    run_as("extractor")
    batch = sqs_records("sqs_materialize_batch.json", drain(deployment, "extract"))
    assert extractor.handler(batch, FakeLambdaContext()) == {"batchItemFailures": []}

    run_as("api")
    status, body = api_call(key, f"/v1/events/{ingested['event_id']}/extraction-status")
    assert (status, body["extraction_status"]) == (200, "completed"), body


def api_erases_a_user(deployment: IamDeployment, run_as: RunAs) -> None:
    key, operator = api_key(deployment), operator_key(deployment)
    run_as("api")
    status, stored = api_call(key, "/v1/store", {"content": "Alice keeps bees on the roof."})
    assert status == 200, stored
    status, receipt = api_call(
        operator, "/v1/owner", method="DELETE", query="user_id=alice&confirm=alice"
    )
    assert (status, receipt["complete"]) == (200, True), receipt
    assert receipt["removed"]["events"] == 1 and receipt["removed"]["api_keys"] == 1
    assert receipt["removed"]["index_documents"] == 1


IMPORTED_ITEMS = [
    {"content": "Imported note one"},
    {"content": "Imported note two", "speaker": "Caroline"},
]


def import_through_the_queue(deployment: IamDeployment, run_as: RunAs, key: str) -> str:
    """The api saves an import job and sends its chunk; the ingest consumer commits it (reading
    the job, recording its progress). The import's id."""
    from functions import ingest_consumer

    run_as("api")
    status, job = api_call(key, "/v1/imports", {"items": IMPORTED_ITEMS})
    assert (status, job["chunks_total"]) == (202, 1), job
    chunks = drain(deployment, "ingest")
    assert len(chunks) == 1
    run_as("ingest")
    imported = ingest_consumer.handler(
        sqs_records("sqs_ingest_batch.json", chunks), FakeLambdaContext()
    )
    assert imported == {"batchItemFailures": []}
    return str(job["import_id"])


def import_materialize_retrieve(deployment: IamDeployment, run_as: RunAs) -> None:
    from functions import materializer

    key = api_key(deployment)
    import_id = import_through_the_queue(deployment, run_as, key)
    run_as("api")
    status, job = api_call(key, f"/v1/imports/{import_id}")
    assert (status, job["status"], job["items_accepted"]) == (200, "completed", 2), job
    work = drain(deployment, "materialize")
    assert len(work) == 2

    run_as("materializer")
    batch = sqs_records("sqs_materialize_batch.json", work)
    assert materializer.handler(batch, FakeLambdaContext()) == {"batchItemFailures": []}

    run_as("api")
    expected = {"Imported note one", "Imported note two"}
    found = retrieved_nodes(key, "Imported note", expected)
    assert set(found) == expected
    # A lifecycle move announces its node's index update, which the materializer reads the
    # existing node for (a batched read) and rewrites.
    status, moved = api_call(key, f"/v1/nodes/{found['Imported note one']}/archive", method="PUT")
    assert (status, moved["lifecycle_state"]) == (200, "archived"), moved
    update = drain(deployment, "materialize")
    assert len(update) == 1
    run_as("materializer")
    rewritten = materializer.handler(
        sqs_records("sqs_materialize_batch.json", update), FakeLambdaContext()
    )
    assert rewritten == {"batchItemFailures": []}


def maintenance_announces_overdue_work(deployment: IamDeployment, run_as: RunAs) -> None:
    from functions import maintenance

    key = api_key(deployment)
    import_through_the_queue(deployment, run_as, key)
    run_as("api")
    api_call(key, "/v1/ingest", {"content": "We ran 12 km on Sunday."})
    for name in ("International Business Machines", "IBM"):
        api_call(key, "/v1/store", {"content": name, "node_type": "entity"})
    # Every announcement is lost.
    announced = {queue: drain(deployment, queue) for queue in ("materialize", "extract")}
    age_pending_work(deployment)

    run_as("maintenance")
    result = maintenance.handler(load_event("eventbridge_schedule.json"), FakeLambdaContext())
    assert result["overdue_announced"] == 3
    assert result["alias_proposals_created"] == 1
    for queue, bodies in announced.items():
        assert sorted(drain(deployment, queue)) == sorted(bodies), queue


# Which scenarios run each function: a grant the function needs fails at least one of them.
SCENARIOS: dict[str, tuple[Callable[[IamDeployment, RunAs], None], ...]] = {
    "api": (
        api_stores_and_retrieves,
        import_materialize_retrieve,
        ingest_then_extract,
        maintenance_announces_overdue_work,
    ),
    "ingest": (
        ingest_rejects_into_its_dlq,
        import_materialize_retrieve,
        maintenance_announces_overdue_work,
    ),
    "materializer": (import_materialize_retrieve,),
    "extractor": (ingest_then_extract,),
    "maintenance": (maintenance_announces_overdue_work,),
}


def api_holds_a_tenant_to_its_limits(deployment: IamDeployment, run_as: RunAs) -> None:
    """The provider's limits for the tenant (set outside every function's role) are enforced
    by the api function with its own grants: a refusal is the limit's 403, never a 503."""
    from prme.backends.aws.dynamodb_limits import DynamoDbLimits
    from prme.model.limits import TenantLimits

    key = api_key(deployment)
    limits = DynamoDbLimits(deployment.admin("dynamodb"), deployment.binding.table_name)
    limits.put_tenant_limits(TENANT, TenantLimits(requests_per_second=20, stored_records=1))
    run_as("api")
    started = time.time()
    assert api_call(key, "/v1/store", {"content": "I moved to Lisbon in May."})[0] == 200
    status, refused = api_call(key, "/v1/store", {"content": "I moved to Porto in June."})
    assert (status, refused.get("error"), refused.get("limit")) == (
        403,
        "quota_exceeded",
        "stored_records",
    ), refused
    status, report = api_call(key, "/v1/limits")
    assert status == 200, report
    used = {usage["limit"]: usage["used"] for usage in report["limits"]}
    assert used["stored_records"] == 1
    # The request rate counts the current one-second window: the two stores, when the three
    # calls fell in one second (a slow first store can carry them across a boundary).
    if int(time.time()) == int(started):
        assert used["requests_per_second"] == 2

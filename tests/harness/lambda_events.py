"""Lambda invocations for tests: real event payloads, a Lambda context, and the deployed
environment on the local AWS (the `deployed` fixture)."""

from __future__ import annotations

import copy
import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from prme.backends.aws.bootstrap import bootstrap
from prme.engine.credentials import CredentialService
from prme.engine.work_refs import WorkRef
from prme.model.enums import CredentialRole, ProcessingStatus
from prme.model.inputs import StoreInput
from prme.model.records import OwnerKey
from tests.harness.aws import AwsNames, boto_client
from tests.harness.iam import LOCAL_OVERRIDES, new_container, release_container
from tests.harness.stack_template import LocalBinding, StackTemplate

# With refresh-on-write off (as deployed) a write becomes searchable at the index's next refresh,
# about a second later: reads that expect it poll, up to this long.
SEARCHABLE_WITHIN_S = 15.0

EVENTS = Path(__file__).resolve().parents[1] / "events"
TENANT = "acme"
ALICE = OwnerKey(tenant_id=TENANT, owner_id="alice")
T = TypeVar("T")


def until_searchable(read: Callable[[], T], done: Callable[[T], bool]) -> T:
    """`read()` again until `done(result)` holds or the bound passes; the last result."""
    deadline = time.monotonic() + SEARCHABLE_WITHIN_S
    while True:
        result = read()
        if done(result) or time.monotonic() > deadline:
            return result
        time.sleep(0.2)


def load_event(name: str) -> dict[str, Any]:
    event: dict[str, Any] = json.loads((EVENTS / name).read_text())
    return event


def sqs_records(
    event_file: str,
    bodies: list[str],
    *,
    id_prefix: str = "msg",
    receive_count: int | None = None,
) -> dict[str, Any]:
    """An SQS event of `bodies`, each record shaped like the first record of `event_file`;
    record i has the message id `<id_prefix>-<i>`."""
    template = load_event(event_file)["Records"][0]
    records = []
    for i, body in enumerate(bodies):
        record = copy.deepcopy(template)
        record["messageId"] = f"{id_prefix}-{i}"
        record["body"] = body
        if receive_count is not None:
            record["attributes"]["ApproximateReceiveCount"] = str(receive_count)
        records.append(record)
    return {"Records": records}


@dataclass
class FakeLambdaContext:
    function_name: str = "prme-test"
    function_version: str = "$LATEST"
    invoked_function_arn: str = "arn:aws:lambda:eu-west-1:123456789012:function:prme-test"
    memory_limit_in_mb: int = 512
    aws_request_id: str = "c6af9ac6-7b61-11e6-9a41-93e812345678"
    log_group_name: str = "/aws/lambda/prme-test"
    log_stream_name: str = "2026/11/29/[$LATEST]abc"

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


@dataclass
class Deployed:
    names: AwsNames
    urls: dict[str, str]
    sqs: Any
    alice_key: str


def deployed_environment(
    monkeypatch: pytest.MonkeyPatch,
    aws_endpoint: str,
    opensearch_url: str,
    aws_names: AwsNames,
    stack: StackTemplate,
) -> Iterator[Deployed]:
    """Environment as the stack sets it, resources bootstrapped, handler caches cleared."""
    from prme.backends.aws.opensearch_index import build_opensearch_client

    binding = LocalBinding(
        table_name=aws_names.table,
        queue_prefix=aws_names.queue_prefix,
        index_alias=aws_names.index_alias,
        opensearch_url=opensearch_url,
    )
    # The api function's environment from the synthesized stack (refresh-on-write off, as
    # deployed), with the same overrides as the IAM-enforced tests and nothing else.
    env = {**stack.environment("api", binding), **LOCAL_OVERRIDES}
    for key in [k for k in os.environ if k.startswith(("PRME_", "POWERTOOLS_"))]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    dynamodb, sqs = boto_client("dynamodb", aws_endpoint), boto_client("sqs", aws_endpoint)
    opensearch = build_opensearch_client(opensearch_url, auth="none", region=None)
    urls = bootstrap(
        dynamodb=dynamodb,
        sqs=sqs,
        opensearch=opensearch,
        table_name=aws_names.table,
        queue_prefix=aws_names.queue_prefix,
        index_alias=aws_names.index_alias,
        dimension=64,
    )
    from functions import runtime

    new_container()
    built = runtime.backend()
    assert isinstance(built.credentials, CredentialService)
    issued = built.credentials.create(tenant_id=TENANT, owner_id="alice", role=CredentialRole.OWNER)
    try:
        yield Deployed(aws_names, urls, sqs, issued.secret)
    finally:
        release_container()
        opensearch.indices.delete(index=f"{aws_names.index_alias}-v*", ignore_unavailable=True)
        opensearch.close()


def pending_store(content: str, *, lose_send: bool = False) -> tuple[Any, Any]:
    """A store whose indexing failed, as after an OpenSearch outage: its work is pending."""
    from functions import runtime
    from prme.engine.deps import EngineDeps
    from prme.engine.service import MemoryEngine
    from prme.errors import IndexUnavailableError

    class DownIndex:
        def upsert(self, documents: Any) -> None:
            raise IndexUnavailableError()

        def search(self, owner: Any, query: Any) -> Any:
            raise IndexUnavailableError()

    class LostQueue:
        def enqueue(self, items: Any) -> None:
            from prme.errors import StorageUnavailableError

            raise StorageUnavailableError()

    deps = runtime.backend().engine.deps
    replaced: dict[str, Any] = {"index": DownIndex()}
    if lose_send:
        replaced["queue"] = LostQueue()
    down = MemoryEngine(EngineDeps(**{**deps.__dict__, **replaced}))
    result = down.store(ALICE, StoreInput(content=content))
    assert result.processing_status is ProcessingStatus.PENDING
    work = runtime.backend().engine.get_processing_status(ALICE, result.event_id)[1][0]
    return result, work


def sqs_event(
    refs: list[WorkRef], *, receive_count: int = 1, extra_bodies: tuple[str, ...] = ()
) -> dict[str, Any]:
    bodies = [json.dumps(ref.to_message()) for ref in refs] + list(extra_bodies)
    return sqs_records("sqs_materialize_batch.json", bodies, receive_count=receive_count)


@pytest.fixture
def deployed(
    monkeypatch: pytest.MonkeyPatch,
    aws_endpoint: str,
    opensearch_url: str,
    aws_names: AwsNames,
    stack_template: StackTemplate,
) -> Iterator[Deployed]:
    """The Lambda environment as the stack sets it, on fresh resources of the local AWS."""
    yield from deployed_environment(
        monkeypatch, aws_endpoint, opensearch_url, aws_names, stack_template
    )

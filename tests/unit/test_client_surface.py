"""The two clients' shared surface: the same methods with the same signatures, each returning
its operation's response model and listed in docs/client.md; error answers rebuilt as the
class the server raised; Retry-After read; no secret in a client's repr."""

from __future__ import annotations

import inspect
import re
import typing
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest

from prme.client import AsyncMemoryClient, MemoryClient
from prme.errors import (
    AuthenticationError,
    BadRequestError,
    ConflictError,
    CorruptRecordError,
    EmbeddingModelMissingError,
    EmbeddingUnavailableError,
    IndexUnavailableError,
    InvalidRequestError,
    JournalIntegrityError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    PrmeError,
    ProcessingIncompleteError,
    RetryableStorageError,
    SearchIndexMismatchError,
    StorageUnavailableError,
    error_from_response,
    public_body,
    status_for,
)
from prme.model.enums import WorkFailure
from prme.operations import BY_NAME
from prme.remote import RetryPolicy, retry_after_seconds

DOCS = Path(__file__).resolve().parents[2] / "docs"
# Client methods that are not operations: closing, an older name, and the export and import
# loops over export_owner and import_records.
PLUMBING = {"close", "process_pending", "export_to", "import_from"}


def _methods(cls: type) -> dict[str, typing.Any]:
    return {
        name: member
        for name, member in inspect.getmembers(cls, inspect.isfunction)
        if not name.startswith("_") and name not in PLUMBING
    }


def test_both_clients_have_the_same_methods_with_the_same_signatures() -> None:
    blocking, awaitable = _methods(MemoryClient), _methods(AsyncMemoryClient)
    assert set(blocking) == set(awaitable) == {op.name for op in BY_NAME.values() if op.client}
    for name, method in blocking.items():
        assert inspect.signature(method) == inspect.signature(awaitable[name]), name
        assert inspect.iscoroutinefunction(awaitable[name]), name
        assert not inspect.iscoroutinefunction(method), name
        assert method.__doc__ == awaitable[name].__doc__, name
    for name in PLUMBING:
        blocking_form, awaitable_form = (
            getattr(MemoryClient, name),
            getattr(AsyncMemoryClient, name),
        )
        assert inspect.iscoroutinefunction(awaitable_form), name
        same = (
            inspect.signature(blocking_form).parameters
            == inspect.signature(awaitable_form).parameters
        )
        assert same, name


def test_each_method_returns_its_operations_response_model() -> None:
    for name, method in _methods(MemoryClient).items():
        response = BY_NAME[name].response
        if response is not None:
            assert inspect.signature(method).return_annotation == response, name


def test_docs_client_lists_every_method_with_its_summary() -> None:
    page = (DOCS / "client.md").read_text()
    rows = dict(re.findall(r"^\| `(\w+)` \| ([^|]+?) \|", page, re.MULTILINE))
    methods = set(_methods(MemoryClient))
    assert methods - set(rows) == set(), "methods missing from docs/client.md"
    assert {name for name in rows if name in methods} == methods
    for name in methods:
        assert rows[name] == BY_NAME[name].summary, name


@pytest.mark.parametrize(
    "error",
    [
        InvalidRequestError("content: String should have at least 1 character", field=("content",)),
        BadRequestError("A label names a node the retrieval did not expose"),
        AuthenticationError(),
        PermissionDeniedError(),
        NotFoundError(),
        ConflictError("Idempotency-Key reused"),
        PayloadTooLargeError(),
        StorageUnavailableError(),
        RetryableStorageError(),
        # Three classes answer 503 and one 500 with nothing else in common: the body's
        # error code tells them apart.
        IndexUnavailableError(),
        EmbeddingUnavailableError(),
        EmbeddingModelMissingError(),
        JournalIntegrityError(),
        ProcessingIncompleteError(str(uuid.uuid4()), WorkFailure.EXTRACTION_FAILED),
        SearchIndexMismatchError("an index of another dimension"),
    ],
    ids=lambda error: type(error).__name__,
)
def test_an_error_answer_is_rebuilt_as_the_class_the_server_raised(error: PrmeError) -> None:
    rebuilt = error_from_response(status_for(error), public_body(error))
    assert type(rebuilt) is type(error)
    assert str(rebuilt) == str(error)
    if isinstance(error, InvalidRequestError):
        assert isinstance(rebuilt, InvalidRequestError) and rebuilt.field == error.field
    if isinstance(error, ProcessingIncompleteError):
        assert isinstance(rebuilt, ProcessingIncompleteError)
        assert (rebuilt.event_id, rebuilt.reason_code) == (error.event_id, error.reason_code)
    # The server-side reason of a mismatch stays in the server's log.
    if isinstance(error, SearchIndexMismatchError):
        assert isinstance(rebuilt, SearchIndexMismatchError) and "dimension" not in rebuilt.reason


def test_an_error_code_that_does_not_fit_its_status_is_not_believed() -> None:
    assert type(error_from_response(404, {"detail": "x", "error": "conflict"})) is NotFoundError
    assert type(error_from_response(503, {"error": "prme"})) is StorageUnavailableError


def test_a_500_or_an_unknown_status_is_the_base_class_with_only_the_detail() -> None:
    corrupt = error_from_response(500, public_body(CorruptRecordError("node", "n1")))
    assert type(corrupt) is PrmeError and str(corrupt) == CorruptRecordError.default_detail
    teapot = error_from_response(418, {"detail": "x" * 5000, "stack": "secret"})
    assert type(teapot) is PrmeError and len(str(teapot)) <= 210 and "secret" not in str(teapot)
    assert str(error_from_response(502, None)) == "HTTP 502"


def test_retry_after_is_read_as_seconds_or_a_date() -> None:
    now = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    assert retry_after_seconds("3", now=now) == 3.0
    assert retry_after_seconds("Thu, 01 Jan 2026 12:00:05 GMT", now=now) == 5.0
    assert retry_after_seconds("Thu, 01 Jan 2026 11:00:00 GMT", now=now) == 0.0
    assert retry_after_seconds("soon", now=now) is None
    assert retry_after_seconds(None) is None
    policy = RetryPolicy(attempts=3, base_delay=1, max_delay=4)
    assert policy.delay(1, 100.0) == 4.0
    assert 2.0 <= policy.delay(3, None) <= 4.0
    with pytest.raises(ValueError, match="attempts"):
        RetryPolicy(attempts=0)


def test_a_remote_clients_repr_shows_no_key_and_no_password() -> None:
    client = MemoryClient("https://bob:hunter2@memory.example.com/prme", api_key="prme_k_s3cret")
    try:
        assert repr(client) == "MemoryClient('https://memory.example.com/prme')"
    finally:
        client.close()
    with pytest.raises(ValueError, match="api_key"):
        MemoryClient("./memory", api_key="prme_k_s3cret")

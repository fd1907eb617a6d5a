"""The one error hierarchy of PRME and its one map to HTTP statuses (used by HTTP and MCP)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from prme.model.enums import WorkFailure
from prme.model.input_policy import MAX_BODY_DEPTH, InputPolicyError, check_json_value, excerpt

# A 422 names at most this many problems; each message is quoted at most this long.
MAX_REPORTED_ERRORS = 20
MAX_MESSAGE_CHARS = 200


class PrmeError(Exception):
    """Base of every error PRME raises on purpose. `detail` is safe to show a caller."""

    default_detail = "PRME error"

    def __init__(self, detail: str | None = None) -> None:
        self.detail = detail or self.default_detail
        super().__init__(self.detail)


class InvalidRequestError(PrmeError):
    """The input breaks a rule of the contract; nothing was written (HTTP 422)."""

    default_detail = "Invalid request"

    def __init__(self, detail: str | None = None, *, field: tuple[str | int, ...] = ()) -> None:
        super().__init__(detail)
        self.field = field

    def errors(self) -> list[dict[str, Any]]:
        return [{"loc": ["body", *self.field], "msg": self.detail, "type": "value_error"}]

    @classmethod
    def from_validation(
        cls, error: ValidationError, *, prefix: tuple[str, ...] = ()
    ) -> InvalidRequestError:
        """The first failure of an input model's validation, located and never echoing input."""
        first = error.errors(include_input=False, include_url=False)[0]
        loc = (*prefix, *(safe_location_part(part) for part in first["loc"]))
        return cls(f"{'.'.join(map(str, loc))}: {safe_message(first['msg'])}", field=loc)

    @classmethod
    def from_policy(
        cls, error: InputPolicyError, *, prefix: tuple[str, ...] = ()
    ) -> InvalidRequestError:
        """An input-policy violation (`prme.model.input_policy`), located within the input."""
        loc = (*prefix, *(safe_location_part(part) for part in error.path))
        return cls(f"{'.'.join(map(str, loc))}: {error.message}", field=loc)


def require_input_policy(value: Any, *, where: str) -> None:
    """The input policy (`prme.model.input_policy`) on free-form JSON that reached an edge
    without the HTTP body check (MCP tool arguments, `MemoryClient` arguments): a violation
    is the same 422 as anywhere else."""
    try:
        check_json_value(value, max_depth=MAX_BODY_DEPTH)
    except InputPolicyError as exc:
        raise InvalidRequestError.from_policy(exc, prefix=(where,)) from None


def safe_location_part(part: str | int) -> str | int:
    """A field location as a caller may see it: keys can be caller text (metadata, unknown
    fields), so they are quoted short and encodable."""
    return part if isinstance(part, int) else excerpt(part)


def safe_message(message: str) -> str:
    """Validation messages can quote the offending input (a UUID's bad character, say)."""
    return excerpt(message, MAX_MESSAGE_CHARS)


def validation_details(errors: list[Any]) -> list[dict[str, Any]]:
    """Field-level 422 details that never echo the input: location, message and type only,
    every part bounded and encodable, at most MAX_REPORTED_ERRORS of them."""
    return [
        {
            "loc": [safe_location_part(part) for part in err.get("loc", ())],
            "msg": safe_message(str(err.get("msg", ""))),
            "type": str(err.get("type", "value_error")),
        }
        for err in errors[:MAX_REPORTED_ERRORS]
    ]


class BadRequestError(PrmeError):
    """Well-formed input that conflicts with saved state the caller referenced (HTTP 400)."""

    default_detail = "Bad request"


class NotEnoughJudgmentsError(BadRequestError):
    """Too few of the owner's judged retrievals (in scope, with a kept receipt and a node
    judged relevant among their candidates) to fit ranking weights and hold some out."""

    default_detail = "Not enough judged retrievals to learn from"


class AuthenticationError(PrmeError):
    """Missing, unknown or revoked credential (HTTP 401)."""

    default_detail = "Missing or invalid API key"


class PermissionDeniedError(PrmeError):
    """The credential may not act for the owner it named (HTTP 403)."""

    default_detail = "This API key may not act for that user"


class NotFoundError(PrmeError):
    """Unknown id, or one that belongs to another owner or tenant (HTTP 404)."""

    default_detail = "Not found"


class ConflictError(PrmeError):
    """An idempotency key or decision reused with other input (HTTP 409)."""

    default_detail = "Conflict"


class StaleRankingChangeError(ConflictError):
    """A ranking-profile change named a `change_id` that is not the slot's current one (HTTP
    409): another change came first. Read the slot's active profile again and decide anew."""

    default_detail = (
        "The change_id is not the current one of this scope slot; read the active profile again"
    )


class RankingProfileNotEvaluatedError(ConflictError):
    """A profile without a holdout evaluation cannot be activated (HTTP 409)."""

    default_detail = "This ranking profile was not evaluated on held-out judgments"


class RankingProfileNotRecommendedError(ConflictError):
    """A profile whose holdout evaluation did not recommend it cannot be activated (HTTP 409)."""

    default_detail = "The holdout evaluation of this ranking profile did not recommend it"


class RankingProfileNeverActiveError(ConflictError):
    """A rollback names a profile that was not active in the slot before its current state
    (HTTP 409)."""

    default_detail = "A rollback goes back only to a profile active in this scope slot before"


class PayloadTooLargeError(PrmeError):
    """A record would exceed what the storage backend can hold in one item (HTTP 413)."""

    default_detail = "Content too large"


class JournalIntegrityError(PrmeError):
    """A stored journal record fails its checksum or is not where it claims to be (HTTP 500).

    The store was altered or corrupted below the API; the record is refused, never served."""

    default_detail = "A stored record failed its integrity check"


class StorageUnavailableError(PrmeError):
    """A dependency failed before anything was committed (HTTP 503 without `accepted`)."""

    default_detail = "Storage is unavailable; nothing was written"


class RetryableStorageError(StorageUnavailableError):
    """Throttling that outlasted the retries inside the call (HTTP 503)."""

    default_detail = "Storage is busy; retry later"


class IndexUnavailableError(PrmeError):
    """The search index could not be reached; derived work stays pending."""

    default_detail = "Search index unavailable"


class SearchIndexMismatchError(PrmeError):
    """The search index this deployment names is missing or has another shape (no alias, a
    plain index where the alias should be, another vector dimension or engine): the function
    refuses to write or search instead of creating or filling a wrong index (HTTP 503).

    `reason` says what was found, for the log and the operator; callers see only the detail
    and `reason_code`."""

    default_detail = "The search index is not set up for this deployment; nothing was written"
    reason_code = "search_index_mismatch"

    def __init__(self, reason: str) -> None:
        super().__init__()
        self.reason = reason


class EmbeddingUnavailableError(PrmeError):
    """The embedding model could not produce vectors."""

    default_detail = "Embedding model unavailable"


class EmbeddingModelMissingError(PrmeError):
    """The configured embedding model is not installed on this machine (HTTP 503).

    A setup fault, not an outage: it is deliberately no `EmbeddingUnavailableError`, which
    lets a store save its source as pending and a retrieval fall back to words. Retrying
    cannot help, so the call fails before anything is written and the detail names the fix."""

    default_detail = "The embedding model is not installed"


class EmbeddingModelMismatchError(EmbeddingUnavailableError):
    """Vectors of another model (or dimension) were found where the query's model was expected."""

    default_detail = "Embedding model mismatch"


class ExtractionUnavailableError(PrmeError):
    """The extraction provider failed or returned output that failed validation."""

    default_detail = "Extraction is unavailable"

    def __init__(
        self, detail: str | None = None, *, reason_code: WorkFailure = WorkFailure.EXTRACTION_FAILED
    ) -> None:
        super().__init__(detail)
        self.reason_code = reason_code


class WorkDeferredError(PrmeError):
    """Queued work could not run because a dependency is down; the message should be retried."""

    default_detail = "Work deferred; a dependency is unavailable"


class ImportChunkRefusedError(PrmeError):
    """A bulk-import chunk no import job vouches for (unknown job, or a chunk the job does not
    list with that digest): never committed, never retried. `reason` names why, safe to log."""

    default_detail = "The import chunk was refused"

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ValueBindingError(InvalidRequestError):
    """A value binding failed admission (presentation not in the source or indexed text)."""

    default_detail = "Invalid value binding"


class ValueBindingResolutionError(PrmeError):
    """Conflicting presentation mappings or invalid tool arguments during resolution."""

    default_detail = "Value binding resolution failed"


class CorruptRecordError(PrmeError):
    """A stored record failed to load (unparsable body, broken shape): it is quarantined.

    Carries the record's kind and id so logs and work items can name it; never its body,
    whose text is untrusted and may be what broke the parser."""

    default_detail = "This record cannot be read; it is quarantined and was left unchanged"
    # What a work item that needed the record says in `last_error`.
    reason_code = WorkFailure.CORRUPT_RECORD

    def __init__(self, kind: str, record_id: str) -> None:
        super().__init__()
        self.kind = kind
        self.record_id = record_id


class ProcessingIncompleteError(PrmeError):
    """The source was committed but a waiting call could not finish processing (HTTP 503 receipt)."""

    default_detail = (
        "Source saved; processing did not complete. Inspect its status and retry the saved work."
    )

    def __init__(self, event_id: str, reason_code: WorkFailure) -> None:
        super().__init__()
        self.event_id = event_id
        self.reason_code = reason_code


class ServerUnreachableError(PrmeError):
    """A remote client got no answer from the server (connection refused, reset or timed
    out) after its retries. Whether a write took effect is unknown: repeat it with the same
    Idempotency-Key."""

    default_detail = "The server could not be reached"


class OperationNotServedError(PrmeError):
    """The operation has no HTTP route: a remote client cannot call it (run it where the
    memory is, with an embedded client or the prme CLI)."""

    default_detail = "This operation is served in-process only"


class LimitExceededError(PrmeError):
    """A limit of the caller's tenant refused the request before any work: nothing was
    written. The body names the limit, its value and when the use counted against it starts
    over (`resets_at`, null when it never does by itself)."""

    default_detail = "A limit of this tenant was reached; nothing was done"

    def __init__(
        self,
        detail: str | None = None,
        *,
        limit: str = "",
        limit_value: int | None = None,
        resets_at: datetime | None = None,
        retry_after_s: int | None = None,
    ) -> None:
        super().__init__(detail)
        self.limit = limit
        self.limit_value = limit_value
        self.resets_at = resets_at
        self.retry_after_s = retry_after_s


class RateLimitedError(LimitExceededError):
    """Too many requests (the request rate, or the day's retrievals) for the tenant's limits
    (HTTP 429 with Retry-After): waiting until `resets_at` is enough."""

    default_detail = "Too many requests for this tenant's limits; retry after resets_at"


class QuotaExceededError(LimitExceededError):
    """The write would take the tenant past its stored records or bytes (HTTP 403): not
    transient, so not 429. Deleting memories or a higher limit from the provider makes room."""

    default_detail = "This write would pass the tenant's storage quota; nothing was written"


# -- the one mapping of errors to HTTP statuses, categories and public bodies --------------
# HTTP responses and MCP tool errors are both built from it.

STATUS_BY_ERROR: list[tuple[type[PrmeError], int]] = [
    (InvalidRequestError, 422),
    (BadRequestError, 400),
    (ValueBindingResolutionError, 400),
    (AuthenticationError, 401),
    (PermissionDeniedError, 403),
    (QuotaExceededError, 403),
    (RateLimitedError, 429),
    (NotFoundError, 404),
    (ConflictError, 409),
    (PayloadTooLargeError, 413),
    (JournalIntegrityError, 500),
    (StorageUnavailableError, 503),
    # A server-side fault that retrying will not fix: 500, not 503 (no retry invitation) and
    # not 404/409/410 (the record exists and the caller did nothing wrong).
    (CorruptRecordError, 500),
    (IndexUnavailableError, 503),
    (SearchIndexMismatchError, 503),
    (EmbeddingUnavailableError, 503),
    (EmbeddingModelMissingError, 503),
    (ProcessingIncompleteError, 503),
    # A capability this deployment was not configured with (imports by upload without an
    # upload store): no retry makes it work, and nothing is wrong with the request.
    (OperationNotServedError, 501),
]

CATEGORY_BY_STATUS = {
    400: "bad_request",
    401: "unauthenticated",
    403: "permission_denied",
    404: "not_found",
    409: "conflict",
    413: "payload_too_large",
    422: "invalid_request",
    429: "rate_limited",
    500: "internal",
    501: "not_served",
    503: "unavailable",
}


def status_for(error: PrmeError) -> int:
    for cls, status in STATUS_BY_ERROR:
        if isinstance(error, cls):
            return status
    return 500


def public_body(error: PrmeError) -> dict[str, Any]:
    """What a caller may see of an error: its detail (field errors for 422), or the
    accepted-source receipt. Causes, which may hold provider text, are never included."""
    if isinstance(error, ProcessingIncompleteError):
        return {
            "detail": error.detail,
            "event_id": error.event_id,
            "reason_code": error.reason_code,
            "accepted": True,
        }
    if isinstance(error, InvalidRequestError):
        return {"detail": error.errors()}
    if isinstance(error, SearchIndexMismatchError):
        return {"detail": error.detail, "reason_code": error.reason_code}
    if isinstance(error, LimitExceededError):
        return {
            "detail": error.detail,
            "error": error_code(type(error)),
            "limit": error.limit,
            "limit_value": error.limit_value,
            # The form the response models give a UTC time (`...Z`), as in GET /v1/limits.
            "resets_at": (
                error.resets_at.isoformat().replace("+00:00", "Z") if error.resets_at else None
            ),
        }
    return {"detail": error.detail, "error": error_code(type(error))}


def error_code(kind: type[PrmeError]) -> str:
    """The stable name of an error class on the wire: `EmbeddingModelMissingError` is
    `embedding_model_missing`. Several classes share a status; the code tells them apart."""
    name = kind.__name__.removesuffix("Error")
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _error_classes(root: type[PrmeError]) -> list[type[PrmeError]]:
    found = [root]
    for sub in root.__subclasses__():
        found += _error_classes(sub)
    return found


# What a remote client raises for an error status: the class the server's error of that
# status belongs to, so `except NotFoundError` works on both clients. A 500 may be one of
# several classes; the base class stands for it and for any status not listed.
ERROR_BY_STATUS: dict[int, type[PrmeError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    413: PayloadTooLargeError,
    422: InvalidRequestError,
    429: RetryableStorageError,
    503: StorageUnavailableError,
}


def error_from_response(status: int, body: Any) -> PrmeError:
    """The error a server's error response stands for, rebuilt from its public body
    (`public_body`, `validation_details`): only its detail, codes and field locations are
    read, each bounded, so nothing else of the body reaches the message."""
    fields = body if isinstance(body, dict) else {}
    detail = fields.get("detail")
    if status == 422 and isinstance(detail, list) and detail and isinstance(detail[0], dict):
        return _invalid_request_of(detail[0])
    text = safe_message(detail) if isinstance(detail, str) else None
    reason_code = fields.get("reason_code")
    if fields.get("accepted") is True and isinstance(fields.get("event_id"), str):
        try:
            incomplete = ProcessingIncompleteError(
                excerpt(fields["event_id"], 64), WorkFailure(str(reason_code))
            )
        except ValueError:
            pass
        else:
            return _with_detail(incomplete, text)
    if status == 503 and reason_code == SearchIndexMismatchError.reason_code:
        return _with_detail(SearchIndexMismatchError("reported by the server"), text)
    limited = _limit_error(fields, status, text)
    if limited is not None:
        return limited
    named = _named_error(fields.get("error"), status)
    if named is not None:
        return named(text)
    cls = ERROR_BY_STATUS.get(status, PrmeError)
    return cls(text or (f"HTTP {status}" if cls is PrmeError else None))


def _named_error(code: Any, status: int) -> type[PrmeError] | None:
    """The class an error body's code names, when it is one built from its detail alone and
    served with this very status (a code that does not fit its status is not believed)."""
    if not isinstance(code, str):
        return None
    for kind in _error_classes(PrmeError):
        if (
            error_code(kind) == code
            and kind.__init__ is PrmeError.__init__
            and status_for(kind()) == status
        ):
            return kind
    return None


def _limit_error(fields: dict[str, Any], status: int, text: str | None) -> PrmeError | None:
    """A limit's refusal rebuilt with the limit it names (each field bounded and typed)."""
    kinds = {error_code(kind): kind for kind in (RateLimitedError, QuotaExceededError)}
    kind = kinds.get(str(fields.get("error")))
    if kind is None or status_for(kind()) != status:
        return None
    value = fields.get("limit_value")
    resets_at: datetime | None = None
    if isinstance(fields.get("resets_at"), str):
        try:
            resets_at = datetime.fromisoformat(fields["resets_at"][:64])
        except ValueError:
            resets_at = None
    return kind(
        text,
        limit=excerpt(str(fields.get("limit", "")), 64),
        limit_value=value if isinstance(value, int) and not isinstance(value, bool) else None,
        resets_at=resets_at,
    )


def _with_detail(error: PrmeError, detail: str | None) -> PrmeError:
    if detail:
        error.detail = detail
        error.args = (detail,)
    return error


def _invalid_request_of(first: dict[str, Any]) -> InvalidRequestError:
    loc = [part for part in first.get("loc", ()) if isinstance(part, str | int)]
    # The route's own 422 says where the field was; a client's caller named it as an argument.
    if loc and loc[0] in ("body", "query", "path", "header"):
        loc = loc[1:]
    field = tuple(safe_location_part(part) for part in loc)
    message = safe_message(str(first.get("msg", "")))
    dotted = ".".join(map(str, field))
    if dotted and not message.startswith(f"{dotted}: "):
        message = f"{dotted}: {message}"
    return InvalidRequestError(message or None, field=field)

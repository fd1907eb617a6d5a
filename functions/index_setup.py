"""CloudFormation custom resource that creates the search index at deploy time: the versioned
index and its alias, from the application's own definition, with the embedder's dimension.

CloudFormation sends Create, Update and Delete; the answer goes to the pre-signed ResponseURL.
Delete leaves the index in place: it is derived data (`prme reindex` rebuilds it), and a
replaced resource or a rolled-back update must never take a live index with it.
"""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as WorkTimedOut
from dataclasses import dataclass
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext
from opensearchpy.exceptions import OpenSearchException

from functions.limits import LAMBDA_MARGIN_MS
from functions.runtime import logger, settings
from prme.backends.aws.bootstrap import ensure_index
from prme.backends.aws.opensearch_index import VectorShape, build_opensearch_client, index_problem
from prme.backends.aws.resources import index_name
from prme.errors import SearchIndexMismatchError

# The names of the resource's properties; the stack sets them (infra/components/search.py).
ALIAS_PROPERTY = "IndexAlias"
DIMENSION_PROPERTY = "Dimension"
RESPONSE_TIMEOUT_S = 30.0
# Kept back from the invocation's time for the answer itself: a hung domain must still leave
# time to tell CloudFormation, which otherwise waits an hour for an answer that never comes.
ANSWER_RESERVE_S = 5.0
# OpenSearch's own limits: an index name of at most 255 bytes, lowercase, without these
# characters or a leading -, _ or +; k-NN vectors of at most 16,000 dimensions. Checked here so
# a bad property fails with a reason of our own, and so the physical id (which CloudFormation
# caps, with the whole answer at 4 KB) never carries an unbounded property.
ALIAS_PATTERN = re.compile(r"[a-z0-9][a-z0-9._-]{0,254}")
MAX_DIMENSION = 16_000


@dataclass(frozen=True)
class Outcome:
    """What CloudFormation is told: SUCCESS or FAILED, with a reason written here (never a
    provider's message, which could name internals)."""

    status: str
    physical_id: str
    reason: str = ""
    data: dict[str, str] | None = None


def create_or_update(client: Any, alias: str, dimension: int, *, replicas: int = 0) -> Outcome:
    try:
        # Replicas apply when the index is made; docs/operations.md changes them later.
        created = ensure_index(client, alias, dimension, replicas=replicas)
        problem = index_problem(client, alias, VectorShape.expected(dimension))
    except SearchIndexMismatchError as exc:
        problem = exc.reason
    if problem is not None:
        return Outcome("FAILED", alias, f"Search index not usable: {problem}")
    logger.info("search index ready", extra={"alias": alias, "index_created": created})
    return Outcome("SUCCESS", alias, data={"IndexName": index_name(alias), "Alias": alias})


def outcome_of(event: dict[str, Any], client_factory: Callable[[], Any]) -> Outcome:
    """The answer to one request; any failure becomes FAILED with a reason of our own."""
    request = event.get("RequestType")
    properties = event.get("ResourceProperties")
    if not isinstance(properties, dict):
        properties = {}
    alias = _valid_alias(properties.get(ALIAS_PROPERTY))
    physical_id = _physical_id(event, alias)
    if request == "Delete":
        return Outcome("SUCCESS", physical_id)
    if request not in ("Create", "Update"):
        return Outcome("FAILED", physical_id, f"Unknown request type {str(request)[:40]!r}")
    dimension = _valid_dimension(properties.get(DIMENSION_PROPERTY))
    if alias is None or dimension is None:
        return Outcome(
            "FAILED",
            physical_id,
            f"Properties {ALIAS_PROPERTY} (an index name: lowercase letters, digits, '.', '_' "
            f"or '-') and {DIMENSION_PROPERTY} (a whole number from 1 to {MAX_DIMENSION}) "
            "are required",
        )
    try:
        return create_or_update(
            client_factory(), alias, dimension, replicas=settings().opensearch_replicas
        )
    except OpenSearchException as exc:
        logger.error("index setup: search domain failed", extra={"error": type(exc).__name__})
        return Outcome(
            "FAILED",
            physical_id,
            f"The search domain refused or did not answer ({type(exc).__name__}); "
            "see the index setup function's log",
        )
    except Exception as exc:
        # CloudFormation waits up to an hour for an answer that never comes: always answer.
        logger.exception("index setup failed")
        return Outcome(
            "FAILED",
            physical_id,
            f"Index setup failed ({type(exc).__name__}); see the index setup function's log",
        )


def outcome_in_time(
    event: dict[str, Any], client_factory: Callable[[], Any], seconds: float
) -> Outcome:
    """`outcome_of`, or FAILED once `seconds` pass: the domain's client has its own timeouts,
    but one request holds several calls, and their retries could outlast the function."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="index-setup")
    try:
        return pool.submit(outcome_of, event, client_factory).result(timeout=max(seconds, 0.0))
    except WorkTimedOut:
        logger.error("index setup: the search domain did not answer in time")
        properties = event.get("ResourceProperties")
        asked = properties.get(ALIAS_PROPERTY) if isinstance(properties, dict) else None
        return Outcome(
            "FAILED",
            _physical_id(event, _valid_alias(asked)),
            "The search domain did not answer in time; see the index setup function's log",
        )
    finally:
        pool.shutdown(wait=False)


def _physical_id(event: dict[str, Any], alias: str | None) -> str:
    # Until Create succeeds there is no physical id; the alias (when usable) stands in.
    return str(
        event.get("PhysicalResourceId") or alias or event.get("LogicalResourceId", "search-index")
    )[:255]


def _valid_alias(value: object) -> str | None:
    if isinstance(value, str) and ALIAS_PATTERN.fullmatch(value):
        return value
    return None


def _valid_dimension(value: object) -> int | None:
    # CloudFormation passes every property as text; a JSON number is accepted too.
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return None
    text = str(value)
    if not (text.isascii() and text.isdigit() and len(text) <= 6):
        return None
    dimension = int(text)
    return dimension if 1 <= dimension <= MAX_DIMENSION else None


def respond(event: dict[str, Any], outcome: Outcome) -> None:
    """PUT the answer to the pre-signed URL CloudFormation gave (no content type: the URL's
    signature was made without one)."""
    body: dict[str, Any] = {
        "Status": outcome.status,
        "Reason": outcome.reason,
        "PhysicalResourceId": outcome.physical_id,
        "StackId": event["StackId"],
        "RequestId": event["RequestId"],
        "LogicalResourceId": event["LogicalResourceId"],
    }
    if outcome.data:
        body["Data"] = outcome.data
    payload = json.dumps(body).encode()
    url = str(event["ResponseURL"])
    if not url.startswith("https://") and not url.startswith("http://"):
        raise ValueError("ResponseURL is not an HTTP(S) URL")
    put = urllib.request.Request(  # noqa: S310 - the scheme is checked above
        url,
        data=payload,
        method="PUT",
        headers={"Content-Type": "", "Content-Length": str(len(payload))},
    )
    with urllib.request.urlopen(put, timeout=RESPONSE_TIMEOUT_S) as answer:  # noqa: S310
        answer.read()


def _client() -> Any:
    current = settings()
    if not current.opensearch_url:
        raise RuntimeError("PRME_OPENSEARCH_URL is not set")
    import boto3

    return build_opensearch_client(
        current.opensearch_url, auth=current.opensearch_auth, region=boto3.Session().region_name
    )


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> None:
    remaining_s = (context.get_remaining_time_in_millis() - LAMBDA_MARGIN_MS) / 1000
    outcome = outcome_in_time(event, _client, remaining_s - ANSWER_RESERVE_S)
    logger.info(
        "index setup answered",
        extra={"request": event.get("RequestType"), "status": outcome.status},
    )
    respond(event, outcome)

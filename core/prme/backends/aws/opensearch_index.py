"""`OpenSearchIndex`: the `SearchIndex` port on OpenSearch (Lucene k-NN plus BM25 in one `_msearch`).

Also builds the opensearch-py client for a local node (plain HTTP) or Amazon OpenSearch (SigV4).
"""

from __future__ import annotations

import base64
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from http import HTTPStatus
from typing import Any, Literal

import numpy as np
from opensearchpy.exceptions import NotFoundError, OpenSearchException

from prme.backends.aws.resources import (
    CONTENT_VECTOR_BYTES_FIELD,
    CONTENT_VECTOR_FIELD,
    VECTOR_FIELD,
    index_body,
)
from prme.backends.query_words import query_words
from prme.backends.session_order import alternate
from prme.engine.deadlines import remaining_seconds
from prme.errors import IndexUnavailableError, SearchIndexMismatchError
from prme.model.conditions import ConditionState
from prme.model.enums import EpistemicType
from prme.model.records import OwnerKey
from prme.model.search import IndexDocument, IndexFilter, IndexHits, IndexQuery

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MILLISECOND = timedelta(milliseconds=1)
# Bucket key for vectors stored without a model name: such vectors never match a query's model.
_NO_MODEL = "__prme_no_model__"
# Two buckets suffice to see a second model; a few more make the response easier to debug.
_MODEL_BUCKETS = 5
# How long this process remembers its own writes of session records for `session_predecessors`:
# a search sees a write only after the next refresh (1 s by default), this covers the gap.
_RECENT_SECONDS = 10.0
_RECENT_MAX = 500
# Documents an owner's erasure lists and deletes per round trip.
_ERASE_PAGE = 500
# An attempt shorter than this cannot finish even a healthy request: fail fast instead.
_MIN_ATTEMPT_S = 0.05

Query = dict[str, Any]
# What a search that needs only ids asks for: the id from doc values, no `_source` at all
# (which holds the vectors: about 24 KB per document at 1024 dimensions).
_ONLY_NODE_ID: Query = {"_source": False, "docvalue_fields": ["node_id"]}

_log = logging.getLogger(__name__)


def _millis(value: datetime) -> int:
    """Epoch milliseconds, truncated: the index stores dates at millisecond precision."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return (value - _EPOCH) // _MILLISECOND


def document_id(tenant_id: str, owner_id: str, node_id: str) -> str:
    return f"{tenant_id}:{owner_id}:{node_id}"


def packed_vector(vector: Sequence[float]) -> str:
    """A vector as `CONTENT_VECTOR_BYTES_FIELD` stores it: base64 of little-endian float32."""
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode()


def unpacked_vector(packed: str) -> tuple[float, ...]:
    """The vector `packed_vector` stored, each float32 widened exactly."""
    return tuple(float(x) for x in np.frombuffer(base64.b64decode(packed), dtype="<f4"))


def _as_stored(vector: tuple[float, ...] | None) -> tuple[float, ...] | None:
    """A vector at the precision the index gives it back (float32)."""
    return None if vector is None else unpacked_vector(packed_vector(vector))


def to_source(doc: IndexDocument) -> dict[str, Any]:
    """The stored form of a document; absent optional fields are omitted, not null."""
    source: dict[str, Any] = {
        "tenant_id": doc.tenant_id,
        "owner_id": doc.owner_id,
        "node_id": doc.node_id,
        "text": doc.text,
        "node_type": doc.node_type.value,
        "source_type": doc.source_type.value,
        "epistemic_type": doc.epistemic_type.value,
        "lifecycle_state": doc.lifecycle_state.value,
        "scope": doc.scope.value,
        "created_at": _millis(doc.created_at),
        "effective_time": _millis(doc.effective_time),
    }
    if doc.vector is not None:
        # Indexed for k-NN; kept out of `_source` by the mapping (index version 2 on).
        source[VECTOR_FIELD] = list(doc.vector)
    content = doc.content_vector if doc.content_vector is not None else doc.vector
    # Only a session's records are ever read back as a predecessor (`session_predecessors`).
    if content is not None and doc.session_id is not None:
        source[CONTENT_VECTOR_BYTES_FIELD] = packed_vector(content)
    if doc.embedding_model is not None:
        source["embedding_model"] = doc.embedding_model
    if doc.session_id is not None:
        source["session_id"] = doc.session_id
    if doc.event_time is not None:
        source["event_time"] = _millis(doc.event_time)
    if doc.expires_at is not None:
        source["expires_at"] = _millis(doc.expires_at)
    if doc.condition_state is not None:
        source["condition_state"] = doc.condition_state.value
    return source


def owner_clauses(owner: OwnerKey) -> list[Query]:
    # Routing only picks the shard; these terms are what keeps tenants and owners apart.
    return [{"term": {"tenant_id": owner.tenant_id}}, {"term": {"owner_id": owner.owner_id}}]


def filter_query(owner: OwnerKey, flt: IndexFilter, *extra: Query) -> Query:
    """A bool filter equivalent to `IndexFilter.matches`, on top of the owner's terms."""
    must: list[Query] = [*owner_clauses(owner), *extra]
    must_not: list[Query] = []

    def allow(field: str, values: set[str] | None) -> None:
        if values is None:
            return
        # An empty allow-list means "nothing qualifies"; say so rather than rely on `terms: []`.
        must.append({"terms": {field: sorted(values)}} if values else {"match_none": {}})

    def exclude(field: str, values: set[str]) -> None:
        if values:
            must_not.append({"terms": {field: sorted(values)}})

    exclude("node_type", {t.value for t in flt.exclude_node_types})
    allow("source_type", None if flt.source_types is None else {t.value for t in flt.source_types})
    exclude("lifecycle_state", {s.value for s in flt.exclude_lifecycle_states})
    exclude("epistemic_type", {t.value for t in flt.exclude_epistemic_types})
    allow("scope", None if flt.scopes is None else {s.value for s in flt.scopes})
    if flt.conditions_must_hold:
        # A conditional memory whose condition is anything but true (or was never indexed
        # with one) stays out.
        must_not.append(
            {
                "bool": {
                    "filter": [{"term": {"epistemic_type": EpistemicType.CONDITIONAL.value}}],
                    "must_not": [{"term": {"condition_state": ConditionState.TRUE.value}}],
                }
            }
        )
    if flt.not_expired_at is not None:
        must.append(
            {
                "bool": {
                    "should": [
                        {"bool": {"must_not": [{"exists": {"field": "expires_at"}}]}},
                        {"range": {"expires_at": {"gt": _millis(flt.not_expired_at)}}},
                    ],
                    "minimum_should_match": 1,
                }
            }
        )
    if flt.event_time_from is not None or flt.event_time_to is not None:
        # A range already skips missing values; the exists clause keeps that rule explicit.
        must.append({"exists": {"field": "event_time"}})
        must.append({"range": {"event_time": _bounds(flt.event_time_from, flt.event_time_to)}})
    if flt.time_from is not None or flt.time_to is not None:
        must.append({"range": {"effective_time": _bounds(flt.time_from, flt.time_to)}})
    query: Query = {"filter": must}
    if must_not:
        query["must_not"] = must_not
    return {"bool": query}


def _bounds(low: datetime | None, high: datetime | None) -> dict[str, int]:
    bounds: dict[str, int] = {}
    if low is not None:
        bounds["gte"] = _millis(low)
    if high is not None:
        bounds["lte"] = _millis(high)
    return bounds


@dataclass(frozen=True)
class _Said:
    """One session record as `session_predecessors` compares it."""

    effective: int
    node_id: str
    model: str | None
    vector: tuple[float, ...] | None

    @property
    def order(self) -> tuple[int, str]:
        return (self.effective, self.node_id)


class RecentSessionWrites:
    """Session records this process wrote in the last few seconds.

    Without a refresh on write, a document becomes searchable only at the next refresh, so a
    reply stored right after its question would not find it; the records written here fill
    that gap within one process (another process's writes still wait for the refresh)."""

    def __init__(self, keep_seconds: float = _RECENT_SECONDS, limit: int = _RECENT_MAX) -> None:
        self._keep = keep_seconds
        self._limit = limit
        self._lock = threading.Lock()
        # (tenant, owner, session, node id) -> (written at, record), oldest write first.
        self._written: OrderedDict[tuple[str, str, str, str], tuple[float, _Said]] = OrderedDict()

    def add(self, documents: Sequence[IndexDocument]) -> None:
        now = time.monotonic()
        with self._lock:
            for doc in documents:
                if doc.session_id is None:
                    continue
                key = (doc.tenant_id, doc.owner_id, doc.session_id, doc.node_id)
                # As the index gives it back, so a record mixes the same vector either way.
                vector = _as_stored(
                    doc.content_vector if doc.content_vector is not None else doc.vector
                )
                self._written[key] = (
                    now,
                    _Said(
                        _millis(doc.effective_time),
                        doc.node_id,
                        doc.embedding_model,
                        vector,
                    ),
                )
                self._written.move_to_end(key)
            self._prune(now)

    def latest_before(self, owner: OwnerKey, session_id: str, before: int) -> _Said | None:
        session = (owner.tenant_id, owner.owner_id, session_id)
        with self._lock:
            self._prune(time.monotonic())
            earlier = [
                said
                for key, (_, said) in self._written.items()
                if key[:3] == session and said.effective < before
            ]
        return max(earlier, key=lambda s: s.order) if earlier else None

    def forget(self, owner: OwnerKey, node_ids: Sequence[str]) -> None:
        gone = set(node_ids)
        with self._lock:
            for key in [
                k
                for k in self._written
                if k[:2] == (owner.tenant_id, owner.owner_id) and k[3] in gone
            ]:
                del self._written[key]

    def forget_owner(self, owner: OwnerKey) -> None:
        with self._lock:
            for key in [k for k in self._written if k[:2] == (owner.tenant_id, owner.owner_id)]:
                del self._written[key]

    def _prune(self, now: float) -> None:
        while self._written:
            written_at = next(iter(self._written.values()))[0]
            if now - written_at <= self._keep and len(self._written) <= self._limit:
                break
            self._written.popitem(last=False)


@dataclass(frozen=True)
class VectorShape:
    """What makes stored vectors searchable by this code: their dimension and k-NN method."""

    dimension: int
    engine: str
    space_type: str

    @classmethod
    def of_mapping(cls, mappings: Mapping[str, Any]) -> VectorShape | None:
        field = mappings.get("properties", {}).get(VECTOR_FIELD, {})
        if field.get("type") != "knn_vector":
            return None
        method = field.get("method", {})
        return cls(
            dimension=int(field.get("dimension", 0)),
            engine=str(method.get("engine", "")),
            space_type=str(method.get("space_type", "")),
        )

    @classmethod
    def expected(cls, dimension: int) -> VectorShape:
        """The shape the index definition (`resources.index_body`) gives the vector field."""
        shape = cls.of_mapping(index_body(dimension)["mappings"])
        if shape is None:  # pragma: no cover - the definition always maps the vector field
            raise AssertionError("the index definition has no knn_vector field")
        return shape

    def describe(self) -> str:
        return f"dimension {self.dimension}, engine {self.engine}, space {self.space_type}"


def index_problem(client: Any, alias: str, expected: VectorShape, **params: float) -> str | None:
    """What is wrong with the index behind `alias` for vectors of `expected` shape, or None.

    One GET: on an alias it answers with the index behind it, on a plain index with that
    index under its own name. Raises OpenSearchException when the node cannot answer."""
    try:
        found: Mapping[str, Any] = client.indices.get(index=alias, **params)
    except NotFoundError:
        return f"no alias {alias} exists (the stack's index setup creates it)"
    if alias in found:
        return (
            f"{alias} is a plain index, not an alias (a write created it before the index was "
            "set up); delete that index, then create the alias with `prme bootstrap` "
            "(docs/deployment.md, The search index)"
        )
    if len(found) != 1:
        return f"alias {alias} points at {len(found)} indexes; exactly one is expected"
    ((name, index),) = found.items()
    shape = VectorShape.of_mapping(index.get("mappings", {}))
    if shape is None:
        return f"index {name} behind alias {alias} has no knn_vector field {VECTOR_FIELD}"
    if shape != expected:
        return (
            f"index {name} behind alias {alias} has vectors of {shape.describe()}; this "
            f"deployment embeds {expected.describe()} (reindex into an index of that shape)"
        )
    return None


class OpenSearchIndex:
    """Implements the `SearchIndex` port on an OpenSearch alias created by `ensure_index`.

    Given the `expected` vector shape, it checks the index behind the alias before its first
    write or search and refuses (`SearchIndexMismatchError`) while that index is missing or
    of another shape; the check passes once per instance (a Lambda container keeps one)."""

    def __init__(
        self,
        client: Any,
        alias: str,
        *,
        refresh_on_write: bool = False,
        expected: VectorShape | None = None,
        on_refused: Callable[[str], None] | None = None,
    ) -> None:
        self._client = client
        self._alias = alias
        self._expected = expected
        self._on_refused = on_refused
        self._verified = expected is None
        self._verify_lock = threading.Lock()
        # The client retries a timed-out request itself (`retry_on_timeout`): a deadline is
        # shared by that many attempts, each with the client's own timeout as a ceiling.
        transport = getattr(client, "transport", None)
        self._attempts = 1 + int(getattr(transport, "max_retries", 0))
        self._timeout_ceiling_s = float(getattr(transport, "kwargs", {}).get("timeout", 10.0))
        self._refresh = "true" if refresh_on_write else "false"
        # With a refresh on every write, every write is searchable once `upsert` returns.
        self._recent = None if refresh_on_write else RecentSessionWrites()

    def _deadline_params(self) -> dict[str, float]:
        """The per-request timeout that keeps every attempt within the request's deadline."""
        remaining = remaining_seconds()
        if remaining is None:
            return {}
        per_attempt = min(self._timeout_ceiling_s, remaining / self._attempts)
        if per_attempt < _MIN_ATTEMPT_S:
            raise IndexUnavailableError()
        return {"request_timeout": per_attempt}

    def _verify(self) -> None:
        """Refuse to use an index this code cannot fill or search; checked until it passes."""
        if self._verified:
            return
        assert self._expected is not None  # noqa: S101 - unverified only with a shape to check
        with self._verify_lock:
            if self._verified:
                return
            try:
                problem = index_problem(
                    self._client, self._alias, self._expected, **self._deadline_params()
                )
            except OpenSearchException as exc:
                raise IndexUnavailableError() from exc
            if problem is None:
                self._verified = True
                return
        if self._on_refused is not None:
            self._on_refused(problem)
        else:
            _log.error("search index refused", extra={"reason": problem, "alias": self._alias})
        raise SearchIndexMismatchError(problem)

    def _recheck_if_gone(self, errors: Iterable[Any]) -> None:
        """An index that passed the check and is gone now (deleted by hand, a restore): check
        again, so it is refused with its reason and alarm, not retried as a passing outage."""
        gone = any(
            isinstance(error, Mapping) and error.get("type") == "index_not_found_exception"
            for error in errors
        )
        if gone and self._expected is not None:
            with self._verify_lock:
                self._verified = False
            self._verify()

    # -- writes ------------------------------------------------------------------------

    def upsert(self, documents: Sequence[IndexDocument]) -> None:
        if not documents:
            return
        self._verify()
        body: list[dict[str, Any]] = []
        for doc in documents:
            action = {
                "_index": self._alias,
                "_id": document_id(doc.tenant_id, doc.owner_id, doc.node_id),
                "routing": doc.tenant_id,
            }
            body.extend(({"index": action}, to_source(doc)))
        # Every item is read before failing: the caller retries the whole batch, which is safe
        # because an index op by id simply replaces what an earlier attempt wrote.
        self._bulk(body)
        if self._recent is not None:
            self._recent.add(documents)

    def delete(self, owner: OwnerKey, node_ids: Sequence[str]) -> None:
        if not node_ids:
            return
        self._verify()
        # The document id names tenant and owner, so another owner's node is never touched.
        body = [
            {
                "delete": {
                    "_index": self._alias,
                    "_id": document_id(owner.tenant_id, owner.owner_id, node_id),
                    "routing": owner.tenant_id,
                }
            }
            for node_id in dict.fromkeys(node_ids)
        ]
        # A document already gone (a retried delete) answers 404: that is the wanted state.
        self._bulk(body, missing_is_done=True)
        if self._recent is not None:
            self._recent.forget(owner, node_ids)

    def delete_owner(self, owner: OwnerKey) -> int:
        # Search and bulk delete rather than delete_by_query: that one lives in the reindex
        # module, which a minimal OpenSearch (the local one) does not load.
        self._verify()
        removed = 0
        after: list[Any] | None = None
        try:
            # A search sees only refreshed documents: a write not yet refreshed (the default)
            # would otherwise outlive the erasure.
            self._client.indices.refresh(index=self._alias, **self._deadline_params())
            while True:
                query: Query = {
                    "query": {"bool": {"filter": owner_clauses(owner)}},
                    "size": _ERASE_PAGE,
                    "sort": [{"node_id": "asc"}],
                    "_source": False,
                }
                if after is not None:
                    query["search_after"] = after
                response = self._client.search(
                    index=self._alias,
                    body=query,
                    routing=owner.tenant_id,
                    **self._deadline_params(),
                )
                hits = response["hits"]["hits"]
                if not hits:
                    break
                deleted = self._bulk(
                    [
                        {
                            "delete": {
                                "_index": self._alias,
                                "_id": hit["_id"],
                                "routing": owner.tenant_id,
                            }
                        }
                        for hit in hits
                    ],
                    missing_is_done=True,
                )
                removed += sum(
                    1
                    for entry in deleted.get("items", [])
                    for item in entry.values()
                    if item.get("result") == "deleted"
                )
                after = hits[-1]["sort"]
            self._client.indices.refresh(index=self._alias, **self._deadline_params())
        except OpenSearchException as exc:
            raise IndexUnavailableError() from exc
        if self._recent is not None:
            self._recent.forget_owner(owner)
        return removed

    def _bulk(self, body: list[dict[str, Any]], *, missing_is_done: bool = False) -> dict[str, Any]:
        """Send one bulk request; raise IndexUnavailableError unless every item succeeded (a
        404, with `missing_is_done`, counts as done)."""
        try:
            # `require_alias`: without it a write to a missing alias would create a plain
            # index of that name with guessed mappings, which then blocks the real alias.
            response = self._client.bulk(
                body=body, refresh=self._refresh, require_alias=True, **self._deadline_params()
            )
        except OpenSearchException as exc:
            raise IndexUnavailableError() from exc
        failed = [
            item
            for entry in response.get("items", [])
            for item in entry.values()
            if item.get("error") is not None
            and not (missing_is_done and item.get("status") == HTTPStatus.NOT_FOUND)
        ]
        if failed or (response.get("errors") and not missing_is_done):
            self._recheck_if_gone(item.get("error") for item in failed)
            raise IndexUnavailableError()
        result: dict[str, Any] = response
        return result

    # -- reads -------------------------------------------------------------------------

    def search(self, owner: OwnerKey, query: IndexQuery) -> IndexHits:
        self._verify()
        header = {"index": self._alias, "routing": owner.tenant_id}
        body: list[dict[str, Any]] = [header, self._models_request(owner)]
        run_lexical = query.lexical_k > 0
        run_vector = query.vector is not None and query.vector_k > 0
        if run_lexical:
            body.extend((header, self._lexical_request(owner, query)))
        if run_vector:
            body.extend((header, self._vector_request(owner, query)))
        try:
            responses: list[Mapping[str, Any]] = self._client.msearch(
                body=body, **self._deadline_params()
            )["responses"]
        except (OpenSearchException, KeyError, TypeError) as exc:
            raise IndexUnavailableError() from exc
        models_response = responses[0]
        lexical_response = responses[1] if run_lexical else None
        vector_response = responses[-1] if run_vector else None
        if "error" in models_response or (
            lexical_response is not None and "error" in lexical_response
        ):
            self._recheck_if_gone(response.get("error") for response in responses)
            raise IndexUnavailableError()

        lexical_hits = lexical_response["hits"]["hits"] if lexical_response else []
        lexical = [(_hit_node_id(h), float(h["_score"])) for h in lexical_hits]
        failure: str | None = None
        vector: list[tuple[str, float]] = []
        if query.vector is None:
            failure = "no_query_vector"
        elif self._other_models(models_response, query.embedding_model):
            failure = "embedding_model_mismatch"
        elif vector_response is not None and "error" in vector_response:
            failure = "vector_search_failed"
        elif vector_response is not None:
            # Lucene's cosinesimil score is (1 + cosine) / 2; report the cosine itself.
            vector = sorted(
                (
                    (_hit_node_id(h), _cosine_of_score(h["_score"]))
                    for h in vector_response["hits"]["hits"]
                ),
                key=lambda kv: (-kv[1], kv[0]),
            )
        semantic: dict[str, float] = {}
        if query.vector is not None and failure != "embedding_model_mismatch":
            semantic.update(vector)
            lexical_only = [node_id for node_id, _ in lexical if node_id not in semantic]
            cosines = self._cosines(owner, lexical_only, query.vector)
            if cosines is None:
                failure = failure or "vector_search_failed"
            else:
                semantic.update(cosines)
        return IndexHits(
            vector=tuple(vector), lexical=tuple(lexical), semantic=semantic, vector_failure=failure
        )

    def _cosines(
        self, owner: OwnerKey, node_ids: Sequence[str], vector: Sequence[float]
    ) -> dict[str, float] | None:
        """The cosine of each stored vector among `node_ids` to `vector` (ids without a vector
        are left out), scored by the node; None when the node could not answer.

        A second round trip, but only ids and scores travel: returning the lexical hits'
        vectors instead cost about 3.4 MB of JSON per retrieval at 1024 dimensions."""
        if not node_ids:
            return {}
        header = {"index": self._alias, "routing": owner.tenant_id}
        try:
            (answer,) = self._client.msearch(
                body=[header, self._cosine_request(owner, node_ids, vector)],
                **self._deadline_params(),
            )["responses"]
            if "error" in answer:
                self._recheck_if_gone([answer.get("error")])
                return None
            return {_hit_node_id(h): _cosine_of_score(h["_score"]) for h in answer["hits"]["hits"]}
        # Also when the deadline leaves no time (IndexUnavailableError): the hits found stand.
        except (IndexUnavailableError, OpenSearchException, KeyError, TypeError, ValueError):
            return None

    def session_predecessors(
        self,
        owner: OwnerKey,
        lookups: Sequence[tuple[str, datetime]],
        embedding_model: str,
    ) -> list[tuple[str, tuple[float, ...]] | None]:
        """One `_msearch` request for the whole batch (a search per record would make bulk
        materialization pay a round trip per record)."""
        if not lookups:
            return []
        self._verify()
        body: list[Query] = []
        for session_id, before in lookups:
            body.append({"index": self._alias, "routing": owner.tenant_id})
            body.append(self._predecessor_request(owner, session_id, _millis(before)))
        try:
            response = self._client.msearch(body=body, **self._deadline_params())
            answers: list[Mapping[str, Any]] = response["responses"]
            if len(answers) != len(lookups) or any("error" in a for a in answers):
                raise IndexUnavailableError()
            found = [[_said(hit["_source"]) for hit in a["hits"]["hits"]] for a in answers]
        except (OpenSearchException, KeyError, TypeError, ValueError) as exc:
            raise IndexUnavailableError() from exc
        results: list[tuple[str, tuple[float, ...]] | None] = []
        for (session_id, before), said in zip(lookups, found, strict=True):
            if self._recent is not None:
                recent = self._recent.latest_before(owner, session_id, _millis(before))
                if recent is not None:
                    said.append(recent)
            last = max(said, key=lambda s: s.order) if said else None
            if last is None or last.model != embedding_model or last.vector is None:
                results.append(None)
            else:
                results.append((last.node_id, last.vector))
        return results

    def session_neighbours(
        self, owner: OwnerKey, anchors: Sequence[tuple[str, datetime, str]], radius: int
    ) -> list[list[str]]:
        """Two searches per anchor (before and after it), all in one `_msearch` request."""
        if not anchors or radius <= 0:
            return [[] for _ in anchors]
        self._verify()
        body: list[Query] = []
        for session_id, when, node_id in anchors:
            at = _millis(when)
            for direction in ("desc", "asc"):
                body.append({"index": self._alias, "routing": owner.tenant_id})
                body.append(
                    self._neighbour_request(
                        owner, session_id, at, node_id, direction=direction, radius=radius
                    )
                )
        try:
            response = self._client.msearch(body=body, **self._deadline_params())
            answers: list[Mapping[str, Any]] = response["responses"]
            if len(answers) != 2 * len(anchors) or any("error" in a for a in answers):
                raise IndexUnavailableError()
            ids = [[_hit_node_id(hit) for hit in a["hits"]["hits"]] for a in answers]
        except (OpenSearchException, KeyError, TypeError, ValueError) as exc:
            raise IndexUnavailableError() from exc
        return [alternate(ids[2 * i], ids[2 * i + 1]) for i in range(len(anchors))]

    @staticmethod
    def _neighbour_request(
        owner: OwnerKey, session_id: str, at: int, node_id: str, *, direction: str, radius: int
    ) -> Query:
        # Before: (time, id) < (at, node_id), nearest first; after: the mirror image.
        beyond = "lt" if direction == "desc" else "gt"
        return {
            "size": radius,
            "track_total_hits": False,
            "query": {
                "bool": {
                    "filter": [*owner_clauses(owner), {"term": {"session_id": session_id}}],
                    "should": [
                        {"range": {"effective_time": {beyond: at}}},
                        {
                            "bool": {
                                "filter": [
                                    {"term": {"effective_time": at}},
                                    {"range": {"node_id": {beyond: node_id}}},
                                ]
                            }
                        },
                    ],
                    "minimum_should_match": 1,
                }
            },
            "sort": [
                {"effective_time": {"order": direction}},
                {"node_id": {"order": direction}},
            ],
            **_ONLY_NODE_ID,
        }

    @staticmethod
    def _predecessor_request(owner: OwnerKey, session_id: str, cutoff: int) -> Query:
        return {
            "size": 1,
            "track_total_hits": False,
            "query": {
                "bool": {
                    "filter": [
                        *owner_clauses(owner),
                        {"term": {"session_id": session_id}},
                        {"range": {"effective_time": {"lt": cutoff}}},
                    ]
                }
            },
            "sort": [{"effective_time": {"order": "desc"}}, {"node_id": {"order": "desc"}}],
            "_source": {
                "includes": [
                    "node_id",
                    "embedding_model",
                    "effective_time",
                    CONTENT_VECTOR_BYTES_FIELD,
                    # Documents written before the bytes field (in a version 1 index).
                    VECTOR_FIELD,
                    CONTENT_VECTOR_FIELD,
                ]
            },
        }

    @staticmethod
    def _models_request(owner: OwnerKey) -> Query:
        # Across every vector of the owner, ignoring the request's filters: vectors of another
        # model anywhere mean the space is being re-embedded and cosines are not comparable.
        return {
            "size": 0,
            "query": {
                "bool": {"filter": [*owner_clauses(owner), {"exists": {"field": VECTOR_FIELD}}]}
            },
            "aggs": {
                "models": {
                    "terms": {
                        "field": "embedding_model",
                        "size": _MODEL_BUCKETS,
                        "missing": _NO_MODEL,
                    }
                }
            },
        }

    @staticmethod
    def _other_models(response: Mapping[str, Any], model: str | None) -> bool:
        buckets = response["aggregations"]["models"]["buckets"]
        keys = {None if b["key"] == _NO_MODEL else b["key"] for b in buckets}
        return bool(keys - {model})

    @staticmethod
    def _lexical_request(owner: OwnerKey, query: IndexQuery) -> Query:
        # The same words the embedded backend searches (see backends/query_words.py).
        words = " ".join(query_words(query.text))
        return {
            "size": query.lexical_k,
            "track_scores": True,
            "query": {
                "bool": {
                    "must": [{"match": {"text": {"query": words, "operator": "or"}}}],
                    "filter": [filter_query(owner, query.filters)],
                }
            },
            # Ties in BM25 are common on short texts; the node id makes the order repeatable.
            "sort": [{"_score": {"order": "desc"}}, {"node_id": {"order": "asc"}}],
            **_ONLY_NODE_ID,
        }

    @staticmethod
    def _cosine_request(owner: OwnerKey, node_ids: Sequence[str], vector: Sequence[float]) -> Query:
        # Exact scoring of a few named documents; the k-NN plugin's own script, because
        # Painless vector functions are not available on every node (the local one).
        return {
            "size": len(node_ids),
            "track_total_hits": False,
            "query": {
                "script_score": {
                    "query": {
                        "bool": {
                            "filter": [
                                *owner_clauses(owner),
                                {"terms": {"node_id": sorted(node_ids)}},
                                {"exists": {"field": VECTOR_FIELD}},
                            ]
                        }
                    },
                    "script": {
                        "lang": "knn",
                        "source": "knn_score",
                        "params": {
                            "field": VECTOR_FIELD,
                            "query_value": list(vector),
                            "space_type": "cosinesimil",
                        },
                    },
                }
            },
            **_ONLY_NODE_ID,
        }

    @staticmethod
    def _vector_request(owner: OwnerKey, query: IndexQuery) -> Query:
        assert query.vector is not None  # noqa: S101 - only called with a query vector
        model_term: Query = (
            {"term": {"embedding_model": query.embedding_model}}
            if query.embedding_model is not None
            else {"bool": {"must_not": [{"exists": {"field": "embedding_model"}}]}}
        )
        return {
            "size": query.vector_k,
            "query": {
                "knn": {
                    VECTOR_FIELD: {
                        "vector": list(query.vector),
                        "k": query.vector_k,
                        # Inside the knn clause, so Lucene filters while it walks the graph
                        # instead of cutting down an unfiltered top-k afterwards.
                        "filter": filter_query(owner, query.filters, model_term),
                    }
                }
            },
            **_ONLY_NODE_ID,
        }


def _hit_node_id(hit: Mapping[str, Any]) -> str:
    return str(hit["fields"]["node_id"][0])


def _cosine_of_score(score: Any) -> float:
    # Lucene's cosinesimil score, in k-NN search and in knn_score alike, is (1 + cosine) / 2.
    return 2.0 * float(score) - 1.0


def _said(source: Mapping[str, Any]) -> _Said:
    packed = source.get(CONTENT_VECTOR_BYTES_FIELD)
    if packed is not None:
        vector: tuple[float, ...] | None = unpacked_vector(str(packed))
    else:
        # Written before the bytes field: the floats, in a version 1 index's `_source`.
        stored = source.get(CONTENT_VECTOR_FIELD)
        if stored is None:
            stored = source.get(VECTOR_FIELD)
        vector = _as_stored(tuple(float(x) for x in stored)) if stored is not None else None
    return _Said(
        effective=int(source["effective_time"]),
        node_id=str(source["node_id"]),
        model=source.get("embedding_model"),
        vector=vector,
    )


def build_opensearch_client(
    url: str,
    *,
    auth: Literal["none", "es"],
    region: str | None,
    timeout_s: float = 10.0,
    max_retries: int = 2,
) -> Any:
    """An opensearch-py client: plain for a local node, SigV4-signed for OpenSearch Service.

    No request is made here; credentials come from the default boto3 chain and refresh
    themselves (Lambda role credentials rotate).
    """
    from opensearchpy import OpenSearch, Urllib3AWSV4SignerAuth, Urllib3HttpConnection

    http_auth: Any = None
    if auth != "none":
        import boto3

        session = boto3.Session()
        signing_region = region or session.region_name
        if not signing_region:
            raise ValueError("a region is required to sign OpenSearch requests")
        credentials = session.get_credentials()
        if credentials is None:
            raise ValueError("no AWS credentials found to sign OpenSearch requests")
        http_auth = Urllib3AWSV4SignerAuth(credentials, signing_region, auth)
    secure = url.lower().startswith("https://")
    return OpenSearch(
        hosts=[url],
        http_auth=http_auth,
        use_ssl=secure,
        verify_certs=secure,
        connection_class=Urllib3HttpConnection,
        timeout=timeout_s,
        max_retries=max_retries,
        # Every request this adapter sends is idempotent (index by id, searches).
        retry_on_timeout=True,
    )

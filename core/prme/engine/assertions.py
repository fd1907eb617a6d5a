"""Exact assertion aggregation and the state of a fact, over every extracted claim of an owner.

Both read the owner's nodes page by page (never all at once) and look only at extracted claims
(the `claim` records extraction writes on fact nodes). Claim fields are read defensively: a
missing polarity is affirmed, and a claim whose fields are broken is counted as malformed,
never guessed at. `knowledge_at` is answered from what the ledger keeps: the node's creation
and update times, and the creation time of the `supersedes` edges that point at it.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Literal

from prme.engine.deps import EngineDeps
from prme.engine.quantities import event_time_exclusion, normalized_set
from prme.model.assertions import (
    ASSERTION_GROUP_ORDER,
    AssertionAggregation,
    AssertionDimension,
    AssertionExclusion,
    AssertionGroup,
    AssertionQuery,
    AssertionSample,
    AssertionState,
    AssertionStateQuery,
    AssertionTimelineEntry,
    Polarity,
    normalize_assertion_predicate,
    normalize_subject,
)
from prme.model.enums import (
    INACTIVE_LIFECYCLE_STATES,
    EpistemicType,
    LifecycleState,
    RetrievalMode,
)
from prme.model.extraction import assertion_key
from prme.model.extraction import predicate_key as predicate_family
from prme.model.records import EXTRACTION_METADATA_KEY, MemoryNode, OwnerKey

# Nodes read per ledger page: memory holds one page of nodes at a time.
SCAN_PAGE_SIZE = 500
SUPERSEDES_EDGE = "supersedes"
_POLARITIES: frozenset[str] = frozenset({"affirmed", "negated"})


@dataclass(frozen=True)
class _Claim:
    """A claim node's recorded fields, type-checked, with their normalized forms."""

    node: MemoryNode
    subject: str
    predicate: str
    object: str | None
    polarity: Polarity
    # The `subject|family` key extraction saved with the claim (None before it saved one).
    stored_key: str | None = None

    @cached_property
    def fact_key(self) -> tuple[str, str]:
        """(subject, predicate family) of the fact this claim states a value of: "live in",
        "moved to" and "relocated to" are one family (`lives_in`), as ingest matches them."""
        key = self.stored_key or assertion_key(self.subject, self.predicate, self.object)
        subject, _, family = key.rpartition("|")
        return subject, family

    @cached_property
    def subject_key(self) -> str:
        return normalize_subject(self.subject)

    @cached_property
    def predicate_key(self) -> str:
        return normalize_assertion_predicate(self.predicate)

    @cached_property
    def object_key(self) -> str | None:
        return normalize_subject(self.object) if self.object is not None else None

    def key(self, dimension: AssertionDimension) -> str | None:
        if dimension == "subject":
            return self.subject_key
        if dimension == "predicate":
            return self.predicate_key
        if dimension == "object":
            return self.object_key
        return self.polarity

    @property
    def start(self) -> datetime:
        """Where its validity window starts: valid_from, else when it was said or stored."""
        return self.node.valid_from or self.node.effective_time

    @property
    def order(self) -> tuple[datetime, datetime, str]:
        return (self.start, self.node.created_at, self.node.id)


def read_claim(node: MemoryNode) -> _Claim | Literal["malformed"] | None:
    """The claim recorded on a node; None when it holds none, "malformed" when it is broken."""
    meta = node.metadata.get(EXTRACTION_METADATA_KEY)
    if not isinstance(meta, dict) or meta.get("kind") != "claim":
        return None
    subject, predicate, obj = meta.get("subject"), meta.get("predicate"), meta.get("object")
    polarity = meta.get("polarity")
    stored_key = meta.get("assertion_key")
    if not all(isinstance(text, str) and normalize_subject(text) for text in (subject, predicate)):
        return "malformed"
    if obj is not None and not isinstance(obj, str):
        return "malformed"
    if polarity is None:
        polarity = "affirmed"
    if polarity not in _POLARITIES:
        return "malformed"
    return _Claim(
        node=node,
        subject=str(subject),
        predicate=str(predicate),
        # A blank object records no value, like a missing one.
        object=obj if obj is not None and normalize_subject(obj) else None,
        polarity="negated" if polarity == "negated" else "affirmed",
        stored_key=stored_key if isinstance(stored_key, str) and "|" in stored_key else None,
    )


def scan_nodes(deps: EngineDeps, owner: OwnerKey, page_size: int) -> Iterator[MemoryNode]:
    """Every readable node of the owner, one ledger page at a time, in id order."""
    after: str | None = None
    while True:
        nodes, after = deps.ledger.list_nodes_page(owner, after_id=after, limit=page_size)
        yield from nodes
        if after is None:
            return


StateAt = Literal["active", "superseded", "inactive"]


@dataclass(frozen=True)
class _Judged:
    """A node as of knowledge_at: its lifecycle class then, its validity end then, and whether
    both were rebuilt exactly."""

    state: StateAt
    valid_to: datetime | None
    exact: bool


def _stored_class(node: MemoryNode) -> StateAt:
    if node.lifecycle_state is LifecycleState.SUPERSEDED:
        return "superseded"
    return "inactive" if node.lifecycle_state in INACTIVE_LIFECYCLE_STATES else "active"


class _AsOf:
    """Judges nodes as of `knowledge_at` (None: as stored now)."""

    def __init__(self, deps: EngineDeps, owner: OwnerKey, knowledge_at: datetime | None) -> None:
        self._deps, self._owner, self.at = deps, owner, knowledge_at

    def known(self, node: MemoryNode) -> bool:
        return self.at is None or node.created_at <= self.at

    def judge(self, node: MemoryNode) -> _Judged:
        """The node's lifecycle class and validity end at knowledge_at.

        Exact when nothing changed since (updated_at at or before it), when it is active now
        (states only move forward, and no inactive state returns to an active one), or when a
        supersedes edge dates its supersedence (a supersedence accepts only active nodes and
        writes the validity end, so before it the node was active with an open window).
        Otherwise (archived or deprecated after knowledge_at, with no supersedence) the node
        is judged by its stored state and the result says it was not exact."""
        stored = _stored_class(node)
        if self.at is None or node.updated_at <= self.at or stored == "active":
            return _Judged(stored, node.valid_to, exact=True)
        superseded_at = self._superseded_at(node)
        if superseded_at is None:
            return _Judged(stored, node.valid_to, exact=False)
        if superseded_at <= self.at:
            return _Judged("superseded", node.valid_to, exact=True)
        # Extracted claims are stored without a validity end; the end this node has now was
        # written by a supersedence nobody knew of at knowledge_at.
        return _Judged("active", None, exact=True)

    def _superseded_at(self, node: MemoryNode) -> datetime | None:
        times = [
            edge.created_at
            for edge in self._deps.ledger.list_node_edges(self._owner, node.id)
            if edge.edge_type == SUPERSEDES_EDGE and edge.target_node_id == node.id
        ]
        return min(times) if times else None


def _in_window(claim: _Claim, valid_to: datetime | None, at: datetime) -> bool:
    return claim.start <= at and (valid_to is None or at < valid_to)


def _expired(node: MemoryNode, at: datetime) -> bool:
    return node.expires_at is not None and node.expires_at <= at


# -- aggregation ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Filters:
    """The query's filters in normalized form, prepared once per scan."""

    subjects: frozenset[str] | None
    predicates: frozenset[str] | None
    # The predicate families the query's predicates name ("live" -> lives_in).
    families: frozenset[str] | None
    objects: frozenset[str] | None

    @classmethod
    def of(cls, query: AssertionQuery) -> _Filters:
        return cls(
            subjects=normalized_set(query.subjects, normalize_subject),
            predicates=normalized_set(query.predicates, normalize_assertion_predicate),
            families=_families(query.predicates),
            objects=normalized_set(query.objects, normalize_subject),
        )

    def accepts(self, claim: _Claim, query: AssertionQuery) -> bool:
        if query.scopes is not None and claim.node.scope not in query.scopes:
            return False
        if query.polarities is not None and claim.polarity not in query.polarities:
            return False
        if self.subjects is not None and claim.subject_key not in self.subjects:
            return False
        if self.predicates is not None and not (
            claim.predicate_key in self.predicates or claim.fact_key[1] in (self.families or ())
        ):
            return False
        return self.objects is None or (
            claim.object_key is not None and claim.object_key in self.objects
        )


def _families(values: tuple[str, ...] | None) -> frozenset[str] | None:
    if values is None:
        return None
    return frozenset(predicate_family(value) for value in values)


def _exclusion(
    claim: _Claim,
    query: AssertionQuery,
    as_of: _AsOf,
    now: datetime,
) -> tuple[AssertionExclusion | None, bool]:
    """Why a matched claim is not counted (None: it counts), and whether its state at
    knowledge_at was judged inexactly."""
    node = claim.node
    if not as_of.known(node):
        return "not_yet_known", False
    if query.lifecycle_states is not None and node.lifecycle_state not in query.lifecycle_states:
        return "lifecycle_state", False
    judged: _Judged | None = None
    if query.retrieval_mode is RetrievalMode.DEFAULT:
        if node.epistemic_type is EpistemicType.HYPOTHETICAL:
            return "hypothetical", False
        if node.epistemic_type is EpistemicType.DEPRECATED:
            return "retracted", False
        judged = as_of.judge(node)
        if judged.state != "active":
            return "inactive", not judged.exact
        if _expired(node, as_of.at or now):
            return "expired", not judged.exact
    if query.valid_at is not None:
        judged = judged or as_of.judge(node)
        if not _in_window(claim, judged.valid_to, query.valid_at):
            return "not_valid_at", not judged.exact
    return None, judged is not None and not judged.exact


def _judge(
    claim: _Claim, query: AssertionQuery, filters: _Filters, as_of: _AsOf, now: datetime
) -> tuple[bool, AssertionExclusion | None, bool]:
    """Whether a claim matched the filters, why it is not counted (None: it counts), and
    whether its state at knowledge_at was judged inexactly."""
    if not filters.accepts(claim, query):
        return False, "filtered", False
    outside = event_time_exclusion(claim.node, query.event_time_from, query.event_time_to)
    if outside is not None:
        return False, outside, False
    reason, inexact = _exclusion(claim, query, as_of, now)
    return True, reason, inexact


@dataclass
class _Group:
    key: tuple[str | None, ...]
    count: int = 0
    events: set[str] = field(default_factory=set)
    # (when said, node id, sample), oldest first, at most sample_limit of them.
    samples: list[tuple[datetime, str, AssertionSample]] = field(default_factory=list)

    def add(self, claim: _Claim, sample_limit: int) -> None:
        self.count += 1
        self.events.update(claim.node.evidence_refs)
        if sample_limit == 0:
            return
        entry = (claim.node.effective_time, claim.node.id, _sample(claim))
        if len(self.samples) == sample_limit and entry[:2] >= self.samples[-1][:2]:
            return
        bisect.insort(self.samples, entry, key=lambda kept: kept[:2])
        del self.samples[sample_limit:]


def _sample(claim: _Claim) -> AssertionSample:
    node = claim.node
    return AssertionSample(
        node_id=node.id,
        subject=claim.subject,
        predicate=claim.predicate,
        object=claim.object,
        polarity=claim.polarity,
        lifecycle_state=node.lifecycle_state,
        event_ids=node.evidence_refs,
        event_time=node.event_time,
        valid_from=node.valid_from,
        valid_to=node.valid_to,
    )


def aggregate_assertions(
    deps: EngineDeps,
    owner: OwnerKey,
    query: AssertionQuery,
    *,
    page_size: int = SCAN_PAGE_SIZE,
) -> AssertionAggregation:
    """Count every extracted assertion of the owner that matches, per group, exactly."""
    now = deps.clock.now()
    filters = _Filters.of(query)
    as_of = _AsOf(deps, owner, query.knowledge_at)
    dimensions = tuple(d for d in ASSERTION_GROUP_ORDER if d in query.group_by)
    exclusions: dict[AssertionExclusion, int] = {}
    groups: dict[tuple[str | None, ...], _Group] = {}
    scanned = claim_nodes = matched = counted = inexact = 0
    for node in scan_nodes(deps, owner, page_size):
        scanned += 1
        claim = read_claim(node)
        if claim is None:
            continue
        claim_nodes += 1
        reason: AssertionExclusion = "malformed"
        if claim != "malformed":
            was_matched, outcome, judged_inexactly = _judge(claim, query, filters, as_of, now)
            matched += was_matched
            inexact += judged_inexactly
            if outcome is None:
                counted += 1
                key = tuple(claim.key(d) for d in dimensions)
                groups.setdefault(key, _Group(key)).add(claim, query.sample_limit)
                continue
            reason = outcome
        exclusions[reason] = exclusions.get(reason, 0) + 1
    ordered = sorted(groups.values(), key=lambda g: (-g.count, _key_order(g.key)))
    return AssertionAggregation(
        query=query,
        scanned_nodes=scanned,
        claim_nodes=claim_nodes,
        matched=matched,
        counted=counted,
        groups=tuple(
            _summarize(g, dimensions, query.sample_limit) for g in ordered[: query.group_limit]
        ),
        group_count=len(ordered),
        groups_truncated=len(ordered) > query.group_limit,
        exclusions=dict(sorted(exclusions.items())),
        knowledge_at_inexact=inexact,
    )


def _key_order(key: tuple[str | None, ...]) -> tuple[tuple[bool, str], ...]:
    # A missing object sorts after every recorded one.
    return tuple((part is None, part or "") for part in key)


def _summarize(
    group: _Group, dimensions: tuple[AssertionDimension, ...], sample_limit: int
) -> AssertionGroup:
    return AssertionGroup(
        key=dict(zip(dimensions, group.key, strict=True)),
        count=group.count,
        event_count=len(group.events),
        samples=tuple(sample for _, _, sample in group.samples),
        samples_truncated=group.count > sample_limit,
    )


# -- the state of one fact --------------------------------------------------------------------


@dataclass(frozen=True)
class _Stated:
    claim: _Claim
    judged: _Judged


def _may_hold(stated: _Stated, at: datetime) -> bool:
    """Whether an assertion can be a value (or end one) at all as known then: not retracted
    or hypothetical, not expired, and neither archived nor deprecated (a superseded one still
    holds inside its window)."""
    node = stated.claim.node
    if node.epistemic_type in (EpistemicType.HYPOTHETICAL, EpistemicType.DEPRECATED):
        return False
    if _expired(node, at):
        return False
    if stated.judged.state == "inactive":
        return False
    # A supersedence without a recorded end leaves no window in which the old value held.
    return not (stated.judged.state == "superseded" and stated.judged.valid_to is None)


def get_assertion_state(
    deps: EngineDeps,
    owner: OwnerKey,
    query: AssertionStateQuery,
    *,
    page_size: int = SCAN_PAGE_SIZE,
) -> AssertionState:
    """The value(s) of one fact at valid_at as known at knowledge_at, with its timeline."""
    now = deps.clock.now()
    valid_at = query.valid_at or now
    knowledge_at = query.knowledge_at or now
    as_of = _AsOf(deps, owner, knowledge_at)
    subject_key = normalize_subject(query.subject)
    predicate_key = normalize_assertion_predicate(query.predicate)
    family = predicate_family(query.predicate)
    # Only this fact's assertions are kept: memory grows with them, not with the owner.
    stated: list[_Stated] = []
    scanned = 0
    for node in scan_nodes(deps, owner, page_size):
        scanned += 1
        claim = read_claim(node)
        if claim is None or claim == "malformed":
            continue
        fact_subject, fact_family = claim.fact_key
        if subject_key not in (claim.subject_key, fact_subject):
            continue
        if predicate_key != claim.predicate_key and family != fact_family:
            continue
        if query.scope is not None and node.scope is not query.scope:
            continue
        if as_of.known(node):
            stated.append(_Stated(claim, as_of.judge(node)))
    stated.sort(key=lambda s: s.claim.order)
    ended_by = _ends(stated, valid_at, knowledge_at)
    current_ids = {
        s.claim.node.id
        for s in stated
        if s.claim.polarity == "affirmed"
        and _may_hold(s, knowledge_at)
        and _in_window(s.claim, s.judged.valid_to, valid_at)
        and s.claim.node.id not in ended_by
    }
    holding = [s for s in reversed(stated) if s.claim.node.id in current_ids]
    values = {s.claim.object_key for s in holding}
    status: Literal["unknown", "current", "ambiguous"] = (
        "unknown" if not values else "current" if len(values) == 1 else "ambiguous"
    )
    kept = stated[-query.limit :]
    return AssertionState(
        query=query,
        subject_key=subject_key,
        predicate_key=predicate_key,
        valid_at=valid_at,
        knowledge_at=knowledge_at,
        status=status,
        value=holding[0].claim.object if status == "current" else None,
        candidates=tuple(_entry(s, None, current=True) for s in holding[: query.limit]),
        candidate_count=len(holding),
        timeline=tuple(
            _entry(s, ended_by.get(s.claim.node.id), current=s.claim.node.id in current_ids)
            for s in kept
        ),
        timeline_count=len(stated),
        timeline_truncated=len(stated) > len(kept),
        scanned_nodes=scanned,
        knowledge_at_inexact=sum(not s.judged.exact for s in stated),
    )


def _ends(stated: list[_Stated], valid_at: datetime, knowledge_at: datetime) -> dict[str, str]:
    """Affirmed node id -> the first negation after it in the timeline, in effect at
    valid_at, that denies its value (a negation without an object denies every value)."""
    ended: dict[str, str] = {}
    # Values not yet denied, by normalized object, in timeline order.
    open_values: dict[str | None, list[str]] = {}
    for each in stated:
        claim = each.claim
        if claim.polarity == "affirmed":
            open_values.setdefault(claim.object_key, []).append(claim.node.id)
            continue
        if not _may_hold(each, knowledge_at) or claim.start > valid_at:
            continue
        denied = list(open_values) if claim.object_key is None else [claim.object_key]
        for key in denied:
            for node_id in open_values.pop(key, []):
                ended[node_id] = claim.node.id
    return ended


def _entry(stated: _Stated, ended_by: str | None, *, current: bool) -> AssertionTimelineEntry:
    claim, node = stated.claim, stated.claim.node
    return AssertionTimelineEntry(
        node_id=node.id,
        object=claim.object,
        object_key=claim.object_key,
        polarity=claim.polarity,
        valid_from=node.valid_from,
        valid_to=stated.judged.valid_to,
        lifecycle_state=node.lifecycle_state,
        active_at_knowledge_at=stated.judged.state == "active",
        event_time=node.event_time,
        created_at=node.created_at,
        event_ids=node.evidence_refs,
        ended_by=ended_by,
        current=current,
    )

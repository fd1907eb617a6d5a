"""Knowledge updates on ingest: which earlier claims a newly extracted claim supersedes.

Candidates come from a bounded read by assertion key (subject + predicate family), never a
scan of the owner's nodes; the supersedence itself is the lifecycle module's state change,
committed by the extraction in the same change as its new nodes.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from prme.engine.deps import EngineDeps
from prme.engine.lifecycle import superseded_by
from prme.errors import IndexUnavailableError
from prme.model.enums import INACTIVE_LIFECYCLE_STATES, NodeType
from prme.model.extraction import (
    OUTDATED_CLAIMS_KEY,
    SINGLE_VALUED_KEYS,
    SUPERSEDES_KEY,
    object_key,
    stored_assertion_key,
)
from prme.model.records import EXTRACTION_METADATA_KEY, MemoryEdge, MemoryNode, OwnerKey
from prme.retrieval.update_wording import worded_as_correction

# Earlier claims read per assertion key: enough for the active values of one fact, whose
# superseded predecessors sort after them only when they are older.
CANDIDATES_PER_KEY = 50
# Records said just before a correction, in its session, that it may be correcting: a
# correction answers something said a moment ago, not a fact from another conversation.
# The entities a message names are records of its session too, so the reach counts them.
CORRECTION_REACH = 8


@dataclass
class SupersedencePlan:
    """The node changes and edges that record which earlier claims the new ones replace."""

    updates: list[tuple[MemoryNode, MemoryNode]] = field(default_factory=list)
    edges: list[MemoryEdge] = field(default_factory=list)
    # One entry per superseded node, for the extraction's journal record.
    superseded: list[dict[str, str]] = field(default_factory=list)
    # The notes of the superseded claims' sources, marked as holding outdated claims.
    sources: list[tuple[MemoryNode, MemoryNode]] = field(default_factory=list)


def _claim(node: MemoryNode) -> dict[str, Any]:
    extracted = node.metadata.get(EXTRACTION_METADATA_KEY)
    return extracted if isinstance(extracted, dict) else {}


def _source_time(node: MemoryNode) -> datetime:
    return node.event_time or node.created_at


def replaces(new: dict[str, Any], old: dict[str, Any]) -> bool:
    """True when claim `new` supersedes claim `old` of the same assertion key.

    A negation withdraws the value it names (or, naming none, every value); an affirmed claim
    replaces the value it says it replaces, and any other value of a single-valued fact
    (where one lives, where one works). Without such a signal both values stand.
    """
    if old.get("polarity") == "negated":
        return False  # a withdrawal holds no value that a later claim could replace
    new_value = object_key(new.get("object"))
    old_value = object_key(old.get("object"))
    if new.get("polarity") == "negated":
        return not new_value or new_value == old_value
    if new_value == old_value:
        return False  # the same value again: a repetition, not an update
    if new.get("replaces_object") and object_key(new["replaces_object"]) == old_value:
        return True
    family = str(new.get("assertion_key", "")).rpartition("|")[2]
    return family in SINGLE_VALUED_KEYS and bool(new_value)


def plan_supersedences(
    deps: EngineDeps,
    owner: OwnerKey,
    claims: list[MemoryNode],
    *,
    evidence_id: str,
    seed: uuid.UUID,
    now: datetime,
    limit: int,
) -> SupersedencePlan:
    """What the new claim nodes supersede among the owner's active claims in the same scope;
    at most `limit` of them (newest first), so the change fits one transaction."""
    plan = SupersedencePlan()
    produced = {n.id for n in claims}
    taken: set[str] = set()
    for new in claims:
        key = stored_assertion_key(new.metadata)
        if key is None:
            continue
        candidates = deps.ledger.list_assertion_nodes(owner, key, CANDIDATES_PER_KEY)
        for old in [*candidates, *_corrected_records(deps, owner, new)]:
            if (
                old.id in produced
                or old.id in taken
                or old.scope is not new.scope
                or old.lifecycle_state in INACTIVE_LIFECYCLE_STATES
                # An older source arriving late does not overrule what was said after it.
                or _source_time(old) > _source_time(new)
                or not (replaces(_claim(new), _claim(old)) or _corrects(new, old))
            ):
                continue
            if len(taken) >= limit:
                return _with_sources(deps, owner, plan, now)
            _supersede(plan, taken, old, new, evidence_id=evidence_id, seed=seed, now=now)
            for note in _stale_notes(deps, owner, old, taken):
                if len(taken) >= limit:
                    return _with_sources(deps, owner, plan, now)
                _supersede(plan, taken, note, new, evidence_id=evidence_id, seed=seed, now=now)
    return _with_sources(deps, owner, plan, now)


def _with_sources(
    deps: EngineDeps, owner: OwnerKey, plan: SupersedencePlan, now: datetime
) -> SupersedencePlan:
    plan.sources = _outdated_sources(deps, owner, [old for old, _ in plan.updates], now)
    return plan


def _outdated_sources(
    deps: EngineDeps, owner: OwnerKey, superseded: list[MemoryNode], now: datetime
) -> list[tuple[MemoryNode, MemoryNode]]:
    """The active notes that still hold a superseded claim's words while their other claims
    stand (a note whose every claim is superseded is superseded itself), marked with the ids
    of those claims: the context then says the note is partly outdated instead of showing an
    old value as current. One read per source event; at most one write per note."""
    by_event: dict[str, list[str]] = {}
    # A note superseded in this very change gets no second update.
    changing = {old.id for old in superseded}
    for old in superseded:
        if old.node_type is not NodeType.NOTE and old.evidence_refs:
            by_event.setdefault(old.evidence_refs[0], []).append(old.id)
    marked: list[tuple[MemoryNode, MemoryNode]] = []
    for event_id, claim_ids in by_event.items():
        for note in deps.ledger.list_event_nodes(owner, event_id):
            if (
                note.node_type is not NodeType.NOTE
                or note.id in changing
                or note.evidence_refs[:1] != (event_id,)
                or note.lifecycle_state in INACTIVE_LIFECYCLE_STATES
            ):
                continue
            claim = _claim(note)
            outdated = sorted({*claim.get(OUTDATED_CLAIMS_KEY, ()), *claim_ids})
            metadata = {
                **note.metadata,
                EXTRACTION_METADATA_KEY: {**claim, OUTDATED_CLAIMS_KEY: outdated},
            }
            marked.append((note, note.model_copy(update={"metadata": metadata, "updated_at": now})))
    return marked


def _marked_only(node: MemoryNode) -> bool:
    """A note whose extraction metadata is only the partly-outdated mark (no claim of its own)."""
    return node.node_type is NodeType.NOTE and "kind" not in _claim(node)


def _value_pattern(value: str | None) -> re.Pattern[str] | None:
    words = object_key(value).split()
    if not words:
        return None
    return re.compile(r"(?<!\w)" + r"\W+".join(map(re.escape, words)) + r"(?!\w)", re.IGNORECASE)


def _corrects(new: MemoryNode, old: MemoryNode) -> bool:
    """True when `new` is a correction that names the value `old` says and withdraws it
    ("I meant Tuesday, not Thursday" after "My appointment is on Thursday")."""
    claim = _claim(new)
    withdrawn = _value_pattern(claim.get("replaces_object"))
    current = _value_pattern(claim.get("object"))
    return (
        withdrawn is not None
        and worded_as_correction(new.content)
        and old.node_type is not NodeType.ENTITY
        and withdrawn.search(old.content) is not None
        # "The 12th is my sister's; mine is the 21st" already holds the corrected value.
        and (current is None or current.search(old.content) is None)
    )


def _corrected_records(deps: EngineDeps, owner: OwnerKey, new: MemoryNode) -> list[MemoryNode]:
    """The records said just before correction `new` in its session (the ones it may be
    correcting); none when it is no correction or the index cannot say."""
    claim = _claim(new)
    if not claim.get("replaces_object") or not new.session_id:
        return []
    if not worded_as_correction(new.content):
        return []
    try:
        (found,) = deps.index.session_neighbours(
            owner, [(new.session_id, _source_time(new), new.id)], CORRECTION_REACH
        )
    except IndexUnavailableError:
        return []  # unsure what it corrects: both values stand, as without the correction
    return list(deps.ledger.get_nodes(owner, found).values()) if found else []


def _supersede(
    plan: SupersedencePlan,
    taken: set[str],
    old: MemoryNode,
    new: MemoryNode,
    *,
    evidence_id: str,
    seed: uuid.UUID,
    now: datetime,
) -> None:
    taken.add(old.id)
    valid_to = max(new.valid_from or now, old.valid_from or now)
    updated, edge = superseded_by(
        old,
        new,
        edge_id=str(uuid.uuid5(seed, f"supersedes:{old.id}")),
        evidence_id=evidence_id,
        now=now,
        valid_to=valid_to,
    )
    plan.updates.append((old, updated))
    plan.edges.append(edge)
    plan.superseded.append({"old_node_id": old.id, "new_node_id": new.id, "edge_id": edge.id})


def _stale_notes(
    deps: EngineDeps, owner: OwnerKey, claim: MemoryNode, taken: set[str]
) -> list[MemoryNode]:
    """The raw notes of `claim`'s sources that became stale with it.

    A message of several sentences keeps its words in a note of its own and its claims in
    fact nodes; once every claim that message made is superseded, the note holds only stale
    values and would otherwise still be retrieved as if they held. A note that says something
    still current (another active claim of its source) stays.
    """
    if claim.node_type is NodeType.NOTE:
        return []  # the note carried the claim itself: superseding the claim was enough
    stale: list[MemoryNode] = []
    for event_id in claim.evidence_refs:
        nodes = deps.ledger.list_event_nodes(owner, event_id)
        claims = [
            n
            for n in nodes
            if EXTRACTION_METADATA_KEY in n.metadata and n.id != claim.id and not _marked_only(n)
        ]
        if any(
            n.id not in taken and n.lifecycle_state not in INACTIVE_LIFECYCLE_STATES
            for n in claims
            if n.node_type is not NodeType.ENTITY
        ):
            continue
        stale += [
            n
            for n in nodes
            if n.node_type is NodeType.NOTE
            and n.id not in taken
            and n.lifecycle_state not in INACTIVE_LIFECYCLE_STATES
            and (EXTRACTION_METADATA_KEY not in n.metadata or _marked_only(n))
            and claim.content in n.content
        ]
    return stale


def mark_superseding(node: MemoryNode, plan: SupersedencePlan) -> MemoryNode:
    """`node` with the ids it supersedes in its claim metadata (`supersedes`), if any."""
    replaced = [s["old_node_id"] for s in plan.superseded if s["new_node_id"] == node.id]
    if not replaced:
        return node
    claim = {**_claim(node), SUPERSEDES_KEY: replaced}
    return node.model_copy(update={"metadata": {**node.metadata, EXTRACTION_METADATA_KEY: claim}})

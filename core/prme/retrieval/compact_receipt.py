"""The compact stored form of a retrieval receipt: each node id once, candidates as short rows
holding only what replay needs, and content digests only for what the context showed."""

from __future__ import annotations

import base64
import re
import uuid
from typing import Any

from prme.retrieval.fusion import FusionConfig, FusionInput, fuse

# The receipt fields that pass through unchanged.
_PLAIN_FIELDS = (
    "schema_version",
    "request_id",
    "owner_id",
    "created_at",
    "query",
    "query_sha256",
    "reference_time",
    "config",
    "backend_failures",
)
_RETURNED = "returned"
_PACKED_ID = 22  # characters of a UUID's 16 bytes in unpadded base64url


# A UUID as `str(uuid.UUID(...))` writes it: lowercase hex in groups of 8-4-4-4-12.
_CANONICAL_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _uuid_ids(ids: list[str]) -> bool:
    """True when every id is a canonical UUID string, which packs into 22 characters."""
    return all(_CANONICAL_UUID.fullmatch(i) for i in ids)


def _pack_id(node_id: str) -> str:
    """A canonical UUID's 16 bytes in unpadded base64url (its hex digits read directly)."""
    return base64.urlsafe_b64encode(bytes.fromhex(node_id.replace("-", "")))[:_PACKED_ID].decode()


def _unpack_ids(packed: str) -> list[str]:
    return [
        str(uuid.UUID(bytes=base64.urlsafe_b64decode(packed[i : i + _PACKED_ID] + "==")))
        for i in range(0, len(packed), _PACKED_ID)
    ]


def _pack_digest(hex_digest: str | None) -> str | None:
    if hex_digest is None:
        return None
    return base64.urlsafe_b64encode(bytes.fromhex(hex_digest)).decode().rstrip("=")


def _unpack_digest(packed: str | None) -> str | None:
    return None if packed is None else base64.urlsafe_b64decode(packed + "=").hex()


def _entry(position: int, entry: dict[str, Any], index: dict[str, int]) -> list[Any]:
    """A context entry as a row; a full entry whose ref follows the m1, m2, ... order keeps
    only its record and tokens."""
    at, tokens = index[entry["node_id"]], entry["tokens"]
    if entry["representation"] == "full" and entry["ref"] == f"m{position + 1}":
        return [at, tokens]
    return [at, tokens, entry["ref"], entry["representation"], entry["folded_into"]]


def _unpack_entry(position: int, row: list[Any], ids: list[str]) -> dict[str, Any]:
    ref, representation, folded_into = (
        (f"m{position + 1}", "full", None) if len(row) == 2 else row[2:]
    )
    return {
        "ref": ref,
        "node_id": ids[row[0]],
        "representation": representation,
        "tokens": row[1],
        "folded_into": folded_into,
    }


def _time(value: float | None) -> float | int | None:
    # Event times are mostly whole seconds; an int prints two characters shorter.
    if value is not None and float(value).is_integer():
        return int(value)
    return value


def _group_outcomes(rows: list[dict[str, Any]]) -> dict[str, list[int]]:
    grouped: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        if row["outcome"] != _RETURNED:
            grouped.setdefault(row["outcome"], []).append(i)
    return grouped


def session_context_provenance(anchor: str, decay: float, score: float) -> dict[str, Any]:
    """How a record added as session context was scored: its anchor's score times the decay."""
    return {
        "formula_version": 2,
        "session_context": {"anchor": anchor, "decay": decay},
        "score": score,
    }


def compact_payload(full: dict[str, Any]) -> dict[str, Any]:
    """The compact form of a receipt given as JSON values (the fields of `RetrievalReceipt`).

    Fused scores, score provenance, raw channel scores and evidence refs are not kept: scores
    and provenance are recomputed from the saved ranks on expansion; content digests and
    semantic relevance are kept for the returned records and the context's entries only."""
    fused_rows = [c for c in full["candidates"] if c.get("context_of") is None]
    context_rows = [c for c in full["candidates"] if c.get("context_of") is not None]
    ids = [c["node_id"] for c in fused_rows] + [c["node_id"] for c in context_rows]
    index = {node_id: i for i, node_id in enumerate(ids)}
    channels = sorted({name for c in fused_rows for name in c["ranks"]})
    sessions: list[str] = []
    session_index: dict[str, int] = {}

    def session_of(row: dict[str, Any]) -> int:
        session = row.get("session_id")
        if session is None:
            return -1
        if session not in session_index:
            session_index[session] = len(sessions)
            sessions.append(session)
        return session_index[session]

    context = full["context"]
    shown = set(full["returned_node_ids"]) | {str(e["node_id"]) for e in context["entries"]}
    packed_ids = _uuid_ids(ids)
    excluded_runs: list[list[Any]] = []
    for item in context["excluded"]:
        if excluded_runs and excluded_runs[-1][0] == item["reason"]:
            excluded_runs[-1][1].append(index[item["node_id"]])
        else:
            excluded_runs.append([item["reason"], [index[item["node_id"]]]])
    all_rows = fused_rows + context_rows
    return {
        **{name: full[name] for name in _PLAIN_FIELDS},
        "uuid_ids": packed_ids,
        "ids": "".join(_pack_id(i) for i in ids) if packed_ids else ids,
        "channels": channels,
        "sessions": sessions,
        # Per fused candidate, in saved order: its rank in each channel (0: absent), its
        # time and its session's index (-1: none).
        "rows": [
            [*(c["ranks"].get(name, 0) for name in channels), _time(c["time"]), session_of(c)]
            for c in fused_rows
        ],
        # Per record added as session context: its anchor, time, session, score.
        "context_rows": [
            [index[c["context_of"]], _time(c["time"]), session_of(c), c["score"]]
            for c in context_rows
        ],
        "features": {str(i): c["features"] for i, c in enumerate(fused_rows) if c.get("features")},
        # Why each record left out was left out: reason to the indexes of its records.
        "outcomes": _group_outcomes(all_rows),
        # What feedback validates against: digest and cosine of every record shown.
        "shown": [
            [i, _pack_digest(c["content_sha256"]), c.get("semantic_relevance")]
            for i, c in enumerate(all_rows)
            if c["node_id"] in shown
        ],
        "returned": [index[i] for i in full["returned_node_ids"]],
        "context": {
            "context_sha256": context["context_sha256"],
            "tokens_used": context["tokens_used"],
            "entries": [_entry(k, e, index) for k, e in enumerate(context["entries"])],
            "excluded": excluded_runs,
            "visible_value_bindings": context.get("visible_value_bindings", []),
        },
        "session_context": [
            [index[s["node_id"]], index[s["anchor"]]] for s in full.get("session_context", [])
        ],
    }


def expand_payload(compact: dict[str, Any]) -> dict[str, Any]:
    """The receipt's fields as JSON values from its compact form (see `compact_payload`)."""
    ids: list[str] = _unpack_ids(compact["ids"]) if compact["uuid_ids"] else compact["ids"]
    channels = compact["channels"]
    sessions = compact["sessions"]
    features = compact["features"]
    outcomes = {i: reason for reason, members in compact["outcomes"].items() for i in members}
    shown = {i: (_unpack_digest(digest), cosine) for i, digest, cosine in compact["shown"]}
    fusion = FusionConfig.model_validate(compact["config"]["fusion"])
    decay = compact["config"]["session_context_rank_fusion_score_decay"]

    def session(i: int) -> str | None:
        return None if i < 0 else str(sessions[i])

    inputs = [
        FusionInput(
            ids[i],
            {name: rank for name, rank in zip(channels, row[:-2], strict=True) if rank},
            row[-2],
            features.get(str(i), {}),
            session(row[-1]),
        )
        for i, row in enumerate(compact["rows"])
    ]
    scored = {c.node_id: c for c in fuse(inputs, fusion)}
    candidates: list[dict[str, Any]] = []
    for i, item in enumerate(inputs):
        outcome = outcomes.get(i, _RETURNED)
        digest, cosine = shown.get(i, (None, None))
        fused = scored[item.node_id]
        candidates.append(
            {
                "node_id": item.node_id,
                "content_sha256": digest,
                "time": item.time,
                "ranks": item.ranks,
                "features": item.features,
                "session_id": item.session,
                "channel_scores": {},
                "semantic_relevance": cosine,
                "score": fused.score,
                "score_provenance": fused.provenance(),
                "evidence_refs": [],
                "outcome": outcome,
            }
        )
    for j, (anchor, time, session_index, score) in enumerate(compact["context_rows"]):
        i = len(inputs) + j
        outcome = outcomes.get(i, _RETURNED)
        digest, cosine = shown.get(i, (None, None))
        candidates.append(
            {
                "node_id": ids[i],
                "content_sha256": digest,
                "time": time,
                "ranks": {},
                "features": {},
                "session_id": session(session_index),
                "context_of": ids[anchor],
                "channel_scores": {},
                "semantic_relevance": cosine,
                "score": score,
                "score_provenance": session_context_provenance(ids[anchor], decay, score),
                "evidence_refs": [],
                "outcome": outcome,
            }
        )
    context = compact["context"]
    return {
        **{name: compact[name] for name in _PLAIN_FIELDS},
        "candidates": candidates,
        "returned_node_ids": [ids[i] for i in compact["returned"]],
        "context": {
            "context_sha256": context["context_sha256"],
            "tokens_used": context["tokens_used"],
            "entries": [_unpack_entry(k, row, ids) for k, row in enumerate(context["entries"])],
            "excluded": [
                {"node_id": ids[i], "reason": reason}
                for reason, members in context["excluded"]
                for i in members
            ],
            "visible_value_bindings": context["visible_value_bindings"],
        },
        "session_context": [
            {"node_id": ids[i], "anchor": ids[a]} for i, a in compact["session_context"]
        ],
    }

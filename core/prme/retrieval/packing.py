"""Packing ranked memories into a token budget and rendering them as model context.

Records are never truncated: one that does not fit is left out (reason token_budget)
and smaller later records may still fill the remaining budget. The rendering is one code
path (`_line_parts`, `_assemble`) that packing and the rebuild of a saved context share.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Literal

from prme.model.canonical import sha256_text
from prme.model.enums import LifecycleState
from prme.model.extraction import holds_outdated_claims
from prme.model.records import MemoryNode
from prme.retrieval.results import ContextEntry, ExcludedCandidate
from prme.retrieval.tokens import TokenCounter

ContextFormat = Literal["reader", "auditable"]
# The state tag of a contested record in the context.
CONTESTED_TAG = "contested"
# The tag of a note that states values a later message superseded (its other words stand).
OUTDATED_TAG = "partly outdated"


def _state_tag(node: MemoryNode) -> str | None:
    if node.lifecycle_state is LifecycleState.CONTESTED:
        return CONTESTED_TAG
    if holds_outdated_claims(node.metadata):
        return OUTDATED_TAG
    return None


@dataclass(frozen=True)
class PackedContext:
    context: str
    context_sha256: str
    tokens_used: int
    entries: list[ContextEntry]
    excluded: list[ExcludedCandidate]
    # The rendered line of each content-bearing entry, by node id.
    lines: dict[str, str]


PackingLayout = Literal["sessions", "ranked"]
_NO_GROUP = (date.min, "")
# How a receipt names the layout it was packed in (its config.packing_order).
RANKED_ORDER = "rank"
SESSION_GROUPED_ORDER = "rank_admitted_session_grouped"


def packing_order(context_format: ContextFormat, layout: PackingLayout) -> str:
    """The receipt's name for how the context was laid out: only the reader format groups."""
    return SESSION_GROUPED_ORDER if _grouped(context_format, layout) else RANKED_ORDER


def layout_of(saved_packing_order: str) -> PackingLayout:
    """The layout a receipt's packing_order names."""
    return "sessions" if saved_packing_order == SESSION_GROUPED_ORDER else "ranked"


def _grouped(context_format: ContextFormat, layout: PackingLayout) -> bool:
    return layout == "sessions" and context_format == "reader"


def render_record(
    ref: str, node: MemoryNode, context_format: ContextFormat, *, with_time: bool = True
) -> str:
    head, body = _record_parts(ref, node, context_format, with_time=with_time)
    return head + body


def _record_parts(
    ref: str, node: MemoryNode, context_format: ContextFormat, *, with_time: bool
) -> tuple[str, str]:
    """A reader line as its per-retrieval head ("[m3] 2023-05-08 13:56") and its body
    (" Caroline: text"), split where the tokenizer splits too, so the body's count can be
    cached across retrievals and head + body counts equal the line's."""
    if context_format == "auditable":
        when = node.effective_time
        record = {
            "ref": ref,
            "node_id": node.id,
            "time": when.isoformat(),
            "speaker": node.speaker,
            "source_type": node.source_type.value,
            "session_id": node.session_id,
            "text": node.content,
        }
        if (state := _state_tag(node)) is not None:
            record["state"] = state
        return json.dumps(record, ensure_ascii=False, separators=(",", ":")), ""
    text = node.content
    speaker = node.speaker
    if speaker and not text.startswith(speaker):
        text = f"{speaker}: {text}"
    # A contested claim says so where the model reads it: another memory contradicts it; so
    # does a note some of whose values were superseded by a later message.
    state = _state_tag(node)
    tag = f" [{state}]" if state is not None else ""
    if not with_time:
        return f"[{ref}]{tag}", f" {text}"
    when = node.effective_time
    return f"[{ref}] {when.strftime('%Y-%m-%d %H:%M')}{tag}", f" {text}"


def _line_parts(
    ref: str, node: MemoryNode, context_format: ContextFormat, *, grouped: bool
) -> tuple[str, str]:
    """A record's line as packed: a grouped line leaves its date to the group's header."""
    return _record_parts(ref, node, context_format, with_time=not grouped)


def _group_of(node: MemoryNode) -> tuple[date, str]:
    """Records of one day and session share a header that carries their date once."""
    return node.effective_time.date(), node.session_id or ""


def _header(group: tuple[date, str]) -> str:
    day, session = group
    return f"[{day.isoformat()} {session}]" if session else f"[{day.isoformat()}]"


def pack_context(
    ranked: Sequence[MemoryNode],
    *,
    token_budget: int,
    counter: TokenCounter,
    context_format: ContextFormat,
    fold_repeated_text: bool,
    layout: PackingLayout = "ranked",
) -> PackedContext:
    """Admit records in rank order while they fit, then render them.

    `ranked` (and the auditable format) prints records in rank order, each with its time.
    `sessions` prints the same admitted records grouped under a date-and-session header,
    oldest group first and each group in time order, so a conversation reads in order and
    its date costs tokens once per group instead of once per record. Refs (m1, m2, ...)
    follow rank in both layouts."""
    grouped = _grouped(context_format, layout)
    entries: list[ContextEntry] = []
    excluded: list[ExcludedCandidate] = []
    lines: dict[str, str] = {}
    first_ref_by_text: dict[str, str] = {}
    groups_open: set[tuple[date, str]] = set()
    admitted: list[MemoryNode] = []
    used = 0
    for node in ranked:
        ref = f"m{len(entries) + 1}"
        if fold_repeated_text and node.content in first_ref_by_text:
            entries.append(
                ContextEntry(
                    ref=ref,
                    node_id=node.id,
                    representation="folded",
                    tokens=0,
                    folded_into=first_ref_by_text[node.content],
                )
            )
            continue
        head, body = _line_parts(ref, node, context_format, grouped=grouped)
        line = head + body
        # A newline separates records; count it against the budget too.
        cost = counter.count(head) + (counter.count(body) if body else 0) + (1 if entries else 0)
        group = _group_of(node) if grouped else _NO_GROUP
        if grouped and group not in groups_open:
            cost += counter.count(_header(group)) + 1
        if used + cost > token_budget:
            excluded.append(ExcludedCandidate(node_id=node.id, reason="token_budget"))
            continue
        used += cost
        if grouped:
            groups_open.add(group)
        admitted.append(node)
        entries.append(ContextEntry(ref=ref, node_id=node.id, representation="full", tokens=cost))
        lines[node.id] = line
        first_ref_by_text.setdefault(node.content, ref)
    context = _assemble(admitted, lines, grouped=grouped)
    return PackedContext(
        context=context,
        context_sha256=sha256_text(context),
        tokens_used=counter.count(context) if context else 0,
        entries=entries,
        excluded=excluded,
        lines=lines,
    )


def render_context(
    records: Sequence[tuple[str, MemoryNode]],
    *,
    context_format: ContextFormat,
    layout: PackingLayout,
) -> str:
    """The context text of the records given as (ref, node) in ref order, rendered exactly as
    `pack_context` renders the records it admitted (folded entries carry no text: leave them
    out). Rebuilding a saved context from its receipt's entries goes through here."""
    grouped = _grouped(context_format, layout)
    lines = {
        node.id: "".join(_line_parts(ref, node, context_format, grouped=grouped))
        for ref, node in records
    }
    return _assemble([node for _, node in records], lines, grouped=grouped)


def _assemble(admitted: Sequence[MemoryNode], lines: Mapping[str, str], *, grouped: bool) -> str:
    """The admitted records' lines joined: in rank order, or under their group headers."""
    if not grouped:
        return "\n".join(lines[n.id] for n in admitted)
    return _render_grouped(admitted, lines)


def _render_grouped(admitted: Sequence[MemoryNode], lines: Mapping[str, str]) -> str:
    moment = {n.id: n.effective_time.timestamp() for n in admitted}
    by_group: dict[tuple[date, str], list[MemoryNode]] = {}
    for node in admitted:
        by_group.setdefault(_group_of(node), []).append(node)
    out: list[str] = []
    for group, members in sorted(
        by_group.items(), key=lambda kv: (min(moment[n.id] for n in kv[1]), kv[0])
    ):
        out.append(_header(group))
        out.extend(lines[n.id] for n in sorted(members, key=lambda n: (moment[n.id], n.id)))
    return "\n".join(out)

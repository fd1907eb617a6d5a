"""Packing ranked memories into a token budget and rendering them as model context.

Records are never truncated: one that does not fit is left out (reason token_budget)
and smaller later records may still fill the remaining budget.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from prme.model.canonical import sha256_text
from prme.model.records import MemoryNode
from prme.retrieval.results import ContextEntry, ExcludedCandidate
from prme.retrieval.tokens import TokenCounter

ContextFormat = Literal["reader", "auditable"]


@dataclass(frozen=True)
class PackedContext:
    context: str
    context_sha256: str
    tokens_used: int
    entries: list[ContextEntry]
    excluded: list[ExcludedCandidate]
    # The rendered line of each content-bearing entry, by node id.
    lines: dict[str, str]


def render_record(ref: str, node: MemoryNode, context_format: ContextFormat) -> str:
    when = node.event_time or node.created_at
    if context_format == "auditable":
        record = {
            "ref": ref,
            "node_id": node.id,
            "time": when.isoformat(),
            "speaker": node.speaker,
            "source_type": node.source_type.value,
            "session_id": node.session_id,
            "text": node.content,
        }
        return json.dumps(record, ensure_ascii=False, separators=(",", ":"))
    text = node.content
    speaker = node.speaker
    if speaker and not text.startswith(speaker):
        text = f"{speaker}: {text}"
    return f"[{ref}] {when.strftime('%Y-%m-%d %H:%M')} {text}"


def pack_context(
    ranked: Sequence[MemoryNode],
    *,
    token_budget: int,
    counter: TokenCounter,
    context_format: ContextFormat,
    fold_repeated_text: bool,
) -> PackedContext:
    entries: list[ContextEntry] = []
    excluded: list[ExcludedCandidate] = []
    lines: dict[str, str] = {}
    first_ref_by_text: dict[str, str] = {}
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
        line = render_record(ref, node, context_format)
        # A newline separates records; count it against the budget too.
        cost = counter.count(line) + (1 if entries else 0)
        if used + cost > token_budget:
            excluded.append(ExcludedCandidate(node_id=node.id, reason="token_budget"))
            continue
        used += cost
        entries.append(ContextEntry(ref=ref, node_id=node.id, representation="full", tokens=cost))
        lines[node.id] = line
        first_ref_by_text.setdefault(node.content, ref)
    context = "\n".join(lines[e.node_id] for e in entries if e.representation == "full")
    return PackedContext(
        context=context,
        context_sha256=sha256_text(context),
        tokens_used=counter.count(context) if context else 0,
        entries=entries,
        excluded=excluded,
        lines=lines,
    )

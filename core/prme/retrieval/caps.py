"""Post-fusion selection: the semantic floor, per-source and per-evidence caps, and the limit."""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Literal

from prme.model.records import MemoryNode

ExclusionReason = Literal[
    "min_score", "source_limit", "evidence_limit", "limit", "token_budget", "response_size"
]


@dataclass(frozen=True)
class Selection:
    selected: list[MemoryNode]
    excluded: dict[str, ExclusionReason]

    def keep_only(self, kept: set[str], reason: ExclusionReason) -> Selection:
        """The selection reduced to `kept`, the others excluded for `reason`."""
        dropped = {n.id: reason for n in self.selected if n.id not in kept}
        return Selection(
            selected=[n for n in self.selected if n.id in kept],
            excluded={**self.excluded, **dropped},
        )


def select_results(
    ranked: Sequence[MemoryNode],
    *,
    semantic: dict[str, float],
    min_score: float | None,
    apply_min_score: bool,
    max_per_source: int | None,
    max_per_evidence: int | None,
    limit: int,
) -> Selection:
    """Walk the fused order once; later groups fill the limit as earlier ones hit their caps."""
    selected: list[MemoryNode] = []
    excluded: dict[str, ExclusionReason] = {}
    per_source: Counter[Hashable] = Counter()
    per_evidence: Counter[Hashable] = Counter()
    for node in ranked:
        if apply_min_score and min_score is not None:
            cosine = semantic.get(node.id)
            if cosine is None or cosine < min_score:
                excluded[node.id] = "min_score"
                continue
        evidence = tuple(sorted(set(node.evidence_refs)))
        if max_per_source is not None and evidence:
            source_key = (evidence, node.content.encode("utf-8"))
            if per_source[source_key] >= max_per_source:
                excluded[node.id] = "source_limit"
                continue
        if max_per_evidence is not None and evidence and per_evidence[evidence] >= max_per_evidence:
            excluded[node.id] = "evidence_limit"
            continue
        if len(selected) >= limit:
            excluded[node.id] = "limit"
            continue
        selected.append(node)
        if evidence:
            per_source[(evidence, node.content.encode("utf-8"))] += 1
            per_evidence[evidence] += 1
    return Selection(selected=selected, excluded=excluded)

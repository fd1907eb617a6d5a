"""Ranking weights fitted offline to judged retrievals, and scored on judgments held out.

A judged retrieval is a saved receipt's fused candidates with the nodes a person (or an
answer's citations) marked relevant. Re-ranking it under other weights is the receipt's replay
with other fusion settings (`receipts.rank_candidates`), so no search runs again and the
figures hold for exactly the candidates the retrievals had.

The fit is a coordinate search: each weight in turn tries the values of its small grid with
every other weight held, keeping a value only when it raises the mean NDCG@10 over the
training retrievals (an equal score keeps the value it started from); two rounds over every
weight at most, so the work is bounded by rounds x grid size x training retrievals x
candidates. Each re-ranking is the replay's own arithmetic over every candidate kept, which
costs tens of microseconds a candidate: the callers bound both counts.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from prme.model.learning import CHANNELS, RankingWeights
from prme.retrieval.fusion import FusionConfig, FusionInput
from prme.retrieval.receipts import rank_candidates

METRIC = "ndcg@10"
CUTOFF = 10
# A proposal is recommended when it beats the baseline on the held-out retrievals by this
# much (NDCG@10, absolute) and is no worse on the training retrievals.
RECOMMEND_MARGIN = 0.01
ROUNDS = 2
# The values each weight may take. A weight also keeps the value it starts from (unset: the
# one each receipt was ranked with). Scores are sums and products of the channel terms, so
# only the ratio of the channel weights matters; both get a grid so either may lose weight.
GRIDS: Mapping[str, tuple[float, ...]] = {
    "rrf_k": (5, 10, 20, 40, 80),
    "channel_weights.vector": (0.25, 0.5, 1.0, 2.0, 4.0),
    "channel_weights.lexical": (0.25, 0.5, 1.0, 2.0, 4.0),
    "speaker_boost": (0.0, 1.0, 2.0, 4.0),
    "time_mention_boost": (0.0, 0.5, 1.0, 2.0),
    "session_neighbour_weight": (0.0, 0.1, 0.2, 0.35),
    "recency_boost": (0.0, 0.25, 0.5),
    "current_value_boost": (0.0, 1.0, 2.0),
    "correction_boost": (0.0, 1.0, 2.0),
}
_CHANNEL_PREFIX = "channel_weights."
# Scores closer than this count as equal (sums of floats in another order differ slightly).
_EPSILON = 1e-12


@dataclass(frozen=True)
class JudgedRetrieval:
    """One saved retrieval's fused candidates (as replay reads them) and its relevant nodes."""

    request_id: str
    receipt_checksum: str
    fusion: FusionConfig
    candidates: tuple[FusionInput, ...]
    relevant: frozenset[str]


@dataclass(frozen=True)
class Split:
    """Judged retrievals divided into those the weights are fitted on and those held out."""

    train: tuple[JudgedRetrieval, ...]
    holdout: tuple[JudgedRetrieval, ...]

    def fitted_on(self, most: int) -> tuple[JudgedRetrieval, ...]:
        """The training retrievals the search scores, at most `most` (in request id order)."""
        return self.train[:most]


@dataclass(frozen=True)
class Search:
    """The weights a coordinate search ended with, and whether it ran to its end (False: the
    caller's `go_on` stopped it first, and the weights are the best found until then)."""

    weights: RankingWeights
    complete: bool


@dataclass(frozen=True)
class FitResult:
    """The fitted weights and the metric of both weight sets on both parts of the split."""

    proposal: RankingWeights
    baseline_train: float
    proposal_train: float
    baseline_holdout: float
    proposal_holdout: float
    search_complete: bool = True

    @property
    def gain(self) -> float:
        return self.proposal_holdout - self.baseline_holdout

    @property
    def recommended(self) -> bool:
        return self.gain >= RECOMMEND_MARGIN and self.proposal_train >= self.baseline_train


def apply_weights(config: FusionConfig, weights: RankingWeights) -> FusionConfig:
    """`config` with the settings `weights` overrides; channel weights are merged per channel."""
    overrides: dict[str, Any] = dict(weights.overrides())
    channels = overrides.pop("channel_weights", None)
    if channels is not None:
        for name, value in channels.items():
            if name not in CHANNELS:
                raise ValueError(f"Unknown ranking channel: {name}")
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"A channel weight must be a finite number >= 0: {name}")
        overrides["channel_weights"] = {**config.channel_weights, **channels}
    if not overrides:
        return config
    return config.model_copy(update=overrides)


def holdout_fraction(request_id: str) -> float:
    """Where a retrieval falls in [0, 1): from a hash of its id, so the split never moves."""
    digest = hashlib.sha256(request_id.encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def split_judged(judged: Sequence[JudgedRetrieval], holdout_share: float) -> Split:
    """Held out: the retrievals whose id hashes below `holdout_share`; the order given does
    not matter, and a retrieval stays on its side as judgments accumulate."""
    ordered = sorted(judged, key=lambda j: j.request_id)
    holdout = tuple(j for j in ordered if holdout_fraction(j.request_id) < holdout_share)
    train = tuple(j for j in ordered if holdout_fraction(j.request_id) >= holdout_share)
    return Split(train=train, holdout=holdout)


def ndcg_at(ranking: Sequence[str], relevant: frozenset[str], cutoff: int = CUTOFF) -> float:
    """NDCG of binary relevance at `cutoff`: 1 when the relevant nodes lead the ranking."""
    if not relevant:
        return 0.0
    gained = sum(
        1.0 / math.log2(position + 2)
        for position, node_id in enumerate(ranking[:cutoff])
        if node_id in relevant
    )
    ideal = sum(1.0 / math.log2(position + 2) for position in range(min(len(relevant), cutoff)))
    return gained / ideal


def mean_metric(judged: Sequence[JudgedRetrieval], weights: RankingWeights) -> float:
    """Mean NDCG@10 of the retrievals re-ranked under `weights` (0 for none)."""
    if not judged:
        return 0.0
    total = sum(
        ndcg_at(rank_candidates(j.candidates, apply_weights(j.fusion, weights)), j.relevant)
        for j in judged
    )
    return total / len(judged)


def fit_weights(
    train: Sequence[JudgedRetrieval],
    start: RankingWeights,
    *,
    rounds: int = ROUNDS,
    grids: Mapping[str, tuple[float, ...]] = GRIDS,
) -> RankingWeights:
    """Coordinate search from `start` for the weights with the best mean NDCG@10 on `train`.

    Deterministic: coordinates and grid values are tried in a fixed order, a value replaces
    the current one only when it scores strictly better, and a search that finds nothing
    better returns `start` itself."""
    return search_weights(train, start, rounds=rounds, grids=grids).weights


def search_weights(
    train: Sequence[JudgedRetrieval],
    start: RankingWeights,
    *,
    rounds: int = ROUNDS,
    grids: Mapping[str, tuple[float, ...]] = GRIDS,
    go_on: Callable[[int], bool] | None = None,
) -> Search:
    """`fit_weights`, asking `go_on` (given the re-rankings done so far) before each trial
    whether to start it: a caller under a deadline stops the search with the best so far."""
    current = start
    best = mean_metric(train, current)
    ranked = len(train)
    for _ in range(rounds):
        improved = False
        for coordinate, grid in grids.items():
            for value in grid:
                candidate = _with_value(current, coordinate, value)
                if candidate == current:
                    continue
                if go_on is not None and not go_on(ranked):
                    return Search(weights=current, complete=False)
                score = mean_metric(train, candidate)
                ranked += len(train)
                if score > best + _EPSILON:
                    current, best, improved = candidate, score, True
        if not improved:
            break
    return Search(weights=current, complete=True)


def evaluate_fit(
    split: Split,
    baseline: RankingWeights,
    *,
    max_fit: int | None = None,
    go_on: Callable[[int], bool] | None = None,
) -> FitResult:
    """Fit on the training retrievals (the first `max_fit` of them when given) from
    `baseline`, then score both on both whole parts; `go_on` may stop the search early
    (`search_weights`), never the scoring."""
    fit_on = split.train if max_fit is None else split.fitted_on(max_fit)
    search = search_weights(fit_on, baseline, go_on=go_on)
    proposal = search.weights
    return FitResult(
        proposal=proposal,
        search_complete=search.complete,
        baseline_train=mean_metric(split.train, baseline),
        proposal_train=mean_metric(split.train, proposal),
        baseline_holdout=mean_metric(split.holdout, baseline),
        proposal_holdout=mean_metric(split.holdout, proposal),
    )


def input_checksum(judged: Sequence[JudgedRetrieval]) -> str:
    """SHA-256 hex over the judged retrievals' ids and receipt checksums, in id order: what a
    profile was learned from, whatever order the judgments were read in."""
    lines = sorted(f"{j.request_id} {j.receipt_checksum}\n" for j in judged)
    return hashlib.sha256("".join(lines).encode()).hexdigest()


def _with_value(weights: RankingWeights, coordinate: str, value: float) -> RankingWeights:
    if coordinate.startswith(_CHANNEL_PREFIX):
        channel = coordinate.removeprefix(_CHANNEL_PREFIX)
        channels = {**(weights.channel_weights or {}), channel: float(value)}
        return weights.model_copy(update={"channel_weights": channels})
    typed: Callable[[float], float | int] = int if coordinate == "rrf_k" else float
    return weights.model_copy(update={coordinate: typed(value)})

"""Learning ranking weights from an owner's judged retrievals, evaluated on a holdout.

A judged retrieval is one whose receipt a relevance judgment or an answer citation names.
Its relevant nodes: those a judgment labelled true, and those an answer cited (unless a
judgment labelled them false; a node judged twice keeps its latest label). Context entries an
answer did not cite, and nodes labelled false, count as not relevant, as every unlabelled
candidate does (the metric, NDCG@10, gains only from relevant nodes). Only fused candidates can
be re-ranked: a label on a record that entered as session context is left out.

Nothing is written: the evaluation reads judgments, citations and receipts, and returns
numbers, with the body of `create_ranking_profile` that saves the proposal; a profile is
created from it (or not) by the caller. The baseline is the owner's profile active for the
scopes learned for, so a proposal is compared with what ranks their retrievals now.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from prme.engine.deadlines import remaining_seconds
from prme.engine.deps import EngineDeps
from prme.engine.feedback import CITATIONS, MAX_PAGE, RELEVANCE
from prme.engine.journal import list_journal
from prme.engine.ranking_profiles import active_ranking_profile
from prme.engine.reads import get_receipt_record
from prme.engine.retrieve import fusion_config_for
from prme.errors import NotEnoughJudgmentsError, NotFoundError
from prme.model.enums import Scope
from prme.model.feedback import AnswerCitationRecord, RelevanceRecord
from prme.model.inputs import RetrievalFilters
from prme.model.learning import (
    MAX_FIT_RETRIEVALS,
    LearningEvaluation,
    LearningInput,
    ProfileEvaluation,
    RankingProfileInput,
    RankingWeights,
    sorted_scopes,
)
from prme.model.records import JournalRecord, OwnerKey
from prme.retrieval.fusion import FusionConfig
from prme.retrieval.receipts import RetrievalReceipt
from prme.retrieval.weight_fit import (
    METRIC,
    RECOMMEND_MARGIN,
    JudgedRetrieval,
    evaluate_fit,
    input_checksum,
    split_judged,
)

# At least this many judged retrievals on each side of the split, or nothing is proposed.
MIN_TRAIN = 10
MIN_HOLDOUT = 5
# The fused candidates of one receipt re-ranked, in saved order: a node ranked below that has
# little chance of reaching the first ten under the weights tried, and each candidate costs
# every re-ranking time (a retrieval that fills a budget fuses up to 300).
MAX_CANDIDATES = 100
# Under a request deadline (API Gateway answers 504 after 29 s): reading receipts stops once it
# has used this share of what was left when the evaluation began; the search stops before a
# trial when what is left would not cover that trial and the scoring of both whole parts
# (estimated from the search's own pace) SCORING_MARGIN times over, plus the answer's share.
READ_SHARE = 0.5
SCORING_MARGIN = 2.0
ANSWER_SHARE = 0.1


@dataclass
class _Judgments:
    """What the owner's judgments and citations say about one retrieval."""

    labels: dict[str, bool] = field(default_factory=dict)
    cited: set[str] = field(default_factory=set)

    def relevant(self) -> frozenset[str]:
        labelled_false = {node for node, relevant in self.labels.items() if not relevant}
        labelled_true = {node for node, relevant in self.labels.items() if relevant}
        return frozenset(labelled_true | (self.cited - labelled_false))


def evaluate_learning(
    deps: EngineDeps, owner: OwnerKey, request: LearningInput
) -> LearningEvaluation:
    """Fit ranking weights to the owner's judged retrievals in scope and score the proposal
    against the baseline on the retrievals held out; raises NotEnoughJudgmentsError when
    either side of the split would be too small."""
    judgments: dict[str, _Judgments] = {}
    relevance = [
        RelevanceRecord.model_validate(record.payload)
        for record in _records(deps, owner, RELEVANCE.prefix, request.max_records)
        if record.operation == RELEVANCE.operation
    ]
    # A node judged twice keeps its latest label.
    for judgment in sorted(relevance, key=lambda r: (r.created_at, r.feedback_id)):
        judgments.setdefault(judgment.request_id, _Judgments()).labels.update(judgment.labels)
    citations = [
        AnswerCitationRecord.model_validate(record.payload)
        for record in _records(deps, owner, CITATIONS.prefix, request.max_records)
        if record.operation == CITATIONS.operation
    ]
    for citation in citations:
        judgments.setdefault(citation.request_id, _Judgments()).cited.update(
            citation.cited_node_ids
        )
    scopes = frozenset(request.scopes) if request.scopes else None
    budget = remaining_seconds()
    read_until = None if budget is None else budget * (1 - READ_SHARE)
    usable: list[JudgedRetrieval] = []
    to_read = sorted(judgments)[: request.max_records]
    read = 0
    for request_id in to_read:
        if read_until is not None and _left() <= read_until:
            break
        read += 1
        judged_retrieval = _judged(deps, owner, request_id, judgments[request_id], scopes)
        if judged_retrieval is not None:
            usable.append(judged_retrieval)
    split = split_judged(usable, request.holdout_share)
    if len(split.train) < MIN_TRAIN or len(split.holdout) < MIN_HOLDOUT:
        raise NotEnoughJudgmentsError(
            f"Learning needs at least {MIN_TRAIN} judged retrievals to fit and {MIN_HOLDOUT} "
            f"held out; {len(usable)} judged retrievals are usable ({len(split.train)} to fit, "
            f"{len(split.holdout)} held out at holdout_share {request.holdout_share})"
            + (
                f"; {len(to_read) - read} more were not read in the time of this request"
                if read < len(to_read)
                else ""
            )
        )
    baseline, baseline_profile_id = _baseline(deps, owner, request.scopes)
    fit_on = len(split.fitted_on(MAX_FIT_RETRIEVALS))
    scoring = 2 * (len(split.train) + len(split.holdout))
    fit = evaluate_fit(
        split,
        baseline,
        max_fit=MAX_FIT_RETRIEVALS,
        go_on=None if budget is None else _pace_keeper(budget, fit_on + scoring),
    )
    checksum = input_checksum(usable)
    holdout = ProfileEvaluation(
        holdout_size=len(split.holdout),
        metric=METRIC,
        baseline_metric=fit.baseline_holdout,
        proposal_metric=fit.proposal_holdout,
        gain=fit.gain,
        recommended=fit.recommended,
        input_checksum=checksum,
    )
    return LearningEvaluation(
        proposal=fit.proposal,
        baseline=baseline,
        baseline_profile_id=baseline_profile_id,
        scopes=request.scopes,
        metric=METRIC,
        holdout_share=request.holdout_share,
        relevance_records=len(relevance),
        citation_records=len(citations),
        judged_retrievals=len(judgments),
        skipped_retrievals=len(judgments) - len(usable),
        train_size=len(split.train),
        fit_size=len(split.fitted_on(MAX_FIT_RETRIEVALS)),
        holdout_size=len(split.holdout),
        baseline_train=fit.baseline_train,
        proposal_train=fit.proposal_train,
        baseline_holdout=fit.baseline_holdout,
        proposal_holdout=fit.proposal_holdout,
        gain=fit.gain,
        recommend_margin=RECOMMEND_MARGIN,
        recommended=fit.recommended,
        input_checksum=checksum,
        complete=read == len(to_read) and fit.search_complete,
        unread_retrievals=len(to_read) - read,
        search_complete=fit.search_complete,
        profile=RankingProfileInput(
            scopes=sorted_scopes(request.scopes or ()),
            weights=fit.proposal,
            baseline_profile_id=baseline_profile_id,
            evaluation=holdout,
        ),
    )


def _left() -> float:
    left = remaining_seconds()
    return float("inf") if left is None else left


def _pace_keeper(budget: float, rankings_after: int) -> Callable[[int], bool]:
    """Whether the search may start its next trial: what is left of the deadline must cover
    that trial and the scoring after it (`rankings_after` re-ranked retrievals, at the pace
    measured so far) SCORING_MARGIN times, and keep the answer's share of `budget`."""
    started = _left()

    def go_on(ranked: int) -> bool:
        left = _left()
        pace = (started - left) / max(ranked, 1)
        return left - SCORING_MARGIN * pace * rankings_after > ANSWER_SHARE * budget

    return go_on


def _baseline(
    deps: EngineDeps, owner: OwnerKey, scopes: list[Scope] | None
) -> tuple[RankingWeights, str | None]:
    """The weights a proposal is compared with, and the profile they are: the owner's profile
    active for these scopes now, by the rule a retrieval filtered to them follows (neutral,
    each retrieval's own settings, when none is)."""
    profile = active_ranking_profile(deps, owner, scopes)
    if profile is None:
        return RankingWeights(), None
    return profile.weights, profile.profile_id


def _records(deps: EngineDeps, owner: OwnerKey, prefix: str, most: int) -> Iterator[JournalRecord]:
    """At most `most` of the owner's journal records under `prefix`, in id order."""
    after: str | None = None
    read = 0
    while read < most:
        wanted = min(MAX_PAGE, most - read)
        page = list_journal(deps, owner, prefix, after_id=after, limit=wanted)
        yield from page
        read += len(page)
        if len(page) < wanted:
            return
        after = page[-1].id


def _judged(
    deps: EngineDeps,
    owner: OwnerKey,
    request_id: str,
    judgments: _Judgments,
    scopes: frozenset[Scope] | None,
) -> JudgedRetrieval | None:
    """The retrieval as the fit sees it, or None when it cannot take part: its receipt is
    gone, its scope filter reaches beyond `scopes`, or no fused candidate is relevant."""
    try:
        saved = get_receipt_record(deps, owner, request_id)
    except NotFoundError:
        return None
    receipt = RetrievalReceipt.from_payload(saved.payload)
    if scopes is not None and not _within(receipt, scopes):
        return None
    fusion = receipt.config.fusion
    if receipt.config.ranking_profile_id is not None:
        fusion = _without_profile(fusion, deps)
    candidates = tuple(receipt.fusion_inputs()[:MAX_CANDIDATES])
    fused = {c.node_id for c in candidates}
    relevant = judgments.relevant() & fused
    if not relevant:
        return None
    return JudgedRetrieval(
        request_id=request_id,
        receipt_checksum=saved.checksum,
        fusion=fusion,
        candidates=candidates,
        relevant=relevant,
    )


def _without_profile(fusion: FusionConfig, deps: EngineDeps) -> FusionConfig:
    """A profiled receipt's fusion settings with every weight a profile can set back at the
    engine's value, so the baseline and the proposal re-rank it as they would a retrieval
    made today (a weight they leave unset must not keep the old profile's value)."""
    engine = fusion_config_for(deps.config, "")
    return fusion.model_copy(
        update={name: getattr(engine, name) for name in RankingWeights.model_fields}
    )


def _within(receipt: RetrievalReceipt, scopes: frozenset[Scope]) -> bool:
    """True when the retrieval was filtered to some of `scopes` and no other: a retrieval
    without a scope filter searched every scope, so it teaches nothing about these alone."""
    filtered = RetrievalFilters.model_validate(receipt.config.filters).scopes
    return filtered is not None and filtered <= scopes

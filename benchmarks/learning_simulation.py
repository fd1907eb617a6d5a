"""Learning from feedback, simulated on LoCoMo: judgments on some questions, the gain on others.

Run: `.venv/bin/python -m benchmarks.learning_simulation [--quick] [--data DIR]
[--conversations 26,30] [--embedder minilm|hashing] [--json PATH]`.

Protocol, per conversation (a fresh embedded memory and owner, stored exactly as
`benchmarks.locomo_evidence` stores it):
- The scored questions (categories 1-4 with valid evidence; `--quick`: the first two
  conversations, first eight sessions, as there) are split in two by a hash of the
  conversation and the question's index: `train` (judged by the simulated user) and
  `held out` (never judged, used only to measure).
- Each train question is retrieved through the public client (`token_budget` 4096, every other
  parameter at its default) and judged with `client.record_relevance`, as a user who knows the
  answer would: every evidence turn among the results true, and the first three results that
  are no evidence false. A question whose evidence was not returned gets only the negatives.
- `client.evaluate_learning` (holdout share 0.3 of those judged retrievals) fits the owner's
  ranking weights against the profile active for the owner (none here: the engine's
  settings) and says whether it recommends them; `client.create_ranking_profile` saves the
  proposal from the evaluation's `profile` body as is, and `client.activate_ranking_profile`
  activates it in the owner-wide slot when the evaluation recommends it (otherwise the gate
  refuses it, and the benchmark does not try).
- Every held-out question is retrieved twice through the client: with
  `ranking_profile: "none"` (baseline: the engine's settings) and with the default
  `"active"` (learned: the active profile when one was activated, its id named in the
  response's metrics; the baseline's ranking where none was). Reported per conversation and
  overall: all evidence in the top 10 results, all evidence in the packed context, and the
  mean reciprocal rank of the first evidence turn among the results (0 when none was
  returned).

Numbers are measured, never asserted; a small or negative gain is reported as it is.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from benchmarks.locomo_evidence import (
    CATEGORIES,
    DEFAULT_DATA,
    QUICK_CONVERSATIONS,
    QUICK_SESSIONS,
    TOKEN_BUDGET,
    TOP_K,
    WARM_UP_QUERY,
    Conversation,
    Evidence,
    Question,
    context_node_ids,
    conversation_files,
    embedder_label,
    load_conversation,
    normalize_evidence,
    store_conversation,
    truncate,
)
from benchmarks.memory_clients import embedded_client
from benchmarks.results import start_run, write_result
from prme.client import MemoryClient
from prme.errors import NotEnoughJudgmentsError
from prme.model.learning import LearningEvaluation, RankingProfile, RankingProfileState
from prme.settings import Settings

DEFAULT_JSON = Path("benchmarks/results/learning_simulation.json")
# Share of each conversation's questions held out of the judging.
HELD_OUT_SHARE = 0.5
# What evaluate_learning holds out of the judged retrievals.
LEARNING_HOLDOUT_SHARE = 0.3
NEGATIVES_PER_JUDGMENT = 3


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def held_out(conversation: str, question: Question) -> bool:
    digest = hashlib.sha256(f"{conversation}:{question.number}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < HELD_OUT_SHARE


@dataclass(frozen=True)
class Measured:
    """One held-out question under one set of weights."""

    all_in_top: bool
    all_in_context: bool
    reciprocal_rank: float
    ranking_profile_id: str | None


def measure(
    client: MemoryClient,
    user_id: str,
    *,
    question: Question,
    evidence: Evidence,
    node_to_dia: dict[str, str],
    ranking_profile: Literal["active", "none"],
) -> Measured:
    """Retrieve `question` through the client, ranked by the active profile or by none."""
    response = client.retrieve(
        question.question,
        user_id=user_id,
        token_budget=TOKEN_BUDGET,
        ranking_profile=ranking_profile,
    )
    ranked = [node_to_dia.get(r.node_id) for r in response.results]
    context = {node_to_dia[n] for n in context_node_ids(response) if n in node_to_dia}
    first = next((i for i, dia in enumerate(ranked, start=1) if dia in evidence.valid), None)
    return Measured(
        all_in_top=set(evidence.valid) <= set(ranked[:TOP_K]),
        all_in_context=set(evidence.valid) <= context,
        reciprocal_rank=1.0 / first if first else 0.0,
        ranking_profile_id=response.metrics.ranking_profile_id,
    )


def judge(
    client: MemoryClient,
    user_id: str,
    question: Question,
    evidence: Evidence,
    node_to_dia: dict[str, str],
) -> bool:
    """Retrieve a train question and record the simulated user's judgment; True when an
    evidence turn was among the results (a positive label)."""
    response = client.retrieve(question.question, user_id=user_id, token_budget=TOKEN_BUDGET)
    labels: dict[str, bool] = {}
    negatives = 0
    for result in response.results:
        if node_to_dia.get(result.node_id) in evidence.valid:
            labels[result.node_id] = True
        elif negatives < NEGATIVES_PER_JUDGMENT:
            labels[result.node_id] = False
            negatives += 1
    if labels:
        client.record_relevance(response.metrics.request_id, labels, user_id=user_id)
    return any(labels.values())


def summarize(rows: Sequence[Measured]) -> dict[str, Any]:
    if not rows:
        return {"questions": 0}
    n = len(rows)
    return {
        "questions": n,
        "all_evidence_in_top10_pct": 100 * sum(r.all_in_top for r in rows) / n,
        "all_evidence_in_context_pct": 100 * sum(r.all_in_context for r in rows) / n,
        "mrr": statistics.fmean(r.reciprocal_rank for r in rows),
    }


@dataclass
class ConversationResult:
    name: str
    train_questions: int
    judged_with_evidence: int
    evaluation: LearningEvaluation | None
    refusal: str | None
    profile: RankingProfile | None
    activation: RankingProfileState | None
    baseline: list[Measured]
    learned: list[Measured]
    evaluate_s: float
    wall_s: float

    @property
    def recommended(self) -> bool:
        return self.evaluation is not None and self.evaluation.recommended

    def as_json(self) -> dict[str, Any]:
        return {
            "conversation": self.name,
            "train_questions": self.train_questions,
            "judged_with_evidence_returned": self.judged_with_evidence,
            "held_out_questions": len(self.baseline),
            "evaluation": self.evaluation.model_dump(mode="json") if self.evaluation else None,
            "refusal": self.refusal,
            "profile_id": self.profile.profile_id if self.profile else None,
            "activation": self.activation.model_dump(mode="json") if self.activation else None,
            "held_out": {
                "baseline": summarize(self.baseline),
                "learned": summarize(self.learned),
            },
            # Held-out retrievals whose metrics name the active profile (all of them when one
            # was activated, none otherwise).
            "learned_named_the_profile": sum(
                m.ranking_profile_id is not None
                and self.profile is not None
                and m.ranking_profile_id == self.profile.profile_id
                for m in self.learned
            ),
            "evaluate_learning_s": self.evaluate_s,
            "wall_s": self.wall_s,
        }


def run_conversation(
    client: MemoryClient, conversation: Conversation, *, max_sessions: int | None
) -> ConversationResult:
    started = time.perf_counter()
    known = {turn.dia_id for turn in conversation.turns}
    kept = truncate(conversation, max_sessions) if max_sessions else conversation
    kept_ids = {turn.dia_id for turn in kept.turns}
    user_id = f"learning-{conversation.name}"
    stats = store_conversation(client, kept, user_id, _stderr)
    client.retrieve(WARM_UP_QUERY, user_id=user_id, token_budget=TOKEN_BUDGET)
    train: list[tuple[Question, Evidence]] = []
    test: list[tuple[Question, Evidence]] = []
    for question in conversation.questions:
        if question.category not in CATEGORIES:
            continue
        evidence = normalize_evidence(question.raw_evidence, known)
        if not evidence.valid or not set(evidence.valid) <= kept_ids:
            continue
        (test if held_out(conversation.name, question) else train).append((question, evidence))
    judged = sum(
        judge(client, user_id, question, evidence, stats.node_to_dia)
        for question, evidence in train
    )
    _stderr(f"  {conversation.name}: judged {len(train)} train questions ({judged} with evidence)")
    evaluation: LearningEvaluation | None = None
    refusal: str | None = None
    evaluate_started = time.perf_counter()
    try:
        evaluation = client.evaluate_learning(holdout_share=LEARNING_HOLDOUT_SHARE, user_id=user_id)
    except NotEnoughJudgmentsError as exc:
        refusal = exc.detail
    evaluate_s = time.perf_counter() - evaluate_started
    profile: RankingProfile | None = None
    activation: RankingProfileState | None = None
    if evaluation is not None:
        # Saved from the evaluation's own create body; activated only when recommended (the
        # activation gate would refuse it otherwise).
        profile = client.create_ranking_profile(
            **evaluation.profile.model_dump(mode="json"), user_id=user_id
        )
        if evaluation.recommended:
            activation = client.activate_ranking_profile(profile.profile_id, user_id=user_id)
    _stderr(
        f"  {conversation.name}: proposal "
        f"{evaluation.proposal.overrides() if evaluation else None}, refusal {refusal}, "
        f"activated {activation is not None}"
    )
    baseline = [
        measure(
            client,
            user_id,
            question=q,
            evidence=e,
            node_to_dia=stats.node_to_dia,
            ranking_profile="none",
        )
        for q, e in test
    ]
    learned = [
        measure(
            client,
            user_id,
            question=q,
            evidence=e,
            node_to_dia=stats.node_to_dia,
            ranking_profile="active",
        )
        for q, e in test
    ]
    return ConversationResult(
        name=conversation.name,
        train_questions=len(train),
        judged_with_evidence=judged,
        evaluation=evaluation,
        refusal=refusal,
        profile=profile,
        activation=activation,
        baseline=baseline,
        learned=learned,
        evaluate_s=evaluate_s,
        wall_s=time.perf_counter() - started,
    )


def print_table(results: dict[str, Any], *, quick: bool) -> None:
    print(
        f"Learning simulation on LoCoMo (held-out questions): embedder {results['embedder']}"
        + (", quick" if quick else "")
    )
    header = (
        f"{'conversation':12} {'weights':9} {'questions':>9} {'top10':>7} {'context':>8} "
        f"{'MRR':>6}  evaluation (ndcg@10 holdout: baseline -> proposal, recommended)"
    )
    print(header)
    print("-" * len(header))
    rows = [*results["conversations"], {"conversation": "overall", **results["overall"]}]
    for row in rows:
        evaluation = row.get("evaluation")
        note = (
            f"{evaluation['baseline_holdout']:.3f} -> {evaluation['proposal_holdout']:.3f}, "
            f"{evaluation['recommended']}"
            if evaluation
            else (row.get("refusal") or "")
        )
        for kind in ("baseline", "learned"):
            summary = row["held_out"][kind]
            if not summary["questions"]:
                continue
            print(
                f"{row['conversation']:12} {kind:9} {summary['questions']:9} "
                f"{summary['all_evidence_in_top10_pct']:6.1f}% "
                f"{summary['all_evidence_in_context_pct']:7.1f}% {summary['mrr']:6.3f}"
                + (f"  {note}" if kind == "baseline" else "")
            )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--conversations", default=None, help="file names, e.g. 26,30")
    parser.add_argument("--quick", action="store_true", help="a CI-sized subset")
    parser.add_argument(
        "--embedder", choices=["minilm", "hashing"], default=None, help="default: minilm"
    )
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    default_json = (
        DEFAULT_JSON.with_name(f"{DEFAULT_JSON.stem}_quick.json") if args.quick else DEFAULT_JSON
    )
    out: Path = args.json or default_json
    names = (
        [n.strip() for n in args.conversations.split(",") if n.strip()]
        if args.conversations
        else None
    )
    paths = conversation_files(args.data, names)
    if args.quick and not names:
        paths = paths[:QUICK_CONVERSATIONS]
    overrides: dict[str, Any] = {"backend": "embedded"}
    if args.embedder:
        overrides["embedder"] = args.embedder
    settings = Settings(**overrides)

    run_start = start_run()
    started = time.perf_counter()
    runs = []
    for path in paths:
        conversation = load_conversation(path)
        _stderr(f"{conversation.name}: {len(conversation.turns)} turns, {path}")
        with embedded_client(settings, "learning") as client:
            runs.append(
                run_conversation(
                    client, conversation, max_sessions=QUICK_SESSIONS if args.quick else None
                )
            )
    parameters = {
        "data": str(args.data),
        "conversations": [p.stem for p in paths],
        "quick": args.quick,
        "max_sessions": QUICK_SESSIONS if args.quick else None,
        "token_budget": TOKEN_BUDGET,
        "top_k": TOP_K,
        "held_out_share": HELD_OUT_SHARE,
        "learning_holdout_share": LEARNING_HOLDOUT_SHARE,
        "negatives_per_judgment": NEGATIVES_PER_JUDGMENT,
        "engine_config": settings.engine.model_dump(mode="json"),
    }
    results: dict[str, Any] = {
        "backend": "embedded",
        "embedder": embedder_label(settings),
        "overall": {
            "held_out": {
                "baseline": summarize([m for run in runs for m in run.baseline]),
                "learned": summarize([m for run in runs for m in run.learned]),
            },
            "recommended_in": [run.name for run in runs if run.recommended],
            "activated_in": [run.name for run in runs if run.activation is not None],
        },
        "conversations": [run.as_json() for run in runs],
        "wall_s": time.perf_counter() - started,
    }
    print_table(results, quick=args.quick)
    write_result(
        out, "benchmarks.learning_simulation", results, parameters=parameters, started=run_start
    )
    print(f"({results['wall_s']:.0f} s)")


if __name__ == "__main__":
    main()

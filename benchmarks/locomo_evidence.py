"""Retrieval quality on LoCoMo: do the evidence turns each question needs reach the packed context?

Run: `.venv/bin/python -m benchmarks.locomo_evidence [--quick] [--backend embedded|aws]
[--data DIR] [--conversations 26,30 | --split A|B|all] [--embedder minilm|hashing]
[--json PATH]`.

Everything goes through the public `MemoryClient`; the benchmark never reads the engine.

Protocol, per conversation file (`<name>.json` in `--data`, default
`../shared/data/locomo-dev` next to the repository):
- A fresh memory: a temporary data directory (embedded, removed afterwards) or a fresh
  table, queues and index on the local AWS (`--backend aws`, deleted afterwards), and one
  `user_id` (`locomo-<name>`).
- Every turn of every session is one `client.store(...)`. Its content is the turn's text;
  when the turn shared a photo (`blip_caption`), the caption is appended as
  `"<text> [shared a photo: <caption>]"` (just `"[shared a photo: <caption>]"` when the
  text is blank). `speaker` is the turn's speaker, `role` is `user` for `speaker_a` and
  `participant` for `speaker_b`, `session_id` is `session_<n>`, `event_time` is the
  session's date-time ("1:56 pm on 8 May, 2023", read as UTC) plus the turn's 0-based
  index within its session in seconds, and `metadata` is `{"dia_id": <the turn's id>}`.
  The node id of each store result maps back to the turn's dia id.
- Each question of categories 1-4 (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop;
  5 adversarial questions have no answer in the conversation and are skipped) is asked
  once: `client.retrieve(question, token_budget=4096)`, `reference_time` unset, every
  other parameter at its default. One warm-up retrieval with an unrelated query precedes
  the questions of each conversation and is not measured.
- Evidence ids are normalized first: a field holding several ids is split on `;`, `,` and
  whitespace ("D8:6; D9:17"), a stray colon after the `D` is removed ("D:11:26" ->
  "D11:26") and leading zeros go ("D30:05" -> "D30:5"). Pieces that still are not
  `D<session>:<turn>` ("D") and ids that name no turn of the conversation are dropped and
  counted. A question left with no valid evidence is still asked but is excluded from the
  evidence metrics and counted apart.

Metrics per question: every evidence turn in the packed context; evidence coverage (the
share of its evidence turns in the context); every evidence turn among `results[:10]`;
`bundle.tokens_used`; the wall time of the retrieve call. A turn is in the context when its
node has a context entry of representation `full`, or a `folded` entry that points at a
full entry: folding only happens for identical text, so that text is in the context
either way. Results are reported per category and overall (rows cover the scored
questions), with store throughput, as a printed table and JSON (per conversation and per
question too). Numbers are measured, never asserted.

`--split` asks one fixed half of the development conversations (`SPLITS`): tune a
technique on one half, check it on the other, keep it only when it helps both. The halves
are balanced by scored questions (A 411 with 74 multi-hop, B 349 with 68) and fixed here,
not chosen per run.

`--quick` (for CI) takes the first two conversations, keeps their first eight sessions,
and asks only the questions whose valid evidence lies entirely within those sessions.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.embedder_speed import percentile
from benchmarks.memory_clients import aws_client, embedded_client
from benchmarks.results import start_run, write_result
from prme.client import MemoryClient
from prme.http.schemas import RetrieveResponse
from prme.settings import Settings

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO_ROOT.parent / "shared" / "data" / "locomo-dev"
DEFAULT_JSON = Path("benchmarks/results/locomo_evidence.json")
TOKEN_BUDGET = 4096
TOP_K = 10
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
QUICK_CONVERSATIONS = 2
# The two halves of the development conversations for split-half checks (docs/quality.md).
SPLITS: dict[str, tuple[str, ...]] = {
    "A": ("26", "30", "43"),
    "B": ("41", "42"),
    "all": ("26", "30", "41", "42", "43"),
}
QUICK_SESSIONS = 8
WARM_UP_QUERY = "What happened recently?"
# A missed turn counts as a "session neighbour" miss when a turn this close to it in the
# same session made it into the context.
NEIGHBOUR_DISTANCE = 2

_SESSION_KEY = re.compile(r"^session_(\d+)$")
_SESSION_TIME = re.compile(
    r"^\s*(\d{1,2}):(\d{2})\s*([ap])\.?\s*m\.?\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*$",
    re.IGNORECASE,
)
_MONTHS = {
    name: number
    for number, name in enumerate(
        (
            "january", "february", "march", "april", "may", "june",
            "july", "august", "september", "october", "november", "december",
        ),
        start=1,
    )
}  # fmt: skip
_EVIDENCE_SPLIT = re.compile(r"[;,\s]+")
_EVIDENCE_ID = re.compile(r"^D:?(\d+):(\d+)$", re.IGNORECASE)

Progress = Callable[[str], None]


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- the data --------------------------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    dia_id: str
    session: int
    index: int  # 0-based position within its session
    speaker: str
    text: str
    caption: str | None


@dataclass(frozen=True)
class Session:
    number: int
    started_at: datetime
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Question:
    number: int  # position in the file's `qa` list
    category: int
    question: str
    raw_evidence: tuple[str, ...]


@dataclass(frozen=True)
class Conversation:
    name: str
    speaker_a: str
    speaker_b: str
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...]

    @property
    def turns(self) -> list[Turn]:
        return [turn for session in self.sessions for turn in session.turns]


def parse_session_time(text: str) -> datetime:
    """ "1:56 pm on 8 May, 2023" as an aware UTC datetime."""
    match = _SESSION_TIME.match(text)
    if match is None:
        raise ValueError(f"unrecognized session date-time {text!r}")
    hour, minute, half, day, month_name, year = match.groups()
    month = _MONTHS.get(month_name.lower())
    if month is None:
        raise ValueError(f"unrecognized month in {text!r}")
    hour_24 = int(hour) % 12 + (12 if half.lower() == "p" else 0)
    return datetime(int(year), month, int(day), hour_24, int(minute), tzinfo=UTC)


def parse_conversation(name: str, data: dict[str, Any]) -> Conversation:
    """The sessions (those with turns, in number order) and the QA of one LoCoMo file."""
    numbers = sorted(
        int(match.group(1))
        for key, value in data.items()
        if (match := _SESSION_KEY.match(key)) and isinstance(value, list) and value
    )
    sessions = []
    for number in numbers:
        started_at = parse_session_time(str(data[f"session_{number}_date_time"]))
        turns = tuple(
            Turn(
                dia_id=str(raw["dia_id"]),
                session=number,
                index=index,
                speaker=str(raw["speaker"]),
                text=str(raw.get("text") or ""),
                caption=str(raw["blip_caption"]) if raw.get("blip_caption") else None,
            )
            for index, raw in enumerate(data[f"session_{number}"])
        )
        sessions.append(Session(number=number, started_at=started_at, turns=turns))
    questions = tuple(
        Question(
            number=number,
            category=int(raw["category"]),
            question=str(raw["question"]),
            raw_evidence=tuple(str(e) for e in raw.get("evidence") or ()),
        )
        for number, raw in enumerate(data.get("qa") or ())
    )
    return Conversation(
        name=name,
        speaker_a=str(data["speaker_a"]),
        speaker_b=str(data["speaker_b"]),
        sessions=tuple(sessions),
        questions=questions,
    )


def load_conversation(path: Path) -> Conversation:
    return parse_conversation(path.stem, json.loads(path.read_text(encoding="utf-8")))


def memory_content(turn: Turn) -> str:
    """The stored text of a turn: its words, then the shared photo's caption if any."""
    text = turn.text.strip()
    if turn.caption is None:
        return text
    photo = f"[shared a photo: {turn.caption.strip()}]"
    return f"{text} {photo}" if text else photo


def event_time(session: Session, turn: Turn) -> datetime:
    return session.started_at + timedelta(seconds=turn.index)


# -- evidence ids ----------------------------------------------------------------------


@dataclass(frozen=True)
class Evidence:
    """A question's evidence after normalization, and what normalization had to do."""

    valid: tuple[str, ...]  # distinct, in the annotation's order
    rewritten: int  # pieces whose form was repaired (split fields count one per extra piece)
    unparseable: tuple[str, ...]
    nonexistent: tuple[str, ...]


def normalize_evidence_id(piece: str) -> str | None:
    """ "D:11:26" -> "D11:26", "D30:05" -> "D30:5"; None when it is no dia id at all."""
    match = _EVIDENCE_ID.match(piece.strip())
    if match is None:
        return None
    return f"D{int(match.group(1))}:{int(match.group(2))}"


def normalize_evidence(raw: Sequence[str], known: set[str]) -> Evidence:
    valid: list[str] = []
    rewritten = 0
    unparseable: list[str] = []
    nonexistent: list[str] = []
    for field_value in raw:
        pieces = [p for p in _EVIDENCE_SPLIT.split(field_value.strip()) if p]
        rewritten += max(0, len(pieces) - 1)
        for piece in pieces:
            dia_id = normalize_evidence_id(piece)
            if dia_id is None:
                unparseable.append(piece)
                continue
            if dia_id != piece:
                rewritten += 1
            if dia_id not in known:
                nonexistent.append(dia_id)
            elif dia_id not in valid:
                valid.append(dia_id)
    return Evidence(tuple(valid), rewritten, tuple(unparseable), tuple(nonexistent))


def truncate(conversation: Conversation, max_sessions: int) -> Conversation:
    """The conversation's first `max_sessions` sessions (questions untouched)."""
    return Conversation(
        name=conversation.name,
        speaker_a=conversation.speaker_a,
        speaker_b=conversation.speaker_b,
        sessions=conversation.sessions[:max_sessions],
        questions=conversation.questions,
    )


# -- storing and asking ----------------------------------------------------------------


@dataclass
class StoreStats:
    node_to_dia: dict[str, str] = field(default_factory=dict)
    latencies_ms: list[float] = field(default_factory=list)


def store_conversation(
    client: MemoryClient,
    conversation: Conversation,
    user_id: str,
    progress: Progress = _stderr,
) -> StoreStats:
    stats = StoreStats()
    total = len(conversation.turns)
    for session in conversation.sessions:
        for turn in session.turns:
            role = "user" if turn.speaker == conversation.speaker_a else "participant"
            t0 = time.perf_counter()
            result = client.store(
                memory_content(turn),
                speaker=turn.speaker,
                role=role,
                user_id=user_id,
                session_id=f"session_{session.number}",
                event_time=event_time(session, turn),
                metadata={"dia_id": turn.dia_id},
            )
            stats.latencies_ms.append((time.perf_counter() - t0) * 1000)
            if result.node_id is None:
                raise RuntimeError(f"store of {turn.dia_id} returned no node id")
            stats.node_to_dia[result.node_id] = turn.dia_id
        progress(
            f"  {conversation.name}: stored session {session.number} "
            f"({len(stats.latencies_ms)}/{total} turns)"
        )
    return stats


def context_node_ids(response: RetrieveResponse) -> set[str]:
    """Nodes whose text is in the packed context: full entries, and folded entries that
    point at a full entry (folding happens only for identical text)."""
    entries = response.bundle.entries
    full_refs = {e.ref for e in entries if e.representation == "full"}
    return {
        e.node_id
        for e in entries
        if e.representation == "full" or (e.folded_into is not None and e.folded_into in full_refs)
    }


@dataclass(frozen=True)
class Outcome:
    conversation: str
    question: Question
    evidence: Evidence
    in_context: tuple[str, ...]  # evidence dia ids found in the context
    in_top: tuple[str, ...]  # evidence dia ids among results[:TOP_K]
    ranks: dict[str, int]  # evidence dia id -> 1-based position in results
    neighbour_misses: int  # missed turns with a same-session neighbour in the context
    tokens_used: int
    latency_ms: float

    @property
    def scored(self) -> bool:
        return bool(self.evidence.valid)

    @property
    def all_in_context(self) -> bool:
        return len(self.in_context) == len(self.evidence.valid)

    @property
    def all_in_top(self) -> bool:
        return len(self.in_top) == len(self.evidence.valid)

    @property
    def coverage(self) -> float:
        return len(self.in_context) / len(self.evidence.valid) if self.evidence.valid else 0.0

    @property
    def missed(self) -> tuple[str, ...]:
        return tuple(d for d in self.evidence.valid if d not in self.in_context)

    def as_json(self) -> dict[str, Any]:
        return {
            "conversation": self.conversation,
            "qa_index": self.question.number,
            "category": self.question.category,
            "question": self.question.question,
            "evidence": list(self.evidence.valid),
            "dropped_evidence": list(self.evidence.unparseable + self.evidence.nonexistent),
            "missed": list(self.missed),
            "evidence_ranks": self.ranks,
            "all_in_context": self.all_in_context,
            "coverage": self.coverage,
            "all_in_top10": self.all_in_top,
            "neighbour_misses": self.neighbour_misses,
            "tokens_used": self.tokens_used,
            "latency_ms": round(self.latency_ms, 3),
        }


def _neighbours(dia_id: str) -> set[str]:
    session, turn = dia_id[1:].split(":")
    return {
        f"D{session}:{int(turn) + step}"
        for step in range(-NEIGHBOUR_DISTANCE, NEIGHBOUR_DISTANCE + 1)
        if step != 0
    }


def ask(
    client: MemoryClient,
    conversation: str,
    *,
    question: Question,
    evidence: Evidence,
    node_to_dia: dict[str, str],
    user_id: str,
) -> Outcome:
    t0 = time.perf_counter()
    response = client.retrieve(question.question, user_id=user_id, token_budget=TOKEN_BUDGET)
    latency_ms = (time.perf_counter() - t0) * 1000
    context = {node_to_dia[n] for n in context_node_ids(response) if n in node_to_dia}
    ranked = [node_to_dia.get(r.node_id) for r in response.results]
    ranks: dict[str, int] = {}
    for position, dia_id in enumerate(ranked, start=1):
        if dia_id in evidence.valid and dia_id not in ranks:
            ranks[dia_id] = position
    top = set(ranked[:TOP_K])
    missed = [d for d in evidence.valid if d not in context]
    return Outcome(
        conversation=conversation,
        question=question,
        evidence=evidence,
        in_context=tuple(d for d in evidence.valid if d in context),
        in_top=tuple(d for d in evidence.valid if d in top),
        ranks=ranks,
        neighbour_misses=sum(1 for d in missed if _neighbours(d) & context),
        tokens_used=response.bundle.tokens_used,
        latency_ms=latency_ms,
    )


# -- one conversation ------------------------------------------------------------------


@dataclass
class ConversationRun:
    name: str
    sessions: int
    store: StoreStats
    outcomes: list[Outcome]
    questions_in_file: int
    adversarial_skipped: int
    out_of_scope: int  # quick runs: evidence beyond the kept sessions
    wall_s: float

    @property
    def scored(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.scored]

    def noise(self) -> dict[str, int]:
        asked = [o.evidence for o in self.outcomes]
        return {
            "evidence_ids_rewritten": sum(e.rewritten for e in asked),
            "evidence_ids_unparseable": sum(len(e.unparseable) for e in asked),
            "evidence_ids_nonexistent": sum(len(e.nonexistent) for e in asked),
            "questions_without_valid_evidence": sum(1 for e in asked if not e.valid),
        }


@dataclass
class Asked:
    outcomes: list[Outcome]
    adversarial: int
    out_of_scope: int


def ask_conversation(
    client: MemoryClient,
    conversation: Conversation,
    node_to_dia: dict[str, str],
    kept_ids: set[str],
    progress: Progress = _stderr,
) -> Asked:
    """Ask every scored question of a stored conversation (one warm-up retrieval first)
    whose evidence lies in `kept_ids`."""
    known = {turn.dia_id for turn in conversation.turns}
    user_id = f"locomo-{conversation.name}"
    client.retrieve(WARM_UP_QUERY, user_id=user_id, token_budget=TOKEN_BUDGET)
    asked: list[tuple[Question, Evidence]] = []
    adversarial = out_of_scope = 0
    for question in conversation.questions:
        if question.category not in CATEGORIES:
            adversarial += 1
            continue
        evidence = normalize_evidence(question.raw_evidence, known)
        if not set(evidence.valid) <= kept_ids:
            out_of_scope += 1
            continue
        asked.append((question, evidence))
    outcomes = []
    for i, (question, evidence) in enumerate(asked, start=1):
        outcomes.append(
            ask(
                client,
                conversation.name,
                question=question,
                evidence=evidence,
                node_to_dia=node_to_dia,
                user_id=user_id,
            )
        )
        if i % 50 == 0 or i == len(asked):
            progress(f"  {conversation.name}: asked {i}/{len(asked)} questions")
    return Asked(outcomes, adversarial, out_of_scope)


def run_conversation(
    client: MemoryClient,
    conversation: Conversation,
    *,
    max_sessions: int | None = None,
    progress: Progress = _stderr,
) -> ConversationRun:
    """Store the conversation (or its first `max_sessions` sessions) and ask its questions."""
    started = time.perf_counter()
    kept = truncate(conversation, max_sessions) if max_sessions else conversation
    kept_ids = {turn.dia_id for turn in kept.turns}
    user_id = f"locomo-{conversation.name}"
    stats = store_conversation(client, kept, user_id, progress)
    asked = ask_conversation(client, conversation, stats.node_to_dia, kept_ids, progress)
    return ConversationRun(
        name=conversation.name,
        sessions=len(kept.sessions),
        store=stats,
        outcomes=asked.outcomes,
        questions_in_file=len(conversation.questions),
        adversarial_skipped=asked.adversarial,
        out_of_scope=asked.out_of_scope,
        wall_s=time.perf_counter() - started,
    )


# -- summaries -------------------------------------------------------------------------


def summarize(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """One table row over scored outcomes (questions with valid evidence)."""
    scored = [o for o in outcomes if o.scored]
    if not scored:
        return {"questions": 0}
    n = len(scored)
    tokens = [float(o.tokens_used) for o in scored]
    latencies = [o.latency_ms for o in scored]
    missed_turns = sum(len(o.missed) for o in scored)
    return {
        "questions": n,
        "all_evidence_in_context_pct": 100 * sum(o.all_in_context for o in scored) / n,
        "evidence_coverage_pct": 100 * statistics.fmean(o.coverage for o in scored),
        "all_evidence_in_top10_pct": 100 * sum(o.all_in_top for o in scored) / n,
        "context_tokens_mean": statistics.fmean(tokens),
        "context_tokens_p50": statistics.median(tokens),
        "retrieve_p50_ms": statistics.median(latencies),
        "retrieve_p95_ms": percentile(latencies, 0.95),
        "evidence_turns": sum(len(o.evidence.valid) for o in scored),
        "missed_evidence_turns": missed_turns,
        "missed_with_session_neighbour_in_context": sum(o.neighbour_misses for o in scored),
    }


def by_category(outcomes: Sequence[Outcome]) -> dict[str, dict[str, Any]]:
    rows = {
        f"{number} {name}": summarize([o for o in outcomes if o.question.category == number])
        for number, name in CATEGORIES.items()
    }
    rows["overall"] = summarize(outcomes)
    return rows


def store_summary(latencies_ms: Sequence[float]) -> dict[str, float]:
    if not latencies_ms:
        return {"stores": 0}
    return {
        "stores": len(latencies_ms),
        "stores_per_s": len(latencies_ms) / (sum(latencies_ms) / 1000),
        "p50_ms": statistics.median(latencies_ms),
        "p95_ms": percentile(list(latencies_ms), 0.95),
    }


def conversation_row(run: ConversationRun) -> dict[str, Any]:
    return {
        "conversation": run.name,
        "sessions": run.sessions,
        "turns": len(run.store.latencies_ms),
        "questions_in_file": run.questions_in_file,
        "adversarial_skipped": run.adversarial_skipped,
        "out_of_scope": run.out_of_scope,
        "asked": len(run.outcomes),
        **run.noise(),
        "store": store_summary(run.store.latencies_ms),
        "categories": by_category(run.outcomes),
        "wall_s": run.wall_s,
    }


def report(runs: Sequence[ConversationRun]) -> dict[str, Any]:
    outcomes = [o for run in runs for o in run.outcomes]
    noise = [run.noise() for run in runs]
    return {
        "categories": by_category(outcomes),
        "store": store_summary([ms for run in runs for ms in run.store.latencies_ms]),
        "totals": {
            "conversations": len(runs),
            "sessions": sum(run.sessions for run in runs),
            "turns_stored": sum(len(run.store.latencies_ms) for run in runs),
            "questions_in_files": sum(run.questions_in_file for run in runs),
            "adversarial_skipped": sum(run.adversarial_skipped for run in runs),
            "out_of_scope": sum(run.out_of_scope for run in runs),
            "asked": len(outcomes),
            "scored": sum(1 for o in outcomes if o.scored),
            **{key: sum(n[key] for n in noise) for key in noise[0]},
        },
        "conversations": [conversation_row(run) for run in runs],
        "splits": split_rows(runs),
        "questions": [o.as_json() for o in outcomes],
    }


def split_rows(runs: Sequence[ConversationRun]) -> dict[str, dict[str, Any]]:
    """The overall and multi-hop rows of each half (`SPLITS` A and B) whose conversations
    were all run, so one run of both halves reports each half apart."""
    by_name = {run.name: run for run in runs}
    rows: dict[str, dict[str, Any]] = {}
    for half in ("A", "B"):
        if not all(name in by_name for name in SPLITS[half]):
            continue
        outcomes = [o for name in SPLITS[half] for o in by_name[name].outcomes]
        rows[half] = {
            "conversations": list(SPLITS[half]),
            "overall": summarize(outcomes),
            "multi_hop": summarize([o for o in outcomes if o.question.category == 1]),
        }
    return rows


def print_table(parameters: dict[str, Any], results: dict[str, Any]) -> None:
    print(
        f"LoCoMo evidence in context: {parameters['backend']} backend, embedder "
        f"{parameters['embedder']}, token budget {TOKEN_BUDGET}"
        + (", quick" if parameters["quick"] else "")
    )
    header = (
        f"{'category':16} {'questions':>9} {'all in ctx':>10} {'coverage':>9} "
        f"{'all top10':>9} {'tok mean':>8} {'tok p50':>8} {'p50 ms':>7} {'p95 ms':>7}"
    )
    print(header)
    print("-" * len(header))
    for name, row in results["categories"].items():
        if not row["questions"]:
            print(f"{name:16} {0:9}")
            continue
        print(
            f"{name:16} {row['questions']:9} {row['all_evidence_in_context_pct']:9.1f}% "
            f"{row['evidence_coverage_pct']:8.1f}% {row['all_evidence_in_top10_pct']:8.1f}% "
            f"{row['context_tokens_mean']:8.0f} {row['context_tokens_p50']:8.0f} "
            f"{row['retrieve_p50_ms']:7.1f} {row['retrieve_p95_ms']:7.1f}"
        )
    store = results["store"]
    totals = results["totals"]
    print(
        f"store: {store['stores']} turns, {store['stores_per_s']:.1f} stores/s, "
        f"p50 {store['p50_ms']:.2f} ms, p95 {store['p95_ms']:.2f} ms"
    )
    overall = results["categories"]["overall"]
    if overall["questions"]:
        print(
            f"missed evidence turns: {overall['missed_evidence_turns']} of "
            f"{overall['evidence_turns']}, {overall['missed_with_session_neighbour_in_context']}"
            f" with a turn within {NEIGHBOUR_DISTANCE} of it in the context"
        )
    print(
        f"totals: {totals['conversations']} conversations, {totals['questions_in_files']} "
        f"questions in the files, {totals['adversarial_skipped']} adversarial skipped, "
        f"{totals['out_of_scope']} out of scope, {totals['asked']} asked, "
        f"{totals['scored']} scored, {totals['questions_without_valid_evidence']} without valid "
        f"evidence; evidence ids rewritten {totals['evidence_ids_rewritten']}, dropped "
        f"{totals['evidence_ids_unparseable']} unparseable and "
        f"{totals['evidence_ids_nonexistent']} naming no turn"
    )
    for half, split in results.get("splits", {}).items():
        overall, multi_hop = split["overall"], split["multi_hop"]
        print(
            f"  half {half} ({','.join(split['conversations'])}): {overall['questions']} scored, "
            f"all in ctx {overall['all_evidence_in_context_pct']:5.1f}%, multi-hop "
            f"{multi_hop.get('all_evidence_in_context_pct', 0.0):5.1f}%, top10 "
            f"{overall['all_evidence_in_top10_pct']:5.1f}%, p50 {overall['retrieve_p50_ms']:.1f} ms"
        )
    for row in results["conversations"]:
        overall = row["categories"]["overall"]
        if not overall["questions"]:
            continue
        print(
            f"  {row['conversation']:>4}: {row['turns']:4} turns, {overall['questions']:3} "
            f"scored, all in ctx {overall['all_evidence_in_context_pct']:5.1f}%, coverage "
            f"{overall['evidence_coverage_pct']:5.1f}%, top10 "
            f"{overall['all_evidence_in_top10_pct']:5.1f}%, {row['wall_s']:.1f} s"
        )


# -- backends and the run --------------------------------------------------------------


def conversation_files(data: Path, names: Sequence[str] | None) -> list[Path]:
    if names:
        paths = [data / f"{name}.json" for name in names]
        missing = [str(p) for p in paths if not p.is_file()]
        if missing:
            raise SystemExit(f"no such conversation file: {', '.join(missing)}")
        return paths
    paths = sorted(data.glob("*.json"), key=lambda p: (not p.stem.isdigit(), p.stem.zfill(8)))
    if not paths:
        raise SystemExit(f"no conversation files (*.json) in {data}")
    return paths


def embedder_label(settings: Settings) -> str:
    from prme.composition import build_embedder

    model = build_embedder(settings).model
    return f"{settings.embedder} ({model.name}, {model.dimension} dimensions)"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--conversations", default=None, help="file names, e.g. 26,30")
    parser.add_argument(
        "--split",
        choices=sorted(SPLITS),
        default=None,
        help="one fixed half of the development conversations (A or B), or all of them",
    )
    parser.add_argument("--quick", action="store_true", help="a CI-sized subset")
    parser.add_argument("--backend", choices=["embedded", "aws"], default="embedded")
    parser.add_argument(
        "--embedder",
        choices=["minilm", "hashing", "bedrock"],
        default=None,
        help="default: PRME_EMBEDDER, else minilm",
    )
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    run_start = start_run()
    # Quick runs write apart, so `make bench` never overwrites the full run's numbers.
    default_json = DEFAULT_JSON
    if args.backend == "aws":
        default_json = default_json.with_name(f"aws_{default_json.name}")
    if args.quick:
        default_json = default_json.with_name(f"{default_json.stem}_quick.json")
    if args.split in ("A", "B"):
        default_json = default_json.with_name(f"{default_json.stem}_split_{args.split}.json")
    out: Path = args.json or default_json

    if args.split and args.conversations:
        parser.error("--split and --conversations name the conversations twice; give one")
    names = (
        [n.strip() for n in args.conversations.split(",") if n.strip()]
        if args.conversations
        else list(SPLITS[args.split])
        if args.split
        else None
    )
    paths = conversation_files(args.data, names)
    if args.quick and not names:
        paths = paths[:QUICK_CONVERSATIONS]
    overrides: dict[str, Any] = {"backend": args.backend}
    if args.embedder:
        overrides["embedder"] = args.embedder
    settings = Settings(**overrides)
    open_client = aws_client if args.backend == "aws" else embedded_client

    started = time.perf_counter()
    runs = []
    for path in paths:
        conversation = load_conversation(path)
        _stderr(f"{conversation.name}: {len(conversation.turns)} turns, {path}")
        with open_client(settings, "locomo") as client:
            runs.append(
                run_conversation(
                    client, conversation, max_sessions=QUICK_SESSIONS if args.quick else None
                )
            )
    parameters: dict[str, Any] = {
        "backend": args.backend,
        "embedder": embedder_label(settings),
        "data": str(args.data),
        "conversations": [p.stem for p in paths],
        "split": args.split,
        "quick": args.quick,
        "max_sessions": QUICK_SESSIONS if args.quick else None,
        "token_budget": TOKEN_BUDGET,
        "top_k": TOP_K,
        "reference_time": None,
        "engine_config": settings.engine.model_dump(mode="json"),
    }
    results: dict[str, Any] = {**report(runs), "wall_s": time.perf_counter() - started}
    print_table(parameters, results)
    print(f"wall time {results['wall_s']:.0f} s")
    write_result(
        out, "benchmarks.locomo_evidence", results, parameters=parameters, started=run_start
    )


if __name__ == "__main__":
    main()

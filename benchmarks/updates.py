"""Knowledge updates: after a conversation replaces a value, does a "now" question get the current one?

Run: `.venv/bin/python -m benchmarks.updates [--cases N] [--runs N] [--backend embedded|aws]
[--explain] [--data PATH] [--json PATH]`.

Everything goes through the public `MemoryClient`; the benchmark never reads the engine.

Protocol, per case of `benchmarks/data/updates.jsonl` (written for this project: moves, job
changes, preference changes, corrections, "no longer", and distractors such as a relative
who moved or a hypothetical move):
- A fresh owner (`user_id` `updates-<case id>`) in one memory: a temporary data directory
  (embedded, removed afterwards) or a fresh table, queues and index on the local AWS.
- Each turn is one `client.ingest(...)` with its role, speaker and event time, and the
  session of its calendar day; after each turn, extractions and materializations are
  processed until none is pending, as a worker would between messages.
- The case's question is asked once with `client.retrieve(question)`, every parameter at
  its default.

A text is about the current value when it mentions the case's `current` substring (whole
words, any case); it is stale when it mentions one of the `stale` substrings, which name the
replaced memory ("live in Lisbon", not "Lisbon"), and not the current one ("I moved from
Lisbon to Berlin" is about the current value). Entity nodes (a bare name such as "Berlin")
make no claim, so "claim 1st" and the stale counts leave them out.

Metrics per case: the top result is about the current value; the top result that is not an
entity is; one of the top three is; a stale claim reaches the packed context (a `full` entry
of the bundle); stale claims stored and whether one of them is superseded; claims about the
current value that were wrongly superseded (a distractor taken for an update).
Printed per category and overall, pooled over `--runs` whole passes (3 by default, each in
a fresh memory, since tied scores can rank either way), and written as JSON. Numbers are
measured, never asserted. `--explain` prints the top results of the first run's failed cases.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import prme
from benchmarks.memory_clients import aws_client, embedded_client
from benchmarks.results import start_run, write_result
from prme.client import MemoryClient
from prme.http.schemas import RetrieveResponse
from prme.settings import Settings

DATA = Path(__file__).resolve().parent / "data" / "updates.jsonl"
DEFAULT_JSON = Path("benchmarks/results/updates.json")
CATEGORIES = ("move", "job", "preference", "correction", "no_longer", "distractor")
DEFAULT_RUNS = 3
TARGET_FIRST = 0.90  # the target share of cases with the current value ranked first
TOP_K = 3
EXPLAIN_TOP = 5
# A worker loop that never drains would hang the benchmark; no case needs more passes.
MAX_PROCESSING_PASSES = 20
ROLES = ("user", "participant", "assistant", "tool", "system")
SUPERSEDED = "superseded"
ENTITY = "entity"


def _progress(message: str, *, done: bool) -> None:
    """A counter rewritten in place on a terminal; only each run's last line elsewhere."""
    if sys.stderr.isatty():
        print(f"\r{message}", end="\n" if done else "", file=sys.stderr, flush=True)
    elif done:
        print(message, file=sys.stderr, flush=True)


# -- the data ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    role: str
    content: str
    speaker: str | None = None
    event_time: datetime | None = None


@dataclass(frozen=True)
class Case:
    id: str
    category: str
    turns: tuple[Turn, ...]
    question: str
    current: str
    stale: tuple[str, ...]
    distractors: tuple[str, ...]


def mentions(text: str, value: str) -> bool:
    """`value` occurs in `text` as whole words, in any case ("nurse" is not in "nursing")."""
    return re.search(rf"(?<!\w){re.escape(value)}(?!\w)", text, re.IGNORECASE) is not None


def parse_case(raw: dict[str, Any]) -> Case:
    """One line of the data file, checked: a case that could never score is a data error."""
    turns = tuple(
        Turn(
            role=str(t["role"]),
            content=str(t["content"]),
            speaker=t.get("speaker"),
            event_time=datetime.fromisoformat(t["event_time"]) if t.get("event_time") else None,
        )
        for t in raw["turns"]
    )
    case = Case(
        id=str(raw["id"]),
        category=str(raw["category"]),
        turns=turns,
        question=str(raw["question"]),
        current=str(raw["current"]),
        stale=tuple(str(s) for s in raw.get("stale") or ()),
        distractors=tuple(str(d) for d in raw.get("distractors") or ()),
    )
    problems = []
    if case.category not in CATEGORIES:
        problems.append(f"unknown category {case.category!r}")
    if any(turn.role not in ROLES for turn in turns):
        problems.append("unknown role")
    said_by_user = [t.content for t in turns if t.role == "user"]
    if not any(mentions(text, case.current) for text in said_by_user):
        problems.append("no user turn mentions the current value")
    for value in (*case.stale, *case.distractors):
        if not any(mentions(t.content, value) for t in turns):
            problems.append(f"no turn mentions {value!r}")
    times = [t.event_time for t in turns if t.event_time is not None]
    if times != sorted(times):
        problems.append("event times go backwards")
    if problems:
        raise ValueError(f"case {case.id}: {'; '.join(problems)}")
    return case


def load_cases(path: Path = DATA) -> list[Case]:
    cases = [parse_case(json.loads(line)) for line in path.read_text().splitlines() if line]
    ids = [case.id for case in cases]
    if len(ids) != len(set(ids)):
        raise ValueError(f"{path}: duplicate case ids")
    return cases


# -- scoring -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Seen:
    """A memory as the benchmark saw it: in the ranking, the context or the owner's nodes."""

    content: str
    node_type: str
    lifecycle_state: str


@dataclass(frozen=True)
class CaseScore:
    case_id: str
    category: str
    current_first: bool
    # Stricter: the first result that makes a claim (not a bare entity name) is current.
    current_claim_first: bool
    current_in_top3: bool
    # None when the case has no stale value (a distractor with nothing to replace).
    stale_in_context: bool | None
    stale_claims: int
    stale_claims_superseded: int
    current_claims_superseded: int
    duplicate_claims: int
    top: tuple[str, ...]

    @property
    def failed(self) -> bool:
        return not self.current_first or bool(self.stale_in_context)


def about_current(text: str, case: Case) -> bool:
    return mentions(text, case.current)


def is_stale(text: str, case: Case) -> bool:
    return not about_current(text, case) and any(mentions(text, s) for s in case.stale)


def score_case(
    case: Case, ranked: Sequence[Seen], in_context: Sequence[Seen], stored: Sequence[Seen]
) -> CaseScore:
    """The metrics of one case from what retrieval ranked, what the packed context showed and
    every node the owner has (inactive ones included)."""
    claims = [node for node in stored if node.node_type != ENTITY]
    stale_claims = [node for node in claims if is_stale(node.content, case)]
    current_claims = [node for node in claims if about_current(node.content, case)]
    contents = [node.content for node in claims]
    ranked_claims = [node for node in ranked if node.node_type != ENTITY]
    has_stale = bool(case.stale)
    return CaseScore(
        case_id=case.id,
        category=case.category,
        current_first=bool(ranked) and about_current(ranked[0].content, case),
        current_claim_first=bool(ranked_claims) and about_current(ranked_claims[0].content, case),
        current_in_top3=any(about_current(node.content, case) for node in ranked[:TOP_K]),
        stale_in_context=(
            any(node.node_type != ENTITY and is_stale(node.content, case) for node in in_context)
            if has_stale
            else None
        ),
        stale_claims=len(stale_claims),
        stale_claims_superseded=sum(n.lifecycle_state == SUPERSEDED for n in stale_claims),
        current_claims_superseded=sum(n.lifecycle_state == SUPERSEDED for n in current_claims),
        duplicate_claims=len(contents) - len(set(contents)),
        top=tuple(node.content for node in ranked[:EXPLAIN_TOP]),
    )


def _rate(hits: int, total: int) -> dict[str, Any]:
    return {"hits": hits, "total": total, "share": hits / total if total else None}


def summarize(scores: Sequence[CaseScore]) -> dict[str, Any]:
    """Rates over a group of cases; the stale rates count only cases that have a stale value."""
    with_stale = [s for s in scores if s.stale_in_context is not None]
    return {
        "cases": len(scores),
        "current_first": _rate(sum(s.current_first for s in scores), len(scores)),
        "current_claim_first": _rate(sum(s.current_claim_first for s in scores), len(scores)),
        "current_in_top3": _rate(sum(s.current_in_top3 for s in scores), len(scores)),
        "stale_in_context": _rate(
            sum(bool(s.stale_in_context) for s in with_stale), len(with_stale)
        ),
        # A case counts when a stale claim was superseded: the extracted fact may be, while
        # the verbatim message and an assistant's echo of the old value stay as they were.
        "stale_superseded": _rate(
            sum(s.stale_claims_superseded > 0 for s in with_stale), len(with_stale)
        ),
        "current_wrongly_superseded": _rate(
            sum(s.current_claims_superseded > 0 for s in scores), len(scores)
        ),
        "stale_claims": sum(s.stale_claims for s in scores),
        "stale_claims_superseded": sum(s.stale_claims_superseded for s in scores),
        "duplicate_claims": sum(s.duplicate_claims for s in scores),
    }


def report(scores: Sequence[CaseScore]) -> dict[str, Any]:
    by_category = {
        category: summarize([s for s in scores if s.category == category])
        for category in CATEGORIES
        if any(s.category == category for s in scores)
    }
    return {"overall": summarize(scores), "by_category": by_category}


# -- running a case ----------------------------------------------------------------------


def drain(client: MemoryClient, user_id: str) -> None:
    """Process extractions, then materializations, until neither has work left."""
    for _ in range(MAX_PROCESSING_PASSES):
        extracted = client.process_extractions(user_id=user_id)
        materialized = client.process_materializations(user_id=user_id)
        if extracted.pending == 0 and materialized.pending == 0:
            return
    raise RuntimeError(f"{user_id}: work still pending after {MAX_PROCESSING_PASSES} passes")


def stored_nodes(client: MemoryClient, user_id: str) -> list[Seen]:
    seen: list[Seen] = []
    after: str | None = None
    while True:
        page = client.list_nodes(user_id=user_id, include_inactive=True, after_id=after)
        seen += [Seen(n.content, n.node_type, n.lifecycle_state) for n in page.items]
        after = page.next_after_id
        if after is None:
            return seen


def context_nodes(client: MemoryClient, user_id: str, answer: RetrieveResponse) -> list[Seen]:
    """The nodes of the context's `full` entries (a folded entry repeats one of them)."""
    ranked = {r.node_id: Seen(r.content, r.node_type, r.lifecycle_state) for r in answer.results}
    seen = []
    for entry in answer.bundle.entries:
        if entry.representation != "full":
            continue
        node = ranked.get(entry.node_id)
        if node is None:
            fetched = client.get_node(entry.node_id, user_id=user_id)
            node = Seen(fetched.content, fetched.node_type, fetched.lifecycle_state)
        seen.append(node)
    return seen


def run_case(client: MemoryClient, case: Case) -> CaseScore:
    user_id = f"updates-{case.id}"
    for turn in case.turns:
        day = turn.event_time.date().isoformat() if turn.event_time else "undated"
        client.ingest(
            turn.content,
            role=turn.role,
            speaker=turn.speaker,
            user_id=user_id,
            session_id=f"{case.id}-{day}",
            event_time=turn.event_time,
        )
        drain(client, user_id)
    answer = client.retrieve(case.question, user_id=user_id)
    ranked = [Seen(r.content, r.node_type, r.lifecycle_state) for r in answer.results]
    return score_case(
        case, ranked, context_nodes(client, user_id, answer), stored_nodes(client, user_id)
    )


# -- backends, output and the run --------------------------------------------------------


def _cell(rate: dict[str, Any]) -> str:
    if not rate["total"]:
        return "-"
    return f"{rate['hits']}/{rate['total']} {100 * rate['share']:.0f}%"


COLUMNS = (
    ("current 1st", "current_first"),
    ("claim 1st", "current_claim_first"),
    ("current top3", "current_in_top3"),
    ("stale in ctx", "stale_in_context"),
    ("stale superseded", "stale_superseded"),
    ("current superseded", "current_wrongly_superseded"),
)


def table(results: dict[str, Any]) -> str:
    rows = [("category", "cases", *(title for title, _ in COLUMNS))]
    groups = [*results["by_category"].items(), ("overall", results["overall"])]
    for name, group in groups:
        rows.append((name, str(group["cases"]), *(_cell(group[key]) for _, key in COLUMNS)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        for row in rows
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def explain(cases: Sequence[Case], scores: Sequence[CaseScore], out: Callable[[str], None]) -> None:
    """The top results of each failed case (the benchmark's own text, never a user's)."""
    by_id = {case.id: case for case in cases}
    for score in scores:
        if not score.failed:
            continue
        case = by_id[score.case_id]
        why = [] if score.current_first else ["current not first"]
        if score.stale_in_context:
            why.append("stale claim in context")
        out(
            f"\n{case.id} ({', '.join(why)}): {case.question!r} current={case.current!r} "
            f"stale={list(case.stale)}"
        )
        for rank, content in enumerate(score.top, start=1):
            out(f"  {rank}. {content}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--cases", type=int, default=None, help="only the first N cases")
    parser.add_argument("--backend", choices=["embedded", "aws"], default="embedded")
    parser.add_argument(
        "--runs", type=int, default=DEFAULT_RUNS, help="whole passes, each in a fresh memory"
    )
    parser.add_argument("--explain", action="store_true", help="print failed cases' top results")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    run_start = start_run()
    if args.runs < 1 or (args.cases is not None and args.cases < 1):
        parser.error("--runs and --cases take a whole number of at least 1")
    out: Path = args.json or (
        DEFAULT_JSON.with_name("aws_updates.json") if args.backend == "aws" else DEFAULT_JSON
    )

    cases = load_cases(args.data)[: args.cases]
    settings = Settings(backend=args.backend)
    open_client = aws_client if args.backend == "aws" else embedded_client
    started = time.perf_counter()
    runs: list[list[CaseScore]] = []
    for run in range(1, args.runs + 1):
        with open_client(settings, "updates") as client:
            runs.append([])
            for number, case in enumerate(cases, start=1):
                runs[-1].append(run_case(client, case))
                message = f"run {run}/{args.runs}: {number}/{len(cases)} cases"
                _progress(message, done=number == len(cases))
    scores = [score for run_scores in runs for score in run_scores]
    results: dict[str, Any] = {
        "benchmark": "updates",
        # Which engine was measured: the benchmark file can run against another tree's core.
        "prme_package": str(Path(prme.__file__).resolve().parent),
        "backend": args.backend,
        "extractor": settings.extractor,
        "embedder": settings.embedder,
        "data": str(args.data),
        "target_current_first": TARGET_FIRST,
        "runs": args.runs,
        # Rates pool every run (ties in the ranking can fall either way from one run to the
        # next); the per-run counts show how much they move.
        **report(scores),
        "current_first_per_run": [sum(s.current_first for s in r) for r in runs],
        "cases": [
            {"run": run, **asdict(score)}
            for run, run_scores in enumerate(runs, start=1)
            for score in run_scores
        ],
        "wall_s": time.perf_counter() - started,
    }
    print(table(results))
    first = results["overall"]["current_first"]["share"] or 0.0
    verdict = "meets" if first >= TARGET_FIRST else "misses"
    print(
        f"current value first: {100 * first:.0f}% over {args.runs} run(s) of {len(cases)} cases "
        f"({verdict} the {100 * TARGET_FIRST:.0f}% target); per run: "
        f"{', '.join(map(str, results['current_first_per_run']))}"
    )
    if args.explain:
        explain(cases, runs[0], print)
    write_result(
        out,
        "benchmarks.updates",
        results,
        parameters={
            "runs": args.runs,
            "cases": len(cases),
            "backend": args.backend,
            "data": str(args.data),
        },
        started=run_start,
    )
    print(f"({results['wall_s']:.0f} s)")


if __name__ == "__main__":
    main()

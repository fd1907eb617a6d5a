"""The LoCoMo evidence benchmark stores, asks and scores as its protocol says, on a tiny
synthetic conversation of the same shape (no real LoCoMo data)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from benchmarks.locomo_evidence import (
    Evidence,
    Outcome,
    Question,
    ask,
    by_category,
    normalize_evidence,
    parse_conversation,
    parse_session_time,
    run_conversation,
    summarize,
)
from prme.client import MemoryClient
from prme.settings import Settings

FILLER = [
    "Morning! How was your week?",
    "Busy, lots of errands and a long meeting at work.",
    "Same here, the weather was awful too.",
    "At least the weekend is close.",
    "Any plans for it?",
    "Probably cooking something new.",
    "Sounds lovely, send me the recipe.",
    "Will do, talk soon!",
]


def session(number: int, unique: dict[int, str]) -> list[dict[str, Any]]:
    """Eight turns alternating Ada and Bo; `unique` replaces the text of some turns."""
    return [
        {
            "speaker": "Ada" if i % 2 == 0 else "Bo",
            "dia_id": f"D{number}:{i + 1}",
            "text": unique.get(i + 1, f"{FILLER[i]} ({number})"),
        }
        for i in range(len(FILLER))
    ]


def synthetic_conversation() -> dict[str, Any]:
    first = session(1, {3: "I finally saw a quokka at the wildlife park yesterday!"})
    first[4]["blip_caption"] = "a photo of a red kayak on a lake"
    first[4]["img_url"] = ["https://example.invalid/kayak.jpg"]
    second = session(2, {4: "My new zitherphone arrived, I tuned it all evening."})
    return {
        "speaker_a": "Ada",
        "speaker_b": "Bo",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": first,
        "session_2_date_time": "10:05 am on 3 June, 2023",
        "session_2": second,
        # A date without turns, as some LoCoMo files have: no session.
        "session_3_date_time": "9:00 am on 1 July, 2023",
        "qa": [
            {
                "question": "Where did Ada see a quokka?",
                "answer": "wildlife park",
                "evidence": ["D:1:3"],
                "category": 4,
            },
            {
                "question": "Which quokka and zitherphone stories did they share?",
                "answer": "both",
                "evidence": ["D1:3; D2:04", "D7:1"],
                "category": 1,
            },
            {
                "question": "When did the kayak trip happen?",
                "answer": "May",
                "evidence": ["D9:9"],
                "category": 2,
            },
            {"question": "What is unknowable?", "evidence": ["D"], "category": 3},
            {
                "question": "What did Bo say about the moon?",
                "adversarial_answer": "nothing",
                "evidence": ["D1:1"],
                "category": 5,
            },
        ],
    }


@pytest.fixture
def client(tmp_path: Path) -> MemoryClient:
    return MemoryClient(tmp_path / "memory", settings=Settings(embedder="hashing"))


def test_session_times_are_read_as_utc() -> None:
    assert parse_session_time("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert parse_session_time("12:48 am on 1 February, 2023") == datetime(
        2023, 2, 1, 0, 48, tzinfo=UTC
    )
    assert parse_session_time("12:05 pm on 30 June 2023") == datetime(
        2023, 6, 30, 12, 5, tzinfo=UTC
    )
    with pytest.raises(ValueError, match="session date-time"):
        parse_session_time("yesterday")


def test_evidence_ids_are_split_repaired_and_checked() -> None:
    known = {"D8:6", "D9:17", "D11:26", "D30:5"}
    evidence = normalize_evidence(["D8:6; D9:17", "D:11:26", "D30:05", "D", "D2:1", "D8:6"], known)
    assert evidence.valid == ("D8:6", "D9:17", "D11:26", "D30:5")
    # one extra piece from the split field, the stray colon, the leading zero
    assert evidence.rewritten == 3
    assert evidence.unparseable == ("D",)
    assert evidence.nonexistent == ("D2:1",)


def test_a_conversation_is_stored_turn_by_turn_with_its_metadata(client: MemoryClient) -> None:
    conversation = parse_conversation("syn", synthetic_conversation())
    assert [s.number for s in conversation.sessions] == [1, 2]
    with client:
        run = run_conversation(client, conversation, progress=lambda _: None)
        assert len(run.store.node_to_dia) == 16
        kayak_node = next(n for n, d in run.store.node_to_dia.items() if d == "D1:5")
        node = client.get_node(kayak_node, user_id="locomo-syn")
        assert (
            node.content
            == "Any plans for it? (1) [shared a photo: a photo of a red kayak on a lake]"
        )
        assert node.speaker == "Ada"
        assert node.session_id == "session_1"
        # the session's time plus the turn's index (0-based) in seconds
        assert node.event_time == datetime(2023, 5, 8, 13, 56, 4, tzinfo=UTC)
        assert node.metadata["dia_id"] == "D1:5"
        bo_node = next(n for n, d in run.store.node_to_dia.items() if d == "D2:4")
        bo = client.get_node(bo_node, user_id="locomo-syn")
        assert bo.session_id == "session_2"
        assert bo.event_time == datetime(2023, 6, 3, 10, 5, 3, tzinfo=UTC)
        roles = {
            client.get_event(n.evidence_refs[0], user_id="locomo-syn").role for n in (node, bo)
        }
        assert roles == {"user", "participant"}

    # The adversarial question is skipped; the other four are asked.
    assert run.adversarial_skipped == 1
    by_number = {o.question.number: o for o in run.outcomes}
    assert sorted(by_number) == [0, 1, 2, 3]
    quokka, both, no_turn, unparseable = (by_number[i] for i in range(4))
    # Each question's evidence is the only turn with its unique word: found, in full.
    assert quokka.evidence.valid == ("D1:3",)
    assert quokka.all_in_context and quokka.all_in_top and quokka.coverage == 1.0
    assert both.evidence.valid == ("D1:3", "D2:4")
    assert both.evidence.nonexistent == ("D7:1",)
    assert both.coverage == 1.0 and both.all_in_context and both.all_in_top
    assert set(both.ranks) == {"D1:3", "D2:4"}
    assert all(o.tokens_used > 0 and o.latency_ms > 0 for o in run.outcomes)
    # Questions left without valid evidence are asked but not scored.
    assert not no_turn.scored and no_turn.evidence.nonexistent == ("D9:9",)
    assert not unparseable.scored and unparseable.evidence.unparseable == ("D",)
    assert run.noise() == {
        "evidence_ids_rewritten": 3,
        "evidence_ids_unparseable": 1,
        "evidence_ids_nonexistent": 2,
        "questions_without_valid_evidence": 2,
    }
    rows = by_category(run.outcomes)
    assert rows["overall"]["questions"] == 2
    assert rows["overall"]["all_evidence_in_context_pct"] == 100.0
    assert rows["2 temporal"] == {"questions": 0}


def test_quick_truncation_asks_only_questions_within_the_kept_sessions(
    client: MemoryClient,
) -> None:
    conversation = parse_conversation("syn", synthetic_conversation())
    with client:
        run = run_conversation(client, conversation, max_sessions=1, progress=lambda _: None)
    assert len(run.store.latencies_ms) == 8
    # The two-session question is out of scope; evidence-less questions stay (unscored).
    assert run.out_of_scope == 1
    assert sorted(o.question.number for o in run.outcomes) == [0, 2, 3]


def test_a_missed_turn_lowers_coverage_and_the_all_in_context_share(
    client: MemoryClient,
) -> None:
    conversation = parse_conversation("syn", synthetic_conversation())
    with client:
        run = run_conversation(client, conversation, progress=lambda _: None)
        # The whole small conversation fits the budget, so D1:1 is made unfindable: its
        # node is left out of the node-to-turn map the scorer reads.
        unmapped = {n: d for n, d in run.store.node_to_dia.items() if d != "D1:1"}
        question = Question(number=9, category=1, question="quokka", raw_evidence=("D1:3",))
        outcome = ask(
            client,
            "syn",
            question=question,
            evidence=Evidence(("D1:3", "D1:1"), 0, (), ()),
            node_to_dia=unmapped,
            user_id="locomo-syn",
        )
    assert outcome.in_context == ("D1:3",)
    assert outcome.coverage == 0.5
    assert not outcome.all_in_context
    found = next(o for o in run.outcomes if o.question.number == 0)
    row = summarize([outcome, found])
    assert row["questions"] == 2
    assert row["all_evidence_in_context_pct"] == 50.0
    assert row["evidence_coverage_pct"] == 75.0
    assert row["missed_evidence_turns"] == 1


def _outcome(category: int, valid: tuple[str, ...], found: tuple[str, ...]) -> Outcome:
    return Outcome(
        conversation="x",
        question=Question(number=0, category=category, question="q", raw_evidence=valid),
        evidence=Evidence(valid, 0, (), ()),
        in_context=found,
        in_top=found,
        ranks={},
        neighbour_misses=0,
        tokens_used=100,
        latency_ms=5.0,
    )


def test_rows_average_per_question_and_split_by_category() -> None:
    outcomes = [
        _outcome(1, ("D1:1", "D1:2", "D1:3", "D1:4"), ("D1:1",)),
        _outcome(1, ("D1:1",), ("D1:1",)),
        _outcome(4, ("D2:1",), ()),
        _outcome(4, (), ()),  # no valid evidence: not scored
    ]
    rows = by_category(outcomes)
    assert rows["1 multi-hop"]["questions"] == 2
    assert rows["1 multi-hop"]["all_evidence_in_context_pct"] == 50.0
    assert rows["1 multi-hop"]["evidence_coverage_pct"] == pytest.approx(62.5)
    assert rows["4 single-hop"]["questions"] == 1
    assert rows["4 single-hop"]["evidence_coverage_pct"] == 0.0
    assert rows["overall"]["questions"] == 3
    assert rows["overall"]["all_evidence_in_top10_pct"] == pytest.approx(100 / 3)
    assert rows["overall"]["missed_evidence_turns"] == 4


def test_the_ablation_changes_one_setting_per_row(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    data = tmp_path / "data"
    data.mkdir()
    (data / "tiny.json").write_text(json.dumps(synthetic_conversation()))
    out = tmp_path / "ablation.json"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.locomo_ablation",
            "--data",
            str(data),
            "--only",
            "default,no_fill",
            "--json",
            str(out),
        ],
        check=True,
        capture_output=True,
    )
    rows = {row["name"]: row for row in json.loads(out.read_text())["results"]["rows"]}
    assert set(rows) == {"default", "no_fill"}
    assert rows["no_fill"]["env"] == {"PRME_RETRIEVAL__DEFAULT_LIMIT": "10"}
    assert rows["default"]["diff_vs_default"] == 0
    # The setting reached the benchmark's process: ten results carry fewer tokens than a
    # context filled with all sixteen turns.
    assert rows["no_fill"]["context_tokens_mean"] < rows["default"]["context_tokens_mean"]
    assert 0 <= rows["default"]["all_in_context_pct"] <= 100

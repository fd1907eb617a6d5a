"""The update benchmark's data stays valid and its scoring means what its table says, so the
harness cannot rot between runs; quality numbers are the benchmark's job, never asserted here."""

from __future__ import annotations

from benchmarks.memory_clients import embedded_client
from benchmarks.updates import (
    CATEGORIES,
    Case,
    Seen,
    Turn,
    load_cases,
    mentions,
    report,
    run_case,
    score_case,
    table,
)
from prme.settings import Settings

MOVE = Case(
    id="t-move",
    category="move",
    turns=(
        Turn("user", "I live in Lisbon."),
        Turn("user", "I moved from Lisbon to Berlin."),
    ),
    question="Where do I live now?",
    current="Berlin",
    stale=("Lisbon",),
    distractors=(),
)


def claim(content: str, state: str = "tentative") -> Seen:
    return Seen(content=content, node_type="fact", lifecycle_state=state)


def entity(name: str) -> Seen:
    return Seen(content=name, node_type="entity", lifecycle_state="tentative")


def test_the_data_file_has_enough_valid_cases_in_every_category() -> None:
    cases = load_cases()

    assert len(cases) >= 60
    assert {case.category for case in cases} == set(CATEGORIES)
    assert all(sum(c.category == category for c in cases) >= 10 for category in CATEGORIES)
    assert any(not case.stale for case in cases)  # distractors that replace nothing


def test_values_match_whole_words_in_any_case() -> None:
    assert mentions("I quit Nursing.", "nursing")
    assert not mentions("I quit nursing.", "nurse")
    assert mentions("It lands at 9:30 pm.", "9:30")


def test_a_superseded_stale_claim_and_the_current_value_first_score_as_such() -> None:
    stale = claim("I live in Lisbon.", state="superseded")
    current = claim("I moved from Lisbon to Berlin.")

    score = score_case(MOVE, ranked=[current, stale], in_context=[current], stored=[stale, current])

    assert score.current_first and score.current_claim_first and score.current_in_top3
    assert score.stale_in_context is False
    assert (score.stale_claims, score.stale_claims_superseded) == (1, 1)
    assert score.current_claims_superseded == 0
    assert not score.failed


def test_a_stale_claim_ranked_first_and_packed_fails_the_case() -> None:
    stale = claim("I live in Lisbon.")
    current = claim("I moved from Lisbon to Berlin.")
    ranked = [entity("Lisbon"), stale, entity("Berlin"), current]

    score = score_case(MOVE, ranked=ranked, in_context=ranked, stored=[stale, current])

    assert not score.current_first and not score.current_claim_first
    assert score.current_in_top3  # the bare name "Berlin" is third
    assert score.stale_in_context is True
    assert score.stale_claims_superseded == 0
    assert score.failed


def test_an_entity_first_counts_for_the_value_but_not_as_a_claim() -> None:
    current = claim("I moved from Lisbon to Berlin.")
    stale = claim("I live in Lisbon.")

    score = score_case(
        MOVE, ranked=[entity("Berlin"), stale, current], in_context=[], stored=[stale]
    )

    assert score.current_first and not score.current_claim_first


def test_superseding_the_current_value_counts_as_wrong() -> None:
    current = claim("I moved from Lisbon to Berlin.", state="superseded")

    score = score_case(MOVE, ranked=[current], in_context=[current], stored=[current])

    assert score.current_claims_superseded == 1
    assert report([score])["overall"]["current_wrongly_superseded"]["hits"] == 1


def test_three_cases_run_end_to_end_on_the_embedded_backend() -> None:
    by_id = {case.id: case for case in load_cases()}
    # A move, a correction and a distractor that replaces nothing (the stale rates skip it).
    chosen = [by_id["move-01"], by_id["corr-02"], by_id["distract-05"]]
    assert not chosen[2].stale

    with embedded_client(Settings(embedder="hashing"), "updates") as client:
        scores = [run_case(client, case) for case in chosen]

        # Each turn's work was processed before the question: nothing is left to extract.
        leftover = client.process_extractions(user_id=f"updates-{chosen[0].id}")
        assert (leftover.processed, leftover.pending) == (0, 0)

    for case, score in zip(chosen, scores, strict=True):
        assert score.case_id == case.id and score.top
        # Every turn was ingested and processed: the stale turn is stored as a claim.
        assert score.stale_claims >= (1 if case.stale else 0)
    assert scores[2].stale_in_context is None
    results = report(scores)
    assert results["overall"]["cases"] == 3
    assert results["overall"]["stale_in_context"]["total"] == 2
    rendered = table(results)
    assert all(name in rendered for name in ("move", "correction", "distractor", "overall"))

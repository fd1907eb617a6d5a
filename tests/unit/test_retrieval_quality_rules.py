"""The conversational-memory techniques of retrieval: budget filling, speaker-aware ranking,
the speaker in the vector text, and the session-grouped reader layout."""

from __future__ import annotations

from typing import Any

from prme.engine.config import EngineConfig, PackingConfig, ScoringConfig
from prme.engine.vector_input import vector_text
from prme.model.inputs import RetrieveInput, StoreInput
from prme.retrieval.query_analysis import named_speakers
from prme.retrieval.receipts import RetrievalReceipt
from tests.harness.engines import ALICE, Harness, memory_harness

OLDER, NEWER = "2023-01-01T00:00:00Z", "2023-02-01T00:00:00Z"


def store(h: Harness, content: str, **fields: Any) -> str:
    result = h.engine.store(ALICE, StoreInput.model_validate({"content": content, **fields}))
    assert result.node_id is not None
    return result.node_id


def retrieve(h: Harness, query: str, **fields: Any) -> Any:
    return h.engine.retrieve(ALICE, RetrieveInput.model_validate({"query": query, **fields}))


def test_without_a_limit_the_results_fill_the_token_budget(harness: Harness) -> None:
    ids = [store(harness, f"Garden note {i}: planted {i} tulip bulbs today.") for i in range(40)]
    response = retrieve(harness, "tulip bulbs garden", token_budget=120)
    packed = [e.node_id for e in response.bundle.entries]
    assert 2 < len(packed) < 40
    # The results are exactly the records the context holds, best first.
    assert [r.node_id for r in response.results] == packed
    assert response.bundle.tokens_used <= 120
    receipt = harness.engine.get_retrieval_receipt(ALICE, response.metrics.request_id)
    outcomes = {c.node_id: c.outcome for c in receipt.candidates}
    assert {outcomes[n] for n in packed} == {"returned"}
    assert {outcomes[n] for n in set(ids) - set(packed)} == {"token_budget"}
    # An explicit limit keeps its meaning: that many results, packed as they fit.
    limited = retrieve(harness, "tulip bulbs garden", token_budget=4096, limit=5)
    assert len(limited.results) == 5


def test_a_named_speaker_lifts_their_own_words(harness: Harness) -> None:
    text = "I finally booked the trip to Kyoto."
    # Ben's words are older: without the boost, the tie would go to Ana's newer record.
    ben = store(harness, text, speaker="Ben", role="participant", event_time=OLDER)
    ana = store(harness, text, speaker="Ana", role="participant", event_time=NEWER)
    response = retrieve(harness, "What trip did Ben book?", limit=2)
    assert [r.node_id for r in response.results] == [ben, ana]
    receipt = harness.engine.get_retrieval_receipt(ALICE, response.metrics.request_id)
    top = receipt.candidates[0]
    assert top.features == {"speaker_named": 1.0}
    assert {"op": "speaker_named", "coefficient": 3.0} in top.score_provenance["adjustments"]
    # The saved features replay the ranking without the store.
    saved = RetrievalReceipt.model_validate_json(receipt.model_dump_json())
    assert saved.replay_ranking() == saved.saved_ranking()
    assert saved.config.fusion.speaker_boost == 2.0

    # Switched off, the feature is still recorded but changes no score.
    plain = memory_harness(EngineConfig(scoring=ScoringConfig(speaker_boost=0.0)))
    store(plain, text, speaker="Ben", role="participant", event_time=OLDER)
    store(plain, text, speaker="Ana", role="participant", event_time=NEWER)
    unboosted = plain.engine.get_retrieval_receipt(
        ALICE, retrieve(plain, "What trip did Ben book?").metrics.request_id
    )
    assert all(
        "speaker_named" not in str(c.score_provenance.get("adjustments", []))
        for c in unboosted.candidates
    )


def test_naming_is_whole_words_and_naming_everyone_tells_nothing_apart() -> None:
    speakers = {"Caroline", "Melanie", "Jo Ann"}
    assert named_speakers("What did Caroline's sister say?", speakers) == {"Caroline"}
    assert named_speakers("Where did jo ann go?", speakers) == {"Jo Ann"}
    assert named_speakers("What did Carol say?", speakers) == set()
    assert named_speakers("Did Caroline, Melanie and Jo Ann meet?", speakers) == set()


def test_the_vector_text_starts_with_the_speaker_but_the_lexical_text_does_not(
    harness: Harness,
) -> None:
    node_id = store(harness, "I adopted a puppy.", speaker="Caroline", role="participant")
    node = harness.engine.get_node(ALICE, node_id)
    assert vector_text(node) == "Caroline: I adopted a puppy."
    named = store(harness, "Caroline here: new job!", speaker="Caroline", role="participant")
    assert vector_text(harness.engine.get_node(ALICE, named)) == "Caroline here: new job!"
    # A name written only in speaker is not a keyword: lexical search does not match it.
    hits = harness.index.search(ALICE, _lexical_only("Caroline"))
    assert [n for n, _ in hits.lexical] == [named]


def _lexical_only(text: str) -> Any:
    from prme.model.search import IndexFilter, IndexQuery

    return IndexQuery(
        text=text,
        vector=None,
        embedding_model=None,
        vector_k=0,
        lexical_k=10,
        filters=IndexFilter(),
    )


def test_reader_context_groups_records_under_date_and_session_headers() -> None:
    h = memory_harness()
    late = store(h, "We hiked to the lake.", session_id="s2", event_time="2023-06-02T10:00:01Z")
    early = store(h, "We planned a hike.", session_id="s1", event_time="2023-05-01T09:00:00Z")
    after = store(h, "The lake was cold.", session_id="s2", event_time="2023-06-02T10:00:02Z")
    response = retrieve(h, "hike lake")
    lines = response.bundle.context.splitlines()
    refs = {e.node_id: e.ref for e in response.bundle.entries}
    assert lines == [
        "[2023-05-01 s1]",
        f"[{refs[early]}] We planned a hike.",
        "[2023-06-02 s2]",
        f"[{refs[late]}] We hiked to the lake.",
        f"[{refs[after]}] The lake was cold.",
    ]
    assert response.bundle.tokens_used == h.engine.deps.token_counter.count(response.bundle.context)
    # The ranked layout prints each record with its time, best first.
    ranked = memory_harness(EngineConfig(packing=PackingConfig(reader_layout="ranked")))
    store(ranked, "We planned a hike.", session_id="s1", event_time="2023-05-01T09:00:00Z")
    line = retrieve(ranked, "hike").bundle.context.splitlines()[0]
    assert line == "[m1] 2023-05-01 09:00 We planned a hike."


def test_a_configured_default_limit_and_plain_vector_text_restore_the_first_behaviour() -> None:
    config = EngineConfig.model_validate(
        {"retrieval": {"default_limit": 3}, "vector_text": "content"}
    )
    h = memory_harness(config)
    for i in range(6):
        store(h, f"Garden note {i}: planted tulip bulbs.")
    response = retrieve(h, "tulip bulbs", token_budget=4096)
    assert len(response.results) == 3
    receipt = h.engine.get_retrieval_receipt(ALICE, response.metrics.request_id)
    assert (receipt.config.fill_budget, receipt.config.vector_text) == (False, "content")
    node = h.engine.get_node(ALICE, store(h, "Hello.", speaker="Ana", role="participant"))
    assert vector_text(node, config.vector_text) == "Hello."

"""Retrieval profiles: one list of the techniques, `plain` turns every one off, the default
profile keeps today's values, a receipt names its profile and older receipts still replay."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import prme
from prme.engine.config import EngineConfig, ScoringConfig
from prme.model.inputs import RetrieveInput, StoreInput
from prme.model.records import JournalRecord
from prme.retrieval.fusion import FUSION_STEPS, FusionConfig, enabled_steps
from prme.retrieval.profiles import PROFILES, TECHNIQUES, profile_settings
from prme.retrieval.receipts import RECEIPT_OPERATION, RetrievalReceipt
from prme.settings import ENGINE_SETTINGS, Settings
from tests.harness.engines import ALICE, Harness, memory_harness

# The engine's retrieval settings before profiles existed: the default profile keeps them.
TODAYS_DEFAULTS: dict[str, Any] = {
    "scoring.rrf_k": 20,
    "scoring.rrf_recency_boost": 0.25,
    "scoring.speaker_boost": 2.0,
    "scoring.time_mention_boost": 1.0,
    "scoring.session_neighbour_weight": 0.2,
    "scoring.session_neighbour_span": 2,
    "scoring.weak_lexical_share": 0.3,
    "retrieval.session_context_anchors": 10,
    "retrieval.session_context_radius": 2,
    "packing.reader_layout": "sessions",
    "packing.session_context_rank_fusion_score_decay": 0.6,
    "vector_text": "speaker_then_content",
    "vector_session_context": 0.6,
    "vector_segments": "sentences",
}


def setting(config: EngineConfig, path: str) -> Any:
    value: Any = config
    for part in path.split("."):
        value = getattr(value, part)
    return value


def fusion_of(config: EngineConfig) -> FusionConfig:
    scoring = config.scoring
    return FusionConfig(
        recency_boost=scoring.rrf_recency_boost,
        current_state=True,
        weak_lexical_share=scoring.weak_lexical_share,
        speaker_boost=scoring.speaker_boost,
        time_mention_boost=scoring.time_mention_boost,
        session_neighbour_weight=scoring.session_neighbour_weight,
        session_neighbour_span=scoring.session_neighbour_span,
    )


def test_every_technique_and_every_setting_is_listed_once() -> None:
    names = [t.name for t in TECHNIQUES]
    paths = [path for t in TECHNIQUES for path in t.off]
    assert len(names) == len(set(names)) == 13
    assert len(paths) == len(set(paths))
    # Every fusion step is one of the listed techniques, in the same module.
    assert {step.name for step in FUSION_STEPS} <= set(names)
    conversation = EngineConfig(retrieval_profile="conversation")
    for technique in TECHNIQUES:
        for path, off in technique.off.items():
            # The setting exists, a process reads it, and off really differs from on.
            assert setting(conversation, path) != off, path
            assert path.split(".")[0] in ENGINE_SETTINGS
    assert PROFILES["conversation"] == frozenset(names)


def test_every_technique_names_code_that_exists() -> None:
    package = Path(prme.__file__).parent
    for technique in TECHNIQUES:
        modules = re.findall(r"[a-z_/]+\.py", technique.acts_in)
        assert modules, technique.name
        assert all((package / module).is_file() for module in modules), technique.acts_in
        for step in re.findall(r"\bstep (\w+)", technique.acts_in):
            assert step in {s.name for s in FUSION_STEPS}


def test_plain_turns_every_technique_off() -> None:
    plain = EngineConfig(retrieval_profile="plain")
    for technique in TECHNIQUES:
        for path, off in technique.off.items():
            assert setting(plain, path) == off, path
    assert enabled_steps(fusion_of(plain)) == []
    assert profile_settings("conversation") == {}
    # Settings outside the techniques keep their values.
    assert plain.scoring.rrf_k == 20
    assert plain.retrieval.session_context_radius == 2


def test_the_default_profile_keeps_todays_values() -> None:
    config = EngineConfig()
    assert config.retrieval_profile == "conversation"
    assert {path: setting(config, path) for path in TODAYS_DEFAULTS} == TODAYS_DEFAULTS
    assert [step.name for step in enabled_steps(fusion_of(config))] == [
        "speaker_boost",
        "time_mention_boost",
        "session_neighbours",
        "current_state_recency",
    ]
    assert Settings().engine == config


def test_a_setting_given_explicitly_overrides_the_profile() -> None:
    config = EngineConfig(retrieval_profile="plain", scoring=ScoringConfig(speaker_boost=2.0))
    assert config.scoring.speaker_boost == 2.0
    assert config.scoring.time_mention_boost == 0.0
    from_dict = EngineConfig.model_validate(
        {"retrieval_profile": "plain", "scoring": {"rrf_k": 60}, "vector_text": "content"}
    )
    assert (from_dict.scoring.rrf_k, from_dict.scoring.speaker_boost) == (60, 0.0)
    assert EngineConfig.model_validate(from_dict.model_dump()) == from_dict


def test_the_engine_settings_keep_their_environment_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in {
        "PRME_RETRIEVAL_PROFILE": "plain",
        "PRME_SCORING__SPEAKER_BOOST": "1.5",
        "PRME_SCORING__RRF_K": "60",
        "PRME_PACKING__READER_LAYOUT": "sessions",
        "PRME_RETRIEVAL__DEFAULT_LIMIT": "10",
        "PRME_VECTOR_TEXT": "speaker_then_content",
        "PRME_VECTOR_SEGMENTS": "sentences",
        "PRME_VECTOR_SESSION_CONTEXT": "0.3",
        # Not a name of any setting: the engine's settings have no ENGINE__ part.
        "PRME_ENGINE__WORK_BATCH_SIZE": "7",
    }.items():
        monkeypatch.setenv(name, value)
    engine = Settings().engine
    assert engine.retrieval_profile == "plain"
    assert (engine.scoring.speaker_boost, engine.scoring.rrf_k) == (1.5, 60)
    assert engine.scoring.time_mention_boost == 0.0  # from the profile
    assert engine.packing.reader_layout == "sessions"
    assert engine.retrieval.default_limit == 10
    assert engine.retrieval.session_context_anchors == 0
    assert (engine.vector_text, engine.vector_segments) == ("speaker_then_content", "sentences")
    assert engine.vector_session_context == 0.3
    assert engine.work_batch_size == 100
    assert Settings.env_name("scoring.speaker_boost") == "PRME_SCORING__SPEAKER_BOOST"
    assert Settings.env_name("retrieval_profile") == "PRME_RETRIEVAL_PROFILE"
    with pytest.raises(KeyError):
        Settings.env_name("engine")
    assert "PRME_VECTOR_TEXT" in Settings.env_names()
    assert "PRME_ENGINE" not in Settings.env_names()


def store_and_retrieve(h: Harness) -> str:
    for i, speaker in enumerate(["Ana", "Ben", "Ana", "Ben"]):
        h.engine.store(
            ALICE,
            StoreInput(
                content=f"turn {i}: the trip to Kyoto is booked",
                speaker=speaker,
                session_id="s1",
                event_time=f"2024-05-0{i + 1}T10:00:00Z",
            ),
        )
    response = h.engine.retrieve(ALICE, RetrieveInput(query="What did Ben say about Kyoto?"))
    return response.metrics.request_id


def test_the_receipt_names_the_profile() -> None:
    default = memory_harness()
    receipt = default.engine.get_retrieval_receipt(ALICE, store_and_retrieve(default))
    assert receipt.config.retrieval_profile == "conversation"

    plain = memory_harness(EngineConfig(retrieval_profile="plain"))
    receipt = plain.engine.get_retrieval_receipt(ALICE, store_and_retrieve(plain))
    assert receipt.config.retrieval_profile == "plain"
    assert receipt.config.fusion.speaker_boost == 0.0
    assert receipt.config.packing_order == "rank"
    assert all(not c.score_provenance.get("adjustments") for c in receipt.candidates)
    assert plain.engine.replay_retrieval(ALICE, receipt.request_id).matches


def test_a_receipt_saved_before_profiles_loads_and_replays() -> None:
    h = memory_harness()
    receipt = h.engine.get_retrieval_receipt(ALICE, store_and_retrieve(h))
    payload = receipt.model_dump(mode="json")
    del payload["config"]["retrieval_profile"]
    payload["request_id"] = "receipt-before-profiles"
    payload["schema_version"] = 22  # saved in full, before compact receipts
    h.ledger.append_journal(
        JournalRecord.build(
            record_id="receipt-before-profiles",
            owner=ALICE,
            operation=RECEIPT_OPERATION,
            subject_id="receipt-before-profiles",
            created_at=receipt.created_at,
            payload=payload,
        )
    )
    old = h.engine.get_retrieval_receipt(ALICE, "receipt-before-profiles")
    assert old.config.retrieval_profile is None
    report = h.engine.replay_retrieval(ALICE, "receipt-before-profiles")
    assert report.matches
    assert report.replayed_ranking == receipt.saved_ranking()
    assert RetrievalReceipt.model_validate(payload).replay_matches()

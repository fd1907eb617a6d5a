"""The AWS engine with the index refresh the stack deploys (`refresh_on_write` off: a write is
searchable about a second later). The engine tests make writes searchable at once;
these show the engine needs no write of its own to be searchable within an operation."""

from __future__ import annotations

from typing import Any

import pytest

from prme.engine.config import EngineConfig
from prme.model.inputs import RetrieveInput
from tests.harness import session_turns as turns
from tests.harness.aws import aws_harness
from tests.harness.engines import ALICE, Harness
from tests.harness.lambda_events import until_searchable
from tests.harness.stack_template import LocalBinding, StackTemplate


@pytest.fixture
def deployed(aws_resources: tuple[Any, str, Any, str]) -> Harness:
    dynamodb, table, opensearch, alias = aws_resources
    config = EngineConfig(vector_session_context=turns.W)
    return aws_harness(dynamodb, table, opensearch, alias, config, refresh_on_write=False)


@pytest.mark.slow  # the shared synth
def test_the_stack_deploys_refresh_on_write_off(stack_template: StackTemplate) -> None:
    """What these tests assume is what every function is deployed with."""
    from prme.settings import Settings

    key = Settings.env_name("opensearch_refresh_on_write")
    binding = LocalBinding("t", "t", "t", "http://127.0.0.1:1")
    for function in stack_template.function_names():
        deployed = stack_template.environment(function, binding).get(key)
        value = Settings.model_fields["opensearch_refresh_on_write"].default
        effective = value if deployed is None else deployed.lower() == "true"
        assert effective is False, function


def test_a_reply_stored_right_after_its_question_is_mixed_with_it(deployed: Harness) -> None:
    """Without a refresh on write the question is not searchable yet when the reply looks for
    it: the adapter's record of this process's recent session writes (RecentSessionWrites,
    used only in the deployed setting) fills the gap. Every other AWS test refreshes on
    write, so none exercised it; without it the reply is indexed with its own vector."""
    h = deployed
    question = turns.say(h, turns.QUESTION, 0)
    reply = turns.say(h, turns.REPLY, 1)
    expected = turns.mixed(turns.own(h, reply), turns.own(h, question))

    def cosine() -> float:
        try:
            return turns.cosine_in_index(h, reply, expected)
        except KeyError:  # not searchable yet
            return -2.0

    assert until_searchable(cosine, lambda c: abs(c - 1.0) < 1e-4) == pytest.approx(1.0, abs=1e-4)


def test_a_store_becomes_retrievable_within_the_refresh_bound(deployed: Harness) -> None:
    h = deployed
    stored = turns.say(h, "We adopted a kitten named Miso.", 0)

    def found() -> set[str]:
        bundle = h.engine.retrieve(ALICE, RetrieveInput(query="kitten name"))
        return {hit.node_id for hit in bundle.results}

    assert stored.id in until_searchable(found, lambda ids: stored.id in ids)


def test_a_deleted_memory_leaves_retrieval_within_the_refresh_bound(deployed: Harness) -> None:
    """The delete also drops the node from this process's record of recent session writes,
    which only the deployed setting keeps."""
    h = deployed
    stored = turns.say(h, "Our neighbour's dog is called Biscuit.", 0)

    def found() -> set[str]:
        bundle = h.engine.retrieve(ALICE, RetrieveInput(query="neighbour's dog name"))
        return {hit.node_id for hit in bundle.results}

    assert stored.id in until_searchable(found, lambda ids: stored.id in ids)
    deletion = h.engine.delete_memory(ALICE, stored.evidence_refs[0])

    assert stored.id in deletion.deleted_node_ids
    assert stored.id not in until_searchable(found, lambda ids: stored.id not in ids)

"""Red-team tests of contradictions, on every backend: a memory contradicted twice stays
contested until both are settled, and concurrent settlements of one pair write it once."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from prme.errors import ConflictError, PrmeError
from prme.model.enums import LifecycleState
from prme.model.inputs import RetrieveInput
from tests.harness.engines import ALICE, Harness
from tests.harness.redteam20 import store


def _state(h: Harness, node_id: str) -> LifecycleState:
    node = h.ledger.get_node(ALICE, node_id)
    assert node is not None
    return node.lifecycle_state


def test_a_winner_still_contradicted_by_a_third_memory_stays_contested(
    any_backend: Harness,
) -> None:
    h = any_backend
    porto = store(h, "Ana lives in Porto.")
    lisbon = store(h, "Ana lives in Lisbon.")
    faro = store(h, "Ana lives in Faro.")
    h.engine.mark_contradiction(ALICE, node_a_id=porto, node_b_id=lisbon)
    h.engine.mark_contradiction(ALICE, node_a_id=porto, node_b_id=faro)

    winner, loser = h.engine.resolve_contradiction(ALICE, winner_id=porto, loser_id=lisbon)

    # Faro still says otherwise: Porto is not undisputed yet.
    assert (winner.lifecycle_state, loser.lifecycle_state) == (
        LifecycleState.CONTESTED,
        LifecycleState.DEPRECATED,
    )
    assert _state(h, porto) is LifecycleState.CONTESTED
    h.engine.process_materializations(ALICE)
    found = h.engine.retrieve(ALICE, RetrieveInput(query="Where does Ana live?", limit=5))
    flagged = {r.node_id for r in found.results if r.conflict_flag}
    assert porto in flagged and faro in flagged
    # ... and the other contradiction can still be settled, which makes the winner stable.
    winner, loser = h.engine.resolve_contradiction(ALICE, winner_id=porto, loser_id=faro)
    assert (winner.lifecycle_state, loser.lifecycle_state) == (
        LifecycleState.STABLE,
        LifecycleState.DEPRECATED,
    )
    assert _state(h, porto) is LifecycleState.STABLE


def test_two_threads_settling_one_contradiction_write_it_once(racing_backend: Harness) -> None:
    h = racing_backend
    porto = store(h, "Ana lives in Porto.")
    lisbon = store(h, "Ana lives in Lisbon.")
    h.engine.mark_contradiction(ALICE, node_a_id=porto, node_b_id=lisbon)
    barrier = threading.Barrier(2, timeout=30)
    commit = h.ledger.commit_node_change

    def racing_commit(change: object) -> None:
        barrier.wait()  # both read the contested pair before either writes
        commit(change)  # type: ignore[arg-type]

    h.ledger.commit_node_change = racing_commit  # type: ignore[method-assign]

    def settle(pair: tuple[str, str]) -> str:
        try:
            h.engine.resolve_contradiction(ALICE, winner_id=pair[0], loser_id=pair[1])
        except ConflictError:
            return "conflict"
        except PrmeError as exc:
            return type(exc).__name__
        return "settled"

    with ThreadPoolExecutor(2) as pool:
        outcomes = list(pool.map(settle, [(porto, lisbon), (porto, lisbon)]))
    h.ledger.commit_node_change = commit  # type: ignore[method-assign]

    # The same request twice: one writes, the other answers as a replay.
    assert outcomes == ["settled", "settled"]
    assert (_state(h, porto), _state(h, lisbon)) == (
        LifecycleState.STABLE,
        LifecycleState.DEPRECATED,
    )
    records = [
        r
        for r in h.ledger.list_journal(ALICE, "", after_id=None, limit=100)
        if r.operation == "resolve_contradiction"
    ]
    assert len(records) == 1


def test_a_result_still_contested_names_the_memory_it_is_still_contested_by(
    any_backend: Harness,
) -> None:
    h = any_backend
    porto = store(h, "Ana lives in Porto.")
    faro = store(h, "Ana lives in Faro.")
    lisbon = store(h, "Ana lives in Lisbon.")
    h.engine.mark_contradiction(ALICE, node_a_id=porto, node_b_id=faro)
    h.clock.advance(minutes=1)
    h.engine.mark_contradiction(ALICE, node_a_id=porto, node_b_id=lisbon)  # the newest link
    h.engine.resolve_contradiction(ALICE, winner_id=porto, loser_id=lisbon)
    h.engine.process_materializations(ALICE)

    found = h.engine.retrieve(ALICE, RetrieveInput(query="Where does Ana live?", limit=5))
    flagged = {r.node_id: r.contradicts_id for r in found.results if r.conflict_flag}
    # Lisbon lost (deprecated); Faro still disputes Porto.
    assert flagged[porto] == faro

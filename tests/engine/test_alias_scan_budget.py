"""Alias scans on every backend within a caller's budget: a run that stops on it says so,
the next run continues where it stopped, and the runs together propose exactly what one
unbounded scan (and a comparison of every pair of names) proposes."""

from __future__ import annotations

from itertools import combinations

from prme.engine.alias_names import ALIAS_THRESHOLD, compare_names, name_key
from prme.engine.aliases import AliasScanBudget, AliasScanReport
from prme.model.enums import NodeType
from prme.model.inputs import StoreInput
from prme.model.records import OwnerKey
from tests.harness.engines import ALICE, BOB, Harness

NAMES = [
    "IBM", "International Business Machines", "Dr. Smith", "John Smith", "Jon Smith",
    "Smith, John", "Lisbon", "London", "lisbon", "Caroline", "Caroline Jones", "OpenAI",
    "Open AI", "Acme Inc.", "ACME", "Austria", "Australia", "Apollo 11", "Apollo 13", "NASA",
    "National Aeronautics and Space Administration", "Alexander Hamilton",
    "Alexandr Hamilton", "Bank of America", "BOA", "Jane Smith", "Mary Jones",
]  # fmt: skip
Pair = tuple[str, str]


def store_names(h: Harness, owner: OwnerKey, names: list[str]) -> None:
    for name in names:
        h.engine.store(owner, StoreInput(content=name, node_type=NodeType.ENTITY))
        h.clock.advance(seconds=1)


def proposed_pairs(h: Harness, owner: OwnerKey) -> set[Pair]:
    items = h.engine.list_alias_proposals(owner, limit=500)
    pairs = {tuple(sorted(c.name for c in i.proposal.nodes)) for i in items}
    assert len(pairs) == len(items)  # never the same pair twice
    return {(a, b) for a, b in pairs}


def every_pair_compared(names: list[str]) -> set[Pair]:
    """What a scan must propose: each spelling paired with the first node spelling it,
    and every two spellings compared with each other."""
    first: dict[str, str] = {}
    pairs: set[Pair] = set()
    for name in names:
        text = name_key(name).text
        if text in first:
            pairs.add((min(first[text], name), max(first[text], name)))
        else:
            first[text] = name
    for a, b in combinations(first.values(), 2):
        if compare_names(a, b).similarity >= ALIAS_THRESHOLD:
            pairs.add((min(a, b), max(a, b)))
    return pairs


def alias_work(h: Harness, owner: OwnerKey) -> int:
    return h.ledger.count_pending_work(owner, family="alias")


def test_budgeted_runs_resume_and_together_equal_one_full_scan(any_backend: Harness) -> None:
    h = any_backend
    store_names(h, ALICE, NAMES)
    store_names(h, BOB, NAMES)

    full = h.engine.propose_aliases(ALICE)

    assert full.complete and full.names_remaining == 0 and full.pending == 0
    assert proposed_pairs(h, ALICE) == every_pair_compared(NAMES)
    assert len(proposed_pairs(h, ALICE)) == full.proposals_created >= 10

    budget = AliasScanBudget(max_pairs=3)
    runs: list[AliasScanReport] = []
    while not runs or not runs[-1].complete:
        runs.append(h.engine.propose_aliases(BOB, budget=budget))
        assert len(runs) <= len(NAMES), "every run must move the scan forward"

    assert len(runs) > 3
    for report in runs[:-1]:
        assert not report.complete
        assert report.names_remaining > 0
        assert report.pending == len(NAMES)  # the work closes only when the scan is done
    remaining = [r.names_remaining for r in runs[:-1]]
    assert remaining == sorted(remaining, reverse=True) and len(set(remaining)) == len(remaining)
    assert runs[-1].pending == 0 and runs[-1].names_remaining == 0
    assert sum(r.proposals_created for r in runs) == full.proposals_created
    assert proposed_pairs(h, BOB) == proposed_pairs(h, ALICE)
    # Finished: the next scan starts over and finds nothing new.
    again = h.engine.propose_aliases(BOB, budget=budget)
    assert again.proposals_created == 0


def test_a_name_added_during_an_unfinished_scan_waits_for_the_next_scan(
    any_backend: Harness,
) -> None:
    h = any_backend
    store_names(h, ALICE, NAMES)
    budget = AliasScanBudget(max_pairs=3)
    first = h.engine.propose_aliases(ALICE, budget=budget)
    assert not first.complete
    store_names(h, ALICE, ["Caroline Jones Ltd"])  # an alias of "Caroline Jones"

    for _ in NAMES:
        if h.engine.propose_aliases(ALICE, budget=budget).complete:
            break
    else:
        raise AssertionError("the scan never completed")

    # That scan may have missed the new name, so its work stays pending for the next one.
    assert alias_work(h, ALICE) == 1
    h.clock.advance(seconds=1)
    h.engine.propose_aliases(ALICE)
    assert alias_work(h, ALICE) == 0
    assert proposed_pairs(h, ALICE) == every_pair_compared([*NAMES, "Caroline Jones Ltd"])


def test_maintenance_passes_share_a_budget_and_finish_every_owner(any_backend: Harness) -> None:
    h = any_backend
    store_names(h, ALICE, NAMES[:14])
    store_names(h, BOB, NAMES[:6])
    budget = AliasScanBudget(max_pairs=4)

    first = h.engine.propose_aliases(None, budget=budget)

    assert not first.complete
    assert 1 <= first.pairs_compared < len(every_pair_compared(NAMES[:14]))
    passes = 1
    while h.engine.propose_aliases(None, budget=budget).owners_scanned:
        passes += 1
        assert passes <= len(NAMES), "every pass must move the scans forward"
    assert passes > 2
    assert alias_work(h, ALICE) == alias_work(h, BOB) == 0
    assert proposed_pairs(h, ALICE) == every_pair_compared(NAMES[:14])
    assert proposed_pairs(h, BOB) == every_pair_compared(NAMES[:6])


def test_a_pass_without_time_left_scans_nobody_and_leaves_the_work(any_backend: Harness) -> None:
    h = any_backend
    store_names(h, ALICE, NAMES[:4])

    report = h.engine.propose_aliases(None, budget=AliasScanBudget(max_ms=0))

    assert (report.owners_scanned, report.pairs_compared, report.complete) == (0, 0, False)
    assert alias_work(h, ALICE) == 4
    assert h.engine.list_alias_proposals(ALICE) == []

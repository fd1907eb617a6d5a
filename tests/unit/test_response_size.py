"""The byte measure of text as a response carries it, and the rank-order cut under a budget."""

from __future__ import annotations

import json

import pytest

from prme.model.records import MemoryNode
from prme.retrieval.caps import Selection
from prme.retrieval.packing import ContextFormat
from prme.retrieval.response_size import ResponseBudget, carried_size, fit_response
from tests.harness.records import note_node


def make_node(content: str) -> MemoryNode:
    return note_node(content, node_id=f"n-{content}")


@pytest.mark.parametrize(
    ("text", "in_body", "on_lambda"),
    [
        ("a", 1, 1),
        ('"', 2, 4),
        ("\\", 2, 4),
        ("\n", 2, 3),
        ("\x01", 6, 7),
        ("\x7f", 1, 6),
        ("é", 2, 6),
        ("中", 3, 6),
        ("😀", 4, 12),
    ],
)
def test_carried_size_counts_what_each_encoding_adds(
    text: str, in_body: int, on_lambda: int
) -> None:
    """One level is a body written with non-ASCII kept (`in_body` is its UTF-8 size); the
    Lambda runtime encodes that body once more with ASCII escaping."""
    body = json.dumps(text, ensure_ascii=False)[1:-1]
    assert len(body.encode()) == in_body
    assert carried_size(text, 2) == len(json.dumps(body)) - 2 == on_lambda


def test_a_third_level_escapes_the_escapes_again() -> None:
    assert carried_size('"', 3) == 8
    assert carried_size("😀", 3) == 12


def _budget(max_bytes: int, *, per_record: dict[str, int]) -> ResponseBudget:
    def record_bytes(node: MemoryNode, _format: ContextFormat, _in_context: bool) -> int:
        return per_record[node.id]

    return ResponseBudget(
        max_bytes=max_bytes, record_bytes=record_bytes, fixed_bytes=100, per_candidate_bytes=10
    )


def test_the_cut_keeps_a_prefix_of_the_ranking() -> None:
    """A record that does not fit ends the response, even when a smaller one after it would
    fit: what is returned is always the best n."""
    nodes = [make_node(content=f"m{i}") for i in range(4)]
    sizes = {nodes[0].id: 300, nodes[1].id: 300, nodes[2].id: 500, nodes[3].id: 10}
    selection = Selection(selected=nodes, excluded={})
    cut = fit_response(
        selection,
        _budget(1_000, per_record=sizes),
        candidates=4,
        context_format="reader",
        in_context=(),
    )
    assert [n.id for n in cut.selection.selected] == [nodes[0].id, nodes[1].id]
    assert cut.omitted == 2
    assert cut.selection.excluded == {nodes[2].id: "response_size", nodes[3].id: "response_size"}


def test_everything_that_fits_is_kept_unchanged() -> None:
    nodes = [make_node(content=f"m{i}") for i in range(3)]
    selection = Selection(selected=nodes, excluded={"x": "limit"})
    sizes = {n.id: 10 for n in nodes}
    cut = fit_response(
        selection,
        _budget(1_000, per_record=sizes),
        candidates=4,
        context_format="reader",
        in_context=(),
    )
    assert cut.selection is selection
    assert cut.omitted == 0

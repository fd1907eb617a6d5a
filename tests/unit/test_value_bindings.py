"""Value bindings: model rules, admission, storage, visibility, rendering and resolution."""

from __future__ import annotations

import copy
import math
from typing import Any

import pytest
from pydantic import ValidationError

from prme.errors import InvalidRequestError, ValueBindingError, ValueBindingResolutionError
from prme.model.bindings import (
    MemoryValueBinding,
    SavedValueBinding,
    ToolArgumentResolution,
    ValueBindingUse,
    VisibleValueBinding,
)
from prme.model.canonical import checksum
from prme.model.records import VALUE_BINDINGS_METADATA_KEY
from prme.retrieval.receipts import ReceiptContext
from prme.retrieval.value_bindings import (
    MAX_ARGUMENT_DEPTH,
    bindings_from_metadata,
    bindings_to_metadata,
    check_binding_admission,
    render_value_bindings,
    resolve_tool_arguments,
    visible_bindings,
)

SOURCE = '{"plan":"Current City: Salt Lake City(Utah)"}'
RETRIEVAL_CONTENT = "Confirmed plan\nCurrent City: Salt Lake City(Utah)"


def city_binding(
    *,
    reference: str = "current-city-1",
    kind: str = "city",
    presentation: str = "Salt Lake City(Utah)",
    lookup: str = "Salt Lake City",
) -> MemoryValueBinding:
    return MemoryValueBinding(
        reference=reference, kind=kind, presentation=presentation, lookup=lookup
    )


def visible(
    presentation: str,
    lookup: str,
    *,
    node_id: str = "node-1",
    reference: str = "ref-1",
    kind: str = "thing",
) -> VisibleValueBinding:
    return VisibleValueBinding(
        node_id=node_id, reference=reference, kind=kind, presentation=presentation, lookup=lookup
    )


# --- the model ---------------------------------------------------------------------------------


def test_spec_example_binding_has_defaults() -> None:
    binding = city_binding()

    assert binding.schema_version == 1
    assert binding.lookup_authority == "caller"
    assert binding.presentation == "Salt Lake City(Utah)"
    assert binding.lookup == "Salt Lake City"


def test_binding_is_frozen() -> None:
    binding = city_binding()

    with pytest.raises(ValidationError):
        binding.lookup = "SLC"  # type: ignore[misc]


@pytest.mark.parametrize(
    "changes",
    [
        {"reference": ""},
        {"reference": "-leading-dash"},
        {"reference": "has space"},
        {"reference": "r" * 129},
        {"reference": "trailing-newline\n"},
        {"reference": "ümlaut"},
        {"kind": ""},
        {"kind": "k" * 65},
        {"kind": "city/state"},
        {"presentation": ""},
        {"presentation": "   "},
        {"presentation": "line\nbreak"},
        {"presentation": "tab\there"},
        {"presentation": "nul\x00"},
        {"presentation": "del\x7f"},
        {"presentation": "c1\x85"},
        {"presentation": "p" * 2049},
        {"lookup": ""},
        {"lookup": "\t\n"},
        {"lookup": "bell\x07"},
        {"lookup": "l" * 2049},
        {"schema_version": 2},
        {"lookup_authority": "model"},
        {"unexpected": "field"},
    ],
)
def test_binding_rejects_invalid_fields(changes: dict[str, Any]) -> None:
    fields: dict[str, Any] = {
        "reference": "current-city-1",
        "kind": "city",
        "presentation": "Salt Lake City(Utah)",
        "lookup": "Salt Lake City",
        **changes,
    }

    with pytest.raises(ValidationError):
        MemoryValueBinding.model_validate(fields)


def test_binding_accepts_the_widest_valid_fields() -> None:
    binding = MemoryValueBinding(
        reference="A" + "b.c_d:e-" * 15 + "z" * 7,
        kind="K" * 64,
        presentation=" Zürich  (ZH) " + "x" * 2034,
        lookup="l" * 2048,
    )

    assert len(binding.reference) == 128
    assert binding.presentation.startswith(" Zürich  (ZH) ")


def test_binding_rejects_non_string_values() -> None:
    with pytest.raises(ValidationError):
        MemoryValueBinding.model_validate(
            {"reference": "r", "kind": "k", "presentation": 42, "lookup": "42"}
        )


def test_resolution_replacements_must_match_the_replaced_uses() -> None:
    use = ValueBindingUse(
        path="/city",
        operation="replaced",
        node_id="node-1",
        reference="r",
        kind="city",
        presentation="P",
        lookup="L",
    )

    with pytest.raises(ValidationError):
        ToolArgumentResolution(arguments={"city": "L"}, binding_uses=[use], replacements=[])


def test_binding_use_path_must_be_a_json_pointer() -> None:
    with pytest.raises(ValidationError):
        ValueBindingUse(
            path="city",
            operation="replaced",
            node_id="node-1",
            reference="r",
            kind="city",
            presentation="P",
            lookup="L",
        )


# --- admission -------------------------------------------------------------------------------


def test_admission_accepts_the_spec_example() -> None:
    check_binding_admission([city_binding()], source_content=SOURCE, indexed_text=RETRIEVAL_CONTENT)


def test_admission_accepts_no_bindings() -> None:
    check_binding_admission([], source_content="", indexed_text="")


def test_admission_rejects_presentation_missing_from_source() -> None:
    binding = city_binding(presentation="Current City")

    with pytest.raises(ValueBindingError) as caught:
        check_binding_admission(
            [binding],
            source_content="Salt Lake City(Utah)",
            indexed_text="Current City: Salt Lake City(Utah)",
        )

    assert "source" in caught.value.detail
    assert caught.value.field == ("value_bindings", 0, "presentation")


def test_admission_rejects_presentation_missing_from_indexed_text() -> None:
    binding = city_binding()

    with pytest.raises(ValueBindingError) as caught:
        check_binding_admission(
            [binding], source_content=SOURCE, indexed_text="Confirmed plan: Salt Lake City"
        )

    assert "indexed" in caught.value.detail
    assert caught.value.field == ("value_bindings", 0, "presentation")


def test_admission_error_names_the_binding_and_hides_the_content() -> None:
    secret_source = "Private note: the vault code is 7391. City: Ogden(Utah)"
    bindings = [
        city_binding(reference="ok-1", presentation="Ogden(Utah)", lookup="Ogden"),
        city_binding(reference="missing-2", presentation="Provo(Utah)", lookup="Provo"),
    ]

    with pytest.raises(ValueBindingError) as caught:
        check_binding_admission(bindings, source_content=secret_source, indexed_text=secret_source)

    assert caught.value.field == ("value_bindings", 1, "presentation")
    assert "missing-2" in caught.value.detail
    assert "7391" not in caught.value.detail
    assert "vault" not in caught.value.detail


def test_admission_failure_is_an_invalid_request() -> None:
    with pytest.raises(InvalidRequestError):
        check_binding_admission([city_binding()], source_content="", indexed_text="")


@pytest.mark.parametrize(
    ("presentation", "source"),
    [
        ("salt lake city(utah)", "Salt Lake City(Utah)"),
        ("Salt Lake City (Utah)", "Salt Lake City(Utah)"),
        ("Café", "Cafe\u0301"),  # composed vs decomposed: no Unicode normalisation
        ('Say "hi"', '{"note":"Say \\"hi\\""}'),  # JSON-escaped source text does not match
    ],
)
def test_admission_matches_byte_for_byte_only(presentation: str, source: str) -> None:
    binding = city_binding(presentation=presentation)

    with pytest.raises(ValueBindingError):
        check_binding_admission([binding], source_content=source, indexed_text=presentation)


def test_admission_rejects_duplicate_references() -> None:
    text = "Ogden(Utah) and Provo(Utah)"
    bindings = [
        city_binding(reference="city", presentation="Ogden(Utah)", lookup="Ogden"),
        city_binding(reference="city", presentation="Provo(Utah)", lookup="Provo"),
    ]

    with pytest.raises(ValueBindingError) as caught:
        check_binding_admission(bindings, source_content=text, indexed_text=text)

    assert caught.value.field == ("value_bindings", 1, "reference")
    assert "city" in caught.value.detail


def test_admission_allows_same_presentation_under_different_references() -> None:
    text = "Ogden(Utah)"
    bindings = [
        city_binding(reference="home", presentation=text, lookup="Ogden"),
        city_binding(reference="work", presentation=text, lookup="Ogden, UT"),
    ]

    check_binding_admission(bindings, source_content=text, indexed_text=text)


# --- metadata --------------------------------------------------------------------------------


def test_metadata_round_trip_keeps_every_field() -> None:
    bindings = [
        city_binding(),
        city_binding(reference="alt", kind="region", presentation="Utah", lookup="UT"),
    ]

    stored = {VALUE_BINDINGS_METADATA_KEY: bindings_to_metadata(bindings)}

    assert VALUE_BINDINGS_METADATA_KEY == "prme_value_bindings_v1"
    assert stored[VALUE_BINDINGS_METADATA_KEY][0] == {
        "schema_version": 1,
        "reference": "current-city-1",
        "kind": "city",
        "presentation": "Salt Lake City(Utah)",
        "lookup": "Salt Lake City",
        "lookup_authority": "caller",
    }
    assert bindings_from_metadata(stored[VALUE_BINDINGS_METADATA_KEY]) == bindings


def test_metadata_absent_means_no_bindings() -> None:
    assert bindings_from_metadata(None) == []
    assert bindings_from_metadata([]) == []


@pytest.mark.parametrize(
    "stored",
    [
        "not a list",
        {"reference": "r"},
        [{"reference": "r", "kind": "k", "presentation": "p"}],
        [{"reference": "r", "kind": "k", "presentation": "p", "lookup": "l", "extra": 1}],
        [
            {"reference": "r", "kind": "k", "presentation": "p", "lookup": "l"},
            {"reference": "r", "kind": "k", "presentation": "q", "lookup": "m"},
        ],
    ],
)
def test_metadata_rejects_malformed_values(stored: object) -> None:
    with pytest.raises(ValueBindingError):
        bindings_from_metadata(stored)


def test_metadata_error_does_not_echo_stored_values() -> None:
    stored = [{"reference": "r", "kind": "k", "presentation": "secret\x00value", "lookup": "l"}]

    with pytest.raises(ValueBindingError) as caught:
        bindings_from_metadata(stored)

    assert "secret" not in caught.value.detail
    assert "presentation" in caught.value.detail


# --- visibility after packing ----------------------------------------------------------------


def test_only_presentations_that_survived_packing_are_visible() -> None:
    kept = city_binding(reference="kept", presentation="Ogden(Utah)", lookup="Ogden")
    cut = city_binding(reference="cut", presentation="Provo(Utah)", lookup="Provo")

    result = visible_bindings([("node-1", "Stops: Ogden(Utah), Pro", [kept, cut])])

    assert result == [
        VisibleValueBinding(
            node_id="node-1",
            reference="kept",
            kind="city",
            presentation="Ogden(Utah)",
            lookup="Ogden",
        )
    ]


def test_visibility_uses_each_records_own_packed_text() -> None:
    ogden = city_binding(reference="o", presentation="Ogden(Utah)", lookup="Ogden")
    provo = city_binding(reference="p", presentation="Provo(Utah)", lookup="Provo")

    # node-2 carries Provo's binding, but only node-1's packed text shows "Provo(Utah)".
    result = visible_bindings(
        [
            ("node-1", "Ogden(Utah) then Provo(Utah)", [ogden]),
            ("node-2", "a key/value rendering: city=provo", [provo]),
        ]
    )

    assert [(b.node_id, b.reference) for b in result] == [("node-1", "o")]


def test_visibility_is_exact_not_case_folded() -> None:
    binding = city_binding()

    assert visible_bindings([("node-1", "salt lake city(utah)", [binding])]) == []


def test_visibility_keeps_input_order_without_duplicates() -> None:
    a = city_binding(reference="a", presentation="Alpha", lookup="A")
    b = city_binding(reference="b", presentation="Beta", lookup="B")
    same_on_other_node = city_binding(reference="a", presentation="Alpha", lookup="A")

    result = visible_bindings(
        [
            ("node-2", "Beta Alpha", [b, a]),
            ("node-2", "Beta Alpha", [b, a]),
            ("node-1", "Alpha", [same_on_other_node]),
        ]
    )

    assert [(v.node_id, v.reference) for v in result] == [
        ("node-2", "b"),
        ("node-2", "a"),
        ("node-1", "a"),
    ]


def test_visibility_of_nothing_is_empty() -> None:
    assert visible_bindings([]) == []
    assert visible_bindings([("node-1", "text", [])]) == []


# --- rendering ---------------------------------------------------------------------------------


def test_rendering_lists_presentations_without_lookups() -> None:
    bindings = [
        visible("Salt Lake City(Utah)", "SLC-44", reference="current-city-1", kind="city"),
        visible("Gate B7", "GATE-0007", reference="gate", kind="gate", node_id="node-2"),
    ]

    text = render_value_bindings(bindings)

    assert '"Salt Lake City(Utah)"' in text
    assert '"Gate B7"' in text
    assert "current-city-1" in text
    assert "city" in text
    assert "gate" in text
    assert "SLC-44" not in text
    assert "GATE-0007" not in text


def test_rendering_is_empty_without_visible_bindings() -> None:
    assert render_value_bindings([]) == ""


def test_rendering_lists_a_repeated_binding_once() -> None:
    bindings = [
        visible("Ogden(Utah)", "Ogden", node_id="node-1", reference="c"),
        visible("Ogden(Utah)", "Ogden", node_id="node-2", reference="c"),
    ]

    assert render_value_bindings(bindings).count("Ogden(Utah)") == 1


# --- resolution --------------------------------------------------------------------------------


def test_spec_example_resolution() -> None:
    binding = city_binding()
    check_binding_admission([binding], source_content=SOURCE, indexed_text=RETRIEVAL_CONTENT)
    shown = visible_bindings([("node-1", RETRIEVAL_CONTENT, [binding])])

    resolution = resolve_tool_arguments({"city": "Salt Lake City(Utah)"}, shown)

    assert resolution.arguments == {"city": "Salt Lake City"}
    assert resolution.binding_uses[0].operation == "replaced"
    assert resolution.binding_uses[0].path == "/city"
    assert resolution.binding_uses[0].node_id == "node-1"
    assert resolution.binding_uses[0].reference == "current-city-1"
    assert resolution.replacements == resolution.binding_uses


def test_value_already_in_lookup_form_is_reported_unchanged() -> None:
    shown = [visible("Salt Lake City(Utah)", "Salt Lake City", reference="current-city-1")]

    resolution = resolve_tool_arguments({"city": "Salt Lake City"}, shown)

    assert resolution.arguments == {"city": "Salt Lake City"}
    assert [(u.path, u.operation, u.reference) for u in resolution.binding_uses] == [
        ("/city", "already_lookup", "current-city-1")
    ]
    assert resolution.binding_uses[0].presentation == "Salt Lake City(Utah)"
    assert resolution.replacements == []


def test_nested_values_are_resolved_with_json_pointer_paths() -> None:
    shown = [
        visible("Ogden(Utah)", "Ogden", reference="o"),
        visible("Provo(Utah)", "Provo", reference="p", node_id="node-2"),
    ]
    arguments: dict[str, Any] = {
        "trip": {"stops": [{"name": "Ogden(Utah)"}, {"name": "Provo"}], "days": 3},
        "a/b": "Ogden(Utah)",
        "m~n": ["x", "Provo(Utah)"],
        "": "Ogden(Utah)",
    }

    resolution = resolve_tool_arguments(arguments, shown)

    assert resolution.arguments == {
        "trip": {"stops": [{"name": "Ogden"}, {"name": "Provo"}], "days": 3},
        "a/b": "Ogden",
        "m~n": ["x", "Provo"],
        "": "Ogden",
    }
    assert [(u.path, u.operation, u.node_id) for u in resolution.binding_uses] == [
        ("/trip/stops/0/name", "replaced", "node-1"),
        ("/trip/stops/1/name", "already_lookup", "node-2"),
        ("/a~1b", "replaced", "node-1"),
        ("/m~0n/1", "replaced", "node-2"),
        ("/", "replaced", "node-1"),
    ]
    assert [u.path for u in resolution.replacements] == [
        "/trip/stops/0/name",
        "/a~1b",
        "/m~0n/1",
        "/",
    ]


def test_pointer_escapes_tilde_before_slash() -> None:
    shown = [visible("P", "L")]

    resolution = resolve_tool_arguments({"~1/": "P"}, shown)

    assert resolution.binding_uses[0].path == "/~01~1"


@pytest.mark.parametrize(
    "value",
    [
        "City: Salt Lake City(Utah)",
        "Salt Lake City(Utah) ",
        " Salt Lake City(Utah)",
        "salt lake city(utah)",
        "SALT LAKE CITY(UTAH)",
        "Salt Lake City(Utah)\n",
        "Salt Lake City (Utah)",
        "salt lake city",
        "Salt Lake",
    ],
)
def test_only_complete_exact_values_match(value: str) -> None:
    shown = [visible("Salt Lake City(Utah)", "Salt Lake City")]

    resolution = resolve_tool_arguments({"q": value}, shown)

    assert resolution.arguments == {"q": value}
    assert resolution.binding_uses == []


def test_keys_and_non_string_values_are_never_rewritten() -> None:
    shown = [visible("42", "forty-two"), visible("true", "yes", reference="ref-2")]
    arguments: dict[str, Any] = {"42": 42, "flag": True, "none": None, "ratio": 0.5}

    resolution = resolve_tool_arguments(arguments, shown)

    assert resolution.arguments == arguments
    assert resolution.binding_uses == []


def test_replacement_is_not_chained() -> None:
    shown = [visible("X", "Y", reference="first"), visible("Y", "Z", reference="second")]

    resolution = resolve_tool_arguments({"a": "X", "b": "Y"}, shown)

    # "Y" is a presentation in its own right, so it is replaced rather than reported as a lookup.
    assert resolution.arguments == {"a": "Y", "b": "Z"}
    assert [(u.path, u.operation, u.reference) for u in resolution.binding_uses] == [
        ("/a", "replaced", "first"),
        ("/b", "replaced", "second"),
    ]


def test_presentation_equal_to_its_lookup_counts_as_replaced() -> None:
    shown = [visible("Boston", "Boston")]

    resolution = resolve_tool_arguments({"city": "Boston"}, shown)

    assert resolution.arguments == {"city": "Boston"}
    assert [u.operation for u in resolution.binding_uses] == ["replaced"]


def test_conflicting_presentation_mappings_fail() -> None:
    shown = [
        visible("Springfield", "Springfield, IL", node_id="node-1", reference="home"),
        visible("Springfield", "Springfield, MO", node_id="node-2", reference="trip"),
    ]

    with pytest.raises(ValueBindingResolutionError) as caught:
        resolve_tool_arguments({"city": "Springfield"}, shown)

    assert "/city" in caught.value.detail


def test_conflict_only_blocks_values_that_would_need_a_choice() -> None:
    shown = [
        visible("Springfield", "Springfield, IL", node_id="node-1", reference="home"),
        visible("Springfield", "Springfield, MO", node_id="node-2", reference="trip"),
        visible("Ogden(Utah)", "Ogden", node_id="node-3", reference="ogden"),
    ]

    resolution = resolve_tool_arguments({"city": "Ogden(Utah)"}, shown)

    assert resolution.arguments == {"city": "Ogden"}


def test_same_mapping_from_two_nodes_is_not_a_conflict() -> None:
    shown = [
        visible("Ogden(Utah)", "Ogden", node_id="node-1", reference="a"),
        visible("Ogden(Utah)", "Ogden", node_id="node-2", reference="b"),
    ]

    resolution = resolve_tool_arguments({"city": "Ogden(Utah)", "again": "Ogden"}, shown)

    assert resolution.arguments == {"city": "Ogden", "again": "Ogden"}
    assert [(u.operation, u.node_id, u.reference) for u in resolution.binding_uses] == [
        ("replaced", "node-1", "a"),
        ("already_lookup", "node-1", "a"),
    ]


def test_ambiguous_lookup_forms_are_not_reported() -> None:
    shown = [
        visible("Portland(Oregon)", "Portland", reference="or"),
        visible("Portland(Maine)", "Portland", reference="me", node_id="node-2"),
        visible("Ogden(Utah)", "Ogden", reference="ogden"),
    ]

    resolution = resolve_tool_arguments({"a": "Portland", "b": "Ogden"}, shown)

    assert resolution.arguments == {"a": "Portland", "b": "Ogden"}
    assert [(u.path, u.operation) for u in resolution.binding_uses] == [("/b", "already_lookup")]


def test_ambiguous_lookup_does_not_block_its_presentations() -> None:
    shown = [
        visible("Portland(Oregon)", "Portland", reference="or"),
        visible("Portland(Maine)", "Portland", reference="me"),
    ]

    resolution = resolve_tool_arguments({"a": "Portland(Maine)"}, shown)

    assert resolution.arguments == {"a": "Portland"}
    assert resolution.binding_uses[0].reference == "me"


def test_string_equal_to_a_presentation_is_replaced_even_if_it_is_also_a_lookup() -> None:
    shown = [visible("Utah", "UT", reference="state"), visible("Ogden, Utah", "Utah")]

    resolution = resolve_tool_arguments({"state": "Utah"}, shown)

    assert resolution.arguments == {"state": "UT"}
    assert [(u.operation, u.reference) for u in resolution.binding_uses] == [("replaced", "state")]


def test_without_visible_bindings_arguments_are_copied_unchanged() -> None:
    arguments: dict[str, Any] = {"city": "Salt Lake City(Utah)", "n": [1, 2.5, None, False]}

    resolution = resolve_tool_arguments(arguments, [])

    assert resolution.arguments == arguments
    assert resolution.binding_uses == []
    assert resolution.replacements == []


def test_input_is_never_mutated_and_the_result_shares_no_containers() -> None:
    shown = [visible("Ogden(Utah)", "Ogden")]
    arguments: dict[str, Any] = {"stops": [{"name": "Ogden(Utah)"}], "meta": {"k": "v"}}
    before = copy.deepcopy(arguments)

    resolution = resolve_tool_arguments(arguments, shown)
    resolution.arguments["meta"]["k"] = "changed"
    resolution.arguments["stops"].append("extra")

    assert arguments == before


def test_tuples_become_lists() -> None:
    shown = [visible("Ogden(Utah)", "Ogden")]

    resolution = resolve_tool_arguments({"stops": ("Ogden(Utah)", "x")}, shown)

    assert resolution.arguments == {"stops": ["Ogden", "x"]}


@pytest.mark.parametrize("number", [math.nan, math.inf, -math.inf])
def test_non_finite_numbers_are_rejected(number: float) -> None:
    with pytest.raises(ValueBindingResolutionError) as caught:
        resolve_tool_arguments({"values": [1.0, {"x": number}]}, [])

    assert "/values/1/x" in caught.value.detail


@pytest.mark.parametrize(
    "arguments",
    [
        {1: "x"},
        {"nested": {("a", "b"): "x"}},
        {"when": object()},
        {"set": {"a"}},
        {"bytes": b"Ogden(Utah)"},
    ],
)
def test_non_json_arguments_are_rejected(arguments: dict[Any, Any]) -> None:
    with pytest.raises(ValueBindingResolutionError):
        resolve_tool_arguments(arguments, [visible("Ogden(Utah)", "Ogden")])


def test_top_level_must_be_an_object() -> None:
    not_an_object: Any = ["Ogden(Utah)"]

    with pytest.raises(ValueBindingResolutionError):
        resolve_tool_arguments(not_an_object, [])


def nested(depth: int) -> dict[str, Any]:
    """An argument object with `depth` containers in total, alternating objects and arrays."""
    value: Any = "leaf"
    for level in range(depth - 1):
        value = {"k": value} if level % 2 else [value]
    return {"k": value}


def test_nesting_up_to_the_limit_is_accepted() -> None:
    resolution = resolve_tool_arguments(nested(MAX_ARGUMENT_DEPTH), [])

    assert resolution.arguments == nested(MAX_ARGUMENT_DEPTH)


def test_excessive_nesting_is_rejected() -> None:
    assert MAX_ARGUMENT_DEPTH == 64

    with pytest.raises(ValueBindingResolutionError):
        resolve_tool_arguments(nested(MAX_ARGUMENT_DEPTH + 1), [])


def test_self_referencing_arguments_are_rejected() -> None:
    arguments: dict[str, Any] = {}
    arguments["self"] = arguments

    with pytest.raises(ValueBindingResolutionError):
        resolve_tool_arguments(arguments, [])


def test_resolution_errors_are_not_invalid_request_errors() -> None:
    shown = [visible("S", "A", reference="a"), visible("S", "B", reference="b")]

    with pytest.raises(ValueBindingResolutionError) as caught:
        resolve_tool_arguments({"x": "S"}, shown)

    assert not isinstance(caught.value, InvalidRequestError)


def test_a_receipt_keeps_a_digest_that_matches_only_the_exposed_forms() -> None:
    binding = MemoryValueBinding(
        reference="rent", kind="bank_account", presentation="ending 4421", lookup="GB29-4421"
    )
    content = "Rent goes from the account ending 4421."
    saved = SavedValueBinding.of(
        VisibleValueBinding.from_binding("n1", binding), node_content=content
    )
    assert "4421" not in saved.model_dump_json()
    assert saved.exposes(binding, node_content=content)
    assert not saved.exposes(
        binding.model_copy(update={"lookup": "GB29-9999"}), node_content=content
    )
    assert not saved.exposes(
        binding.model_copy(update={"reference": "deposit"}), node_content=content
    )
    assert not saved.exposes(binding, node_content=content + " Paid monthly.")


def test_a_saved_digest_cannot_be_tested_against_guessed_values_without_the_content() -> None:
    """A bound value is short: a plain digest of its forms is undone by trying candidates
    (every account ending, every city). Keyed by the node's content, which leaves with a deleted
    memory, the receipt's digest matches no digest computed from the forms alone."""
    binding = MemoryValueBinding(
        reference="rent", kind="bank_account", presentation="ending 4421", lookup="GB29-4421"
    )
    saved = SavedValueBinding.of(
        VisibleValueBinding.from_binding("n1", binding), node_content="Rent: ending 4421."
    )
    guesses = [(f"ending {n:04d}", f"GB29-{n:04d}") for n in range(4400, 4450)]
    plain = {checksum([presentation, lookup]) for presentation, lookup in guesses}
    assert saved.value_hmac is not None and saved.value_sha256 is None
    assert saved.value_hmac not in plain
    assert checksum(["ending 4421", "GB29-4421"]) not in saved.model_dump_json()


def test_receipts_saved_with_a_plain_digest_still_match() -> None:
    binding = MemoryValueBinding(
        reference="rent", kind="bank_account", presentation="ending 4421", lookup="GB29-4421"
    )
    legacy = SavedValueBinding.model_validate(
        {
            "node_id": "n1",
            "reference": "rent",
            "kind": "bank_account",
            "value_sha256": checksum(["ending 4421", "GB29-4421"]),
        }
    )
    assert legacy.exposes(binding, node_content="anything")
    assert not legacy.exposes(binding.model_copy(update={"lookup": "GB29-1"}), node_content="x")
    with pytest.raises(ValidationError):
        SavedValueBinding.model_validate({"node_id": "n1", "reference": "r", "kind": "k"})


def test_receipts_saved_with_the_forms_still_read_and_match() -> None:
    legacy = {
        "node_id": "n1",
        "reference": "rent",
        "kind": "bank_account",
        "presentation": "ending 4421",
        "lookup": "GB29-4421",
    }
    context = ReceiptContext.model_validate(
        {
            "context_sha256": "0" * 64,
            "tokens_used": 3,
            "entries": [],
            "excluded": [],
            "visible_value_bindings": [legacy],
        }
    )
    [kept] = context.visible_value_bindings
    assert isinstance(kept, VisibleValueBinding)
    assert kept.exposes(
        MemoryValueBinding.model_validate({k: v for k, v in legacy.items() if k != "node_id"})
    )

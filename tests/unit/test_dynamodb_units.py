"""The capacity arithmetic benchmarks/cost.py bills with where moto reports nothing: item sizes
and units by AWS's published rules, so a change to it shows up here, not as quieter numbers."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.dynamodb_units import (
    index_write_units,
    item_size,
    number_size,
    read_units,
    write_units,
)

INDEX_KEYS = ("op_pk", "pw_pk")


def test_item_size_counts_names_and_values_in_utf8_bytes() -> None:
    item: dict[str, dict[str, Any]] = {
        "pk": {"S": "o#1"},
        "text": {"S": "é" * 10},
        "flag": {"BOOL": True},
    }
    assert item_size(item) == (2 + 3) + (4 + 20) + (4 + 1)


def test_numbers_take_a_byte_per_two_significant_digits_plus_one() -> None:
    assert number_size("7") == 2
    assert number_size("12345") == 4
    assert number_size("1200000") == 2  # trailing zeros are not significant
    assert item_size({"n": {"N": "123"}}) == 1 + 3


def test_maps_and_lists_add_their_overhead() -> None:
    nested: dict[str, dict[str, Any]] = {
        "m": {"M": {"ab": {"S": "xyz"}}},
        "l": {"L": [{"S": "q"}, {"NULL": True}]},
    }
    assert item_size(nested) == (1 + 3 + 1 + 2 + 3) + (1 + 3 + (1 + 1) + (1 + 1))


@pytest.mark.parametrize(("size", "units"), [(0, 1), (1, 1), (1024, 1), (1025, 2), (149_600, 147)])
def test_a_write_unit_is_one_kilobyte_rounded_up(size: int, units: int) -> None:
    assert write_units(size) == units


def test_transactional_writes_count_double() -> None:
    assert write_units(1025, transactional=True) == 4
    assert write_units(10, transactional=True) == 2


@pytest.mark.parametrize(
    ("size", "consistent", "units"),
    [(0, True, 1.0), (4096, True, 1.0), (4097, True, 2.0), (4096, False, 0.5), (4097, False, 1.0)],
)
def test_a_read_unit_is_four_kilobytes_halved_when_eventually_consistent(
    size: int, consistent: bool, units: float
) -> None:
    assert read_units(size, consistent=consistent) == units


def test_transactional_reads_count_double() -> None:
    assert read_units(4097, consistent=True, transactional=True) == 4.0


def test_index_writes_follow_each_index_that_holds_the_item() -> None:
    small = {"pk": {"S": "a"}, "sk": {"S": "b"}}
    pending = {**small, "pw_pk": {"S": "p"}}
    assert index_write_units(None, small, INDEX_KEYS) == 0
    assert index_write_units(None, pending, INDEX_KEYS) == 1
    assert index_write_units(pending, small, INDEX_KEYS) == 1  # removed from the index
    moved = {**small, "pw_pk": {"S": "q"}}
    assert index_write_units(pending, moved, INDEX_KEYS) == 2  # a delete and a put in the index

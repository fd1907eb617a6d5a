"""The 422 details every surface returns: never the input, always bounded and encodable."""

from __future__ import annotations

import json

from prme.errors import MAX_REPORTED_ERRORS, validation_details


def test_details_drop_the_input_and_make_caller_text_encodable() -> None:
    errors = [
        {
            "type": "uuid_parsing",
            "loc": ("path", "event_id\ud800" + "k" * 500),
            "msg": "invalid character: found `\ud800` at 1 " + "m" * 1000,
            "input": "x" * 100_000,
            "ctx": {"error": "quoted \ud800"},
        }
    ]

    (detail,) = validation_details(errors)

    assert set(detail) == {"loc", "msg", "type"}
    encoded = json.dumps(detail, ensure_ascii=False).encode("utf-8")  # no lone surrogate left
    assert len(encoded) < 600
    assert detail["loc"][0] == "path"
    assert detail["type"] == "uuid_parsing"


def test_details_name_at_most_a_bounded_number_of_problems() -> None:
    errors = [{"type": "missing", "loc": ("body", i), "msg": "Field required"} for i in range(500)]

    details = validation_details(errors)

    assert len(details) == MAX_REPORTED_ERRORS
    assert details[-1]["loc"] == ["body", MAX_REPORTED_ERRORS - 1]

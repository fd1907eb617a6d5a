"""The reason a rejected import is parked with names fields and positions, never the sender's
own keys: an unknown field's name or a metadata key can be memory content."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pydantic import ValidationError

SECRET = "I moved to Lisbon in May"
IMPORT_ID = "00000000-0000-4000-8000-000000000000"


@pytest.fixture
def reason_of(monkeypatch: pytest.MonkeyPatch) -> Callable[[dict[str, Any]], str]:
    # Powertools reads its metrics namespace when `functions.runtime` is first imported.
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "PrmeTests")
    from functions.ingest_consumer import _sanitized
    from prme.model.imports import ImportChunkMessage

    def reason(message: dict[str, Any]) -> str:
        with pytest.raises(ValidationError) as caught:
            ImportChunkMessage.model_validate(message)
        return _sanitized(caught.value)

    return reason


def message(**fields: Any) -> dict[str, Any]:
    return {
        "import_id": IMPORT_ID,
        "tenant_id": "acme",
        "owner_id": "alice",
        "chunk_index": 0,
        **fields,
    }


def test_an_unknown_field_is_not_named_in_the_reason(
    reason_of: Callable[[dict[str, Any]], str],
) -> None:
    reason = reason_of(message(items=[{"content": "x", SECRET: 1}]))

    assert SECRET not in reason
    assert reason == "invalid_message:items.0.*:extra_forbidden"


def test_an_unknown_top_level_field_is_not_named_in_the_reason(
    reason_of: Callable[[dict[str, Any]], str],
) -> None:
    reason = reason_of({**message(items=[{"content": "x"}]), SECRET: "y"})

    assert reason == "invalid_message:*:extra_forbidden"


def test_known_fields_are_still_named(reason_of: Callable[[dict[str, Any]], str]) -> None:
    reason = reason_of(message(items=[{"content": "x", "event_time": "2026-01-01T00:00:00"}]))

    assert reason == "invalid_message:items.0.event_time:timezone_aware"


def test_a_message_of_the_old_format_is_refused(
    reason_of: Callable[[dict[str, Any]], str],
) -> None:
    old = {
        "tenant_id": "acme",
        "owner_id": "alice",
        "idempotency_key": IMPORT_ID,
        "body": {"items": [{"content": SECRET}]},
    }

    reason = reason_of(old)

    assert SECRET not in reason
    assert reason.startswith("invalid_message:")

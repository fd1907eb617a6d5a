"""A work message that is not the object `WorkRef.to_message` writes is refused as malformed,
whatever JSON its sender put on the queue."""

from __future__ import annotations

import pytest

from prme.engine.work_refs import WorkRef
from prme.errors import InvalidRequestError

REF = WorkRef("acme", "alice", "evt-1", "work-1")


@pytest.mark.parametrize(
    "body",
    [
        [],
        ["v", 1],
        "v",
        7,
        None,
        {**REF.to_message(), "v": 2},
        {**REF.to_message(), "owner_id": 5},
        {**REF.to_message(), "work_id": ""},
    ],
)
def test_anything_but_a_work_message_is_malformed(body: object) -> None:
    with pytest.raises(InvalidRequestError):
        WorkRef.from_message(body)


def test_a_written_message_reads_back() -> None:
    assert WorkRef.from_message(REF.to_message()) == REF

"""What a queue message says about a work item: enough to find it in the ledger, nothing more."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from prme.errors import InvalidRequestError
from prme.model.records import OwnerKey, WorkItem

_FIELDS = ("tenant_id", "owner_id", "event_id", "work_id")


@dataclass(frozen=True)
class WorkRef:
    tenant_id: str
    owner_id: str
    event_id: str
    work_id: str

    @classmethod
    def of(cls, item: WorkItem) -> WorkRef:
        return cls(item.tenant_id, item.owner_id, item.event_id, item.id)

    @property
    def owner(self) -> OwnerKey:
        return OwnerKey(tenant_id=self.tenant_id, owner_id=self.owner_id)

    def to_message(self) -> dict[str, Any]:
        return {"v": 1, **{name: getattr(self, name) for name in _FIELDS}}

    @classmethod
    def from_message(cls, body: object) -> WorkRef:
        # A queue body is whatever JSON its sender wrote: a list or a number is as malformed
        # as a missing field, and must be reported as such rather than raise AttributeError.
        if (
            not isinstance(body, dict)
            or body.get("v") != 1
            or not all(isinstance(body.get(f), str) and body.get(f) for f in _FIELDS)
        ):
            raise InvalidRequestError("malformed work message")
        return cls(*(body[f] for f in _FIELDS))

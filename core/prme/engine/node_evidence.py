"""The evidence event a graph change cites: the caller's own, from the memory's scope."""

from __future__ import annotations

from prme.engine.deps import EngineDeps
from prme.errors import InvalidRequestError, NotFoundError
from prme.model.enums import Scope
from prme.model.records import OwnerKey


def checked_evidence(
    deps: EngineDeps, owner: OwnerKey, evidence_id: str | None, *, scope: Scope
) -> None:
    """404 for an event the owner does not have; 422 for one of another scope, whose id
    would otherwise join a memory its readers may not see it from."""
    if evidence_id is None:
        return
    event = deps.ledger.get_event(owner, evidence_id)
    if event is None:
        raise NotFoundError("Evidence event not found")
    if event.scope is not scope:
        raise InvalidRequestError("The evidence belongs to another scope", field=("evidence_id",))

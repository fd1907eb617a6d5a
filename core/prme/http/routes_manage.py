"""The managing routes' adapters: list an owner's nodes and events with filters, counts, and
the erasure of an owner.

Deleting one memory (`DELETE /v1/events/{event_id}`) needs no adapter: the table builds it.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import FastAPI, Query

from prme.engine.identity import Principal, require_operator, resolve_owner
from prme.engine.service import MemoryEngine
from prme.http.dependencies import Caller, UserIdQuery, served
from prme.http.schemas import EventListQuery, EventPageResponse, NodeListQuery, NodePageResponse
from prme.model.erasure import OwnerErasure
from prme.model.listings import OwnerStats
from prme.model.records import OwnerKey


def _owner_and_cursor(
    caller: Principal, query: NodeListQuery | EventListQuery
) -> tuple[OwnerKey, str | None]:
    cursor = str(query.after_id) if query.after_id is not None else None
    return resolve_owner(caller, query.user_id), cursor


# Optional here so that a call without it is refused by the engine's rule (422, one message)
# after the caller's role is checked: an owner key is refused (403) whatever it sends.
ConfirmQuery = Annotated[
    str | None,
    Query(
        max_length=256,
        description="Must repeat the user id being erased (user_id, or the default owner of a "
        "keyless local server): a stray call erases nobody",
    ),
]


def register(app: FastAPI, engine: MemoryEngine) -> None:
    """Add this capability's routes to the app."""

    @served(app, "list_nodes")
    def list_nodes(caller: Caller, query: Annotated[NodeListQuery, Query()]) -> NodePageResponse:
        owner, cursor = _owner_and_cursor(caller, query)
        page = engine.list_nodes(owner, query.node_filter(), limit=query.limit, after_id=cursor)
        return NodePageResponse.of(page)

    @served(app, "list_events")
    def list_events(caller: Caller, query: Annotated[EventListQuery, Query()]) -> EventPageResponse:
        owner, cursor = _owner_and_cursor(caller, query)
        page = engine.list_events(owner, query.event_filter(), limit=query.limit, after_id=cursor)
        return EventPageResponse.of(page)

    @served(app, "get_stats")
    def get_stats(caller: Caller, user_id: UserIdQuery = None) -> OwnerStats:
        return engine.get_stats(resolve_owner(caller, user_id))

    @served(app, "erase_owner")
    def erase_owner(
        caller: Caller, user_id: UserIdQuery = None, confirm: ConfirmQuery = None
    ) -> OwnerErasure:
        require_operator(caller, "erase a user")
        return engine.erase_owner(resolve_owner(caller, user_id), confirm=confirm or "")

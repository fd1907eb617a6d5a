"""Request body of the organizer route (`POST /v1/organize`)."""

from __future__ import annotations

from prme.http.schemas import USER_ID
from prme.model.organizer import OrganizeInput


class OrganizeRequest(OrganizeInput):
    """POST /v1/organize: run the organizer's jobs over one owner's memory."""

    user_id: str | None = USER_ID

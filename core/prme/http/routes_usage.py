"""The usage route's adapter: a tenant's metered usage, summed per period and kind, for its
operator keys (`GET /v1/usage`)."""

from __future__ import annotations

from typing import Annotated

from fastapi import FastAPI, Query
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from prme.engine.identity import require_operator
from prme.engine.service import MemoryEngine
from prme.http.dependencies import Caller, served
from prme.model.usage import UsagePeriod, UsageReport


class UsageReportQuery(BaseModel):
    """GET /v1/usage: whose usage, over which range, summed per which period."""

    model_config = ConfigDict(extra="forbid")

    user_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=256,
        description="Only this user's usage; the whole tenant's when omitted",
    )
    start: AwareDatetime | None = Field(
        default=None,
        description="Start of the range (inclusive, with a timezone); the start of the current "
        "UTC month when omitted",
    )
    end: AwareDatetime | None = Field(
        default=None,
        description="End of the range (exclusive, with a timezone); the end of the current UTC "
        "day when omitted. At most 366 days after start",
    )
    period: UsagePeriod = Field(default="day", description="Sum per UTC day or per UTC month")


def register(app: FastAPI, engine: MemoryEngine) -> None:
    """Add this capability's routes to the app."""

    @served(app, "get_usage")
    def get_usage(caller: Caller, query: Annotated[UsageReportQuery, Query()]) -> UsageReport:
        require_operator(caller, "read usage")
        # The tenant is the key's own: an operator never sees another tenant's usage.
        return engine.get_usage(
            caller.tenant_id,
            user_id=query.user_id,
            start=query.start,
            end=query.end,
            period=query.period,
        )

"""Route adapter of the tenant's limits (`GET /v1/limits`): any key of the tenant reads them."""

from __future__ import annotations

from fastapi import FastAPI

from prme.engine.service import MemoryEngine
from prme.http.dependencies import Caller, served
from prme.model.limits import LimitsReport


def register(app: FastAPI, engine: MemoryEngine) -> None:
    @served(app, "get_limits")
    def get_limits(caller: Caller) -> LimitsReport:
        return engine.get_limits(caller.tenant_id)

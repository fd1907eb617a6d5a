"""Route adapter of `GET /v1/me`: the caller reads back who its key is (the inspector's sign-in)."""

from __future__ import annotations

from typing import Annotated

from fastapi import FastAPI, Query
from pydantic import BaseModel, ConfigDict

from prme.engine.service import MemoryEngine
from prme.http.dependencies import Caller, served
from prme.model.caller import CallerIdentity


class CallerQuery(BaseModel):
    """GET /v1/me takes no parameters: it describes the key, never a user the call names."""

    model_config = ConfigDict(extra="forbid")


def register(app: FastAPI, engine: MemoryEngine) -> None:
    @served(app, "get_caller")
    def get_caller(caller: Caller, _query: Annotated[CallerQuery, Query()]) -> CallerIdentity:
        return engine.get_caller(caller)

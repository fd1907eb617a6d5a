"""Routes of one capability (quantities); each resolves the owner and calls one engine method."""

from __future__ import annotations

from fastapi import FastAPI

from prme.engine.service import MemoryEngine


def register(app: FastAPI, engine: MemoryEngine) -> None:
    """Add this capability's routes to the app."""

"""Use cases of the memory engine; `MemoryEngine` is the one object the edges call."""

from prme.engine.service import MemoryEngine

__all__ = ["MemoryEngine"]

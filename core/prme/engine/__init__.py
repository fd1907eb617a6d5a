"""The memory engine's use cases and derived work; `MemoryEngine` is the one object edges call."""

from prme.engine.service import MemoryEngine

__all__ = ["MemoryEngine"]

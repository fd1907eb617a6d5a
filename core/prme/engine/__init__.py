"""The memory engine's use cases and derived work; `MemoryEngine` is the one object edges call.

`MemoryEngine` loads on first use, so that importing a light submodule (the deadlines a
Lambda handler opens, say) does not import every use case.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prme.engine.service import MemoryEngine

__all__ = ["MemoryEngine"]


def __getattr__(name: str) -> Any:
    if name == "MemoryEngine":
        from prme.engine.service import MemoryEngine

        return MemoryEngine
    raise AttributeError(f"module 'prme.engine' has no attribute {name!r}")

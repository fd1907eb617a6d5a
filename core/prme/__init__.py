"""PRME, long-term memory for LLM agents: the package root and its public names.

The public names load lazily so that importing one submodule (a Lambda handler, say)
does not pull in the embedded backend and its model runtime.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prme.client import AsyncMemoryClient, MemoryClient
    from prme.errors import PrmeError
    from prme.model.bindings import MemoryValueBinding
    from prme.retrieval.receipts import RetrievalReceipt

__all__ = [
    "AsyncMemoryClient",
    "MemoryClient",
    "MemoryValueBinding",
    "PrmeError",
    "RetrievalReceipt",
]
__version__ = "0.1.0"

_LOCATIONS = {
    "AsyncMemoryClient": "prme.client",
    "MemoryClient": "prme.client",
    "MemoryValueBinding": "prme.model.bindings",
    "PrmeError": "prme.errors",
    "RetrievalReceipt": "prme.retrieval.receipts",
}


def __getattr__(name: str) -> Any:
    if name in _LOCATIONS:
        import importlib

        return getattr(importlib.import_module(_LOCATIONS[name]), name)
    raise AttributeError(f"module 'prme' has no attribute {name!r}")

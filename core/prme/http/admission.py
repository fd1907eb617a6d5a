"""The one place a served call meets its tenant's limits: the engine as the HTTP app (REST
routes and /mcp tools) sees it, each operation of the table admitted before it runs.

How a call counts comes from its table entry (`Operation.limited`), what a write would store
from its input (`prme.model.limits.stored_amount`); `LimitGate` does the counting. Calls made
in-process (a `MemoryClient` on a directory, the CLI, workers) are not counted: the limits
protect a shared server from its tenants, not a process from itself.
"""

from __future__ import annotations

import functools
from typing import Any, cast

from prme.engine.limits import LimitGate
from prme.engine.service import MemoryEngine
from prme.errors import CorruptRecordError, NotFoundError, ProcessingIncompleteError
from prme.model.erasure import OwnerErasure
from prme.model.limits import Limited, LimitName, StoredAmount, stored_amount
from prme.model.portability import ImportReport
from prme.model.records import OwnerKey
from prme.operations import BY_NAME, Operation


def admitted(engine: MemoryEngine) -> MemoryEngine:
    """`engine` with every served operation admitted first; the engine itself when it was
    built without limits."""
    if engine.deps.limits is None:
        return engine
    return cast(MemoryEngine, _AdmittingEngine(engine, engine.deps.limits))


class _AdmittingEngine:
    """Stands in for a `MemoryEngine`: a served operation's method is wrapped in its
    admission; anything else is the engine's own (so calls inside the engine are not
    counted again)."""

    def __init__(self, engine: MemoryEngine, gate: LimitGate) -> None:
        self._engine = engine
        self._gate = gate

    def __getattr__(self, name: str) -> Any:
        member = getattr(self._engine, name)
        op = BY_NAME.get(name)
        if (
            op is None
            or op.served_by != "engine"
            or op.limited is Limited.EXEMPT
            or (op.http is None and op.mcp is None)
        ):
            return member
        return functools.partial(self._admitted, op, member)

    def _admitted(self, op: Operation, method: Any, *args: Any, **kwargs: Any) -> Any:
        owner = args[0] if args else kwargs.get("owner")
        if not isinstance(owner, OwnerKey):
            # A tenant-wide pass (owner None) is the operator's own work.
            return method(*args, **kwargs)
        tenant = owner.tenant_id
        stored = None
        if op.limited is Limited.STORE and not self._replays_a_key(op, owner, kwargs):
            amounts = (stored_amount(value) for value in (*args[1:], *kwargs.values()))
            stored = next((amount for amount in amounts if amount is not None), None)
        self._gate.admit(tenant, op.limited, stored)
        freed = self._before_release(op, owner, args) if op.limited is Limited.RELEASE else None
        try:
            result = method(*args, **kwargs)
        except ProcessingIncompleteError:
            raise  # the source was committed: it stays counted
        except BaseException:
            if stored is not None:
                self._gate.release(tenant, stored)
            raise
        if stored is not None:
            self._gate.release(tenant, _not_written(stored, result))
        if freed is not None:
            # A deletion frees its memory once, however many calls answer it.
            once = getattr(result, "journal_id", None)
            self._gate.release(tenant, freed(result), once=once if isinstance(once, str) else None)
        return result

    def _replays_a_key(self, op: Operation, owner: OwnerKey, kwargs: dict[str, Any]) -> bool:
        """Whether the call repeats a write its Idempotency-Key already made: the engine answers
        it from the saved result (or 409s), so it stores nothing and must not be refused by a
        quota the first call filled. Import jobs keep their keys apart, in their own store."""
        key = kwargs.get("idempotency_key")
        if not isinstance(key, str) or op.name == "submit_import":
            return False
        return self._engine.deps.ledger.get_idempotency(owner, op.name, key) is not None

    def _before_release(self, op: Operation, owner: OwnerKey, args: tuple[Any, ...]) -> Any:
        """What a deletion will free, read before it runs: a function of its result."""
        if op.name == "erase_owner":
            before = self._engine.get_stats(owner).events
            report = self._gate.report(owner.tenant_id)
            records = (
                next(u.used for u in report.limits if u.limit is LimitName.STORED_RECORDS) or 0
            )
            stored_bytes = (
                next(u.used for u in report.limits if u.limit is LimitName.STORED_BYTES) or 0
            )

            def erased(result: OwnerErasure) -> StoredAmount:
                after = 0 if result.complete else self._engine.get_stats(owner).events
                gone = max(0, before - after)
                # The bytes of the erased events are not read one by one: their share of the
                # tenant's bytes at its average record size (docs/limits.md says so).
                share = stored_bytes * gone // records if records else 0
                return StoredAmount(records=gone, bytes=share)

            return erased
        event_id = args[1] if len(args) > 1 else None
        try:
            event = self._engine.get_event(owner, str(event_id))
        except NotFoundError:
            # Already deleted (a repeated delete answers the same record) or never there.
            return lambda _result: StoredAmount()
        except CorruptRecordError:
            # A quarantined event can still be deleted; its bytes cannot be read.
            return lambda _result: StoredAmount(records=1)
        freed = StoredAmount(records=1, bytes=len(event.content.encode("utf-8")))
        return lambda _result: freed


def _not_written(stored: StoredAmount, result: Any) -> StoredAmount:
    """The part of a write's reserved amount its result says was not stored."""
    if isinstance(result, ImportReport):
        return stored.scaled(stored.records - result.events)
    if getattr(result, "dropped_for_erasure", False):
        return stored
    return StoredAmount()


def admit_request(engine: MemoryEngine, tenant_id: str) -> None:
    """Count one call of a route that the engine does not serve (key management, the embedded
    upload route) against its tenant's request rate, as every served operation is counted."""
    if engine.deps.limits is not None:
        engine.deps.limits.admit(tenant_id, Limited.REQUEST)

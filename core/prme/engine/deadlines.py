"""A request's time budget: set once at the edge, read by every adapter before it waits on a dependency.

The deadline travels in a context variable instead of an argument of every port method. It is
ambient request state, like a trace id: passing it explicitly would change every `Ledger`,
`SearchIndex`, `WorkQueue`, `Embedder` and `Extractor` method, every adapter and fake, and every
engine use case, for a value only the edges set and only the adapters read. Only edges open a
scope (`deadline_scope`); engine steps may shorten it for one step (`share_of_deadline`), never
lengthen it. Context variables follow the request into Starlette's thread pool (anyio copies the
context); a thread pool of our own must copy it explicitly (see the Bedrock embedder).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True)
class Deadline:
    """A point on the monotonic clock by which the current request must have answered."""

    expires_at: float

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        return cls(time.monotonic() + max(0.0, seconds))

    def remaining(self) -> float:
        """Seconds left, never negative."""
        return max(0.0, self.expires_at - time.monotonic())

    def earlier(self, other: Deadline | None) -> Deadline:
        return self if other is None or self.expires_at <= other.expires_at else other


_current: ContextVar[Deadline | None] = ContextVar("prme_deadline", default=None)


def remaining_seconds() -> float | None:
    """What is left of the current deadline; None when there is none (CLI, tests, bootstrap)."""
    deadline = _current.get()
    return None if deadline is None else deadline.remaining()


@contextmanager
def deadline_scope(seconds: float | None) -> Iterator[Deadline | None]:
    """Run the block under a deadline `seconds` from now, or under the enclosing one when that
    is earlier: a scope can only shorten a deadline. `None` keeps the enclosing deadline."""
    enclosing = _current.get()
    deadline = enclosing if seconds is None else Deadline.after(seconds).earlier(enclosing)
    token = _current.set(deadline)
    try:
        yield deadline
    finally:
        _current.reset(token)


@contextmanager
def share_of_deadline(fraction: float) -> Iterator[Deadline | None]:
    """Give one step at most `fraction` of what is left, keeping the rest for the steps after it
    (a store's ledger commit after its index write). Without a deadline, nothing changes."""
    if not 0.0 < fraction <= 1.0:
        raise ValueError("fraction must be in (0, 1]")
    remaining = remaining_seconds()
    with deadline_scope(None if remaining is None else remaining * fraction) as deadline:
        yield deadline


# A processing pass run by a request (`budget_ms` passes) stops starting new work once it has
# used this share of what was left when it began; the rest counts what is still pending and
# answers with the report.
PASS_SHARE_OF_DEADLINE = 0.5


def pass_budget_ms(requested_ms: int | None) -> int | None:
    """The time a processing pass may take: what its caller asked for, and no more than its
    share of what is left of the current deadline."""
    remaining = remaining_seconds()
    if remaining is None:
        return requested_ms
    cap = int(remaining * PASS_SHARE_OF_DEADLINE * 1000)
    return cap if requested_ms is None else min(requested_ms, cap)

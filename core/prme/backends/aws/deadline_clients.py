"""boto3 clients whose timeouts and retries fit what is left of the current request's deadline.

botocore fixes connect/read timeouts and retry counts per client, not per call, so one client
per step of a short ladder of timeouts is built (lazily, once per process) and each call goes
to the longest step that still fits the remaining budget, retries and their backoff included.
Without a deadline (CLI, bootstrap, tests) calls keep the process-wide defaults.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from botocore.config import Config
from botocore.exceptions import BotoCoreError

from prme.engine.deadlines import remaining_seconds

# Per-attempt bounds in seconds (connect plus read), longest first.
STEPS = (8.0, 4.0, 2.0, 1.5, 1.0, 0.75, 0.5, 0.25)
# Standard-mode retries wait at most this long before a first retry (throttling: up to 1 s).
_FIRST_RETRY_BACKOFF_S = 1.0


class DeadlineSpentError(BotoCoreError):  # type: ignore[misc]  # botocore is untyped
    """Raised instead of calling a dependency when the request's deadline leaves no attempt.

    A BotoCoreError so every adapter translates it as it does a timeout."""

    fmt = "The request's time budget is spent"


def worst_case_s(connect_timeout_s: float, read_timeout_s: float, total_attempts: int) -> float:
    """The longest a call can take on a client with these settings: every attempt hung to its
    timeouts, and the standard mode's backoff (throttling's, the longest) before each retry."""
    return (
        total_attempts * (connect_timeout_s + read_timeout_s)
        + (total_attempts - 1) * _FIRST_RETRY_BACKOFF_S * 2
    )


def _step_for(remaining: float, steps: Sequence[float]) -> tuple[float, int] | None:
    """(per-attempt bound, attempts) for a call that must end within `remaining` seconds:
    the longest attempt that fits, with a second attempt when that fits as well."""
    for bound in steps:
        if bound <= remaining:
            attempts = 2 if 2 * bound + _FIRST_RETRY_BACKOFF_S <= remaining else 1
            return bound, attempts
    return None


class DeadlineBoundClient:
    """Stands in for one boto3 client; each attribute is read from the client that fits now.

    `make` builds a client of the service from a botocore `Config`. boto3 clients are
    thread-safe; building them is not, hence the lock."""

    def __init__(
        self,
        make: Callable[[Config], Any],
        *,
        connect_timeout_s: float = 3.0,
        read_timeout_s: float = 10.0,
        total_attempts: int = 4,
        steps: Sequence[float] = STEPS,
    ) -> None:
        """The timeouts and attempts are the defaults without a deadline; `steps` are the
        per-attempt bounds (seconds, longest first) to choose from under one."""
        self._make = make
        self._steps = tuple(sorted(steps, reverse=True))
        self._lock = threading.Lock()
        # Built on first use, like the bounded ones: a request under a deadline never uses it,
        # and building a client (loading its service model) is a good part of a cold start.
        self._default_config = Config(
            # botocore's `max_attempts` counts retries; the total says what it means.
            retries={"mode": "standard", "total_max_attempts": total_attempts},
            connect_timeout=connect_timeout_s,
            read_timeout=read_timeout_s,
        )
        self._default: Any = None
        # Longer than this is left: the defaults fit, hung dependency and retries included.
        self._default_worst_s = worst_case_s(connect_timeout_s, read_timeout_s, total_attempts)
        self._bounded: dict[tuple[float, int], Any] = {}

    def current(self) -> Any:
        """The client for a call made now. Raises DeadlineSpentError when none fits."""
        remaining = remaining_seconds()
        if remaining is None or remaining >= self._default_worst_s:
            if self._default is None:
                with self._lock:
                    if self._default is None:
                        self._default = self._make(self._default_config)
            return self._default
        step = _step_for(remaining, self._steps)
        if step is None:
            raise DeadlineSpentError()
        client = self._bounded.get(step)
        if client is None:
            with self._lock:
                client = self._bounded.get(step)
                if client is None:
                    bound, attempts = step
                    client = self._make(
                        Config(
                            retries={"mode": "standard", "total_max_attempts": attempts},
                            # A hung server accepts the connection and never answers: the
                            # read timeout is what ends the attempt, so it gets most of it.
                            connect_timeout=bound / 4,
                            read_timeout=bound * 3 / 4,
                        )
                    )
                    self._bounded[step] = client
        return client

    def __getattr__(self, name: str) -> Any:
        return getattr(self.current(), name)

"""Time limits of the Lambda entry points, apart from `runtime` so that the stack's tests can
read them without building Powertools' logger, tracer and metrics (which read their
environment once, when built)."""

from __future__ import annotations

# Kept back from the invocation's remaining time: enough to turn a late failure into an
# answer (a 503, a pending status, a batch's failure report) before Lambda stops the function.
LAMBDA_MARGIN_MS = 1_500

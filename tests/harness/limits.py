"""The HTTP API with per-tenant limits on the embedded and aws backends: a settable clock, the
gate to set each tenant's limits, and keys of two tenants (acme: alice and an operator;
globex: carol)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from prme.backends.clock import ManualClock
from prme.backends.embedded.service import open_embedded
from prme.embedding.hashing import HashingEmbedder
from prme.engine.credentials import CredentialService
from prme.engine.limits import LimitGate
from prme.engine.service import MemoryEngine
from prme.http.app import create_app
from prme.http.auth import AuthPolicy
from prme.http.dependencies import ApiRuntime
from prme.model.enums import CredentialRole
from prme.model.limits import TenantLimits
from prme.model.records import OwnerKey
from tests.harness.aws import aws_harness
from tests.harness.engines import TOKEN_COUNTER
from tests.harness.http import bearer

# Mid-window and mid-day, so a test knows when the window and the day end.
START = datetime(2026, 3, 1, 12, 0, 0, 500_000, tzinfo=UTC)


@dataclass
class LimitedApi:
    client: TestClient
    gate: LimitGate
    clock: ManualClock
    engine: MemoryEngine
    alice: dict[str, str]
    operator: dict[str, str]
    carol: dict[str, str]

    def set_limits(self, tenant: str, **limits: int | None) -> None:
        self.gate.set_limits(tenant, TenantLimits(**limits))

    def events(self, tenant: str, owner: str) -> int:
        """Source events stored for the owner, read past the API (and its limits)."""
        return self.engine.get_stats(OwnerKey(tenant_id=tenant, owner_id=owner)).events


@pytest.fixture(params=["embedded", "aws"])
def limited_api(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LimitedApi]:
    clock = ManualClock(START)
    if request.param == "embedded":
        backend = open_embedded(
            tmp_path / "data", embedder=HashingEmbedder(), clock=clock, token_counter=TOKEN_COUNTER
        )
        engine, credentials = backend.engine, backend.credentials
        close = backend.close
    else:
        from prme.backends.aws.dynamodb_limits import DynamoDbLimits

        resources = request.getfixturevalue("aws_resources")
        h = aws_harness(*resources)
        store = DynamoDbLimits(resources[0], resources[1])
        gate = LimitGate(store, store, TenantLimits(), clock)
        engine = MemoryEngine(replace(h.engine.deps, clock=clock, limits=gate))
        credentials = CredentialService(h.ledger, clock)  # type: ignore[arg-type]

        def close() -> None:
            return None

    assert engine.deps.limits is not None
    keys = {
        "alice": credentials.create(tenant_id="acme", owner_id="alice", role=CredentialRole.OWNER),
        "operator": credentials.create(
            tenant_id="acme", owner_id=None, role=CredentialRole.OPERATOR
        ),
        "carol": credentials.create(
            tenant_id="globex", owner_id="carol", role=CredentialRole.OWNER
        ),
    }
    app = create_app(ApiRuntime(engine=engine, credentials=credentials, auth=AuthPolicy()))
    try:
        with TestClient(app) as client:
            yield LimitedApi(
                client,
                engine.deps.limits,
                clock,
                engine,
                *(bearer(keys[name].secret) for name in ("alice", "operator", "carol")),
            )
    finally:
        close()

"""A damaged key record fails only that key: listing keys, startup and every other key go on.

The record is broken below the API (SQLite or DynamoDB), as a disk fault or an older
version would leave it; before the fix one such row made `prme keys list` and `prme serve`
exit 1 with the parser's message, which quotes the stored body.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from prme.backends.aws import resources
from prme.backends.embedded.service import LEDGER_FILE
from prme.engine.credentials import CredentialService
from prme.errors import CorruptRecordError
from prme.http.auth import AuthPolicy
from prme.model.enums import CredentialRole
from tests.harness.aws import aws_harness
from tests.harness.engines import embedded_harness

# Planted in the damaged body: must never reach an error or a log line.
MARKER = "heron-secret-3"
BROKEN_BODY = '{"key_id": "' + MARKER
TENANT = "heron-tenant"


@dataclass
class Keys:
    credentials: CredentialService
    # Replaces the stored body of one key (by key id and hash) with BROKEN_BODY.
    damage: Callable[[str, str], None]


@pytest.fixture(params=["embedded", "aws"])
def keys(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Keys]:
    if request.param == "embedded":
        h = embedded_harness(tmp_path / "data")
        ledger_file = tmp_path / "data" / LEDGER_FILE

        def damage_row(key_id: str, _key_hash: str) -> None:
            conn = sqlite3.connect(ledger_file)
            try:
                with conn:
                    conn.execute(
                        "UPDATE credentials SET body=? WHERE key_id=?", (BROKEN_BODY, key_id)
                    )
            finally:
                conn.close()

        yield Keys(CredentialService(h.ledger, h.clock), damage_row)  # type: ignore[arg-type]
        h.index.close()  # type: ignore[attr-defined]
        h.ledger.close()  # type: ignore[attr-defined]
    else:
        dynamodb, table, opensearch, alias = request.getfixturevalue("aws_resources")
        h = aws_harness(dynamodb, table, opensearch, alias)

        def damage_items(key_id: str, key_hash: str) -> None:
            # Both items that carry the body: the one found by hash and the tenant listing's.
            for pk, sk in (
                (f"KEYHASH#{key_hash}", "KEY"),
                (f"TENANT#{TENANT}#KEYS", f"KEY#{key_id}"),
            ):
                dynamodb.update_item(
                    TableName=table,
                    Key={resources.PARTITION_KEY: {"S": pk}, resources.SORT_KEY: {"S": sk}},
                    UpdateExpression="SET body = :body",
                    ExpressionAttributeValues={":body": {"S": BROKEN_BODY}},
                )

        credentials = CredentialService(h.ledger, h.clock)  # type: ignore[arg-type]
        yield Keys(credentials, damage_items)


def test_a_damaged_key_fails_only_itself(keys: Keys, caplog: pytest.LogCaptureFixture) -> None:
    damaged = keys.credentials.create(tenant_id=TENANT, owner_id="alice", role=CredentialRole.OWNER)
    kept = keys.credentials.create(tenant_id=TENANT, owner_id="bob", role=CredentialRole.OWNER)
    keys.damage(damaged.credential.key_id, damaged.credential.key_hash)
    caplog.set_level(logging.INFO)

    # `prme keys list` (both listings) and the startup decision go on with the other key.
    assert [c.key_id for c in keys.credentials.list(TENANT)] == [kept.credential.key_id]
    assert kept.credential.key_id in [c.key_id for c in keys.credentials.list()]
    assert not AuthPolicy.at_startup(keys.credentials, local_tenant="local").loopback_only
    assert keys.credentials.authenticate(kept.secret).owner_id == "bob"

    # The damaged key answers a fixed error that quotes nothing of the stored body.
    with pytest.raises(CorruptRecordError) as error:
        keys.credentials.authenticate(damaged.secret)
    assert MARKER not in str(error.value) and error.value.__cause__ is None
    with pytest.raises(CorruptRecordError):
        keys.credentials.revoke(damaged.credential.key_id)
    assert MARKER not in caplog.text


def test_a_damaged_only_key_keeps_keyless_access_closed(keys: Keys) -> None:
    """An unreadable key record may be an active key: startup must not open keyless mode."""
    only = keys.credentials.create(tenant_id=TENANT, owner_id="alice", role=CredentialRole.OWNER)
    keys.damage(only.credential.key_id, only.credential.key_hash)

    assert keys.credentials.any_unreadable() or keys.credentials.any_active()
    assert not AuthPolicy.at_startup(keys.credentials, local_tenant="local").loopback_only


def test_no_key_at_all_still_opens_keyless_access(keys: Keys) -> None:
    assert not keys.credentials.any_unreadable()
    assert AuthPolicy.at_startup(keys.credentials, local_tenant="local").loopback_only

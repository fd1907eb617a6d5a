"""`prme limits` in-process on a data directory: the provider sets, shows and clears a tenant's
limits; the running API holds the tenant to them; bad values are one usage line (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prme.backends.embedded.service import open_embedded
from prme.cli import EXIT_USAGE, main
from prme.embedding.hashing import HashingEmbedder
from prme.model.limits import Limited, TenantLimits
from tests.harness.engines import TOKEN_COUNTER


@pytest.fixture(autouse=True)
def _hashing_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRME_EMBEDDER", "hashing")


def limits(data: Path, *args: str) -> int:
    try:
        return main(["limits", "--data-dir", str(data), *args])
    except SystemExit as exc:  # argparse's own refusal of an option's type
        return int(str(exc.code))


def test_set_changes_only_the_given_limits_and_the_engine_reads_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert limits(tmp_path, "set", "--tenant", "acme", "--requests-per-second", "5") == 0
    assert limits(tmp_path, "set", "--tenant", "acme", "--stored-records", "0") == 0
    capsys.readouterr()

    assert limits(tmp_path, "show", "--tenant", "acme", "--json") == 0

    report = json.loads(capsys.readouterr().out)
    values = {usage["limit"]: usage["limit_value"] for usage in report["limits"]}
    assert values == {
        "requests_per_second": 5,
        "stored_records": 0,
        "stored_bytes": None,
        "retrievals_per_day": None,
    }
    assert (report["burst"], report["overridden"]) == (10, True)
    backend = open_embedded(tmp_path, embedder=HashingEmbedder(), token_counter=TOKEN_COUNTER)
    try:
        assert backend.engine.deps.limits is not None
        assert backend.engine.deps.limits.limits_of("acme") == (
            TenantLimits(requests_per_second=5, stored_records=0),
            True,
        )
        assert backend.engine.deps.limits.limits_of("globex") == (TenantLimits(), False)
    finally:
        backend.close()


def test_unlimited_and_clear_bring_back_the_defaults(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PRME_LIMITS__RETRIEVALS_PER_DAY", "100")
    limits(tmp_path, "set", "--tenant", "acme", "--retrievals-per-day", "unlimited")
    capsys.readouterr()
    limits(tmp_path, "show", "--tenant", "acme")
    assert "retrievals_per_day    unlimited" in capsys.readouterr().out

    assert limits(tmp_path, "clear", "--tenant", "acme") == 0
    out = capsys.readouterr().out
    assert "the defaults" in out
    assert "retrievals_per_day    100" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--requests-per-second", "0"], "--requests-per-second: Input should be greater"),
        (["--requests-per-second", "-3"], "--requests-per-second: Input should be greater"),
        (["--requests-per-second", "1000000"], "--requests-per-second: Input should be less"),
        (["--burst", "0"], "--burst: Input should be greater"),
        (["--stored-records", "-1"], "--stored-records: Input should be greater"),
        (["--stored-bytes", "9" * 40], "--stored-bytes: Input should be less"),
        (["--retrievals-per-day", "1e3"], "expected a whole number or 'unlimited'"),
        (["--retrievals-per-day", "\u202e7"], "expected a whole number or 'unlimited'"),
        ([], "give at least one of --requests-per-second"),
    ],
)
def test_values_out_of_range_are_one_usage_line_and_change_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    code = limits(tmp_path, "set", "--tenant", "acme", *args)

    assert code == EXIT_USAGE
    assert message in capsys.readouterr().err
    limits(tmp_path, "show", "--tenant", "acme", "--json")
    assert json.loads(capsys.readouterr().out)["overridden"] is False


@pytest.mark.parametrize("tenant", ["", "   ", "t" * 129])
def test_a_tenant_id_out_of_bounds_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tenant: str
) -> None:
    assert limits(tmp_path, "show", "--tenant", tenant) == EXIT_USAGE
    assert "--tenant" in capsys.readouterr().err


def test_a_bad_default_in_the_environment_names_its_variable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PRME_LIMITS__REQUESTS_PER_SECOND", "-1")
    assert limits(tmp_path, "show", "--tenant", "acme") == EXIT_USAGE
    assert "PRME_LIMITS__REQUESTS_PER_SECOND" in capsys.readouterr().err


def test_the_table_counts_stores_retrievals_and_deletions_by_their_entries() -> None:
    """Which operations count how comes from the operations table alone."""
    from prme.operations import OPERATIONS

    by_class = {kind: {op.name for op in OPERATIONS if op.limited is kind} for kind in Limited}
    assert {"store", "ingest", "ingest_fast", "import_records"} <= by_class[Limited.STORE]
    assert by_class[Limited.RETRIEVAL] == {"retrieve"}
    assert by_class[Limited.RELEASE] == {"delete_memory", "erase_owner"}
    assert by_class[Limited.EXEMPT] == {"get_limits", "get_caller"}

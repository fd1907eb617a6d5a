"""`prme usage`: the tenant's metered usage per period and kind, as a table or JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prme.cli import main
from prme.client import MemoryClient
from prme.settings import Settings


@pytest.fixture(autouse=True)
def _hashing_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRME_EMBEDDER", "hashing")


def test_usage_prints_one_row_per_period_and_kind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with MemoryClient(tmp_path, settings=Settings(embedder="hashing")) as memory:
        memory.store("Alice keeps bees", user_id="alice")
        memory.store("Bob plays chess", user_id="bob")
    assert main(["usage", "--period", "month", "--data-dir", str(tmp_path)]) == 0
    header, row = capsys.readouterr().out.splitlines()
    assert header.split("\t")[:4] == ["period", "kind", "operations", "records"]
    assert row.split("\t")[1:4] == ["store", "2", "2"]
    argv = ["usage", "--user-id", "bob", "--json", "--data-dir", str(tmp_path)]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert [(t["kind"], t["units"]["bytes_in"]) for t in report["totals"]] == [
        ("store", len("Bob plays chess"))
    ]


def test_usage_refuses_a_time_without_a_timezone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["usage", "--start", "2026-12-01T00:00", "--data-dir", str(tmp_path)]) == 2
    assert "needs a timezone" in capsys.readouterr().err

"""`prme export` and `prme import` in-process: the warning about pending work, stdout output,
and the refusal of a file that is not an export."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prme.cli import EXIT_USAGE, main
from prme.client import MemoryClient
from prme.settings import Settings


@pytest.fixture(autouse=True)
def _hashing_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRME_EMBEDDER", "hashing")


def test_an_export_with_pending_work_says_what_it_leaves_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with MemoryClient(tmp_path, settings=Settings(embedder="hashing")) as memory:
        memory.ingest("I paid $1,200 for the new bike yesterday.", user_id="alice")

    code = main(["export", "--user-id", "alice", "--out", "-", "--data-dir", str(tmp_path)])

    out, err = capsys.readouterr()
    assert code == 0
    assert [json.loads(line)["kind"] for line in out.splitlines()] == ["header", "event", "node"]
    assert "warning: 0 memories and 1 extractions are still pending; run `prme worker`" in err
    assert "exported 2/2 records (" in err


def test_a_file_that_is_not_an_export_is_refused_on_its_first_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    notes = tmp_path / "notes.ndjson"
    notes.write_text('{"kind": "event"}\n', encoding="utf-8")
    binary = tmp_path / "photo.jpg"
    binary.write_bytes(b"\xff\xd8\xff\xe0 not text")

    for path, line in (
        (notes, "prme: error: line 1: is not a PRME export header"),
        (binary, "prme: error: the file is not UTF-8 text; is it a PRME export?"),
    ):
        code = main(["import", str(path), "--data-dir", str(tmp_path / "data")])
        assert (code, capsys.readouterr().err.splitlines()[0]) == (EXIT_USAGE, line)

"""`prme export` and `prme import` run as a user types them: files, stdout, progress, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prme.client import MemoryClient
from prme.settings import Settings
from tests.harness.cli import prme


@pytest.mark.slow
def test_export_then_import_into_another_directory_and_owner(tmp_path: Path) -> None:
    source, target = tmp_path / "source", tmp_path / "target"
    with MemoryClient(source, settings=Settings(embedder="hashing")) as memory:
        for i in range(12):
            memory.store(f"Alice's note number {i} about the garden", user_id="alice")
    exported = tmp_path / "alice.ndjson"

    done = prme(source, "export", "--user-id", "alice", "--out", str(exported))

    assert done.returncode == 0, done.stderr
    assert "exported 24/24 records (" in done.stderr
    lines = exported.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0])["counts"] == {"events": 12, "nodes": 12, "edges": 0}
    assert not (tmp_path / "alice.ndjson.partial").exists()
    to_stdout = prme(source, "export", "--user-id", "alice", "--out", "-")
    assert to_stdout.stdout.splitlines()[1:] == lines[1:]

    imported = prme(target, "import", str(exported), "--user-id", "bob")

    assert imported.returncode == 0, imported.stderr
    assert imported.stdout.strip() == "imported events=12 nodes=12 edges=0 skipped=0 pending=0"
    assert "imported 24/24 records (" in imported.stderr
    with MemoryClient(source, settings=Settings(embedder="hashing")) as memory:
        before = memory.get_stats(user_id="alice")
    with MemoryClient(target, settings=Settings(embedder="hashing")) as memory:
        assert memory.get_stats(user_id="bob") == before
    again = prme(target, "import", str(exported), "--user-id", "bob")
    assert again.stdout.strip() == "imported events=0 nodes=0 edges=0 skipped=24 pending=0"


@pytest.mark.slow
def test_a_bad_line_is_one_line_naming_it(tmp_path: Path) -> None:
    header = {"kind": "header", "format": "prme-owner-export", "version": 1}
    header |= {
        "exported_at": "2024-01-01T00:00:00Z",
        "counts": {"events": 1, "nodes": 0, "edges": 0},
    }
    broken = tmp_path / "broken.ndjson"
    broken.write_text(json.dumps(header) + "\n\n{not json\n", encoding="utf-8")

    refused = prme(tmp_path / "data", "import", str(broken), "--user-id", "bob")

    assert refused.returncode == 2
    assert refused.stderr.startswith(
        "prme: error: line 3: is not JSON; batches before that line are imported"
    )
    assert len(refused.stderr.strip().splitlines()) == 1

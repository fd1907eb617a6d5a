"""`prme imports submit | status` as a user types them: an NDJSON file of sources, progress on
stderr, the same file again adding nothing, a bad line refused before anything is written."""

from __future__ import annotations

import json
from pathlib import Path

from prme.client import MemoryClient
from prme.settings import Settings
from tests.harness.cli import prme


def write_items(path: Path, count: int) -> Path:
    path.write_text(
        "".join(json.dumps({"content": f"note {i} about herons"}) + "\n" for i in range(count))
    )
    return path


def events(data: Path, user_id: str) -> int:
    with MemoryClient(data, settings=Settings(embedder="hashing")) as client:
        return client.get_stats(user_id=user_id).events


def test_a_file_is_imported_with_progress_and_again_adds_nothing(tmp_path: Path) -> None:
    data = tmp_path / "data"
    # 1,200 items: more than one import holds, so two imports of 1,000 and 200.
    file = write_items(tmp_path / "items.ndjson", 1_200)

    done = prme(data, "imports", "submit", str(file), "--user-id", "alice", "--wait")

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split()[1:] for line in lines] == [
        ["items=1000", "chunks=21", "completed"],
        ["items=200", "chunks=5", "completed"],
    ]
    assert "chunks 21/21 done, 1000 saved, 0 failed (completed)" in done.stderr
    assert events(data, "alice") == 1_200
    again = prme(data, "imports", "submit", str(file), "--user-id", "alice")
    assert again.stdout.split()[0] == lines[0].split()[0]
    assert events(data, "alice") == 1_200

    status = prme(data, "imports", "status", lines[1].split()[0], "--user-id", "alice", "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["status"] == "completed"
    other = prme(data, "imports", "status", lines[1].split()[0], "--user-id", "bob")
    assert other.returncode == 1
    assert "not found" in other.stderr


def test_a_bad_line_refuses_the_file_and_names_the_line_only(tmp_path: Path) -> None:
    data = tmp_path / "data"
    file = write_items(tmp_path / "items.ndjson", 3)
    file.write_text(file.read_text() + '{"content": "secret words", "colour": 1}\n')

    refused = prme(data, "imports", "submit", str(file), "--user-id", "alice")

    assert refused.returncode != 0
    assert "line 4" in refused.stderr
    assert "secret" not in refused.stderr
    assert events(data, "alice") == 0

"""No tracked text file keeps a merge conflict's markers: a resolved-looking merge once left
two versions of the architecture's module map side by side, and every check still passed."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = next(
    parent for parent in Path(__file__).resolve().parents if (parent / "pyproject.toml").is_file()
)
TEXT_SUFFIXES = {".py", ".md", ".toml", ".txt", ".json", ".yaml", ".yml", ".sh", ".cfg", ".ini"}
# The three markers git writes, each at the start of its own line.
_MARKER = re.compile(r"^(?:<{7} |>{7} |={7}$)", re.MULTILINE)


# The project's own folders; installed environments and build output are not ours to check.
SOURCE_FOLDERS = ("core", "functions", "infra", "tests", "docs", "benchmarks", "localstack", ".ci")
SKIPPED_PARTS = {"node_modules", "cdk.out", "__pycache__", ".venv", "results"}


def _tracked_text_files() -> list[Path]:
    files = [path for path in ROOT.iterdir() if path.is_file()]
    for folder in SOURCE_FOLDERS:
        files.extend((ROOT / folder).rglob("*"))
    return [
        path
        for path in files
        if path.suffix in TEXT_SUFFIXES
        and path.is_file()
        and not SKIPPED_PARTS.intersection(path.relative_to(ROOT).parts)
    ]


def test_no_tracked_file_holds_merge_conflict_markers() -> None:
    files = _tracked_text_files()
    assert len(files) > 100  # the listing worked: a broken git call must not pass vacuously
    marked = [
        str(path.relative_to(ROOT))
        for path in files
        if _MARKER.search(path.read_text(encoding="utf-8", errors="replace"))
    ]
    assert marked == []

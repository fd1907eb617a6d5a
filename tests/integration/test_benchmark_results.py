"""Figures in the docs can be traced to a run: every result file a document names is committed,
every committed result file says how it was produced (command, commit, machine, parameters)
and is quoted somewhere, and a section that states a benchmark's figures names its file (or,
for a figure kept as history, the commit it was measured on)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from benchmarks.results import HEADER_FIELDS

ROOT = Path(__file__).resolve().parents[2]
RESULTS = "benchmarks/results/"
DOCS = (ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")))

_RESULT_FILE = re.compile(r"benchmarks/results/([\w.-]+\.json)")
# A benchmark module, named as `benchmarks.cost` or `benchmarks/cost.py`.
_BENCHMARK = re.compile(r"benchmarks(?:\.(\w+)|/(\w+)\.py)")
# A measured figure: a number with a unit of time, size, rate or share.
_FIGURE = re.compile(
    r"\b\d[\d,.]*\s?(?:ms|s|%|KB|MB|GB|B|/s|tokens|(?:write |read )?units|x|times)(?![\w/])",
    re.IGNORECASE,
)
# A historical figure's provenance: the commit it was measured on, to check out and rerun.
_MEASURED_ON = re.compile(r"[Mm]easured (?:on|at) [^`]{0,40}`[0-9a-f]{7,40}`")
# Modules under benchmarks/ that are helpers, not benchmarks.
HELPERS = {"results", "local_aws", "dynamodb_units", "memory_clients"}

# Sections that state a benchmark's figures without naming its result file yet, each being
# rewritten by other work on the same issue (issue 22: LoCoMo quality, the store path). The
# test below fails when an entry is no longer needed, so the list only shrinks.
UNCITED: set[tuple[str, str]] = {
    ("docs/quality.md", "int8 weights (what pays for the sentence vectors)"),
    ("docs/quality.md", "Store path"),
}


# Result files a document names that the same work in progress will commit.
PENDING_RESULT_FILES = {"locomo_ablation.json"}


@dataclass(frozen=True)
class Section:
    doc: str
    heading: str
    text: str

    def benchmarks(self) -> set[str]:
        named = {a or b for a, b in _BENCHMARK.findall(f"{self.heading}\n{self.text}")}
        return named - HELPERS - {"results", "data"}

    def result_files(self) -> set[str]:
        return set(_RESULT_FILE.findall(self.text))

    def names_its_source(self) -> bool:
        return bool(self.result_files()) or bool(
            _MEASURED_ON.search(f"{self.heading}\n{self.text}")
        )

    def states_figures(self) -> bool:
        return _FIGURE.search(self.text) is not None


def sections(doc: str, text: str) -> list[Section]:
    """The document cut at its headings (a section runs to the next heading of any level)."""
    found: list[Section] = []
    heading, lines = "", list[str]()
    fenced = False
    for line in text.splitlines():
        fenced ^= line.startswith("```")
        if not fenced and re.match(r"#{1,6} ", line):
            found.append(Section(doc, heading, "\n".join(lines)))
            heading, lines = line.lstrip("#").strip(), []
        else:
            lines.append(line)
    found.append(Section(doc, heading, "\n".join(lines)))
    return found


def uncited_sections(all_sections: list[Section]) -> set[tuple[str, str]]:
    """Sections that name a benchmark and state figures but name neither a result file nor
    the commit they were measured on."""
    return {
        (s.doc, s.heading)
        for s in all_sections
        if s.benchmarks() and s.states_figures() and not s.names_its_source()
    }


def tracked_results() -> set[str]:
    git = shutil.which("git")
    if git is None or not (ROOT / ".git").exists():
        pytest.skip("needs a git checkout")
    listed = subprocess.run(
        [git, "ls-files", "--", RESULTS], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    return {Path(name).name for name in listed if name.endswith(".json")}


def named_result_files() -> dict[str, set[str]]:
    """Result file name -> the documents that name it."""
    named: dict[str, set[str]] = {}
    for path in DOCS:
        for name in _RESULT_FILE.findall(path.read_text(encoding="utf-8")):
            named.setdefault(name, set()).add(path.relative_to(ROOT).as_posix())
    return named


def all_sections() -> list[Section]:
    return [
        section
        for path in DOCS
        for section in sections(path.relative_to(ROOT).as_posix(), path.read_text("utf-8"))
    ]


def test_every_result_file_a_document_names_is_committed() -> None:
    tracked = tracked_results()
    missing = {name: docs for name, docs in named_result_files().items() if name not in tracked}
    assert set(missing) - PENDING_RESULT_FILES == set(), missing
    assert PENDING_RESULT_FILES & tracked == set(), "committed now: remove it from the list"


def test_every_committed_result_file_says_how_it_was_produced() -> None:
    problems: dict[str, list[str]] = {}
    for name in sorted(tracked_results()):
        document = json.loads((ROOT / RESULTS / name).read_text(encoding="utf-8"))
        lacking = [f for f in (*HEADER_FIELDS, "parameters", "results") if f not in document]
        if not lacking and not str(document["command"]).startswith("python -m benchmarks."):
            lacking.append("command (python -m benchmarks.<module> ...)")
        if document.get("header_reconstructed") and not document.get("header_note"):
            # A header rebuilt after the run says where each of its fields came from.
            lacking.append("header_note")
        if lacking:
            problems[name] = lacking
    assert problems == {}


def test_every_committed_result_file_is_quoted_by_a_document() -> None:
    assert tracked_results() - set(named_result_files()) == set()


def test_a_section_stating_a_benchmarks_figures_names_its_result_file() -> None:
    uncited = uncited_sections(all_sections())
    assert uncited - UNCITED == set(), "name the result file next to the figures"
    assert UNCITED - uncited == set(), "cited now: remove the entry from UNCITED"


def test_the_section_check_catches_what_it_is_for() -> None:
    page = (
        "# Page\n\n## Speed\n\n`python -m benchmarks.cost` gives 11 write units.\n\n"
        "## Cited\n\n`python -m benchmarks.cost` -> `benchmarks/results/cost.json`: 11 units.\n\n"
        "## Prose\n\nSee `benchmarks/cost.py` for how units are counted.\n\n"
        "## Helper\n\n`benchmarks/dynamodb_units.py` rounds 1.5 KB up to 2 units.\n\n"
        "## Before\n\nMeasured on `40ce471` with `benchmarks.cost`: 16 units.\n"
    )
    assert uncited_sections(sections("docs/page.md", page)) == {("docs/page.md", "Speed")}

"""The organizer at 10k and 100k nodes per owner (embedded backend): per job, nodes scanned and
changed, wall time, runs needed at a given budget, the largest overshoot of a run past its
budget, and a check that the resumed runs applied every change exactly once.

Run: `.venv/bin/python -m benchmarks.organizer [--sizes 10000 100000] [--budgets 200 5000]`
Seeds each owner once through the ledger's commits (a direct store per node, already
indexed), then copies the data directory for each budget so every budget starts from the
same state. Report only, never asserts.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import tempfile
import time
import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.results import start_run, write_result
from prme.backends.clock import ManualClock
from prme.backends.embedded.service import EmbeddedBackend, open_embedded
from prme.embedding.hashing import HashingEmbedder
from prme.engine.expiry import TTL_ARCHIVE_OPERATION
from prme.engine.organizer_rules import decay_record
from prme.model.enums import (
    EpistemicType,
    LifecycleState,
    NodeType,
    Role,
    Scope,
    SourceType,
    WorkKind,
)
from prme.model.organizer import ORGANIZER_JOBS, OrganizeInput
from prme.model.records import (
    DECAY_METADATA_KEY,
    Event,
    JournalRecord,
    MemoryNode,
    OwnerKey,
    StoreCommit,
    WorkItem,
)
from prme.model.search import IndexDocument

NOW = datetime(2026, 6, 1, tzinfo=UTC)
CREATED = NOW - timedelta(days=30)
OWNER = OwnerKey(tenant_id="bench", owner_id="organizer")
# Each run of ten nodes: which job has work on it (the rest have none).
MIX = {
    0: "promote (tentative, 30 days old) and decay",
    1: "promote and decay",
    2: "promote and decay",
    3: "decay (no decay base yet)",
    4: "decay",
    5: "archive (salience 0.04)",
    6: "deprecate (confidence 0.10)",
    7: "dedup (same text as the next node)",
    8: "dedup keeper",
    9: "ttl_sweep (expired a day ago)",
}
EXPECTED_PER_TEN = {
    "promote": 3,
    "decay": 5,
    "archive": 1,
    "deprecate": 1,
    "dedup": 1,
    "ttl_sweep": 1,
}
OPERATION = {job: f"organizer_{job}" for job in ORGANIZER_JOBS} | {
    "ttl_sweep": TTL_ARCHIVE_OPERATION
}


def seed_node(n: int) -> tuple[StoreCommit, IndexDocument]:
    kind = n % 10
    node_id = str(uuid.UUID(bytes=hashlib.sha256(f"node-{n}".encode()).digest()[:16], version=4))
    event_id = str(uuid.UUID(bytes=hashlib.sha256(f"event-{n}".encode()).digest()[:16], version=4))
    text = f"Note {n} about errand {n * 7919 % 100003}"
    if kind in (7, 8):
        text = f"Pair {n // 10} shares these exact words"
    ids = {"tenant_id": OWNER.tenant_id, "owner_id": OWNER.owner_id}
    fields: dict[str, Any] = {
        "lifecycle_state": LifecycleState.TENTATIVE if kind < 3 else LifecycleState.STABLE,
        "salience": 0.04 if kind == 5 else 0.5,
        "confidence": 0.10 if kind == 6 else (0.9 if kind == 8 else 0.8),
        "expires_at": NOW - timedelta(days=1) if kind == 9 else None,
    }
    if kind >= 5:
        # A decay base set four hours ago: too recent for decay to move anything.
        base = decay_record(fields["salience"], fields["confidence"], NOW - timedelta(hours=4))
        fields["metadata"] = {DECAY_METADATA_KEY: base}
    digest = hashlib.sha256(text.encode()).hexdigest()
    event = Event(
        id=event_id,
        content=text,
        content_sha256=digest,
        role=Role.USER,
        ingested_at=CREATED,
        **ids,
    )
    node = MemoryNode(
        id=node_id,
        node_type=NodeType.NOTE,
        content=text,
        content_sha256=digest,
        scope=Scope.PERSONAL,
        source_type=SourceType.USER_STATED,
        epistemic_type=EpistemicType.ASSERTED,
        created_at=CREATED,
        updated_at=CREATED,
        evidence_refs=(event_id,),
        **fields,
        **ids,
    )
    journal = JournalRecord.build(
        record_id=str(uuid.uuid5(uuid.UUID(event_id), "store")),
        owner=OWNER,
        operation="direct_store",
        subject_id=event_id,
        created_at=CREATED,
        payload={"node_id": node_id},
    )
    work = WorkItem.queued(
        WorkKind.INDEX_NODE,
        work_id=str(uuid.uuid5(uuid.UUID(event_id), "work")),
        owner=OWNER,
        event_id=event_id,
        node_id=node_id,
        now=CREATED,
    ).succeeded(CREATED)
    document = IndexDocument(
        node_id=node_id,
        text=text,
        node_type=node.node_type,
        source_type=node.source_type,
        epistemic_type=node.epistemic_type,
        lifecycle_state=node.lifecycle_state,
        scope=node.scope,
        created_at=CREATED,
        expires_at=node.expires_at,
        **ids,
    )
    return StoreCommit(event=event, node=node, journal=journal, work=work), document


def open_at(data_dir: Path) -> EmbeddedBackend:
    return open_embedded(
        data_dir, embedder=HashingEmbedder(), clock=ManualClock(NOW), recover_pending=False
    )


def seed(data_dir: Path, size: int) -> float:
    started = time.perf_counter()
    backend = open_at(data_dir)
    documents: list[IndexDocument] = []
    for n in range(size):
        commit, document = seed_node(n)
        backend.ledger.commit_store(commit)
        documents.append(document)
        if len(documents) == 2000:
            backend.index.upsert(documents)
            documents = []
    backend.index.upsert(documents)
    backend.close()
    return time.perf_counter() - started


# A job's runs stop here even if unfinished: dedup with a budget shorter than one read of
# the owner's nodes never finishes (each run restarts its read).
JOB_WALL_LIMIT_S = 600.0
DEDUP_WALL_LIMIT_S = 60.0


def run_job(backend: EmbeddedBackend, job: str, budget_ms: int) -> dict[str, Any]:
    runs = scanned = changed = 0
    finished = False
    overshoot = 0.0
    started = time.perf_counter()
    while True:
        request = OrganizeInput.model_validate({"jobs": [job], "budget_ms": budget_ms})
        run_started = time.perf_counter()
        report = backend.engine.organize(OWNER, request)
        run_ms = (time.perf_counter() - run_started) * 1000
        runs += 1
        overshoot = max(overshoot, run_ms - budget_ms)
        scanned += report.per_job[job].scanned
        changed += report.per_job[job].changed
        if report.complete:
            finished = True
            break
        limit = DEDUP_WALL_LIMIT_S if job == "dedup" else JOB_WALL_LIMIT_S
        if time.perf_counter() - started > limit:
            break
    return {
        "job": job,
        "budget_ms": budget_ms,
        "scanned": scanned,
        "changed": changed,
        "seconds": round(time.perf_counter() - started, 3),
        "runs": runs,
        "finished": finished,
        "max_overshoot_ms": round(max(overshoot, 0.0), 1),
    }


def changes_applied_once(backend: EmbeddedBackend) -> dict[str, Any]:
    """Journal records per job and node: every organizer change journaled exactly once."""
    per_node: Counter[tuple[str, str]] = Counter()
    after: str | None = None
    while True:
        page = backend.ledger.list_journal(OWNER, "", after_id=after, limit=1000)
        for record in page:
            if record.operation in OPERATION.values():
                per_node[(record.operation, record.subject_id)] += 1
        if len(page) < 1000:
            break
        after = page[-1].id
    journaled = Counter(operation for operation, _ in per_node)
    return {
        "journaled": {job: journaled[OPERATION[job]] for job in ORGANIZER_JOBS},
        "max_records_per_node_and_job": max(per_node.values(), default=0),
    }


def measure(base_dir: Path, size: int, budgets: list[int]) -> list[dict[str, Any]]:
    seed_dir = base_dir / f"seed-{size}"
    seconds = seed(seed_dir, size)
    print(f"seeded {size} nodes in {seconds:.1f} s")
    rows: list[dict[str, Any]] = []
    for budget in budgets:
        data_dir = base_dir / f"run-{size}-{budget}"
        shutil.copytree(seed_dir, data_dir)
        backend = open_at(data_dir)
        job_rows = [run_job(backend, job, budget) for job in ORGANIZER_JOBS]
        check = changes_applied_once(backend)
        backend.close()
        shutil.rmtree(data_dir)
        for row in job_rows:
            expected = size // 10 * EXPECTED_PER_TEN[row["job"]]
            rows.append(
                {
                    "nodes": size,
                    **row,
                    "expected_changes": expected,
                    "journaled": check["journaled"][row["job"]],
                    "all_changes_made": row["changed"] == expected,
                    "each_change_once": check["max_records_per_node_and_job"] <= 1
                    and check["journaled"][row["job"]] == row["changed"],
                }
            )
    shutil.rmtree(seed_dir)
    return rows


HEADER = (
    f"{'nodes':>7} {'budget':>6} {'job':10} {'scanned':>8} {'changed':>7} {'seconds':>8} "
    f"{'runs':>5} {'done':>4} {'overshoot':>9} {'once':>5}"
)


def line(row: dict[str, Any]) -> str:
    return (
        f"{row['nodes']:7d} {row['budget_ms']:6d} {row['job']:10} {row['scanned']:8d} "
        f"{row['changed']:7d} {row['seconds']:8.2f} {row['runs']:5d} "
        f"{'yes' if row['all_changes_made'] else 'no':>4} "
        f"{row['max_overshoot_ms']:8.1f}ms {'yes' if row['each_change_once'] else 'NO':>5}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--budgets", type=int, nargs="+", default=[200, 5_000])
    parser.add_argument("--json", type=Path, default=Path("benchmarks/results/organizer.json"))
    args = parser.parse_args()
    run_start = start_run()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes:
            measured = measure(Path(tmp), size, args.budgets)
            rows.extend(measured)
            for row in measured:
                print(line(row), flush=True)
    print(HEADER)
    for row in rows:
        print(line(row))
    write_result(
        args.json,
        "benchmarks.organizer",
        {"organizer": {"mix_per_ten_nodes": MIX, "rows": rows}},
        parameters={"sizes": args.sizes, "budgets": args.budgets},
        started=run_start,
    )


if __name__ == "__main__":
    main()

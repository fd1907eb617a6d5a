"""Read-side capabilities through the engine facade: relevance judgments and answer citations
(record latency, listing pages), grounded quantity aggregation, and alias proposal scans.

Run: `.venv/bin/python -m benchmarks.read_side [--quick] [--backend embedded|aws] [--json PATH]`.
The embedded backend (default) runs in a temporary directory; `--backend aws` needs the local
AWS (`make local-aws-up`, or run inside `localstack/with_local_aws.sh`) and uses smaller sizes.
Both use the 64-dimension HashingEmbedder, not MiniLM, as `ingest_throughput` does: retrieval
here only produces receipts to judge, so its ranking quality is irrelevant. Quantities come
from the offline rule extractor through `ingest(..., wait_for_extraction=True)`.
Prints a table and writes JSON. Report only: timings depend on the machine and are never
asserted.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from benchmarks.embedder_speed import conversational_sentences, percentile
from benchmarks.local_aws import fresh_aws
from benchmarks.results import start_run, write_result
from benchmarks.store_retrieve import QUERIES
from prme.embedding.hashing import HashingEmbedder
from prme.engine.aliases import MAX_NEW_PROPOSALS_PER_SCAN
from prme.engine.service import MemoryEngine
from prme.model.enums import NodeType
from prme.model.feedback import AnswerCitationInput, RelevanceInput
from prme.model.inputs import IngestInput, RetrieveInput, StoreInput
from prme.model.quantities import QuantityAggregationQuery
from prme.model.records import OwnerKey

TENANT = "local"
QUESTION = "How much did I raise?"
AGGREGATION_RUNS = 5
PAGE_LIMITS = (100, 1000)
EMBEDDER_NOTE = "HashingEmbedder (64 dimensions), not MiniLM"


@dataclass(frozen=True)
class Sizes:
    receipts: int
    feedback_records: int
    quantity_nodes: tuple[int, ...]
    entity_nodes: tuple[int, ...]


SIZES = {
    ("embedded", False): Sizes(50, 1_000, (1_000, 10_000), (500, 2_000)),
    ("embedded", True): Sizes(20, 200, (200,), (100,)),
    # moto and a local OpenSearch node: every call is several HTTP round trips, and moto
    # copies the whole table in every TransactWriteItems, so writes slow down as the table
    # grows (an ingest takes ~0.1 s on an empty table, ~0.35 s after 80 messages). On a busy
    # local AWS a write can outlast the client's 10 s read timeout; botocore then retries a
    # transaction that had committed, and the run stops with ConflictError.
    ("aws", False): Sizes(20, 200, (100, 200), (100, 300)),
    ("aws", True): Sizes(10, 50, (50,), (100,)),
}


def owner(name: str) -> OwnerKey:
    return OwnerKey(tenant_id=TENANT, owner_id=name)


def timed_ms(action: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    action()
    return (time.perf_counter() - t0) * 1000


def summary(latencies: list[float]) -> dict[str, float]:
    return {
        "calls": len(latencies),
        "p50_ms": statistics.median(latencies),
        "p95_ms": percentile(latencies, 0.95),
    }


# -- relevance judgments and answer citations ------------------------------------------


def measure_feedback(engine: MemoryEngine, sizes: Sizes) -> dict[str, Any]:
    """Judge and cite against a pool of saved receipts (round robin), then page the lists."""
    key = owner("bench-feedback")
    for i, text in enumerate(conversational_sentences(200, seed=61)):
        engine.store(key, StoreInput(content=text, session_id=f"s{i % 10}"))
    receipts: list[tuple[uuid.UUID, list[uuid.UUID], list[uuid.UUID]]] = []
    for i in range(sizes.receipts):
        response = engine.retrieve(key, RetrieveInput(query=QUERIES[i % len(QUERIES)], limit=10))
        returned = [uuid.UUID(r.node_id) for r in response.results]
        full = [uuid.UUID(e.node_id) for e in response.bundle.entries if e.representation == "full"]
        if len(returned) < 2 or not full:
            raise SystemExit("a retrieval returned too little to judge; store more memories")
        receipts.append((uuid.UUID(response.metrics.request_id), returned, full))

    relevance: list[float] = []
    citations: list[float] = []
    for i in range(sizes.feedback_records):
        request_id, returned, full = receipts[i % len(receipts)]
        judged = RelevanceInput(
            request_id=request_id, labels={returned[0]: True, returned[1]: i % 3 == 0}
        )
        relevance.append(timed_ms(partial(engine.record_relevance, key, judged)))
        cited = AnswerCitationInput(
            request_id=request_id,
            answer_id=f"answer-{i}",
            cited_node_ids=full[:2],
            answer_sha256=None,
            method="application_verified",
        )
        citations.append(timed_ms(partial(engine.record_answer_citations, key, cited)))

    listing: dict[str, Any] = {}
    for limit in PAGE_LIMITS:
        for name, list_page in (
            ("relevance", engine.list_relevance),
            ("citations", engine.list_answer_citations),
        ):
            pages, items, after = 0, 0, None
            t0 = time.perf_counter()
            while True:
                page = list_page(key, limit=limit, after_id=after)
                pages += 1
                items += len(page.items)
                after = page.next_after_id
                if after is None:
                    break
            listing[f"{name}, limit {limit}"] = {
                "records": items,
                "pages": pages,
                "total_ms": (time.perf_counter() - t0) * 1000,
            }
    return {
        "receipts": len(receipts),
        "record_relevance": summary(relevance),
        "record_answer_citations": summary(citations),
        "list": listing,
    }


# -- grounded quantity aggregation -----------------------------------------------------

_CAUSES = ["library", "animal shelter", "school trip", "food bank", "hospital", "park cleanup"]
_PLACES = ["garden", "kitchen", "report", "fence", "boat", "attic"]
_EVENTS = ["fair", "market", "airport", "station", "conference", "flea market"]


def quantity_sentences(count: int, seed: int) -> list[str]:
    """Sentences the rule extractor turns into exactly one quantity each."""
    rng = random.Random(seed)
    templates: list[Callable[[], str]] = [
        lambda: f"I raised ${rng.randint(5, 5000):,} for the {rng.choice(_CAUSES)}.",
        lambda: f"We spent {rng.randint(1, 40)} hours on the {rng.choice(_PLACES)}.",
        lambda: f"My sister donated €{rng.randint(5, 900)} to the {rng.choice(_CAUSES)}.",
        lambda: f"I bought {rng.randint(1, 12)} books at the {rng.choice(_EVENTS)}.",
        lambda: (
            f"I paid ${rng.randint(1, 300)}.{rng.randint(0, 99):02d} for the {rng.choice(_PLACES)}."
        ),
        lambda: f"Our team collected {rng.randint(2, 90)} kg of litter at the beach.",
        lambda: f"I walked {rng.randint(1, 20)} miles with the dog.",
        lambda: f"My brother saved £{rng.randint(10, 2000)} for the {rng.choice(_EVENTS)}.",
    ]
    return [rng.choice(templates)() for _ in range(count)]


def measure_quantities(engine: MemoryEngine, size: int) -> dict[str, Any]:
    key = owner(f"bench-quantities-{size}")
    t0 = time.perf_counter()
    for text in quantity_sentences(size, seed=size):
        engine.ingest(key, IngestInput(content=text, wait_for_extraction=True))
    ingest_s = time.perf_counter() - t0

    # Every quantity of the owner, grouped by unit, subject and predicate (the default).
    query = QuantityAggregationQuery()
    t0 = time.perf_counter()
    result = engine.aggregate_quantities(key, query)  # the first call, reported apart
    first_ms = (time.perf_counter() - t0) * 1000
    structured = [
        timed_ms(lambda: engine.aggregate_quantities(key, query)) for _ in range(AGGREGATION_RUNS)
    ]
    answer = engine.aggregate_quantities_text(key, QUESTION)
    text_ms = [
        timed_ms(lambda: engine.aggregate_quantities_text(key, QUESTION))
        for _ in range(AGGREGATION_RUNS)
    ]
    text_matched = answer.aggregation.matched if answer.aggregation is not None else None
    return {
        "ingested": size,
        "ingest_per_s": size / ingest_s,
        "scanned_nodes": result.scanned_nodes,
        "quantity_nodes": result.quantity_nodes,
        "matched": result.matched,
        "counted": result.counted,
        "groups": result.group_count,
        "aggregate_first_ms": first_ms,
        "aggregate_p50_ms": statistics.median(structured),
        "aggregate_runs": len(structured),
        "question": QUESTION,
        "question_status": answer.plan.status,
        "question_matched": text_matched,
        "question_p50_ms": statistics.median(text_ms),
        "question_runs": len(text_ms),
    }


# -- alias proposal scans --------------------------------------------------------------

_FIRST = [
    "Maria", "Jose", "Ana", "Luis", "Carmen", "Pedro", "Sofia", "Diego", "Elena", "Pablo",
    "Laura", "Javier", "Marta", "Carlos", "Lucia", "Miguel", "Paula", "Andres", "Julia",
    "Tomas", "Clara", "Mateo", "Irene", "Hugo", "Alba", "Daniel", "Sara", "Adrian", "Nora",
    "Ivan", "Olga", "Bruno", "Ines", "Marco", "Greta", "Felix", "Hanna", "Oscar", "Vera",
    "Emil", "Rosa", "Leon", "Alma", "Rafael", "Noemi", "Victor", "Eva", "Samuel", "Lidia",
    "Gabriel",
]  # fmt: skip
_LAST = [
    "Lopez", "Garcia", "Martinez", "Rodriguez", "Fernandez", "Gonzalez", "Sanchez", "Perez",
    "Romero", "Navarro", "Torres", "Dominguez", "Vazquez", "Ramos", "Gil", "Serrano", "Blanco",
    "Molina", "Morales", "Ortega", "Delgado", "Castro", "Ortiz", "Rubio", "Marin", "Sanz",
    "Iglesias", "Nunez", "Medina", "Garrido", "Cortes", "Castillo", "Santos", "Lozano",
    "Guerrero", "Cano", "Prieto", "Mendez", "Cruz", "Calvo", "Gallego", "Vidal", "Leal",
    "Herrera", "Marquez", "Pena", "Flores", "Cabrera", "Campos", "Vega",
]  # fmt: skip
_ORG_A = [
    "Northern", "Southern", "Eastern", "Western", "Pacific", "Atlantic", "Central", "United",
    "Global", "National", "Royal", "Coastal", "Alpine", "Metro", "Golden", "Silver",
]  # fmt: skip
_ORG_B = [
    "Harvest", "Valley", "River", "Harbor", "Mountain", "Forest", "Prairie", "Desert", "Lake",
    "Canyon", "Bridge", "Summit", "Meadow", "Island", "Delta", "Ridge",
]  # fmt: skip
_ORG_C = [
    "Railway", "Bank", "Insurance", "Logistics", "Foods", "Energy", "Airlines", "Software",
    "Pharmacy", "Studios", "Telecom", "Motors",
]  # fmt: skip
_TITLES = ["Dr.", "Prof.", "Mr.", "Ms."]


def entity_names(count: int, seed: int) -> tuple[list[str], list[tuple[int, int]]]:
    """`count` distinct names, in a shuffled order, and the index pairs of planted variants:
    one in twenty names is a variant of another (a title added, family name first, an
    acronym or a company designator), the kind of pair a scan should propose."""
    if count > len(_FIRST) * len(_LAST):
        raise ValueError(f"at most {len(_FIRST) * len(_LAST)} names")
    rng = random.Random(seed)
    planted = count // 20
    people = [f"{f} {s}" for f in _FIRST for s in _LAST]
    orgs = [f"{a} {b} {c}" for a in _ORG_A for b in _ORG_B for c in _ORG_C]
    rng.shuffle(people)
    rng.shuffle(orgs)
    bases = [orgs.pop() if rng.random() < 0.2 else people.pop() for _ in range(count - planted)]
    variants: list[tuple[str, str]] = []
    used = set(bases)
    for base in rng.sample(bases, planted):
        words = base.split()
        if len(words) == 3:  # an organization
            choices = ["".join(w[0] for w in words), f"{base} Inc."]
        else:
            choices = [f"{rng.choice(_TITLES)} {base}", f"{words[1]}, {words[0]}"]
        variant = rng.choice(choices)
        if variant not in used:
            used.add(variant)
            variants.append((base, variant))
    names = bases + [v for _, v in variants]
    order = list(range(len(names)))
    rng.shuffle(order)
    names = [names[i] for i in order]
    position = {name: i for i, name in enumerate(names)}
    return names, [(position[b], position[v]) for b, v in variants]


def measure_aliases(engine: MemoryEngine, size: int) -> dict[str, Any]:
    key = owner(f"bench-aliases-{size}")
    names, planted = entity_names(size, seed=size)
    t0 = time.perf_counter()
    node_ids = [
        engine.store(key, StoreInput(content=name, node_type=NodeType.ENTITY)).node_id
        for name in names
    ]
    store_s = time.perf_counter() - t0

    passes: list[dict[str, float]] = []
    while True:  # each scan journals at most MAX_NEW_PROPOSALS_PER_SCAN proposals
        t0 = time.perf_counter()
        report = engine.propose_aliases(key)
        passes.append(
            {"seconds": time.perf_counter() - t0, "proposals_created": report.proposals_created}
        )
        if report.pending == 0 or report.proposals_created == 0 or len(passes) >= 20:
            break
    t0 = time.perf_counter()
    rescan = engine.propose_aliases(key)
    rescan_s = time.perf_counter() - t0

    proposed = {
        frozenset(item.proposal.node_ids) for item in engine.list_alias_proposals(key, limit=500)
    }
    found = sum(1 for a, b in planted if frozenset((node_ids[a], node_ids[b])) in proposed)
    created = sum(int(p["proposals_created"]) for p in passes)
    return {
        "entity_nodes": len(names),
        "store_per_s": len(names) / store_s,
        "planted_pairs": len(planted),
        "planted_pairs_proposed": found,
        "proposals_listed": len(proposed),
        "proposals_created": created,
        "proposals_cap_per_scan": MAX_NEW_PROPOSALS_PER_SCAN,
        "first_scan_s": passes[0]["seconds"],
        "scans_until_done": len(passes),
        "scan_passes": passes,
        "rescan_s": rescan_s,
        "rescan_proposals_created": rescan.proposals_created,
    }


# -- backends --------------------------------------------------------------------------


@contextmanager
def embedded_engine() -> Iterator[MemoryEngine]:
    from prme.backends.embedded.service import open_embedded

    with tempfile.TemporaryDirectory() as tmp:
        backend = open_embedded(Path(tmp) / "data", embedder=HashingEmbedder())
        try:
            yield backend.engine
        finally:
            backend.close()


@contextmanager
def aws_engine() -> Iterator[MemoryEngine]:
    """A fresh table, queues and index on the local AWS, deleted afterwards."""
    from prme.backends.aws.service import open_aws
    from prme.settings import Settings

    with fresh_aws(Settings(), "rs", dimension=64) as (settings, clients):
        backend = open_aws(
            settings, embedder=HashingEmbedder(), clients=clients, refresh_on_write=True
        )
        try:
            yield backend.engine
        finally:
            backend.close()


# -- report ----------------------------------------------------------------------------


def print_table(results: dict[str, Any]) -> None:
    print(f"read side, {results['backend']} backend, {results['embedder']}")
    print(f"{'operation':66} {'value':>16}")

    def row(name: str, value: str) -> None:
        print(f"{name:66} {value:>16}")

    feedback = results["feedback"]
    for name in ("record_relevance", "record_answer_citations"):
        r = feedback[name]
        row(
            f"{name}, {r['calls']:,} calls on {feedback['receipts']} receipts, p50/p95 (ms)",
            f"{r['p50_ms']:.2f} / {r['p95_ms']:.2f}",
        )
    for label, r in feedback["list"].items():
        row(
            f"list {label}: {r['records']:,} records in {r['pages']} pages (ms)",
            f"{r['total_ms']:.1f}",
        )
    for r in results["quantities"]:
        size = f"{r['quantity_nodes']:,} quantities"
        row(
            f"ingest, wait_for_extraction, {r['ingested']:,} messages (msg/s)",
            f"{r['ingest_per_s']:.1f}",
        )
        row(
            f"aggregate_quantities (all), {size}, p50 of {r['aggregate_runs']} (ms)",
            f"{r['aggregate_p50_ms']:.1f}",
        )
        row(
            "  scanned fact nodes / matched / counted / groups",
            f"{r['scanned_nodes']:,} / {r['matched']:,} / {r['counted']:,} / {r['groups']}",
        )
        row(
            f"aggregate_quantities_text, {size}, p50 of {r['question_runs']} (ms)",
            f"{r['question_p50_ms']:.1f}",
        )
        matched = r["question_matched"]
        shown = "-" if matched is None else f"{matched:,}"
        row(f'  "{QUESTION}": plan / matched', f"{r['question_status']} / {shown}")
    for r in results["aliases"]:
        n = f"{r['entity_nodes']:,} entities"
        row(f"propose_aliases, first scan, {n} (s)", f"{r['first_scan_s']:.2f}")
        row(
            f"  proposals created (at most {r['proposals_cap_per_scan']} a scan), scans",
            f"{r['proposals_created']}, {r['scans_until_done']}",
        )
        row(
            "  planted variant pairs proposed",
            f"{r['planted_pairs_proposed']} of {r['planted_pairs']}",
        )
        row(f"propose_aliases, rescan with nothing new, {n} (s)", f"{r['rescan_s']:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes for CI")
    parser.add_argument("--backend", choices=["embedded", "aws"], default="embedded")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    run_start = start_run()
    sizes = SIZES[(args.backend, args.quick)]
    # Quick runs write apart, so `make bench` never overwrites the full run's numbers.
    default_name = ("read_side" if args.backend == "embedded" else "aws_read_side") + (
        "_quick.json" if args.quick else ".json"
    )
    out: Path = args.json or Path("benchmarks/results") / default_name

    started = time.perf_counter()
    results: dict[str, Any] = {
        "backend": args.backend,
        "embedder": EMBEDDER_NOTE,
        "extractor": "rules",
        "quick": args.quick,
    }
    open_engine = embedded_engine if args.backend == "embedded" else aws_engine
    # A fresh store for every measurement, so none pays for another's data.
    with open_engine() as engine:
        results["feedback"] = measure_feedback(engine, sizes)
    results["quantities"] = []
    for size in sizes.quantity_nodes:
        with open_engine() as engine:
            results["quantities"].append(measure_quantities(engine, size))
    results["aliases"] = []
    for size in sizes.entity_nodes:
        with open_engine() as engine:
            results["aliases"].append(measure_aliases(engine, size))
    results["wall_s"] = time.perf_counter() - started

    print_table(results)
    write_result(
        out,
        "benchmarks.read_side",
        results,
        parameters={"quick": args.quick, "backend": args.backend},
        started=run_start,
    )
    print(f"({results['wall_s']:.0f} s)")


if __name__ == "__main__":
    main()

"""How the HTTP API holds up against hostile input: a combinatorial sweep and a schemathesis run.

The sweep puts each hostile value (NaN, infinities, lone surrogates, NUL, invisible
characters, deep nesting, huge integers, wrong types, oversized text) into each field of
each JSON route, sends it raw over the real app on the embedded backend, and counts the
answers by status. The schemathesis run fuzzes every documented operation with a larger
budget than the suite's. Prints a table and writes benchmarks/results/hostile_http.json.

    .venv/bin/python -m benchmarks.hostile_http [--examples 50]
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from benchmarks.results import start_run, write_result
from prme.backends.embedded.service import open_embedded
from prme.embedding.hashing import HashingEmbedder
from prme.http.app import create_app
from prme.http.auth import AuthPolicy
from prme.http.dependencies import ApiRuntime
from prme.model.enums import CredentialRole

RESULTS = Path(__file__).parent / "results"

# Raw JSON fragments: several cannot be produced by a conforming encoder.
HOSTILE_VALUES: dict[str, str] = {
    "nan": "NaN",
    "infinity": "Infinity",
    "-infinity": "-Infinity",
    "1e400": "1e400",
    "huge-int": "9" * 5000,
    "int-2^64": str(2**64),
    "high-surrogate": '"a\\ud800"',
    "low-surrogate": '"\\udc00b"',
    "nul": '"a\\u0000b"',
    "zero-width": '"Ann\\u200b"',
    "rtl-override": '"\\u202eAnn"',
    "bom": '"\\ufeffAnn"',
    "deep-object": '{"a":' * 250 + "1" + "}" * 250,
    "deep-array": "[" * 3000 + "]" * 3000,
    "empty-object": "{}",
    "list": "[1, 2]",
    "bool": "true",
    "null": "null",
    "long-text": json.dumps("x" * 300_000),
    "object-with-nan": '{"k": NaN}',
    "object-with-surrogate-key": '{"\\ud800": 1}',
}

# Route -> a valid body, as a dict of field -> raw JSON fragment.
ROUTES: dict[str, dict[str, str]] = {
    "/v1/store": {
        "content": '"hello"',
        "speaker": '"Ann"',
        "session_id": '"s1"',
        "metadata": '{"k": 1}',
        "confidence": "0.5",
        "ttl_days": "3",
        "retrieval_content": '"hello"',
        "event_time": '"2024-01-01T00:00:00Z"',
        "user_id": '"alice"',
    },
    "/v1/ingest": {"content": '"I moved to Lisbon."', "metadata": '{"k": 1}', "user_id": '"alice"'},
    "/v1/retrieve": {
        "query": '"hello"',
        "min_score": "0.1",
        "token_budget": "500",
        "limit": "5",
        "ranking_multipliers": '{"recency": 1.0}',
        "user_id": '"alice"',
    },
    "/v1/materializations/process": {"budget_ms": "10", "user_id": '"alice"'},
    "/v1/quantities/aggregate-text": {"query": '"how many"', "user_id": '"alice"'},
}


def body_with(fields: dict[str, str], field: str, value: str) -> bytes:
    parts = [f'"{name}": {value if name == field else raw}' for name, raw in fields.items()]
    return ("{" + ", ".join(parts) + "}").encode()


def fast_ingest_bodies() -> list[tuple[str, bytes]]:
    item = {"content": '"hi"', "speaker": '"Ann"', "metadata": '{"k": 1}'}
    return [
        (
            f"items[0].{field}={name}",
            ('{"items": [' + body_with(item, field, v).decode() + "]}").encode(),
        )
        for field in item
        for name, v in HOSTILE_VALUES.items()
    ]


def sweep(client: TestClient, headers: dict[str, str]) -> dict[str, Any]:
    statuses: Counter[int] = Counter()
    server_errors: list[str] = []
    largest_response = 0
    cases: list[tuple[str, str, bytes]] = [
        (route, f"{field}={name}", body_with(fields, field, value))
        for route, fields in ROUTES.items()
        for field in fields
        for name, value in HOSTILE_VALUES.items()
    ]
    cases += [("/v1/ingest/fast", label, body) for label, body in fast_ingest_bodies()]
    cases += [("/v1/store", "invalid-utf8", b'{"content": "caf\xe9"}')]
    for route, label, body in cases:
        response = client.post(
            route, content=body, headers={**headers, "content-type": "application/json"}
        )
        statuses[response.status_code] += 1
        largest_response = max(largest_response, len(response.content))
        if response.status_code >= 500:
            server_errors.append(f"{route} {label}: {response.status_code}")
    return {
        "cases": len(cases),
        "statuses": dict(sorted(statuses.items())),
        "server_errors": server_errors,
        "largest_response_bytes": largest_response,
    }


def fuzz(app: Any, headers: dict[str, str], examples: int) -> dict[str, Any]:
    import schemathesis
    from hypothesis import HealthCheck, given, settings
    from schemathesis import GenerationMode
    from schemathesis.core.failures import FailureGroup

    schema: Any = schemathesis.openapi.from_asgi("/openapi.json", app)
    sent = 0
    failures: list[str] = []
    for result in schema.get_all_operations():
        operation = result.ok()
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            label = f"{operation.label} [{mode.value}]"

            @given(case=operation.as_strategy(generation_mode=mode))
            @settings(
                max_examples=examples,
                database=None,
                deadline=None,
                suppress_health_check=list(HealthCheck),
            )
            def run(case: Any) -> None:
                nonlocal sent
                sent += 1
                try:
                    case.call_and_validate(headers={**dict(case.headers or {}), **headers})
                except (AssertionError, FailureGroup) as exc:
                    failures.append(f"{label}: {str(exc)[:300]}")  # noqa: B023 - run() now
                except Exception as exc:
                    failures.append(f"{label}:\n- ST000 Server error raised {type(exc).__name__}")  # noqa: B023

            run()
    kinds = Counter(
        match.group(1).strip()
        for failure in failures
        for match in re.finditer(r"- (ST\d+ [^\n]+)", failure)
    )
    return {"requests": sent, "failures": failures, "failure_kinds": dict(kinds)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--examples", type=int, default=50, help="schemathesis examples per mode")
    args = parser.parse_args()
    run_start = start_run()
    with tempfile.TemporaryDirectory() as tmp:
        backend = open_embedded(Path(tmp) / "memory", embedder=HashingEmbedder())
        try:
            # An owner key: calls may omit user_id, as the schema allows (an operator must name it).
            key = backend.credentials.create(
                tenant_id="acme", owner_id="alice", role=CredentialRole.OWNER
            ).secret
            app = create_app(
                ApiRuntime(
                    engine=backend.engine, credentials=backend.credentials, auth=AuthPolicy()
                )
            )
            headers = {"Authorization": f"Bearer {key}"}
            started = time.perf_counter()
            with TestClient(app, raise_server_exceptions=False) as client:
                swept = sweep(client, headers)
            swept_s = time.perf_counter() - started
            started = time.perf_counter()
            fuzzed = fuzz(app, headers, args.examples)
            fuzzed_s = time.perf_counter() - started
        finally:
            backend.close()

    fuzz_server_errors = sum(n for kind, n in fuzzed["failure_kinds"].items() if "erver" in kind)
    print(f"{'run':<28}{'requests':>10}{'5xx':>6}{'seconds':>9}")
    print(
        f"{'hostile field sweep':<28}{swept['cases']:>10}{len(swept['server_errors']):>6}{swept_s:>9.1f}"
    )
    print(f"{'schemathesis':<28}{fuzzed['requests']:>10}{fuzz_server_errors:>6}{fuzzed_s:>9.1f}")
    print(f"statuses of the sweep: {swept['statuses']}")
    print(f"largest response in the sweep: {swept['largest_response_bytes']} bytes")
    print(f"schemathesis failures by kind: {fuzzed['failure_kinds'] or 'none'}")
    for line in swept["server_errors"]:
        print(f"  5xx: {line}")
    write_result(
        RESULTS / "hostile_http.json",
        "benchmarks.hostile_http",
        {"sweep": swept, "schemathesis": fuzzed},
        parameters={"examples": args.examples},
        started=run_start,
    )


if __name__ == "__main__":
    main()

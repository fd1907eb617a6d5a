"""Cold start of the Lambda entry points: each module's import in a fresh interpreter, the
modules that import time goes to, and the first answered request of a fresh process.

Run from the repo root: `.venv/bin/python -m benchmarks.cold_start [--quick]
[--json benchmarks/results/cold_start.json]`; with the local AWS's endpoints exported
(`make local-aws-up`, or `source` the file that exports them) it also times first requests.

Each module is imported in a new interpreter (median of 5 runs, 3 with --quick) after one
discarded run that warms the bytecode cache, as Lambda ships compiled files; wall time and
the process's CPU time are both recorded (on a shared machine CPU time varies less). When
`build/lambda` holds an asset for this machine's architecture (`python -m infra.package_lambda
--platform manylinux_2_28_x86_64` on x86), the same imports are also timed from the asset
alone (`python -I -S`), and its size is reported. Each entry point's import time is split
by package (self time from `-X importtime`, so the shares add up to the whole).

First answered request: on fresh, bootstrapped resources of the local AWS (a table, queues
and an index, with an API key and a few memories), a new interpreter imports
`functions.api`, builds an API Gateway HTTP API (payload 2.0) event for `POST /v1/retrieve`
with the key, and calls the handler: the time from the import's start to the response, with
the packages imported on the way. The materializer does the same with one SQS message naming
a pending work item. Lambda's local stand-ins apply: the hashing embedder for Bedrock, moto
and a local OpenSearch node for AWS, and no X-Ray daemon. Targets are reported, never
asserted: timings depend on the machine.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from benchmarks.results import start_run, write_result

REPO_ROOT = Path(__file__).resolve().parents[1]
API_TARGET_MS = 400.0
IMPORT_TARGET_MS = 400.0
FIRST_REQUEST_TARGET_MS = 800.0
# Entry points judged against the import target (the "each Lambda entry point").
ENTRY_POINTS = frozenset(
    {
        "functions.api",
        "functions.materializer",
        "functions.extractor",
        "functions.ingest_consumer",
        "functions.maintenance",
    }
)
SHARE_ROWS = 8
PHASE_MARK = "-- phase: "
RESULT_MARK = "-- result: "
API_MODULE = "functions.api"
# What `measure` returns that describes the run rather than its figures.
PARAMETERS = (
    "quick",
    "runs",
    "api_target_ms",
    "import_target_ms",
    "first_request_target_ms",
    "asset",
)
API_STAND_IN = "prme.http.app"

# (module, what it is)
MODULES: tuple[tuple[str, str], ...] = (
    ("functions.api", "API Lambda (FastAPI through Mangum)"),
    ("functions.materializer", "materializer Lambda"),
    ("functions.extractor", "extractor Lambda"),
    ("functions.ingest_consumer", "ingest consumer Lambda"),
    ("functions.maintenance", "maintenance Lambda"),
    ("prme.http.app", "stand-in: the FastAPI app"),
    ("prme.backends.aws.service", "stand-in: AWS composition root"),
    ("prme", "stand-in: the core package"),
)

_TIMER = (
    "import sys, time\n"
    "{path_setup}"
    "started, cpu = time.perf_counter(), time.process_time()\n"
    "import {module}\n"
    "sys.stdout.write(f'{{time.perf_counter() - started!r}} {{time.process_time() - cpu!r}}')\n"
)


@dataclass(frozen=True)
class Interpreter:
    """How to start a fresh interpreter that imports from one place."""

    label: str
    flags: tuple[str, ...]
    path_setup: str
    env: dict[str, str]


def source_interpreter() -> Interpreter:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT / "core"), str(REPO_ROOT)])
    return Interpreter(label="source", flags=(), path_setup="", env=env)


def asset_interpreter(asset: Path) -> Interpreter:
    # -I: no PYTHONPATH, no user site, no cwd; -S: no site-packages. Only stdlib + asset.
    setup = f"sys.path.insert(0, {str(asset)!r})\n"
    # -B: Lambda's /var/task is read-only, so an asset without .pyc files compiles every
    # imported module again at each cold start; no run here may leave bytecode behind either.
    return Interpreter(
        label="asset", flags=("-I", "-S", "-B"), path_setup=setup, env=dict(os.environ)
    )


def module_exists(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def run_child(
    interpreter: Interpreter,
    code: str,
    *,
    importtime: bool = False,
    stdin: str | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Run `code` in a fresh interpreter of `interpreter` (with `-X importtime` if asked)."""
    profile = ("-X", "importtime") if importtime else ()
    return subprocess.run(
        [sys.executable, *interpreter.flags, *profile, "-c", code],
        input=stdin,
        capture_output=True,
        text=True,
        env=interpreter.env if env is None else env,
        cwd=REPO_ROOT,
        check=False,
        timeout=timeout,
    )


def time_import(interpreter: Interpreter, module: str) -> tuple[float, float, float]:
    """(import ms, whole-process ms, import CPU ms) for one fresh interpreter."""
    code = _TIMER.format(path_setup=interpreter.path_setup, module=module)
    started = time.perf_counter()
    result = run_child(interpreter, code)
    wall_ms = (time.perf_counter() - started) * 1000.0
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"importing {module} failed: {last}")
    import_s, cpu_s = (float(part) for part in result.stdout.split())
    return import_s * 1000.0, wall_ms, cpu_s * 1000.0


def slowest_dependencies(interpreter: Interpreter, module: str, count: int = 5) -> list[list[Any]]:
    """Top-level packages with the largest cumulative import time (from -X importtime)."""
    code = _TIMER.format(path_setup=interpreter.path_setup, module=module)
    result = run_child(interpreter, code, importtime=True)
    totals: dict[str, int] = {}
    for line in result.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = (part.strip() for part in line.split(":", 1)[1].split("|"))
        if "." in name or name == module.split(".", maxsplit=1)[0]:
            continue
        totals[name] = max(totals.get(name, 0), int(cumulative))
    ranked = sorted(totals.items(), key=lambda item: -item[1])[:count]
    return [[name, round(us / 1000.0, 1)] for name, us in ranked]


def _share_key(module: str) -> str:
    """The package a module's import time is charged to: the top-level name, with our own
    packages split one level further (prme.http, prme.engine, ...)."""
    parts = module.split(".")
    if parts[0] in {"prme", "functions"} and len(parts) > 1:
        return ".".join(parts[:2])
    return parts[0]


def self_times_by_package(importtime_lines: list[str]) -> dict[str, float]:
    """Self import time (ms) per package from `-X importtime` lines: each module's own time
    counted once, so the packages' times add up to the whole import."""
    totals: dict[str, float] = {}
    for line in importtime_lines:
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        own, _, name = (part.strip() for part in line.split(":", 1)[1].split("|"))
        key = _share_key(name)
        totals[key] = totals.get(key, 0.0) + int(own) / 1000.0
    return totals


def ranked_shares(totals: dict[str, float], count: int = SHARE_ROWS) -> list[list[Any]]:
    """The `count` largest packages, then everything else as one row; ms and percent."""
    whole = sum(totals.values()) or 1.0
    ranked = sorted(totals.items(), key=lambda item: -item[1])
    rows: list[list[Any]] = [
        [name, round(ms, 1), round(100.0 * ms / whole, 1)] for name, ms in ranked[:count]
    ]
    rest = sum(ms for _, ms in ranked[count:])
    if rest:
        rows.append(
            [f"({len(ranked) - count} others)", round(rest, 1), round(100 * rest / whole, 1)]
        )
    return rows


def import_shares(interpreter: Interpreter, module: str) -> list[list[Any]]:
    """[package, self ms, percent] of one import, largest first (one -X importtime run)."""
    code = (
        f"import sys\n{interpreter.path_setup}"
        f"sys.stderr.write({PHASE_MARK!r} + 'import\\n')\nimport {module}\n"
    )
    result = run_child(interpreter, code, importtime=True)
    # Only what follows the mark: the interpreter's own start-up imports are not the module's.
    return ranked_shares(self_times_by_package(phases(result.stderr).get("import", [])))


def phases(stderr: str) -> dict[str, list[str]]:
    """-X importtime lines grouped by the phase marks a child wrote before each phase."""
    grouped: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in stderr.splitlines():
        if line.startswith(PHASE_MARK):
            current = grouped.setdefault(line.removeprefix(PHASE_MARK).strip(), [])
        elif current is not None:
            current.append(line)
    return grouped


def measure_module(interpreter: Interpreter, module: str, runs: int) -> dict[str, Any]:
    try:
        time_import(interpreter, module)  # warm the bytecode cache, discarded
        samples = [time_import(interpreter, module) for _ in range(runs)]
    except RuntimeError as error:
        return {"error": str(error)}
    imports = [s[0] for s in samples]
    return {
        "import_ms_median": round(statistics.median(imports), 1),
        "import_ms_min": round(min(imports), 1),
        "import_cpu_ms_median": round(statistics.median(s[2] for s in samples), 1),
        "process_ms_median": round(statistics.median(s[1] for s in samples), 1),
        "slowest_dependencies_ms": slowest_dependencies(interpreter, module),
        "import_share_ms": import_shares(interpreter, module),
    }


# The first-request child: imports the entry point, then calls its handler twice with the
# event read from stdin (the second call is the warm request, for contrast).
_FIRST_REQUEST = """import sys, time
{path_setup}raw = sys.stdin.buffer.read()
sys.stderr.write({mark!r} + "import\\n")
started, cpu = time.perf_counter(), time.process_time()
import {module} as entry
imported, imported_cpu = time.perf_counter(), time.process_time()
sys.stderr.write({mark!r} + "first request\\n")
import json

class Context:
    function_name = "prme-cold-start"
    function_version = "$LATEST"
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:prme-cold-start"
    memory_limit_in_mb = 1024
    aws_request_id = "cold-start-request"
    log_group_name = "/aws/lambda/prme-cold-start"
    log_stream_name = "cold-start"

    def get_remaining_time_in_millis(self):
        return 29_000

first = entry.handler(json.loads(raw), Context())
answered, answered_cpu = time.perf_counter(), time.process_time()
sys.stderr.write({mark!r} + "warm request\\n")
second = entry.handler(json.loads(raw), Context())
warm = time.perf_counter()
sys.stdout.write("\\n" + {result_mark!r} + json.dumps({{
    "import_ms": (imported - started) * 1000,
    "import_cpu_ms": (imported_cpu - cpu) * 1000,
    "first_request_ms": (answered - started) * 1000,
    "first_request_cpu_ms": (answered_cpu - cpu) * 1000,
    "handler_ms": (answered - imported) * 1000,
    "warm_request_ms": (warm - answered) * 1000,
    "first": first,
}}) + "\\n")
"""

MEMORIES = (
    "I moved to Lisbon in May and work from a café near the river.",
    "My sister Ana is a nurse in Porto; we talk every Sunday.",
    "I am allergic to peanuts, so I always ask about sauces.",
)
QUERY = "Where do I live now?"
BENCH_OWNER_ID = "cold-start"


def api_gateway_event(path: str, body: dict[str, Any], key: str) -> dict[str, Any]:
    """An API Gateway HTTP API (payload format 2.0) event on the `$default` stage."""
    host = "cold123.execute-api.us-east-1.amazonaws.com"
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": "",
        "headers": {
            "accept": "application/json",
            "authorization": f"Bearer {key}",
            "content-type": "application/json",
            "host": host,
            "user-agent": "prme-cold-start/1.0",
            "x-forwarded-for": "203.0.113.9",
            "x-forwarded-port": "443",
            "x-forwarded-proto": "https",
        },
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "cold123",
            "domainName": host,
            "domainPrefix": "cold123",
            "http": {
                "method": "POST",
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "203.0.113.9",
                "userAgent": "prme-cold-start/1.0",
            },
            "requestId": "cold-start-request",
            "routeKey": "$default",
            "stage": "$default",
            "time": "02/Dec/2026:10:00:00 +0000",
            "timeEpoch": 1796205600000,
        },
        "body": json.dumps(body),
        "isBase64Encoded": False,
    }


def sqs_event(bodies: list[str]) -> dict[str, Any]:
    """An SQS event of one record per body, as Lambda's event source mapping delivers it."""
    return {
        "Records": [
            {
                "messageId": f"cold-start-{i}",
                "receiptHandle": f"cold-start-handle-{i}",
                "body": body,
                "attributes": {
                    "ApproximateReceiveCount": "1",
                    "SentTimestamp": "1796205600000",
                    "SenderId": "123456789012",
                    "ApproximateFirstReceiveTimestamp": "1796205600000",
                },
                "messageAttributes": {},
                "md5OfBody": "",
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:prme-materialize",
                "awsRegion": "us-east-1",
            }
            for i, body in enumerate(bodies)
        ]
    }


@dataclass(frozen=True)
class LocalDeployment:
    """Bootstrapped resources of the local AWS, what is stored in them, and the functions'
    environment bound to them."""

    environment: dict[str, str]
    api_key: str
    pending_work_messages: list[str]


def function_environment(settings: Any, service: str) -> dict[str, str]:
    """The process environment with the deployed functions' settings bound to `settings`'s
    resources (the stack's variable names; the local stand-ins for Bedrock)."""
    from prme.settings import Settings

    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRME_", "POWERTOOLS_"))}
    name = Settings.env_name
    env.update(
        {
            name("backend"): "aws",
            name("table_name"): settings.table_name,
            name("queue_prefix"): settings.queue_prefix,
            name("opensearch_url"): settings.opensearch_url,
            name("opensearch_index_alias"): settings.opensearch_index_alias,
            name("tenant_id"): settings.tenant_id,
            name("embedder"): "hashing",
            name("extractor"): "rules",
            "POWERTOOLS_SERVICE_NAME": f"prme-{service}",
            "POWERTOOLS_METRICS_NAMESPACE": "PRME",
            "POWERTOOLS_TRACER_CAPTURE_RESPONSE": "false",
            "POWERTOOLS_TRACER_CAPTURE_ERROR": "false",
        }
    )
    return env


@contextmanager
def local_deployment(work_items: int) -> Iterator[LocalDeployment]:
    """Fresh resources with an owner's API key, a few memories, and `work_items` stores whose
    indexing was refused (their materialize work pending), all deleted afterwards."""
    from benchmarks.local_aws import fresh_aws
    from prme.backends.aws.service import open_aws
    from prme.embedding.hashing import HashingEmbedder
    from prme.engine.service import MemoryEngine
    from prme.engine.work_refs import WorkRef
    from prme.errors import IndexUnavailableError
    from prme.model.enums import CredentialRole, ProcessingStatus
    from prme.model.inputs import StoreInput
    from prme.model.records import OwnerKey
    from prme.settings import Settings

    class RefusingIndex:
        """The real index, except that writes are refused (as in an OpenSearch outage)."""

        def __init__(self, inner: Any) -> None:
            self._inner = inner

        def upsert(self, documents: Any) -> None:
            del documents
            raise IndexUnavailableError()

        def __getattr__(self, name: str) -> Any:
            return getattr(self._inner, name)

    embedder = HashingEmbedder()
    base = Settings(embedder="hashing", extractor="rules")
    with fresh_aws(base, "cold", dimension=embedder.model.dimension) as (settings, clients):
        backend = open_aws(settings, embedder=embedder, clients=clients, refresh_on_write=True)
        owner = OwnerKey(tenant_id=settings.tenant_id, owner_id=BENCH_OWNER_ID)
        issued = backend.credentials.create(
            tenant_id=owner.tenant_id, owner_id=owner.owner_id, role=CredentialRole.OWNER
        )
        for text in MEMORIES:
            backend.engine.store(owner, StoreInput(content=text))
        refused = MemoryEngine(
            replace(backend.engine.deps, index=RefusingIndex(backend.engine.deps.index))
        )
        messages = []
        for i in range(work_items):
            stored = refused.store(owner, StoreInput(content=f"Pending memory {i}: I like tea."))
            status, work = backend.engine.get_processing_status(owner, stored.event_id)
            if status is not ProcessingStatus.PENDING or not work:
                raise RuntimeError("a refused index left no pending work")
            messages.append(json.dumps(WorkRef.of(work[0]).to_message()))
        try:
            yield LocalDeployment(
                environment=function_environment(settings, "api"),
                api_key=issued.secret,
                pending_work_messages=messages,
            )
        finally:
            backend.close()


def first_request(
    interpreter: Interpreter, module: str, event: dict[str, Any], environment: dict[str, str]
) -> dict[str, Any]:
    """One fresh interpreter: import `module`, answer `event`, answer it again (warm)."""
    code = _FIRST_REQUEST.format(
        path_setup=interpreter.path_setup, module=module, mark=PHASE_MARK, result_mark=RESULT_MARK
    )
    result = run_child(interpreter, code, stdin=json.dumps(event), env=environment, timeout=180)
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"first request of {module} failed: {last}")
    # Powertools writes the invocation's metrics (EMF) and log lines to stdout too.
    (line,) = (x for x in result.stdout.splitlines() if x.startswith(RESULT_MARK))
    measured: dict[str, Any] = json.loads(line.removeprefix(RESULT_MARK))
    return measured


def first_request_shares(
    interpreter: Interpreter, module: str, event: dict[str, Any], environment: dict[str, str]
) -> dict[str, list[list[Any]]]:
    """The packages imported at the import and during the first request (one run under
    `-X importtime`), with each one's self time."""
    code = _FIRST_REQUEST.format(
        path_setup=interpreter.path_setup, module=module, mark=PHASE_MARK, result_mark=RESULT_MARK
    )
    result = run_child(
        interpreter, code, importtime=True, stdin=json.dumps(event), env=environment, timeout=180
    )
    grouped = phases(result.stderr)
    return {
        phase: ranked_shares(self_times_by_package(grouped.get(phase, [])))
        for phase in ("import", "first request")
    }


_TIMINGS = (
    "import_ms",
    "import_cpu_ms",
    "handler_ms",
    "first_request_ms",
    "first_request_cpu_ms",
    "warm_request_ms",
)


def _medians(samples: list[dict[str, Any]]) -> dict[str, float]:
    """`<timing>_median` of each of the child's timings over the samples."""
    return {
        f"{key}_median": round(statistics.median(float(sample[key]) for sample in samples), 1)
        for key in _TIMINGS
    }


def measure_first_requests(interpreter: Interpreter, runs: int) -> dict[str, Any]:
    """First answered request of the API function (POST /v1/retrieve) and the materializer
    (one SQS message naming pending work), each in `runs` fresh interpreters."""
    results: dict[str, Any] = {"interpreter": interpreter.label, "runs": runs}
    with local_deployment(work_items=runs + 2) as deployment:
        retrieve = api_gateway_event(
            "/v1/retrieve", {"query": QUERY, "limit": 10}, deployment.api_key
        )
        env = deployment.environment
        api_samples = []
        first_request(interpreter, "functions.api", retrieve, env)  # warms the bytecode cache
        for _ in range(runs):
            api_samples.append(first_request(interpreter, "functions.api", retrieve, env))
        answer = api_samples[-1]["first"]
        found = json.loads(answer["body"]).get("results", [])
        results["api"] = {
            "request": "POST /v1/retrieve, limit 10, API Gateway HTTP API payload 2.0",
            "status": answer["statusCode"],
            "results_returned": len(found),
            **_medians(api_samples),
            "target_ms": FIRST_REQUEST_TARGET_MS,
            "shares_ms": first_request_shares(interpreter, "functions.api", retrieve, env),
        }
        results["api"]["pass"] = (
            answer["statusCode"] == 200
            and results["api"]["first_request_ms_median"] <= FIRST_REQUEST_TARGET_MS
        )

        worker_env = {**env, "POWERTOOLS_SERVICE_NAME": "prme-materializer"}
        messages = list(deployment.pending_work_messages)
        worker_samples = []
        for i in range(runs + 1):
            event = sqs_event([messages.pop()])
            sample = first_request(interpreter, "functions.materializer", event, worker_env)
            if i:  # the first warmed the bytecode cache
                worker_samples.append(sample)
        shares = first_request_shares(
            interpreter, "functions.materializer", sqs_event([messages.pop()]), worker_env
        )
        results["materializer"] = {
            "request": "one SQS record naming a pending materialize work item",
            "batch_item_failures": len(worker_samples[-1]["first"]["batchItemFailures"]),
            **_medians(worker_samples),
            "shares_ms": shares,
        }
    return results


def asset_info(asset: Path) -> dict[str, Any] | None:
    manifest_path = asset / "ASSET_MANIFEST.json"
    if not manifest_path.is_file():
        return None
    manifest: dict[str, Any] = json.loads(manifest_path.read_text(encoding="utf-8"))
    machine = platform.machine().lower().replace("arm64", "aarch64").replace("amd64", "x86_64")
    tag = str(manifest.get("platform", ""))
    return {
        "path": str(asset),
        "platform": tag,
        "size_mb": manifest.get("size_mb"),
        "file_count": manifest.get("file_count"),
        "tree_sha256": manifest.get("tree_sha256"),
        "bytecode": manifest.get("bytecode"),
        "importable_here": tag.endswith(machine) and manifest.get("python_version") == "3.12",
    }


def measure(quick: bool, asset: Path, first_requests: bool) -> dict[str, Any]:
    runs = 3 if quick else 5
    info = asset_info(asset)
    interpreters = [source_interpreter()]
    if info is not None and info["importable_here"] and sys.version_info[:2] == (3, 12):
        interpreters.append(asset_interpreter(asset))

    api_present = module_exists(API_MODULE)
    modules: list[dict[str, Any]] = []
    for name, role in MODULES:
        entry: dict[str, Any] = {"module": name, "role": role}
        if not module_exists(name):
            entry["skipped"] = "module does not exist yet"
            modules.append(entry)
            continue
        for interpreter in interpreters:
            entry[interpreter.label] = measure_module(interpreter, name, runs)
        judged = name in ENTRY_POINTS or (name == API_STAND_IN and not api_present)
        if judged:
            best = entry.get("asset", entry["source"])
            median = best.get("import_ms_median")
            entry["target_ms"] = IMPORT_TARGET_MS
            entry["pass"] = median is not None and median <= IMPORT_TARGET_MS
        modules.append(entry)

    first: dict[str, Any] | None = None
    if first_requests:
        first = measure_first_requests(interpreters[-1], runs)
    return {
        "quick": quick,
        "runs": runs,
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "api_target_ms": API_TARGET_MS,
        "import_target_ms": IMPORT_TARGET_MS,
        "first_request_target_ms": FIRST_REQUEST_TARGET_MS,
        "asset": info,
        "modules": modules,
        "first_requests": first,
    }


def _cell(result: dict[str, Any] | None) -> str:
    if result is None:
        return "-"
    if "error" in result:
        return "error"
    return f"{result['import_ms_median']:.0f} ms"


def _cpu_cell(result: dict[str, Any] | None) -> str:
    if result is None or "error" in result:
        return "-"
    return f"{result['import_cpu_ms_median']:.0f} ms"


def _shares_line(shares: list[list[Any]]) -> str:
    return ", ".join(f"{name} {ms:.0f} ({pct:.0f}%)" for name, ms, pct in shares)


def print_table(result: dict[str, Any]) -> None:
    print(
        f"import time in a fresh interpreter, median of {result['runs']} "
        f"(Python {platform.python_version()}, {os.cpu_count()} CPUs, "
        f"load {result['load_average_at_start'][0]})"
    )
    print(
        f"{'module':<28} {'source':>9} {'asset':>9} {'asset cpu':>10} {'target':>10} "
        f"{'result':>7}  note"
    )
    for entry in result["modules"]:
        if "skipped" in entry:
            print(
                f"{entry['module']:<28} {'-':>9} {'-':>9} {'':>10} {'':>10} {'':>7}  "
                f"{entry['skipped']}"
            )
            continue
        target = f"<= {entry['target_ms']:.0f} ms" if "target_ms" in entry else ""
        verdict = ("PASS" if entry["pass"] else "FAIL") if "pass" in entry else ""
        print(
            f"{entry['module']:<28} {_cell(entry.get('source')):>9} "
            f"{_cell(entry.get('asset')):>9} {_cpu_cell(entry.get('asset')):>10} "
            f"{target:>10} {verdict:>7}  {entry['role']}"
        )
        measured = entry.get("asset", entry.get("source"))
        if measured and "error" in measured:
            print(f"    {measured['error']}")
        elif measured:
            print(f"    import share (self ms): {_shares_line(measured['import_share_ms'])}")
    info = result["asset"]
    if info is None:
        print("asset: none built (python -m infra.package_lambda)")
    else:
        where = "" if info["importable_here"] else " (other architecture: not timed here)"
        print(
            f"asset: {info['size_mb']} MB unzipped, {info['file_count']} files, "
            f"{info['platform']}, bytecode {info['bytecode']}{where}"
        )
    first = result["first_requests"]
    if first is None:
        print("first requests: not measured (export the local AWS's endpoints)")
        return
    print(
        f"\nfirst answered request of a fresh process ({first['interpreter']}), "
        f"median of {first['runs']}"
    )
    print(
        f"{'function':<14} {'import':>8} {'handler':>8} {'first':>8} {'first cpu':>10} "
        f"{'warm':>7} {'target':>10} {'result':>7}  request"
    )
    for name in ("api", "materializer"):
        row = first[name]
        target = f"<= {row['target_ms']:.0f} ms" if "target_ms" in row else ""
        verdict = ("PASS" if row["pass"] else "FAIL") if "pass" in row else ""
        print(
            f"{name:<14} {row['import_ms_median']:>6.0f}ms {row['handler_ms_median']:>6.0f}ms "
            f"{row['first_request_ms_median']:>6.0f}ms {row['first_request_cpu_ms_median']:>8.0f}ms "
            f"{row['warm_request_ms_median']:>5.0f}ms {target:>10} {verdict:>7}  {row['request']}"
        )
        for phase, shares in row["shares_ms"].items():
            print(f"    {phase} imports (self ms): {_shares_line(shares)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="3 runs per module instead of 5")
    parser.add_argument(
        "--json",
        type=Path,
        default=Path("benchmarks/results/cold_start.json"),
        help="where to write the results (default: %(default)s)",
    )
    parser.add_argument(
        "--asset",
        type=Path,
        default=REPO_ROOT / "build" / "lambda",
        help="built Lambda asset to report (default: %(default)s)",
    )
    parser.add_argument(
        "--no-first-request",
        action="store_true",
        help="time imports only (no local AWS needed)",
    )
    args = parser.parse_args()
    wanted = not args.no_first_request
    if wanted and not (
        os.environ.get("AWS_ENDPOINT_URL") and os.environ.get("PRME_OPENSEARCH_URL")
    ):
        raise SystemExit(
            "first requests need the local AWS: make local-aws-up and export its endpoints "
            "(or pass --no-first-request)"
        )
    run_start = start_run()
    result = measure(quick=args.quick, asset=args.asset, first_requests=wanted)
    print_table(result)
    write_result(
        args.json,
        "benchmarks.cold_start",
        {key: value for key, value in result.items() if key not in PARAMETERS},
        parameters={key: result[key] for key in PARAMETERS},
        started=run_start,
    )


if __name__ == "__main__":
    main()

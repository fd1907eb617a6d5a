"""What importing a Lambda entry point brings in: only the handler and its Powertools logger and
metrics. The web framework, the AWS and OpenSearch clients, numpy, pydantic, the tokenizer and
the engine are imported on the first invocation (functions/runtime.py, functions/api.py), so a
cold start's import stays small. Checked in a fresh interpreter, by module name, not by time:
a regression that imports one of them again at module level fails here deterministically
(the time itself is measured by `benchmarks/cold_start.py`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]

ENTRY_POINTS = (
    "functions.api",
    "functions.materializer",
    "functions.extractor",
    "functions.ingest_consumer",
    "functions.maintenance",
)

# Imported on first use only. A name here stands for the package and every module under it.
DEFERRED = (
    "fastapi",
    "starlette",
    "mangum",
    "pydantic",
    "pydantic_settings",
    "numpy",
    "boto3",
    "botocore.session",
    "botocore.client",
    "opensearchpy",
    "urllib3",
    "aws_xray_sdk",
    "tiktoken",
    "asyncio",
    "prme.settings",
    "prme.model",
    "prme.engine.service",
    "prme.http",
    "prme.backends.aws.service",
    "prme.backends.aws.dynamodb_ledger",
    "prme.backends.aws.opensearch_index",
    "aws_lambda_powertools.utilities.batch",
)

_PROBE = """
import json, sys
import {module}
print(json.dumps(sorted(sys.modules)))
"""


def lambda_environment() -> dict[str, str]:
    """The deployed functions' kind of environment (the values are never used at import)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRME_", "POWERTOOLS_"))}
    env.update(
        {
            "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "core"), str(REPO_ROOT)]),
            "PRME_BACKEND": "aws",
            "PRME_TABLE_NAME": "prme-cold-imports",
            "PRME_QUEUE_PREFIX": "prme-cold-imports",
            "PRME_OPENSEARCH_URL": "http://127.0.0.1:9",
            "PRME_EMBEDDER": "hashing",
            "PRME_EXTRACTOR": "rules",
            "POWERTOOLS_SERVICE_NAME": "prme-api",
            "POWERTOOLS_METRICS_NAMESPACE": "PRME",
        }
    )
    return env


def fresh_run(code: str) -> Any:
    """The JSON that `code` prints last, run in a fresh interpreter with the functions'
    environment."""
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=lambda_environment(),
        cwd=REPO_ROOT,
        check=True,
        timeout=120,
    )
    return json.loads(result.stdout.splitlines()[-1])


def imported_by(module: str) -> set[str]:
    return set(fresh_run(_PROBE.format(module=module)))


@pytest.mark.parametrize("entry_point", ENTRY_POINTS)
def test_importing_an_entry_point_defers_what_only_a_request_needs(entry_point: str) -> None:
    # Given a fresh interpreter with the functions' environment, when the entry point is
    # imported, then none of the deferred packages is loaded yet.
    loaded = imported_by(entry_point)

    assert entry_point in loaded
    early = sorted(
        name
        for name in loaded
        if any(name == deferred or name.startswith(f"{deferred}.") for deferred in DEFERRED)
    )
    assert early == []


_COLD_START_SCOPES = """
import gc, json
from pydantic import BaseModel
from functions.runtime import deferred_model_builds, garbage_collection_paused

seen = {}
with garbage_collection_paused():
    with garbage_collection_paused():
        pass
    seen["paused_after_a_nested_scope"] = not gc.isenabled()
    with deferred_model_builds():
        class Reply(BaseModel):
            text: str
seen["collecting_again"] = gc.isenabled()
seen["built_at_creation"] = Reply.__pydantic_complete__

class Later(BaseModel):
    text: str

seen["later_classes_built_at_creation"] = Later.__pydantic_complete__
seen["validated"] = Reply.model_validate({"text": "hi"}).model_dump()
seen["built_on_first_use"] = Reply.__pydantic_complete__
print(json.dumps(seen))
"""


def test_cold_start_scopes_defer_model_builds_and_collection_only_inside() -> None:
    # The API function builds its app inside both scopes (functions/api.py `_adapter`).
    seen = fresh_run(_COLD_START_SCOPES)

    assert seen == {
        "paused_after_a_nested_scope": True,
        "collecting_again": True,
        "built_at_creation": False,
        "later_classes_built_at_creation": True,
        "validated": {"text": "hi"},
        "built_on_first_use": True,
    }

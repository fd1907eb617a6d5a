"""The Lambda asset builder: size, contents, importability and reproducibility.

Builds the x86_64 variant (the same code path as the arm64 asset, another `--platform`) so
that the native wheels load on the test machine. Needs PyPI (uv and pip fetch wheels).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO_ROOT = Path(__file__).resolve().parents[2]
LOCK_FILE = REPO_ROOT / "requirements" / "lock.txt"
PLATFORM = "manylinux_2_28_x86_64"
LIMIT_BYTES = 250 * 1024 * 1024

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        sys.version_info[:2] != (3, 12) or not sys.platform.startswith("linux"),
        reason="the asset targets CPython 3.12 on Linux",
    ),
]

IMPORTED = (
    "prme.backends.aws.opensearch_index",
    "prme.backends.aws.dynamodb_ledger",
    "prme.http.app",
    "prme.mcp.http",
    "mangum",
    "aws_lambda_powertools",
    "opensearchpy",
    "opensearchpy.helpers.signer",
    "tiktoken",
)
ABSENT = ("onnxruntime", "onnx", "tokenizers", "safetensors", "torch", "grpc")


def _build(out: Path, sources: Path) -> dict[str, Any]:
    command = [sys.executable, "-m", "infra.package_lambda", "--out", str(out)]
    command += ["--platform", PLATFORM, "--source-root", str(sources)]
    result = subprocess.run(
        command,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "unzipped size:" in result.stdout
    manifest: dict[str, Any] = json.loads((out / "ASSET_MANIFEST.json").read_text("utf-8"))
    return manifest


def _lock_pins() -> dict[str, str]:
    environment = {
        "python_version": "3.12",
        "python_full_version": "3.12.0",
        "platform_machine": "x86_64",
        "sys_platform": "linux",
        "platform_python_implementation": "CPython",
        "implementation_name": "cpython",
    }
    pins: dict[str, str] = {}
    for raw in LOCK_FILE.read_text(encoding="utf-8").splitlines():
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        requirement = Requirement(line)
        if requirement.marker is None or requirement.marker.evaluate(environment):
            (spec,) = tuple(requirement.specifier)
            pins[canonicalize_name(requirement.name)] = spec.version
    return pins


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A frozen copy of our packages, so both builds see the same sources while others edit."""
    root = tmp_path_factory.mktemp("sources")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(REPO_ROOT / "core" / "prme", root / "core" / "prme", ignore=ignore)
    if (REPO_ROOT / "functions").is_dir():
        shutil.copytree(REPO_ROOT / "functions", root / "functions", ignore=ignore)
    return root


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, sources: Path) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("asset") / "lambda"
    return out, _build(out, sources)


def test_asset_fits_lambda_and_leaves_out_local_only_packages(
    built: tuple[Path, dict[str, Any]],
) -> None:
    asset, manifest = built
    assert manifest["size_bytes"] < LIMIT_BYTES
    on_disk = sum(p.stat().st_size for p in asset.rglob("*") if p.is_file())
    assert on_disk - (asset / "ASSET_MANIFEST.json").stat().st_size == manifest["size_bytes"]
    top_level = {p.name.lower() for p in asset.iterdir()}
    for name in ABSENT:
        assert name not in top_level
        assert not any(entry.startswith(f"{name}-") for entry in top_level), name
    assert {"prme", "boto3", "botocore", "opensearchpy", "mangum", "mcp"} <= top_level
    assert not (asset / "bin").exists()
    # The token counter's vocabulary ships decoded (the build runs the target's Python here).
    assert (asset / "prme" / "retrieval" / "cl100k_base.ranks").is_file()


def test_manifest_pins_equal_the_lock(built: tuple[Path, dict[str, Any]]) -> None:
    _, manifest = built
    locked = _lock_pins()
    packages: dict[str, str] = manifest["packages"]
    assert {name: locked.get(name) for name in packages} == packages
    for name in ("boto3", "botocore", "opensearch-py", "fastapi", "pydantic-core", "numpy"):
        assert packages[name] == locked[name]
    for name in ("opensearch-protobufs", "grpcio", "protobuf", "httpx", "onnxruntime"):
        assert name not in packages


def test_runtime_modules_import_from_the_asset_alone(
    built: tuple[Path, dict[str, Any]], sources: Path
) -> None:
    asset, _ = built
    entry_points = tuple(
        f"functions.{path.stem}"
        for path in sorted((sources / "functions").glob("*.py"))
        if path.stem != "__init__"
    )
    # -I ignores PYTHONPATH and the user site, -S skips site-packages: only the stdlib and
    # the asset are importable, as on Lambda.
    script = textwrap.dedent(
        f"""
        import importlib, importlib.util, sys
        asset = {str(asset)!r}
        sys.path.insert(0, asset)
        for name in {IMPORTED + entry_points!r}:
            module = importlib.import_module(name)
            assert module.__file__.startswith(asset), (name, module.__file__)
        for name in {ABSENT!r}:
            assert importlib.util.find_spec(name) is None, name
        print("ok")
        """
    )
    result = subprocess.run(
        [sys.executable, "-I", "-S", "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=asset.parent,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == "ok"


def test_building_twice_gives_the_same_tree(
    built: tuple[Path, dict[str, Any]], sources: Path, tmp_path: Path
) -> None:
    _, first = built
    second = _build(tmp_path / "again", sources)
    assert second["dependencies_sha256"] == first["dependencies_sha256"]
    assert second["tree_sha256"] == first["tree_sha256"]
    assert second == first

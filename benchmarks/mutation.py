"""Mutation testing of the modules that hold authorization, idempotency and journal integrity.

Run from the repo root: `.venv/bin/python -m benchmarks.mutation [--quick] [--max-mutants N]
[--only core/prme/...py] [--json benchmarks/results/mutation.json]`; `--combine a.json b.json`
prints and writes the union of runs made with disjoint `--only` targets. Each mutant forks and
runs its subset with `-x`: the 181 mutants took about 35 minutes on 2 shared cores.

Each mutant is one planted bug (a comparison flipped, `and`/`or` swapped, a `not` removed, a
condition negated, a return value replaced, a `raise` or a call deleted, an integer moved by
one) in one function of a target module. The benchmark reports the share of mutants the
module's test subset catches. No file is ever changed: the runner imports everything once,
then forks one child per mutant, swaps the mutated function's code object in that child's
memory (every reference to the function sees it) and runs the test subset with pytest `-x`
on the embedded backend. A child that outlives the timeout counts as a timeout (caught).

Limits: code run in another process (CLI subprocess tests) does not see a mutant, so the
subsets are in-process tests only; module-level constants are not mutated.

Survivors the suite cannot kill are explained in docs/mutation.md (equivalent mutants, or
checks no reachable input can trip); the run lists every survivor with its file and line.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import json
import os
import signal
import sys
import time
import types
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.results import start_run, write_result

REPO_ROOT = Path(__file__).resolve().parents[1]

AUTH_TESTS = (
    "tests/unit/test_identity.py",
    "tests/api/test_owner_isolation_routes.py",
    "tests/api/test_http_api.py",
    "tests/api/test_keyless_mode.py",
)
IDEMPOTENCY_TESTS = (
    "tests/unit/test_idempotency_rules.py",
    "tests/unit/test_store_rules.py",
    "tests/engine/test_lifecycle.py",
    "tests/engine/test_fast_ingest.py",
    "tests/api/test_http_api.py",
    "tests/engine/test_backend_contract.py",
    "tests/backends/test_dynamodb_ledger.py",
)
LIFECYCLE_TESTS = (
    "tests/unit/test_idempotency_rules.py",
    "tests/engine/test_lifecycle.py",
    "tests/api/test_http_api.py",
)
JOURNAL_TESTS = (
    "tests/unit/test_journal_checksum.py",
    "tests/backends/test_journal_tampering.py",
    "tests/engine/test_feedback.py",
    "tests/api/test_feedback_routes.py",
)


@dataclass(frozen=True)
class Target:
    concern: str
    path: str
    tests: tuple[str, ...]
    # Only functions of this class, or these top-level functions, are mutated (the rest
    # of the module holds other concerns).
    only_class: str | None = None
    only_functions: tuple[str, ...] | None = None

    @property
    def module(self) -> str:
        return self.path.removeprefix("core/").removesuffix(".py").replace("/", ".")


TARGETS: tuple[Target, ...] = (
    Target("authorization", "core/prme/engine/identity.py", AUTH_TESTS),
    Target("authorization", "core/prme/engine/credentials.py", AUTH_TESTS),
    Target("authorization", "core/prme/http/auth.py", AUTH_TESTS),
    Target("idempotency", "core/prme/engine/idempotency.py", IDEMPOTENCY_TESTS),
    Target("idempotency", "core/prme/backends/commit_rule.py", IDEMPOTENCY_TESTS),
    Target(
        "idempotency",
        "core/prme/engine/store.py",
        IDEMPOTENCY_TESTS,
        only_functions=("store_memory", "_replayed"),
    ),
    Target(
        "idempotency", "core/prme/engine/lifecycle.py", LIFECYCLE_TESTS, only_functions=("_move",)
    ),
    Target("journal integrity", "core/prme/engine/journal.py", JOURNAL_TESTS),
    Target("journal integrity", "core/prme/model/records.py", JOURNAL_TESTS, "JournalRecord"),
    Target("journal integrity", "core/prme/model/canonical.py", JOURNAL_TESTS),
)

_NEGATED: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Lt: ast.GtE,
    ast.GtE: ast.Lt,
    ast.Gt: ast.LtE,
    ast.LtE: ast.Gt,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}


@dataclass(frozen=True)
class Site:
    """One mutation: where it is, what it does, and the top-level function to patch."""

    index: int
    line: int
    description: str
    function: tuple[str, ...]


class _Mutator(ast.NodeTransformer):
    """Walks function bodies in a fixed order, numbering mutation sites; applies one of them.

    With `apply=-1` it only lists the sites."""

    def __init__(self, target: Target, apply: int = -1) -> None:
        self.only_class = target.only_class
        self.only_functions = target.only_functions
        self.apply = apply
        self.sites: list[Site] = []
        self._scope: list[str] = []
        self._top: tuple[str, ...] = ()
        self._returns_bool = False

    # -- scopes ------------------------------------------------------------------------

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        if not self._scope and (self.only_functions or self.only_class not in (None, node.name)):
            return node
        self._scope.append(node.name)
        node.body = [self.visit(stmt) for stmt in node.body]
        self._scope.pop()
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        if not self._scope and self.only_class is not None:
            return node
        if not self._scope and node.name not in (self.only_functions or (node.name,)):
            return node
        outer_top, outer_bool = self._top, self._returns_bool
        if len(self._scope) <= 1 and not any(s.startswith("def ") for s in self._scope):
            self._top = (*self._scope, node.name)
        self._returns_bool = isinstance(node.returns, ast.Name) and node.returns.id == "bool"
        self._scope.append(f"def {node.name}")
        body = node.body
        if body and _is_docstring(body[0]):
            body = body[1:]
            node.body = [node.body[0], *[self._statement(s) for s in body]]
        else:
            node.body = [self._statement(s) for s in body]
        self._scope.pop()
        self._top, self._returns_bool = outer_top, outer_bool
        return node

    def _in_function(self) -> bool:
        return any(s.startswith("def ") for s in self._scope)

    def _statement(self, stmt: ast.stmt) -> ast.stmt:
        result = self.visit(stmt)
        if not isinstance(result, ast.stmt):
            raise TypeError("a statement must stay a statement")
        return result

    def _site(self, node: ast.AST, description: str) -> bool:
        """Number a site; True when it is the one to apply."""
        index = len(self.sites)
        self.sites.append(Site(index, getattr(node, "lineno", 0), description, self._top))
        return index == self.apply

    # -- operators ---------------------------------------------------------------------

    def visit_Assert(self, node: ast.Assert) -> ast.AST:
        return node  # assertions state invariants; mutating them only adds noise

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        self.generic_visit(node)
        if self._in_function() and type(node.ops[0]) in _NEGATED:
            op = node.ops[0]
            flipped = _NEGATED[type(op)]
            if self._site(node, f"{_op_text(op)} -> {_op_text(flipped())}"):
                node.ops = [flipped(), *node.ops[1:]]
        return node

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        self.generic_visit(node)
        if self._in_function():
            to = ast.Or() if isinstance(node.op, ast.And) else ast.And()
            if self._site(node, f"{_op_text(node.op)} -> {_op_text(to)}"):
                node.op = to
        return node

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        self.generic_visit(node)
        if self._in_function() and isinstance(node.op, ast.Not) and self._site(node, "drop not"):
            return node.operand
        return node

    def visit_If(self, node: ast.If) -> ast.AST:
        negate = self._in_function() and not isinstance(
            node.test, ast.Compare | ast.BoolOp | ast.UnaryOp
        )
        if negate and self._site(node, "negate if condition"):
            node.test = ast.UnaryOp(op=ast.Not(), operand=node.test)
            return node
        self.generic_visit(node)
        return node

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        value = node.value
        if isinstance(value, bool) or not isinstance(value, int) or not self._in_function():
            return node
        if self._site(node, f"{value} -> {value + 1}"):
            return ast.Constant(value + 1)
        return node

    def visit_Return(self, node: ast.Return) -> ast.AST:
        self.generic_visit(node)
        if not self._in_function() or node.value is None:
            return node
        if isinstance(node.value, ast.Constant) and node.value.value is None:
            return node
        replacements = ("True", "False") if self._returns_bool else ("None",)
        for text in replacements:
            if isinstance(node.value, ast.Constant) and repr(node.value.value) == text:
                continue  # the same value again is no mutation
            if self._site(node, f"return {text}"):
                return ast.Return(value=ast.Constant(ast.literal_eval(text)))
        return node

    def visit_Raise(self, node: ast.Raise) -> ast.AST:
        if self._in_function() and self._site(node, "delete raise"):
            return ast.Pass()
        return node

    def visit_Expr(self, node: ast.Expr) -> ast.AST:
        is_call = isinstance(node.value, ast.Call)
        if self._in_function() and is_call and self._site(node, "delete call"):
            return ast.Pass()
        self.generic_visit(node)
        return node


def _is_docstring(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def _op_text(op: ast.AST) -> str:
    texts = {
        ast.Eq: "==",
        ast.NotEq: "!=",
        ast.Lt: "<",
        ast.GtE: ">=",
        ast.Gt: ">",
        ast.LtE: "<=",
        ast.Is: "is",
        ast.IsNot: "is not",
        ast.In: "in",
        ast.NotIn: "not in",
        ast.And: "and",
        ast.Or: "or",
    }
    return texts.get(type(op), type(op).__name__)


def list_sites(target: Target) -> list[Site]:
    tree = ast.parse((REPO_ROOT / target.path).read_text(encoding="utf-8"))
    mutator = _Mutator(target)
    mutator.visit(tree)
    return mutator.sites


def _function_at(root: Any, path: tuple[str, ...]) -> Any:
    obj = root
    for i, name in enumerate(path):
        obj = obj[name] if i == 0 and isinstance(obj, dict) else vars(obj)[name]
    if isinstance(obj, classmethod | staticmethod):
        obj = obj.__func__
    if isinstance(obj, property):
        obj = obj.fget
    return inspect.unwrap(obj)


def apply_mutant(target: Target, site: Site) -> None:
    """Swap the code of the function holding `site` for its mutated code, in this process."""
    path = REPO_ROOT / target.path
    tree = ast.parse(path.read_text(encoding="utf-8"))
    _Mutator(target, apply=site.index).visit(tree)
    ast.fix_missing_locations(tree)
    module = importlib.import_module(target.module)
    # A registered module: dataclasses look their module up while building the class.
    scratch = types.ModuleType(f"{target.module}__mutant")
    scratch.__file__ = str(path)
    sys.modules[scratch.__name__] = scratch
    exec(compile(tree, str(path), "exec"), vars(scratch))  # noqa: S102 - our source, mutated
    mutated = _function_at(vars(scratch), site.function)
    original = _function_at(vars(module), site.function)
    original.__code__ = mutated.__code__


@dataclass
class Outcome:
    status: str  # killed, survived, timeout, error
    seconds: float


def run_tests(
    tests: tuple[str, ...], site: tuple[Target, Site] | None, timeout_s: float
) -> Outcome:
    """One pytest run in a forked child, with the mutant applied there when given."""
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 3
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            if site is not None:
                apply_mutant(*site)
            import pytest

            args = [*tests, "-x", "-q", "-k", "not aws", "-p", "no:cacheprovider"]
            # Plugins imported before pytest started cannot be rewritten; that is expected.
            args += ["-W", "ignore::pytest.PytestAssertRewriteWarning"]
            code = int(pytest.main(args))
        finally:
            os._exit(code)
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        elapsed = time.monotonic() - started
        if done:
            code = os.waitstatus_to_exitcode(status)
            # pytest: 0 passed, 1 failed, 2 interrupted, 3 internal error (a broken mutant).
            verdict = {0: "survived", 1: "killed", 2: "killed"}.get(code, "error")
            return Outcome(verdict, elapsed)
        if elapsed > timeout_s:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return Outcome("timeout", elapsed)
        time.sleep(0.05)


@dataclass
class ModuleResult:
    concern: str
    path: str
    mutants: int = 0
    killed: int = 0
    survived: int = 0
    timeout: int = 0
    error: int = 0
    survivors: list[dict[str, Any]] = field(default_factory=list)


def _sampled(sites: list[Site], limit: int | None) -> list[Site]:
    if limit is None or len(sites) <= limit:
        return sites
    step = len(sites) / limit
    return [sites[int(i * step)] for i in range(limit)]


def _preload() -> None:
    """Import what every child needs once, so each fork starts warm."""
    # Libraries only: test modules are left to pytest so their asserts are still rewritten.
    for name in ("pytest", "fastapi.testclient", "prme.http.app", "prme.mcp.server"):
        importlib.import_module(name)
    for target in TARGETS:
        importlib.import_module(target.module)


def run(max_mutants: int | None, timeout_s: float, only: list[str]) -> dict[str, Any]:
    os.chdir(REPO_ROOT)
    _preload()
    results: list[ModuleResult] = []
    baselines: dict[tuple[str, ...], float] = {}
    for target in TARGETS:
        if only and target.path not in only:
            continue
        if target.tests not in baselines:
            baseline = run_tests(target.tests, None, timeout_s * 3)
            if baseline.status != "survived":
                raise SystemExit(f"the unmutated tests fail ({baseline.status}): {target.tests}")
            baselines[target.tests] = baseline.seconds
        result = ModuleResult(target.concern, target.path)
        for site in _sampled(list_sites(target), max_mutants):
            outcome = run_tests(target.tests, (target, site), timeout_s)
            result.mutants += 1
            setattr(result, outcome.status, getattr(result, outcome.status) + 1)
            if outcome.status in ("survived", "error"):
                result.survivors.append(
                    {
                        "where": f"{target.path}:{site.line}",
                        "function": ".".join(site.function),
                        "mutation": site.description,
                        "status": outcome.status,
                    }
                )
            print(
                f"  {target.path}:{site.line} {site.description}: {outcome.status} "
                f"({outcome.seconds:.1f} s)",
                flush=True,
            )
        results.append(result)
    total = sum(r.mutants for r in results)
    caught = sum(r.killed + r.timeout for r in results)
    return {
        "benchmark": "mutation",
        "max_mutants_per_module": max_mutants,
        "timeout_s": timeout_s,
        "only": only,
        "mutants": total,
        "caught": caught,
        "kill_ratio": round(caught / total, 4) if total else None,
        "modules": [asdict(r) for r in results],
    }


def combined(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """One result from runs of disjoint targets (`--only`), e.g. run on several machines."""
    modules = [m for part in parts for m in part["modules"]]
    order = [t.path for t in TARGETS]
    modules.sort(key=lambda m: order.index(m["path"]) if m["path"] in order else len(order))
    total = sum(m["mutants"] for m in modules)
    caught = sum(m["killed"] + m["timeout"] for m in modules)
    return {
        "benchmark": "mutation",
        "combined_from": len(parts),
        "timeout_s": max(part["timeout_s"] for part in parts),
        "mutants": total,
        "caught": caught,
        "kill_ratio": round(caught / total, 4) if total else None,
        "modules": modules,
    }


def print_table(result: dict[str, Any]) -> None:
    print(
        f"\n{'concern':<18} {'module':<36} {'mutants':>7} {'killed':>6} {'survived':>8} "
        f"{'timeout':>7} {'error':>5}"
    )
    for m in result["modules"]:
        print(
            f"{m['concern']:<18} {m['path'].removeprefix('core/'):<36} {m['mutants']:>7} "
            f"{m['killed']:>6} {m['survived']:>8} {m['timeout']:>7} {m['error']:>5}"
        )
    print(f"caught {result['caught']} of {result['mutants']} mutants ({result['kill_ratio']:.1%})")
    survivors = [s for m in result["modules"] for s in m["survivors"]]
    if survivors:
        print("\nsurvivors:")
        for s in survivors:
            print(f"  {s['where']} ({s['function']}): {s['mutation']} [{s['status']}]")


def _iter_sites() -> Iterator[tuple[Target, Site]]:
    for target in TARGETS:
        for site in list_sites(target):
            yield target, site


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="at most 8 mutants per module")
    parser.add_argument("--max-mutants", type=int, default=None, help="per module (sampled)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per mutant")
    parser.add_argument("--list", action="store_true", help="list the mutants and stop")
    parser.add_argument(
        "--only", action="append", default=[], help="a target path to run (repeatable)"
    )
    parser.add_argument(
        "--json",
        type=Path,
        default=Path("benchmarks/results/mutation.json"),
        help="where to write the results (default: %(default)s)",
    )
    parser.add_argument(
        "--combine", type=Path, nargs="+", help="print and write the union of earlier results"
    )
    args = parser.parse_args()
    run_start = start_run()
    parameters = {"quick": args.quick, "max_mutants": args.max_mutants, "timeout": args.timeout}
    if args.combine:
        documents = [json.loads(path.read_text(encoding="utf-8")) for path in args.combine]
        # Files written through benchmarks/results.py carry their figures under "results".
        result = combined([document.get("results", document) for document in documents])
        print_table(result)
        parameters["combined"] = [str(path) for path in args.combine]
        write_result(
            args.json, "benchmarks.mutation", result, parameters=parameters, started=run_start
        )
        return
    if args.list:
        for target, site in _iter_sites():
            print(f"{target.path}:{site.line} {'.'.join(site.function)}: {site.description}")
        return
    limit = 8 if args.quick else args.max_mutants
    result = run(limit, args.timeout, args.only)
    print_table(result)
    parameters["only"] = args.only
    write_result(args.json, "benchmarks.mutation", result, parameters=parameters, started=run_start)


if __name__ == "__main__":
    main()

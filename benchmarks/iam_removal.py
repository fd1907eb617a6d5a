"""The removal experiment: every action a function's role grants is taken away, one at a time,
and the IAM-enforced scenarios of tests/integration/test_iam_enforced.py run again; an action is
proven needed when one of them then fails.

Run from the repo root with the local AWS up (`source /tmp/aws_env.sh`):
`.venv/bin/python -m benchmarks.iam_removal [--json benchmarks/results/iam_removal.json]`.
Actions that nothing here can check are listed, not tried: CloudWatch Logs and X-Ray (the
Lambda runtime writes them), Bedrock (not reachable) and the SQS event source's polling
(Lambda's poller, not the handler, calls it). OpenSearch `es:ESHttp*` is checked by the
authorizing proxy of tests/harness/opensearch_iam_proxy.py.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from benchmarks.results import start_run, write_result
from tests.harness.iam import IamServer, iam_deployment, search_proxy, shared_server
from tests.harness.iam_scenarios import SCENARIOS, role_switcher
from tests.harness.opensearch_iam_proxy import AuthorizingProxy
from tests.harness.stack_template import LocalBinding, StackTemplate, synthesize

_ELSEWHERE = {
    "logs": "written by the Lambda runtime",
    "xray": "written by the Lambda runtime",
    "bedrock": "Bedrock is not reachable here",
}


def _actions(statement: dict[str, Any]) -> list[str]:
    actions = statement["Action"]
    return [actions] if isinstance(actions, str) else list(actions)


def unchecked_reason(statement: dict[str, Any], action: str) -> str | None:
    service = action.split(":", maxsplit=1)[0]
    if service in _ELSEWHERE:
        return _ELSEWHERE[service]
    if "sqs:ReceiveMessage" in _actions(statement):
        return "the event source's poller (run by Lambda) consumes the queue"
    return None


def without(statements: list[dict[str, Any]], index: int, action: str) -> list[dict[str, Any]]:
    reduced = []
    for i, statement in enumerate(statements):
        kept = [a for a in _actions(statement) if i != index or a != action]
        if kept:
            reduced.append({**statement, "Action": kept})
    return reduced


@dataclass(frozen=True)
class Local:
    stack: StackTemplate
    server: IamServer
    opensearch_url: str
    proxy: AuthorizingProxy


def run_scenarios(local: Local, function: str, drop: tuple[int, str]) -> str | None:
    """The first scenario of `function` that fails with `drop` removed from its role, or None."""
    for scenario in SCENARIOS[function]:
        deployments = iam_deployment(local.server, local.stack, local.opensearch_url, local.proxy)
        deployment = next(deployments)
        statements = deployment.statements(function)
        if drop[0] >= 0:
            statements = without(statements, *drop)
        try:
            with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(io.StringIO()):
                scenario(deployment, role_switcher(deployment, patch, {function: statements}))
        except Exception as exc:  # any failure is the experiment's result
            where = traceback.extract_tb(exc.__traceback__)[-1]
            return f"{scenario.__name__}: {type(exc).__name__} at {where.line} {str(exc)[:60]!r}"
        finally:
            deployments.close()
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--only", help="one function (with --baseline, just its baseline)")
    parser.add_argument("--baseline", action="store_true", help="run the whole roles only")
    args = parser.parse_args()
    run_start = start_run()
    opensearch_url = os.environ["PRME_OPENSEARCH_URL"]
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        stack = StackTemplate(synthesize(Path(tmp) / "synth"))
        server = shared_server(Path(tmp) / "iam", os.getpid())
        local = Local(stack, server, opensearch_url, search_proxy(stack, opensearch_url))
        reference = LocalBinding("t", "t", "t", opensearch_url)
        rows: list[dict[str, Any]] = []
        for function in [args.only] if args.only else SCENARIOS:
            baseline = run_scenarios(local, function, (-1, ""))
            if baseline is not None:
                raise SystemExit(f"{function}: fails with its whole role: {baseline}")
            if args.baseline:
                continue
            for index, statement in enumerate(stack.role_statements(function, reference)):
                resources = statement["Resource"]
                resource = ", ".join(resources) if isinstance(resources, list) else resources
                for action in _actions(statement):
                    row = {"function": function, "action": action, "resource": resource}
                    reason = unchecked_reason(statement, action)
                    if reason is not None:
                        rows.append({**row, "result": "not checked", "detail": reason})
                        continue
                    failed = run_scenarios(local, function, (index, action))
                    result = "needed" if failed else "NOT PROVEN"
                    rows.append({**row, "result": result, "detail": failed or "all passed"})
    elapsed = time.monotonic() - started
    print(f"{'function':<13} {'action':<28} {'result':<11} detail / resource")
    for row in rows:
        where = row["resource"].rsplit(":", 1)[-1][:40]
        print(
            f"{row['function']:<13} {row['action']:<28} {row['result']:<11} {row['detail']} "
            f"[{where}]"
        )
    tried = [r for r in rows if r["result"] != "not checked"]
    proven = sum(r["result"] == "needed" for r in tried)
    print(f"\n{proven}/{len(tried)} checked actions proven needed; {elapsed:.0f} s")
    if args.json:
        summary = {"proven": proven, "checked": len(tried), "seconds": round(elapsed)}
        write_result(
            args.json,
            "benchmarks.iam_removal",
            {"summary": summary, "rows": rows},
            parameters={"only": args.only, "baseline": args.baseline},
            started=run_start,
        )


if __name__ == "__main__":
    main()

"""cfn-lint and checkov on the synthesized stack: no error, no warning, no failed check, and every
skipped checkov check carries its reason (infra/components/checkov_skips.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.harness.stack_template import REPO_ROOT, StackTemplate, iter_statements

pytestmark = pytest.mark.slow  # the shared synth, then each tool takes 5-15 s

CFN_LINT_CONFIG = REPO_ROOT / "infra" / "cfnlintrc.yaml"
# checkov pins boto3 1.35 while the project needs 1.40+, so `make` installs it in its own
# environment from requirements/checkov-lock.txt.
CHECKOV = Path(os.environ.get("PRME_CHECKOV", REPO_ROOT / ".venv-checkov" / "bin" / "checkov"))
# Offline (no policy download from the vendor), and a report the test can read.
CHECKOV_OPTIONS = ("--compact", "--skip-download", "--output", "json")
# checkov's text for a skip written without a comment.
_NO_COMMENT = "No comment provided"


def _template_path(stack_template: StackTemplate) -> Path:
    assert stack_template.path is not None
    return stack_template.path


def test_cfn_lint_reports_nothing(stack_template: StackTemplate) -> None:
    cfn_lint = Path(sys.executable).with_name("cfn-lint")
    template = _template_path(stack_template)
    run = subprocess.run(
        [cfn_lint, "--config-file", CFN_LINT_CONFIG, "--format", "json", "--", template],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    findings: list[dict[str, Any]] = json.loads(run.stdout or "[]")
    readable = [
        f"{f['Level']} {f['Rule']['Id']} at {'/'.join(map(str, f['Location']['Path']))}: "
        f"{f['Message']}"
        for f in findings
    ]
    assert not readable, "cfn-lint findings:\n" + "\n".join(readable)
    assert run.returncode == 0, f"cfn-lint failed without findings:\n{run.stderr}"


def _checkov(template: Path) -> dict[str, Any]:
    if not CHECKOV.exists():
        pytest.fail(f"checkov is not installed at {CHECKOV}: run `make check-template` once")
    run = subprocess.run(
        [CHECKOV, "-f", template, "--framework", "cloudformation", *CHECKOV_OPTIONS],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if not run.stdout.startswith("{"):
        pytest.fail(f"checkov gave no report (exit {run.returncode}):\n{run.stderr[-3000:]}")
    report: dict[str, Any] = json.loads(run.stdout)
    return report


def test_checkov_fails_no_check_and_every_skip_has_its_reason(
    stack_template: StackTemplate,
) -> None:
    results = _checkov(_template_path(stack_template))["results"]

    failed = [
        f"{c['check_id']} {c['resource']}: {c['check_name']}" for c in results["failed_checks"]
    ]
    assert not failed, "checkov failed checks (fix, or skip with a reason):\n" + "\n".join(failed)
    assert not results.get("parsing_errors"), results["parsing_errors"]
    # A template checkov could not read would pass vacuously.
    assert len(results["passed_checks"]) > 50
    reasons = {
        f"{c['check_id']} {c['resource']}": str(c["check_result"].get("suppress_comment", ""))
        for c in results["skipped_checks"]
    }
    unexplained = [skip for skip, reason in reasons.items() if reason.strip() in ("", _NO_COMMENT)]
    assert not unexplained, "checkov skips without a reason:\n" + "\n".join(unexplained)


def _referenced_id(value: Any) -> str | None:
    """The logical id a `Ref` or `Fn::GetAtt` names."""
    if isinstance(value, dict) and "Ref" in value:
        return str(value["Ref"])
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        return str(value["Fn::GetAtt"][0])
    return None


# Invocations whose failure is neither lost nor silent without a function dead-letter queue.
_DLQ_FREE_INVOCATIONS = {"api gateway", "sqs mapping", "schedule", "custom resource", "function"}


def test_no_function_is_invoked_where_a_dead_letter_queue_would_catch_failures(
    stack_template: StackTemplate,
) -> None:
    """The reason for skipping CKV_AWS_116 (checkov_skips.py), checked on the template."""
    functions = stack_template.of_type("AWS::Lambda::Function")
    invocations: dict[str, set[str]] = {logical_id: set() for logical_id in functions}

    def invoked(target: Any, how: str) -> None:
        logical_id = _referenced_id(target)
        if logical_id in invocations:
            invocations[logical_id].add(how)

    for mapping in stack_template.of_type("AWS::Lambda::EventSourceMapping").values():
        source = _referenced_id(mapping["Properties"]["EventSourceArn"])
        is_queue = source is not None and stack_template.resources[source]["Type"].endswith(
            "SQS::Queue"
        )
        invoked(mapping["Properties"]["FunctionName"], "sqs mapping" if is_queue else "stream")
    for rule in stack_template.of_type("AWS::Events::Rule").values():
        how = "schedule" if "ScheduleExpression" in rule["Properties"] else "event rule"
        for target in rule["Properties"].get("Targets", []):
            invoked(target["Arn"], how)
    for permission in stack_template.of_type("AWS::Lambda::Permission").values():
        principal = permission["Properties"]["Principal"]
        # events.amazonaws.com comes with an Events rule, which is judged above.
        if principal != "events.amazonaws.com":
            how = "api gateway" if principal == "apigateway.amazonaws.com" else principal
            invoked(permission["Properties"]["FunctionName"], how)
    for resource in stack_template.resources.values():
        if resource["Type"].startswith("Custom::") or resource["Type"].endswith("CustomResource"):
            invoked(resource["Properties"]["ServiceToken"], "custom resource")
    # CDK's custom-resource provider invokes its handler function synchronously.
    for statement in iter_statements(stack_template.of_type("AWS::IAM::Policy")):
        actions = (
            statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        )
        if "lambda:InvokeFunction" in actions:
            targets = (
                statement["Resource"]
                if isinstance(statement["Resource"], list)
                else [statement["Resource"]]
            )
            for target in targets:
                invoked(target, "function")

    wrong = {
        logical_id: sorted(how) or ["nothing invokes it"]
        for logical_id, how in invocations.items()
        if not how or how - _DLQ_FREE_INVOCATIONS
    }
    assert not wrong, f"functions invoked in ways the CKV_AWS_116 skip does not cover: {wrong}"

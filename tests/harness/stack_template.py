"""The synthesized `PrmeStack` template read as the deployed shape: each function's environment
and role statements, with the stack's resource references resolved to the local AWS.

The stack is synthesized once per test run (in a subprocess, under a lock shared by the xdist
workers) with the default context, as a person deploying it would; tests then take what a
function is given from the template instead of restating it.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
STACK_NAME = "PrmeStack"
# The context the shared synth adds to the defaults: an alarm address, so the optional
# alarm topic is part of the template too.
SYNTH_CONTEXT: dict[str, Any] = {
    "prme:alarmEmail": "ops@example.com",
    # What the CDK CLI sets by default: each resource names its construct path, which is how
    # tests find a function's resources.
    "aws:cdk:enable-path-metadata": True,
}
# moto's account; every ARN in the resolved template names it.
LOCAL_ACCOUNT = "123456789012"
LOCAL_REGION = "us-east-1"

_SYNTH_SCRIPT = """
import json, sys
from infra.app import build_app
context = json.loads(sys.argv[1])
app, _ = build_app(context, sys.argv[2])
app.synth()
"""


def synthesize(outdir: Path, context: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Synthesize the stack into `outdir` (cdk-nag included) and return its template."""
    asset = outdir / "asset"
    (asset / "functions").mkdir(parents=True, exist_ok=True)
    (asset / "functions" / "__init__.py").write_text("")
    full_context = {"prme:lambdaAsset": str(asset), **SYNTH_CONTEXT, **(context or {})}
    env = {
        **os.environ,
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "core"), str(REPO_ROOT)]),
    }
    cdk_out = outdir / "cdk.out"
    subprocess.run(
        [sys.executable, "-c", _SYNTH_SCRIPT, json.dumps(full_context), str(cdk_out)],
        cwd=REPO_ROOT,
        env=env,
        check=True,
        capture_output=True,
        timeout=300,
    )
    template: dict[str, Any] = json.loads((cdk_out / f"{STACK_NAME}.template.json").read_text())
    return template


@dataclass(frozen=True)
class LocalBinding:
    """Where the stack's named resources live on the local AWS for one test."""

    table_name: str
    queue_prefix: str
    index_alias: str
    opensearch_url: str
    region: str = LOCAL_REGION
    account: str = LOCAL_ACCOUNT
    upload_bucket: str = "uploads"


# Settings that name where a resource is; everything else a function is given is taken from
# the template verbatim.
_IDENTITY_SETTINGS = {
    "PRME_QUEUE_PREFIX": "queue_prefix",
    "PRME_OPENSEARCH_INDEX_ALIAS": "index_alias",
    "PRME_OPENSEARCH_URL": "opensearch_url",
}


@dataclass
class StackTemplate:
    template: dict[str, Any]
    path: Path | None = None
    _by_cdk_path: dict[str, str] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        for logical_id, resource in self.resources.items():
            cdk_path = resource.get("Metadata", {}).get("aws:cdk:path")
            if cdk_path:
                self._by_cdk_path[cdk_path] = logical_id

    @property
    def resources(self) -> dict[str, dict[str, Any]]:
        resources: dict[str, dict[str, Any]] = self.template["Resources"]
        return resources

    def of_type(self, cfn_type: str) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.resources.items() if v["Type"] == cfn_type}

    def logical_id(self, cdk_path: str) -> str:
        """The resource at `PrmeStack/<cdk_path>/Resource`."""
        try:
            return self._by_cdk_path[f"{STACK_NAME}/{cdk_path}/Resource"]
        except KeyError:
            raise KeyError(f"no resource at {cdk_path} in the synthesized stack") from None

    def function_names(self) -> list[str]:
        """The stack's function names as the workers construct names them (api, ingest, ...)."""
        prefix = f"{STACK_NAME}/Workers/"
        return sorted(
            path.removeprefix(prefix).split("/")[0].lower()
            for path in self._by_cdk_path
            if path.startswith(prefix) and path.endswith("/Function/Resource")
        )

    def function(self, name: str) -> dict[str, Any]:
        return self.resources[self.logical_id(f"Workers/{name.capitalize()}/Function")]

    def resource_prefix(self) -> str:
        """The deployment's resource prefix, as the stack gives it to every function."""
        prefix: str = self.function("api")["Properties"]["Environment"]["Variables"][
            "PRME_QUEUE_PREFIX"
        ]
        return prefix

    def environment(self, name: str, binding: LocalBinding) -> dict[str, str]:
        """The function's environment as deployed, resource identities bound to the local AWS."""
        variables = self.function(name)["Properties"]["Environment"]["Variables"]
        resolved = {key: str(self.resolve(value, binding)) for key, value in variables.items()}
        for key, attribute in _IDENTITY_SETTINGS.items():
            if key in resolved:
                resolved[key] = getattr(binding, attribute)
        return resolved

    def role_statements(self, name: str, binding: LocalBinding) -> list[dict[str, Any]]:
        """Every identity-policy statement attached to the function's role, resolved."""
        role_ref = self.function(name)["Properties"]["Role"]
        (role_id, _) = role_ref["Fn::GetAtt"]
        statements: list[dict[str, Any]] = []
        for policy in self.of_type("AWS::IAM::Policy").values():
            roles = policy["Properties"].get("Roles", [])
            if {"Ref": role_id} in roles:
                found = policy["Properties"]["PolicyDocument"]["Statement"]
                statements.extend(self.resolve(found, binding))
        role = self.resources[role_id]["Properties"]
        if role.get("ManagedPolicyArns") or role.get("Policies"):
            raise AssertionError(f"{name}: role grants outside AWS::IAM::Policy are not read")
        return statements

    def search_domain_arn(self, binding: LocalBinding) -> str:
        """The OpenSearch domain's ARN, which `es:ESHttp*` grants name (with `/<path>`)."""
        (domain,) = self.of_type("AWS::OpenSearchService::Domain").values()
        name = domain["Properties"]["DomainName"]
        return f"arn:aws:es:{binding.region}:{binding.account}:domain/{name}"

    def resolve(self, value: Any, binding: LocalBinding) -> Any:
        """CloudFormation intrinsics replaced by what they would be on the local AWS."""
        if isinstance(value, list):
            return [self.resolve(item, binding) for item in value]
        if not isinstance(value, dict):
            return value
        if len(value) != 1 or not next(iter(value)).startswith(("Ref", "Fn::")):
            return {key: self.resolve(item, binding) for key, item in value.items()}
        ((function, argument),) = value.items()
        if function == "Ref":
            return self._ref(argument, binding)
        if function == "Fn::GetAtt":
            logical_id, attribute = argument
            return self._attribute(logical_id, attribute, binding)
        if function == "Fn::Join":
            separator, parts = argument
            return separator.join(str(self.resolve(part, binding)) for part in parts)
        if function == "Fn::Select":
            index, items = argument
            return self.resolve(items, binding)[int(index)]
        if function == "Fn::Split":
            separator, text = argument
            return str(self.resolve(text, binding)).split(separator)
        raise KeyError(f"intrinsic {function} is not resolved by the test template reader")

    def _ref(self, name: str, binding: LocalBinding) -> str:
        pseudo = {
            "AWS::Region": binding.region,
            "AWS::AccountId": binding.account,
            "AWS::Partition": "aws",
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::StackName": STACK_NAME,
        }
        if name in pseudo:
            return pseudo[name]
        resource = self.resources[name]
        kind = resource["Type"]
        if kind == "AWS::DynamoDB::Table":
            return binding.table_name
        if kind == "AWS::S3::Bucket":
            return binding.upload_bucket
        if kind == "AWS::SQS::Queue":
            return f"https://sqs.{binding.region}.amazonaws.com/{binding.account}/" + (
                self._queue_name(resource, binding)
            )
        return name

    def _attribute(self, logical_id: str, attribute: str, binding: LocalBinding) -> str:
        resource = self.resources[logical_id]
        kind, region, account = resource["Type"], binding.region, binding.account
        if kind == "AWS::DynamoDB::Table" and attribute == "Arn":
            return f"arn:aws:dynamodb:{region}:{account}:table/{binding.table_name}"
        if kind == "AWS::DynamoDB::Table" and attribute == "StreamArn":
            return f"arn:aws:dynamodb:{region}:{account}:table/{binding.table_name}/stream/*"
        if kind == "AWS::SQS::Queue" and attribute == "Arn":
            return f"arn:aws:sqs:{region}:{account}:{self._queue_name(resource, binding)}"
        if kind == "AWS::SQS::Queue" and attribute == "QueueName":
            return self._queue_name(resource, binding)
        if kind == "AWS::OpenSearchService::Domain" and attribute == "DomainEndpoint":
            return binding.opensearch_url.split("://", 1)[-1]
        if kind == "AWS::S3::Bucket" and attribute == "Arn":
            return f"arn:aws:s3:::{binding.upload_bucket}"
        if kind == "AWS::Logs::LogGroup" and attribute == "Arn":
            return f"arn:aws:logs:{region}:{account}:log-group:{logical_id}:*"
        if attribute == "Arn":
            return f"arn:aws:{kind.split('::')[1].lower()}:{region}:{account}:{logical_id}"
        raise KeyError(f"Fn::GetAtt {logical_id}.{attribute} is not resolved by the reader")

    def _queue_name(self, resource: dict[str, Any], binding: LocalBinding) -> str:
        deployed: str = resource["Properties"]["QueueName"]
        prefix = self.resource_prefix()
        if not deployed.startswith(f"{prefix}-"):
            raise AssertionError(f"queue {deployed} does not start with the prefix {prefix}")
        return binding.queue_prefix + deployed.removeprefix(prefix)


def _shared_synth(root: Path) -> StackTemplate:
    """One synth per test run, shared by xdist workers through a file under a lock."""
    root.mkdir(parents=True, exist_ok=True)
    target = root / f"{STACK_NAME}.template.json"
    with (root / "synth.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not target.exists():
            template = synthesize(root / "synth")
            target.write_text(json.dumps(template, indent=1))
    return StackTemplate(json.loads(target.read_text()), target)


@pytest.fixture(scope="session")
def stack_template(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> StackTemplate:
    # Under xdist every worker has its own basetemp inside one shared run folder.
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if worker_id != "master" else base
    return _shared_synth(shared / "prme-stack")


def iter_statements(node: Any) -> Iterator[dict[str, Any]]:
    """Every policy statement anywhere in a template fragment (IAM, key and queue policies)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "Statement":
                yield from value if isinstance(value, list) else [value]
            else:
                yield from iter_statements(value)
    elif isinstance(node, list):
        for item in node:
            yield from iter_statements(item)

"""The one way PRME builds a Lambda function: same runtime, architecture, code, tracing and logs."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Acknowledgment, Duration, RemovalPolicy, Validations
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

RUNTIME = lambda_.Runtime.PYTHON_3_12
ARCHITECTURE = lambda_.Architecture.ARM_64
POWERTOOLS_METRICS_NAMESPACE = "PRME"
# Traces show calls and timings only: a handler's response and an exception's message can hold
# memory content, which must not reach X-Ray.
TRACER_SETTINGS = {
    "POWERTOOLS_TRACER_CAPTURE_RESPONSE": "false",
    "POWERTOOLS_TRACER_CAPTURE_ERROR": "false",
}


@dataclass(frozen=True)
class FunctionSpec:
    """What differs between the functions; everything else the factory decides."""

    name: str
    handler: str
    memory_mb: int
    timeout: Duration
    reserved_concurrency: int | None


class FunctionFactory:
    """Builds functions from one code asset with a shared environment.

    Each function gets its own role (no AWS managed policy) whose only standing permission
    is writing to its own log group; callers add every other grant explicitly.
    """

    def __init__(
        self,
        scope: Construct,
        *,
        code: lambda_.Code,
        environment: dict[str, str],
        log_retention: logs.RetentionDays,
    ) -> None:
        self._scope = scope
        self._code = code
        self._environment = dict(environment)
        self._log_retention = log_retention

    def build(self, spec: FunctionSpec) -> lambda_.Function:
        scope = Construct(self._scope, spec.name.capitalize())
        log_group = logs.LogGroup(
            scope,
            "Logs",
            retention=self._log_retention,
            removal_policy=RemovalPolicy.DESTROY,
        )
        role = iam.Role(
            scope,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"PRME {spec.name} function",
        )
        log_group.grant_write(role)
        function = lambda_.Function(
            scope,
            "Function",
            runtime=RUNTIME,
            architecture=ARCHITECTURE,
            code=self._code,
            handler=spec.handler,
            memory_size=spec.memory_mb,
            timeout=spec.timeout,
            reserved_concurrent_executions=spec.reserved_concurrency,
            tracing=lambda_.Tracing.ACTIVE,
            role=role,
            log_group=log_group,
            logging_format=lambda_.LoggingFormat.JSON,
            environment={
                **self._environment,
                "POWERTOOLS_SERVICE_NAME": f"prme-{spec.name}",
                "POWERTOOLS_METRICS_NAMESPACE": POWERTOOLS_METRICS_NAMESPACE,
                **TRACER_SETTINGS,
            },
        )
        Validations.of(scope).acknowledge(
            Acknowledgment(
                id="AwsSolutions-L1",
                reason="Python 3.12 is deliberate: the deployment package is built for "
                "cp312 on aarch64 and the code is tested on 3.12; moving to a newer "
                "runtime is a packaging change, not a stack default.",
            ),
            Acknowledgment(
                id="AwsSolutions-IAM5[Resource::*]",
                reason="X-Ray PutTraceSegments/PutTelemetryRecords (active tracing) support "
                "no resource-level permissions, so their resource must be `*`.",
            ),
        )
        return function

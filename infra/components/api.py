"""The public HTTP API: every route goes to the `api` function (FastAPI behind Mangum)."""

from __future__ import annotations

import json
from typing import cast

from aws_cdk import Acknowledgment, RemovalPolicy, Validations
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_apigatewayv2_integrations as integrations
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.config import DeploymentConfig

# No header or body is logged: the Authorization header carries the API key.
_ACCESS_LOG_FORMAT = {
    "requestId": "$context.requestId",
    "ip": "$context.identity.sourceIp",
    "requestTime": "$context.requestTime",
    "httpMethod": "$context.httpMethod",
    "path": "$context.path",
    "routeKey": "$context.routeKey",
    "status": "$context.status",
    "protocol": "$context.protocol",
    "responseLength": "$context.responseLength",
    "latencyMs": "$context.responseLatency",
    "integrationLatencyMs": "$context.integrationLatency",
    "integrationError": "$context.integrationErrorMessage",
}


class Api(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: DeploymentConfig,
        function: lambda_.IFunction,
    ) -> None:
        super().__init__(scope, construct_id)
        self.http_api = apigwv2.HttpApi(
            self,
            "HttpApi",
            description="PRME memory service",
            create_default_stage=False,
            default_integration=integrations.HttpLambdaIntegration(
                "Api",
                function,
                payload_format_version=apigwv2.PayloadFormatVersion.VERSION_2_0,
            ),
        )
        access_logs = logs.LogGroup(
            self,
            "AccessLogs",
            retention=config.log_retention,
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.stage = apigwv2.HttpStage(
            self,
            "DefaultStage",
            http_api=self.http_api,
            stage_name="$default",
            auto_deploy=True,
            throttle=apigwv2.ThrottleSettings(
                rate_limit=config.api_rate_limit, burst_limit=config.api_burst_limit
            ),
        )
        cfn_stage = cast(apigwv2.CfnStage, self.stage.node.default_child)
        cfn_stage.access_log_settings = apigwv2.CfnStage.AccessLogSettingsProperty(
            destination_arn=access_logs.log_group_arn,
            format=json.dumps(_ACCESS_LOG_FORMAT, separators=(",", ":")),
        )
        Validations.of(self.http_api).acknowledge(
            Acknowledgment(
                id="AwsSolutions-APIG4",
                reason="Authentication is the service's bearer API keys, verified by the api "
                "function against hashed keys in the table (tenant- and owner-scoped); "
                "Cognito and IAM authorizers are not used.",
            )
        )

    @property
    def url(self) -> str:
        return self.http_api.api_endpoint

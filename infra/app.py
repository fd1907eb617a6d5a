"""Entry point of the CDK app (`python -m infra.app` from the repository root).

AwsSolutions checks run on every synth; an unacknowledged finding fails it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks

from infra.stack import PrmeStack

STACK_NAME = "PrmeStack"


def build_app(
    context: Mapping[str, Any] | None = None, outdir: str | None = None
) -> tuple[cdk.App, PrmeStack]:
    app = cdk.App(context=dict(context or {}), outdir=outdir)
    stack = PrmeStack(
        app,
        STACK_NAME,
        description="PRME Cloud: memory service for LLM agents",
        # No env: account and region come from the CLI's credentials at deploy time.
    )
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return app, stack


def main() -> None:
    app, _ = build_app()
    app.synth()


if __name__ == "__main__":
    main()

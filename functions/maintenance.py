"""Scheduled maintenance (EventBridge): archive expired nodes, re-announce overdue pending work,
and scan owners with new entities for alias proposals (advice for a human review only)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.runtime import backend, logger, metrics, settings, tracer


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    engine = backend().engine
    archived = engine.archive_expired()
    swept = engine.sweep_overdue(overdue_seconds=settings().work_overdue_seconds)
    aliases = engine.propose_aliases()
    metrics.add_metric(name="ExpiredNodesArchived", unit=MetricUnit.Count, value=archived)
    metrics.add_metric(name="OverdueWorkAnnounced", unit=MetricUnit.Count, value=swept)
    metrics.add_metric(
        name="AliasProposalsCreated", unit=MetricUnit.Count, value=aliases.proposals_created
    )
    logger.info(
        "maintenance pass",
        extra={
            "archived": archived,
            "overdue_announced": swept,
            "alias_owners_scanned": aliases.owners_scanned,
            "alias_proposals_created": aliases.proposals_created,
            "alias_work_pending": aliases.pending,
        },
    )
    return {
        "expired_archived": archived,
        "overdue_announced": swept,
        "alias_proposals_created": aliases.proposals_created,
    }

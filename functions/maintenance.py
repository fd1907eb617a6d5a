"""Scheduled maintenance (EventBridge): archive expired nodes, re-announce overdue pending work,
scan owners with new entities for alias proposals (advice for a human review only), and run
the organizer over every owner within what time is left."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.metrics import MetricUnit

from functions.runtime import backend, invocation_deadline, logger, metrics, settings, tracer

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from prme.model.enums import WorkFamily

# The alias scan may compare names for this share of the time left after the other
# maintenance work; the rest journals its proposals and closes its work. A scan that needs
# more continues on the next scheduled pass.
ALIAS_SCAN_TIME_SHARE = 0.5
# The organizer may run for this share of what is left after that; a job that runs out of
# time continues on the next pass from its saved cursor.
ORGANIZER_TIME_SHARE = 0.8


def organizer_tenants() -> list[str]:
    """The tenants whose owners the organizer visits: the deployment's own and every tenant
    that has API keys."""
    tenants = {settings().tenant_id}
    tenants.update(credential.tenant_id for credential in backend().credentials.list())
    return sorted(tenants)


def overdue_seconds() -> dict[WorkFamily, int]:
    """When queued work counts as overdue: after the configured time, and never while its
    queue may still be delivering it (a message being retried is not lost)."""
    from prme.backends.aws.resources import queue_specs
    from prme.engine.work_dispatch import SWEPT_FAMILIES

    specs = queue_specs(settings().queue_prefix)
    floor = settings().work_overdue_seconds
    # Each swept family has the queue of the same name.
    return {family: max(floor, specs[family].delivery_span_s) for family in SWEPT_FAMILIES}


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    # Imported here, not with the module: the import stays small (benchmarks/cold_start.py).
    from prme.backends.aws.resources import OVERDUE_WORK_FAILED_METRIC
    from prme.engine.aliases import AliasScanBudget
    from prme.model.organizer import OrganizerPass

    engine = backend().engine
    # Like every other entry point: a hung table or queue fails the pass in time instead of
    # Lambda stopping it mid-write.
    with invocation_deadline(context):
        archived = engine.archive_expired()
        swept = engine.sweep_overdue(overdue_seconds=overdue_seconds())
        scan_ms = int(context.get_remaining_time_in_millis() * ALIAS_SCAN_TIME_SHARE)
        aliases = engine.propose_aliases(budget=AliasScanBudget(max_ms=max(scan_ms, 0)))
        organizer_ms = int(context.get_remaining_time_in_millis() * ORGANIZER_TIME_SHARE)
        # Inside the organizer's daily window only (OrganizerConfig.scheduled_hour_utc).
        organized = engine.organize_owners(organizer_tenants, budget_ms=max(organizer_ms, 0))
        if organized is None:
            organized = OrganizerPass(owners_visited=0, owners_complete=0, changed=0, complete=None)
    metrics.add_metric(name="ExpiredNodesArchived", unit=MetricUnit.Count, value=archived)
    metrics.add_metric(name="OverdueWorkAnnounced", unit=MetricUnit.Count, value=swept.announced)
    metrics.add_metric(name=OVERDUE_WORK_FAILED_METRIC, unit=MetricUnit.Count, value=swept.failed)
    for item, last_error in swept.failures:
        logger.warning(
            "overdue work failed",
            extra={"work_id": item.id, "kind": item.kind.value, "last_error": last_error},
        )
    metrics.add_metric(
        name="AliasProposalsCreated", unit=MetricUnit.Count, value=aliases.proposals_created
    )
    metrics.add_metric(
        name="AliasPairsCompared", unit=MetricUnit.Count, value=aliases.pairs_compared
    )
    metrics.add_metric(name="OrganizerChanges", unit=MetricUnit.Count, value=organized.changed)
    logger.info(
        "maintenance pass",
        extra={
            "archived": archived,
            "overdue_announced": swept.announced,
            "overdue_failed": swept.failed,
            "alias_owners_scanned": aliases.owners_scanned,
            "alias_proposals_created": aliases.proposals_created,
            "alias_work_pending": aliases.pending,
            "alias_pairs_compared": aliases.pairs_compared,
            "alias_scan_complete": aliases.complete,
            "alias_names_remaining": aliases.names_remaining,
            "alias_names_capped": aliases.names_capped,
            "organizer_owners_visited": organized.owners_visited,
            "organizer_owners_complete": organized.owners_complete,
            "organizer_changes": organized.changed,
            "organizer_complete": organized.complete,
        },
    )
    return {
        "expired_archived": archived,
        "overdue_announced": swept.announced,
        "overdue_failed": swept.failed,
        "alias_proposals_created": aliases.proposals_created,
        "organizer_ran": organized.complete is not None,
        "organizer_changes": organized.changed,
        "organizer_complete": organized.complete,
    }

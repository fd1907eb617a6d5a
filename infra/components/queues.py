"""The work queues of `resources.queue_specs`, each with its dead-letter queue and redrive."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from prme.backends.aws.resources import QueueSpec, queue_specs

# A dead letter waits two weeks (the SQS maximum) for someone to look at it.
_DLQ_RETENTION = Duration.days(14)


class WorkQueue(Construct):
    """One queue and its DLQ, named exactly as the code derives them from the prefix."""

    def __init__(self, scope: Construct, construct_id: str, *, spec: QueueSpec) -> None:
        super().__init__(scope, construct_id)
        self.spec = spec
        self.dead_letter_queue = sqs.Queue(
            self,
            "DeadLetterQueue",
            queue_name=spec.dead_letter_name,
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=_DLQ_RETENTION,
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.queue = sqs.Queue(
            self,
            "Queue",
            queue_name=spec.name,
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            visibility_timeout=Duration.seconds(spec.visibility_timeout_s),
            dead_letter_queue=sqs.DeadLetterQueue(
                queue=self.dead_letter_queue, max_receive_count=spec.max_receive_count
            ),
            removal_policy=RemovalPolicy.DESTROY,
        )


class Queues(Construct):
    """Every work queue by purpose ("materialize", "extract", "ingest")."""

    def __init__(self, scope: Construct, construct_id: str, *, prefix: str) -> None:
        super().__init__(scope, construct_id)
        self.by_purpose = {
            purpose: WorkQueue(self, purpose.capitalize(), spec=spec)
            for purpose, spec in queue_specs(prefix).items()
        }

    def __getitem__(self, purpose: str) -> WorkQueue:
        return self.by_purpose[purpose]

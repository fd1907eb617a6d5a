"""The six Lambda functions, their triggers, and each one's least-privilege grants."""

from __future__ import annotations

from typing import cast

from aws_cdk import Acknowledgment, CfnElement, Duration, Stack, Validations
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.components.checkov_skips import skip
from infra.components.function_factory import FunctionFactory, FunctionSpec
from infra.components.queues import Queues, WorkQueue
from infra.components.search import Search
from infra.components.storage import Storage
from infra.config import DeploymentConfig
from prme.model.input_policy import LAMBDA_MAX_BODY_BYTES
from prme.settings import Settings, embedding_dimension

# The functions embed with Titan v2 at this dimension; the stack creates the index with it.
EMBEDDING_DIMENSION = embedding_dimension("bedrock")

# The DynamoDB actions the ledger (core/prme/backends/aws/dynamodb_ledger.py) calls from a
# function: key reads, batched key reads, queries (of the table and its GSIs) and conditional
# writes, alone or in a transaction (AWS authorizes TransactWriteItems by its items' actions:
# the ledger's hold Puts and Updates). Scan serves only the CLI's operator listings; nothing
# writes in batches, describes the table or reads its stream. Only the API deletes items
# (deleting one memory: a transaction of Deletes).
LEDGER_ACTIONS = (
    "dynamodb:GetItem",
    "dynamodb:BatchGetItem",
    "dynamodb:Query",
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
)
# Functions whose code paths call fewer of them. The bulk-ingest consumer reads a chunk's import
# job and its owner's erasure record (GetItem: an import begun before the erasure saves
# nothing) and the chunk's idempotency record (BatchGetItem), commits Put-only transactions and
# records the chunk's progress in the job (a conditional Put). The extractor reads by
# key one source and one journal record at a time: its only batched read would be of
# nodes to index, which it never has (its extract work names no node to index, and the nodes
# of one extraction share one time, so none is another's session predecessor). Maintenance
# reads only through queries (pending, expiring and alias work, a source's work items, owner
# nodes and journal) and writes by Put and Update; its organizer pass also lists owners and
# tenants (Scan), reads a duplicate and its keeper in one batch (BatchGetItem).
TABLE_ACTIONS = {
    "api": (*LEDGER_ACTIONS, "dynamodb:DeleteItem"),
    "ingest": ("dynamodb:BatchGetItem", "dynamodb:GetItem", "dynamodb:PutItem"),
    "extractor": ("dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:UpdateItem"),
    "maintenance": (
        "dynamodb:Query",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "dynamodb:Scan",
        "dynamodb:BatchGetItem",
    ),
}
# Sending work: messages go in batches, which AWS authorizes as SendMessage (the queue's URL is
# resolved at startup, granted apart). No queue attributes are read.
SEND_ACTIONS = ("sqs:SendMessage",)
# The index adapter's writes and searches are `_bulk` and `_msearch` (POST); its check of the
# index it finds, once per container, reads the alias and the mapping (GET).
SEARCH_ACTIONS = ("es:ESHttpGet", "es:ESHttpPost")
# What Lambda's poller calls on a queue that feeds a function (the actions AWS lists for an SQS
# event source); the handler itself never calls its own queue.
CONSUME_ACTIONS = ("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes")
# The regions each geography's cross-region inference profile routes to, by the profile id's
# prefix (`us.anthropic...`). AWS extends these lists over time; a request routed to a region
# missing here is denied, so a new one is added here.
INFERENCE_PROFILE_REGIONS: dict[str, tuple[str, ...]] = {
    "us": ("us-east-1", "us-east-2", "us-west-1", "us-west-2"),
    "eu": (
        "eu-central-1",
        "eu-central-2",
        "eu-north-1",
        "eu-south-1",
        "eu-south-2",
        "eu-west-1",
        "eu-west-2",
        "eu-west-3",
    ),
    "apac": (
        "ap-northeast-1",
        "ap-northeast-2",
        "ap-northeast-3",
        "ap-south-1",
        "ap-south-2",
        "ap-southeast-1",
        "ap-southeast-2",
        "ap-southeast-3",
        "ap-southeast-4",
    ),
    # A global profile routes to any commercial region.
    "global": ("*",),
}


def model_resources(stack: Stack, model_id: str) -> list[str]:
    """What InvokeModel on `model_id` is authorized against.

    A foundation-model id: that model in the stack's region. An inference profile id
    (`<geography>.<model>`): the profile in this account and region, and the model in every
    region the profile routes to, since each routed request is authorized there too."""
    geography, _, model = model_id.partition(".")
    if geography not in INFERENCE_PROFILE_REGIONS or not model:
        return [_foundation_model_arn(stack, stack.region, model_id)]
    profile = stack.format_arn(
        service="bedrock", resource="inference-profile", resource_name=model_id
    )
    regions = INFERENCE_PROFILE_REGIONS[geography]
    return [profile, *(_foundation_model_arn(stack, region, model) for region in regions)]


def _foundation_model_arn(stack: Stack, region: str, model_id: str) -> str:
    return stack.format_arn(
        service="bedrock",
        region=region,
        account="",
        resource="foundation-model",
        resource_name=model_id,
    )


class Workers(Construct):
    """`api`, `materializer`, `extractor`, `ingest` (the bulk-ingest consumer) and
    `maintenance`. Each queue consumer takes its timeout and batch size from its queue's spec
    (whose visibility timeout follows from that timeout) and reads one queue only."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: DeploymentConfig,
        storage: Storage,
        queues: Queues,
        search: Search,
    ) -> None:
        super().__init__(scope, construct_id)
        self._config = config
        self._storage = storage
        self._search = search
        env = Settings.env_name
        factory = FunctionFactory(
            self,
            code=lambda_.Code.from_asset(str(config.lambda_asset)),
            environment={
                env("backend"): "aws",
                env("table_name"): storage.table.table_name,
                env("queue_prefix"): config.resource_prefix,
                env("opensearch_url"): search.endpoint_url,
                env("opensearch_index_alias"): config.search_index_alias,
                env("opensearch_replicas"): str(config.search_replicas),
                env("opensearch_auth"): "es",
                env("embedder"): "bedrock",
                env("bedrock_embedding_model_id"): config.embedding_model_id,
                env("bedrock_embedding_dimension"): str(EMBEDDING_DIMENSION),
                env("extractor"): "bedrock",
                env("bedrock_extraction_model_id"): config.extraction_model_id,
            },
            log_retention=config.log_retention,
        )
        concurrency = config.reserved_concurrency
        materialize, extract, ingest = queues["materialize"], queues["extract"], queues["ingest"]

        self.api = factory.build(
            FunctionSpec(
                "api", "functions.api.handler", 1024, Duration.seconds(29), concurrency["api"]
            )
        )
        # Small enough that every body the function accepts fits Lambda's invoke payload.
        self.api.add_environment(env("max_body_bytes"), str(LAMBDA_MAX_BODY_BYTES))
        # The default per-tenant limits, enforced by the api function with counters in the
        # table; unset ones are unlimited (the settings' default).
        for field, value in config.tenant_limits.model_dump(exclude_none=True).items():
            self.api.add_environment(env(f"limits.{field}"), str(value))
        if concurrency["api"] is None:
            skip(
                self.api,
                "CKV_AWS_115",
                "The api's load is bounded by the HTTP API stage throttle (prme:apiRateLimit, "
                "prme:apiBurstLimit) and the workers are capped separately; reserving concurrency "
                "for it is opt-in (prme:apiReservedConcurrency): low-quota accounts cannot "
                "reserve any.",
            )
        # Each queue has one consumer, whose timeout is its queue's (visibility is six times it).
        consumers = {
            "materializer": ("functions.materializer.handler", materialize),
            "extractor": ("functions.extractor.handler", extract),
            "ingest": ("functions.ingest_consumer.handler", ingest),
        }
        built = {
            name: factory.build(
                FunctionSpec(
                    name,
                    handler,
                    1024,
                    Duration.seconds(queue.spec.consumer_timeout_s),
                    concurrency[name],
                )
            )
            for name, (handler, queue) in consumers.items()
        }
        self.materializer, self.extractor, self.ingest = (
            built["materializer"],
            built["extractor"],
            built["ingest"],
        )
        self.maintenance = factory.build(
            FunctionSpec(
                "maintenance",
                "functions.maintenance.handler",
                512,
                Duration.minutes(2),
                concurrency["maintenance"],
            )
        )
        self.functions = {
            "api": self.api,
            "materializer": self.materializer,
            "extractor": self.extractor,
            "ingest": self.ingest,
            "maintenance": self.maintenance,
        }

        for name, (_, queue) in consumers.items():
            self._consume(built[name], queue, config.max_concurrency[name])
        events.Rule(
            self,
            "MaintenanceSchedule",
            schedule=events.Schedule.rate(Duration.minutes(5)),
            targets=[targets.LambdaFunction(self.maintenance)],
        )

        # Grants, function by function (consumption is granted with each event source above).
        for name, function in self.functions.items():
            self._grant_table(function, TABLE_ACTIONS.get(name, LEDGER_ACTIONS))
            # The backend resolves both work queues' URLs when it starts, in every function.
            for queue in (materialize, extract):
                self._grant_queue_url(function, queue.queue)
        # api: stores (index first, then commit, announce on failure) and retrieves. It sends
        # the chunks of a bulk import to the ingest queue (resolving its URL at the first send).
        for queue in (materialize, extract, ingest):
            self._grant_send(self.api, queue.queue)
        self._grant_queue_url(self.api, ingest.queue)
        self._grant_search(self.api)
        # A caller may wait for extraction, which then runs in the API function.
        self._grant_models(self.api, config.embedding_model_id, config.extraction_model_id)
        # materializer: embeds and indexes. It announces nothing: a failed write leaves its
        # work pending and the message is redelivered (then swept by maintenance).
        self._grant_search(self.materializer)
        self._grant_models(self.materializer, config.embedding_model_id)
        # extractor: extracts with the Converse model, embeds and indexes what it found. It
        # announces nothing either: a failed index write keeps the extraction pending.
        self._grant_search(self.extractor)
        self._grant_models(self.extractor, config.embedding_model_id, config.extraction_model_id)
        # ingest: commits fast-ingest batches and announces their materialization (an import
        # creates no extraction work). A message that can never be valid is parked in the
        # ingest DLQ by the function itself, with its reason.
        self._grant_send(self.ingest, materialize.queue)
        self._grant_queue_url(self.ingest, ingest.dead_letter_queue)
        self._grant_send(self.ingest, ingest.dead_letter_queue)
        # maintenance: the sweeper re-announces overdue pending work of both kinds.
        for queue in (materialize, extract):
            self._grant_send(self.maintenance, queue.queue)

        # indexsetup: the custom resource that creates the search index at deploy time.
        self.index_setup = factory.build(
            FunctionSpec(
                "indexsetup", "functions.index_setup.handler", 256, Duration.minutes(2), None
            )
        )
        search.create_index(
            self.index_setup, alias=config.search_index_alias, dimension=EMBEDDING_DIMENSION
        )
        skip(
            self.index_setup,
            "CKV_AWS_115",
            "Invoked only by CloudFormation, once per deploy of the index resource; reserving "
            "concurrency for it would only take from the account's pool (low-quota accounts "
            "cannot reserve any).",
        )
        self.functions["indexsetup"] = self.index_setup

    def _grant_table(
        self, function: lambda_.Function, actions: tuple[str, ...] = LEDGER_ACTIONS
    ) -> None:
        table = self._storage.table
        function.add_to_role_policy(
            iam.PolicyStatement(
                actions=list(actions),
                resources=[table.table_arn, f"{table.table_arn}/index/*"],
            )
        )
        Validations.of(function.role or function).acknowledge(
            Acknowledgment(
                id=f"AwsSolutions-IAM5[Resource::<{self._table_logical_id()}.Arn>/index/*]",
                reason="Queries on the GSIs of this one table (owner-pending, pending, expiring); "
                "the wildcard covers only that table's own index names.",
            )
        )

    def _consume(self, function: lambda_.Function, queue: WorkQueue, max_concurrency: int) -> None:
        """`queue` feeds `function` in batches of its spec, reporting partial failures. Not
        through `SqsEventSource`, which also grants ChangeMessageVisibility and GetQueueUrl."""
        function.add_event_source_mapping(
            f"{queue.node.id}Source",
            event_source_arn=queue.queue.queue_arn,
            batch_size=queue.spec.batch_size,
            report_batch_item_failures=True,
            max_concurrency=max_concurrency,
        )
        function.add_to_role_policy(
            iam.PolicyStatement(actions=list(CONSUME_ACTIONS), resources=[queue.queue.queue_arn])
        )

    def _grant_queue_url(self, function: lambda_.Function, queue: sqs.IQueue) -> None:
        function.add_to_role_policy(
            iam.PolicyStatement(actions=["sqs:GetQueueUrl"], resources=[queue.queue_arn])
        )

    def _grant_send(self, function: lambda_.Function, queue: sqs.IQueue) -> None:
        function.add_to_role_policy(
            iam.PolicyStatement(actions=list(SEND_ACTIONS), resources=[queue.queue_arn])
        )

    def _grant_search(self, function: lambda_.Function) -> None:
        if function.role is None:  # the factory always gives one
            raise ValueError(f"{function.node.path} has no role to grant search access to")
        self._search.grant_http(function.role, SEARCH_ACTIONS)

    def _grant_models(self, function: lambda_.Function, *model_ids: str) -> None:
        """InvokeModel (which Converse is authorized as) on each model, named either by a
        foundation-model id or by a cross-region inference profile id."""
        resources: list[str] = []
        for model_id in model_ids:
            resources.extend(model_resources(Stack.of(self), model_id))
        function.add_to_role_policy(
            iam.PolicyStatement(actions=["bedrock:InvokeModel"], resources=resources)
        )

    def _table_logical_id(self) -> str:
        stack = Stack.of(self)
        cfn_table = cast(CfnElement, self._storage.table.node.default_child)
        return cast(str, stack.resolve(stack.get_logical_id(cfn_table)))

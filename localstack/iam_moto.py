"""moto's server with IAM checks on, for tests that run a function under its role's statements.

`python -m localstack.iam_moto PORT WATCH_PID` serves on 127.0.0.1:PORT until WATCH_PID exits.
Start it with INITIAL_NO_AUTH_ACTION_COUNT in the environment (moto reads it at import).

Two things are changed, so that moto authorizes as AWS does:
- the resource: moto authorizes DynamoDB calls and SQS `GetQueueUrl` against `*`, so a
  statement scoped to a table or queue ARN (every statement the stack writes) would never
  match. Here they name the table (or `table/T/index/I` for a query on an index) and the
  queue named by `QueueName`.
- the action of batch and transaction calls: moto checks `dynamodb:TransactWriteItems` and
  `sqs:SendMessageBatch`, actions AWS does not have. AWS authorizes a transaction by the
  actions of its items (PutItem, UpdateItem, DeleteItem, ConditionCheckItem) and a batch
  send as SendMessage; here each is checked that way, so no moto-only name is ever granted.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any


def _dynamodb_resource(handler: Any) -> str:
    body: dict[str, Any] = handler.body if isinstance(handler.body, dict) else {}
    tables: set[str] = set()
    if "TableName" in body:
        tables.add(body["TableName"])
    tables.update(body.get("RequestItems", {}))
    for item in body.get("TransactItems", []):
        tables.update(action["TableName"] for action in item.values() if "TableName" in action)
    if len(tables) != 1:
        return "*"
    (table,) = tables
    arn = f"arn:aws:dynamodb:{handler.region}:{handler.current_account}:table/{table}"
    index = body.get("IndexName")
    return f"{arn}/index/{index}" if index else arn


# Calls AWS authorizes by other actions: the actions of a transaction's items, or one action.
_ITEM_ACTIONS = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
}
_AUTHORIZED_AS = {
    "SendMessageBatch": "SendMessage",
    "DeleteMessageBatch": "DeleteMessage",
    "ChangeMessageVisibilityBatch": "ChangeMessageVisibility",
}


def _actions_aws_checks(handler: Any) -> list[str]:
    action: str = handler._get_action()
    if action == "TransactWriteItems":
        kinds = {kind for item in handler.body.get("TransactItems", []) for kind in item}
        return sorted(_ITEM_ACTIONS[kind] for kind in kinds)
    return [_AUTHORIZED_AS.get(action, action)]


def _patch_actions(handler_class: Any) -> None:
    authorize = handler_class._authenticate_and_authorize_normal_action

    def authorize_as_aws(handler: Any, resource: str = "*") -> None:
        actions = _actions_aws_checks(handler)
        if actions == [handler._get_action()]:
            authorize(handler, resource)
            return
        for action in actions:
            # moto reads the action to check from `_get_action`: shadowed per check.
            handler._get_action = lambda name=action: name
            try:
                authorize(handler, resource)
            finally:
                del handler._get_action

    handler_class._authenticate_and_authorize_normal_action = authorize_as_aws


def _patch_resources() -> None:
    from moto.dynamodb.responses import DynamoHandler
    from moto.sqs.responses import SQSResponse

    queue_resource = SQSResponse._determine_resource

    def sqs_resource(handler: Any) -> str:
        name = handler._get_param("QueueName")
        if name:
            return f"arn:aws:sqs:{handler.region}:{handler.current_account}:{name}"
        resource: str = queue_resource(handler)
        return resource

    DynamoHandler._determine_resource = _dynamodb_resource  # type: ignore[attr-defined]
    SQSResponse._determine_resource = sqs_resource  # type: ignore[method-assign,assignment]
    _patch_actions(DynamoHandler)
    _patch_actions(SQSResponse)


def _exit_with(pid: int) -> None:
    while True:
        try:
            os.kill(pid, 0)
        except OSError:
            os._exit(0)
        time.sleep(1)


def main(argv: list[str]) -> None:
    port, watch_pid = int(argv[0]), int(argv[1])
    if "INITIAL_NO_AUTH_ACTION_COUNT" not in os.environ:
        raise SystemExit("INITIAL_NO_AUTH_ACTION_COUNT must be set: without it moto checks no IAM")
    _patch_resources()
    threading.Thread(target=_exit_with, args=(watch_pid,), daemon=True).start()
    from moto.server import main as serve

    serve(["-H", "127.0.0.1", "-p", str(port)])


if __name__ == "__main__":
    main(sys.argv[1:])

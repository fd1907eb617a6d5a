"""moto's server with IAM checks on, for tests that run a function under its role's statements.

`python -m localstack.iam_moto PORT WATCH_PID` serves on 127.0.0.1:PORT until WATCH_PID exits.
Start it with INITIAL_NO_AUTH_ACTION_COUNT in the environment (moto reads it at import).

moto checks actions, but authorizes DynamoDB calls and SQS `GetQueueUrl` against the resource
`*`, so a statement scoped to a table or queue ARN (every statement the stack writes) would never
match. Here both name the resource AWS authorizes against: the table (or `table/T/index/I` for
a query on an index) and the queue named by `QueueName`. Nothing else of moto is changed.
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

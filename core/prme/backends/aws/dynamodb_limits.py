"""`DynamoDbLimits`: usage counters and per-tenant limits in the deployment's table.

Every counter is its own item under its own partition key (`USAGE#<tenant>#<name>`), so a
tenant's request windows, retrievals and stored counts spread over partitions instead of
heating one; a check is one conditional UpdateItem (`ADD`, refused by its condition when the
sum would pass the cap), which DynamoDB applies atomically however many Lambda instances call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from prme.backends.aws import resources
from prme.errors import RetryableStorageError, StorageUnavailableError
from prme.model.limits import CounterKey, TenantLimits

PK, SK = resources.PARTITION_KEY, resources.SORT_KEY
# Counter fields are stored as attributes with this prefix, apart from the key and TTL.
_FIELD_PREFIX = "c_"
_THROTTLED = frozenset(
    {"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"}
)
_BATCH_GET_KEYS = 100


def _part(value: str) -> str:
    """Escape `#` (and the escape itself) so composed keys stay unambiguous for any name."""
    return value.replace("%", "%25").replace("#", "%23")


def _attribute(field: str) -> str:
    return _FIELD_PREFIX + field


def counter_key(key: CounterKey) -> dict[str, Any]:
    return {PK: {"S": f"USAGE#{_part(key.tenant_id)}#{_part(key.name)}"}, SK: {"S": "COUNTER"}}


def limits_key(tenant_id: str) -> dict[str, Any]:
    return {PK: {"S": f"TENANT#{_part(tenant_id)}#LIMITS"}, SK: {"S": "LIMITS"}}


class DynamoDbLimits:
    """Both limits ports over one table; the client is a boto3 DynamoDB client."""

    def __init__(self, client: Any, table_name: str) -> None:
        self._client = client
        self._table = table_name

    def _call(self, operation: str, **kwargs: Any) -> dict[str, Any] | None:
        """The answer, or None when the request's condition failed."""
        try:
            answer: dict[str, Any] = getattr(self._client, operation)(
                TableName=self._table, **kwargs
            )
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if code == "ConditionalCheckFailedException":
                return None
            if code in _THROTTLED:
                # The client's own retries already waited; a limits check must not hold the
                # request longer than that.
                raise RetryableStorageError() from exc
            raise StorageUnavailableError() from exc
        except BotoCoreError as exc:
            raise StorageUnavailableError() from exc
        return answer

    def add_within(
        self,
        key: CounterKey,
        amounts: Mapping[str, int],
        caps: Mapping[str, int],
        *,
        expires_at: datetime | None,
    ) -> dict[str, int] | None:
        if any(amounts.get(field, 0) > cap for field, cap in caps.items()):
            return None  # even a counter at 0 would pass the cap: no request needed
        names: dict[str, str] = {}
        values: dict[str, Any] = {}
        adds = []
        for number, (field, amount) in enumerate(amounts.items()):
            names[f"#f{number}"] = _attribute(field)
            values[f":a{number}"] = {"N": str(amount)}
            adds.append(f"#f{number} :a{number}")
        update = "ADD " + ", ".join(adds)
        if expires_at is not None:
            names["#ttl"] = resources.TTL_ATTRIBUTE
            values[":ttl"] = {"N": str(int(expires_at.timestamp()))}
            update += " SET #ttl = :ttl"
        conditions = []
        for number, (field, cap) in enumerate(caps.items()):
            names[f"#c{number}"] = _attribute(field)
            # The condition reads the value before the update: room is the cap less the add.
            values[f":r{number}"] = {"N": str(cap - amounts.get(field, 0))}
            conditions.append(f"(attribute_not_exists(#c{number}) OR #c{number} <= :r{number})")
        extra: dict[str, Any] = {}
        if conditions:
            extra["ConditionExpression"] = " AND ".join(conditions)
        answer = self._call(
            "update_item",
            Key=counter_key(key),
            UpdateExpression=update,
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
            ReturnValues="UPDATED_NEW",
            **extra,
        )
        if answer is None:
            return None
        attributes = answer.get("Attributes", {})
        return {field: int(attributes[_attribute(field)]["N"]) for field in amounts}

    def read_counters(self, keys: Sequence[CounterKey]) -> dict[CounterKey, dict[str, int]]:
        found: dict[CounterKey, dict[str, int]] = {}
        by_pk = {counter_key(key)[PK]["S"]: key for key in keys}
        wanted = list(by_pk)
        for start in range(0, len(wanted), _BATCH_GET_KEYS):
            pending: dict[str, Any] = {
                self._table: {
                    "Keys": [
                        {PK: {"S": pk}, SK: {"S": "COUNTER"}}
                        for pk in wanted[start : start + _BATCH_GET_KEYS]
                    ]
                }
            }
            for _ in range(5):
                try:
                    answer = self._client.batch_get_item(RequestItems=pending)
                except (ClientError, BotoCoreError) as exc:
                    raise StorageUnavailableError() from exc
                for item in answer.get("Responses", {}).get(self._table, []):
                    found[by_pk[item[PK]["S"]]] = {
                        name.removeprefix(_FIELD_PREFIX): int(value["N"])
                        for name, value in item.items()
                        if name.startswith(_FIELD_PREFIX)
                    }
                pending = answer.get("UnprocessedKeys") or {}
                if not pending:
                    break
            else:
                raise RetryableStorageError()
        return found

    def get_tenant_limits(self, tenant_id: str) -> TenantLimits | None:
        answer = self._call("get_item", Key=limits_key(tenant_id), ConsistentRead=True)
        item = (answer or {}).get("Item")
        if item is None:
            return None
        return TenantLimits.model_validate_json(item["body"]["S"])

    def put_tenant_limits(self, tenant_id: str, limits: TenantLimits) -> None:
        item = {
            **limits_key(tenant_id),
            "kind": {"S": "tenant_limits"},
            "body": {"S": limits.model_dump_json()},
        }
        self._call("put_item", Item=item)

    def delete_tenant_limits(self, tenant_id: str) -> bool:
        answer = self._call(
            "delete_item",
            Key=limits_key(tenant_id),
            ConditionExpression=f"attribute_exists({PK})",
        )
        return answer is not None

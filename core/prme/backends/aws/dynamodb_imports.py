"""Bulk-import job records on the ledger's DynamoDB table, in the owner's partition.

One item per job (`sk = IMPORT#<id>`), replaced only over the version it was read at, so
consumers recording chunks at once never overwrite one another. The items sit under the
owner's partition key, so an erasure of the owner removes them with everything else.
"""

from __future__ import annotations

from typing import Any

from prme.backends.aws.dynamodb_ledger import PK, DynamoDbLedger, _key, _owner_pk, _part
from prme.backends.stored_records import load_record
from prme.model.imports import ImportJob
from prme.model.records import OwnerKey


class DynamoDbImportJobStore:
    def __init__(self, client: Any, table_name: str) -> None:
        self._table = table_name
        # The ledger's request plumbing: retries of throttled calls, errors translated.
        self._ledger = DynamoDbLedger(client, table_name)

    @staticmethod
    def _key(owner: OwnerKey, import_id: str) -> dict[str, dict[str, str]]:
        return _key(_owner_pk(owner.tenant_id, owner.owner_id), f"IMPORT#{_part(import_id)}")

    def _item(self, job: ImportJob) -> dict[str, dict[str, str]]:
        return {
            **self._key(job.owner, job.import_id),
            "kind": {"S": "import"},
            "version": {"N": str(job.version)},
            "body": {"S": job.model_dump_json()},
        }

    def create_import(self, job: ImportJob) -> None:
        self._ledger._call(
            "put_item",
            TableName=self._table,
            Item=self._item(job),
            ConditionExpression="attribute_not_exists(#pk)",
            ExpressionAttributeNames={"#pk": PK},
        )

    def get_import(self, owner: OwnerKey, import_id: str) -> ImportJob | None:
        answer = self._ledger._call(
            "get_item", TableName=self._table, Key=self._key(owner, import_id), ConsistentRead=True
        )
        item = answer.get("Item")
        if item is None:
            return None
        return load_record(ImportJob, "import", import_id, str(item.get("body", {}).get("S", "")))

    def save_import(self, job: ImportJob, *, replacing: ImportJob) -> None:
        self._ledger._call(
            "put_item",
            TableName=self._table,
            Item=self._item(job),
            ConditionExpression="#version = :old",
            ExpressionAttributeNames={"#version": "version"},
            ExpressionAttributeValues={":old": {"N": str(replacing.version)}},
        )

    def erase_owner(self, owner: OwnerKey) -> int:  # noqa: ARG002 - the port's signature
        # The jobs sit in the owner's partition: the ledger's erasure steps remove them.
        return 0

"""Ranking profiles on the ledger's DynamoDB table, in the owner's partition.

Items: one per profile (`sk = RPROFILE#<id>`), one per slot holding its current state
(`RPSTATE#<slot>`, with the change id as an attribute), and one per change
(`RPCHANGE#<slot>#<sequence>`). A change puts the slot's state on condition that the stored
one has the change id the caller read, and adds its history item, in one transaction. The
items sit under the owner's partition key, so an erasure of the owner removes them with
everything else.
"""

from __future__ import annotations

from typing import Any

from prme.backends.aws.dynamodb_ledger import (
    _HIGHEST_CHARACTER,
    PK,
    SK,
    DynamoDbLedger,
    _key,
    _owner_pk,
)
from prme.backends.stored_records import load_readable, load_record
from prme.model.learning import RankingProfile, RankingProfileState
from prme.model.records import OwnerKey

PROFILE_PREFIX = "RPROFILE#"
STATE_PREFIX = "RPSTATE#"
CHANGE_PREFIX = "RPCHANGE#"


def _pk(owner: OwnerKey) -> str:
    return _owner_pk(owner.tenant_id, owner.owner_id)


def _change_sk(slot: str, sequence: int) -> str:
    # Slot keys hold scope names, `+` and `*` only: no `#` to escape.
    return f"{CHANGE_PREFIX}{slot}#{sequence:010d}"


class DynamoDbRankingProfileStore:
    def __init__(self, client: Any, table_name: str) -> None:
        self._table = table_name
        # The ledger's request plumbing: retries of throttled calls, errors translated.
        self._ledger = DynamoDbLedger(client, table_name)

    def create_profile(self, owner: OwnerKey, profile: RankingProfile) -> None:
        item = {
            **_key(_pk(owner), PROFILE_PREFIX + profile.profile_id),
            "kind": {"S": "ranking_profile"},
            "body": {"S": profile.model_dump_json()},
        }
        self._ledger._call(
            "put_item",
            TableName=self._table,
            Item=item,
            ConditionExpression=f"attribute_not_exists({PK})",
        )

    def get_profile(self, owner: OwnerKey, profile_id: str) -> RankingProfile | None:
        item = self._ledger._get(_key(_pk(owner), PROFILE_PREFIX + profile_id))
        if item is None:
            return None
        return load_record(RankingProfile, "ranking_profile", profile_id, item["body"]["S"])

    def list_profiles(
        self, owner: OwnerKey, *, limit: int, after_id: str | None
    ) -> list[RankingProfile]:
        # BETWEEN includes its bounds: the page starts at after_id, which is then left out.
        low = PROFILE_PREFIX + (after_id or "")
        items = self._ledger._query_items(
            limit=limit + 1,
            KeyConditionExpression="#pk = :pk AND #sk BETWEEN :low AND :high",
            ExpressionAttributeNames={"#pk": PK, "#sk": SK},
            ExpressionAttributeValues={
                ":pk": {"S": _pk(owner)},
                ":low": {"S": low},
                ":high": {"S": PROFILE_PREFIX + _HIGHEST_CHARACTER},
            },
            ConsistentRead=True,
        )
        rows = [
            (item[SK]["S"].removeprefix(PROFILE_PREFIX), item["body"]["S"])
            for item in items
            if item[SK]["S"] != low or after_id is None
        ]
        return load_readable(RankingProfile, "ranking_profile", rows)[:limit]

    def current_states(self, owner: OwnerKey) -> list[RankingProfileState]:
        items = self._ledger._query_prefix(_pk(owner), STATE_PREFIX)
        return load_readable(
            RankingProfileState,
            "ranking_change",
            [(item["change_id"]["S"], item["body"]["S"]) for item in items],
        )

    def list_history(self, owner: OwnerKey, slot: str, *, limit: int) -> list[RankingProfileState]:
        items = self._ledger._query_items(
            limit=limit,
            KeyConditionExpression="#pk = :pk AND begins_with(#sk, :prefix)",
            ExpressionAttributeNames={"#pk": PK, "#sk": SK},
            ExpressionAttributeValues={
                ":pk": {"S": _pk(owner)},
                ":prefix": {"S": f"{CHANGE_PREFIX}{slot}#"},
            },
            ScanIndexForward=False,
            ConsistentRead=True,
        )
        return load_readable(
            RankingProfileState,
            "ranking_change",
            [(item["change_id"]["S"], item["body"]["S"]) for item in items],
        )

    def save_state(
        self, owner: OwnerKey, state: RankingProfileState, *, replacing: str | None
    ) -> None:
        body = {"S": state.model_dump_json()}
        change_id = {"S": state.change_id}
        current = {
            **_key(_pk(owner), STATE_PREFIX + state.slot),
            "kind": {"S": "ranking_state"},
            "change_id": change_id,
            "body": body,
        }
        condition: dict[str, Any] = (
            {"ConditionExpression": f"attribute_not_exists({PK})"}
            if replacing is None
            else {
                "ConditionExpression": "change_id = :read",
                "ExpressionAttributeValues": {":read": {"S": replacing}},
            }
        )
        change = {
            **_key(_pk(owner), _change_sk(state.slot, state.sequence)),
            "kind": {"S": "ranking_change"},
            "change_id": change_id,
            "body": body,
        }
        self._ledger._transact([("Put", current, condition), self._ledger._put_new(change)])

    def erase_owner(self, owner: OwnerKey) -> int:  # noqa: ARG002 - the port's signature
        # The items sit in the owner's partition: the ledger's erasure steps remove them.
        return 0

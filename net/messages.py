"""Kafka's request and response messages as types: per API, the union of kio's classes over
the versions this node serves, and the class of each served version.

kio generates one class per message version. Handlers that serve several versions take the
union named after the message (`FetchRequest` is Fetch v4 | ... | v16) and narrow it with
`isinstance` where versions differ in fields. The unions are for the type checker only (the
modules naming them in annotations import `annotations` from `__future__`): importing every
version of every message costs a node about a second of CPU at each start, so nothing here
imports a message class until it is used. The `..._RESPONSES` (and, for the APIs this node
also sends, `..._REQUESTS`) mappings give the class of each served version, imported the first
time it is asked for (then a dict hit), so a message built for the version asked for keeps its
type; `nested_type` gives the classes of its nested entities. The version ranges are the served
ones, which a test holds equal to the ranges each handler registers.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

from kio.static.protocol import Payload

from net.api_keys import ApiKey
from net.protocol import field_entity_type, request_schema, response_schema

if TYPE_CHECKING:
    from kio.schema.allocate_producer_ids import v0 as allocate_producer_ids_v0
    from kio.schema.alter_configs import v0 as alter_configs_v0
    from kio.schema.alter_configs import v1 as alter_configs_v1
    from kio.schema.alter_configs import v2 as alter_configs_v2
    from kio.schema.alter_partition import v2 as alter_partition_v2
    from kio.schema.alter_partition import v3 as alter_partition_v3
    from kio.schema.alter_partition_reassignments import v0 as alter_partition_reassignments_v0
    from kio.schema.alter_partition_reassignments import v1 as alter_partition_reassignments_v1
    from kio.schema.alter_user_scram_credentials import v0 as alter_user_scram_credentials_v0
    from kio.schema.broker_heartbeat import v0 as broker_heartbeat_v0
    from kio.schema.broker_heartbeat import v1 as broker_heartbeat_v1
    from kio.schema.broker_heartbeat import v2 as broker_heartbeat_v2
    from kio.schema.broker_registration import v0 as broker_registration_v0
    from kio.schema.broker_registration import v1 as broker_registration_v1
    from kio.schema.broker_registration import v2 as broker_registration_v2
    from kio.schema.broker_registration import v3 as broker_registration_v3
    from kio.schema.broker_registration import v4 as broker_registration_v4
    from kio.schema.create_acls import v1 as create_acls_v1
    from kio.schema.create_acls import v2 as create_acls_v2
    from kio.schema.create_acls import v3 as create_acls_v3
    from kio.schema.create_partitions import v0 as create_partitions_v0
    from kio.schema.create_partitions import v1 as create_partitions_v1
    from kio.schema.create_partitions import v2 as create_partitions_v2
    from kio.schema.create_partitions import v3 as create_partitions_v3
    from kio.schema.create_topics import v2 as create_topics_v2
    from kio.schema.create_topics import v3 as create_topics_v3
    from kio.schema.create_topics import v4 as create_topics_v4
    from kio.schema.create_topics import v5 as create_topics_v5
    from kio.schema.create_topics import v6 as create_topics_v6
    from kio.schema.create_topics import v7 as create_topics_v7
    from kio.schema.delete_acls import v1 as delete_acls_v1
    from kio.schema.delete_acls import v2 as delete_acls_v2
    from kio.schema.delete_acls import v3 as delete_acls_v3
    from kio.schema.delete_groups import v0 as delete_groups_v0
    from kio.schema.delete_groups import v1 as delete_groups_v1
    from kio.schema.delete_groups import v2 as delete_groups_v2
    from kio.schema.delete_records import v0 as delete_records_v0
    from kio.schema.delete_records import v1 as delete_records_v1
    from kio.schema.delete_records import v2 as delete_records_v2
    from kio.schema.delete_topics import v1 as delete_topics_v1
    from kio.schema.delete_topics import v2 as delete_topics_v2
    from kio.schema.delete_topics import v3 as delete_topics_v3
    from kio.schema.delete_topics import v4 as delete_topics_v4
    from kio.schema.delete_topics import v5 as delete_topics_v5
    from kio.schema.delete_topics import v6 as delete_topics_v6
    from kio.schema.describe_acls import v1 as describe_acls_v1
    from kio.schema.describe_acls import v2 as describe_acls_v2
    from kio.schema.describe_acls import v3 as describe_acls_v3
    from kio.schema.describe_cluster import v0 as describe_cluster_v0
    from kio.schema.describe_cluster import v1 as describe_cluster_v1
    from kio.schema.describe_configs import v1 as describe_configs_v1
    from kio.schema.describe_configs import v2 as describe_configs_v2
    from kio.schema.describe_configs import v3 as describe_configs_v3
    from kio.schema.describe_configs import v4 as describe_configs_v4
    from kio.schema.describe_groups import v0 as describe_groups_v0
    from kio.schema.describe_groups import v1 as describe_groups_v1
    from kio.schema.describe_groups import v2 as describe_groups_v2
    from kio.schema.describe_groups import v3 as describe_groups_v3
    from kio.schema.describe_groups import v4 as describe_groups_v4
    from kio.schema.describe_groups import v5 as describe_groups_v5
    from kio.schema.describe_log_dirs import v1 as describe_log_dirs_v1
    from kio.schema.describe_log_dirs import v2 as describe_log_dirs_v2
    from kio.schema.describe_log_dirs import v3 as describe_log_dirs_v3
    from kio.schema.describe_log_dirs import v4 as describe_log_dirs_v4
    from kio.schema.describe_producers import v0 as describe_producers_v0
    from kio.schema.describe_user_scram_credentials import v0 as describe_user_scram_credentials_v0
    from kio.schema.elect_leaders import v0 as elect_leaders_v0
    from kio.schema.elect_leaders import v1 as elect_leaders_v1
    from kio.schema.elect_leaders import v2 as elect_leaders_v2
    from kio.schema.fetch import v4 as fetch_v4
    from kio.schema.fetch import v5 as fetch_v5
    from kio.schema.fetch import v6 as fetch_v6
    from kio.schema.fetch import v7 as fetch_v7
    from kio.schema.fetch import v8 as fetch_v8
    from kio.schema.fetch import v9 as fetch_v9
    from kio.schema.fetch import v10 as fetch_v10
    from kio.schema.fetch import v11 as fetch_v11
    from kio.schema.fetch import v12 as fetch_v12
    from kio.schema.fetch import v13 as fetch_v13
    from kio.schema.fetch import v14 as fetch_v14
    from kio.schema.fetch import v15 as fetch_v15
    from kio.schema.fetch import v16 as fetch_v16
    from kio.schema.find_coordinator import v0 as find_coordinator_v0
    from kio.schema.find_coordinator import v1 as find_coordinator_v1
    from kio.schema.find_coordinator import v2 as find_coordinator_v2
    from kio.schema.find_coordinator import v3 as find_coordinator_v3
    from kio.schema.find_coordinator import v4 as find_coordinator_v4
    from kio.schema.find_coordinator import v5 as find_coordinator_v5
    from kio.schema.find_coordinator import v6 as find_coordinator_v6
    from kio.schema.heartbeat import v0 as heartbeat_v0
    from kio.schema.heartbeat import v1 as heartbeat_v1
    from kio.schema.heartbeat import v2 as heartbeat_v2
    from kio.schema.heartbeat import v3 as heartbeat_v3
    from kio.schema.heartbeat import v4 as heartbeat_v4
    from kio.schema.incremental_alter_configs import v0 as incremental_alter_configs_v0
    from kio.schema.incremental_alter_configs import v1 as incremental_alter_configs_v1
    from kio.schema.init_producer_id import v0 as init_producer_id_v0
    from kio.schema.init_producer_id import v1 as init_producer_id_v1
    from kio.schema.init_producer_id import v2 as init_producer_id_v2
    from kio.schema.init_producer_id import v3 as init_producer_id_v3
    from kio.schema.init_producer_id import v4 as init_producer_id_v4
    from kio.schema.join_group import v0 as join_group_v0
    from kio.schema.join_group import v1 as join_group_v1
    from kio.schema.join_group import v2 as join_group_v2
    from kio.schema.join_group import v3 as join_group_v3
    from kio.schema.join_group import v4 as join_group_v4
    from kio.schema.join_group import v5 as join_group_v5
    from kio.schema.join_group import v6 as join_group_v6
    from kio.schema.join_group import v7 as join_group_v7
    from kio.schema.join_group import v8 as join_group_v8
    from kio.schema.join_group import v9 as join_group_v9
    from kio.schema.leave_group import v0 as leave_group_v0
    from kio.schema.leave_group import v1 as leave_group_v1
    from kio.schema.leave_group import v2 as leave_group_v2
    from kio.schema.leave_group import v3 as leave_group_v3
    from kio.schema.leave_group import v4 as leave_group_v4
    from kio.schema.leave_group import v5 as leave_group_v5
    from kio.schema.list_groups import v0 as list_groups_v0
    from kio.schema.list_groups import v1 as list_groups_v1
    from kio.schema.list_groups import v2 as list_groups_v2
    from kio.schema.list_groups import v3 as list_groups_v3
    from kio.schema.list_groups import v4 as list_groups_v4
    from kio.schema.list_groups import v5 as list_groups_v5
    from kio.schema.list_offsets import v1 as list_offsets_v1
    from kio.schema.list_offsets import v2 as list_offsets_v2
    from kio.schema.list_offsets import v3 as list_offsets_v3
    from kio.schema.list_offsets import v4 as list_offsets_v4
    from kio.schema.list_offsets import v5 as list_offsets_v5
    from kio.schema.list_offsets import v6 as list_offsets_v6
    from kio.schema.list_offsets import v7 as list_offsets_v7
    from kio.schema.list_offsets import v8 as list_offsets_v8
    from kio.schema.list_offsets import v9 as list_offsets_v9
    from kio.schema.list_offsets import v10 as list_offsets_v10
    from kio.schema.list_partition_reassignments import v0 as list_partition_reassignments_v0
    from kio.schema.metadata import v0 as metadata_v0
    from kio.schema.metadata import v1 as metadata_v1
    from kio.schema.metadata import v2 as metadata_v2
    from kio.schema.metadata import v3 as metadata_v3
    from kio.schema.metadata import v4 as metadata_v4
    from kio.schema.metadata import v5 as metadata_v5
    from kio.schema.metadata import v6 as metadata_v6
    from kio.schema.metadata import v7 as metadata_v7
    from kio.schema.metadata import v8 as metadata_v8
    from kio.schema.metadata import v9 as metadata_v9
    from kio.schema.metadata import v10 as metadata_v10
    from kio.schema.metadata import v11 as metadata_v11
    from kio.schema.metadata import v12 as metadata_v12
    from kio.schema.offset_commit import v2 as offset_commit_v2
    from kio.schema.offset_commit import v3 as offset_commit_v3
    from kio.schema.offset_commit import v4 as offset_commit_v4
    from kio.schema.offset_commit import v5 as offset_commit_v5
    from kio.schema.offset_commit import v6 as offset_commit_v6
    from kio.schema.offset_commit import v7 as offset_commit_v7
    from kio.schema.offset_commit import v8 as offset_commit_v8
    from kio.schema.offset_commit import v9 as offset_commit_v9
    from kio.schema.offset_delete import v0 as offset_delete_v0
    from kio.schema.offset_fetch import v1 as offset_fetch_v1
    from kio.schema.offset_fetch import v2 as offset_fetch_v2
    from kio.schema.offset_fetch import v3 as offset_fetch_v3
    from kio.schema.offset_fetch import v4 as offset_fetch_v4
    from kio.schema.offset_fetch import v5 as offset_fetch_v5
    from kio.schema.offset_fetch import v6 as offset_fetch_v6
    from kio.schema.offset_fetch import v7 as offset_fetch_v7
    from kio.schema.offset_fetch import v8 as offset_fetch_v8
    from kio.schema.offset_fetch import v9 as offset_fetch_v9
    from kio.schema.offset_for_leader_epoch import v2 as offset_for_leader_epoch_v2
    from kio.schema.offset_for_leader_epoch import v3 as offset_for_leader_epoch_v3
    from kio.schema.offset_for_leader_epoch import v4 as offset_for_leader_epoch_v4
    from kio.schema.produce import v3 as produce_v3
    from kio.schema.produce import v4 as produce_v4
    from kio.schema.produce import v5 as produce_v5
    from kio.schema.produce import v6 as produce_v6
    from kio.schema.produce import v7 as produce_v7
    from kio.schema.produce import v8 as produce_v8
    from kio.schema.produce import v9 as produce_v9
    from kio.schema.produce import v10 as produce_v10
    from kio.schema.sync_group import v0 as sync_group_v0
    from kio.schema.sync_group import v1 as sync_group_v1
    from kio.schema.sync_group import v2 as sync_group_v2
    from kio.schema.sync_group import v3 as sync_group_v3
    from kio.schema.sync_group import v4 as sync_group_v4
    from kio.schema.sync_group import v5 as sync_group_v5
    from kio.schema.unregister_broker import v0 as unregister_broker_v0
_Message = TypeVar("_Message", bound=Payload)

ByVersion: TypeAlias = Mapping[int, type[_Message]]
"""The class of a message at each version served."""


class ServedVersions(Mapping[int, type[_Message]]):
    """The request or response class of one API at each of a range of versions, imported the
    first time that version is asked for.

    `classes` holds them all, for `isinstance` checks (which the type checker narrows to the
    union the mapping is annotated with) that must not import them at start.
    """

    __slots__ = ("_all", "_api_key", "_classes", "_schema", "_versions")

    def __init__(
        self,
        api_key: ApiKey,
        versions: range,
        schema: Callable[[int, int], type[Payload] | None],
    ) -> None:
        self._api_key = api_key
        self._versions = versions
        self._schema = schema
        self._classes: dict[int, type[_Message]] = {}
        self._all: tuple[type[_Message], ...] | None = None

    def __getitem__(self, version: int) -> type[_Message]:
        try:
            return self._classes[version]
        except KeyError:
            return self._load(version)

    def _load(self, version: int) -> type[_Message]:
        if version not in self._versions:
            raise KeyError(f"{self._api_key.name} v{version} is not served")
        message = self._schema(self._api_key, version)
        if message is None:
            raise KeyError(f"{self._api_key.name} v{version} has no schema")
        loaded = typing.cast(type[_Message], message)
        self._classes[version] = loaded
        return loaded

    def __iter__(self) -> Iterator[int]:
        return iter(self._versions)

    def __len__(self) -> int:
        return len(self._versions)

    def __contains__(self, version: object) -> bool:
        return version in self._versions

    @property
    def classes(self) -> tuple[type[_Message], ...]:
        """The class of every version, in version order."""
        if self._all is None:
            self._all = tuple(self[version] for version in self._versions)
        return self._all


def served_requests(api_key: ApiKey, oldest: int, newest: int) -> ServedVersions[Any]:
    """The request classes of `api_key`'s versions `oldest`..`newest`."""
    return ServedVersions(api_key, range(oldest, newest + 1), request_schema)


def served_responses(api_key: ApiKey, oldest: int, newest: int) -> ServedVersions[Any]:
    """The response classes of `api_key`'s versions `oldest`..`newest`."""
    return ServedVersions(api_key, range(oldest, newest + 1), response_schema)


def nested_type(messages: ByVersion[Payload], version: int, *path: str) -> type[object]:
    """The class of the entity reached from the message of `version` through the fields of
    `path` (an array field leads to its elements' class).

    For building that version's nested entities with `make_entity`, which fills whichever
    fields the version has; what is built is typed no closer than `object`.
    """
    entity: type = messages[version]
    for name in path:
        entity = field_entity_type(entity, name)
    return entity


# Produce v3-v10

if TYPE_CHECKING:
    ProduceRequest: TypeAlias = (
        produce_v3.ProduceRequest
        | produce_v4.ProduceRequest
        | produce_v5.ProduceRequest
        | produce_v6.ProduceRequest
        | produce_v7.ProduceRequest
        | produce_v8.ProduceRequest
        | produce_v9.ProduceRequest
        | produce_v10.ProduceRequest
    )
    ProduceResponse: TypeAlias = (
        produce_v3.ProduceResponse
        | produce_v4.ProduceResponse
        | produce_v5.ProduceResponse
        | produce_v6.ProduceResponse
        | produce_v7.ProduceResponse
        | produce_v8.ProduceResponse
        | produce_v9.ProduceResponse
        | produce_v10.ProduceResponse
    )

PRODUCE_RESPONSES: ByVersion[ProduceResponse] = served_responses(ApiKey.PRODUCE, 3, 10)


# Fetch v4-v16

if TYPE_CHECKING:
    FetchRequest: TypeAlias = (
        fetch_v4.FetchRequest
        | fetch_v5.FetchRequest
        | fetch_v6.FetchRequest
        | fetch_v7.FetchRequest
        | fetch_v8.FetchRequest
        | fetch_v9.FetchRequest
        | fetch_v10.FetchRequest
        | fetch_v11.FetchRequest
        | fetch_v12.FetchRequest
        | fetch_v13.FetchRequest
        | fetch_v14.FetchRequest
        | fetch_v15.FetchRequest
        | fetch_v16.FetchRequest
    )
    FetchResponse: TypeAlias = (
        fetch_v4.FetchResponse
        | fetch_v5.FetchResponse
        | fetch_v6.FetchResponse
        | fetch_v7.FetchResponse
        | fetch_v8.FetchResponse
        | fetch_v9.FetchResponse
        | fetch_v10.FetchResponse
        | fetch_v11.FetchResponse
        | fetch_v12.FetchResponse
        | fetch_v13.FetchResponse
        | fetch_v14.FetchResponse
        | fetch_v15.FetchResponse
        | fetch_v16.FetchResponse
    )

FETCH_RESPONSES: ByVersion[FetchResponse] = served_responses(ApiKey.FETCH, 4, 16)


# ListOffsets v1-v10

if TYPE_CHECKING:
    ListOffsetsRequest: TypeAlias = (
        list_offsets_v1.ListOffsetsRequest
        | list_offsets_v2.ListOffsetsRequest
        | list_offsets_v3.ListOffsetsRequest
        | list_offsets_v4.ListOffsetsRequest
        | list_offsets_v5.ListOffsetsRequest
        | list_offsets_v6.ListOffsetsRequest
        | list_offsets_v7.ListOffsetsRequest
        | list_offsets_v8.ListOffsetsRequest
        | list_offsets_v9.ListOffsetsRequest
        | list_offsets_v10.ListOffsetsRequest
    )
    ListOffsetsResponse: TypeAlias = (
        list_offsets_v1.ListOffsetsResponse
        | list_offsets_v2.ListOffsetsResponse
        | list_offsets_v3.ListOffsetsResponse
        | list_offsets_v4.ListOffsetsResponse
        | list_offsets_v5.ListOffsetsResponse
        | list_offsets_v6.ListOffsetsResponse
        | list_offsets_v7.ListOffsetsResponse
        | list_offsets_v8.ListOffsetsResponse
        | list_offsets_v9.ListOffsetsResponse
        | list_offsets_v10.ListOffsetsResponse
    )

LIST_OFFSETS_RESPONSES: ByVersion[ListOffsetsResponse] = served_responses(
    ApiKey.LIST_OFFSETS, 1, 10
)


# Metadata v0-v12

if TYPE_CHECKING:
    MetadataRequest: TypeAlias = (
        metadata_v0.MetadataRequest
        | metadata_v1.MetadataRequest
        | metadata_v2.MetadataRequest
        | metadata_v3.MetadataRequest
        | metadata_v4.MetadataRequest
        | metadata_v5.MetadataRequest
        | metadata_v6.MetadataRequest
        | metadata_v7.MetadataRequest
        | metadata_v8.MetadataRequest
        | metadata_v9.MetadataRequest
        | metadata_v10.MetadataRequest
        | metadata_v11.MetadataRequest
        | metadata_v12.MetadataRequest
    )
    MetadataResponse: TypeAlias = (
        metadata_v0.MetadataResponse
        | metadata_v1.MetadataResponse
        | metadata_v2.MetadataResponse
        | metadata_v3.MetadataResponse
        | metadata_v4.MetadataResponse
        | metadata_v5.MetadataResponse
        | metadata_v6.MetadataResponse
        | metadata_v7.MetadataResponse
        | metadata_v8.MetadataResponse
        | metadata_v9.MetadataResponse
        | metadata_v10.MetadataResponse
        | metadata_v11.MetadataResponse
        | metadata_v12.MetadataResponse
    )

METADATA_RESPONSES: ByVersion[MetadataResponse] = served_responses(ApiKey.METADATA, 0, 12)


# OffsetCommit v2-v9

if TYPE_CHECKING:
    OffsetCommitRequest: TypeAlias = (
        offset_commit_v2.OffsetCommitRequest
        | offset_commit_v3.OffsetCommitRequest
        | offset_commit_v4.OffsetCommitRequest
        | offset_commit_v5.OffsetCommitRequest
        | offset_commit_v6.OffsetCommitRequest
        | offset_commit_v7.OffsetCommitRequest
        | offset_commit_v8.OffsetCommitRequest
        | offset_commit_v9.OffsetCommitRequest
    )
    OffsetCommitResponse: TypeAlias = (
        offset_commit_v2.OffsetCommitResponse
        | offset_commit_v3.OffsetCommitResponse
        | offset_commit_v4.OffsetCommitResponse
        | offset_commit_v5.OffsetCommitResponse
        | offset_commit_v6.OffsetCommitResponse
        | offset_commit_v7.OffsetCommitResponse
        | offset_commit_v8.OffsetCommitResponse
        | offset_commit_v9.OffsetCommitResponse
    )

OFFSET_COMMIT_RESPONSES: ByVersion[OffsetCommitResponse] = served_responses(
    ApiKey.OFFSET_COMMIT, 2, 9
)


# OffsetFetch v1-v9

if TYPE_CHECKING:
    OffsetFetchRequest: TypeAlias = (
        offset_fetch_v1.OffsetFetchRequest
        | offset_fetch_v2.OffsetFetchRequest
        | offset_fetch_v3.OffsetFetchRequest
        | offset_fetch_v4.OffsetFetchRequest
        | offset_fetch_v5.OffsetFetchRequest
        | offset_fetch_v6.OffsetFetchRequest
        | offset_fetch_v7.OffsetFetchRequest
        | offset_fetch_v8.OffsetFetchRequest
        | offset_fetch_v9.OffsetFetchRequest
    )
    OffsetFetchResponse: TypeAlias = (
        offset_fetch_v1.OffsetFetchResponse
        | offset_fetch_v2.OffsetFetchResponse
        | offset_fetch_v3.OffsetFetchResponse
        | offset_fetch_v4.OffsetFetchResponse
        | offset_fetch_v5.OffsetFetchResponse
        | offset_fetch_v6.OffsetFetchResponse
        | offset_fetch_v7.OffsetFetchResponse
        | offset_fetch_v8.OffsetFetchResponse
        | offset_fetch_v9.OffsetFetchResponse
    )

OFFSET_FETCH_RESPONSES: ByVersion[OffsetFetchResponse] = served_responses(ApiKey.OFFSET_FETCH, 1, 9)


# FindCoordinator v0-v6

if TYPE_CHECKING:
    FindCoordinatorRequest: TypeAlias = (
        find_coordinator_v0.FindCoordinatorRequest
        | find_coordinator_v1.FindCoordinatorRequest
        | find_coordinator_v2.FindCoordinatorRequest
        | find_coordinator_v3.FindCoordinatorRequest
        | find_coordinator_v4.FindCoordinatorRequest
        | find_coordinator_v5.FindCoordinatorRequest
        | find_coordinator_v6.FindCoordinatorRequest
    )
    FindCoordinatorResponse: TypeAlias = (
        find_coordinator_v0.FindCoordinatorResponse
        | find_coordinator_v1.FindCoordinatorResponse
        | find_coordinator_v2.FindCoordinatorResponse
        | find_coordinator_v3.FindCoordinatorResponse
        | find_coordinator_v4.FindCoordinatorResponse
        | find_coordinator_v5.FindCoordinatorResponse
        | find_coordinator_v6.FindCoordinatorResponse
    )

FIND_COORDINATOR_RESPONSES: ByVersion[FindCoordinatorResponse] = served_responses(
    ApiKey.FIND_COORDINATOR, 0, 6
)


# JoinGroup v0-v9

if TYPE_CHECKING:
    JoinGroupRequest: TypeAlias = (
        join_group_v0.JoinGroupRequest
        | join_group_v1.JoinGroupRequest
        | join_group_v2.JoinGroupRequest
        | join_group_v3.JoinGroupRequest
        | join_group_v4.JoinGroupRequest
        | join_group_v5.JoinGroupRequest
        | join_group_v6.JoinGroupRequest
        | join_group_v7.JoinGroupRequest
        | join_group_v8.JoinGroupRequest
        | join_group_v9.JoinGroupRequest
    )
    JoinGroupResponse: TypeAlias = (
        join_group_v0.JoinGroupResponse
        | join_group_v1.JoinGroupResponse
        | join_group_v2.JoinGroupResponse
        | join_group_v3.JoinGroupResponse
        | join_group_v4.JoinGroupResponse
        | join_group_v5.JoinGroupResponse
        | join_group_v6.JoinGroupResponse
        | join_group_v7.JoinGroupResponse
        | join_group_v8.JoinGroupResponse
        | join_group_v9.JoinGroupResponse
    )

JOIN_GROUP_RESPONSES: ByVersion[JoinGroupResponse] = served_responses(ApiKey.JOIN_GROUP, 0, 9)


# Heartbeat v0-v4

if TYPE_CHECKING:
    HeartbeatRequest: TypeAlias = (
        heartbeat_v0.HeartbeatRequest
        | heartbeat_v1.HeartbeatRequest
        | heartbeat_v2.HeartbeatRequest
        | heartbeat_v3.HeartbeatRequest
        | heartbeat_v4.HeartbeatRequest
    )
    HeartbeatResponse: TypeAlias = (
        heartbeat_v0.HeartbeatResponse
        | heartbeat_v1.HeartbeatResponse
        | heartbeat_v2.HeartbeatResponse
        | heartbeat_v3.HeartbeatResponse
        | heartbeat_v4.HeartbeatResponse
    )

HEARTBEAT_RESPONSES: ByVersion[HeartbeatResponse] = served_responses(ApiKey.HEARTBEAT, 0, 4)


# LeaveGroup v0-v5

if TYPE_CHECKING:
    LeaveGroupRequest: TypeAlias = (
        leave_group_v0.LeaveGroupRequest
        | leave_group_v1.LeaveGroupRequest
        | leave_group_v2.LeaveGroupRequest
        | leave_group_v3.LeaveGroupRequest
        | leave_group_v4.LeaveGroupRequest
        | leave_group_v5.LeaveGroupRequest
    )
    LeaveGroupResponse: TypeAlias = (
        leave_group_v0.LeaveGroupResponse
        | leave_group_v1.LeaveGroupResponse
        | leave_group_v2.LeaveGroupResponse
        | leave_group_v3.LeaveGroupResponse
        | leave_group_v4.LeaveGroupResponse
        | leave_group_v5.LeaveGroupResponse
    )

LEAVE_GROUP_RESPONSES: ByVersion[LeaveGroupResponse] = served_responses(ApiKey.LEAVE_GROUP, 0, 5)


# SyncGroup v0-v5

if TYPE_CHECKING:
    SyncGroupRequest: TypeAlias = (
        sync_group_v0.SyncGroupRequest
        | sync_group_v1.SyncGroupRequest
        | sync_group_v2.SyncGroupRequest
        | sync_group_v3.SyncGroupRequest
        | sync_group_v4.SyncGroupRequest
        | sync_group_v5.SyncGroupRequest
    )
    SyncGroupResponse: TypeAlias = (
        sync_group_v0.SyncGroupResponse
        | sync_group_v1.SyncGroupResponse
        | sync_group_v2.SyncGroupResponse
        | sync_group_v3.SyncGroupResponse
        | sync_group_v4.SyncGroupResponse
        | sync_group_v5.SyncGroupResponse
    )

SYNC_GROUP_RESPONSES: ByVersion[SyncGroupResponse] = served_responses(ApiKey.SYNC_GROUP, 0, 5)


# DescribeGroups v0-v5

if TYPE_CHECKING:
    DescribeGroupsRequest: TypeAlias = (
        describe_groups_v0.DescribeGroupsRequest
        | describe_groups_v1.DescribeGroupsRequest
        | describe_groups_v2.DescribeGroupsRequest
        | describe_groups_v3.DescribeGroupsRequest
        | describe_groups_v4.DescribeGroupsRequest
        | describe_groups_v5.DescribeGroupsRequest
    )
    DescribeGroupsResponse: TypeAlias = (
        describe_groups_v0.DescribeGroupsResponse
        | describe_groups_v1.DescribeGroupsResponse
        | describe_groups_v2.DescribeGroupsResponse
        | describe_groups_v3.DescribeGroupsResponse
        | describe_groups_v4.DescribeGroupsResponse
        | describe_groups_v5.DescribeGroupsResponse
    )

DESCRIBE_GROUPS_RESPONSES: ByVersion[DescribeGroupsResponse] = served_responses(
    ApiKey.DESCRIBE_GROUPS, 0, 5
)


# ListGroups v0-v5

if TYPE_CHECKING:
    ListGroupsRequest: TypeAlias = (
        list_groups_v0.ListGroupsRequest
        | list_groups_v1.ListGroupsRequest
        | list_groups_v2.ListGroupsRequest
        | list_groups_v3.ListGroupsRequest
        | list_groups_v4.ListGroupsRequest
        | list_groups_v5.ListGroupsRequest
    )
    ListGroupsResponse: TypeAlias = (
        list_groups_v0.ListGroupsResponse
        | list_groups_v1.ListGroupsResponse
        | list_groups_v2.ListGroupsResponse
        | list_groups_v3.ListGroupsResponse
        | list_groups_v4.ListGroupsResponse
        | list_groups_v5.ListGroupsResponse
    )

LIST_GROUPS_RESPONSES: ByVersion[ListGroupsResponse] = served_responses(ApiKey.LIST_GROUPS, 0, 5)


# CreateTopics v2-v7

if TYPE_CHECKING:
    CreateTopicsRequest: TypeAlias = (
        create_topics_v2.CreateTopicsRequest
        | create_topics_v3.CreateTopicsRequest
        | create_topics_v4.CreateTopicsRequest
        | create_topics_v5.CreateTopicsRequest
        | create_topics_v6.CreateTopicsRequest
        | create_topics_v7.CreateTopicsRequest
    )
    CreateTopicsResponse: TypeAlias = (
        create_topics_v2.CreateTopicsResponse
        | create_topics_v3.CreateTopicsResponse
        | create_topics_v4.CreateTopicsResponse
        | create_topics_v5.CreateTopicsResponse
        | create_topics_v6.CreateTopicsResponse
        | create_topics_v7.CreateTopicsResponse
    )

CREATE_TOPICS_REQUESTS: ByVersion[CreateTopicsRequest] = served_requests(ApiKey.CREATE_TOPICS, 2, 7)
CREATE_TOPICS_RESPONSES: ByVersion[CreateTopicsResponse] = served_responses(
    ApiKey.CREATE_TOPICS, 2, 7
)


# DeleteTopics v1-v6

if TYPE_CHECKING:
    DeleteTopicsRequest: TypeAlias = (
        delete_topics_v1.DeleteTopicsRequest
        | delete_topics_v2.DeleteTopicsRequest
        | delete_topics_v3.DeleteTopicsRequest
        | delete_topics_v4.DeleteTopicsRequest
        | delete_topics_v5.DeleteTopicsRequest
        | delete_topics_v6.DeleteTopicsRequest
    )
    DeleteTopicsResponse: TypeAlias = (
        delete_topics_v1.DeleteTopicsResponse
        | delete_topics_v2.DeleteTopicsResponse
        | delete_topics_v3.DeleteTopicsResponse
        | delete_topics_v4.DeleteTopicsResponse
        | delete_topics_v5.DeleteTopicsResponse
        | delete_topics_v6.DeleteTopicsResponse
    )

DELETE_TOPICS_REQUESTS: ByVersion[DeleteTopicsRequest] = served_requests(ApiKey.DELETE_TOPICS, 1, 6)
DELETE_TOPICS_RESPONSES: ByVersion[DeleteTopicsResponse] = served_responses(
    ApiKey.DELETE_TOPICS, 1, 6
)


# DescribeConfigs v1-v4

if TYPE_CHECKING:
    DescribeConfigsRequest: TypeAlias = (
        describe_configs_v1.DescribeConfigsRequest
        | describe_configs_v2.DescribeConfigsRequest
        | describe_configs_v3.DescribeConfigsRequest
        | describe_configs_v4.DescribeConfigsRequest
    )
    DescribeConfigsResponse: TypeAlias = (
        describe_configs_v1.DescribeConfigsResponse
        | describe_configs_v2.DescribeConfigsResponse
        | describe_configs_v3.DescribeConfigsResponse
        | describe_configs_v4.DescribeConfigsResponse
    )

DESCRIBE_CONFIGS_RESPONSES: ByVersion[DescribeConfigsResponse] = served_responses(
    ApiKey.DESCRIBE_CONFIGS, 1, 4
)


# InitProducerId v0-v4

if TYPE_CHECKING:
    InitProducerIdRequest: TypeAlias = (
        init_producer_id_v0.InitProducerIdRequest
        | init_producer_id_v1.InitProducerIdRequest
        | init_producer_id_v2.InitProducerIdRequest
        | init_producer_id_v3.InitProducerIdRequest
        | init_producer_id_v4.InitProducerIdRequest
    )
    InitProducerIdResponse: TypeAlias = (
        init_producer_id_v0.InitProducerIdResponse
        | init_producer_id_v1.InitProducerIdResponse
        | init_producer_id_v2.InitProducerIdResponse
        | init_producer_id_v3.InitProducerIdResponse
        | init_producer_id_v4.InitProducerIdResponse
    )

INIT_PRODUCER_ID_RESPONSES: ByVersion[InitProducerIdResponse] = served_responses(
    ApiKey.INIT_PRODUCER_ID, 0, 4
)


# OffsetForLeaderEpoch v2-v4

if TYPE_CHECKING:
    OffsetForLeaderEpochRequest: TypeAlias = (
        offset_for_leader_epoch_v2.OffsetForLeaderEpochRequest
        | offset_for_leader_epoch_v3.OffsetForLeaderEpochRequest
        | offset_for_leader_epoch_v4.OffsetForLeaderEpochRequest
    )
    OffsetForLeaderEpochResponse: TypeAlias = (
        offset_for_leader_epoch_v2.OffsetForLeaderEpochResponse
        | offset_for_leader_epoch_v3.OffsetForLeaderEpochResponse
        | offset_for_leader_epoch_v4.OffsetForLeaderEpochResponse
    )

OFFSET_FOR_LEADER_EPOCH_RESPONSES: ByVersion[OffsetForLeaderEpochResponse] = served_responses(
    ApiKey.OFFSET_FOR_LEADER_EPOCH, 2, 4
)


# CreatePartitions v0-v3

if TYPE_CHECKING:
    CreatePartitionsRequest: TypeAlias = (
        create_partitions_v0.CreatePartitionsRequest
        | create_partitions_v1.CreatePartitionsRequest
        | create_partitions_v2.CreatePartitionsRequest
        | create_partitions_v3.CreatePartitionsRequest
    )
    CreatePartitionsResponse: TypeAlias = (
        create_partitions_v0.CreatePartitionsResponse
        | create_partitions_v1.CreatePartitionsResponse
        | create_partitions_v2.CreatePartitionsResponse
        | create_partitions_v3.CreatePartitionsResponse
    )

CREATE_PARTITIONS_REQUESTS: ByVersion[CreatePartitionsRequest] = served_requests(
    ApiKey.CREATE_PARTITIONS, 0, 3
)
CREATE_PARTITIONS_RESPONSES: ByVersion[CreatePartitionsResponse] = served_responses(
    ApiKey.CREATE_PARTITIONS, 0, 3
)


# DeleteGroups v0-v2

if TYPE_CHECKING:
    DeleteGroupsRequest: TypeAlias = (
        delete_groups_v0.DeleteGroupsRequest
        | delete_groups_v1.DeleteGroupsRequest
        | delete_groups_v2.DeleteGroupsRequest
    )
    DeleteGroupsResponse: TypeAlias = (
        delete_groups_v0.DeleteGroupsResponse
        | delete_groups_v1.DeleteGroupsResponse
        | delete_groups_v2.DeleteGroupsResponse
    )

DELETE_GROUPS_RESPONSES: ByVersion[DeleteGroupsResponse] = served_responses(
    ApiKey.DELETE_GROUPS, 0, 2
)


# ElectLeaders v0-v2

if TYPE_CHECKING:
    ElectLeadersRequest: TypeAlias = (
        elect_leaders_v0.ElectLeadersRequest
        | elect_leaders_v1.ElectLeadersRequest
        | elect_leaders_v2.ElectLeadersRequest
    )
    ElectLeadersResponse: TypeAlias = (
        elect_leaders_v0.ElectLeadersResponse
        | elect_leaders_v1.ElectLeadersResponse
        | elect_leaders_v2.ElectLeadersResponse
    )

ELECT_LEADERS_REQUESTS: ByVersion[ElectLeadersRequest] = served_requests(ApiKey.ELECT_LEADERS, 0, 2)
ELECT_LEADERS_RESPONSES: ByVersion[ElectLeadersResponse] = served_responses(
    ApiKey.ELECT_LEADERS, 0, 2
)


# IncrementalAlterConfigs v0-v1

if TYPE_CHECKING:
    IncrementalAlterConfigsRequest: TypeAlias = (
        incremental_alter_configs_v0.IncrementalAlterConfigsRequest
        | incremental_alter_configs_v1.IncrementalAlterConfigsRequest
    )
    IncrementalAlterConfigsResponse: TypeAlias = (
        incremental_alter_configs_v0.IncrementalAlterConfigsResponse
        | incremental_alter_configs_v1.IncrementalAlterConfigsResponse
    )

INCREMENTAL_ALTER_CONFIGS_REQUESTS: ByVersion[IncrementalAlterConfigsRequest] = served_requests(
    ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, 1
)
INCREMENTAL_ALTER_CONFIGS_RESPONSES: ByVersion[IncrementalAlterConfigsResponse] = served_responses(
    ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, 1
)


# OffsetDelete v0

if TYPE_CHECKING:
    OffsetDeleteRequest: TypeAlias = offset_delete_v0.OffsetDeleteRequest
    OffsetDeleteResponse: TypeAlias = offset_delete_v0.OffsetDeleteResponse

OFFSET_DELETE_RESPONSES: ByVersion[OffsetDeleteResponse] = served_responses(
    ApiKey.OFFSET_DELETE, 0, 0
)


# AlterPartition v2-v3

if TYPE_CHECKING:
    AlterPartitionRequest: TypeAlias = (
        alter_partition_v2.AlterPartitionRequest | alter_partition_v3.AlterPartitionRequest
    )
    AlterPartitionResponse: TypeAlias = (
        alter_partition_v2.AlterPartitionResponse | alter_partition_v3.AlterPartitionResponse
    )

ALTER_PARTITION_REQUESTS: ByVersion[AlterPartitionRequest] = served_requests(
    ApiKey.ALTER_PARTITION, 2, 3
)
ALTER_PARTITION_RESPONSES: ByVersion[AlterPartitionResponse] = served_responses(
    ApiKey.ALTER_PARTITION, 2, 3
)


# DescribeCluster v0-v1

if TYPE_CHECKING:
    DescribeClusterRequest: TypeAlias = (
        describe_cluster_v0.DescribeClusterRequest | describe_cluster_v1.DescribeClusterRequest
    )
    DescribeClusterResponse: TypeAlias = (
        describe_cluster_v0.DescribeClusterResponse | describe_cluster_v1.DescribeClusterResponse
    )

DESCRIBE_CLUSTER_RESPONSES: ByVersion[DescribeClusterResponse] = served_responses(
    ApiKey.DESCRIBE_CLUSTER, 0, 1
)


# BrokerRegistration v0-v4

if TYPE_CHECKING:
    BrokerRegistrationRequest: TypeAlias = (
        broker_registration_v0.BrokerRegistrationRequest
        | broker_registration_v1.BrokerRegistrationRequest
        | broker_registration_v2.BrokerRegistrationRequest
        | broker_registration_v3.BrokerRegistrationRequest
        | broker_registration_v4.BrokerRegistrationRequest
    )
    BrokerRegistrationResponse: TypeAlias = (
        broker_registration_v0.BrokerRegistrationResponse
        | broker_registration_v1.BrokerRegistrationResponse
        | broker_registration_v2.BrokerRegistrationResponse
        | broker_registration_v3.BrokerRegistrationResponse
        | broker_registration_v4.BrokerRegistrationResponse
    )

BROKER_REGISTRATION_REQUESTS: ByVersion[BrokerRegistrationRequest] = served_requests(
    ApiKey.BROKER_REGISTRATION, 0, 4
)
BROKER_REGISTRATION_RESPONSES: ByVersion[BrokerRegistrationResponse] = served_responses(
    ApiKey.BROKER_REGISTRATION, 0, 4
)


# BrokerHeartbeat v0-v2

if TYPE_CHECKING:
    BrokerHeartbeatRequest: TypeAlias = (
        broker_heartbeat_v0.BrokerHeartbeatRequest
        | broker_heartbeat_v1.BrokerHeartbeatRequest
        | broker_heartbeat_v2.BrokerHeartbeatRequest
    )
    BrokerHeartbeatResponse: TypeAlias = (
        broker_heartbeat_v0.BrokerHeartbeatResponse
        | broker_heartbeat_v1.BrokerHeartbeatResponse
        | broker_heartbeat_v2.BrokerHeartbeatResponse
    )

BROKER_HEARTBEAT_REQUESTS: ByVersion[BrokerHeartbeatRequest] = served_requests(
    ApiKey.BROKER_HEARTBEAT, 0, 2
)
BROKER_HEARTBEAT_RESPONSES: ByVersion[BrokerHeartbeatResponse] = served_responses(
    ApiKey.BROKER_HEARTBEAT, 0, 2
)


# AllocateProducerIds v0

if TYPE_CHECKING:
    AllocateProducerIdsRequest: TypeAlias = allocate_producer_ids_v0.AllocateProducerIdsRequest
    AllocateProducerIdsResponse: TypeAlias = allocate_producer_ids_v0.AllocateProducerIdsResponse

ALLOCATE_PRODUCER_IDS_REQUESTS: ByVersion[AllocateProducerIdsRequest] = served_requests(
    ApiKey.ALLOCATE_PRODUCER_IDS, 0, 0
)
ALLOCATE_PRODUCER_IDS_RESPONSES: ByVersion[AllocateProducerIdsResponse] = served_responses(
    ApiKey.ALLOCATE_PRODUCER_IDS, 0, 0
)


# AlterPartitionReassignments v0-v1

if TYPE_CHECKING:
    AlterPartitionReassignmentsRequest: TypeAlias = (
        alter_partition_reassignments_v0.AlterPartitionReassignmentsRequest
        | alter_partition_reassignments_v1.AlterPartitionReassignmentsRequest
    )
    AlterPartitionReassignmentsResponse: TypeAlias = (
        alter_partition_reassignments_v0.AlterPartitionReassignmentsResponse
        | alter_partition_reassignments_v1.AlterPartitionReassignmentsResponse
    )

ALTER_PARTITION_REASSIGNMENTS_REQUESTS: ByVersion[AlterPartitionReassignmentsRequest] = (
    served_requests(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, 1)
)
ALTER_PARTITION_REASSIGNMENTS_RESPONSES: ByVersion[AlterPartitionReassignmentsResponse] = (
    served_responses(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, 1)
)


# ListPartitionReassignments v0

if TYPE_CHECKING:
    ListPartitionReassignmentsRequest: TypeAlias = (
        list_partition_reassignments_v0.ListPartitionReassignmentsRequest
    )
    ListPartitionReassignmentsResponse: TypeAlias = (
        list_partition_reassignments_v0.ListPartitionReassignmentsResponse
    )

LIST_PARTITION_REASSIGNMENTS_REQUESTS: ByVersion[ListPartitionReassignmentsRequest] = (
    served_requests(ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, 0)
)
LIST_PARTITION_REASSIGNMENTS_RESPONSES: ByVersion[ListPartitionReassignmentsResponse] = (
    served_responses(ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, 0)
)


# AlterUserScramCredentials v0

if TYPE_CHECKING:
    AlterUserScramCredentialsRequest: TypeAlias = (
        alter_user_scram_credentials_v0.AlterUserScramCredentialsRequest
    )
    AlterUserScramCredentialsResponse: TypeAlias = (
        alter_user_scram_credentials_v0.AlterUserScramCredentialsResponse
    )

ALTER_USER_SCRAM_CREDENTIALS_REQUESTS: ByVersion[AlterUserScramCredentialsRequest] = (
    served_requests(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, 0)
)
ALTER_USER_SCRAM_CREDENTIALS_RESPONSES: ByVersion[AlterUserScramCredentialsResponse] = (
    served_responses(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, 0)
)


# DescribeUserScramCredentials v0

if TYPE_CHECKING:
    DescribeUserScramCredentialsRequest: TypeAlias = (
        describe_user_scram_credentials_v0.DescribeUserScramCredentialsRequest
    )
    DescribeUserScramCredentialsResponse: TypeAlias = (
        describe_user_scram_credentials_v0.DescribeUserScramCredentialsResponse
    )

DESCRIBE_USER_SCRAM_CREDENTIALS_REQUESTS: ByVersion[DescribeUserScramCredentialsRequest] = (
    served_requests(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, 0)
)
DESCRIBE_USER_SCRAM_CREDENTIALS_RESPONSES: ByVersion[DescribeUserScramCredentialsResponse] = (
    served_responses(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, 0)
)


# UnregisterBroker v0

if TYPE_CHECKING:
    UnregisterBrokerRequest: TypeAlias = unregister_broker_v0.UnregisterBrokerRequest
    UnregisterBrokerResponse: TypeAlias = unregister_broker_v0.UnregisterBrokerResponse

UNREGISTER_BROKER_REQUESTS: ByVersion[UnregisterBrokerRequest] = served_requests(
    ApiKey.UNREGISTER_BROKER, 0, 0
)
UNREGISTER_BROKER_RESPONSES: ByVersion[UnregisterBrokerResponse] = served_responses(
    ApiKey.UNREGISTER_BROKER, 0, 0
)


# DeleteRecords v0-v2

if TYPE_CHECKING:
    DeleteRecordsRequest: TypeAlias = (
        delete_records_v0.DeleteRecordsRequest
        | delete_records_v1.DeleteRecordsRequest
        | delete_records_v2.DeleteRecordsRequest
    )
    DeleteRecordsResponse: TypeAlias = (
        delete_records_v0.DeleteRecordsResponse
        | delete_records_v1.DeleteRecordsResponse
        | delete_records_v2.DeleteRecordsResponse
    )

DELETE_RECORDS_RESPONSES: ByVersion[DeleteRecordsResponse] = served_responses(
    ApiKey.DELETE_RECORDS, 0, 2
)


# DescribeLogDirs v1-v4

if TYPE_CHECKING:
    DescribeLogDirsRequest: TypeAlias = (
        describe_log_dirs_v1.DescribeLogDirsRequest
        | describe_log_dirs_v2.DescribeLogDirsRequest
        | describe_log_dirs_v3.DescribeLogDirsRequest
        | describe_log_dirs_v4.DescribeLogDirsRequest
    )
    DescribeLogDirsResponse: TypeAlias = (
        describe_log_dirs_v1.DescribeLogDirsResponse
        | describe_log_dirs_v2.DescribeLogDirsResponse
        | describe_log_dirs_v3.DescribeLogDirsResponse
        | describe_log_dirs_v4.DescribeLogDirsResponse
    )

DESCRIBE_LOG_DIRS_RESPONSES: ByVersion[DescribeLogDirsResponse] = served_responses(
    ApiKey.DESCRIBE_LOG_DIRS, 1, 4
)


# DescribeProducers v0-v0

if TYPE_CHECKING:
    DescribeProducersRequest: TypeAlias = describe_producers_v0.DescribeProducersRequest
    DescribeProducersResponse: TypeAlias = describe_producers_v0.DescribeProducersResponse

DESCRIBE_PRODUCERS_RESPONSES: ByVersion[DescribeProducersResponse] = served_responses(
    ApiKey.DESCRIBE_PRODUCERS, 0, 0
)


# AlterConfigs v0-v2

if TYPE_CHECKING:
    AlterConfigsRequest: TypeAlias = (
        alter_configs_v0.AlterConfigsRequest
        | alter_configs_v1.AlterConfigsRequest
        | alter_configs_v2.AlterConfigsRequest
    )
    AlterConfigsResponse: TypeAlias = (
        alter_configs_v0.AlterConfigsResponse
        | alter_configs_v1.AlterConfigsResponse
        | alter_configs_v2.AlterConfigsResponse
    )

ALTER_CONFIGS_REQUESTS: ByVersion[AlterConfigsRequest] = served_requests(ApiKey.ALTER_CONFIGS, 0, 2)
ALTER_CONFIGS_RESPONSES: ByVersion[AlterConfigsResponse] = served_responses(
    ApiKey.ALTER_CONFIGS, 0, 2
)


# CreateAcls v1-v3

if TYPE_CHECKING:
    CreateAclsRequest: TypeAlias = (
        create_acls_v1.CreateAclsRequest
        | create_acls_v2.CreateAclsRequest
        | create_acls_v3.CreateAclsRequest
    )
    CreateAclsResponse: TypeAlias = (
        create_acls_v1.CreateAclsResponse
        | create_acls_v2.CreateAclsResponse
        | create_acls_v3.CreateAclsResponse
    )

CREATE_ACLS_RESPONSES: ByVersion[CreateAclsResponse] = served_responses(ApiKey.CREATE_ACLS, 1, 3)


# DescribeAcls v1-v3

if TYPE_CHECKING:
    DescribeAclsRequest: TypeAlias = (
        describe_acls_v1.DescribeAclsRequest
        | describe_acls_v2.DescribeAclsRequest
        | describe_acls_v3.DescribeAclsRequest
    )
    DescribeAclsResponse: TypeAlias = (
        describe_acls_v1.DescribeAclsResponse
        | describe_acls_v2.DescribeAclsResponse
        | describe_acls_v3.DescribeAclsResponse
    )

DESCRIBE_ACLS_RESPONSES: ByVersion[DescribeAclsResponse] = served_responses(
    ApiKey.DESCRIBE_ACLS, 1, 3
)


# DeleteAcls v1-v3

if TYPE_CHECKING:
    DeleteAclsRequest: TypeAlias = (
        delete_acls_v1.DeleteAclsRequest
        | delete_acls_v2.DeleteAclsRequest
        | delete_acls_v3.DeleteAclsRequest
    )
    DeleteAclsResponse: TypeAlias = (
        delete_acls_v1.DeleteAclsResponse
        | delete_acls_v2.DeleteAclsResponse
        | delete_acls_v3.DeleteAclsResponse
    )

DELETE_ACLS_RESPONSES: ByVersion[DeleteAclsResponse] = served_responses(ApiKey.DELETE_ACLS, 1, 3)

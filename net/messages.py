"""Kafka's request and response messages as types: per API, the union of kio's classes over
the versions this node serves.

kio generates one class per message version. Handlers that serve several versions take the
union named after the message (`FetchRequest` is Fetch v4 | ... | v16) and narrow it with
`isinstance` where versions differ in fields; the `..._RESPONSES` (and, for the APIs this node
also sends, `..._REQUESTS`) mappings give the class of each served version, so a message built
for the version asked for keeps its type, and `nested_type` the classes of its nested entities.
The version ranges are the served ones, which a test holds equal to the ranges each handler
registers.
"""

from collections.abc import Mapping
from types import MappingProxyType
from typing import TypeAlias, TypeVar

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
from kio.static.protocol import Payload

from net.protocol import field_entity_type

_Message = TypeVar("_Message", bound=Payload)

ByVersion: TypeAlias = Mapping[int, type[_Message]]
"""The class of a message at each version served."""


def _by_version(*classes: type[_Message]) -> ByVersion[_Message]:
    return MappingProxyType({message.__version__: message for message in classes})


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

PRODUCE_RESPONSES: ByVersion[ProduceResponse] = _by_version(
    produce_v3.ProduceResponse,
    produce_v4.ProduceResponse,
    produce_v5.ProduceResponse,
    produce_v6.ProduceResponse,
    produce_v7.ProduceResponse,
    produce_v8.ProduceResponse,
    produce_v9.ProduceResponse,
    produce_v10.ProduceResponse,
)


# Fetch v4-v16

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

FETCH_RESPONSES: ByVersion[FetchResponse] = _by_version(
    fetch_v4.FetchResponse,
    fetch_v5.FetchResponse,
    fetch_v6.FetchResponse,
    fetch_v7.FetchResponse,
    fetch_v8.FetchResponse,
    fetch_v9.FetchResponse,
    fetch_v10.FetchResponse,
    fetch_v11.FetchResponse,
    fetch_v12.FetchResponse,
    fetch_v13.FetchResponse,
    fetch_v14.FetchResponse,
    fetch_v15.FetchResponse,
    fetch_v16.FetchResponse,
)


# ListOffsets v1-v10

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

LIST_OFFSETS_RESPONSES: ByVersion[ListOffsetsResponse] = _by_version(
    list_offsets_v1.ListOffsetsResponse,
    list_offsets_v2.ListOffsetsResponse,
    list_offsets_v3.ListOffsetsResponse,
    list_offsets_v4.ListOffsetsResponse,
    list_offsets_v5.ListOffsetsResponse,
    list_offsets_v6.ListOffsetsResponse,
    list_offsets_v7.ListOffsetsResponse,
    list_offsets_v8.ListOffsetsResponse,
    list_offsets_v9.ListOffsetsResponse,
    list_offsets_v10.ListOffsetsResponse,
)


# Metadata v0-v12

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

METADATA_RESPONSES: ByVersion[MetadataResponse] = _by_version(
    metadata_v0.MetadataResponse,
    metadata_v1.MetadataResponse,
    metadata_v2.MetadataResponse,
    metadata_v3.MetadataResponse,
    metadata_v4.MetadataResponse,
    metadata_v5.MetadataResponse,
    metadata_v6.MetadataResponse,
    metadata_v7.MetadataResponse,
    metadata_v8.MetadataResponse,
    metadata_v9.MetadataResponse,
    metadata_v10.MetadataResponse,
    metadata_v11.MetadataResponse,
    metadata_v12.MetadataResponse,
)


# OffsetCommit v2-v9

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

OFFSET_COMMIT_RESPONSES: ByVersion[OffsetCommitResponse] = _by_version(
    offset_commit_v2.OffsetCommitResponse,
    offset_commit_v3.OffsetCommitResponse,
    offset_commit_v4.OffsetCommitResponse,
    offset_commit_v5.OffsetCommitResponse,
    offset_commit_v6.OffsetCommitResponse,
    offset_commit_v7.OffsetCommitResponse,
    offset_commit_v8.OffsetCommitResponse,
    offset_commit_v9.OffsetCommitResponse,
)


# OffsetFetch v1-v9

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

OFFSET_FETCH_RESPONSES: ByVersion[OffsetFetchResponse] = _by_version(
    offset_fetch_v1.OffsetFetchResponse,
    offset_fetch_v2.OffsetFetchResponse,
    offset_fetch_v3.OffsetFetchResponse,
    offset_fetch_v4.OffsetFetchResponse,
    offset_fetch_v5.OffsetFetchResponse,
    offset_fetch_v6.OffsetFetchResponse,
    offset_fetch_v7.OffsetFetchResponse,
    offset_fetch_v8.OffsetFetchResponse,
    offset_fetch_v9.OffsetFetchResponse,
)


# FindCoordinator v0-v6

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

FIND_COORDINATOR_RESPONSES: ByVersion[FindCoordinatorResponse] = _by_version(
    find_coordinator_v0.FindCoordinatorResponse,
    find_coordinator_v1.FindCoordinatorResponse,
    find_coordinator_v2.FindCoordinatorResponse,
    find_coordinator_v3.FindCoordinatorResponse,
    find_coordinator_v4.FindCoordinatorResponse,
    find_coordinator_v5.FindCoordinatorResponse,
    find_coordinator_v6.FindCoordinatorResponse,
)


# JoinGroup v0-v9

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

JOIN_GROUP_RESPONSES: ByVersion[JoinGroupResponse] = _by_version(
    join_group_v0.JoinGroupResponse,
    join_group_v1.JoinGroupResponse,
    join_group_v2.JoinGroupResponse,
    join_group_v3.JoinGroupResponse,
    join_group_v4.JoinGroupResponse,
    join_group_v5.JoinGroupResponse,
    join_group_v6.JoinGroupResponse,
    join_group_v7.JoinGroupResponse,
    join_group_v8.JoinGroupResponse,
    join_group_v9.JoinGroupResponse,
)


# Heartbeat v0-v4

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

HEARTBEAT_RESPONSES: ByVersion[HeartbeatResponse] = _by_version(
    heartbeat_v0.HeartbeatResponse,
    heartbeat_v1.HeartbeatResponse,
    heartbeat_v2.HeartbeatResponse,
    heartbeat_v3.HeartbeatResponse,
    heartbeat_v4.HeartbeatResponse,
)


# LeaveGroup v0-v5

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

LEAVE_GROUP_RESPONSES: ByVersion[LeaveGroupResponse] = _by_version(
    leave_group_v0.LeaveGroupResponse,
    leave_group_v1.LeaveGroupResponse,
    leave_group_v2.LeaveGroupResponse,
    leave_group_v3.LeaveGroupResponse,
    leave_group_v4.LeaveGroupResponse,
    leave_group_v5.LeaveGroupResponse,
)


# SyncGroup v0-v5

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

SYNC_GROUP_RESPONSES: ByVersion[SyncGroupResponse] = _by_version(
    sync_group_v0.SyncGroupResponse,
    sync_group_v1.SyncGroupResponse,
    sync_group_v2.SyncGroupResponse,
    sync_group_v3.SyncGroupResponse,
    sync_group_v4.SyncGroupResponse,
    sync_group_v5.SyncGroupResponse,
)


# DescribeGroups v0-v5

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

DESCRIBE_GROUPS_RESPONSES: ByVersion[DescribeGroupsResponse] = _by_version(
    describe_groups_v0.DescribeGroupsResponse,
    describe_groups_v1.DescribeGroupsResponse,
    describe_groups_v2.DescribeGroupsResponse,
    describe_groups_v3.DescribeGroupsResponse,
    describe_groups_v4.DescribeGroupsResponse,
    describe_groups_v5.DescribeGroupsResponse,
)


# ListGroups v0-v5

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

LIST_GROUPS_RESPONSES: ByVersion[ListGroupsResponse] = _by_version(
    list_groups_v0.ListGroupsResponse,
    list_groups_v1.ListGroupsResponse,
    list_groups_v2.ListGroupsResponse,
    list_groups_v3.ListGroupsResponse,
    list_groups_v4.ListGroupsResponse,
    list_groups_v5.ListGroupsResponse,
)


# CreateTopics v2-v7

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

CREATE_TOPICS_REQUESTS: ByVersion[CreateTopicsRequest] = _by_version(
    create_topics_v2.CreateTopicsRequest,
    create_topics_v3.CreateTopicsRequest,
    create_topics_v4.CreateTopicsRequest,
    create_topics_v5.CreateTopicsRequest,
    create_topics_v6.CreateTopicsRequest,
    create_topics_v7.CreateTopicsRequest,
)

CREATE_TOPICS_RESPONSES: ByVersion[CreateTopicsResponse] = _by_version(
    create_topics_v2.CreateTopicsResponse,
    create_topics_v3.CreateTopicsResponse,
    create_topics_v4.CreateTopicsResponse,
    create_topics_v5.CreateTopicsResponse,
    create_topics_v6.CreateTopicsResponse,
    create_topics_v7.CreateTopicsResponse,
)


# DeleteTopics v1-v6

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

DELETE_TOPICS_REQUESTS: ByVersion[DeleteTopicsRequest] = _by_version(
    delete_topics_v1.DeleteTopicsRequest,
    delete_topics_v2.DeleteTopicsRequest,
    delete_topics_v3.DeleteTopicsRequest,
    delete_topics_v4.DeleteTopicsRequest,
    delete_topics_v5.DeleteTopicsRequest,
    delete_topics_v6.DeleteTopicsRequest,
)

DELETE_TOPICS_RESPONSES: ByVersion[DeleteTopicsResponse] = _by_version(
    delete_topics_v1.DeleteTopicsResponse,
    delete_topics_v2.DeleteTopicsResponse,
    delete_topics_v3.DeleteTopicsResponse,
    delete_topics_v4.DeleteTopicsResponse,
    delete_topics_v5.DeleteTopicsResponse,
    delete_topics_v6.DeleteTopicsResponse,
)


# DescribeConfigs v1-v4

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

DESCRIBE_CONFIGS_RESPONSES: ByVersion[DescribeConfigsResponse] = _by_version(
    describe_configs_v1.DescribeConfigsResponse,
    describe_configs_v2.DescribeConfigsResponse,
    describe_configs_v3.DescribeConfigsResponse,
    describe_configs_v4.DescribeConfigsResponse,
)


# InitProducerId v0-v4

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

INIT_PRODUCER_ID_RESPONSES: ByVersion[InitProducerIdResponse] = _by_version(
    init_producer_id_v0.InitProducerIdResponse,
    init_producer_id_v1.InitProducerIdResponse,
    init_producer_id_v2.InitProducerIdResponse,
    init_producer_id_v3.InitProducerIdResponse,
    init_producer_id_v4.InitProducerIdResponse,
)


# OffsetForLeaderEpoch v2-v4

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

OFFSET_FOR_LEADER_EPOCH_RESPONSES: ByVersion[OffsetForLeaderEpochResponse] = _by_version(
    offset_for_leader_epoch_v2.OffsetForLeaderEpochResponse,
    offset_for_leader_epoch_v3.OffsetForLeaderEpochResponse,
    offset_for_leader_epoch_v4.OffsetForLeaderEpochResponse,
)


# CreatePartitions v0-v3

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

CREATE_PARTITIONS_REQUESTS: ByVersion[CreatePartitionsRequest] = _by_version(
    create_partitions_v0.CreatePartitionsRequest,
    create_partitions_v1.CreatePartitionsRequest,
    create_partitions_v2.CreatePartitionsRequest,
    create_partitions_v3.CreatePartitionsRequest,
)

CREATE_PARTITIONS_RESPONSES: ByVersion[CreatePartitionsResponse] = _by_version(
    create_partitions_v0.CreatePartitionsResponse,
    create_partitions_v1.CreatePartitionsResponse,
    create_partitions_v2.CreatePartitionsResponse,
    create_partitions_v3.CreatePartitionsResponse,
)


# DeleteGroups v0-v2

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

DELETE_GROUPS_RESPONSES: ByVersion[DeleteGroupsResponse] = _by_version(
    delete_groups_v0.DeleteGroupsResponse,
    delete_groups_v1.DeleteGroupsResponse,
    delete_groups_v2.DeleteGroupsResponse,
)


# ElectLeaders v0-v2

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

ELECT_LEADERS_REQUESTS: ByVersion[ElectLeadersRequest] = _by_version(
    elect_leaders_v0.ElectLeadersRequest,
    elect_leaders_v1.ElectLeadersRequest,
    elect_leaders_v2.ElectLeadersRequest,
)

ELECT_LEADERS_RESPONSES: ByVersion[ElectLeadersResponse] = _by_version(
    elect_leaders_v0.ElectLeadersResponse,
    elect_leaders_v1.ElectLeadersResponse,
    elect_leaders_v2.ElectLeadersResponse,
)


# IncrementalAlterConfigs v0-v1

IncrementalAlterConfigsRequest: TypeAlias = (
    incremental_alter_configs_v0.IncrementalAlterConfigsRequest
    | incremental_alter_configs_v1.IncrementalAlterConfigsRequest
)

IncrementalAlterConfigsResponse: TypeAlias = (
    incremental_alter_configs_v0.IncrementalAlterConfigsResponse
    | incremental_alter_configs_v1.IncrementalAlterConfigsResponse
)

INCREMENTAL_ALTER_CONFIGS_REQUESTS: ByVersion[IncrementalAlterConfigsRequest] = _by_version(
    incremental_alter_configs_v0.IncrementalAlterConfigsRequest,
    incremental_alter_configs_v1.IncrementalAlterConfigsRequest,
)

INCREMENTAL_ALTER_CONFIGS_RESPONSES: ByVersion[IncrementalAlterConfigsResponse] = _by_version(
    incremental_alter_configs_v0.IncrementalAlterConfigsResponse,
    incremental_alter_configs_v1.IncrementalAlterConfigsResponse,
)


# OffsetDelete v0

OffsetDeleteRequest: TypeAlias = offset_delete_v0.OffsetDeleteRequest

OffsetDeleteResponse: TypeAlias = offset_delete_v0.OffsetDeleteResponse

OFFSET_DELETE_RESPONSES: ByVersion[OffsetDeleteResponse] = _by_version(
    offset_delete_v0.OffsetDeleteResponse,
)


# AlterPartition v2-v3

AlterPartitionRequest: TypeAlias = (
    alter_partition_v2.AlterPartitionRequest | alter_partition_v3.AlterPartitionRequest
)

AlterPartitionResponse: TypeAlias = (
    alter_partition_v2.AlterPartitionResponse | alter_partition_v3.AlterPartitionResponse
)

ALTER_PARTITION_REQUESTS: ByVersion[AlterPartitionRequest] = _by_version(
    alter_partition_v2.AlterPartitionRequest,
    alter_partition_v3.AlterPartitionRequest,
)

ALTER_PARTITION_RESPONSES: ByVersion[AlterPartitionResponse] = _by_version(
    alter_partition_v2.AlterPartitionResponse,
    alter_partition_v3.AlterPartitionResponse,
)


# DescribeCluster v0-v1

DescribeClusterRequest: TypeAlias = (
    describe_cluster_v0.DescribeClusterRequest | describe_cluster_v1.DescribeClusterRequest
)

DescribeClusterResponse: TypeAlias = (
    describe_cluster_v0.DescribeClusterResponse | describe_cluster_v1.DescribeClusterResponse
)

DESCRIBE_CLUSTER_RESPONSES: ByVersion[DescribeClusterResponse] = _by_version(
    describe_cluster_v0.DescribeClusterResponse,
    describe_cluster_v1.DescribeClusterResponse,
)


# BrokerRegistration v0-v4

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

BROKER_REGISTRATION_REQUESTS: ByVersion[BrokerRegistrationRequest] = _by_version(
    broker_registration_v0.BrokerRegistrationRequest,
    broker_registration_v1.BrokerRegistrationRequest,
    broker_registration_v2.BrokerRegistrationRequest,
    broker_registration_v3.BrokerRegistrationRequest,
    broker_registration_v4.BrokerRegistrationRequest,
)

BROKER_REGISTRATION_RESPONSES: ByVersion[BrokerRegistrationResponse] = _by_version(
    broker_registration_v0.BrokerRegistrationResponse,
    broker_registration_v1.BrokerRegistrationResponse,
    broker_registration_v2.BrokerRegistrationResponse,
    broker_registration_v3.BrokerRegistrationResponse,
    broker_registration_v4.BrokerRegistrationResponse,
)


# BrokerHeartbeat v0-v2

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

BROKER_HEARTBEAT_REQUESTS: ByVersion[BrokerHeartbeatRequest] = _by_version(
    broker_heartbeat_v0.BrokerHeartbeatRequest,
    broker_heartbeat_v1.BrokerHeartbeatRequest,
    broker_heartbeat_v2.BrokerHeartbeatRequest,
)

BROKER_HEARTBEAT_RESPONSES: ByVersion[BrokerHeartbeatResponse] = _by_version(
    broker_heartbeat_v0.BrokerHeartbeatResponse,
    broker_heartbeat_v1.BrokerHeartbeatResponse,
    broker_heartbeat_v2.BrokerHeartbeatResponse,
)


# AllocateProducerIds v0

AllocateProducerIdsRequest: TypeAlias = allocate_producer_ids_v0.AllocateProducerIdsRequest

AllocateProducerIdsResponse: TypeAlias = allocate_producer_ids_v0.AllocateProducerIdsResponse

ALLOCATE_PRODUCER_IDS_REQUESTS: ByVersion[AllocateProducerIdsRequest] = _by_version(
    allocate_producer_ids_v0.AllocateProducerIdsRequest,
)

ALLOCATE_PRODUCER_IDS_RESPONSES: ByVersion[AllocateProducerIdsResponse] = _by_version(
    allocate_producer_ids_v0.AllocateProducerIdsResponse,
)


# AlterPartitionReassignments v0-v1

AlterPartitionReassignmentsRequest: TypeAlias = (
    alter_partition_reassignments_v0.AlterPartitionReassignmentsRequest
    | alter_partition_reassignments_v1.AlterPartitionReassignmentsRequest
)

AlterPartitionReassignmentsResponse: TypeAlias = (
    alter_partition_reassignments_v0.AlterPartitionReassignmentsResponse
    | alter_partition_reassignments_v1.AlterPartitionReassignmentsResponse
)

ALTER_PARTITION_REASSIGNMENTS_REQUESTS: ByVersion[AlterPartitionReassignmentsRequest] = _by_version(
    alter_partition_reassignments_v0.AlterPartitionReassignmentsRequest,
    alter_partition_reassignments_v1.AlterPartitionReassignmentsRequest,
)

ALTER_PARTITION_REASSIGNMENTS_RESPONSES: ByVersion[AlterPartitionReassignmentsResponse] = (
    _by_version(
        alter_partition_reassignments_v0.AlterPartitionReassignmentsResponse,
        alter_partition_reassignments_v1.AlterPartitionReassignmentsResponse,
    )
)


# ListPartitionReassignments v0

ListPartitionReassignmentsRequest: TypeAlias = (
    list_partition_reassignments_v0.ListPartitionReassignmentsRequest
)

ListPartitionReassignmentsResponse: TypeAlias = (
    list_partition_reassignments_v0.ListPartitionReassignmentsResponse
)

LIST_PARTITION_REASSIGNMENTS_REQUESTS: ByVersion[ListPartitionReassignmentsRequest] = _by_version(
    list_partition_reassignments_v0.ListPartitionReassignmentsRequest,
)

LIST_PARTITION_REASSIGNMENTS_RESPONSES: ByVersion[ListPartitionReassignmentsResponse] = _by_version(
    list_partition_reassignments_v0.ListPartitionReassignmentsResponse,
)


# AlterUserScramCredentials v0

AlterUserScramCredentialsRequest: TypeAlias = (
    alter_user_scram_credentials_v0.AlterUserScramCredentialsRequest
)

AlterUserScramCredentialsResponse: TypeAlias = (
    alter_user_scram_credentials_v0.AlterUserScramCredentialsResponse
)

ALTER_USER_SCRAM_CREDENTIALS_REQUESTS: ByVersion[AlterUserScramCredentialsRequest] = _by_version(
    alter_user_scram_credentials_v0.AlterUserScramCredentialsRequest,
)

ALTER_USER_SCRAM_CREDENTIALS_RESPONSES: ByVersion[AlterUserScramCredentialsResponse] = _by_version(
    alter_user_scram_credentials_v0.AlterUserScramCredentialsResponse
)


# DescribeUserScramCredentials v0

DescribeUserScramCredentialsRequest: TypeAlias = (
    describe_user_scram_credentials_v0.DescribeUserScramCredentialsRequest
)

DescribeUserScramCredentialsResponse: TypeAlias = (
    describe_user_scram_credentials_v0.DescribeUserScramCredentialsResponse
)

DESCRIBE_USER_SCRAM_CREDENTIALS_REQUESTS: ByVersion[DescribeUserScramCredentialsRequest] = (
    _by_version(describe_user_scram_credentials_v0.DescribeUserScramCredentialsRequest)
)

DESCRIBE_USER_SCRAM_CREDENTIALS_RESPONSES: ByVersion[DescribeUserScramCredentialsResponse] = (
    _by_version(describe_user_scram_credentials_v0.DescribeUserScramCredentialsResponse)
)


# UnregisterBroker v0

UnregisterBrokerRequest: TypeAlias = unregister_broker_v0.UnregisterBrokerRequest

UnregisterBrokerResponse: TypeAlias = unregister_broker_v0.UnregisterBrokerResponse

UNREGISTER_BROKER_REQUESTS: ByVersion[UnregisterBrokerRequest] = _by_version(
    unregister_broker_v0.UnregisterBrokerRequest,
)

UNREGISTER_BROKER_RESPONSES: ByVersion[UnregisterBrokerResponse] = _by_version(
    unregister_broker_v0.UnregisterBrokerResponse,
)


# DeleteRecords v0-v2

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

DELETE_RECORDS_RESPONSES: ByVersion[DeleteRecordsResponse] = _by_version(
    delete_records_v0.DeleteRecordsResponse,
    delete_records_v1.DeleteRecordsResponse,
    delete_records_v2.DeleteRecordsResponse,
)


# DescribeLogDirs v1-v4

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

DESCRIBE_LOG_DIRS_RESPONSES: ByVersion[DescribeLogDirsResponse] = _by_version(
    describe_log_dirs_v1.DescribeLogDirsResponse,
    describe_log_dirs_v2.DescribeLogDirsResponse,
    describe_log_dirs_v3.DescribeLogDirsResponse,
    describe_log_dirs_v4.DescribeLogDirsResponse,
)


# DescribeProducers v0-v0

DescribeProducersRequest: TypeAlias = describe_producers_v0.DescribeProducersRequest

DescribeProducersResponse: TypeAlias = describe_producers_v0.DescribeProducersResponse

DESCRIBE_PRODUCERS_RESPONSES: ByVersion[DescribeProducersResponse] = _by_version(
    describe_producers_v0.DescribeProducersResponse,
)


# AlterConfigs v0-v2

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

ALTER_CONFIGS_REQUESTS: ByVersion[AlterConfigsRequest] = _by_version(
    alter_configs_v0.AlterConfigsRequest,
    alter_configs_v1.AlterConfigsRequest,
    alter_configs_v2.AlterConfigsRequest,
)

ALTER_CONFIGS_RESPONSES: ByVersion[AlterConfigsResponse] = _by_version(
    alter_configs_v0.AlterConfigsResponse,
    alter_configs_v1.AlterConfigsResponse,
    alter_configs_v2.AlterConfigsResponse,
)


# CreateAcls v1-v3

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

CREATE_ACLS_RESPONSES: ByVersion[CreateAclsResponse] = _by_version(
    create_acls_v1.CreateAclsResponse,
    create_acls_v2.CreateAclsResponse,
    create_acls_v3.CreateAclsResponse,
)


# DescribeAcls v1-v3

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

DESCRIBE_ACLS_RESPONSES: ByVersion[DescribeAclsResponse] = _by_version(
    describe_acls_v1.DescribeAclsResponse,
    describe_acls_v2.DescribeAclsResponse,
    describe_acls_v3.DescribeAclsResponse,
)


# DeleteAcls v1-v3

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

DELETE_ACLS_RESPONSES: ByVersion[DeleteAclsResponse] = _by_version(
    delete_acls_v1.DeleteAclsResponse,
    delete_acls_v2.DeleteAclsResponse,
    delete_acls_v3.DeleteAclsResponse,
)

"""The classic group APIs on the wire: kio requests in, kio responses out.

Pure translation between the Kafka messages of the classic consumer-group APIs and the types of
`membership` (and the plain values the offset APIs carry); no coordinator logic. One function
builds a response for every version served (`make_entity` drops the fields a version lacks),
so the ranges below are the single list of what is spoken. Where versions differ, Kafka's own
request and response classes decide how (each rule names its class):

- JoinGroup v0 has no rebalance timeout: the session timeout is both (JoinGroupRequest).
  Protocol names are nullable from v7 on; older answers carry "" instead (JoinGroupResponse).
- LeaveGroup v0-2 name one member and answer with one error: the group-level one, else the
  first member's that is not NONE (LeaveGroupResponse).
- FindCoordinator v0-3 ask for one key, v4+ for a batch (FindCoordinatorRequest).
- OffsetCommit: a null metadata is stored as "" (OffsetAndMetadata.NO_METADATA); v2-4 may ask
  for an explicit retention, -1 meaning the broker's (OffsetCommitRequest.DEFAULT_RETENTION_TIME).
- OffsetFetch: null topics (v2+) ask for every committed offset of the group; v8+ ask for
  several groups. v0-1 have no group-level error, so it goes to every partition instead
  (OffsetFetchResponse.Builder). An offset that is not committed is -1 with leader epoch -1 and
  metadata "" (OffsetFetchResponse.INVALID_OFFSET, NO_METADATA).
- DescribeGroups: a group that cannot be described has an empty state, protocol type and
  protocol (DescribeGroupsResponse.groupError).
- ListGroups: the v4+ states filter and the v5+ types filter match case-insensitively, and
  every group here is a "classic" one (GroupMetadataManager.listGroups, Kafka 4).
"""

from __future__ import annotations

import datetime
import functools
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias, TypeVar

from kio.schema.errors import ErrorCode
from kio.static.protocol import Payload

from broker.groups.membership import (
    UNKNOWN_MEMBER_ID,
    GroupDescription,
    GroupState,
    HeartbeatAnswer,
    HeartbeatRequest,
    JoinAnswer,
    JoinRequest,
    LeaveAnswer,
    LeavingMember,
    Protocol,
    SyncAnswer,
    SyncRequest,
)
from net import messages
from net.api_keys import ApiKey
from net.messages import ByVersion, ServedVersions
from net.protocol import NO_THROTTLE, field_entity_type, make_entity

# The versions served, (oldest, newest): every version kio has a schema for, except the newest
# OffsetCommit (v10), OffsetFetch (v10) and DescribeGroups (v6), which no client in
# shared/notes/kafka-protocol-versions.md needs.
FIND_COORDINATOR_VERSIONS = (0, 6)
JOIN_GROUP_VERSIONS = (0, 9)
SYNC_GROUP_VERSIONS = (0, 5)
HEARTBEAT_VERSIONS = (0, 4)
LEAVE_GROUP_VERSIONS = (0, 5)
OFFSET_COMMIT_VERSIONS = (2, 9)
OFFSET_FETCH_VERSIONS = (1, 9)
DESCRIBE_GROUPS_VERSIONS = (0, 5)
LIST_GROUPS_VERSIONS = (0, 5)
DELETE_GROUPS_VERSIONS = (0, 2)
OFFSET_DELETE_VERSIONS = (0, 0)

# FindCoordinator's key types (Kafka's CoordinatorType); only groups have a coordinator here.
GROUP_KEY_TYPE = 0
# The "no offset" values of OffsetFetch answers and OffsetCommit requests.
NO_OFFSET = -1
NO_LEADER_EPOCH = -1
NO_METADATA = ""

# The first version of each message that has the behaviour or response field named.
_JOIN_KNOWN_MEMBER_ID = 4
_JOIN_NULLABLE_PROTOCOL = 7
_JOIN_SKIP_ASSIGNMENT = 9
_LEAVE_BATCH = 3
_FIND_BATCH = 4
_FETCH_GROUP_ERROR = 2
_FETCH_BATCH = 8

# The message unions are for the type checker, and their classes are imported when first
# used (see net.messages): this module is imported at every start.
if TYPE_CHECKING:
    from kio.schema.find_coordinator import v0 as find_coordinator_v0
    from kio.schema.find_coordinator import v1 as find_coordinator_v1
    from kio.schema.find_coordinator import v2 as find_coordinator_v2
    from kio.schema.find_coordinator import v3 as find_coordinator_v3
    from kio.schema.find_coordinator import v4 as find_coordinator_v4
    from kio.schema.find_coordinator import v5 as find_coordinator_v5
    from kio.schema.find_coordinator import v6 as find_coordinator_v6
    from kio.schema.heartbeat import v3 as heartbeat_v3
    from kio.schema.heartbeat import v4 as heartbeat_v4
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
    from kio.schema.list_groups import v4 as list_groups_v4
    from kio.schema.list_groups import v5 as list_groups_v5
    from kio.schema.offset_commit import v2 as offset_commit_v2
    from kio.schema.offset_commit import v3 as offset_commit_v3
    from kio.schema.offset_commit import v4 as offset_commit_v4
    from kio.schema.offset_commit import v6 as offset_commit_v6
    from kio.schema.offset_commit import v7 as offset_commit_v7
    from kio.schema.offset_commit import v8 as offset_commit_v8
    from kio.schema.offset_commit import v9 as offset_commit_v9
    from kio.schema.offset_fetch import v1 as offset_fetch_v1
    from kio.schema.offset_fetch import v2 as offset_fetch_v2
    from kio.schema.offset_fetch import v3 as offset_fetch_v3
    from kio.schema.offset_fetch import v4 as offset_fetch_v4
    from kio.schema.offset_fetch import v5 as offset_fetch_v5
    from kio.schema.offset_fetch import v6 as offset_fetch_v6
    from kio.schema.offset_fetch import v7 as offset_fetch_v7
    from kio.schema.offset_fetch import v8 as offset_fetch_v8
    from kio.schema.offset_fetch import v9 as offset_fetch_v9
    from kio.schema.sync_group import v3 as sync_group_v3
    from kio.schema.sync_group import v4 as sync_group_v4
    from kio.schema.sync_group import v5 as sync_group_v5

    # The versions of each request that have the field named (v2-4 alone for OffsetCommit's
    # retention, which v5 dropped).
    _JoinWithRebalanceTimeout: TypeAlias = (
        join_group_v1.JoinGroupRequest
        | join_group_v2.JoinGroupRequest
        | join_group_v3.JoinGroupRequest
        | join_group_v4.JoinGroupRequest
        | join_group_v5.JoinGroupRequest
        | join_group_v6.JoinGroupRequest
        | join_group_v7.JoinGroupRequest
        | join_group_v8.JoinGroupRequest
        | join_group_v9.JoinGroupRequest
    )
    _JoinWithInstanceId: TypeAlias = (
        join_group_v5.JoinGroupRequest
        | join_group_v6.JoinGroupRequest
        | join_group_v7.JoinGroupRequest
        | join_group_v8.JoinGroupRequest
        | join_group_v9.JoinGroupRequest
    )
    _SyncWithInstanceId: TypeAlias = (
        sync_group_v3.SyncGroupRequest
        | sync_group_v4.SyncGroupRequest
        | sync_group_v5.SyncGroupRequest
    )
    _HeartbeatWithInstanceId: TypeAlias = (
        heartbeat_v3.HeartbeatRequest | heartbeat_v4.HeartbeatRequest
    )
    _LeaveBatch: TypeAlias = (
        leave_group_v3.LeaveGroupRequest
        | leave_group_v4.LeaveGroupRequest
        | leave_group_v5.LeaveGroupRequest
    )
    _FindWithKeyType: TypeAlias = (
        find_coordinator_v1.FindCoordinatorRequest
        | find_coordinator_v2.FindCoordinatorRequest
        | find_coordinator_v3.FindCoordinatorRequest
        | find_coordinator_v4.FindCoordinatorRequest
        | find_coordinator_v5.FindCoordinatorRequest
        | find_coordinator_v6.FindCoordinatorRequest
    )
    _FindOneKey: TypeAlias = (
        find_coordinator_v0.FindCoordinatorRequest
        | find_coordinator_v1.FindCoordinatorRequest
        | find_coordinator_v2.FindCoordinatorRequest
        | find_coordinator_v3.FindCoordinatorRequest
    )
    _LeaveOneMember: TypeAlias = (
        leave_group_v0.LeaveGroupRequest
        | leave_group_v1.LeaveGroupRequest
        | leave_group_v2.LeaveGroupRequest
    )
    _FetchOneGroup: TypeAlias = (
        offset_fetch_v1.OffsetFetchRequest
        | offset_fetch_v2.OffsetFetchRequest
        | offset_fetch_v3.OffsetFetchRequest
        | offset_fetch_v4.OffsetFetchRequest
        | offset_fetch_v5.OffsetFetchRequest
        | offset_fetch_v6.OffsetFetchRequest
        | offset_fetch_v7.OffsetFetchRequest
    )
    _FindBatch: TypeAlias = (
        find_coordinator_v4.FindCoordinatorRequest
        | find_coordinator_v5.FindCoordinatorRequest
        | find_coordinator_v6.FindCoordinatorRequest
    )
    _CommitWithRetention: TypeAlias = (
        offset_commit_v2.OffsetCommitRequest
        | offset_commit_v3.OffsetCommitRequest
        | offset_commit_v4.OffsetCommitRequest
    )
    _CommitWithInstanceId: TypeAlias = (
        offset_commit_v7.OffsetCommitRequest
        | offset_commit_v8.OffsetCommitRequest
        | offset_commit_v9.OffsetCommitRequest
    )
    _CommitWithLeaderEpoch: TypeAlias = (
        offset_commit_v6.OffsetCommitRequest
        | offset_commit_v7.OffsetCommitRequest
        | offset_commit_v8.OffsetCommitRequest
        | offset_commit_v9.OffsetCommitRequest
    )
    _CommitPartitionWithLeaderEpoch: TypeAlias = (
        offset_commit_v6.request.OffsetCommitRequestPartition
        | offset_commit_v7.request.OffsetCommitRequestPartition
        | offset_commit_v8.request.OffsetCommitRequestPartition
        | offset_commit_v9.request.OffsetCommitRequestPartition
    )
    _FetchRequireStable: TypeAlias = (
        offset_fetch_v7.OffsetFetchRequest
        | offset_fetch_v8.OffsetFetchRequest
        | offset_fetch_v9.OffsetFetchRequest
    )
    _FetchBatch: TypeAlias = offset_fetch_v8.OffsetFetchRequest | offset_fetch_v9.OffsetFetchRequest
    _ListWithStates: TypeAlias = list_groups_v4.ListGroupsRequest | list_groups_v5.ListGroupsRequest
    _ListWithTypes: TypeAlias = list_groups_v5.ListGroupsRequest
    _SyncWithProtocol: TypeAlias = sync_group_v5.SyncGroupRequest

# The versions of each request that have the field named (v2-4 alone for OffsetCommit's
# retention, which v5 dropped).
_JOIN_WITH_REBALANCE_TIMEOUT: ServedVersions[_JoinWithRebalanceTimeout] = messages.served_requests(
    ApiKey.JOIN_GROUP, 1, 9
)
_JOIN_WITH_INSTANCE_ID: ServedVersions[_JoinWithInstanceId] = messages.served_requests(
    ApiKey.JOIN_GROUP, 5, 9
)
_SYNC_WITH_INSTANCE_ID: ServedVersions[_SyncWithInstanceId] = messages.served_requests(
    ApiKey.SYNC_GROUP, 3, 5
)
_HEARTBEAT_WITH_INSTANCE_ID: ServedVersions[_HeartbeatWithInstanceId] = messages.served_requests(
    ApiKey.HEARTBEAT, 3, 4
)
_LEAVE_BATCH_REQUESTS: ServedVersions[_LeaveBatch] = messages.served_requests(
    ApiKey.LEAVE_GROUP, 3, 5
)
_FIND_WITH_KEY_TYPE: ServedVersions[_FindWithKeyType] = messages.served_requests(
    ApiKey.FIND_COORDINATOR, 1, 6
)
_FIND_BATCH_REQUESTS: ServedVersions[_FindBatch] = messages.served_requests(
    ApiKey.FIND_COORDINATOR, 4, 6
)
_COMMIT_WITH_RETENTION: ServedVersions[_CommitWithRetention] = messages.served_requests(
    ApiKey.OFFSET_COMMIT, 2, 4
)
_COMMIT_WITH_INSTANCE_ID: ServedVersions[_CommitWithInstanceId] = messages.served_requests(
    ApiKey.OFFSET_COMMIT, 7, 9
)
_COMMIT_WITH_LEADER_EPOCH: ServedVersions[_CommitWithLeaderEpoch] = messages.served_requests(
    ApiKey.OFFSET_COMMIT, 6, 9
)
_FETCH_REQUIRE_STABLE: ServedVersions[_FetchRequireStable] = messages.served_requests(
    ApiKey.OFFSET_FETCH, 7, 9
)
_FETCH_BATCH_REQUESTS: ServedVersions[_FetchBatch] = messages.served_requests(
    ApiKey.OFFSET_FETCH, 8, 9
)
_LIST_WITH_STATES: ServedVersions[_ListWithStates] = messages.served_requests(
    ApiKey.LIST_GROUPS, 4, 5
)
_LIST_WITH_TYPES: ServedVersions[_ListWithTypes] = messages.served_requests(
    ApiKey.LIST_GROUPS, 5, 5
)
_SYNC_WITH_PROTOCOL: ServedVersions[_SyncWithProtocol] = messages.served_requests(
    ApiKey.SYNC_GROUP, 5, 5
)
# The versions before the batches, the other branch of each batch check.
_FIND_ONE_KEY: ServedVersions[_FindOneKey] = messages.served_requests(ApiKey.FIND_COORDINATOR, 0, 3)
_LEAVE_ONE_MEMBER: ServedVersions[_LeaveOneMember] = messages.served_requests(
    ApiKey.LEAVE_GROUP, 0, 2
)
_FETCH_ONE_GROUP: ServedVersions[_FetchOneGroup] = messages.served_requests(
    ApiKey.OFFSET_FETCH, 1, 7
)

# Kafka's "not requested" value of the authorized-operations fields.
_NO_AUTHORIZED_OPERATIONS = -(2**31)
# The only group type this broker has (ListGroups v5+ group_type).
_CLASSIC_GROUP_TYPE = "classic"
_ONE_MS = datetime.timedelta(milliseconds=1)

_Response = TypeVar("_Response", bound=Payload)


def _ms(duration: datetime.timedelta) -> int:
    return duration // _ONE_MS


def _response(responses: ByVersion[_Response], version: int, **values: object) -> _Response:
    return make_entity(responses[version], throttle_time=NO_THROTTLE, **values)


# --- FindCoordinator -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Coordinator:
    """The answer for one key of a FindCoordinatorRequest: the coordinator, or an error.

    An error answer keeps Kafka's "no node" (-1, "", -1); `message` is sent from v1 on.
    """

    key: str
    error: ErrorCode
    node_id: int = -1
    host: str = ""
    port: int = -1
    message: str | None = None


def find_coordinator_keys(version: int, request: messages.FindCoordinatorRequest) -> list[str]:
    """The keys (group ids) a FindCoordinatorRequest asks about: one before v4, a batch after."""
    if isinstance(request, _FIND_BATCH_REQUESTS.classes):
        return list(request.coordinator_keys)
    assert isinstance(request, _FIND_ONE_KEY.classes)
    return [request.key]


def find_coordinator_key_type_error(
    version: int, request: messages.FindCoordinatorRequest
) -> ErrorCode:
    """NONE when the request asks for group coordinators, else the error to answer every key.

    Transaction (1) and share (2) coordinators do not exist here: INVALID_REQUEST, which Kafka
    answers for a coordinator type it does not run, and which clients fail on at once instead
    of retrying as they would COORDINATOR_NOT_AVAILABLE.
    """
    key_type = (
        request.key_type if isinstance(request, _FIND_WITH_KEY_TYPE.classes) else GROUP_KEY_TYPE
    )
    return ErrorCode.none if key_type == GROUP_KEY_TYPE else ErrorCode.invalid_request


def find_coordinator_response(
    version: int, coordinators: Sequence[Coordinator]
) -> messages.FindCoordinatorResponse:
    """The FindCoordinatorResponse of `version`; before v4 `coordinators` holds exactly one."""
    if version < _FIND_BATCH:
        (only,) = coordinators
        return _response(
            messages.FIND_COORDINATOR_RESPONSES,
            version,
            error_code=only.error,
            error_message=only.message,
            node_id=only.node_id,
            host=only.host,
            port=only.port,
        )
    coordinator_type = messages.nested_type(
        messages.FIND_COORDINATOR_RESPONSES, version, "coordinators"
    )
    return _response(
        messages.FIND_COORDINATOR_RESPONSES,
        version,
        coordinators=tuple(
            make_entity(
                coordinator_type,
                key=c.key,
                node_id=c.node_id,
                host=c.host,
                port=c.port,
                error_code=c.error,
                error_message=c.message,
            )
            for c in coordinators
        ),
    )


# --- JoinGroup, SyncGroup, Heartbeat, LeaveGroup -------------------------------------------------


def join_request(
    version: int, request: messages.JoinGroupRequest, client_id: str, client_host: str
) -> tuple[str, JoinRequest]:
    """The group id and the machine's request of a JoinGroupRequest of `version`."""
    session_timeout_ms = _ms(request.session_timeout)
    return request.group_id, JoinRequest(
        member_id=request.member_id,
        client_id=client_id,
        client_host=client_host,
        protocol_type=request.protocol_type,
        protocols=tuple(Protocol(p.name, p.metadata) for p in request.protocols),
        session_timeout_ms=session_timeout_ms,
        rebalance_timeout_ms=(
            _ms(request.rebalance_timeout)
            if isinstance(request, _JOIN_WITH_REBALANCE_TIMEOUT.classes)
            else session_timeout_ms
        ),
        group_instance_id=(
            request.group_instance_id
            if isinstance(request, _JOIN_WITH_INSTANCE_ID.classes)
            else None
        ),
        require_known_member_id=version >= _JOIN_KNOWN_MEMBER_ID,
        supports_skip_assignment=version >= _JOIN_SKIP_ASSIGNMENT,
    )


def join_response(version: int, answer: JoinAnswer) -> messages.JoinGroupResponse:
    """The JoinGroupResponse of `version` carrying `answer`."""
    member_type = messages.nested_type(messages.JOIN_GROUP_RESPONSES, version, "members")
    nullable = version >= _JOIN_NULLABLE_PROTOCOL
    return _response(
        messages.JOIN_GROUP_RESPONSES,
        version,
        error_code=answer.error,
        generation_id=answer.generation_id,
        protocol_type=answer.protocol_type,
        protocol_name=answer.protocol_name if nullable else answer.protocol_name or "",
        leader=answer.leader,
        skip_assignment=answer.skip_assignment,
        member_id=answer.member_id,
        members=tuple(
            make_entity(
                member_type,
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                metadata=m.metadata,
            )
            for m in answer.members
        ),
    )


def join_error(version: int, error: ErrorCode) -> messages.JoinGroupResponse:
    """A JoinGroupResponse refusing the request with `error` and no member id, as Kafka's."""
    return join_response(version, JoinAnswer(error, UNKNOWN_MEMBER_ID))


def sync_request(version: int, request: messages.SyncGroupRequest) -> tuple[str, SyncRequest]:
    """The group id and the machine's request of a SyncGroupRequest of `version`."""
    protocol = request if isinstance(request, _SYNC_WITH_PROTOCOL.classes) else None
    return request.group_id, SyncRequest(
        member_id=request.member_id,
        generation_id=request.generation_id,
        assignments={a.member_id: a.assignment for a in request.assignments},
        group_instance_id=(
            request.group_instance_id
            if isinstance(request, _SYNC_WITH_INSTANCE_ID.classes)
            else None
        ),
        protocol_type=None if protocol is None else protocol.protocol_type,
        protocol_name=None if protocol is None else protocol.protocol_name,
    )


def sync_response(version: int, answer: SyncAnswer) -> messages.SyncGroupResponse:
    """The SyncGroupResponse of `version` carrying `answer`."""
    return _response(
        messages.SYNC_GROUP_RESPONSES,
        version,
        error_code=answer.error,
        protocol_type=answer.protocol_type,
        protocol_name=answer.protocol_name,
        assignment=answer.assignment,
    )


def heartbeat_request(
    version: int, request: messages.HeartbeatRequest
) -> tuple[str, HeartbeatRequest]:
    """The group id and the machine's request of a HeartbeatRequest of `version`."""
    return request.group_id, HeartbeatRequest(
        member_id=request.member_id,
        generation_id=request.generation_id,
        group_instance_id=(
            request.group_instance_id
            if isinstance(request, _HEARTBEAT_WITH_INSTANCE_ID.classes)
            else None
        ),
    )


def heartbeat_response(version: int, answer: HeartbeatAnswer) -> messages.HeartbeatResponse:
    """The HeartbeatResponse of `version` carrying `answer`."""
    return _response(messages.HEARTBEAT_RESPONSES, version, error_code=answer.error)


def leave_request(
    version: int, request: messages.LeaveGroupRequest
) -> tuple[str, list[LeavingMember]]:
    """The group id and the members a LeaveGroupRequest of `version` removes."""
    if isinstance(request, _LEAVE_BATCH_REQUESTS.classes):
        return request.group_id, [
            LeavingMember(m.member_id, m.group_instance_id) for m in request.members
        ]
    assert isinstance(request, _LEAVE_ONE_MEMBER.classes)
    return request.group_id, [LeavingMember(request.member_id)]


def leave_response(version: int, answer: LeaveAnswer) -> messages.LeaveGroupResponse:
    """The LeaveGroupResponse of `version` carrying `answer`.

    Before v3 there is one error: the group-level one, else the first member error that is not
    NONE (Kafka's LeaveGroupResponse.getError).
    """
    if version < _LEAVE_BATCH:
        error = answer.error
        if error is ErrorCode.none:
            error = next(
                (m.error for m in answer.members if m.error is not ErrorCode.none), ErrorCode.none
            )
        return _response(messages.LEAVE_GROUP_RESPONSES, version, error_code=error)
    member_type = messages.nested_type(messages.LEAVE_GROUP_RESPONSES, version, "members")
    return _response(
        messages.LEAVE_GROUP_RESPONSES,
        version,
        error_code=answer.error,
        members=tuple(
            make_entity(
                member_type,
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                error_code=m.error,
            )
            for m in answer.members
        ),
    )


# --- OffsetCommit, OffsetFetch, OffsetDelete -----------------------------------------------------


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    """One partition's offset of an OffsetCommitRequest."""

    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str


@dataclass(frozen=True, slots=True)
class OffsetCommit:
    """An OffsetCommitRequest.

    `generation_id` is -1 (and `member_id` empty) for a commit from outside the group, as
    simple consumers and admin clients send. `retention_ms` is an explicit retention asked by
    v2-4, else None (the broker's offsets.retention.minutes).
    """

    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None
    retention_ms: int | None
    offsets: tuple[CommittedOffset, ...]


@functools.cache
def _partitions_with_leader_epoch() -> tuple[type[_CommitPartitionWithLeaderEpoch], ...]:
    """The OffsetCommit partition classes that carry a leader epoch (imported on first use)."""
    return tuple(
        typing.cast(
            type["_CommitPartitionWithLeaderEpoch"],
            messages.nested_type(_COMMIT_WITH_LEADER_EPOCH, version, "topics", "partitions"),
        )
        for version in _COMMIT_WITH_LEADER_EPOCH
    )


def offset_commit_request(version: int, request: messages.OffsetCommitRequest) -> OffsetCommit:
    """The commit an OffsetCommitRequest of `version` asks for."""
    retention_ms: int | None = None
    if isinstance(request, _COMMIT_WITH_RETENTION.classes):
        asked = _ms(request.retention_time)
        retention_ms = asked if asked >= 0 else None
    return OffsetCommit(
        group_id=request.group_id,
        generation_id=request.generation_id_or_member_epoch,
        member_id=request.member_id,
        group_instance_id=(
            request.group_instance_id
            if isinstance(request, _COMMIT_WITH_INSTANCE_ID.classes)
            else None
        ),
        retention_ms=retention_ms,
        offsets=tuple(
            CommittedOffset(
                topic=topic.name,
                partition=p.partition_index,
                offset=p.committed_offset,
                leader_epoch=(
                    p.committed_leader_epoch
                    if isinstance(p, _partitions_with_leader_epoch())
                    else NO_LEADER_EPOCH
                ),
                metadata=NO_METADATA if p.committed_metadata is None else p.committed_metadata,
            )
            for topic in request.topics
            for p in topic.partitions
        ),
    )


def offset_commit_response(
    version: int, errors: Mapping[str, Mapping[int, ErrorCode]]
) -> messages.OffsetCommitResponse:
    """The OffsetCommitResponse of `version`: `errors` is topic -> partition -> error."""
    topic_type = messages.nested_type(messages.OFFSET_COMMIT_RESPONSES, version, "topics")
    partition_type = field_entity_type(topic_type, "partitions")
    return _response(
        messages.OFFSET_COMMIT_RESPONSES,
        version,
        topics=_partition_errors(topic_type, partition_type, errors),
    )


def _partition_errors(
    topic_type: type, partition_type: type, errors: Mapping[str, Mapping[int, ErrorCode]]
) -> tuple[object, ...]:
    return tuple(
        make_entity(
            topic_type,
            name=topic,
            partitions=tuple(
                make_entity(partition_type, partition_index=partition, error_code=error)
                for partition, error in partitions.items()
            ),
        )
        for topic, partitions in errors.items()
    )


@dataclass(frozen=True, slots=True)
class OffsetFetchGroup:
    """One group of an OffsetFetchRequest: topic -> partitions, or None for all committed."""

    group_id: str
    partitions: Mapping[str, tuple[int, ...]] | None


@dataclass(frozen=True, slots=True)
class OffsetFetch:
    """An OffsetFetchRequest: one group before v8, several from v8 on.

    `require_stable` (v7+, KIP-447) asks to refuse partitions with pending transactional
    commits with UNSTABLE_OFFSET_COMMIT.
    """

    groups: tuple[OffsetFetchGroup, ...]
    require_stable: bool


def offset_fetch_request(version: int, request: messages.OffsetFetchRequest) -> OffsetFetch:
    """The groups and partitions an OffsetFetchRequest of `version` asks about."""
    require_stable = (
        request.require_stable if isinstance(request, _FETCH_REQUIRE_STABLE.classes) else False
    )
    groups: tuple[OffsetFetchGroup, ...]
    if isinstance(request, _FETCH_BATCH_REQUESTS.classes):
        groups = tuple(
            OffsetFetchGroup(group.group_id, _fetched_partitions(group.topics))
            for group in request.groups
        )
    else:
        assert isinstance(request, _FETCH_ONE_GROUP.classes)
        groups = (OffsetFetchGroup(request.group_id, _fetched_partitions(request.topics)),)
    return OffsetFetch(groups, require_stable)


class _FetchedTopic(typing.Protocol):
    """A topic of an OffsetFetchRequest, as every version names it and its partitions."""

    @property
    def name(self) -> str: ...

    @property
    def partition_indexes(self) -> tuple[int, ...]: ...


def _fetched_partitions(
    topics: Sequence[_FetchedTopic] | None,
) -> dict[str, tuple[int, ...]] | None:
    if topics is None:
        return None
    return {topic.name: tuple(topic.partition_indexes) for topic in topics}


@dataclass(frozen=True, slots=True)
class FetchedOffset:
    """One partition of an OffsetFetch answer; the defaults say "nothing committed"."""

    topic: str
    partition: int
    offset: int = NO_OFFSET
    leader_epoch: int = NO_LEADER_EPOCH
    metadata: str = NO_METADATA
    error: ErrorCode = ErrorCode.none


@dataclass(frozen=True, slots=True)
class GroupOffsets:
    """The OffsetFetch answer for one group: a group-level error, and the partitions' offsets.

    Before v2 the group-level error is sent as the error of each of `offsets`, so an error
    answer to those versions lists the partitions asked for.
    """

    group_id: str
    error: ErrorCode
    offsets: tuple[FetchedOffset, ...] = ()


def offset_fetch_response(
    version: int, groups: Sequence[GroupOffsets]
) -> messages.OffsetFetchResponse:
    """The OffsetFetchResponse of `version`; before v8 `groups` holds exactly one."""
    if version < _FETCH_BATCH:
        (group,) = groups
        topic_type = messages.nested_type(messages.OFFSET_FETCH_RESPONSES, version, "topics")
        override = group.error if version < _FETCH_GROUP_ERROR else ErrorCode.none
        return _response(
            messages.OFFSET_FETCH_RESPONSES,
            version,
            error_code=group.error,
            topics=_fetched_topics(topic_type, group.offsets, override),
        )
    group_type = messages.nested_type(messages.OFFSET_FETCH_RESPONSES, version, "groups")
    topic_type = field_entity_type(group_type, "topics")
    return _response(
        messages.OFFSET_FETCH_RESPONSES,
        version,
        groups=tuple(
            make_entity(
                group_type,
                group_id=group.group_id,
                topics=_fetched_topics(topic_type, group.offsets, ErrorCode.none),
                error_code=group.error,
            )
            for group in groups
        ),
    )


def _fetched_topics(
    topic_type: type, offsets: Sequence[FetchedOffset], override: ErrorCode
) -> tuple[object, ...]:
    """The topics of `offsets` in first-seen order; a non-NONE `override` replaces every error."""
    partition_type = field_entity_type(topic_type, "partitions")
    by_topic: dict[str, list[object]] = {}
    for o in offsets:
        by_topic.setdefault(o.topic, []).append(
            make_entity(
                partition_type,
                partition_index=o.partition,
                committed_offset=o.offset,
                committed_leader_epoch=o.leader_epoch,
                metadata=o.metadata,
                error_code=o.error if override is ErrorCode.none else override,
            )
        )
    return tuple(
        make_entity(topic_type, name=topic, partitions=tuple(partitions))
        for topic, partitions in by_topic.items()
    )


def offset_delete_request(
    version: int, request: messages.OffsetDeleteRequest
) -> tuple[str, dict[str, tuple[int, ...]]]:
    """The group id and topic -> partitions whose offsets an OffsetDeleteRequest deletes."""
    return request.group_id, {
        topic.name: tuple(p.partition_index for p in topic.partitions) for topic in request.topics
    }


def offset_delete_response(
    version: int, error: ErrorCode, errors: Mapping[str, Mapping[int, ErrorCode]]
) -> messages.OffsetDeleteResponse:
    """The OffsetDeleteResponse: a group-level error and topic -> partition -> error."""
    topic_type = messages.nested_type(messages.OFFSET_DELETE_RESPONSES, version, "topics")
    partition_type = field_entity_type(topic_type, "partitions")
    return _response(
        messages.OFFSET_DELETE_RESPONSES,
        version,
        error_code=error,
        topics=_partition_errors(topic_type, partition_type, errors),
    )


# --- DescribeGroups, ListGroups, DeleteGroups ----------------------------------------------------


@dataclass(frozen=True, slots=True)
class GroupResult:
    """A group's outcome in a DeleteGroups answer, or a DescribeGroups group that failed."""

    group_id: str
    error: ErrorCode


def describe_groups_request(version: int, request: messages.DescribeGroupsRequest) -> list[str]:
    """The group ids a DescribeGroupsRequest asks about, in order."""
    return list(request.groups)


def describe_groups_response(
    version: int, groups: Sequence[GroupDescription | GroupResult]
) -> messages.DescribeGroupsResponse:
    """The DescribeGroupsResponse of `version`: each group described, or its error.

    Authorized operations (v3+) are always Kafka's "not requested" value: there are no ACLs.
    """
    group_type = messages.nested_type(messages.DESCRIBE_GROUPS_RESPONSES, version, "groups")
    member_type = field_entity_type(group_type, "members")

    def described(group: GroupDescription | GroupResult) -> object:
        if isinstance(group, GroupResult):
            return make_entity(
                group_type,
                error_code=group.error,
                group_id=group.group_id,
                group_state="",
                protocol_type="",
                protocol_data="",
                members=(),
                authorized_operations=_NO_AUTHORIZED_OPERATIONS,
            )
        return make_entity(
            group_type,
            error_code=ErrorCode.none,
            group_id=group.group_id,
            group_state=str(group.state),
            protocol_type=group.protocol_type,
            protocol_data=group.protocol,
            members=tuple(
                make_entity(
                    member_type,
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    member_metadata=m.metadata,
                    member_assignment=m.assignment,
                )
                for m in group.members
            ),
            authorized_operations=_NO_AUTHORIZED_OPERATIONS,
        )

    return _response(
        messages.DESCRIBE_GROUPS_RESPONSES, version, groups=tuple(map(described, groups))
    )


@dataclass(frozen=True, slots=True)
class ListGroupsFilter:
    """The filters of a ListGroupsRequest, lower-cased; empty ones admit every group."""

    states: frozenset[str] = frozenset()
    types: frozenset[str] = frozenset()

    def admits(self, state: GroupState) -> bool:
        """Whether a classic group in `state` is listed."""
        return (not self.states or state.lower() in self.states) and (
            not self.types or _CLASSIC_GROUP_TYPE in self.types
        )


def list_groups_filter(version: int, request: messages.ListGroupsRequest) -> ListGroupsFilter:
    """The states (v4+) and types (v5+) a ListGroupsRequest of `version` lists groups of."""
    states = request.states_filter if isinstance(request, _LIST_WITH_STATES.classes) else ()
    types = request.types_filter if isinstance(request, _LIST_WITH_TYPES.classes) else ()
    return ListGroupsFilter(
        frozenset(s.lower() for s in states), frozenset(t.lower() for t in types)
    )


@dataclass(frozen=True, slots=True)
class ListedGroup:
    """A group as ListGroups lists it."""

    group_id: str
    protocol_type: str
    state: GroupState


def list_groups_response(
    version: int, error: ErrorCode, groups: Sequence[ListedGroup]
) -> messages.ListGroupsResponse:
    """The ListGroupsResponse of `version`; state from v4 on, group type "classic" from v5."""
    listed_type = messages.nested_type(messages.LIST_GROUPS_RESPONSES, version, "groups")
    return _response(
        messages.LIST_GROUPS_RESPONSES,
        version,
        error_code=error,
        groups=tuple(
            make_entity(
                listed_type,
                group_id=g.group_id,
                protocol_type=g.protocol_type,
                group_state=str(g.state),
                group_type=_CLASSIC_GROUP_TYPE,
            )
            for g in groups
        ),
    )


def delete_groups_request(version: int, request: messages.DeleteGroupsRequest) -> list[str]:
    """The group ids a DeleteGroupsRequest deletes, in order."""
    return list(request.groups_names)


def delete_groups_response(
    version: int, results: Sequence[GroupResult]
) -> messages.DeleteGroupsResponse:
    """The DeleteGroupsResponse of `version`: one error per group."""
    result_type = messages.nested_type(messages.DELETE_GROUPS_RESPONSES, version, "results")
    return _response(
        messages.DELETE_GROUPS_RESPONSES,
        version,
        results=tuple(
            make_entity(result_type, group_id=r.group_id, error_code=r.error) for r in results
        ),
    )

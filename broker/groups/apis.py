"""The group APIs on the client listener: FindCoordinator, JoinGroup, SyncGroup, Heartbeat,
LeaveGroup, OffsetCommit, OffsetFetch, OffsetDelete, DescribeGroups, ListGroups and
DeleteGroups, translated by `wire` and answered by the `GroupCoordinator`.

DescribeGroups and DeleteGroups answer each group asked for on its own: a group another broker
coordinates gets NOT_COORDINATOR, and the client asks that one. ListGroups lists the groups this
broker coordinates.

A group id that is empty, or too long to be stored in `__consumer_offsets` (its records spell
it with an int16 length), is INVALID_GROUP_ID for every API but FindCoordinator, as in Kafka;
nothing is stored for it.

With an authorizer, Kafka's rules: FindCoordinator and DescribeGroups need DESCRIBE on the
group, the membership APIs and OffsetCommit READ on it (and OffsetCommit READ on each topic),
OffsetFetch DESCRIBE on it, DeleteGroups and OffsetDelete DELETE (ListGroups lists only the
groups the client may DESCRIBE, unless it may DESCRIBE the cluster); otherwise
GROUP_AUTHORIZATION_FAILED (TOPIC_AUTHORIZATION_FAILED for a topic) and nothing is done.
"""

from __future__ import annotations

from collections.abc import Callable

from kio.schema.errors import ErrorCode

from broker.groups import wire
from broker.groups.coordinator import CoordinatorUnavailableError, GroupCoordinator
from broker.groups.membership import GroupDescription, HeartbeatAnswer, LeaveAnswer, SyncAnswer
from broker.groups.shard import OffsetToCommit
from controller.acls import AclOperation, Authorizer, ResourceType
from controller.image import MetadataImage
from net import messages
from net.api_keys import ApiKey
from net.api_registry import ApiRegistry, Handler, RequestContext

_MAX_GROUP_ID_BYTES = 0x7FFF
# OffsetCommit v9 answers a member's commit to a group that does not exist GROUP_ID_NOT_FOUND.
_COMMIT_GROUP_ID_NOT_FOUND = 9


def _invalid_group_id(group_id: str | None) -> bool:
    return not group_id or len(group_id.encode()) > _MAX_GROUP_ID_BYTES


class GroupApis:
    """The handlers of the group APIs; `image` gives the current metadata image."""

    def __init__(
        self,
        coordinator: GroupCoordinator,
        image: Callable[[], MetadataImage],
        authorizer: Authorizer | None = None,
    ) -> None:
        self._coordinator = coordinator
        self._image = image
        self._authorizer = authorizer

    def _denied(
        self,
        context: RequestContext,
        operation: AclOperation,
        name: str,
        resource_type: ResourceType = ResourceType.GROUP,
    ) -> bool:
        authorizer = self._authorizer
        return authorizer is not None and not authorizer.allows(
            context, operation, resource_type, name
        )

    def register(self, registry: ApiRegistry) -> None:
        handlers: dict[int, tuple[Handler, tuple[int, int]]] = {
            ApiKey.FIND_COORDINATOR: (self._on_find_coordinator, wire.FIND_COORDINATOR_VERSIONS),
            ApiKey.JOIN_GROUP: (self._on_join, wire.JOIN_GROUP_VERSIONS),
            ApiKey.SYNC_GROUP: (self._on_sync, wire.SYNC_GROUP_VERSIONS),
            ApiKey.HEARTBEAT: (self._on_heartbeat, wire.HEARTBEAT_VERSIONS),
            ApiKey.LEAVE_GROUP: (self._on_leave, wire.LEAVE_GROUP_VERSIONS),
            ApiKey.OFFSET_COMMIT: (self._on_offset_commit, wire.OFFSET_COMMIT_VERSIONS),
            ApiKey.OFFSET_FETCH: (self._on_offset_fetch, wire.OFFSET_FETCH_VERSIONS),
            ApiKey.OFFSET_DELETE: (self._on_offset_delete, wire.OFFSET_DELETE_VERSIONS),
            ApiKey.DESCRIBE_GROUPS: (self._on_describe_groups, wire.DESCRIBE_GROUPS_VERSIONS),
            ApiKey.LIST_GROUPS: (self._on_list_groups, wire.LIST_GROUPS_VERSIONS),
            ApiKey.DELETE_GROUPS: (self._on_delete_groups, wire.DELETE_GROUPS_VERSIONS),
        }
        for api_key, (handler, (min_version, max_version)) in handlers.items():
            registry.register(api_key, handler, min_version=min_version, max_version=max_version)

    # --- FindCoordinator -----------------------------------------------------------------------

    def _on_find_coordinator(
        self, context: RequestContext, request: messages.FindCoordinatorRequest
    ) -> messages.FindCoordinatorResponse:
        version = context.header.api_version
        keys = wire.find_coordinator_keys(version, request)
        refused = wire.find_coordinator_key_type_error(version, request)
        return wire.find_coordinator_response(
            version,
            [
                wire.Coordinator(key, ErrorCode.group_authorization_failed)
                if refused is ErrorCode.none and self._denied(context, AclOperation.DESCRIBE, key)
                else self._coordinator_answer(key, refused, context.listener)
                for key in keys
            ],
        )

    def _coordinator_answer(self, key: str, refused: ErrorCode, listener: str) -> wire.Coordinator:
        """The coordinator of `key`, with its endpoint of `listener` (the client's)."""
        if refused is not ErrorCode.none:
            return wire.Coordinator(key, refused, message="only group coordinators exist here")
        error, node_id = self._coordinator.coordinator_of(key)
        if error is not ErrorCode.none:
            return wire.Coordinator(key, error)
        broker = self._image().brokers.get(node_id)
        endpoint = None
        if broker is not None and not broker.fenced:
            endpoint = next((e for e in broker.listeners if e.name == listener), None)
        if endpoint is None:
            return wire.Coordinator(key, ErrorCode.coordinator_not_available)
        return wire.Coordinator(key, ErrorCode.none, node_id, endpoint.host, endpoint.port)

    # --- membership ----------------------------------------------------------------------------

    async def _on_join(
        self, context: RequestContext, request: messages.JoinGroupRequest
    ) -> messages.JoinGroupResponse:
        version = context.header.api_version
        client_host = context.peer.rsplit(":", 1)[0]
        group_id, join = wire.join_request(
            version, request, context.header.client_id or "", client_host
        )
        if _invalid_group_id(group_id):
            return wire.join_error(version, ErrorCode.invalid_group_id)
        if self._denied(context, AclOperation.READ, group_id):
            return wire.join_error(version, ErrorCode.group_authorization_failed)
        return wire.join_response(version, await self._coordinator.join(group_id, join))

    async def _on_sync(
        self, context: RequestContext, request: messages.SyncGroupRequest
    ) -> messages.SyncGroupResponse:
        version = context.header.api_version
        group_id, sync = wire.sync_request(version, request)
        if _invalid_group_id(group_id):
            return wire.sync_response(version, SyncAnswer(ErrorCode.invalid_group_id))
        if self._denied(context, AclOperation.READ, group_id):
            return wire.sync_response(version, SyncAnswer(ErrorCode.group_authorization_failed))
        return wire.sync_response(version, await self._coordinator.sync(group_id, sync))

    async def _on_heartbeat(
        self, context: RequestContext, request: messages.HeartbeatRequest
    ) -> messages.HeartbeatResponse:
        version = context.header.api_version
        group_id, heartbeat = wire.heartbeat_request(version, request)
        if _invalid_group_id(group_id):
            return wire.heartbeat_response(version, HeartbeatAnswer(ErrorCode.invalid_group_id))
        if self._denied(context, AclOperation.READ, group_id):
            return wire.heartbeat_response(
                version, HeartbeatAnswer(ErrorCode.group_authorization_failed)
            )
        answer = await self._coordinator.heartbeat(group_id, heartbeat)
        return wire.heartbeat_response(version, answer)

    async def _on_leave(
        self, context: RequestContext, request: messages.LeaveGroupRequest
    ) -> messages.LeaveGroupResponse:
        version = context.header.api_version
        group_id, members = wire.leave_request(version, request)
        if _invalid_group_id(group_id):
            return wire.leave_response(version, LeaveAnswer(ErrorCode.invalid_group_id))
        if self._denied(context, AclOperation.READ, group_id):
            return wire.leave_response(version, LeaveAnswer(ErrorCode.group_authorization_failed))
        return wire.leave_response(version, await self._coordinator.leave(group_id, members))

    # --- offsets -------------------------------------------------------------------------------

    async def _on_offset_commit(
        self, context: RequestContext, request: messages.OffsetCommitRequest
    ) -> messages.OffsetCommitResponse:
        version = context.header.api_version
        commit = wire.offset_commit_request(version, request)
        offsets = [
            OffsetToCommit(o.topic, o.partition, o.offset, o.metadata, o.leader_epoch)
            for o in commit.offsets
        ]
        errors: dict[str, dict[int, ErrorCode]] = {}
        refusal = (
            ErrorCode.invalid_group_id
            if _invalid_group_id(commit.group_id)
            else ErrorCode.group_authorization_failed
            if self._denied(context, AclOperation.READ, commit.group_id)
            else None
        )
        if refusal is not None:
            for item in offsets:
                errors.setdefault(item.topic, {})[item.partition] = refusal
            return wire.offset_commit_response(version, errors)
        # As Kafka's KafkaApis: partitions of topics the client may not read and partitions
        # that do not exist are refused one by one and never stored; a commit of nothing else
        # is answered without the coordinator.
        image = self._image()
        existing = []
        for item in offsets:
            known = image.topic(item.topic)
            if self._denied(context, AclOperation.READ, item.topic, ResourceType.TOPIC):
                errors.setdefault(item.topic, {})[item.partition] = (
                    ErrorCode.topic_authorization_failed
                )
            elif known is None or item.partition not in known.partitions:
                errors.setdefault(item.topic, {})[item.partition] = (
                    ErrorCode.unknown_topic_or_partition
                )
            else:
                existing.append(item)
        if not existing and offsets:
            return wire.offset_commit_response(version, errors)
        answer = await self._coordinator.commit_offsets(
            commit.group_id,
            member_id=commit.member_id,
            group_instance_id=commit.group_instance_id,
            generation_id=commit.generation_id,
            offsets=existing,
            retention_ms=commit.retention_ms,
            unknown_group_error=ErrorCode.group_id_not_found
            if version >= _COMMIT_GROUP_ID_NOT_FOUND
            else ErrorCode.illegal_generation,
        )
        for (topic, partition), error in answer.errors:
            errors.setdefault(topic, {})[partition] = error
        return wire.offset_commit_response(version, errors)

    def _on_offset_fetch(
        self, context: RequestContext, request: messages.OffsetFetchRequest
    ) -> messages.OffsetFetchResponse:
        version = context.header.api_version
        fetch = wire.offset_fetch_request(version, request)
        return wire.offset_fetch_response(
            version,
            [
                self._fetch_error(
                    group.group_id,
                    ErrorCode.group_authorization_failed,
                    None
                    if group.partitions is None
                    else [(topic, p) for topic, ps in group.partitions.items() for p in ps],
                )
                if not _invalid_group_id(group.group_id)
                and self._denied(context, AclOperation.DESCRIBE, group.group_id)
                else self._group_offsets(group)
                for group in fetch.groups
            ],
        )

    def _group_offsets(self, group: wire.OffsetFetchGroup) -> wire.GroupOffsets:
        asked = (
            None
            if group.partitions is None
            else [(topic, p) for topic, ps in group.partitions.items() for p in ps]
        )
        if _invalid_group_id(group.group_id):
            return self._fetch_error(group.group_id, ErrorCode.invalid_group_id, asked)
        try:
            committed = self._coordinator.committed_offsets(group.group_id, asked)
        except CoordinatorUnavailableError as error:
            return self._fetch_error(group.group_id, error.error_code, asked)
        if asked is None:
            asked = sorted(committed)
        return wire.GroupOffsets(
            group.group_id,
            ErrorCode.none,
            tuple(
                wire.FetchedOffset(topic, partition)
                if (value := committed.get((topic, partition))) is None
                else wire.FetchedOffset(
                    topic, partition, value.offset, value.leader_epoch, value.metadata
                )
                for topic, partition in asked
            ),
        )

    @staticmethod
    def _fetch_error(
        group_id: str, error: ErrorCode, asked: list[tuple[str, int]] | None
    ) -> wire.GroupOffsets:
        # Versions before 2 carry the error on each partition asked for.
        return wire.GroupOffsets(
            group_id, error, tuple(wire.FetchedOffset(t, p) for t, p in asked or ())
        )

    async def _on_offset_delete(
        self, context: RequestContext, request: messages.OffsetDeleteRequest
    ) -> messages.OffsetDeleteResponse:
        version = context.header.api_version
        group_id, topics = wire.offset_delete_request(version, request)
        if _invalid_group_id(group_id):
            return wire.offset_delete_response(version, ErrorCode.invalid_group_id, {})
        if self._denied(context, AclOperation.DELETE, group_id):
            return wire.offset_delete_response(version, ErrorCode.group_authorization_failed, {})
        partitions = [(topic, p) for topic, ps in topics.items() for p in ps]
        answer = await self._coordinator.delete_offsets(group_id, partitions)
        errors: dict[str, dict[int, ErrorCode]] = {}
        for (topic, partition), error in answer.errors:
            errors.setdefault(topic, {})[partition] = error
        return wire.offset_delete_response(version, answer.error, errors)

    # --- administration ------------------------------------------------------------------------

    def _on_describe_groups(
        self, context: RequestContext, request: messages.DescribeGroupsRequest
    ) -> messages.DescribeGroupsResponse:
        version = context.header.api_version
        group_ids = wire.describe_groups_request(version, request)
        return wire.describe_groups_response(
            version,
            [
                wire.GroupResult(g, ErrorCode.group_authorization_failed)
                if self._denied(context, AclOperation.DESCRIBE, g)
                else self._described(g)
                for g in group_ids
            ],
        )

    def _described(self, group_id: str) -> GroupDescription | wire.GroupResult:
        if _invalid_group_id(group_id):
            return wire.GroupResult(group_id, ErrorCode.invalid_group_id)
        try:
            return self._coordinator.describe_group(group_id)
        except CoordinatorUnavailableError as error:
            return wire.GroupResult(group_id, error.error_code)

    def _on_list_groups(
        self, context: RequestContext, request: messages.ListGroupsRequest
    ) -> messages.ListGroupsResponse:
        version = context.header.api_version
        admitted = wire.list_groups_filter(version, request)
        error, groups = self._coordinator.list_groups(admitted)
        authorizer = self._authorizer
        if authorizer is not None and not authorizer.allows_cluster(context, AclOperation.DESCRIBE):
            # As Kafka: without DESCRIBE on the cluster, only the groups the client may describe.
            groups = [
                g for g in groups if not self._denied(context, AclOperation.DESCRIBE, g.group_id)
            ]
        return wire.list_groups_response(version, error, groups)

    async def _on_delete_groups(
        self, context: RequestContext, request: messages.DeleteGroupsRequest
    ) -> messages.DeleteGroupsResponse:
        version = context.header.api_version
        group_ids = wire.delete_groups_request(version, request)
        refusals = {
            g: ErrorCode.invalid_group_id
            if _invalid_group_id(g)
            else ErrorCode.group_authorization_failed
            for g in group_ids
            if _invalid_group_id(g) or self._denied(context, AclOperation.DELETE, g)
        }
        valid = [g for g in group_ids if g not in refusals]
        deleted = iter(await self._coordinator.delete_groups(valid))
        results = [
            wire.GroupResult(g, refusals[g]) if g in refusals else wire.GroupResult(*next(deleted))
            for g in group_ids
        ]
        return wire.delete_groups_response(version, results)

"""What the leader of one `__consumer_offsets` partition coordinates: its groups and offsets.

Pure, like the group state machine it drives: requests and written-record outcomes in, answers
and records to write out; time is an input. The asyncio coordinator around it appends the
records to the partition (acks=all) and reports each outcome with `write_completed`.

- Loading: a broker that becomes the partition's leader replays the partition's records
  (`replay`), then `activate`s: every group comes back from its last metadata record, with its
  committed offsets. Until then the coordinator answers COORDINATOR_LOAD_IN_PROGRESS.
- Groups: JoinGroup, SyncGroup, Heartbeat and LeaveGroup go to the group's ClassicGroup. A
  JoinGroup without a member id creates the group; any other request for a group that does not
  exist is UNKNOWN_MEMBER_ID, and creates nothing (as Kafka).
- Offsets: an OffsetCommit is checked against the group as Kafka does (a commit with a negative
  generation, a simple consumer's, creates the group Empty if it is absent and is accepted while
  it is Empty), its records are written, and only once they are durable does the store hold them
  and the commit get its answer. A metadata string longer than `offset.metadata.max.bytes` is
  OFFSET_METADATA_TOO_LARGE for its partition alone.
- Retention: `tick` tombstones the offsets past retention of Empty groups (as Kafka, never while
  a group rebalances), never one whose commit is being written.
- Administration, for classic groups as Kafka's GroupMetadataManager and OffsetMetadataManager
  serve it: `describe` and `listed` read the groups (a group that only has committed offsets is
  Empty with protocol type ""; one this partition does not know is described Dead, with no
  error); `delete_groups` tombstones an Empty group's offsets (those whose commits are being
  written too) and metadata and forgets it once written (Dead meanwhile); `delete_offsets`
  (OffsetDelete) tombstones offsets of topics the group's consumers are not subscribed to.
"""

from __future__ import annotations

import heapq
import struct
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar
from uuid import UUID, uuid4

from kio.schema.errors import ErrorCode

from broker.groups.membership import (
    WRITE_ERROR_ANSWERS,
    Answer,
    ClassicGroup,
    GroupConfig,
    GroupDescription,
    GroupState,
    GroupStateChange,
    GroupStep,
    HeartbeatAnswer,
    HeartbeatRequest,
    JoinAnswer,
    JoinRequest,
    LeaveAnswer,
    LeavingMember,
    SyncAnswer,
    SyncRequest,
)
from broker.groups.offsets import OffsetStore, TopicPartitionKey
from broker.groups.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    decode_record,
    encode_key,
    encode_value,
)
from broker.groups.wire import ListedGroup, ListGroupsFilter

K = TypeVar("K")

Record = tuple[bytes, bytes | None]

# How Kafka answers an offset commit whose write failed (OffsetMetadataManager).
_COMMIT_WRITE_ERROR_ANSWERS = {
    **WRITE_ERROR_ANSWERS,
    ErrorCode.message_too_large: ErrorCode.invalid_commit_offset_size,
    ErrorCode.record_list_too_large: ErrorCode.invalid_commit_offset_size,
    ErrorCode.invalid_fetch_size: ErrorCode.invalid_commit_offset_size,
}


@dataclass(frozen=True, slots=True)
class OffsetToCommit:
    """One partition of an OffsetCommit request."""

    topic: str
    partition: int
    offset: int
    metadata: str | None = None
    leader_epoch: int = -1


@dataclass(frozen=True, slots=True)
class CommitAnswer:
    """An OffsetCommit's answer: the error of each partition asked for, in request order."""

    errors: tuple[tuple[TopicPartitionKey, ErrorCode], ...]


@dataclass(frozen=True, slots=True)
class DeleteGroupsAnswer:
    """A DeleteGroups answer: the error of each group asked for, in request order."""

    errors: tuple[tuple[str, ErrorCode], ...]


@dataclass(frozen=True, slots=True)
class OffsetDeleteAnswer:
    """An OffsetDelete answer: a group-level error, else the error of each partition asked for,
    in request order."""

    error: ErrorCode
    errors: tuple[tuple[TopicPartitionKey, ErrorCode], ...] = ()


ShardAnswer = Answer | CommitAnswer | DeleteGroupsAnswer | OffsetDeleteAnswer


@dataclass(frozen=True, slots=True)
class Write:
    """Records to append to the partition, then report with `write_completed(write_id)`."""

    write_id: int
    records: tuple[Record, ...]


@dataclass(frozen=True, slots=True)
class ShardStep(Generic[K]):
    """What one input produced: answers to send now, writes to make, and the groups' state
    changes, each in order."""

    answers: tuple[tuple[K, ShardAnswer], ...] = ()
    writes: tuple[Write, ...] = ()
    state_changes: tuple[GroupStateChange, ...] = ()


@dataclass(frozen=True, slots=True)
class _GroupWrite:
    group_id: str
    group_write_id: int
    value: GroupMetadataValue


@dataclass(frozen=True, slots=True)
class _CommitWrite(Generic[K]):
    key: K
    written: tuple[tuple[OffsetCommitKey, OffsetCommitValue], ...]
    errors: tuple[tuple[TopicPartitionKey, ErrorCode], ...]


@dataclass(frozen=True, slots=True)
class _TombstoneWrite:
    keys: tuple[OffsetCommitKey, ...]


@dataclass(frozen=True, slots=True)
class _DeletedGroup:
    """A group Dead while its tombstones (of `offsets` and its metadata) are written."""

    group_id: str
    # What the group was, to bring it back if the write fails; None for offsets alone.
    restore: GroupMetadataValue | None
    offsets: tuple[OffsetCommitKey, ...]


@dataclass(frozen=True, slots=True)
class _GroupsDeletion(Generic[K]):
    key: K
    errors: tuple[tuple[str, ErrorCode], ...]
    deleted: tuple[_DeletedGroup, ...]


@dataclass(frozen=True, slots=True)
class _OffsetsDeletion(Generic[K]):
    key: K
    keys: tuple[OffsetCommitKey, ...]
    errors: tuple[tuple[TopicPartitionKey, ErrorCode], ...]


# The protocol type of the consumer protocol, whose subscriptions list topics (ConsumerProtocol).
CONSUMER_PROTOCOL_TYPE = "consumer"
_MEMBER_STATES = frozenset(
    {GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE, GroupState.STABLE}
)


@dataclass(frozen=True, slots=True)
class ShardConfig:
    """The coordinator settings, with Kafka's defaults: offsets.retention.minutes (7 days),
    offset.metadata.max.bytes, and the groups' own settings."""

    offsets_retention_ms: int = 7 * 24 * 3600 * 1000
    offset_metadata_max_bytes: int = 4096
    group: GroupConfig = field(default_factory=GroupConfig)


class CoordinatorShard(Generic[K]):
    """The groups and committed offsets of one `__consumer_offsets` partition."""

    def __init__(
        self, config: ShardConfig | None = None, new_uuid: Callable[[], UUID] = uuid4
    ) -> None:
        self._config = config or ShardConfig()
        self._new_uuid = new_uuid
        self.offsets = OffsetStore()
        self._groups: dict[str, ClassicGroup[K]] = {}
        self._loaded_metadata: dict[str, GroupMetadataValue] = {}
        self.active = False
        # The last metadata written of each group (what OffsetDelete knows subscriptions from).
        self._written_metadata: dict[str, GroupMetadataValue] = {}
        self._writes: dict[
            int,
            _GroupWrite
            | _CommitWrite[K]
            | _TombstoneWrite
            | _GroupsDeletion[K]
            | _OffsetsDeletion[K],
        ] = {}
        self._next_write_id = 0
        # The offsets whose commits are being written, with how many of each. Kafka holds a
        # commit before it is durable, so retention keeps these and DeleteGroups tombstones them.
        self._pending_commits: Counter[OffsetCommitKey] = Counter()
        # Every group's next deadline is in this heap (with stale entries, dropped when they
        # surface); groups whose timers may have changed are pushed again before it is read.
        self._deadlines: list[tuple[int, str]] = []
        self._touched: set[str] = set()

    # --- loading -------------------------------------------------------------------------------

    def replay(self, key: bytes, value: bytes | None) -> None:
        """One record of the partition, in log order, while loading. Raises
        CorruptOffsetsRecordError for bytes that are no such record."""
        decoded_key, decoded_value = decode_record(key, value)
        self.offsets.apply(decoded_key, decoded_value)
        if isinstance(decoded_key, GroupMetadataKey):
            if decoded_value is None:
                self._loaded_metadata.pop(decoded_key.group, None)
            else:
                assert isinstance(decoded_value, GroupMetadataValue)
                self._loaded_metadata[decoded_key.group] = decoded_value

    def activate(self, now_ms: int) -> None:
        """Loading is over: every group comes back from its last metadata record."""
        for group_id, value in self._loaded_metadata.items():
            self._groups[group_id] = ClassicGroup.load(
                group_id, value, now_ms, self._config.group, self._new_uuid
            )
            self._touched.add(group_id)
        self._written_metadata = dict(self._loaded_metadata)
        self._loaded_metadata.clear()
        self.active = True

    # --- groups --------------------------------------------------------------------------------

    def group(self, group_id: str) -> ClassicGroup[K] | None:
        """The group, if this partition holds it."""
        return self._groups.get(group_id)

    def group_ids(self) -> list[str]:
        """Every group this partition holds (with members, metadata or offsets), sorted."""
        return sorted(set(self._groups) | set(self.offsets.groups()))

    def join(self, key: K, group_id: str, request: JoinRequest, now_ms: int) -> ShardStep[K]:
        """A JoinGroupRequest (the answer may come from a later input)."""
        group = self._touched_group(group_id)
        if group is None:
            if request.member_id:
                return ShardStep(((key, JoinAnswer(ErrorCode.unknown_member_id, "")),))
            group = self._groups[group_id] = ClassicGroup(
                group_id, self._config.group, self._new_uuid
            )
        return self._from_group(group.join(key, request, now_ms))

    def sync(self, key: K, group_id: str, request: SyncRequest, now_ms: int) -> ShardStep[K]:
        """A SyncGroupRequest (the answer may come from a later input)."""
        group = self._touched_group(group_id)
        if group is None:
            return ShardStep(((key, SyncAnswer(ErrorCode.unknown_member_id)),))
        return self._from_group(group.sync(key, request, now_ms))

    def heartbeat(
        self, key: K, group_id: str, request: HeartbeatRequest, now_ms: int
    ) -> ShardStep[K]:
        """A HeartbeatRequest."""
        group = self._touched_group(group_id)
        if group is None:
            return ShardStep(((key, HeartbeatAnswer(ErrorCode.unknown_member_id)),))
        return self._from_group(group.heartbeat(key, request, now_ms))

    def leave(
        self, key: K, group_id: str, members: Iterable[LeavingMember], now_ms: int
    ) -> ShardStep[K]:
        """A LeaveGroupRequest."""
        group = self._touched_group(group_id)
        if group is None:
            return ShardStep(((key, LeaveAnswer(ErrorCode.unknown_member_id)),))
        return self._from_group(group.leave(key, members, now_ms))

    # --- offsets -------------------------------------------------------------------------------

    def commit_offsets(
        self,
        key: K,
        group_id: str,
        *,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        offsets: Sequence[OffsetToCommit],
        now_ms: int,
        retention_ms: int | None = None,
        unknown_group_error: ErrorCode = ErrorCode.illegal_generation,
    ) -> ShardStep[K]:
        """An OffsetCommitRequest; answered once its records are written.

        `retention_ms`: the retention OffsetCommit v2-4 may ask for, stored as the offsets'
        expiry (None: `offsets.retention.minutes` after the group empties, KIP-211).
        `unknown_group_error`: what a commit with a generation to a group that does not exist
        gets (ILLEGAL_GENERATION before OffsetCommit v9, GROUP_ID_NOT_FOUND from v9, as Kafka)."""
        group = self._touched_group(group_id)
        if group is None:
            if generation_id >= 0:
                return self._commit_refused(key, offsets, unknown_group_error)
            # A simple consumer's commit, whatever member or instance id it carries: Kafka
            # keeps an Empty group for it.
            group = self._groups[group_id] = ClassicGroup(
                group_id, self._config.group, self._new_uuid
            )
        error = group.validate_offset_commit(member_id, group_instance_id, generation_id, now_ms)
        if error is not ErrorCode.none:
            return self._commit_refused(key, offsets, error)
        errors: list[tuple[TopicPartitionKey, ErrorCode]] = []
        written: list[tuple[OffsetCommitKey, OffsetCommitValue]] = []
        expire_timestamp_ms = -1 if retention_ms is None else now_ms + retention_ms
        for item in offsets:
            metadata = item.metadata or ""
            if len(metadata.encode()) > self._config.offset_metadata_max_bytes:
                errors.append(((item.topic, item.partition), ErrorCode.offset_metadata_too_large))
                continue
            errors.append(((item.topic, item.partition), ErrorCode.none))
            written.append(
                (
                    OffsetCommitKey(group_id, item.topic, item.partition),
                    OffsetCommitValue(
                        item.offset, metadata, now_ms, item.leader_epoch, expire_timestamp_ms
                    ),
                )
            )
        if not written:
            return ShardStep(((key, CommitAnswer(tuple(errors))),))
        write = self._new_write(
            _CommitWrite(key, tuple(written), tuple(errors)),
            tuple((encode_key(k), encode_value(v)) for k, v in written),
        )
        self._pending_commits.update(k for k, _ in written)
        return ShardStep(writes=(write,))

    def _commit_refused(
        self, key: K, offsets: Sequence[OffsetToCommit], error: ErrorCode
    ) -> ShardStep[K]:
        answer = CommitAnswer(tuple(((o.topic, o.partition), error) for o in offsets))
        return ShardStep(((key, answer),))

    def committed(
        self, group_id: str, partitions: Iterable[TopicPartitionKey] | None = None
    ) -> dict[TopicPartitionKey, OffsetCommitValue]:
        """The group's committed offsets (OffsetFetch): of `partitions`, or all when None."""
        return self.offsets.committed(group_id, partitions)

    # --- administration ----------------------------------------------------------------------

    def describe(self, group_id: str) -> GroupDescription:
        """The DescribeGroups view of the group (Kafka's GroupMetadataManager.describeGroups).

        A group with committed offsets alone is Empty with protocol type ""; a group this
        partition does not know is Dead with no members, which Kafka answers without an error
        (before DescribeGroups v6).
        """
        group = self._touched_group(group_id)
        if group is not None:
            return group.describe()
        state = GroupState.EMPTY if self.offsets.committed(group_id) else GroupState.DEAD
        return GroupDescription(group_id, state, "", "", ())

    def listed(self, admitted: ListGroupsFilter) -> list[ListedGroup]:
        """ListGroups: the groups of the partition that `admitted` admits, sorted by id.

        A group with committed offsets alone is Empty with protocol type "" (Kafka holds such a
        group as an Empty classic group); a group being deleted is not listed.
        """
        listed = []
        for group_id in self.group_ids():
            group = self._touched_group(group_id)
            if group is None:
                entry = ListedGroup(group_id, "", GroupState.EMPTY)
            elif group.state is GroupState.DEAD:
                continue
            else:
                entry = ListedGroup(group_id, group.protocol_type or "", group.state)
            if admitted.admits(entry.state):
                listed.append(entry)
        return listed

    def delete_groups(self, key: K, group_ids: Sequence[str], now_ms: int) -> ShardStep[K]:
        """A DeleteGroupsRequest for groups of this partition; answered once written.

        As Kafka's: a group with members is NON_EMPTY_GROUP, one that does not exist (or is
        being deleted) GROUP_ID_NOT_FOUND. Every other group goes Dead at once, the tombstones
        of its offsets and of its metadata are written in one batch, and the groups are
        forgotten once it is durable; if it cannot be written they come back as they were and
        get the write's error.
        """
        errors: list[tuple[str, ErrorCode]] = []
        deleted: list[_DeletedGroup] = []
        answers: list[tuple[K, ShardAnswer]] = []
        state_changes: list[GroupStateChange] = []
        for group_id in group_ids:
            error = self._deletion_error(group_id)
            errors.append((group_id, error))
            if error is ErrorCode.none:
                deletion, step = self._start_deletion(group_id, now_ms)
                deleted.append(deletion)
                answers.extend(step.answers)
                state_changes.extend(step.state_changes)
        if not deleted:
            answers.append((key, DeleteGroupsAnswer(tuple(errors))))
            return ShardStep(tuple(answers))
        records: list[Record] = []
        for d in deleted:
            records.extend((encode_key(k), None) for k in d.offsets)
            records.append((encode_key(GroupMetadataKey(d.group_id)), None))
        write = self._new_write(_GroupsDeletion(key, tuple(errors), tuple(deleted)), tuple(records))
        return ShardStep(tuple(answers), (write,), tuple(state_changes))

    def _deletion_error(self, group_id: str) -> ErrorCode:
        """Kafka's ClassicGroup.validateDeleteGroup."""
        group = self._touched_group(group_id)
        if group is None:
            has_offsets = bool(self.offsets.committed(group_id))
            return ErrorCode.none if has_offsets else ErrorCode.group_id_not_found
        if group.state is GroupState.DEAD:
            return ErrorCode.group_id_not_found
        if group.state in _MEMBER_STATES:
            return ErrorCode.non_empty_group
        return ErrorCode.none

    def _start_deletion(self, group_id: str, now_ms: int) -> tuple[_DeletedGroup, GroupStep[K]]:
        group = self._touched_group(group_id)
        restore = None
        if group is None:
            # Offsets alone: a Dead group refuses commits until the deletion is written.
            group = self._groups[group_id] = ClassicGroup(
                group_id, self._config.group, self._new_uuid
            )
        else:
            restore = GroupMetadataValue(
                group.protocol_type or "", group.generation_id, None, None, ()
            )
        # Dead, a group answers its requests COORDINATOR_NOT_AVAILABLE: the client looks the
        # coordinator up again, and by then the group is gone and may be created anew.
        step = group.unload(now_ms)
        # A commit being written lands before these tombstones, which must then delete it too.
        pending = {k for k in self._pending_commits if k.group == group_id}
        offsets = tuple(
            sorted(
                pending.union(self.offsets.deletions(group_id)),
                key=lambda k: (k.topic, k.partition),
            )
        )
        return _DeletedGroup(group_id, restore, offsets), step

    def _groups_deleted(
        self, pending: _GroupsDeletion[K], error: ErrorCode, now_ms: int
    ) -> ShardStep[K]:
        deleted = {d.group_id for d in pending.deleted}
        if error is not ErrorCode.none:
            restored: list[GroupStateChange] = []
            for d in pending.deleted:
                if d.restore is None:
                    del self._groups[d.group_id]
                else:
                    group = self._groups[d.group_id] = ClassicGroup.load(
                        d.group_id, d.restore, now_ms, self._config.group, self._new_uuid
                    )
                    self._touched.add(d.group_id)
                    restored.append(group.state_change(GroupState.DEAD))
            failed = WRITE_ERROR_ANSWERS.get(error, error)
            errors = tuple((g, failed if g in deleted else e) for g, e in pending.errors)
            return ShardStep(((pending.key, DeleteGroupsAnswer(errors)),), (), tuple(restored))
        for d in pending.deleted:
            for key in d.offsets:
                self.offsets.apply(key, None)
            self.offsets.apply(GroupMetadataKey(d.group_id), None)
            self._written_metadata.pop(d.group_id, None)
            del self._groups[d.group_id]
        return ShardStep(((pending.key, DeleteGroupsAnswer(pending.errors)),))

    def delete_offsets(
        self, key: K, group_id: str, partitions: Sequence[TopicPartitionKey], now_ms: int
    ) -> ShardStep[K]:
        """An OffsetDeleteRequest; answered once its tombstones are written.

        As Kafka's (ClassicGroup.validateOffsetDelete, OffsetMetadataManager.deleteOffsets): a
        group that does not exist is GROUP_ID_NOT_FOUND, a group with members that does not use
        the consumer protocol NON_EMPTY_GROUP. A partition of a topic the group's consumers are
        subscribed to is GROUP_SUBSCRIBED_TO_TOPIC; every other partition is NONE, and its
        offset, if one is committed, is tombstoned.
        """
        group = self._touched_group(group_id)
        unknown = not self.offsets.committed(group_id) if group is None else False
        if unknown or (group is not None and group.state is GroupState.DEAD):
            return ShardStep(((key, OffsetDeleteAnswer(ErrorCode.group_id_not_found)),))
        if (
            group is not None
            and group.state in _MEMBER_STATES
            and group.protocol_type != CONSUMER_PROTOCOL_TYPE
        ):
            return ShardStep(((key, OffsetDeleteAnswer(ErrorCode.non_empty_group)),))
        subscribed = self._subscribed_topics(group)
        committed = self.offsets.committed(group_id, partitions)
        errors: list[tuple[TopicPartitionKey, ErrorCode]] = []
        deleted: list[OffsetCommitKey] = []
        for topic, partition in partitions:
            if subscribed is None or topic in subscribed:
                errors.append(((topic, partition), ErrorCode.group_subscribed_to_topic))
                continue
            errors.append(((topic, partition), ErrorCode.none))
            if (topic, partition) in committed:
                deleted.append(OffsetCommitKey(group_id, topic, partition))
        if not deleted:
            return ShardStep(((key, OffsetDeleteAnswer(ErrorCode.none, tuple(errors))),))
        write = self._new_write(
            _OffsetsDeletion(key, tuple(deleted), tuple(errors)),
            tuple((encode_key(k), None) for k in deleted),
        )
        return ShardStep(writes=(write,))

    def _subscribed_topics(self, group: ClassicGroup[K] | None) -> frozenset[str] | None:
        """The topics the group's consumers are subscribed to, as the members of its last
        written metadata say; None when that cannot be known, and Kafka then counts every
        topic as subscribed (ClassicGroup.isSubscribedToTopic)."""
        if (
            group is None
            or group.state not in _MEMBER_STATES
            or group.protocol_type != CONSUMER_PROTOCOL_TYPE
        ):
            return frozenset()
        written = self._written_metadata.get(group.group_id)
        if written is None or not written.members:
            return None
        topics: set[str] = set()
        for member in written.members:
            member_topics = subscription_topics(member.subscription)
            if member_topics is None:
                return None
            topics |= member_topics
        return frozenset(topics)

    # --- time and writes -----------------------------------------------------------------------

    def tick(self, now_ms: int) -> ShardStep[K]:
        """Timers of every group, and the retention of offsets."""
        answers: list[tuple[K, ShardAnswer]] = []
        writes: list[Write] = []
        state_changes: list[GroupStateChange] = []
        for group in list(self._groups.values()):
            deadline = group.next_deadline_ms()
            if deadline is not None and deadline <= now_ms:
                self._touched.add(group.group_id)
                step = self._from_group(group.tick(now_ms))
                answers.extend(step.answers)
                writes.extend(step.writes)
                state_changes.extend(step.state_changes)
        expired = tuple(
            k
            for k in self.offsets.expired(now_ms, self._config.offsets_retention_ms)
            if k not in self._pending_commits and self._offsets_may_expire(k.group)
        )
        if expired:
            writes.append(
                self._new_write(
                    _TombstoneWrite(expired), tuple((encode_key(k), None) for k in expired)
                )
            )
        return ShardStep(tuple(answers), tuple(writes), tuple(state_changes))

    def _offsets_may_expire(self, group_id: str) -> bool:
        """Kafka expires a classic group's offsets only while it is Empty; the store learns of
        members only from the assignment's write, too late for a group that rebalances."""
        group = self._groups.get(group_id)
        return group is None or group.state is GroupState.EMPTY

    def next_deadline_ms(self) -> int | None:
        """When `tick` next has group work to do (retention is checked on any tick)."""
        for group_id in self._touched:
            group = self._groups.get(group_id)
            deadline = None if group is None else group.next_deadline_ms()
            if deadline is not None:
                heapq.heappush(self._deadlines, (deadline, group_id))
        self._touched.clear()
        while self._deadlines:
            deadline, group_id = self._deadlines[0]
            group = self._groups.get(group_id)
            if group is not None and group.next_deadline_ms() == deadline:
                return deadline
            heapq.heappop(self._deadlines)
        return None

    def _touched_group(self, group_id: str) -> ClassicGroup[K] | None:
        """The group, noted as one whose timers the caller may change."""
        self._touched.add(group_id)
        return self._groups.get(group_id)

    def write_completed(self, write_id: int, error: ErrorCode, now_ms: int) -> ShardStep[K]:
        """The outcome of a `Write`: ErrorCode.none once its records are durable."""
        pending = self._writes.pop(write_id, None)
        if isinstance(pending, _GroupWrite):
            if error is ErrorCode.none:
                # Whether the group has members decides when its offsets may expire.
                self.offsets.apply(GroupMetadataKey(pending.group_id), pending.value)
                self._written_metadata[pending.group_id] = pending.value
            group = self._touched_group(pending.group_id)
            if group is None:
                return ShardStep()
            return self._from_group(group.write_completed(pending.group_write_id, error, now_ms))
        if isinstance(pending, _CommitWrite):
            for key, _ in pending.written:
                self._pending_commits[key] -= 1
                if not self._pending_commits[key]:
                    del self._pending_commits[key]
            if error is not ErrorCode.none:
                failed = _COMMIT_WRITE_ERROR_ANSWERS.get(error, error)
                answer = CommitAnswer(
                    tuple((tp, failed if e is ErrorCode.none else e) for tp, e in pending.errors)
                )
                return ShardStep(((pending.key, answer),))
            for key, value in pending.written:
                self.offsets.apply(key, value)
            return ShardStep(((pending.key, CommitAnswer(pending.errors)),))
        if isinstance(pending, _GroupsDeletion):
            return self._groups_deleted(pending, error, now_ms)
        if isinstance(pending, _OffsetsDeletion):
            if error is not ErrorCode.none:
                refused = OffsetDeleteAnswer(WRITE_ERROR_ANSWERS.get(error, error))
                return ShardStep(((pending.key, refused),))
            for key in pending.keys:
                self.offsets.apply(key, None)
            return ShardStep(((pending.key, OffsetDeleteAnswer(ErrorCode.none, pending.errors)),))
        if isinstance(pending, _TombstoneWrite) and error is ErrorCode.none:
            for key in pending.keys:
                self.offsets.apply(key, None)
        return ShardStep()

    def unload(self, now_ms: int) -> ShardStep[K]:
        """This broker stops leading the partition: groups go Dead, waiters NOT_COORDINATOR,
        and commits and deletions still being written are answered NOT_COORDINATOR."""
        answers: list[tuple[K, ShardAnswer]] = []
        for group in self._groups.values():
            answers.extend(group.unload(now_ms).answers)
        for pending in self._writes.values():
            if isinstance(pending, _CommitWrite):
                answers.append(
                    (
                        pending.key,
                        CommitAnswer(
                            tuple((tp, ErrorCode.not_coordinator) for tp, _ in pending.errors)
                        ),
                    )
                )
            elif isinstance(pending, _GroupsDeletion):
                deleted = {d.group_id for d in pending.deleted}
                errors = tuple(
                    (g, ErrorCode.not_coordinator if g in deleted else e) for g, e in pending.errors
                )
                answers.append((pending.key, DeleteGroupsAnswer(errors)))
            elif isinstance(pending, _OffsetsDeletion):
                answers.append((pending.key, OffsetDeleteAnswer(ErrorCode.not_coordinator)))
        self._writes.clear()
        self._pending_commits.clear()
        self._groups.clear()
        self._deadlines.clear()
        self._touched.clear()
        self._written_metadata.clear()
        self.active = False
        return ShardStep(tuple(answers))

    def _from_group(self, step: GroupStep[K]) -> ShardStep[K]:
        writes = tuple(
            self._new_write(
                _GroupWrite(write.group_id, write.write_id, write.value),
                ((encode_key(GroupMetadataKey(write.group_id)), encode_value(write.value)),),
            )
            for write in step.writes
        )
        return ShardStep(tuple(step.answers), writes, step.state_changes)

    def _new_write(
        self,
        pending: _GroupWrite
        | _CommitWrite[K]
        | _TombstoneWrite
        | _GroupsDeletion[K]
        | _OffsetsDeletion[K],
        records: tuple[Record, ...],
    ) -> Write:
        write_id = self._next_write_id
        self._next_write_id += 1
        self._writes[write_id] = pending
        return Write(write_id, records)


_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


def subscription_topics(subscription: bytes) -> frozenset[str] | None:
    """The topics of a consumer protocol Subscription, or None for bytes that are not one.

    Every version starts as version 0 does (int16 version, then an int32 count of topics,
    each an int16 length and UTF-8), which is all Kafka reads of it here (ClassicGroup.
    computeSubscribedTopics); the user data and later fields are ignored.
    """
    try:
        position = _INT16.size
        (count,) = _INT32.unpack_from(subscription, position)
        position += _INT32.size
        if count < 0:
            return None
        topics = set()
        for _ in range(count):
            (length,) = _INT16.unpack_from(subscription, position)
            position += _INT16.size
            if length < 0 or position + length > len(subscription):
                return None
            topics.add(subscription[position : position + length].decode())
            position += length
    except (struct.error, UnicodeDecodeError):
        return None
    return frozenset(topics)

"""The classic consumer-group protocol of one group: JoinGroup, SyncGroup, Heartbeat, LeaveGroup.

A pure state machine, as Kafka's group coordinator implements it (ClassicGroup and the
classic-group part of GroupMetadataManager): no I/O and no clock. Every input takes `now_ms`
and returns a `GroupStep`: the answers that are ready, each paired with the opaque key the caller
gave with its request, and the group metadata records to write to `__consumer_offsets`.

Requests may be answered later than they arrive. A JoinGroup waits for the rebalance to finish,
a follower's SyncGroup waits for the leader's; their answers come out of whichever later input
completes them (another request, `tick`, `write_completed`, `unload`). Every request is answered
exactly once, including one that the same member supersedes with a new request (answered
NOT_COORDINATOR, as Kafka does since KAFKA-20938) and one of a member that is removed meanwhile.

Writes: each `MetadataWrite` is appended by the caller, which then reports the outcome with
`write_completed(write_id, error)`. Like Kafka, the group only changes once the write is known:
the leader's assignment makes the group Stable and answers the SyncGroups only when its write
succeeded (a failure answers them with the error and rebalances again); a static member that
replaced its old member id in a Stable group gets its JoinGroup answer then too. A group that
becomes Empty is written without waiting for anything.

The rules, from Kafka 3.x/4.x:

- A new member (empty member id) of JoinGroup v4+ gets MEMBER_ID_REQUIRED and a member id
  (client id + "-" + UUID), and stays pending until it joins with it or its session timeout
  passes (KIP-394). Older versions join at once. A static member (group.instance.id, KIP-345)
  never waits: its id is the instance id + "-" + UUID.
- Joining moves the group to PreparingRebalance. The join phase ends once every member and every
  pending member has joined, or when the rebalance timeout (the largest of the members') passes;
  dynamic members that did not rejoin are removed then, static ones are kept. The first rebalance
  of an Empty group instead waits `initial_rebalance_delay_ms`, extended by the same delay each
  time a member joins meanwhile, never beyond the rebalance timeout (KIP-134).
- Ending the join phase bumps the generation, chooses the protocol (each member votes for the
  first of its protocols that every member supports; most votes wins) and the leader (the old
  one if it rejoined, else the first member that did), and answers every waiting JoinGroup;
  only the leader's answer lists the members and their metadata. Members then have the rebalance
  timeout to send SyncGroup, or are removed and the group rebalances again.
- A known static member that joins with a new member id replaces the old member; in a Stable
  group whose chosen protocol stays the same there is no rebalance: the old member's assignment
  is kept for the new id and answered by its next SyncGroup. A request that names a known
  instance id with another member id is FENCED_INSTANCE_ID.
- Sessions: a member that sends no heartbeat within its session timeout is removed, unless it is
  waiting for a JoinGroup or SyncGroup answer; a new member whose JoinGroup is still waiting is
  removed after `new_member_join_timeout_ms`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Generic, TypeVar
from uuid import UUID, uuid4

from kio.schema.errors import ErrorCode

from broker.groups.records import GroupMetadataValue, MemberMetadata

K = TypeVar("K")

# The member id of a request from a member that has none yet, and of some error answers.
UNKNOWN_MEMBER_ID = ""
# The generation id of answers that carry no generation.
NO_GENERATION = -1


class GroupState(StrEnum):
    """A classic group's state, spelled as Kafka's DescribeGroups and ListGroups spell it."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True, slots=True)
class GroupConfig:
    """The coordinator settings the protocol uses, with Kafka's defaults.

    `initial_rebalance_delay_ms`: group.initial.rebalance.delay.ms. `min_session_timeout_ms`
    and `max_session_timeout_ms`: group.min.session.timeout.ms and group.max.session.timeout.ms.
    `new_member_join_timeout_ms`: how long a new member's JoinGroup may wait (Kafka's
    classicGroupNewMemberJoinTimeoutMs, five minutes).
    """

    initial_rebalance_delay_ms: int = 3_000
    min_session_timeout_ms: int = 6_000
    max_session_timeout_ms: int = 1_800_000
    new_member_join_timeout_ms: int = 300_000


@dataclass(frozen=True, slots=True)
class Protocol:
    """One protocol a member supports (e.g. the "range" assignor) and its metadata for it."""

    name: str
    metadata: bytes


@dataclass(frozen=True, slots=True)
class JoinRequest:
    """A JoinGroupRequest, with the request context the protocol needs.

    `require_known_member_id`: the request is v4 or later (KIP-394). `supports_skip_assignment`:
    v9 or later (KIP-814), which changes the answer to a replaced static leader.
    """

    member_id: str
    client_id: str
    client_host: str
    protocol_type: str
    protocols: tuple[Protocol, ...]
    session_timeout_ms: int
    rebalance_timeout_ms: int
    group_instance_id: str | None = None
    require_known_member_id: bool = True
    supports_skip_assignment: bool = False


@dataclass(frozen=True, slots=True)
class JoinedMember:
    """A member as the leader's JoinGroup answer lists it."""

    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True)
class JoinAnswer:
    """A JoinGroupResponse. Error answers keep the defaults except `member_id`."""

    error: ErrorCode
    member_id: str
    generation_id: int = NO_GENERATION
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    members: tuple[JoinedMember, ...] = ()
    skip_assignment: bool = False


@dataclass(frozen=True, slots=True)
class SyncRequest:
    """A SyncGroupRequest; `assignments` (member id -> assignment) only from the leader.

    `protocol_type` and `protocol_name` are sent from v5 on; None skips their check.
    """

    member_id: str
    generation_id: int
    assignments: Mapping[str, bytes] = field(default_factory=dict)
    group_instance_id: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None


@dataclass(frozen=True, slots=True)
class SyncAnswer:
    """A SyncGroupResponse."""

    error: ErrorCode
    assignment: bytes = b""
    protocol_type: str | None = None
    protocol_name: str | None = None


@dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    """A HeartbeatRequest."""

    member_id: str
    generation_id: int
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class HeartbeatAnswer:
    """A HeartbeatResponse."""

    error: ErrorCode


@dataclass(frozen=True, slots=True)
class LeavingMember:
    """One member of a LeaveGroupRequest.

    Versions before 3 name a single member by member id. An empty member id with an instance id
    removes that static member, whatever its member id (how admin clients remove members).
    """

    member_id: str
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class LeftMember:
    """The answer for one member of a LeaveGroupRequest."""

    member_id: str
    group_instance_id: str | None
    error: ErrorCode


@dataclass(frozen=True, slots=True)
class LeaveAnswer:
    """A LeaveGroupResponse: a group-level error, or one answer per member asked for.

    Versions before 3 carry a single error: the first member's, when the group-level one is none.
    """

    error: ErrorCode
    members: tuple[LeftMember, ...] = ()


Answer = JoinAnswer | SyncAnswer | HeartbeatAnswer | LeaveAnswer


@dataclass(frozen=True, slots=True)
class MetadataWrite:
    """Write `value` under the group's GroupMetadataKey, then call `write_completed(write_id)`."""

    write_id: int
    group_id: str
    value: GroupMetadataValue


@dataclass(frozen=True, slots=True)
class GroupStateChange:
    """The group moved to `state`: as it was right after the move, for the operator's log."""

    group_id: str
    state: GroupState
    previous_state: GroupState
    generation_id: int
    protocol_name: str | None
    leader_id: str | None
    member_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class GroupStep(Generic[K]):
    """What one input produced: answers to send now, records to write, and the state changes
    it made, each in order."""

    answers: tuple[tuple[K, Answer], ...] = ()
    writes: tuple[MetadataWrite, ...] = ()
    state_changes: tuple[GroupStateChange, ...] = ()


@dataclass(frozen=True, slots=True)
class MemberDescription:
    """A member as DescribeGroups shows it; metadata and assignment only while Stable."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupDescription:
    """A group as DescribeGroups shows it; `protocol` is empty unless the group is Stable."""

    group_id: str
    state: GroupState
    protocol_type: str
    protocol: str
    members: tuple[MemberDescription, ...]


@dataclass(slots=True)
class _Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocols: tuple[Protocol, ...]
    assignment: bytes = b""
    # Joined and not yet through a join phase: its session does not count while it waits.
    is_new: bool = False

    def metadata(self, protocol_name: str | None) -> bytes:
        for protocol in self.protocols:
            if protocol.name == protocol_name:
                return protocol.metadata
        return b""

    def vote(self, candidates: set[str]) -> str:
        return next(p.name for p in self.protocols if p.name in candidates)


@dataclass(frozen=True, slots=True)
class _JoinTimer:
    """When the join phase ends; `initial` timers may extend themselves (KIP-134)."""

    deadline_ms: int
    initial: bool = False
    delay_ms: int = 0
    remaining_ms: int = 0


@dataclass(frozen=True, slots=True)
class _SyncTimer:
    deadline_ms: int
    generation_id: int


@dataclass(frozen=True, slots=True)
class _AssignmentWrite:
    """The leader's assignment for `generation_id`, being written."""

    generation_id: int
    assignment: dict[str, bytes]


@dataclass(frozen=True, slots=True)
class _StaticReplacementWrite:
    """A static member's new member id in a Stable group, being written.

    What a failed write must restore, and what the answer needs: the leader before the
    replacement, which pre-v9 clients must see (so that a replaced leader acts as a follower and
    fetches its assignment with SyncGroup).
    """

    group_instance_id: str
    old_member_id: str
    new_member_id: str
    old_protocols: tuple[Protocol, ...]
    old_rebalance_timeout_ms: int
    old_session_timeout_ms: int
    leader_before: str
    supports_skip_assignment: bool


_FollowUp = _AssignmentWrite | _StaticReplacementWrite | None

# How Kafka answers a failed group metadata write (appendGroupMetadataErrorToResponseError).
WRITE_ERROR_ANSWERS: dict[ErrorCode, ErrorCode] = {
    ErrorCode.unknown_topic_or_partition: ErrorCode.coordinator_not_available,
    ErrorCode.not_enough_replicas: ErrorCode.coordinator_not_available,
    ErrorCode.not_enough_replicas_after_append: ErrorCode.coordinator_not_available,
    ErrorCode.request_timed_out: ErrorCode.coordinator_not_available,
    ErrorCode.not_leader_or_follower: ErrorCode.not_coordinator,
    ErrorCode.kafka_storage_error: ErrorCode.not_coordinator,
    ErrorCode.message_too_large: ErrorCode.unknown_server_error,
    ErrorCode.record_list_too_large: ErrorCode.unknown_server_error,
    ErrorCode.invalid_fetch_size: ErrorCode.unknown_server_error,
}

# Which states a group may move to a state from (Kafka's ClassicGroupState).
_VALID_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY}
    ),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
}

_JOIN_TIMER = "join"
_SYNC_TIMER = "sync"


class ClassicGroup(Generic[K]):
    """One classic group, as its coordinator holds it in memory.

    `K` is the type of the keys the caller gives with requests to find their answers again.
    A new group is Empty at generation 0; `load` rebuilds one from its last metadata record.
    """

    def __init__(
        self,
        group_id: str,
        config: GroupConfig | None = None,
        new_uuid: Callable[[], UUID] = uuid4,
    ) -> None:
        self.group_id = group_id
        self._config = config or GroupConfig()
        self._new_uuid = new_uuid
        self._state = GroupState.EMPTY
        self._previous_state = GroupState.EMPTY
        self._state_since_ms = -1
        self._generation_id = 0
        self._protocol_type: str | None = None
        self._protocol_name: str | None = None
        self._leader_id: str | None = None
        # In join order, which is the order leaders are picked in when one leaves.
        self._members: dict[str, _Member] = {}
        self._static_members: dict[str, str] = {}
        # Given a member id by MEMBER_ID_REQUIRED, not joined yet (dict: ordered set).
        self._pending_members: dict[str, None] = {}
        # Members that got their JoinGroup answer and have not sent SyncGroup yet.
        self._pending_sync: set[str] = set()
        self._join_waiters: dict[str, K] = {}
        self._sync_waiters: dict[str, K] = {}
        self._session_deadlines: dict[str, int] = {}
        self._join_timer: _JoinTimer | None = None
        self._sync_timer: _SyncTimer | None = None
        # A member joined during the initial delay: the delay may be extended once more.
        self._new_member_added = False
        self._writes: dict[int, _FollowUp] = {}
        self._next_write_id = 0
        self._answers: list[tuple[K, Answer]] = []
        self._new_writes: list[MetadataWrite] = []
        self._state_changes: list[GroupStateChange] = []

    @classmethod
    def load(
        cls,
        group_id: str,
        value: GroupMetadataValue,
        now_ms: int,
        config: GroupConfig | None = None,
        new_uuid: Callable[[], UUID] = uuid4,
    ) -> ClassicGroup[K]:
        """The group as its last metadata record left it, for a coordinator that loads it.

        Stable with the record's members, generation, protocol, leader and assignments (each
        member supporting only the chosen protocol, with its recorded subscription), or Empty
        when the record has no members. Every member's session starts at `now_ms`.
        """
        group: ClassicGroup[K] = cls(group_id, config, new_uuid)
        group._generation_id = value.generation
        group._protocol_type = value.protocol_type or None
        group._state_since_ms = value.current_state_timestamp_ms
        if not value.members:
            return group
        if value.protocol is None:
            raise ValueError(f"group {group_id} has members but no protocol")
        group._state = GroupState.STABLE
        group._protocol_name = value.protocol
        for recorded in value.members:
            member = _Member(
                member_id=recorded.member_id,
                group_instance_id=recorded.group_instance_id,
                client_id=recorded.client_id,
                client_host=recorded.client_host,
                rebalance_timeout_ms=recorded.rebalance_timeout_ms,
                session_timeout_ms=recorded.session_timeout_ms,
                protocols=(Protocol(value.protocol, recorded.subscription),),
                assignment=recorded.assignment,
            )
            group._members[member.member_id] = member
            if member.group_instance_id is not None:
                group._static_members[member.group_instance_id] = member.member_id
            group._session_deadlines[member.member_id] = now_ms + member.session_timeout_ms
        group._leader_id = value.leader if value.leader in group._members else None
        if group._leader_id is None:
            group._leader_id = next(iter(group._members))
        return group

    # --- what the group is now ---------------------------------------------------------------

    @property
    def state(self) -> GroupState:
        """The current state."""
        return self._state

    @property
    def generation_id(self) -> int:
        """The current generation: bumped by every completed join phase."""
        return self._generation_id

    @property
    def protocol_type(self) -> str | None:
        """The protocol type every member uses (e.g. "consumer"); None before any member."""
        return self._protocol_type

    @property
    def protocol_name(self) -> str | None:
        """The protocol chosen for the current generation; None while the group is Empty."""
        return self._protocol_name

    @property
    def leader_id(self) -> str | None:
        """The leader's member id; None without members."""
        return self._leader_id

    @property
    def member_ids(self) -> tuple[str, ...]:
        """The members' ids, in join order (pending members are not members yet)."""
        return tuple(self._members)

    def state_change(self, previous_state: GroupState) -> GroupStateChange:
        """The group as it is now, reported as a move from `previous_state`."""
        return GroupStateChange(
            self.group_id,
            self._state,
            previous_state,
            self._generation_id,
            self._protocol_name,
            self._leader_id,
            tuple(self._members),
        )

    def describe(self) -> GroupDescription:
        """The DescribeGroups view of the group, as Kafka builds it."""
        stable = self._state is GroupState.STABLE
        members = tuple(
            MemberDescription(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                metadata=m.metadata(self._protocol_name) if stable else b"",
                assignment=m.assignment if stable else b"",
            )
            for m in self._members.values()
        )
        return GroupDescription(
            group_id=self.group_id,
            state=self._state,
            protocol_type=self._protocol_type or "",
            protocol=(self._protocol_name or "") if stable else "",
            members=members,
        )

    def next_deadline_ms(self) -> int | None:
        """When `tick` next has something to do; None when no timer runs."""
        deadlines = list(self._session_deadlines.values())
        if self._join_timer is not None:
            deadlines.append(self._join_timer.deadline_ms)
        if self._sync_timer is not None:
            deadlines.append(self._sync_timer.deadline_ms)
        return min(deadlines, default=None)

    # --- inputs ------------------------------------------------------------------------------

    def join(self, key: K, request: JoinRequest, now_ms: int) -> GroupStep[K]:
        """A JoinGroupRequest; its answer comes now or when the join phase ends."""
        config = self._config
        if not (
            config.min_session_timeout_ms
            <= request.session_timeout_ms
            <= config.max_session_timeout_ms
        ):
            self._answer(key, JoinAnswer(ErrorCode.invalid_session_timeout, request.member_id))
        elif request.member_id == UNKNOWN_MEMBER_ID:
            self._join_new_member(key, request, now_ms)
        else:
            self._join_known_member(key, request, now_ms)
        return self._step()

    def sync(self, key: K, request: SyncRequest, now_ms: int) -> GroupStep[K]:
        """A SyncGroupRequest; a follower's waits for the leader's assignment to be written."""
        error = self._sync_error(request)
        if error is not None:
            self._answer(key, SyncAnswer(error))
        elif self._state is GroupState.PREPARING_REBALANCE:
            self._answer(key, SyncAnswer(ErrorCode.rebalance_in_progress))
        elif self._state is GroupState.COMPLETING_REBALANCE:
            self._await_sync(key, request)
        else:
            member = self._members[request.member_id]
            self._synced(member.member_id)
            # Kafka's first coordinator renewed the session here; the answer is immediate, so
            # the member is alive and this keeps a heartbeat thread that starts late safe.
            self._renew_session(member, now_ms)
            self._answer(
                key,
                SyncAnswer(
                    ErrorCode.none, member.assignment, self._protocol_type, self._protocol_name
                ),
            )
        return self._step()

    def heartbeat(self, key: K, request: HeartbeatRequest, now_ms: int) -> GroupStep[K]:
        """A HeartbeatRequest: renews the member's session; answered at once."""
        error: ErrorCode | None = ErrorCode.coordinator_not_available
        if self._state is not GroupState.DEAD:
            error = self._member_error(request.member_id, request.group_instance_id)
        if error is None and request.generation_id != self._generation_id:
            error = ErrorCode.illegal_generation
        if error is None:
            self._renew_session(self._members[request.member_id], now_ms)
            if self._state is GroupState.PREPARING_REBALANCE:
                error = ErrorCode.rebalance_in_progress
            else:
                error = ErrorCode.none
        self._answer(key, HeartbeatAnswer(error))
        return self._step()

    def leave(self, key: K, members: Iterable[LeavingMember], now_ms: int) -> GroupStep[K]:
        """A LeaveGroupRequest: removes each member it may and rebalances once for all."""
        if self._state is GroupState.DEAD:
            self._answer(key, LeaveAnswer(ErrorCode.coordinator_not_available))
            return self._step()
        results: list[LeftMember] = []
        for leaving in members:
            error = self._leave_one(leaving)
            results.append(LeftMember(leaving.member_id, leaving.group_instance_id, error))
        if any(r.error is ErrorCode.none for r in results):
            if self._state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
                self._maybe_prepare_rebalance_or_complete_join(now_ms)
            elif self._state is GroupState.PREPARING_REBALANCE:
                self._maybe_complete_join_phase(now_ms)
        self._answer(key, LeaveAnswer(ErrorCode.none, tuple(results)))
        return self._step()

    def tick(self, now_ms: int) -> GroupStep[K]:
        """Fires every timer due by `now_ms`: sessions, the join phase's end, sync deadlines.

        A timer that firing re-arms waits for a later tick, even when already due again.
        """
        fired: set[str] = set()
        while (due := self._due_timer(now_ms, fired)) is not None:
            fired.add(due)
            if due == _JOIN_TIMER:
                self._join_timer_fired(now_ms)
            elif due == _SYNC_TIMER:
                self._sync_timer_fired(now_ms)
            else:
                self._session_expired(due, now_ms)
        return self._step()

    def write_completed(self, write_id: int, error: ErrorCode, now_ms: int) -> GroupStep[K]:
        """The outcome of writing `MetadataWrite` `write_id`: ErrorCode.none once it is durable.

        A write the group no longer waits for (it was unloaded since) changes nothing.
        """
        follow_up = self._writes.pop(write_id, None)
        if isinstance(follow_up, _AssignmentWrite):
            self._assignment_written(follow_up, error, now_ms)
        elif isinstance(follow_up, _StaticReplacementWrite):
            self._static_replacement_written(follow_up, error, now_ms)
        return self._step()

    def validate_offset_commit(
        self, member_id: str, group_instance_id: str | None, generation_id: int, now_ms: int
    ) -> ErrorCode:
        """Whether an OffsetCommit from this member at this generation may be stored (Kafka's
        ClassicGroup.validateOffsetCommit); a member's commit also renews its session.

        A commit with a negative generation and no member is a simple consumer's: accepted
        while the group is Empty, UNKNOWN_MEMBER_ID otherwise.
        """
        if self._state is GroupState.DEAD:
            return ErrorCode.coordinator_not_available
        if generation_id < 0 and self._state is GroupState.EMPTY:
            return ErrorCode.none
        if generation_id >= 0 or member_id or group_instance_id is not None:
            error = self._member_error(member_id, group_instance_id)
            if error is not None:
                return error
            if generation_id != self._generation_id:
                return ErrorCode.illegal_generation
        elif self._state is not GroupState.EMPTY:
            return ErrorCode.unknown_member_id
        if self._state is GroupState.COMPLETING_REBALANCE:
            return ErrorCode.rebalance_in_progress
        member = self._members.get(member_id)
        if member is not None:
            self._renew_session(member, now_ms)
        return ErrorCode.none

    def unload(self, now_ms: int) -> GroupStep[K]:
        """This broker stops coordinating the group: Dead, waiting requests NOT_COORDINATOR."""
        for member_id, key in self._join_waiters.items():
            self._answer(key, JoinAnswer(ErrorCode.not_coordinator, member_id))
        for key in self._sync_waiters.values():
            self._answer(key, SyncAnswer(ErrorCode.not_coordinator))
        self._join_waiters.clear()
        self._sync_waiters.clear()
        self._session_deadlines.clear()
        self._pending_members.clear()
        self._join_timer = None
        self._sync_timer = None
        self._writes.clear()
        self._transition(GroupState.DEAD, now_ms)
        return self._step()

    # --- JoinGroup ---------------------------------------------------------------------------

    def _join_new_member(self, key: K, request: JoinRequest, now_ms: int) -> None:
        if self._state is GroupState.DEAD:
            # The group moved to another coordinator: the client looks it up again.
            self._answer(key, JoinAnswer(ErrorCode.coordinator_not_available, UNKNOWN_MEMBER_ID))
            return
        if not self._supports_protocols(request.protocol_type, request.protocols):
            self._answer(key, JoinAnswer(ErrorCode.inconsistent_group_protocol, UNKNOWN_MEMBER_ID))
            return
        instance_id = request.group_instance_id
        prefix = request.client_id if instance_id is None else instance_id
        member_id = f"{prefix}-{self._new_uuid()}"
        if instance_id is not None:
            old_member_id = self._static_members.get(instance_id)
            if old_member_id is None:
                self._add_member(key, request, member_id, now_ms)
            else:
                self._replace_static_member(key, request, old_member_id, member_id, now_ms)
        elif request.require_known_member_id:
            self._pending_members[member_id] = None
            self._session_deadlines[member_id] = now_ms + request.session_timeout_ms
            self._answer(key, JoinAnswer(ErrorCode.member_id_required, member_id))
        else:
            self._add_member(key, request, member_id, now_ms)

    def _join_known_member(self, key: K, request: JoinRequest, now_ms: int) -> None:
        member_id = request.member_id
        if self._state is GroupState.DEAD:
            self._answer(key, JoinAnswer(ErrorCode.coordinator_not_available, member_id))
            return
        if not self._supports_protocols(request.protocol_type, request.protocols):
            self._answer(key, JoinAnswer(ErrorCode.inconsistent_group_protocol, member_id))
            return
        if member_id in self._pending_members:
            if request.group_instance_id is not None:
                # Static members are never made pending; Kafka fails such a request outright.
                self._answer(key, JoinAnswer(ErrorCode.unknown_server_error, member_id))
            else:
                self._add_member(key, request, member_id, now_ms)
            return
        error = self._member_error(member_id, request.group_instance_id)
        if error is not None:
            self._answer(key, JoinAnswer(error, member_id))
            return
        member = self._members[member_id]
        unchanged = member.protocols == request.protocols
        if self._state is GroupState.PREPARING_REBALANCE:
            self._update_member(key, member, request, now_ms)
        elif self._state is GroupState.COMPLETING_REBALANCE and unchanged:
            # It lost the answer it was given: the same answer again.
            self._answer(key, self._joined_answer(member_id))
        elif self._state is GroupState.COMPLETING_REBALANCE:
            self._update_member(key, member, request, now_ms)
        elif self._state is GroupState.STABLE and (member_id == self._leader_id or not unchanged):
            # A leader's rejoin forces a rebalance: it is how a consumer leader reacts to
            # changes its members' metadata does not show (new partitions of a topic).
            self._update_member(key, member, request, now_ms)
        elif self._state is GroupState.STABLE:
            # A follower with unchanged metadata: the current generation, to sync with.
            self._answer(key, self._joined_answer(member_id))
        else:
            self._answer(key, JoinAnswer(ErrorCode.unknown_member_id, member_id))

    def _add_member(self, key: K, request: JoinRequest, member_id: str, now_ms: int) -> None:
        member = _Member(
            member_id=member_id,
            group_instance_id=request.group_instance_id,
            client_id=request.client_id,
            client_host=request.client_host,
            rebalance_timeout_ms=request.rebalance_timeout_ms,
            session_timeout_ms=request.session_timeout_ms,
            protocols=request.protocols,
            is_new=True,
        )
        if (
            self._state is GroupState.PREPARING_REBALANCE
            and self._previous_state is GroupState.EMPTY
        ):
            self._new_member_added = True
        if not self._members:
            self._protocol_type = request.protocol_type
        if member.group_instance_id is not None:
            self._static_members[member.group_instance_id] = member_id
        if self._leader_id is None:
            self._leader_id = member_id
        self._members[member_id] = member
        self._join_waiters[member_id] = key
        self._pending_members.pop(member_id, None)
        # Its session cannot be kept alive while its JoinGroup waits (it has no member id to
        # heartbeat with, or its connection is muted): bound the wait instead, so clients that
        # gave up and retried do not pile up as defunct members.
        self._session_deadlines[member_id] = now_ms + self._config.new_member_join_timeout_ms
        self._maybe_prepare_rebalance_or_complete_join(now_ms)

    def _update_member(self, key: K, member: _Member, request: JoinRequest, now_ms: int) -> None:
        self._set_join_waiter(member.member_id, key)
        member.protocols = request.protocols
        member.rebalance_timeout_ms = request.rebalance_timeout_ms
        member.session_timeout_ms = request.session_timeout_ms
        self._maybe_prepare_rebalance_or_complete_join(now_ms)

    def _set_join_waiter(self, member_id: str, key: K) -> None:
        superseded = self._join_waiters.pop(member_id, None)
        if superseded is not None:
            self._answer(superseded, JoinAnswer(ErrorCode.not_coordinator, member_id))
        self._join_waiters[member_id] = key

    def _replace_static_member(
        self, key: K, request: JoinRequest, old_member_id: str, new_member_id: str, now_ms: int
    ) -> None:
        assert request.group_instance_id is not None
        leader_before = self._leader_id or ""
        member = self._rename_static_member(request.group_instance_id, old_member_id, new_member_id)
        self._renew_session(member, now_ms)
        follow_up = _StaticReplacementWrite(
            group_instance_id=request.group_instance_id,
            old_member_id=old_member_id,
            new_member_id=new_member_id,
            old_protocols=member.protocols,
            old_rebalance_timeout_ms=member.rebalance_timeout_ms,
            old_session_timeout_ms=member.session_timeout_ms,
            leader_before=leader_before,
            supports_skip_assignment=request.supports_skip_assignment,
        )
        member.protocols = request.protocols
        member.rebalance_timeout_ms = request.rebalance_timeout_ms
        member.session_timeout_ms = request.session_timeout_ms
        self._join_waiters[new_member_id] = key
        if self._state is GroupState.STABLE:
            if self._select_protocol() == self._protocol_name:
                # Same protocol, same assignment: persist the new member id, no rebalance.
                assignment = {m.member_id: m.assignment for m in self._members.values()}
                self._write(assignment, follow_up)
            else:
                self._maybe_prepare_rebalance_or_complete_join(now_ms)
        elif self._state is GroupState.COMPLETING_REBALANCE:
            # The leader may already be assigning to the old member id, which the new one
            # would never get: rebalance so the next assignment names the new id.
            self._prepare_rebalance(now_ms)
        else:
            self._maybe_complete_join_phase(now_ms)

    def _rename_static_member(
        self, group_instance_id: str, old_member_id: str, new_member_id: str
    ) -> _Member:
        """Give a static member a new member id; requests of the old id are fenced."""
        old = self._members.pop(old_member_id)
        join_key = self._join_waiters.pop(old_member_id, None)
        if join_key is not None:
            self._answer(join_key, JoinAnswer(ErrorCode.fenced_instance_id, old_member_id))
        sync_key = self._sync_waiters.pop(old_member_id, None)
        if sync_key is not None:
            self._answer(sync_key, SyncAnswer(ErrorCode.fenced_instance_id))
        self._session_deadlines.pop(old_member_id, None)
        member = replace(old, member_id=new_member_id)
        self._members[new_member_id] = member
        if self._leader_id == old_member_id:
            self._leader_id = new_member_id
        self._static_members[group_instance_id] = new_member_id
        return member

    def _static_replacement_written(
        self, write: _StaticReplacementWrite, error: ErrorCode, now_ms: int
    ) -> None:
        member = self._members.get(write.new_member_id)
        if member is None or self._static_members.get(write.group_instance_id) != member.member_id:
            # Removed or replaced again meanwhile; its requests were answered then.
            return
        if error is not ErrorCode.none:
            # The new member id is not durable: go back to the old one, as Kafka does.
            key = self._join_waiters.pop(write.new_member_id, None)
            member.protocols = write.old_protocols
            member.rebalance_timeout_ms = write.old_rebalance_timeout_ms
            member.session_timeout_ms = write.old_session_timeout_ms
            old = self._rename_static_member(
                write.group_instance_id, write.new_member_id, write.old_member_id
            )
            self._renew_session(old, now_ms)
            if key is not None:
                self._answer(
                    key,
                    JoinAnswer(
                        WRITE_ERROR_ANSWERS.get(error, error),
                        UNKNOWN_MEMBER_ID,
                        self._generation_id,
                        self._protocol_type,
                        self._protocol_name,
                        write.leader_before,
                    ),
                )
            return
        key = self._join_waiters.get(write.new_member_id)
        # A rebalance that started meanwhile answers the JoinGroup itself, with its generation.
        if key is None or self._state is not GroupState.STABLE:
            return
        del self._join_waiters[write.new_member_id]
        is_leader = write.new_member_id == self._leader_id
        if write.supports_skip_assignment and is_leader:
            answer = replace(self._joined_answer(write.new_member_id), skip_assignment=True)
        elif write.supports_skip_assignment:
            answer = self._joined_answer(write.new_member_id)
        else:
            answer = replace(
                self._joined_answer(write.new_member_id),
                leader=write.leader_before,
                members=(),
            )
        self._answer(key, answer)

    def _joined_answer(self, member_id: str) -> JoinAnswer:
        """The successful JoinGroup answer of the current generation for `member_id`."""
        members: tuple[JoinedMember, ...] = ()
        if member_id == self._leader_id:
            members = tuple(
                JoinedMember(m.member_id, m.group_instance_id, m.metadata(self._protocol_name))
                for m in self._members.values()
            )
        return JoinAnswer(
            ErrorCode.none,
            member_id,
            self._generation_id,
            self._protocol_type,
            self._protocol_name,
            self._leader_id or "",
            members,
        )

    # --- rebalancing -------------------------------------------------------------------------

    def _maybe_prepare_rebalance_or_complete_join(self, now_ms: int) -> None:
        if self._state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY):
            self._prepare_rebalance(now_ms)
        else:
            self._maybe_complete_join_phase(now_ms)

    def _prepare_rebalance(self, now_ms: int) -> None:
        if self._state is GroupState.COMPLETING_REBALANCE:
            # Waiting SyncGroups will never get this generation's assignment: rejoin.
            self._reset_and_propagate_assignment(ErrorCode.rebalance_in_progress, now_ms)
        self._sync_timer = None
        self._pending_sync.clear()
        initial = self._state is GroupState.EMPTY
        if initial:
            delay = self._config.initial_rebalance_delay_ms
            self._join_timer = _JoinTimer(
                now_ms + delay,
                initial=True,
                delay_ms=delay,
                remaining_ms=max(self._rebalance_timeout_ms() - delay, 0),
            )
        self._transition(GroupState.PREPARING_REBALANCE, now_ms)
        if not initial:
            if self._has_all_members_joined():
                self._complete_join(now_ms)
            else:
                self._join_timer = _JoinTimer(now_ms + self._rebalance_timeout_ms())

    def _maybe_complete_join_phase(self, now_ms: int) -> None:
        # The initial rebalance only ends with its delay, however fast members join.
        if (
            self._state is GroupState.PREPARING_REBALANCE
            and self._has_all_members_joined()
            and self._previous_state is not GroupState.EMPTY
        ):
            self._complete_join(now_ms)

    def _has_all_members_joined(self) -> bool:
        return len(self._join_waiters) == len(self._members) and not self._pending_members

    def _join_timer_fired(self, now_ms: int) -> None:
        timer = self._join_timer
        assert timer is not None
        if timer.initial and self._new_member_added and timer.remaining_ms != 0:
            self._new_member_added = False
            delay = min(self._config.initial_rebalance_delay_ms, timer.remaining_ms)
            self._join_timer = _JoinTimer(
                now_ms + delay,
                initial=True,
                delay_ms=delay,
                remaining_ms=max(timer.remaining_ms - timer.delay_ms, 0),
            )
        else:
            self._complete_join(now_ms)

    def _complete_join(self, now_ms: int) -> None:
        self._join_timer = None
        for member in list(self._members.values()):
            # Static members keep their place: they are expected back with the same identity,
            # and their session timeout decides when they are gone.
            if member.member_id not in self._join_waiters and member.group_instance_id is None:
                self._remove(member.member_id)
        if not self._elect_joined_leader() and self._members:
            # Only static members that did not rejoin are left: wait for them again, until
            # their sessions expire.
            self._join_timer = _JoinTimer(now_ms + self._rebalance_timeout_ms())
            return
        self._generation_id += 1
        if not self._members:
            self._protocol_name = None
            self._transition(GroupState.EMPTY, now_ms)
            self._write({}, None)
            return
        self._protocol_name = self._select_protocol()
        self._transition(GroupState.COMPLETING_REBALANCE, now_ms)
        for member in self._members.values():
            key = self._join_waiters.pop(member.member_id, None)
            if key is not None:
                self._answer(key, self._joined_answer(member.member_id))
            self._renew_session(member, now_ms)
            member.is_new = False
            self._pending_sync.add(member.member_id)
        self._sync_timer = _SyncTimer(now_ms + self._rebalance_timeout_ms(), self._generation_id)

    def _elect_joined_leader(self) -> bool:
        """Keep the leader if it rejoined, else the first member that did; False if none did."""
        if self._leader_id is None:
            return False
        if self._leader_id in self._join_waiters:
            return True
        for member_id in self._members:
            if member_id in self._join_waiters:
                self._leader_id = member_id
                return True
        return False

    def _select_protocol(self) -> str:
        candidates = {
            p.name
            for p in next(iter(self._members.values())).protocols
            if all(p.name in {q.name for q in m.protocols} for m in self._members.values())
        }
        votes: dict[str, int] = {}
        for member in self._members.values():
            choice = member.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        # Ties go to the protocol voted for first (Kafka leaves them to a HashMap's order).
        return max(votes, key=lambda name: votes[name])

    def _supports_protocols(self, protocol_type: str, protocols: tuple[Protocol, ...]) -> bool:
        if self._state is GroupState.EMPTY:
            return protocol_type != "" and len(protocols) > 0
        return self._protocol_type == protocol_type and any(
            all(p.name in {q.name for q in m.protocols} for m in self._members.values())
            for p in protocols
        )

    def _rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self._members.values()), default=0)

    # --- SyncGroup ---------------------------------------------------------------------------

    def _sync_error(self, request: SyncRequest) -> ErrorCode | None:
        if self._state is GroupState.DEAD:
            return ErrorCode.coordinator_not_available
        error = self._member_error(request.member_id, request.group_instance_id)
        if error is not None:
            return error
        if request.generation_id != self._generation_id:
            return ErrorCode.illegal_generation
        if _inconsistent(request.protocol_type, self._protocol_type) or _inconsistent(
            request.protocol_name, self._protocol_name
        ):
            return ErrorCode.inconsistent_group_protocol
        return None

    def _await_sync(self, key: K, request: SyncRequest) -> None:
        member_id = request.member_id
        superseded = self._sync_waiters.pop(member_id, None)
        if superseded is not None:
            self._answer(superseded, SyncAnswer(ErrorCode.not_coordinator))
        self._sync_waiters[member_id] = key
        self._synced(member_id)
        if member_id == self._leader_id:
            # Members the leader left out get an empty assignment; ids that are not members
            # are ignored.
            assignment = {m: request.assignments.get(m, b"") for m in self._members}
            self._write(assignment, _AssignmentWrite(self._generation_id, assignment))

    def _synced(self, member_id: str) -> None:
        self._pending_sync.discard(member_id)
        if not self._pending_sync:
            self._sync_timer = None

    def _assignment_written(self, write: _AssignmentWrite, error: ErrorCode, now_ms: int) -> None:
        # Another rebalance may have started while the write was under way: then it is moot.
        if (
            self._state is not GroupState.COMPLETING_REBALANCE
            or write.generation_id != self._generation_id
        ):
            return
        if error is not ErrorCode.none:
            self._reset_and_propagate_assignment(WRITE_ERROR_ANSWERS.get(error, error), now_ms)
            self._maybe_prepare_rebalance_or_complete_join(now_ms)
            return
        for member in self._members.values():
            member.assignment = write.assignment.get(member.member_id, b"")
        self._propagate_assignment(ErrorCode.none, now_ms)
        self._transition(GroupState.STABLE, now_ms)

    def _reset_and_propagate_assignment(self, error: ErrorCode, now_ms: int) -> None:
        for member in self._members.values():
            member.assignment = b""
        self._propagate_assignment(error, now_ms)

    def _propagate_assignment(self, error: ErrorCode, now_ms: int) -> None:
        ok = error is ErrorCode.none
        for member in self._members.values():
            key = self._sync_waiters.pop(member.member_id, None)
            if key is None:
                continue
            self._answer(
                key,
                SyncAnswer(
                    error,
                    member.assignment,
                    self._protocol_type if ok else None,
                    self._protocol_name if ok else None,
                ),
            )
            # Its session may have expired, ignored, while it waited: start a new one.
            self._renew_session(member, now_ms)

    def _sync_timer_fired(self, now_ms: int) -> None:
        timer = self._sync_timer
        assert timer is not None
        self._sync_timer = None
        if timer.generation_id != self._generation_id or not self._pending_sync:
            return
        for member_id in sorted(self._pending_sync):
            self._remove(member_id)
        self._prepare_rebalance(now_ms)

    # --- LeaveGroup, sessions, removal -------------------------------------------------------

    def _leave_one(self, leaving: LeavingMember) -> ErrorCode:
        if leaving.member_id == UNKNOWN_MEMBER_ID:
            instance_id = leaving.group_instance_id
            if instance_id is None or instance_id not in self._static_members:
                return ErrorCode.unknown_member_id
            self._remove(self._static_members[instance_id])
            return ErrorCode.none
        if leaving.member_id in self._pending_members:
            self._remove(leaving.member_id)
            return ErrorCode.none
        error = self._member_error(leaving.member_id, leaving.group_instance_id)
        if error is not None:
            return error
        self._remove(leaving.member_id)
        return ErrorCode.none

    def _session_expired(self, member_id: str, now_ms: int) -> None:
        del self._session_deadlines[member_id]
        if member_id in self._pending_members:
            self._remove(member_id)
            if self._state is GroupState.PREPARING_REBALANCE and self._has_all_members_joined():
                self._complete_join(now_ms)
            return
        member = self._members[member_id]
        waiting = member_id in self._join_waiters or member_id in self._sync_waiters
        if waiting and not member.is_new:
            # Waiting for an answer counts as alive; the session restarts with the answer.
            return
        self._remove(member_id)
        if self._state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance_or_complete_join(now_ms)
        elif self._state is GroupState.PREPARING_REBALANCE and self._has_all_members_joined():
            self._complete_join(now_ms)

    def _remove(self, member_id: str) -> None:
        """Drop a member or pending member; requests it still waits on get UNKNOWN_MEMBER_ID.

        The JoinGroup answer is Kafka's (the client then joins again as a new member); Kafka
        leaves a removed member's SyncGroup unanswered, which would leak the caller's request.
        """
        member = self._members.pop(member_id, None)
        if member is not None and member.group_instance_id is not None:
            del self._static_members[member.group_instance_id]
        join_key = self._join_waiters.pop(member_id, None)
        if join_key is not None:
            self._answer(join_key, JoinAnswer(ErrorCode.unknown_member_id, UNKNOWN_MEMBER_ID))
        sync_key = self._sync_waiters.pop(member_id, None)
        if sync_key is not None:
            self._answer(sync_key, SyncAnswer(ErrorCode.unknown_member_id))
        if self._leader_id == member_id:
            self._leader_id = next(iter(self._members), None)
        self._pending_members.pop(member_id, None)
        self._pending_sync.discard(member_id)
        self._session_deadlines.pop(member_id, None)

    def _member_error(self, member_id: str, group_instance_id: str | None) -> ErrorCode | None:
        """Kafka's validateMember: whether the request may act as `member_id`."""
        if group_instance_id is not None:
            known = self._static_members.get(group_instance_id)
            if known is None:
                return ErrorCode.unknown_member_id
            if known != member_id:
                return ErrorCode.fenced_instance_id
        if member_id not in self._members:
            return ErrorCode.unknown_member_id
        return None

    def _renew_session(self, member: _Member, now_ms: int) -> None:
        self._session_deadlines[member.member_id] = now_ms + member.session_timeout_ms

    # --- timers, writes, outputs -------------------------------------------------------------

    def _due_timer(self, now_ms: int, fired: set[str]) -> str | None:
        """The earliest timer due by `now_ms` and not fired yet in this tick."""
        due: list[tuple[int, str]] = [
            (deadline, member_id)
            for member_id, deadline in self._session_deadlines.items()
            if deadline <= now_ms and member_id not in fired
        ]
        join, sync = self._join_timer, self._sync_timer
        if join is not None and join.deadline_ms <= now_ms and _JOIN_TIMER not in fired:
            due.append((join.deadline_ms, _JOIN_TIMER))
        if sync is not None and sync.deadline_ms <= now_ms and _SYNC_TIMER not in fired:
            due.append((sync.deadline_ms, _SYNC_TIMER))
        if not due:
            return None
        return min(due)[1]

    def _write(self, assignment: Mapping[str, bytes], follow_up: _FollowUp) -> None:
        protocol = self._protocol_name
        value = GroupMetadataValue(
            protocol_type=self._protocol_type or "",
            generation=self._generation_id,
            protocol=protocol,
            leader=self._leader_id,
            members=tuple(
                MemberMetadata(
                    member_id=m.member_id,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    session_timeout_ms=m.session_timeout_ms,
                    rebalance_timeout_ms=m.rebalance_timeout_ms,
                    subscription=m.metadata(protocol),
                    assignment=assignment.get(m.member_id, b""),
                    group_instance_id=m.group_instance_id,
                )
                for m in self._members.values()
            ),
            current_state_timestamp_ms=self._state_since_ms,
        )
        write_id = self._next_write_id
        self._next_write_id += 1
        self._writes[write_id] = follow_up
        self._new_writes.append(MetadataWrite(write_id, self.group_id, value))

    def _transition(self, state: GroupState, now_ms: int) -> None:
        if self._state not in _VALID_PREVIOUS[state]:
            raise AssertionError(f"group {self.group_id}: {self._state} -> {state}")
        self._previous_state = self._state
        self._state = state
        self._state_since_ms = now_ms
        self._state_changes.append(self.state_change(self._previous_state))

    def _answer(self, key: K, answer: Answer) -> None:
        self._answers.append((key, answer))

    def _step(self) -> GroupStep[K]:
        step = GroupStep(tuple(self._answers), tuple(self._new_writes), tuple(self._state_changes))
        self._answers.clear()
        self._new_writes.clear()
        self._state_changes.clear()
        return step


def _inconsistent(requested: str | None, chosen: str | None) -> bool:
    return requested is not None and chosen is not None and requested != chosen

"""One `__consumer_offsets` partition's coordinator state (broker/groups/shard.py)."""

from __future__ import annotations

from itertools import count

from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from broker.groups.membership import (
    GroupConfig,
    GroupDescription,
    GroupState,
    HeartbeatRequest,
    JoinAnswer,
    JoinRequest,
    LeavingMember,
    Protocol,
    SyncAnswer,
    SyncRequest,
)
from broker.groups.shard import (
    CommitAnswer,
    CoordinatorShard,
    DeleteGroupsAnswer,
    OffsetDeleteAnswer,
    OffsetToCommit,
    Record,
    ShardConfig,
    ShardStep,
    Write,
    subscription_topics,
)
from broker.groups.wire import ListedGroup, ListGroupsFilter

MINUTE = 60_000
CONFIG = ShardConfig(
    offsets_retention_ms=10 * MINUTE,
    offset_metadata_max_bytes=8,
    group=GroupConfig(initial_rebalance_delay_ms=0),
)


class Coordinator:
    """Drives a shard as the asyncio coordinator will: writes succeed unless told otherwise,
    and every record written is kept, in order, as the partition would keep it."""

    def __init__(self, shard: CoordinatorShard[int] | None = None) -> None:
        self.shard: CoordinatorShard[int] = shard or CoordinatorShard(CONFIG)
        if shard is None:
            self.shard.activate(0)
        self.keys = count()
        self.answers: dict[int, object] = {}
        self.log: list[Record] = []
        self.held: list[Write] = []
        self.hold_writes = False
        # (group, state) of every state change the shard reported, in order.
        self.state_changes: list[tuple[str, GroupState]] = []

    def run(self, step: ShardStep[int], now: int) -> None:
        self.answers.update(step.answers)
        self.state_changes.extend((c.group_id, c.state) for c in step.state_changes)
        for write in step.writes:
            if self.hold_writes:
                self.held.append(write)
                continue
            self.log.extend(write.records)
            self.run(self.shard.write_completed(write.write_id, ErrorCode.none, now), now)

    def release(self, now: int) -> None:
        """The held writes are written, in order, and their outcomes reported."""
        self.hold_writes = False
        held, self.held = self.held, []
        for write in held:
            self.log.extend(write.records)
            self.run(self.shard.write_completed(write.write_id, ErrorCode.none, now), now)

    def join_and_sync(self, group: str, now: int) -> tuple[str, int]:
        """A one-member group formed: its member id and generation."""
        key = next(self.keys)
        request = JoinRequest(
            "", "client", "host", "consumer", (Protocol("range", b"sub"),), 30_000, 30_000,
            require_known_member_id=False,
        )  # fmt: skip
        self.run(self.shard.join(key, group, request, now), now)
        self.run(self.shard.tick(now), now)
        joined = self.answers[key]
        assert isinstance(joined, JoinAnswer) and joined.error is ErrorCode.none
        key = next(self.keys)
        sync = SyncRequest(joined.member_id, joined.generation_id, {joined.member_id: b"as"})
        self.run(self.shard.sync(key, group, sync, now), now)
        assert self.answers[key] == SyncAnswer(ErrorCode.none, b"as", "consumer", "range")
        return joined.member_id, joined.generation_id

    def commit(
        self,
        group: str,
        offsets: list[OffsetToCommit],
        now: int,
        *,
        member: str = "",
        generation: int = -1,
        instance: str | None = None,
        retention_ms: int | None = None,
        unknown_group_error: ErrorCode = ErrorCode.illegal_generation,
    ) -> dict[tuple[str, int], ErrorCode] | None:
        key = next(self.keys)
        step = self.shard.commit_offsets(
            key,
            group,
            member_id=member,
            group_instance_id=instance,
            generation_id=generation,
            offsets=offsets,
            now_ms=now,
            retention_ms=retention_ms,
            unknown_group_error=unknown_group_error,
        )
        self.run(step, now)
        answer = self.answers.get(key)
        if answer is None:
            return None
        assert isinstance(answer, CommitAnswer)
        return dict(answer.errors)


def committed(shard: CoordinatorShard[int], group: str) -> dict[tuple[str, int], int]:
    return {tp: value.offset for tp, value in shard.committed(group).items()}


def test_a_simple_consumer_commit_is_answered_once_written() -> None:
    coordinator = Coordinator()
    coordinator.hold_writes = True
    errors = coordinator.commit("solo", [OffsetToCommit("t", 0, 5), OffsetToCommit("t", 1, 9)], 1)
    # Not durable yet: no answer, nothing readable.
    assert errors is None and committed(coordinator.shard, "solo") == {}
    (write,) = coordinator.held
    assert len(write.records) == 2
    coordinator.run(coordinator.shard.write_completed(write.write_id, ErrorCode.none, 2), 2)
    answer = coordinator.answers[0]
    assert isinstance(answer, CommitAnswer)
    assert dict(answer.errors) == {("t", 0): ErrorCode.none, ("t", 1): ErrorCode.none}
    assert committed(coordinator.shard, "solo") == {("t", 0): 5, ("t", 1): 9}


def test_a_failed_commit_write_is_answered_as_kafka_does_and_stores_nothing() -> None:
    coordinator = Coordinator()
    coordinator.hold_writes = True
    coordinator.commit("solo", [OffsetToCommit("t", 0, 5)], 1)
    (write,) = coordinator.held
    step = coordinator.shard.write_completed(write.write_id, ErrorCode.not_leader_or_follower, 2)
    coordinator.run(step, 2)
    assert coordinator.answers[0] == CommitAnswer(((("t", 0), ErrorCode.not_coordinator),))
    assert committed(coordinator.shard, "solo") == {}


def test_member_commits_are_checked_against_the_group() -> None:
    coordinator = Coordinator()
    member, generation = coordinator.join_and_sync("g", 0)
    offsets = [OffsetToCommit("t", 0, 3)]
    assert coordinator.commit("g", offsets, 1, member=member, generation=generation) == {
        ("t", 0): ErrorCode.none
    }
    refused = {
        "stale generation": coordinator.commit(
            "g", offsets, 1, member=member, generation=generation - 1
        ),
        "unknown member": coordinator.commit("g", offsets, 1, member="x", generation=generation),
        "simple commit to a group with members": coordinator.commit("g", offsets, 1),
        "member of a group that does not exist": coordinator.commit(
            "nope", offsets, 1, member=member, generation=1
        ),
    }
    assert refused == {
        "stale generation": {("t", 0): ErrorCode.illegal_generation},
        "unknown member": {("t", 0): ErrorCode.unknown_member_id},
        "simple commit to a group with members": {("t", 0): ErrorCode.unknown_member_id},
        "member of a group that does not exist": {("t", 0): ErrorCode.illegal_generation},
    }
    assert committed(coordinator.shard, "g") == {("t", 0): 3}
    assert coordinator.shard.group("nope") is None


def test_a_negative_generation_commit_with_a_member_id_or_instance_id_is_a_simple_one() -> None:
    # As Kafka: a commit to a group that does not exist creates the (Empty) simple group whenever
    # its generation is negative, whatever member or instance id it carries (pre-2.7 consumers
    # in assign() mode send their group.instance.id), and the Empty group then accepts it.
    for version_error in (ErrorCode.illegal_generation, ErrorCode.group_id_not_found):
        coordinator = Coordinator()
        offsets = [OffsetToCommit("t", 0, 5)]
        with_instance = coordinator.commit(
            "a", offsets, 1, instance="inst-1", unknown_group_error=version_error
        )
        with_member = coordinator.commit(
            "b", offsets, 1, member="m-1", unknown_group_error=version_error
        )
        with_generation = coordinator.commit(
            "c", offsets, 1, member="m-1", generation=0, unknown_group_error=version_error
        )
        assert with_instance == with_member == {("t", 0): ErrorCode.none}
        assert with_generation == {("t", 0): version_error}
        assert (
            committed(coordinator.shard, "a") == committed(coordinator.shard, "b") == {("t", 0): 5}
        )
        assert coordinator.shard.describe("a").state is GroupState.EMPTY
        assert coordinator.shard.group("c") is None


def test_too_long_metadata_refuses_its_partition_only() -> None:
    coordinator = Coordinator()
    errors = coordinator.commit(
        "solo", [OffsetToCommit("t", 0, 1, "short"), OffsetToCommit("t", 1, 1, "far too long")], 1
    )
    assert errors == {("t", 0): ErrorCode.none, ("t", 1): ErrorCode.offset_metadata_too_large}
    assert committed(coordinator.shard, "solo") == {("t", 0): 1}


def test_a_new_leader_loads_groups_and_offsets_from_the_partition() -> None:
    coordinator = Coordinator()
    member, generation = coordinator.join_and_sync("g", 0)
    coordinator.commit("g", [OffsetToCommit("t", 0, 7, "m", 3)], 1, member=member, generation=2)
    coordinator.commit("g", [OffsetToCommit("t", 0, 8)], 2, member=member, generation=generation)
    coordinator.commit("solo", [OffsetToCommit("u", 4, 40)], 3)

    loaded: CoordinatorShard[int] = CoordinatorShard(CONFIG)
    for key, value in coordinator.log:
        loaded.replay(key, value)
    loaded.activate(10)
    assert committed(loaded, "g") == {("t", 0): 8}
    assert committed(loaded, "solo") == {("u", 4): 40}
    group = loaded.group("g")
    assert group is not None
    assert (group.state, group.generation_id, group.member_ids) == (
        GroupState.STABLE,
        generation,
        (member,),
    )
    assert loaded.group_ids() == ["g", "solo"]


def test_offsets_of_a_group_that_emptied_expire_and_are_tombstoned() -> None:
    shard: CoordinatorShard[int] = CoordinatorShard(
        ShardConfig(offsets_retention_ms=10_000, group=GroupConfig(initial_rebalance_delay_ms=0))
    )
    shard.activate(0)
    coordinator = Coordinator(shard)
    member, generation = coordinator.join_and_sync("g", 0)
    coordinator.commit("g", [OffsetToCommit("t", 0, 1)], 0, member=member, generation=generation)
    # The group has a member (its session runs 30 s): nothing expires, however old the commit.
    coordinator.run(shard.tick(25_000), 25_000)
    assert committed(shard, "g") == {("t", 0): 1}

    coordinator.run(
        shard.leave(next(coordinator.keys), "g", [LeavingMember(member)], 26_000), 26_000
    )
    group = shard.group("g")
    assert group is not None and group.state is GroupState.EMPTY
    # Empty since 26 s: its offsets expire 10 s later.
    coordinator.run(shard.tick(35_999), 35_999)
    assert committed(shard, "g") == {("t", 0): 1}
    coordinator.run(shard.tick(36_000), 36_000)
    assert committed(shard, "g") == {}
    assert coordinator.log[-1][1] is None  # the tombstone


def test_an_explicit_retention_expires_the_offsets_then_and_survives_a_reload() -> None:
    coordinator = Coordinator()
    coordinator.commit("old-client", [OffsetToCommit("t", 0, 3)], 1_000, retention_ms=5_000)
    # Stored as Kafka stores it: an OffsetCommitValue v1, with the expire timestamp.
    assert coordinator.log[-1][1] is not None and coordinator.log[-1][1][:2] == b"\x00\x01"
    reloaded = CoordinatorShard[int](CONFIG)
    for record_key, record_value in coordinator.log:
        reloaded.replay(record_key, record_value)
    reloaded.activate(0)
    for shard in (coordinator.shard, reloaded):
        # Its own expiry, not offsets.retention.minutes (10 minutes) after the commit.
        assert shard.tick(5_999).writes == ()
        assert committed(shard, "old-client") == {("t", 0): 3}
        expired = shard.tick(6_000).writes
        assert [record[1] for write in expired for record in write.records] == [None]


def test_an_offset_whose_commit_is_being_written_does_not_expire() -> None:
    coordinator = Coordinator()
    coordinator.commit("solo", [OffsetToCommit("t", 0, 1)], 0)
    # Past retention, the consumer commits again; retention is checked while that is written.
    coordinator.hold_writes = True
    coordinator.commit("solo", [OffsetToCommit("t", 0, 2)], 10 * MINUTE)
    coordinator.run(coordinator.shard.tick(10 * MINUTE + 1), 10 * MINUTE + 1)
    assert len(coordinator.held) == 1  # the commit, and no tombstone after it
    coordinator.release(10 * MINUTE + 2)
    assert committed(coordinator.shard, "solo") == {("t", 0): 2}
    loaded: CoordinatorShard[int] = CoordinatorShard(CONFIG)
    for key, value in coordinator.log:
        loaded.replay(key, value)
    loaded.activate(10 * MINUTE + 3)
    assert committed(loaded, "solo") == {("t", 0): 2}

    # A commit whose write failed holds nothing back: the offset expires on time.
    coordinator.hold_writes = True
    coordinator.commit("solo", [OffsetToCommit("t", 0, 3)], 20 * MINUTE)
    (write,) = coordinator.held
    coordinator.held.clear()
    step = coordinator.shard.write_completed(
        write.write_id, ErrorCode.not_leader_or_follower, 20 * MINUTE
    )
    coordinator.run(step, 20 * MINUTE)
    coordinator.hold_writes = False
    coordinator.run(coordinator.shard.tick(20 * MINUTE), 20 * MINUTE)
    assert committed(coordinator.shard, "solo") == {}


def test_offsets_of_a_group_do_not_expire_while_it_rebalances() -> None:
    shard: CoordinatorShard[int] = CoordinatorShard(
        ShardConfig(
            offsets_retention_ms=10_000, group=GroupConfig(initial_rebalance_delay_ms=3_000)
        )
    )
    shard.activate(0)
    coordinator = Coordinator(shard)
    join = JoinRequest(
        "", "c", "h", "consumer", (Protocol("range", b""),), 30_000, 30_000,
        require_known_member_id=False,
    )  # fmt: skip
    key = next(coordinator.keys)
    coordinator.run(shard.join(key, "g", join, 0), 0)
    coordinator.run(shard.tick(3_000), 3_000)
    joined = coordinator.answers[key]
    assert isinstance(joined, JoinAnswer)
    member, generation = joined.member_id, joined.generation_id
    sync = SyncRequest(member, generation, {member: b"as"})
    coordinator.run(shard.sync(next(coordinator.keys), "g", sync, 3_000), 3_000)
    coordinator.commit(
        "g", [OffsetToCommit("t", 0, 1)], 4_000, member=member, generation=generation
    )
    coordinator.run(shard.leave(next(coordinator.keys), "g", [LeavingMember(member)], 5_000), 5_000)

    # Empty for longer than retention, the group rejoins before retention is next checked: no
    # check during the rebalance (its first member is written only with the assignment) may
    # take its offsets, as Kafka expires a group's offsets only while it is Empty.
    key = next(coordinator.keys)
    coordinator.run(shard.join(key, "g", join, 16_000), 16_000)
    assert shard.describe("g").state is GroupState.PREPARING_REBALANCE
    coordinator.run(shard.tick(16_001), 16_001)
    assert committed(shard, "g") == {("t", 0): 1}
    coordinator.run(shard.tick(19_000), 19_000)
    assert shard.describe("g").state is GroupState.COMPLETING_REBALANCE
    assert committed(shard, "g") == {("t", 0): 1}
    joined = coordinator.answers[key]
    assert isinstance(joined, JoinAnswer)
    sync = SyncRequest(joined.member_id, joined.generation_id, {joined.member_id: b"as"})
    coordinator.run(shard.sync(next(coordinator.keys), "g", sync, 19_000), 19_000)
    coordinator.run(shard.tick(19_001), 19_001)
    assert shard.describe("g").state is GroupState.STABLE
    assert committed(shard, "g") == {("t", 0): 1}
    assert all(value is not None for _, value in coordinator.log)


def test_requests_for_unknown_groups_create_nothing_and_unload_answers_waiters() -> None:
    coordinator = Coordinator()
    key = next(coordinator.keys)
    request = JoinRequest(
        "someone", "c", "h", "consumer", (Protocol("range", b""),), 30_000, 30_000
    )
    coordinator.run(coordinator.shard.join(key, "g", request, 0), 0)
    assert coordinator.answers[key] == JoinAnswer(ErrorCode.unknown_member_id, "")
    assert coordinator.shard.group("g") is None

    coordinator.hold_writes = True
    commit_key = next(coordinator.keys)
    coordinator.run(
        coordinator.shard.commit_offsets(
            commit_key,
            "solo",
            member_id="",
            group_instance_id=None,
            generation_id=-1,
            offsets=[OffsetToCommit("t", 0, 1)],
            now_ms=0,
        ),
        0,
    )
    coordinator.run(coordinator.shard.unload(1), 1)
    assert coordinator.answers[commit_key] == CommitAnswer(((("t", 0), ErrorCode.not_coordinator),))
    assert not coordinator.shard.active


def test_a_commit_between_join_and_sync_is_rebalance_in_progress() -> None:
    coordinator = Coordinator()
    key = next(coordinator.keys)
    request = JoinRequest(
        "", "c", "h", "consumer", (Protocol("range", b""),), 30_000, 30_000,
        require_known_member_id=False,
    )  # fmt: skip
    coordinator.run(coordinator.shard.join(key, "g", request, 0), 0)
    coordinator.run(coordinator.shard.tick(0), 0)
    joined = coordinator.answers[key]
    assert isinstance(joined, JoinAnswer)
    errors = coordinator.commit(
        "g",
        [OffsetToCommit("t", 0, 1)],
        1,
        member=joined.member_id,
        generation=joined.generation_id,
    )
    assert errors == {("t", 0): ErrorCode.rebalance_in_progress}


# --- DescribeGroups, ListGroups, DeleteGroups, OffsetDelete ---------------------------------------


def subscription(*topics: str, version: int = 1) -> bytes:
    """A consumer protocol Subscription naming `topics`, with user data after them."""
    encoded = b"".join(len(t).to_bytes(2, "big") + t.encode() for t in topics)
    return (
        version.to_bytes(2, "big")
        + len(topics).to_bytes(4, "big")
        + encoded
        + (3).to_bytes(4, "big")
        + b"usr"
    )


def form_group(
    coordinator: Coordinator, group: str, protocol_type: str, metadata: bytes, now: int
) -> tuple[str, int]:
    """A one-member group of `protocol_type`, Stable: its member id and generation."""
    key = next(coordinator.keys)
    request = JoinRequest(
        "", "client-a", "host-a", protocol_type, (Protocol("range", metadata),), 30_000, 30_000,
        require_known_member_id=False,
    )  # fmt: skip
    coordinator.run(coordinator.shard.join(key, group, request, now), now)
    coordinator.run(coordinator.shard.tick(now), now)
    joined = coordinator.answers[key]
    assert isinstance(joined, JoinAnswer) and joined.error is ErrorCode.none
    sync = SyncRequest(joined.member_id, joined.generation_id, {joined.member_id: b"assigned"})
    coordinator.run(coordinator.shard.sync(next(coordinator.keys), group, sync, now), now)
    return joined.member_id, joined.generation_id


def delete_offsets(
    coordinator: Coordinator, group: str, partitions: list[tuple[str, int]], now: int
) -> object:
    key = next(coordinator.keys)
    coordinator.run(coordinator.shard.delete_offsets(key, group, partitions, now), now)
    return coordinator.answers.get(key)


def test_describe_shows_members_and_a_group_it_does_not_know_as_dead() -> None:
    coordinator = Coordinator()
    member, _ = form_group(coordinator, "g", "consumer", subscription("t"), 0)
    coordinator.commit("solo", [OffsetToCommit("t", 0, 1)], 1)

    described = coordinator.shard.describe("g")
    assert (described.state, described.protocol_type, described.protocol) == (
        GroupState.STABLE,
        "consumer",
        "range",
    )
    assert [(m.member_id, m.client_id, m.client_host, m.assignment) for m in described.members] == [
        (member, "client-a", "host-a", b"assigned")
    ]
    # Kafka answers a group it does not know as Dead, without an error.
    assert coordinator.shard.describe("nope") == GroupDescription(
        "nope", GroupState.DEAD, "", "", ()
    )
    solo = coordinator.shard.describe("solo")
    assert (solo.state, solo.protocol_type, solo.members) == (GroupState.EMPTY, "", ())


def test_listed_includes_groups_with_offsets_alone_and_filters_by_state() -> None:
    coordinator = Coordinator()
    form_group(coordinator, "g", "consumer", subscription("t"), 0)
    coordinator.commit("solo", [OffsetToCommit("t", 0, 1)], 1)
    # After a load, "solo" is only committed offsets: still listed, Empty.
    loaded: CoordinatorShard[int] = CoordinatorShard(CONFIG)
    for key, value in coordinator.log:
        loaded.replay(key, value)
    loaded.activate(2)

    every = [
        ListedGroup("g", "consumer", GroupState.STABLE),
        ListedGroup("solo", "", GroupState.EMPTY),
    ]
    assert coordinator.shard.listed(ListGroupsFilter()) == every
    assert loaded.listed(ListGroupsFilter()) == every
    assert loaded.listed(ListGroupsFilter(states=frozenset({"empty"}))) == every[1:]
    assert loaded.listed(ListGroupsFilter(types=frozenset({"consumer"}))) == []


def test_the_groups_state_changes_come_out_of_requests_timers_writes_and_deletions() -> None:
    coordinator = Coordinator()
    member, _ = coordinator.join_and_sync("g", 0)
    assert coordinator.state_changes == [
        ("g", GroupState.PREPARING_REBALANCE),  # the join
        ("g", GroupState.COMPLETING_REBALANCE),  # the initial delay's end, a tick
        ("g", GroupState.STABLE),  # the assignment written
    ]
    coordinator.state_changes.clear()
    key = next(coordinator.keys)
    coordinator.run(coordinator.shard.leave(key, "g", [LeavingMember(member)], 1), 1)
    key = next(coordinator.keys)
    coordinator.run(coordinator.shard.delete_groups(key, ["g"], 2), 2)
    assert coordinator.state_changes == [
        ("g", GroupState.PREPARING_REBALANCE),
        ("g", GroupState.EMPTY),
        ("g", GroupState.DEAD),
    ]

    # A deletion whose tombstones cannot be written brings the group back, and says so.
    member, _ = coordinator.join_and_sync("h", 3)
    coordinator.run(
        coordinator.shard.leave(next(coordinator.keys), "h", [LeavingMember(member)], 4), 4
    )
    coordinator.state_changes.clear()
    coordinator.hold_writes = True
    coordinator.run(coordinator.shard.delete_groups(next(coordinator.keys), ["h"], 5), 5)
    (write,) = coordinator.held
    failed = coordinator.shard.write_completed(write.write_id, ErrorCode.not_leader_or_follower, 6)
    coordinator.run(failed, 6)
    assert coordinator.state_changes == [("h", GroupState.DEAD), ("h", GroupState.EMPTY)]
    assert coordinator.shard.describe("h").state is GroupState.EMPTY


def test_deleting_groups_refuses_non_empty_and_unknown_ones_and_answers_once_written() -> None:
    coordinator = Coordinator()
    member, generation = form_group(coordinator, "busy", "consumer", subscription("t"), 0)
    coordinator.commit("busy", [OffsetToCommit("t", 0, 1)], 0, member=member, generation=generation)
    coordinator.commit("idle", [OffsetToCommit("t", 0, 5), OffsetToCommit("u", 1, 6)], 1)
    written_before = len(coordinator.log)

    coordinator.hold_writes = True
    key = next(coordinator.keys)
    coordinator.run(coordinator.shard.delete_groups(key, ["busy", "idle", "nope"], 2), 2)
    assert key not in coordinator.answers  # not durable yet
    (write,) = coordinator.held
    # Tombstones of both offsets and of the group's metadata, in one write.
    assert [value for _, value in write.records] == [None, None, None]
    assert coordinator.shard.describe("idle").state is GroupState.DEAD
    assert coordinator.shard.listed(ListGroupsFilter()) == [
        ListedGroup("busy", "consumer", GroupState.STABLE)
    ]
    # A Dead group takes no commit: the client looks its coordinator up again.
    assert coordinator.commit("idle", [OffsetToCommit("t", 0, 9)], 3) == {
        ("t", 0): ErrorCode.coordinator_not_available
    }

    coordinator.log.extend(write.records)
    coordinator.run(coordinator.shard.write_completed(write.write_id, ErrorCode.none, 4), 4)
    assert coordinator.answers[key] == DeleteGroupsAnswer(
        (
            ("busy", ErrorCode.non_empty_group),
            ("idle", ErrorCode.none),
            ("nope", ErrorCode.group_id_not_found),
        )
    )
    assert committed(coordinator.shard, "idle") == {}
    assert coordinator.shard.group("idle") is None
    assert coordinator.shard.group_ids() == ["busy"]
    assert len(coordinator.log) == written_before + 3

    # A new leader reading the partition finds no trace of it.
    loaded: CoordinatorShard[int] = CoordinatorShard(CONFIG)
    for record_key, value in coordinator.log:
        loaded.replay(record_key, value)
    loaded.activate(5)
    assert loaded.group_ids() == ["busy"]
    assert loaded.describe("idle").state is GroupState.DEAD

    # The group may then be created anew.
    coordinator.hold_writes = False
    assert coordinator.commit("idle", [OffsetToCommit("t", 0, 9)], 6) == {("t", 0): ErrorCode.none}


def test_deleting_a_group_tombstones_an_offset_whose_commit_is_being_written() -> None:
    coordinator = Coordinator()
    coordinator.commit("solo", [OffsetToCommit("t", 0, 10)], 0)
    coordinator.hold_writes = True
    assert coordinator.commit("solo", [OffsetToCommit("t", 1, 20)], 1) is None
    delete_key = next(coordinator.keys)
    coordinator.run(coordinator.shard.delete_groups(delete_key, ["solo"], 2), 2)
    assert len(coordinator.held) == 2
    deletion = coordinator.held[1]
    # The commit is written before the deletion, whose tombstones therefore cover its offset.
    assert [value for _, value in deletion.records] == [None, None, None]
    coordinator.release(3)
    assert CommitAnswer(((("t", 1), ErrorCode.none),)) in coordinator.answers.values()
    assert coordinator.answers[delete_key] == DeleteGroupsAnswer((("solo", ErrorCode.none),))
    assert committed(coordinator.shard, "solo") == {}
    assert coordinator.shard.group_ids() == []
    assert coordinator.shard.listed(ListGroupsFilter()) == []
    loaded: CoordinatorShard[int] = CoordinatorShard(CONFIG)
    for record_key, value in coordinator.log:
        loaded.replay(record_key, value)
    loaded.activate(4)
    assert loaded.group_ids() == []


def test_a_group_whose_deletion_fails_to_be_written_comes_back() -> None:
    coordinator = Coordinator()
    member, generation = form_group(coordinator, "g", "consumer", subscription("t"), 0)
    coordinator.commit("g", [OffsetToCommit("t", 0, 1)], 0, member=member, generation=generation)
    coordinator.run(
        coordinator.shard.leave(next(coordinator.keys), "g", [LeavingMember(member)], 1), 1
    )
    coordinator.commit("solo", [OffsetToCommit("t", 0, 2)], 1)
    emptied = coordinator.shard.group("g")
    assert emptied is not None and emptied.state is GroupState.EMPTY
    generation = emptied.generation_id
    coordinator.hold_writes = True
    key = next(coordinator.keys)
    coordinator.run(coordinator.shard.delete_groups(key, ["g", "solo"], 2), 2)
    (write,) = coordinator.held
    step = coordinator.shard.write_completed(write.write_id, ErrorCode.not_leader_or_follower, 3)
    coordinator.run(step, 3)
    assert coordinator.answers[key] == DeleteGroupsAnswer(
        (("g", ErrorCode.not_coordinator), ("solo", ErrorCode.not_coordinator))
    )
    group = coordinator.shard.group("g")
    assert group is not None
    assert (group.state, group.protocol_type, group.generation_id) == (
        GroupState.EMPTY,
        "consumer",
        generation,
    )
    assert committed(coordinator.shard, "g") == {("t", 0): 1}
    assert committed(coordinator.shard, "solo") == {("t", 0): 2}
    assert coordinator.shard.describe("solo").state is GroupState.EMPTY


def test_unloading_answers_deletions_being_written_not_coordinator() -> None:
    coordinator = Coordinator()
    coordinator.commit("solo", [OffsetToCommit("t", 0, 1)], 0)
    coordinator.commit("other", [OffsetToCommit("t", 0, 1)], 0)
    coordinator.hold_writes = True
    groups_key = next(coordinator.keys)
    coordinator.run(coordinator.shard.delete_groups(groups_key, ["solo", "nope"], 1), 1)
    offsets_key = next(coordinator.keys)
    coordinator.run(coordinator.shard.delete_offsets(offsets_key, "other", [("t", 0)], 1), 1)
    assert len(coordinator.held) == 2
    coordinator.run(coordinator.shard.unload(2), 2)
    assert coordinator.answers[groups_key] == DeleteGroupsAnswer(
        (("solo", ErrorCode.not_coordinator), ("nope", ErrorCode.group_id_not_found))
    )
    assert coordinator.answers[offsets_key] == OffsetDeleteAnswer(ErrorCode.not_coordinator)


def test_offset_delete_refuses_topics_the_consumers_are_subscribed_to() -> None:
    coordinator = Coordinator()
    member, generation = form_group(coordinator, "g", "consumer", subscription("t", "v"), 0)
    offsets = [OffsetToCommit("t", 0, 1), OffsetToCommit("u", 0, 2), OffsetToCommit("u", 1, 3)]
    coordinator.commit("g", offsets, 0, member=member, generation=generation)

    coordinator.hold_writes = True
    key = next(coordinator.keys)
    step = coordinator.shard.delete_offsets(key, "g", [("t", 0), ("u", 0), ("u", 7)], 1)
    coordinator.run(step, 1)
    assert key not in coordinator.answers
    (write,) = coordinator.held
    assert len(write.records) == 1  # ("u", 7) has no offset: nothing to tombstone
    assert committed(coordinator.shard, "g") == {("t", 0): 1, ("u", 0): 2, ("u", 1): 3}
    coordinator.log.extend(write.records)
    coordinator.run(coordinator.shard.write_completed(write.write_id, ErrorCode.none, 2), 2)
    assert coordinator.answers[key] == OffsetDeleteAnswer(
        ErrorCode.none,
        (
            (("t", 0), ErrorCode.group_subscribed_to_topic),
            (("u", 0), ErrorCode.none),
            (("u", 7), ErrorCode.none),
        ),
    )
    assert committed(coordinator.shard, "g") == {("t", 0): 1, ("u", 1): 3}

    # Once the group is empty, nothing is subscribed.
    coordinator.hold_writes = False
    coordinator.run(
        coordinator.shard.leave(next(coordinator.keys), "g", [LeavingMember(member)], 3), 3
    )
    assert delete_offsets(coordinator, "g", [("t", 0)], 4) == OffsetDeleteAnswer(
        ErrorCode.none, ((("t", 0), ErrorCode.none),)
    )
    assert committed(coordinator.shard, "g") == {("u", 1): 3}


def test_offset_delete_of_unknown_groups_non_consumer_groups_and_unreadable_subscriptions() -> None:
    coordinator = Coordinator()
    assert delete_offsets(coordinator, "nope", [("t", 0)], 0) == OffsetDeleteAnswer(
        ErrorCode.group_id_not_found
    )
    form_group(coordinator, "connect", "connect", b"whatever", 0)
    assert delete_offsets(coordinator, "connect", [("t", 0)], 0) == OffsetDeleteAnswer(
        ErrorCode.non_empty_group
    )
    # A consumer group whose subscription cannot be read: every topic counts as subscribed.
    form_group(coordinator, "odd", "consumer", b"\x00", 0)
    assert delete_offsets(coordinator, "odd", [("t", 0)], 0) == OffsetDeleteAnswer(
        ErrorCode.none, ((("t", 0), ErrorCode.group_subscribed_to_topic),)
    )
    # A group of offsets alone has no subscriptions.
    coordinator.commit("solo", [OffsetToCommit("t", 0, 1)], 0)
    assert delete_offsets(coordinator, "solo", [("t", 0)], 1) == OffsetDeleteAnswer(
        ErrorCode.none, ((("t", 0), ErrorCode.none),)
    )
    assert committed(coordinator.shard, "solo") == {}


def test_subscription_topics_reads_every_version_and_refuses_garbage() -> None:
    assert subscription_topics(subscription("a", "b", version=0)) == frozenset({"a", "b"})
    assert subscription_topics(subscription("a", version=3)) == frozenset({"a"})
    assert subscription_topics(subscription()) == frozenset()
    assert subscription_topics(b"") is None
    assert subscription_topics(b"\x00\x01\x00\x00\x00\x02\x00\x01a") is None  # truncated
    assert subscription_topics(b"\x00\x01\xff\xff\xff\xff") is None  # negative count


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["join", "heartbeat", "leave", "commit", "tick"]),
            st.sampled_from(["g1", "g2", "g3"]),
            st.integers(min_value=0, max_value=40_000),
        ),
        max_size=30,
    )
)
def test_the_next_deadline_is_the_earliest_of_every_groups_timers(
    operations: list[tuple[str, str, int]],
) -> None:
    coordinator = Coordinator()
    shard = coordinator.shard
    members: dict[str, tuple[str, int]] = {}
    now = 0
    for operation, group_id, advance in operations:
        now += advance
        if operation == "join" and group_id not in members:
            members[group_id] = coordinator.join_and_sync(group_id, now)
        elif operation == "heartbeat" and group_id in members:
            member, generation = members[group_id]
            step = shard.heartbeat(
                next(coordinator.keys), group_id, HeartbeatRequest(member, generation), now
            )
            coordinator.run(step, now)
        elif operation == "leave" and group_id in members:
            member, _ = members.pop(group_id)
            step = shard.leave(next(coordinator.keys), group_id, [LeavingMember(member)], now)
            coordinator.run(step, now)
        elif operation == "commit":
            coordinator.commit(group_id + "-solo", [OffsetToCommit("t", 0, advance)], now)
        elif operation == "tick":
            coordinator.run(shard.tick(now), now)
            members = {
                g: m
                for g, m in members.items()
                if (group := shard.group(g)) is not None and group.state is GroupState.STABLE
            }
        timers = [
            deadline
            for g in shard.group_ids()
            if (group := shard.group(g)) is not None
            and (deadline := group.next_deadline_ms()) is not None
        ]
        assert shard.next_deadline_ms() == min(timers, default=None)

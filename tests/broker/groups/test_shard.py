"""One `__consumer_offsets` partition's coordinator state (broker/groups/shard.py)."""

from __future__ import annotations

from itertools import count

from kio.schema.errors import ErrorCode

from broker.groups.membership import (
    GroupConfig,
    GroupState,
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
    OffsetToCommit,
    Record,
    ShardConfig,
    ShardStep,
    Write,
)

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

    def run(self, step: ShardStep[int], now: int) -> None:
        self.answers.update(step.answers)
        for write in step.writes:
            if self.hold_writes:
                self.held.append(write)
                continue
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
    ) -> dict[tuple[str, int], ErrorCode] | None:
        key = next(self.keys)
        step = self.shard.commit_offsets(
            key,
            group,
            member_id=member,
            group_instance_id=None,
            generation_id=generation,
            offsets=offsets,
            now_ms=now,
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

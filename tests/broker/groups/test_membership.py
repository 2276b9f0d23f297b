"""The classic group protocol against Kafka's rules (ClassicGroup / GroupMetadataManager)."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field
from uuid import UUID

from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from broker.groups.membership import (
    UNKNOWN_MEMBER_ID,
    Answer,
    ClassicGroup,
    GroupConfig,
    GroupState,
    GroupStateChange,
    GroupStep,
    HeartbeatAnswer,
    HeartbeatRequest,
    JoinAnswer,
    JoinRequest,
    LeaveAnswer,
    LeavingMember,
    MetadataWrite,
    Protocol,
    SyncAnswer,
    SyncRequest,
)
from broker.groups.records import GroupMetadataValue

SESSION = 10_000
REBALANCE = 30_000
DELAY = 3_000


def counting_uuids() -> itertools.count[int]:
    return itertools.count(1)


def new_group(**config: int) -> ClassicGroup[int]:
    numbers = counting_uuids()
    return ClassicGroup("g", GroupConfig(**config), lambda: UUID(int=next(numbers)))


def protocols(client: str, *names: str) -> tuple[Protocol, ...]:
    return tuple(Protocol(name, f"{client}:{name}".encode()) for name in names)


def join_request(
    client: str,
    member_id: str = UNKNOWN_MEMBER_ID,
    *,
    names: tuple[str, ...] = ("range",),
    instance: str | None = None,
    known: bool = False,
    session: int = SESSION,
    rebalance: int = REBALANCE,
    protocol_type: str = "consumer",
    skip: bool = False,
) -> JoinRequest:
    return JoinRequest(
        member_id=member_id,
        client_id=client,
        client_host=f"/10.0.0.{len(client)}",
        protocol_type=protocol_type,
        protocols=protocols(client, *names),
        session_timeout_ms=session,
        rebalance_timeout_ms=rebalance,
        group_instance_id=instance,
        require_known_member_id=known,
        supports_skip_assignment=skip,
    )


@dataclass
class Driver:
    """Plays the coordinator: keys requests, collects answers (each once) and writes."""

    group: ClassicGroup[int]
    answers: dict[int, Answer] = field(default_factory=dict)
    writes: list[MetadataWrite] = field(default_factory=list)
    state_changes: list[GroupStateChange] = field(default_factory=list)
    keys: itertools.count[int] = field(default_factory=itertools.count)

    def state(self) -> GroupState:
        """The group's state now. A call rather than `driver.group.state`: mypy would keep
        that attribute narrowed by an earlier assert across the calls that change it."""
        return self.group.state

    def feed(self, step: GroupStep[int]) -> GroupStep[int]:
        for key, answer in step.answers:
            assert key not in self.answers, f"request {key} answered twice"
            self.answers[key] = answer
        self.writes.extend(step.writes)
        self.state_changes.extend(step.state_changes)
        return step

    def join(self, request: JoinRequest, now: int) -> int:
        key = next(self.keys)
        self.feed(self.group.join(key, request, now))
        return key

    def sync(self, request: SyncRequest, now: int) -> int:
        key = next(self.keys)
        self.feed(self.group.sync(key, request, now))
        return key

    def heartbeat(
        self, member_id: str, generation: int, now: int, instance: str | None = None
    ) -> ErrorCode:
        key = next(self.keys)
        self.feed(self.group.heartbeat(key, HeartbeatRequest(member_id, generation, instance), now))
        answer = self.answers[key]
        assert isinstance(answer, HeartbeatAnswer)
        return answer.error

    def leave(self, members: Iterable[LeavingMember], now: int) -> LeaveAnswer:
        key = next(self.keys)
        self.feed(self.group.leave(key, members, now))
        answer = self.answers[key]
        assert isinstance(answer, LeaveAnswer)
        return answer

    def tick(self, now: int) -> None:
        self.feed(self.group.tick(now))

    def settle(self) -> int:
        """Ticks until the join phase under way ends; when it did."""
        now = 0
        while self.group.state is GroupState.PREPARING_REBALANCE:
            deadline = self.group.next_deadline_ms()
            assert deadline is not None
            now = deadline
            self.tick(now)
        return now

    def complete_writes(self, now: int, error: ErrorCode = ErrorCode.none) -> None:
        pending, self.writes = self.writes, []
        for write in pending:
            self.feed(self.group.write_completed(write.write_id, error, now))

    def join_answer(self, key: int) -> JoinAnswer:
        answer = self.answers[key]
        assert isinstance(answer, JoinAnswer)
        return answer

    def sync_answer(self, key: int) -> SyncAnswer:
        answer = self.answers[key]
        assert isinstance(answer, SyncAnswer)
        return answer


def stable_group(
    clients: Iterable[str],
    statics: bool = False,
    names: tuple[str, ...] = ("range",),
    **config: int,
) -> tuple[Driver, dict[str, str]]:
    """A Stable group at generation 1 whose members joined at time 0; client -> member id.

    With more than one member the initial delay is extended once: the group is formed, and
    the sessions start, at 2 * DELAY.
    """
    driver = Driver(new_group(**config))
    keys = {
        c: driver.join(join_request(c, instance=c if statics else None, names=names), 0)
        for c in clients
    }
    formed = driver.settle()
    members = {c: driver.join_answer(k).member_id for c, k in keys.items()}
    leader = driver.group.leader_id
    assignments = {m: f"assignment of {c}".encode() for c, m in members.items()}
    assert leader is not None
    driver.sync(SyncRequest(leader, 1, assignments), formed)
    for member in members.values():
        if member != leader:
            driver.sync(SyncRequest(member, 1), formed)
    driver.complete_writes(formed)
    assert driver.state() is GroupState.STABLE
    return driver, members


# --- JoinGroup -----------------------------------------------------------------------------


def test_new_member_of_v4_gets_member_id_required_and_then_joins() -> None:
    driver = Driver(new_group())
    first = driver.join(join_request("c1", known=True), 0)
    required = driver.join_answer(first)
    assert required.error is ErrorCode.member_id_required
    assert required.member_id == f"c1-{UUID(int=1)}"
    # A pending member is no member yet and causes no rebalance.
    assert driver.state() is GroupState.EMPTY
    assert driver.group.member_ids == ()

    second = driver.join(join_request("c1", required.member_id, known=True), 100)
    assert second not in driver.answers  # deferred: the initial delay runs
    assert driver.state() is GroupState.PREPARING_REBALANCE
    driver.tick(100 + DELAY)
    joined = driver.join_answer(second)
    assert joined.error is ErrorCode.none
    assert (joined.member_id, joined.generation_id, joined.leader) == (
        required.member_id,
        1,
        required.member_id,
    )
    assert joined.protocol_type == "consumer" and joined.protocol_name == "range"
    assert [m.metadata for m in joined.members] == [b"c1:range"]


def test_old_join_versions_join_without_member_id_required() -> None:
    driver = Driver(new_group())
    key = driver.join(join_request("c1", known=False), 0)
    assert key not in driver.answers
    assert driver.group.member_ids == (f"c1-{UUID(int=1)}",)


def test_full_rebalance_with_three_members() -> None:
    driver = Driver(new_group())
    keys = [driver.join(join_request(c), t) for c, t in (("a", 0), ("b", 100), ("c", 200))]
    # b and c joined during the initial delay: it is extended once, then completes.
    driver.tick(DELAY)
    assert not driver.answers
    assert driver.group.next_deadline_ms() == 2 * DELAY
    driver.tick(2 * DELAY)
    answers = [driver.join_answer(k) for k in keys]
    leader, *followers = answers
    assert {a.generation_id for a in answers} == {1}
    assert {a.leader for a in answers} == {leader.member_id}
    assert [(m.member_id, m.metadata) for m in leader.members] == [
        (a.member_id, f"{c}:range".encode()) for a, c in zip(answers, "abc", strict=True)
    ]
    assert all(f.members == () for f in followers)
    assert driver.state() is GroupState.COMPLETING_REBALANCE

    follower_syncs = [driver.sync(SyncRequest(f.member_id, 1), 7_000) for f in followers]
    assert not any(k in driver.answers for k in follower_syncs)
    assignments = {a.member_id: f"for {a.member_id}".encode() for a in answers}
    leader_sync = driver.sync(SyncRequest(leader.member_id, 1, assignments), 7_100)
    # Nothing is answered before the assignment is written.
    assert leader_sync not in driver.answers
    assert driver.state() is GroupState.COMPLETING_REBALANCE
    [write] = driver.writes
    assert write.value.generation == 1
    assert write.value.protocol == "range" and write.value.protocol_type == "consumer"
    assert write.value.leader == leader.member_id
    assert [(m.member_id, m.subscription, m.assignment) for m in write.value.members] == [
        (a.member_id, f"{c}:range".encode(), assignments[a.member_id])
        for a, c in zip(answers, "abc", strict=True)
    ]

    driver.complete_writes(7_200)
    assert driver.state() is GroupState.STABLE
    for key, answer in zip([leader_sync, *follower_syncs], answers, strict=True):
        synced = driver.sync_answer(key)
        assert synced.error is ErrorCode.none
        assert synced.assignment == assignments[answer.member_id]
        assert synced.protocol_name == "range"
    # A later SyncGroup of the same generation is answered at once.
    again = driver.sync(SyncRequest(followers[0].member_id, 1), 7_300)
    assert driver.sync_answer(again).assignment == assignments[followers[0].member_id]


def test_each_state_change_is_reported_with_the_group_as_it_became() -> None:
    driver, members = stable_group(["a", "b"])
    a, b = members["a"], members["b"]
    assert [
        (c.previous_state, c.state, c.generation_id, c.protocol_name, c.leader_id, c.member_ids)
        for c in driver.state_changes
    ] == [
        (GroupState.EMPTY, GroupState.PREPARING_REBALANCE, 0, None, a, (a,)),
        (GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE, 1, "range", a, (a, b)),
        (GroupState.COMPLETING_REBALANCE, GroupState.STABLE, 1, "range", a, (a, b)),
    ]
    assert {c.group_id for c in driver.state_changes} == {"g"}

    # b's session runs out: a rebalance without it, which a alone completes.
    driver.state_changes.clear()
    driver.heartbeat(a, 1, 2 * DELAY + SESSION - 1)
    driver.tick(2 * DELAY + SESSION)
    driver.join(join_request("a", a), 2 * DELAY + SESSION + 1)
    assert [(c.state, c.generation_id, c.member_ids) for c in driver.state_changes] == [
        (GroupState.PREPARING_REBALANCE, 1, (a,)),
        (GroupState.COMPLETING_REBALANCE, 2, (a,)),
    ]


def test_initial_delay_is_extended_by_joins_up_to_the_rebalance_timeout() -> None:
    driver = Driver(new_group())
    rebalance = 7_000
    first = driver.join(join_request("a", rebalance=rebalance), 0)
    assert driver.group.next_deadline_ms() == 3_000
    driver.join(join_request("b", rebalance=rebalance), 2_000)
    driver.tick(3_000)
    assert driver.group.next_deadline_ms() == 6_000
    driver.join(join_request("c", rebalance=rebalance), 10_000)
    driver.tick(6_000)
    # Only 1000 ms of the 7000 ms rebalance timeout are left beyond the first delay.
    assert driver.group.next_deadline_ms() == 7_000
    driver.join(join_request("d", rebalance=rebalance), 6_500)
    driver.tick(6_999)
    assert first not in driver.answers
    driver.tick(7_000)
    assert driver.join_answer(first).generation_id == 1
    assert len(driver.group.member_ids) == 4


def test_initial_delay_without_more_joins_completes_after_the_delay() -> None:
    driver = Driver(new_group(initial_rebalance_delay_ms=500))
    key = driver.join(join_request("a"), 0)
    driver.tick(499)
    assert key not in driver.answers
    driver.tick(500)
    assert driver.join_answer(key).error is ErrorCode.none


def test_protocol_is_chosen_by_votes_among_protocols_all_members_support() -> None:
    driver = Driver(new_group())
    keys = [
        driver.join(join_request("a", names=("roundrobin", "range", "sticky")), 0),
        driver.join(join_request("b", names=("range", "roundrobin")), 0),
        driver.join(join_request("c", names=("roundrobin", "range")), 0),
    ]
    driver.settle()
    assert {driver.join_answer(k).protocol_name for k in keys} == {"roundrobin"}
    leader = driver.join_answer(keys[0])
    # The leader gets each member's metadata for the chosen protocol.
    assert [m.metadata for m in leader.members] == [
        b"a:roundrobin",
        b"b:roundrobin",
        b"c:roundrobin",
    ]


def test_join_errors() -> None:
    driver, members = stable_group(["a"])
    now = 10_000
    unknown = driver.join(join_request("x", "x-unknown"), now)
    assert driver.join_answer(unknown) == JoinAnswer(ErrorCode.unknown_member_id, "x-unknown")
    wrong_type = driver.join(join_request("x", protocol_type="connect"), now)
    assert driver.join_answer(wrong_type).error is ErrorCode.inconsistent_group_protocol
    no_common = driver.join(join_request("x", names=("sticky",)), now)
    assert driver.join_answer(no_common).error is ErrorCode.inconsistent_group_protocol
    known_changing = driver.join(join_request("a", members["a"], names=("sticky",)), now)
    assert driver.join_answer(known_changing).error is ErrorCode.inconsistent_group_protocol
    too_short = driver.join(join_request("x", session=1_000), now)
    assert driver.join_answer(too_short).error is ErrorCode.invalid_session_timeout
    empty = Driver(new_group())
    no_protocols = empty.join(join_request("x", names=()), 0)
    assert empty.join_answer(no_protocols).error is ErrorCode.inconsistent_group_protocol
    assert driver.state() is GroupState.STABLE and driver.group.generation_id == 1


def test_follower_rejoining_a_stable_group_unchanged_gets_the_current_generation() -> None:
    driver, members = stable_group(["a", "b"])
    key = driver.join(join_request("b", members["b"]), 10_000)
    answer = driver.join_answer(key)
    assert (answer.error, answer.generation_id, answer.leader) == (
        ErrorCode.none,
        1,
        members["a"],
    )
    assert driver.state() is GroupState.STABLE


def test_leader_rejoining_a_stable_group_forces_a_rebalance() -> None:
    driver, members = stable_group(["a", "b"])
    leader_join = driver.join(join_request("a", members["a"]), 10_000)
    assert driver.state() is GroupState.PREPARING_REBALANCE
    follower_join = driver.join(join_request("b", members["b"]), 10_100)
    # Everyone rejoined: not the initial rebalance, so no delay.
    assert driver.join_answer(leader_join).generation_id == 2
    assert driver.join_answer(follower_join).generation_id == 2


def test_rejoin_during_completing_rebalance_gets_the_same_answer() -> None:
    driver = Driver(new_group())
    a, b = driver.join(join_request("a"), 0), driver.join(join_request("b"), 0)
    formed = driver.settle()
    leader = driver.join_answer(a)
    again = driver.join(join_request("a", leader.member_id), formed + 1)
    assert driver.join_answer(again) == leader
    assert driver.state() is GroupState.COMPLETING_REBALANCE
    # Changed metadata instead rebalances, and waiting SyncGroups learn it.
    follower = driver.join_answer(b).member_id
    waiting_sync = driver.sync(SyncRequest(follower, 1), formed + 2)
    driver.join(join_request("a", leader.member_id, names=("range", "sticky")), formed + 3)
    assert driver.sync_answer(waiting_sync).error is ErrorCode.rebalance_in_progress
    assert driver.state() is GroupState.PREPARING_REBALANCE


def test_superseded_join_is_answered_not_coordinator() -> None:
    driver, members = stable_group(["a", "b"])
    first = driver.join(join_request("a", members["a"]), 10_000)
    second = driver.join(join_request("a", members["a"]), 10_100)
    assert driver.join_answer(first) == JoinAnswer(ErrorCode.not_coordinator, members["a"])
    driver.join(join_request("b", members["b"]), 10_200)
    assert driver.join_answer(second).generation_id == 2


# --- rebalance deadlines, sessions, leaving --------------------------------------------------


def test_member_missing_the_rebalance_deadline_is_removed() -> None:
    driver, members = stable_group(["a", "b", "c"])
    start = 10_000
    a = driver.join(join_request("a", members["a"]), start)
    c = driver.join(join_request("c", members["c"]), start + 10)
    # b stays alive, heartbeating, but does not rejoin.
    for t in range(start + 20, start + REBALANCE, 5_000):
        assert driver.heartbeat(members["b"], 1, t) is ErrorCode.rebalance_in_progress
    driver.tick(start + REBALANCE - 1)
    assert a not in driver.answers
    driver.tick(start + REBALANCE)
    assert driver.group.member_ids == (members["a"], members["c"])
    assert driver.join_answer(a).generation_id == 2
    assert [m.member_id for m in driver.join_answer(a).members] == [members["a"], members["c"]]
    assert driver.join_answer(c).generation_id == 2
    assert driver.heartbeat(members["b"], 1, start + REBALANCE) is ErrorCode.unknown_member_id


def test_new_leader_is_elected_when_the_leader_misses_the_rebalance() -> None:
    driver, members = stable_group(["a", "b"])
    driver.join(join_request("b", members["b"], names=("range", "sticky")), 10_000)
    driver.tick(10_000 + REBALANCE)
    assert driver.group.leader_id == members["b"]
    assert driver.group.member_ids == (members["b"],)


def test_session_expiry_triggers_a_rebalance() -> None:
    driver, members = stable_group(["a", "b"])
    # Sessions started with the SyncGroup answers, when the group formed.
    formed = 2 * DELAY
    assert driver.group.next_deadline_ms() == formed + SESSION
    assert driver.heartbeat(members["a"], 1, formed + 2_000) is ErrorCode.none
    driver.tick(formed + SESSION - 1)
    assert driver.state() is GroupState.STABLE
    driver.tick(formed + SESSION)
    assert driver.group.member_ids == (members["a"],)
    assert driver.state() is GroupState.PREPARING_REBALANCE
    now = formed + SESSION + 500
    assert driver.heartbeat(members["a"], 1, now) is ErrorCode.rebalance_in_progress
    key = driver.join(join_request("a", members["a"]), now + 100)
    assert driver.join_answer(key).generation_id == 2
    assert driver.state() is GroupState.COMPLETING_REBALANCE
    assert driver.heartbeat(members["a"], 2, now + 200) is ErrorCode.none


def test_members_waiting_for_an_answer_are_not_expired() -> None:
    driver = Driver(new_group())
    a = driver.join(join_request("a"), 0)
    b = driver.join(join_request("b"), 0)
    formed = driver.settle()
    follower = driver.join_answer(b).member_id
    sync = driver.sync(SyncRequest(follower, 1), formed)
    leader = driver.join_answer(a).member_id
    driver.heartbeat(leader, 1, formed + 5_000)
    # The follower waits for the leader longer than its session timeout.
    driver.tick(formed + SESSION)
    assert follower in driver.group.member_ids
    driver.sync(SyncRequest(leader, 1, {leader: b"x", follower: b"y"}), formed + SESSION + 1)
    driver.complete_writes(formed + SESSION + 2)
    assert driver.sync_answer(sync).assignment == b"y"


def test_members_that_never_sync_are_removed_after_the_rebalance_timeout() -> None:
    driver = Driver(new_group())
    rebalance = 8_000
    a = driver.join(join_request("a", rebalance=rebalance), 0)
    b = driver.join(join_request("b", rebalance=rebalance), 0)
    formed = driver.settle()
    leader = driver.join_answer(a).member_id
    driver.sync(SyncRequest(leader, 1, {leader: b"x"}), formed + 1)
    driver.complete_writes(formed + 2)
    assert driver.state() is GroupState.STABLE
    driver.heartbeat(driver.join_answer(b).member_id, 1, formed + 10_000)
    driver.heartbeat(leader, 1, formed + 10_000)
    driver.tick(formed + rebalance - 1)
    assert driver.state() is GroupState.STABLE
    driver.tick(formed + rebalance)
    assert driver.group.member_ids == (leader,)
    assert driver.state() is GroupState.PREPARING_REBALANCE


def test_leave_triggers_a_rebalance() -> None:
    driver, members = stable_group(["a", "b", "c"])
    left = driver.leave([LeavingMember(members["b"])], 10_000)
    assert left.error is ErrorCode.none
    assert [m.error for m in left.members] == [ErrorCode.none]
    assert driver.state() is GroupState.PREPARING_REBALANCE
    a = driver.join(join_request("a", members["a"]), 10_100)
    assert a not in driver.answers
    c = driver.join(join_request("c", members["c"]), 10_200)
    assert driver.join_answer(a).generation_id == driver.join_answer(c).generation_id == 2
    assert driver.group.member_ids == (members["a"], members["c"])


def test_batched_leave_answers_each_member() -> None:
    driver, members = stable_group(["a", "b", "c"], statics=True)
    left = driver.leave(
        [
            LeavingMember(members["a"], "a"),
            LeavingMember("nobody"),
            LeavingMember("impostor", "b"),
            LeavingMember(UNKNOWN_MEMBER_ID, "c"),  # by instance id, as admin clients do
            LeavingMember(UNKNOWN_MEMBER_ID, "ghost"),
        ],
        10_000,
    )
    assert [m.error for m in left.members] == [
        ErrorCode.none,
        ErrorCode.unknown_member_id,
        ErrorCode.fenced_instance_id,
        ErrorCode.none,
        ErrorCode.unknown_member_id,
    ]
    assert driver.group.member_ids == (members["b"],)


def test_leaving_member_s_waiting_requests_are_answered() -> None:
    driver = Driver(new_group())
    a, b = driver.join(join_request("a"), 0), driver.join(join_request("b"), 0)
    formed = driver.settle()
    follower = driver.join_answer(b).member_id
    sync = driver.sync(SyncRequest(follower, 1), formed)
    driver.leave([LeavingMember(follower)], formed + 1)
    assert driver.sync_answer(sync).error is ErrorCode.unknown_member_id
    assert driver.state() is GroupState.PREPARING_REBALANCE
    assert a in driver.answers


def test_pending_member_expires_after_its_session_timeout() -> None:
    driver, members = stable_group(["a"])
    required = driver.join_answer(driver.join(join_request("b", known=True), 10_000))
    assert driver.group.next_deadline_ms() == DELAY + SESSION
    # A pending member holds back the end of a join phase, until it joins or expires.
    rejoin = driver.join(join_request("a", members["a"]), 11_000)
    assert rejoin not in driver.answers
    driver.tick(10_000 + SESSION)
    assert driver.join_answer(rejoin).generation_id == 2
    late = driver.join(join_request("b", required.member_id, known=True), 21_000)
    assert driver.join_answer(late).error is ErrorCode.unknown_member_id


def test_new_member_whose_join_waits_too_long_is_removed() -> None:
    driver, members = stable_group(["a"], new_member_join_timeout_ms=20_000)
    newcomer = driver.join(join_request("b"), 10_000)
    for t in range(6_000, 25_001, 4_000):
        driver.heartbeat(members["a"], 1, t)
    driver.tick(210_000)
    assert driver.join_answer(newcomer) == JoinAnswer(ErrorCode.unknown_member_id, "")


# --- static membership ---------------------------------------------------------------------


def test_static_member_restart_replaces_it_without_a_rebalance() -> None:
    driver, members = stable_group(["a", "b"], statics=True)
    old = members["b"]
    key = driver.join(join_request("b", instance="b"), 10_000)
    assert driver.state() is GroupState.STABLE and driver.group.generation_id == 1
    assert key not in driver.answers  # waits for the new member id to be written
    [write] = driver.writes
    new = write.value.members[1].member_id
    assert new != old and new.startswith("b-")
    assert write.value.members[1].assignment == b"assignment of b"
    driver.complete_writes(10_100)
    answer = driver.join_answer(key)
    assert (answer.error, answer.member_id, answer.generation_id, answer.leader) == (
        ErrorCode.none,
        new,
        1,
        members["a"],
    )
    synced = driver.sync_answer(driver.sync(SyncRequest(new, 1, group_instance_id="b"), 10_200))
    assert synced.assignment == b"assignment of b"
    # The old incarnation is fenced.
    assert driver.heartbeat(old, 1, 10_300, instance="b") is ErrorCode.fenced_instance_id
    assert driver.heartbeat(new, 1, 10_300, instance="b") is ErrorCode.none
    assert driver.state() is GroupState.STABLE and driver.group.generation_id == 1


def test_replaced_static_leader_acts_as_follower_before_v9_and_skips_assignment_after() -> None:
    for skip in (False, True):
        driver, members = stable_group(["a", "b"], statics=True)
        key = driver.join(join_request("a", instance="a", skip=skip), 10_000)
        driver.complete_writes(10_100)
        answer = driver.join_answer(key)
        assert driver.group.leader_id == answer.member_id
        if skip:
            assert answer.leader == answer.member_id and answer.skip_assignment
            assert len(answer.members) == 2
        else:
            assert answer.leader == members["a"] and answer.members == ()


def test_failed_write_of_a_static_replacement_restores_the_old_member() -> None:
    driver, members = stable_group(["a", "b"], statics=True)
    key = driver.join(join_request("b", instance="b"), 10_000)
    driver.complete_writes(10_100, ErrorCode.not_leader_or_follower)
    answer = driver.join_answer(key)
    assert (answer.error, answer.member_id) == (ErrorCode.not_coordinator, "")
    assert driver.group.member_ids == (members["a"], members["b"])
    assert driver.heartbeat(members["b"], 1, 10_200, instance="b") is ErrorCode.none


def test_static_member_whose_restart_changes_the_protocol_triggers_a_rebalance() -> None:
    driver, _ = stable_group(["a"], statics=True, names=("range", "sticky"))
    assert driver.group.protocol_name == "range"
    key = driver.join(join_request("a", instance="a", names=("sticky", "range")), 10_000)
    assert not driver.writes
    # It was the only member, so the new join phase ends at once.
    answer = driver.join_answer(key)
    assert (answer.generation_id, answer.protocol_name) == (2, "sticky")
    assert driver.state() is GroupState.COMPLETING_REBALANCE


def test_static_members_that_do_not_rejoin_stay_members() -> None:
    driver, members = stable_group(["a", "b"], statics=True)
    driver.join(join_request("a", members["a"], instance="a"), 10_000)
    for t in range(10_000, 10_000 + REBALANCE, 5_000):
        driver.heartbeat(members["b"], 1, t, instance="b")
    driver.tick(10_000 + REBALANCE)
    assert driver.group.member_ids == (members["a"], members["b"])
    assert driver.group.generation_id == 2


def test_fencing_of_static_members() -> None:
    driver, members = stable_group(["a", "b"], statics=True)
    now = 10_000
    assert driver.heartbeat("b-old", 1, now, instance="b") is ErrorCode.fenced_instance_id
    assert driver.heartbeat(members["b"], 1, now, instance="z") is ErrorCode.unknown_member_id
    sync = driver.sync(SyncRequest("b-old", 1, group_instance_id="b"), now)
    assert driver.sync_answer(sync).error is ErrorCode.fenced_instance_id
    join = driver.join(join_request("b", "b-old", instance="b"), now)
    assert driver.join_answer(join).error is ErrorCode.fenced_instance_id
    left = driver.leave([LeavingMember("b-old", "b")], now)
    assert left.members[0].error is ErrorCode.fenced_instance_id
    assert driver.state() is GroupState.STABLE


def test_replacing_a_static_member_fences_its_waiting_sync() -> None:
    driver = Driver(new_group())
    a = driver.join(join_request("a", instance="a"), 0)
    b = driver.join(join_request("b", instance="b"), 0)
    formed = driver.settle()
    waiting = driver.sync(SyncRequest(driver.join_answer(b).member_id, 1), formed + 1)
    again = driver.join(join_request("b", instance="b"), formed + 2)
    assert driver.sync_answer(waiting).error is ErrorCode.fenced_instance_id
    # Completing rebalance: the leader may be assigning to the old id, so rebalance.
    assert driver.state() is GroupState.PREPARING_REBALANCE
    driver.join(join_request("a", driver.join_answer(a).member_id, instance="a"), formed + 3)
    assert driver.join_answer(again).generation_id == 2


# --- SyncGroup and Heartbeat ---------------------------------------------------------------


def test_sync_and_heartbeat_errors() -> None:
    driver = Driver(new_group())
    a, b = driver.join(join_request("a"), 0), driver.join(join_request("b"), 0)
    formed = driver.settle()
    leader, follower = driver.join_answer(a).member_id, driver.join_answer(b).member_id
    now = formed + 1

    def sync_error(request: SyncRequest) -> ErrorCode:
        return driver.sync_answer(driver.sync(request, now)).error

    assert sync_error(SyncRequest(follower, 0)) is ErrorCode.illegal_generation
    assert sync_error(SyncRequest("nobody", 1)) is ErrorCode.unknown_member_id
    assert (
        sync_error(SyncRequest(follower, 1, protocol_name="sticky"))
        is ErrorCode.inconsistent_group_protocol
    )
    assert (
        sync_error(SyncRequest(follower, 1, protocol_type="connect"))
        is ErrorCode.inconsistent_group_protocol
    )
    assert driver.heartbeat(follower, 1, now) is ErrorCode.none  # CompletingRebalance
    assert driver.heartbeat(follower, 2, now) is ErrorCode.illegal_generation
    assert driver.heartbeat("nobody", 1, now) is ErrorCode.unknown_member_id
    driver.join(join_request("a", leader, names=("range", "sticky")), now)  # a rebalance
    assert sync_error(SyncRequest(follower, 1)) is ErrorCode.rebalance_in_progress
    assert driver.heartbeat(follower, 1, now) is ErrorCode.rebalance_in_progress


def test_superseded_sync_is_answered_not_coordinator() -> None:
    driver = Driver(new_group())
    driver.join(join_request("a"), 0)
    b = driver.join(join_request("b"), 0)
    formed = driver.settle()
    follower = driver.join_answer(b).member_id
    first = driver.sync(SyncRequest(follower, 1), formed)
    driver.sync(SyncRequest(follower, 1), formed + 1)
    assert driver.sync_answer(first).error is ErrorCode.not_coordinator


def test_failed_assignment_write_answers_syncs_with_the_error_and_rebalances() -> None:
    driver = Driver(new_group())
    a, b = driver.join(join_request("a"), 0), driver.join(join_request("b"), 0)
    formed = driver.settle()
    leader, follower = driver.join_answer(a).member_id, driver.join_answer(b).member_id
    syncs = [
        driver.sync(SyncRequest(follower, 1), formed),
        driver.sync(SyncRequest(leader, 1, {leader: b"x", follower: b"y"}), formed),
    ]
    driver.complete_writes(formed + 1, ErrorCode.request_timed_out)
    assert [driver.sync_answer(k) for k in syncs] == [
        SyncAnswer(ErrorCode.coordinator_not_available)
    ] * 2
    assert driver.state() is GroupState.PREPARING_REBALANCE


def test_assignment_written_after_a_new_rebalance_started_changes_nothing() -> None:
    driver = Driver(new_group())
    a, b = driver.join(join_request("a"), 0), driver.join(join_request("b"), 0)
    formed = driver.settle()
    leader, follower = driver.join_answer(a).member_id, driver.join_answer(b).member_id
    leader_sync = driver.sync(SyncRequest(leader, 1, {leader: b"x"}), formed)
    driver.join(join_request("b", follower, names=("range", "sticky")), formed + 1)
    assert driver.sync_answer(leader_sync).error is ErrorCode.rebalance_in_progress
    driver.complete_writes(formed + 2)
    assert driver.state() is GroupState.PREPARING_REBALANCE


# --- persistence, loading, describing, unloading -------------------------------------------


def test_group_that_becomes_empty_is_persisted() -> None:
    driver, members = stable_group(["a"])
    driver.leave([LeavingMember(members["a"])], 10_000)
    assert driver.state() is GroupState.EMPTY
    assert driver.group.generation_id == 2
    [write] = driver.writes
    assert write.value == GroupMetadataValue(
        protocol_type="consumer",
        generation=2,
        protocol=None,
        leader=None,
        members=(),
        current_state_timestamp_ms=10_000,
    )
    # Nothing waits on it.
    assert not driver.group.write_completed(write.write_id, ErrorCode.none, 5_001).answers


def test_group_rebuilt_from_its_persisted_metadata() -> None:
    driver, members = stable_group(["a", "b"], statics=True)
    assert not driver.writes  # all written; a static restart writes the group afresh
    driver.join(join_request("b", instance="b"), 10_000)
    value = driver.writes[-1].value

    loaded: ClassicGroup[int] = ClassicGroup.load("g", value, 100_000)
    assert loaded.state is GroupState.STABLE
    assert loaded.generation_id == 1 and loaded.protocol_name == "range"
    assert loaded.leader_id == members["a"]
    assert loaded.member_ids == tuple(m.member_id for m in value.members)
    assert loaded.next_deadline_ms() == 100_000 + SESSION
    replica = Driver(loaded)
    new_b = value.members[1].member_id
    synced = replica.sync_answer(
        replica.sync(SyncRequest(new_b, 1, group_instance_id="b"), 100_001)
    )
    assert synced.assignment == b"assignment of b"
    assert replica.heartbeat(new_b, 1, 100_002, instance="b") is ErrorCode.none
    description = loaded.describe()
    assert description.state == "Stable" and description.protocol == "range"
    assert [m.metadata for m in description.members] == [b"a:range", b"b:range"]

    empty: ClassicGroup[int] = ClassicGroup.load(
        "g", GroupMetadataValue("consumer", 4, None, None, ()), 0
    )
    assert empty.state is GroupState.EMPTY and empty.generation_id == 4
    assert empty.protocol_type == "consumer"


def test_describe_follows_kafka() -> None:
    driver = Driver(new_group())
    assert driver.group.describe().state == "Empty"
    driver.join(join_request("a"), 0)
    preparing = driver.group.describe()
    assert (preparing.state, preparing.protocol_type, preparing.protocol) == (
        "PreparingRebalance",
        "consumer",
        "",
    )
    [member] = preparing.members
    assert (member.client_id, member.client_host, member.metadata) == ("a", "/10.0.0.1", b"")
    driver.tick(DELAY)
    assert driver.group.describe().state == "CompletingRebalance"
    leader = driver.group.member_ids[0]
    driver.sync(SyncRequest(leader, 1, {leader: b"mine"}), DELAY)
    driver.complete_writes(DELAY)
    stable = driver.group.describe()
    assert (stable.state, stable.protocol) == ("Stable", "range")
    assert (stable.members[0].metadata, stable.members[0].assignment) == (b"a:range", b"mine")


def test_unload_answers_waiting_requests_and_kills_the_group() -> None:
    driver = Driver(new_group())
    a, b = driver.join(join_request("a"), 0), driver.join(join_request("b"), 0)
    formed = driver.settle()
    follower = driver.join_answer(b).member_id
    waiting = driver.sync(SyncRequest(follower, 1), formed)
    newcomer = driver.join(join_request("c"), formed + 1)  # rebalance; the sync is answered
    assert driver.sync_answer(waiting).error is ErrorCode.rebalance_in_progress
    driver.feed(driver.group.unload(formed + 2))
    assert driver.join_answer(newcomer).error is ErrorCode.not_coordinator
    assert driver.state() is GroupState.DEAD
    assert driver.group.next_deadline_ms() is None
    leader = driver.join_answer(a).member_id
    assert driver.heartbeat(leader, 1, formed + 3) is ErrorCode.coordinator_not_available
    join = driver.join(join_request("d"), formed + 3)
    assert driver.join_answer(join).error is ErrorCode.coordinator_not_available
    sync = driver.sync(SyncRequest(leader, 1), formed + 3)
    assert driver.sync_answer(sync).error is ErrorCode.coordinator_not_available
    assert driver.leave([LeavingMember(leader)], formed + 3).error is (
        ErrorCode.coordinator_not_available
    )


# --- properties ----------------------------------------------------------------------------

CLIENTS = ("c0", "c1", "c2", "c3")
STATIC = frozenset({"c2", "c3"})

operations = st.lists(
    st.one_of(
        st.tuples(st.just("join"), st.sampled_from(CLIENTS), st.booleans()),
        st.tuples(st.just("sync"), st.sampled_from(CLIENTS), st.booleans()),
        st.tuples(st.just("heartbeat"), st.sampled_from(CLIENTS), st.booleans()),
        st.tuples(st.just("leave"), st.sampled_from(CLIENTS), st.booleans()),
        st.tuples(st.just("tick"), st.sampled_from((1_000, 4_000, 11_000, 31_000)), st.booleans()),
        st.tuples(st.just("write"), st.just(""), st.booleans()),
        # Every client that knows a generation syncs, the leader last, and the writes succeed.
        st.tuples(st.just("round"), st.just(""), st.booleans()),
    ),
    max_size=60,
)


@dataclass
class Client:
    """What a consumer believes about its membership."""

    name: str
    member_id: str = UNKNOWN_MEMBER_ID
    generation: int = -1
    members: tuple[str, ...] = ()
    leader: bool = False


def _name(member_id: str) -> str:
    return member_id.split("-", maxsplit=1)[0]


@settings(max_examples=300, deadline=None)
@given(operations)
def test_every_request_is_answered_once_and_members_agree_on_each_generation(
    ops: list[tuple[str, str | int, bool]],
) -> None:
    driver = Driver(new_group())
    clients = {c: Client(c) for c in CLIENTS}
    sent: dict[int, tuple[Client, int]] = {}
    seen: set[int] = set()
    # generation -> (leader's client, protocol) as the JoinGroup answers told it.
    generations: dict[int, tuple[str, str | None]] = {}
    now = 0

    def observe() -> None:
        for key in set(driver.answers) - seen:
            seen.add(key)
            client, generation = sent[key]
            answer = driver.answers[key]
            if isinstance(answer, JoinAnswer):
                if answer.error is ErrorCode.none:
                    assert _name(answer.member_id) == client.name
                    view = (_name(answer.leader), answer.protocol_name)
                    assert generations.setdefault(answer.generation_id, view) == view
                    client.member_id = answer.member_id
                    client.generation = answer.generation_id
                    client.leader = answer.leader == answer.member_id
                    client.members = tuple(m.member_id for m in answer.members)
                elif answer.error is ErrorCode.member_id_required:
                    client.member_id = answer.member_id
                elif answer.error in (ErrorCode.unknown_member_id, ErrorCode.fenced_instance_id):
                    client.member_id = UNKNOWN_MEMBER_ID
            elif isinstance(answer, SyncAnswer) and answer.error is ErrorCode.none:
                # Only the assignment the leader of that generation made for this client.
                assert answer.assignment == f"{generation}:{client.name}".encode()

    def send_sync(client: Client, key: int) -> None:
        instance = client.name if client.name in STATIC else None
        assignments = (
            {m: f"{client.generation}:{_name(m)}".encode() for m in client.members}
            if client.leader
            else {}
        )
        sync = SyncRequest(
            client.member_id, client.generation, assignments, group_instance_id=instance
        )
        driver.feed(driver.group.sync(key, sync, now))

    for op, arg, flag in ops:
        now += 1
        if op == "round":
            for client in sorted(clients.values(), key=lambda c: c.leader):
                if client.generation >= 0:
                    key = next(driver.keys)
                    sent[key] = (client, client.generation)
                    send_sync(client, key)
            driver.complete_writes(now)
        elif op == "tick":
            assert isinstance(arg, int)
            now += arg
            driver.tick(now)
        elif op == "write":
            if driver.writes:
                write = driver.writes.pop(0)
                error = ErrorCode.none if flag else ErrorCode.not_leader_or_follower
                driver.feed(driver.group.write_completed(write.write_id, error, now))
        else:
            client = clients[str(arg)]
            instance = client.name if client.name in STATIC else None
            key = next(driver.keys)
            sent[key] = (client, client.generation)
            if op == "join":
                request = join_request(
                    client.name, client.member_id, instance=instance, known=flag, skip=flag
                )
                driver.feed(driver.group.join(key, request, now))
            elif op == "sync":
                send_sync(client, key)
            elif op == "heartbeat":
                request_hb = HeartbeatRequest(client.member_id, client.generation, instance)
                driver.feed(driver.group.heartbeat(key, request_hb, now))
            else:
                leaving = [LeavingMember(client.member_id, instance)]
                driver.feed(driver.group.leave(key, leaving, now))
        observe()

    # Left alone, every session ends and every waiting request is answered.
    for _ in range(200):
        driver.complete_writes(now)
        deadline = driver.group.next_deadline_ms()
        if deadline is None and not driver.writes:
            break
        now = max(now, deadline or now)
        driver.tick(now)
        observe()
    assert set(driver.answers) == set(sent)
    assert driver.state() is GroupState.EMPTY or not sent
    assert driver.group.member_ids == ()

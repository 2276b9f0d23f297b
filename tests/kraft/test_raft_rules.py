"""Focused tests of the individual Raft/KRaft rules of `RaftNode`."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from kraft.messages import (
    BeginQuorumEpochRequest,
    DivergingEpoch,
    EndQuorumEpochRequest,
    Entry,
    EntryKind,
    ErrorCode,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    Message,
    SnapshotId,
    VoteRequest,
    VoteResponse,
)
from kraft.quorum_state import QuorumState, QuorumStateError
from kraft.raft import (
    Append,
    Appended,
    DeleteBefore,
    LoadSnapshot,
    LocalSnapshot,
    NotLeader,
    RaftConfig,
    RaftNode,
    Ready,
    Role,
    SnapshotChunkToWrite,
    Truncate,
)

CONFIG = RaftConfig()
VOTERS = (1, 2, 3)


def no_jitter(bound: int) -> int:
    del bound
    return 0


def log_of(*epochs: int) -> list[Entry]:
    return [
        Entry(offset, epoch, f"e{epoch}o{offset}".encode()) for offset, epoch in enumerate(epochs)
    ]


def make_node(
    node_id: int = 1,
    log: Sequence[Entry] = (),
    state: QuorumState | None = None,
    voters: Sequence[int] = VOTERS,
    snapshot: LocalSnapshot | None = None,
) -> RaftNode:
    node = RaftNode(
        node_id=node_id,
        voters=voters,
        config=CONFIG,
        jitter=no_jitter,
        quorum_state=state or QuorumState(),
        log=log,
        now_ms=0,
        snapshot=snapshot,
    )
    node.take_ready()
    return node


def role_of(node: RaftNode) -> Role:
    """The node's role, read through a call so mypy does not keep a narrowed value."""
    return node.role


def sent(ready: Ready, kind: type[Message]) -> list[tuple[int, Message]]:
    return [(out.to, out.message) for out in ready.messages if isinstance(out.message, kind)]


def elect(node: RaftNode, now_ms: int = 5_000) -> Ready:
    """Drive `node` through pre-vote and vote to leadership with grants from every voter."""
    node.tick(now_ms)
    assert role_of(node) is Role.PROSPECTIVE
    for voter in sorted(node.voters - {node.node_id}):
        node.receive(VoteResponse(ErrorCode.NONE, node.epoch, None, True, True), voter, now_ms)
    assert role_of(node) is Role.CANDIDATE
    for voter in sorted(node.voters - {node.node_id}):
        node.receive(VoteResponse(ErrorCode.NONE, node.epoch, None, True, False), voter, now_ms)
    assert role_of(node) is Role.LEADER
    return node.take_ready()


def fetch(node: RaftNode, replica: int, offset: int, last_epoch: int, now_ms: int) -> FetchResponse:
    node.receive(FetchRequest(replica, node.epoch, offset, last_epoch), replica, now_ms)
    node.tick(now_ms + CONFIG.fetch_max_wait_ms)  # release a parked fetch
    responses = [m for to, m in sent(node.take_ready(), FetchResponse) if to == replica]
    assert len(responses) == 1
    response = responses[0]
    assert isinstance(response, FetchResponse)
    return response


# ----------------------------------------------------------------------- quorum state


def test_quorum_state_round_trips_through_json() -> None:
    state = QuorumState(leader_epoch=7, voted_for=2, leader_id=None)
    assert QuorumState.decode(state.encode()) == state
    assert b'"votedId": 2' in state.encode()


@pytest.mark.parametrize(
    "raw", [b"", b"{}", b'{"data_version": 0, "leaderEpoch": "x", "votedId": -1, "leaderId": -1}']
)
def test_quorum_state_rejects_malformed_bytes(raw: bytes) -> None:
    with pytest.raises(QuorumStateError):
        QuorumState.decode(raw)


# ----------------------------------------------------------------------- voting


def test_vote_is_granted_once_per_epoch_and_persisted_with_the_answer() -> None:
    node = make_node(node_id=1, log=log_of(1, 1))
    node.receive(VoteRequest(2, 2, 1, 2, pre_vote=False), 2, 10)
    ready = node.take_ready()
    assert ready.quorum_state == QuorumState(leader_epoch=2, voted_for=2, leader_id=None)
    [(to, answer)] = sent(ready, VoteResponse)
    assert to == 2 and isinstance(answer, VoteResponse) and answer.vote_granted
    # A second candidate in the same epoch is refused; the first one may ask again.
    node.receive(VoteRequest(2, 3, 1, 5, pre_vote=False), 3, 11)
    [(_, refused)] = sent(node.take_ready(), VoteResponse)
    assert isinstance(refused, VoteResponse) and not refused.vote_granted
    node.receive(VoteRequest(2, 2, 1, 2, pre_vote=False), 2, 12)
    [(_, again)] = sent(node.take_ready(), VoteResponse)
    assert isinstance(again, VoteResponse) and again.vote_granted


@pytest.mark.parametrize(
    ("last_epoch", "last_offset"), [(1, 3), (2, 2)], ids=["older-epoch", "shorter-log"]
)
def test_vote_is_refused_to_a_candidate_with_a_less_up_to_date_log(
    last_epoch: int, last_offset: int
) -> None:
    node = make_node(node_id=1, log=log_of(1, 2, 2))
    node.receive(VoteRequest(3, 2, last_epoch, last_offset, pre_vote=False), 2, 10)
    ready = node.take_ready()
    [(_, answer)] = sent(ready, VoteResponse)
    assert isinstance(answer, VoteResponse) and not answer.vote_granted
    assert node.epoch == 3 and node.voted_for is None  # the higher epoch is still adopted


def test_vote_from_a_lower_epoch_is_fenced() -> None:
    node = make_node(node_id=1, state=QuorumState(leader_epoch=5))
    node.receive(VoteRequest(4, 2, 0, 0, pre_vote=False), 2, 10)
    [(_, answer)] = sent(node.take_ready(), VoteResponse)
    assert isinstance(answer, VoteResponse)
    assert answer.error is ErrorCode.FENCED_LEADER_EPOCH and answer.leader_epoch == 5


def test_observers_do_not_vote() -> None:
    node = make_node(node_id=100)
    node.receive(VoteRequest(1, 2, 0, 0, pre_vote=False), 2, 10)
    [(_, answer)] = sent(node.take_ready(), VoteResponse)
    assert isinstance(answer, VoteResponse)
    assert answer.error is ErrorCode.INCONSISTENT_VOTER_SET and not answer.vote_granted
    node.tick(1_000_000)
    assert role_of(node) is not Role.PROSPECTIVE


def test_pre_vote_changes_no_state_and_does_not_bump_the_epoch() -> None:
    node = make_node(node_id=1, log=log_of(1), state=QuorumState(leader_epoch=1))
    node.receive(VoteRequest(2, 2, 1, 1, pre_vote=True), 2, 10)
    ready = node.take_ready()
    [(_, answer)] = sent(ready, VoteResponse)
    assert isinstance(answer, VoteResponse) and answer.vote_granted and answer.pre_vote
    assert ready.quorum_state is None and node.epoch == 1 and node.voted_for is None


def test_prospective_solicits_pre_votes_at_the_next_epoch_without_taking_it() -> None:
    node = make_node(node_id=1, log=log_of(1), state=QuorumState(leader_epoch=1))
    node.tick(10_000)
    ready = node.take_ready()
    assert role_of(node) is Role.PROSPECTIVE and node.epoch == 1
    assert ready.quorum_state is None
    requests = [m for _, m in sent(ready, VoteRequest)]
    assert requests and all(isinstance(m, VoteRequest) and m.pre_vote for m in requests)
    assert all(isinstance(m, VoteRequest) and m.candidate_epoch == 2 for m in requests)


def test_follower_with_a_live_leader_refuses_pre_votes_until_the_fetch_timeout() -> None:
    node = make_node(node_id=1, state=QuorumState(leader_epoch=3, leader_id=2))
    assert role_of(node) is Role.FOLLOWER
    node.receive(VoteRequest(4, 3, 0, 0, pre_vote=True), 3, 100)
    [(_, refused)] = sent(node.take_ready(), VoteResponse)
    assert isinstance(refused, VoteResponse) and not refused.vote_granted
    later = CONFIG.fetch_timeout_ms + 1
    node.receive(VoteRequest(4, 3, 0, 0, pre_vote=True), 3, later)
    [(_, granted)] = sent(node.take_ready(), VoteResponse)
    assert isinstance(granted, VoteResponse) and granted.vote_granted


def become_candidate(node: RaftNode, now_ms: int) -> None:
    node.tick(now_ms)
    node.receive(VoteResponse(ErrorCode.NONE, node.epoch, None, True, True), 2, now_ms)
    assert role_of(node) is Role.CANDIDATE
    node.take_ready()


def test_a_split_vote_is_retried_after_a_short_backoff_not_a_whole_election_timeout() -> None:
    split, alone = make_node(), make_node()
    become_candidate(split, 5_000)
    become_candidate(alone, 5_000)
    # Voter 2 stands in the same epoch: it voted for itself, so neither of us can win while
    # voter 3 is down. The candidate backs off (no jitter here: at once) and pre-votes again.
    split.receive(VoteRequest(split.epoch, 2, 0, 0, pre_vote=False), 2, 5_001)
    assert sent(split.take_ready(), VoteResponse) == [
        (2, VoteResponse(ErrorCode.NONE, split.epoch, None, False, False))
    ]
    split.tick(5_002)
    alone.tick(5_002)
    assert role_of(split) is Role.PROSPECTIVE
    assert role_of(alone) is Role.CANDIDATE
    alone.tick(5_000 + CONFIG.election_timeout_ms)
    assert role_of(alone) is Role.PROSPECTIVE


def test_candidate_persists_its_own_vote_before_asking_for_votes() -> None:
    node = make_node(node_id=1)
    node.tick(5_000)
    node.take_ready()  # the pre-vote round
    node.receive(VoteResponse(ErrorCode.NONE, 0, None, True, True), 2, 5_001)
    ready = node.take_ready()
    assert role_of(node) is Role.CANDIDATE
    assert ready.quorum_state == QuorumState(leader_epoch=1, voted_for=1, leader_id=None)
    assert all(isinstance(m, VoteRequest) and not m.pre_vote for _, m in sent(ready, VoteRequest))


# ----------------------------------------------------------------------- leadership


def test_new_leader_appends_leader_change_and_announces_its_epoch() -> None:
    node = make_node(node_id=1, log=log_of(1, 1))
    ready = elect(node)
    assert ready.quorum_state == QuorumState(leader_epoch=1, voted_for=1, leader_id=1)
    [append] = ready.log_ops
    assert isinstance(append, Append)
    assert append.entries == (Entry(2, 1, b"", EntryKind.LEADER_CHANGE),)
    assert {to for to, _ in sent(ready, BeginQuorumEpochRequest)} == {2, 3}


def test_append_is_refused_by_a_non_leader() -> None:
    node = make_node(node_id=1, state=QuorumState(leader_epoch=4, leader_id=2))
    assert node.append([b"x"]) == NotLeader(epoch=4, leader_id=2)


def test_leader_counts_its_own_entries_only_once_fsynced() -> None:
    node = make_node(node_id=1, voters=(1,))
    node.tick(5_000)
    assert role_of(node) is Role.LEADER
    ready = node.take_ready()
    assert ready.fsync_up_to == 1 and node.high_watermark == 0
    assert node.append([b"a", b"b"]) == Appended(epoch=1, base_offset=1, end_offset=3)
    node.fsync_completed(1, 5_001)
    assert node.high_watermark == 1
    node.fsync_completed(3, 5_002)
    ready = node.take_ready()
    assert node.high_watermark == 3 and ready.high_watermark == 3
    assert [entry.data for entry in ready.committed] == [b"", b"a", b"b"]


def test_a_large_commit_is_handed_out_a_bounded_number_of_entries_per_ready() -> None:
    node = RaftNode(
        node_id=1,
        voters=(1,),
        config=RaftConfig(max_committed_per_ready=2),
        jitter=no_jitter,
        quorum_state=QuorumState(),
        log=(),
        now_ms=0,
    )
    node.tick(5_000)
    node.append([b"a", b"b", b"c", b"d"])
    node.take_ready()
    node.fsync_completed(node.log_end_offset, 5_001)
    assert node.high_watermark == 5
    handed_out = []
    while node.has_committed_to_hand_out:
        committed = node.take_ready().committed
        assert 0 < len(committed) <= 2
        handed_out += committed
    assert [entry.data for entry in handed_out] == [b"", b"a", b"b", b"c", b"d"]
    assert [entry.offset for entry in handed_out] == list(range(5))
    assert node.take_ready().committed == []


def test_leader_does_not_count_itself_for_entries_its_flush_has_not_reached() -> None:
    # Five voters: two followers and the leader make the majority, so the commit needs the
    # leader's own fsync. The driver fsyncs in a thread while appends go on: a completed flush
    # covers the log as it was when the flush started, never the entries appended since.
    node = make_node(node_id=1, voters=(1, 2, 3, 4, 5))
    elect(node)
    assert node.append([b"a", b"b"]) == Appended(epoch=1, base_offset=1, end_offset=3)
    fetch(node, 2, offset=3, last_epoch=1, now_ms=5_010)
    fetch(node, 3, offset=3, last_epoch=1, now_ms=5_011)
    assert node.high_watermark == 0  # two followers hold all three; the leader's are not durable
    node.fsync_completed(1, 5_020)  # the flush that started before `a` and `b` were appended
    assert node.high_watermark == 1
    assert node.append([b"c"]) == Appended(epoch=1, base_offset=3, end_offset=4)
    node.fsync_completed(3, 5_030)
    ready = node.take_ready()
    assert node.high_watermark == 3 and ready.high_watermark == 3
    assert [entry.data for entry in ready.committed] == [b"", b"a", b"b"]
    assert ready.fsync_up_to == 4  # `c` still asks for a flush of its own


def test_high_watermark_waits_for_an_entry_of_the_current_epoch() -> None:
    # Old-epoch entries replicated to a majority are not committed by counting replicas
    # (Raft figure 8): the new leader's LeaderChange entry at offset 3 must be replicated too.
    node = make_node(node_id=1, log=log_of(1, 1, 1), state=QuorumState(leader_epoch=1))
    elect(node)
    assert node.epoch == 2
    node.fsync_completed(4, 5_000)
    fetch(node, 2, offset=3, last_epoch=1, now_ms=5_010)
    assert node.high_watermark == 0
    fetch(node, 2, offset=4, last_epoch=2, now_ms=5_020)
    assert node.high_watermark == 4


def test_observer_fetches_do_not_advance_the_high_watermark() -> None:
    node = make_node(node_id=1)
    elect(node)
    node.fsync_completed(1, 5_000)
    fetch(node, 100, offset=1, last_epoch=1, now_ms=5_010)
    assert node.high_watermark == 0
    fetch(node, 3, offset=1, last_epoch=1, now_ms=5_020)
    assert node.high_watermark == 1


def test_leader_answers_a_diverging_fetch_with_its_end_offset_for_that_epoch() -> None:
    # Leader log epochs by offset: 1 1 1 2 2 | LeaderChange of epoch 4 at offset 5.
    node = make_node(node_id=1, log=log_of(1, 1, 1, 2, 2), state=QuorumState(leader_epoch=3))
    elect(node)
    assert node.epoch == 4
    # The follower ends with epoch 3, which this leader never had: its largest epoch <= 3 is 2,
    # which ends at offset 5, so the follower must truncate to at most 5.
    response = fetch(node, 2, offset=6, last_epoch=3, now_ms=5_010)
    assert response.diverging_epoch == DivergingEpoch(epoch=2, end_offset=5)
    assert response.records == ()
    # Same epoch but further than the leader's end of that epoch.
    response = fetch(node, 2, offset=4, last_epoch=1, now_ms=5_020)
    assert response.diverging_epoch == DivergingEpoch(epoch=1, end_offset=3)
    # A consistent fetch gets records.
    response = fetch(node, 2, offset=3, last_epoch=1, now_ms=5_030)
    assert response.diverging_epoch is None
    assert [entry.offset for entry in response.records] == [3, 4, 5]


def test_one_fetch_carries_a_whole_controller_operation() -> None:
    # One controller request writes up to 10,000 records (controller.limits); a follower gets
    # them in one round trip, not in a hundred (which took a loaded 3-node cluster ~10 s).
    node = make_node(node_id=1, log=log_of(*[1] * 10_000), state=QuorumState(leader_epoch=1))
    elect(node)
    response = fetch(node, 2, offset=0, last_epoch=0, now_ms=5_010)
    assert [entry.offset for entry in response.records] == list(range(10_000))


def test_fetch_with_an_older_epoch_is_fenced() -> None:
    node = make_node(node_id=1, state=QuorumState(leader_epoch=2))
    elect(node)
    node.receive(FetchRequest(2, 1, 0, 0), 2, 5_010)
    [(_, response)] = sent(node.take_ready(), FetchResponse)
    assert isinstance(response, FetchResponse)
    assert response.error is ErrorCode.FENCED_LEADER_EPOCH
    assert (response.leader_epoch, response.leader_id) == (3, 1)


def test_leader_without_fetches_from_a_majority_resigns() -> None:
    node = make_node(node_id=1, voters=(1, 2, 3, 4, 5))
    elect(node)
    window = int(CONFIG.fetch_timeout_ms * 1.5)
    # One follower keeps fetching: 2 of 5 is not a majority.
    for now in range(5_000, 5_000 + window, 500):
        node.receive(FetchRequest(2, node.epoch, 0, 0), 2, now)
        node.tick(now)
    assert role_of(node) is Role.LEADER
    node.tick(5_000 + window)
    ready = node.take_ready()
    assert role_of(node) is Role.UNATTACHED and node.epoch == 1
    successors = [m for _, m in sent(ready, EndQuorumEpochRequest)]
    assert len(successors) == 4
    assert all(
        isinstance(m, EndQuorumEpochRequest) and m.preferred_successors[0] == 2 for m in successors
    )


def test_leader_with_fetches_from_a_majority_stays() -> None:
    node = make_node(node_id=1)
    elect(node)
    for now in range(5_000, 20_000, 500):
        node.receive(FetchRequest(2, node.epoch, 0, 0), 2, now)
        node.tick(now)
    assert role_of(node) is Role.LEADER


def test_higher_epoch_makes_a_leader_step_down() -> None:
    node = make_node(node_id=1)
    elect(node)
    node.receive(BeginQuorumEpochRequest(leader_epoch=5, leader_id=3), 3, 6_000)
    ready = node.take_ready()
    assert (role_of(node), node.epoch, node.leader_id) == (Role.FOLLOWER, 5, 3)
    assert ready.quorum_state == QuorumState(leader_epoch=5, voted_for=None, leader_id=3)


# ----------------------------------------------------------------------- following


def test_follower_acknowledges_only_fsynced_entries() -> None:
    node = make_node(node_id=2, state=QuorumState(leader_epoch=1, leader_id=1))
    node.receive(FetchResponse(ErrorCode.NONE, 1, 1, 0, 0, 0, records=tuple(log_of(1, 1))), 1, 10)
    ready = node.take_ready()
    assert ready.log_ops == [Append(tuple(log_of(1, 1)))]
    assert ready.fsync_up_to == 2
    assert sent(ready, FetchRequest) == []  # no fetch (= acknowledgement) before the fsync
    node.fsync_completed(2, 20)
    [(to, request)] = sent(node.take_ready(), FetchRequest)
    assert to == 1 and request == FetchRequest(2, 1, 2, 1)


def test_follower_truncates_exactly_where_the_leader_says_it_diverges() -> None:
    node = make_node(
        node_id=2, log=log_of(1, 1, 1, 3, 3), state=QuorumState(leader_epoch=4, leader_id=1)
    )
    node.take_ready()
    response = FetchResponse(
        ErrorCode.NONE, 4, 1, 0, 5, 3, diverging_epoch=DivergingEpoch(epoch=2, end_offset=4)
    )
    node.receive(response, 1, 10)
    ready = node.take_ready()
    # Local end offset for epoch <= 2 is 3 (epoch 1 ends there): min(3, 4).
    assert ready.log_ops == [Truncate(3)]
    assert node.log_end_offset == 3
    [(_, request)] = sent(ready, FetchRequest)
    assert request == FetchRequest(2, 4, 3, 1)


def test_follower_ignores_a_stale_fetch_response() -> None:
    node = make_node(node_id=2, log=log_of(1, 1), state=QuorumState(leader_epoch=1, leader_id=1))
    stale = FetchResponse(ErrorCode.NONE, 1, 1, 0, 0, 0, diverging_epoch=DivergingEpoch(0, 0))
    node.receive(stale, 1, 10)
    assert node.take_ready().log_ops == [] and node.log_end_offset == 2


def test_follower_learns_the_high_watermark_but_never_above_its_log() -> None:
    node = make_node(node_id=2, state=QuorumState(leader_epoch=1, leader_id=1))
    node.receive(FetchResponse(ErrorCode.NONE, 1, 1, 5, 0, 0, records=tuple(log_of(1, 1))), 1, 10)
    ready = node.take_ready()
    assert node.high_watermark == 2 and [e.offset for e in ready.committed] == [0, 1]


def test_follower_without_word_from_its_leader_becomes_prospective() -> None:
    node = make_node(node_id=2, state=QuorumState(leader_epoch=1, leader_id=1))
    node.tick(CONFIG.fetch_timeout_ms - 1)
    assert role_of(node) is Role.FOLLOWER
    node.tick(CONFIG.fetch_timeout_ms)
    assert role_of(node) is Role.PROSPECTIVE and node.epoch == 1


def test_end_quorum_epoch_lets_the_first_successor_stand_at_once() -> None:
    node = make_node(node_id=2, state=QuorumState(leader_epoch=1, leader_id=1))
    node.receive(EndQuorumEpochRequest(1, 1, (2, 3)), 1, 10)
    node.tick(10)
    assert role_of(node) is Role.PROSPECTIVE


def test_restarted_leader_does_not_resume_leadership() -> None:
    node = make_node(node_id=1, log=log_of(1), state=QuorumState(1, voted_for=1, leader_id=1))
    assert role_of(node) is Role.UNATTACHED and node.epoch == 1 and node.voted_for == 1


# ----------------------------------------------------------------------- snapshots

SNAPSHOT_4 = SnapshotId(end_offset=4, epoch=2)


def leader_with_snapshot(end_offset: int = 4) -> RaftNode:
    """Leader of epoch 3 over epochs 1 1 1 2 2 | LeaderChange@5, all committed, snapshotted."""
    node = make_node(node_id=1, log=log_of(1, 1, 1, 2, 2), state=QuorumState(leader_epoch=2))
    elect(node)
    node.fsync_completed(6, 5_000)
    fetch(node, 2, offset=6, last_epoch=3, now_ms=5_001)
    assert node.high_watermark == 6
    assert node.snapshot_created(end_offset, node.log[end_offset - 1].epoch, size=100)
    return node


def test_snapshot_created_deletes_the_log_prefix() -> None:
    node = make_node(node_id=1, log=log_of(1, 1, 1, 2, 2), state=QuorumState(leader_epoch=2))
    elect(node)
    node.fsync_completed(6, 5_000)
    fetch(node, 2, offset=6, last_epoch=3, now_ms=5_001)
    with pytest.raises(ValueError, match="epoch"):
        node.snapshot_created(4, 1, size=100)
    assert node.snapshot_created(4, 2, size=100)
    assert node.take_ready().log_ops == [DeleteBefore(4)]
    assert (node.log_start_offset, node.log_end_offset) == (4, 6)
    assert [entry.offset for entry in node.log] == [4, 5]
    assert node.snapshot == LocalSnapshot(SNAPSHOT_4, 100)
    assert not node.snapshot_created(3, 1, size=90)  # older than the log start: ignored
    with pytest.raises(ValueError, match="high watermark"):
        node.snapshot_created(7, 3, size=100)


@pytest.mark.parametrize(
    ("offset", "last_epoch"),
    [(2, 1), (4, 1), (4, 3), (5, 1)],
    ids=["below-log-start", "wrong-epoch-at-start", "newer-epoch-at-start", "epoch-older"],
)
def test_fetch_the_leader_cannot_match_is_answered_with_the_snapshot_id(
    offset: int, last_epoch: int
) -> None:
    node = leader_with_snapshot()
    response = fetch(node, 2, offset=offset, last_epoch=last_epoch, now_ms=5_010)
    assert response.snapshot_id == SNAPSHOT_4
    assert response.records == () and response.diverging_epoch is None


def test_fetch_at_or_above_the_snapshot_is_answered_from_the_log() -> None:
    node = leader_with_snapshot()
    response = fetch(node, 2, offset=4, last_epoch=2, now_ms=5_010)
    assert response.snapshot_id is None and [e.offset for e in response.records] == [4, 5]
    response = fetch(node, 2, offset=6, last_epoch=2, now_ms=5_020)
    assert response.diverging_epoch == DivergingEpoch(epoch=2, end_offset=5)


def test_diverging_epoch_at_the_snapshot_boundary_uses_the_snapshot_id() -> None:
    # Snapshot at 5 (epoch 2): the log is only the LeaderChange of epoch 3 at offset 5.
    node = leader_with_snapshot(end_offset=5)
    assert node.end_offset_for_epoch(2) == (2, 5)
    assert node.end_offset_for_epoch(3) == (3, 6)
    assert node.end_offset_for_epoch(1) == (0, 0)  # below the snapshot: unknown
    # A follower with entries of epoch 2 past 5 truncates to the snapshot end.
    response = fetch(node, 2, offset=7, last_epoch=2, now_ms=5_010)
    assert response.diverging_epoch == DivergingEpoch(epoch=2, end_offset=5)
    response = fetch(node, 2, offset=5, last_epoch=2, now_ms=5_020)
    assert [entry.offset for entry in response.records] == [5]


def fetch_snapshot(node: RaftNode, request: FetchSnapshotRequest) -> FetchSnapshotResponse:
    node.receive(request, request.replica_id, 5_100)
    [(_, response)] = sent(node.take_ready(), FetchSnapshotResponse)
    assert isinstance(response, FetchSnapshotResponse)
    return response


def test_leader_validates_fetch_snapshot_and_leaves_the_bytes_to_the_driver() -> None:
    node = leader_with_snapshot()
    good = fetch_snapshot(node, FetchSnapshotRequest(2, 3, SNAPSHOT_4, 96, 10))
    assert (good.error, good.size, good.position) == (ErrorCode.NONE, 100, 96)
    assert (good.unread_bytes, good.data) == (4, b"")  # the last 4 bytes, read by the driver
    assert fetch_snapshot(node, FetchSnapshotRequest(2, 3, SNAPSHOT_4, 0, 10)).unread_bytes == 10
    missing = fetch_snapshot(node, FetchSnapshotRequest(2, 3, SnapshotId(3, 1), 0, 10))
    assert missing.error is ErrorCode.SNAPSHOT_NOT_FOUND and missing.unread_bytes == 0
    beyond = fetch_snapshot(node, FetchSnapshotRequest(2, 3, SNAPSHOT_4, 101, 10))
    assert beyond.error is ErrorCode.POSITION_OUT_OF_RANGE
    fenced = fetch_snapshot(node, FetchSnapshotRequest(2, 2, SNAPSHOT_4, 0, 10))
    assert fenced.error is ErrorCode.FENCED_LEADER_EPOCH
    follower = make_node(node_id=2, state=QuorumState(leader_epoch=3, leader_id=1))
    follower.take_ready()
    refused = fetch_snapshot(follower, FetchSnapshotRequest(3, 3, SNAPSHOT_4, 0, 10))
    assert refused.error is ErrorCode.NOT_LEADER_OR_FOLLOWER and refused.leader_id == 1


def chunk(position: int, data: bytes, size: int = 10) -> FetchSnapshotResponse:
    return FetchSnapshotResponse(ErrorCode.NONE, 1, 3, SNAPSHOT_4, size, position, data)


def follower_told_to_fetch_the_snapshot() -> RaftNode:
    """A follower at offset 2 whose leader answered its fetch with SNAPSHOT_4."""
    node = make_node(node_id=2, log=log_of(1, 1), state=QuorumState(leader_epoch=3, leader_id=1))
    node.take_ready()
    node.receive(FetchResponse(ErrorCode.NONE, 3, 1, 4, 2, 1, snapshot_id=SNAPSHOT_4), 1, 10)
    [(to, request)] = sent(node.take_ready(), FetchSnapshotRequest)
    assert to == 1
    assert request == FetchSnapshotRequest(2, 3, SNAPSHOT_4, 0, CONFIG.fetch_snapshot_max_bytes)
    return node


def test_follower_fetches_a_snapshot_in_chunks_then_loads_it() -> None:
    node = follower_told_to_fetch_the_snapshot()
    node.receive(chunk(0, b"abcd"), 1, 20)
    ready = node.take_ready()
    assert ready.log_ops == [SnapshotChunkToWrite(SNAPSHOT_4, 0, b"abcd")]
    [(_, request)] = sent(ready, FetchSnapshotRequest)
    assert isinstance(request, FetchSnapshotRequest) and request.position == 4
    node.receive(chunk(0, b"abcd"), 1, 21)  # a duplicate is ignored
    assert node.take_ready().log_ops == []
    node.receive(chunk(4, b"efghij"), 1, 30)
    ready = node.take_ready()
    assert ready.log_ops == [
        SnapshotChunkToWrite(SNAPSHOT_4, 4, b"efghij"),
        LoadSnapshot(SNAPSHOT_4, 10),
    ]
    assert (node.log_start_offset, node.log_end_offset, node.last_epoch()) == (4, 4, 2)
    assert node.snapshot == LocalSnapshot(SNAPSHOT_4, 10)
    assert ready.high_watermark == 4 and ready.committed == []
    [(_, fetch_again)] = sent(ready, FetchRequest)
    assert fetch_again == FetchRequest(2, 3, 4, 2)


def test_loaded_snapshot_drops_committed_entries_it_already_holds() -> None:
    node = make_node(node_id=2, state=QuorumState(leader_epoch=3, leader_id=1))
    # An entry arrives and commits; before the driver drains, the next fetch is answered with a
    # snapshot that holds it.
    node.receive(FetchResponse(ErrorCode.NONE, 3, 1, 1, 0, 0, records=tuple(log_of(1, 1))), 1, 10)
    node.fsync_completed(2, 11)
    node.receive(FetchResponse(ErrorCode.NONE, 3, 1, 4, 2, 1, snapshot_id=SNAPSHOT_4), 1, 12)
    node.receive(chunk(0, b"x" * 10), 1, 13)
    ready = node.take_ready()
    assert isinstance(ready.log_ops[-1], LoadSnapshot)
    assert ready.committed == []  # the controller replays the snapshot instead


def test_follower_restarts_the_transfer_when_the_leader_replaced_the_snapshot() -> None:
    node = follower_told_to_fetch_the_snapshot()
    gone = FetchSnapshotResponse(ErrorCode.SNAPSHOT_NOT_FOUND, 1, 3, SNAPSHOT_4, 0, 0)
    node.receive(gone, 1, 20)
    ready = node.take_ready()
    assert ready.log_ops == []
    [(_, request)] = sent(ready, FetchRequest)
    assert request == FetchRequest(2, 3, 2, 1)


@pytest.mark.parametrize(
    ("log", "ops", "entries"),
    [
        (log_of(1, 1, 2, 2, 2, 3), [DeleteBefore(4)], [4, 5]),
        (log_of(1, 1), [Truncate(0), DeleteBefore(4)], []),
        (log_of(1, 1, 1, 1, 1, 1), [Truncate(0), DeleteBefore(4)], []),
        ([], [DeleteBefore(4)], []),
    ],
    ids=["delete-interrupted", "log-ends-below", "log-older-than-snapshot", "empty-log"],
)
def test_restart_with_a_snapshot_repairs_an_interrupted_log(
    log: list[Entry], ops: list[object], entries: list[int]
) -> None:
    node = RaftNode(
        node_id=2,
        voters=VOTERS,
        config=CONFIG,
        jitter=no_jitter,
        quorum_state=QuorumState(leader_epoch=3),
        log=log,
        now_ms=0,
        snapshot=LocalSnapshot(SNAPSHOT_4, 10),
    )
    assert node.take_ready().log_ops == ops
    assert [entry.offset for entry in node.log] == entries
    assert node.log_start_offset == 4 and node.high_watermark == 4
    # An empty log votes with the snapshot id as its last entry.
    assert (node.last_epoch(), node.log_end_offset) == ((3, 6) if entries else (2, 4))

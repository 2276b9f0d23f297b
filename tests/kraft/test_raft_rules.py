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
    Message,
    VoteRequest,
    VoteResponse,
)
from kraft.quorum_state import QuorumState, QuorumStateError
from kraft.raft import (
    Append,
    Appended,
    NotLeader,
    RaftConfig,
    RaftNode,
    Ready,
    Role,
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
) -> RaftNode:
    node = RaftNode(
        node_id=node_id,
        voters=voters,
        config=CONFIG,
        jitter=no_jitter,
        quorum_state=state or QuorumState(),
        log=log,
        now_ms=0,
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

"""ElectLeaders and the automatic preferred leader election (controller/elections.py).

Images are built from records; every change is checked by replaying its records. Covers
Kafka's answers for each partition (none, ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE,
ELIGIBLE_LEADERS_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION), the all-partitions form that
leaves out ELECTION_NOT_NEEDED, duplicates, and the rebalance's choice and limit.
"""

from __future__ import annotations

from uuid import UUID

import pytest
from kio.schema.errors import ErrorCode

from controller.elections import (
    ElectionResult,
    ElectionType,
    elect_leaders,
    rebalance_leaders,
    unclean_candidates,
)
from controller.image import MetadataImage
from controller.partition_change import ChangeCause, Election, TopicPartition
from controller.partition_state import NO_LEADER, PartitionState
from controller.records import (
    MetadataRecord,
    PartitionChangeRecord,
    ReplicaLogState,
    UncleanRecoveryRecord,
)
from tests.controller.images import broker, lifecycle, replay, topic

# Created "b" first, with the smaller id: the all-partitions form still goes by name.
A = UUID(int=2)
B = UUID(int=1)
C = UUID(int=3)


def cluster() -> MetadataImage:
    """Brokers 1-3 active, 4 fenced, 5 in controlled shutdown."""
    records: list[MetadataRecord] = [
        broker(1),
        broker(2),
        broker(3),
        broker(4, fenced=True),
        broker(5, in_controlled_shutdown=True),
    ]
    records += topic(
        "b",
        B,
        # Led by 3, preferred 2 in the ISR: imbalanced.
        PartitionState((2, 3), (2, 3), leader=3, leader_epoch=4, partition_epoch=6),
        # Leaderless: 4 fenced; its only other replica 1 is outside ISR and ELR.
        PartitionState((4, 1), (), leader=NO_LEADER, last_known_elr=(4,)),
    )
    records += topic(
        "a",
        A,
        # Led by 2, preferred 1 in the ISR: imbalanced.
        PartitionState((1, 2, 3), (1, 2, 3), leader=2, leader_epoch=1, partition_epoch=1),
        # Balanced.
        PartitionState((1, 2, 3), (1, 2, 3), leader=1),
        # Preferred 4 is fenced.
        PartitionState((4, 1, 2), (4, 1, 2), leader=1),
        # Preferred 3 is out of the ISR.
        PartitionState((3, 1, 2), (1, 2), leader=1),
    )
    records += topic(
        "c",
        C,
        # Preferred 5 is shutting down: not a leader candidate.
        PartitionState((5, 1), (5, 1), leader=1),
        # Leaderless, every replica fenced.
        PartitionState((4,), (), leader=NO_LEADER),
    )
    return replay(records)


def answers(results: tuple[ElectionResult, ...]) -> list[tuple[str, int, ErrorCode]]:
    return [(r.topic, r.partition_id, r.error_code) for r in results]


def test_preferred_election_of_listed_partitions_answers_each_once_in_request_order() -> None:
    image = cluster()
    asked = [("a", 0), ("a", 1), ("a", 2), ("a", 3), ("zzz", 0), ("a", 9), ("a", 0), ("c", 0)]
    outcome = elect_leaders(image, lifecycle(image), ElectionType.PREFERRED, asked)

    assert answers(outcome.results) == [
        ("a", 0, ErrorCode.none),
        ("a", 1, ErrorCode.election_not_needed),
        ("a", 2, ErrorCode.preferred_leader_not_available),
        ("a", 3, ErrorCode.preferred_leader_not_available),
        ("zzz", 0, ErrorCode.unknown_topic_or_partition),
        ("a", 9, ErrorCode.unknown_topic_or_partition),
        ("c", 0, ErrorCode.preferred_leader_not_available),
    ]
    messages = {(r.topic, r.partition_id): r.error_message for r in outcome.results}
    assert messages["a", 0] is None
    assert messages["zzz", 0] == "No such topic as zzz."
    assert messages["a", 9] == "No such partition as a-9."
    assert all(m for key, m in messages.items() if key != ("a", 0))

    # Only the leader moved: the record leaves the ISR alone.
    assert outcome.records == (PartitionChangeRecord(A, 0, leader=1),)
    (event,) = outcome.events
    assert event.partition == TopicPartition(A, 0)
    assert event.event.cause is ChangeCause.PREFERRED_ELECTION
    assert (event.event.old_leader, event.event.new_leader) == (2, 1)
    assert event.event.election is Election.ISR
    after = replay(outcome.records, image).partition(A, 0)
    assert after == PartitionState(
        (1, 2, 3), (1, 2, 3), leader=1, leader_epoch=2, partition_epoch=2
    )


def test_preferred_election_of_every_partition_leaves_out_the_balanced_ones() -> None:
    image = cluster()
    outcome = elect_leaders(image, lifecycle(image), ElectionType.PREFERRED, None)

    assert answers(outcome.results) == [
        ("a", 0, ErrorCode.none),
        ("a", 2, ErrorCode.preferred_leader_not_available),
        ("a", 3, ErrorCode.preferred_leader_not_available),
        ("b", 0, ErrorCode.none),
        ("b", 1, ErrorCode.preferred_leader_not_available),
        ("c", 0, ErrorCode.preferred_leader_not_available),
        ("c", 1, ErrorCode.preferred_leader_not_available),
    ]
    assert outcome.records == (
        PartitionChangeRecord(A, 0, leader=1),
        PartitionChangeRecord(B, 0, leader=2),
    )
    assert [e.partition for e in outcome.events] == [TopicPartition(A, 0), TopicPartition(B, 0)]


def log_of(image: MetadataImage, broker_id: int, epoch: int, end: int) -> ReplicaLogState:
    """Broker `broker_id`'s answer about a replica: last written epoch, log end offset."""
    return ReplicaLogState(broker_id, image.brokers[broker_id].broker_epoch, epoch, end)


def test_unclean_election_of_listed_partitions() -> None:
    image = cluster()
    asked = [("b", 1), ("b", 0), ("c", 1), ("nope", 0)]
    assert unclean_candidates(image, lifecycle(image), asked) == {1: [TopicPartition(B, 1)]}
    logs = {TopicPartition(B, 1): [log_of(image, 1, 3, 40)]}
    outcome = elect_leaders(image, lifecycle(image), ElectionType.UNCLEAN, asked, logs)

    assert answers(outcome.results) == [
        ("b", 1, ErrorCode.none),
        ("b", 0, ErrorCode.election_not_needed),
        ("c", 1, ErrorCode.eligible_leaders_not_available),
        ("nope", 0, ErrorCode.unknown_topic_or_partition),
    ]
    # The replica that answered leads alone; the LastKnownELR is cleared; what the election
    # saw is recorded first.
    assert outcome.records == (
        UncleanRecoveryRecord(B, 1, "elect_leaders", 1, (log_of(image, 1, 3, 40),)),
        PartitionChangeRecord(B, 1, isr=(1,), leader=1, last_known_elr=()),
    )
    (event,) = outcome.events
    assert event.event.cause is ChangeCause.UNCLEAN_ELECTION
    assert event.event.potential_data_loss
    after = replay(outcome.records, image).partition(B, 1)
    assert after is not None
    assert (after.leader, after.isr, after.last_known_elr) == (1, (1,), ())


def test_unclean_election_without_an_answer_elects_no_one() -> None:
    image = cluster()
    outcome = elect_leaders(image, lifecycle(image), ElectionType.UNCLEAN, [("b", 1)])
    assert answers(outcome.results) == [("b", 1, ErrorCode.eligible_leaders_not_available)]
    assert outcome.records == ()


def test_unclean_election_picks_the_best_log_not_the_first_replica() -> None:
    records: list[MetadataRecord] = [broker(1), broker(2), broker(3)]
    records += topic("d", A, PartitionState((1, 2, 3), (), leader=NO_LEADER))
    image = replay(records)
    tp = TopicPartition(A, 0)
    assert unclean_candidates(image, lifecycle(image), None) == {1: [tp], 2: [tp], 3: [tp]}
    logs = {
        tp: [
            log_of(image, 1, 4, 90),
            log_of(image, 2, 5, 60),
            # Broker 3's answer from an earlier incarnation: never elected from.
            ReplicaLogState(3, image.brokers[3].broker_epoch - 1, 9, 99),
        ]
    }
    outcome = elect_leaders(image, lifecycle(image), ElectionType.UNCLEAN, [("d", 0)], logs)
    assert outcome.records[-1] == PartitionChangeRecord(A, 0, isr=(2,), leader=2)


def test_unclean_election_of_every_partition_answers_only_the_leaderless_ones() -> None:
    image = cluster()
    logs = {TopicPartition(B, 1): [log_of(image, 1, 3, 40)]}
    outcome = elect_leaders(image, lifecycle(image), ElectionType.UNCLEAN, None, logs)

    assert answers(outcome.results) == [
        ("b", 1, ErrorCode.none),
        ("c", 1, ErrorCode.eligible_leaders_not_available),
    ]
    assert len(outcome.records) == 2


def test_no_partitions_listed_elects_nothing() -> None:
    image = cluster()
    outcome = elect_leaders(image, lifecycle(image), ElectionType.PREFERRED, [])
    assert (outcome.records, outcome.results, outcome.events) == ((), (), ())


def test_rebalance_moves_exactly_the_imbalanced_partitions_with_an_available_preferred() -> None:
    image = cluster()
    outcome = rebalance_leaders(image, lifecycle(image))

    assert answers(outcome.results) == [("a", 0, ErrorCode.none), ("b", 0, ErrorCode.none)]
    assert outcome.records == (
        PartitionChangeRecord(A, 0, leader=1),
        PartitionChangeRecord(B, 0, leader=2),
    )
    assert all(e.event.cause is ChangeCause.PREFERRED_ELECTION for e in outcome.events)

    balanced = replay(outcome.records, image)
    again = rebalance_leaders(balanced, lifecycle(balanced))
    assert (again.records, again.results, again.events) == ((), (), ())


@pytest.mark.parametrize("max_elections", [0, 1, 2, 3])
def test_rebalance_elects_at_most_max_elections_per_run(max_elections: int) -> None:
    image = cluster()
    brokers = lifecycle(image)
    expected = [TopicPartition(A, 0), TopicPartition(B, 0)][:max_elections]

    outcome = rebalance_leaders(image, brokers, max_elections=max_elections)

    assert [e.partition for e in outcome.events] == expected
    assert len(outcome.records) == len(outcome.results) == len(expected)


def test_rebalance_continues_where_the_previous_run_stopped() -> None:
    image = cluster()
    brokers = lifecycle(image)
    first = rebalance_leaders(image, brokers, max_elections=1)
    image = replay(first.records, image)
    second = rebalance_leaders(image, brokers, max_elections=1)

    assert answers(first.results) == [("a", 0, ErrorCode.none)]
    assert answers(second.results) == [("b", 0, ErrorCode.none)]

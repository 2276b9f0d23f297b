"""AlterPartition on the active controller (controller/alter_partition.py).

Images are built from records; every accepted change is checked by replaying its records.
Covers the top-level STALE_BROKER_EPOCH, each partition's error codes in Kafka's order
(KIP-903's broker epochs last), retries of an applied change, repeated partitions, and an
unclean replica joining the ISR once its leader vouches for it (and not on a stale request).
"""

from __future__ import annotations

from uuid import UUID

import pytest
from kio.schema.errors import ErrorCode

from controller.alter_partition import (
    AlterPartitionBatch,
    AlterPartitionBatchOutcome,
    IsrMember,
    PartitionIsrChange,
    PartitionIsrResult,
    alter_partitions,
)
from controller.broker_lifecycle import BrokerLifecycle
from controller.image import MetadataImage
from controller.partition_change import ChangeCause, TopicPartition
from controller.partition_state import PartitionState
from controller.records import MetadataRecord, PartitionChangeRecord
from tests.controller.images import (
    broker,
    epoch_of,
    lifecycle,
    partition_defaults,
    replay,
    restart_unclean,
    topic,
)

T = UUID(int=7)
LEADER_EPOCH = 5
PARTITION_EPOCH = 7
# Partition 0: a plain one; partition 1 also hosts the fenced 4 and the shutting-down 5.
P0 = PartitionState(
    (1, 2, 3), (1, 2), leader=1, leader_epoch=LEADER_EPOCH, partition_epoch=PARTITION_EPOCH
)
P1 = PartitionState(
    (1, 2, 3, 4, 5), (1, 2), leader=1, leader_epoch=LEADER_EPOCH, partition_epoch=PARTITION_EPOCH
)


def cluster(*, broker_3_fenced: bool = False) -> MetadataImage:
    """Brokers 1-3 active (3 fenced if asked), 4 fenced, 5 in controlled shutdown."""
    records: list[MetadataRecord] = [
        broker(1),
        broker(2),
        broker(3, fenced=broker_3_fenced),
        broker(4, fenced=True),
        broker(5, in_controlled_shutdown=True),
    ]
    records += topic("t", T, P0, P1)
    return replay(records)


def members(*brokers: int) -> tuple[IsrMember, ...]:
    """ISR members named with their registered broker epochs (AlterPartition v3)."""
    return tuple(IsrMember(b, epoch_of(b)) for b in brokers)


def change(
    new_isr: tuple[IsrMember, ...],
    *,
    partition_id: int = 0,
    leader_epoch: int = LEADER_EPOCH,
    partition_epoch: int = PARTITION_EPOCH,
    topic_id: UUID = T,
) -> PartitionIsrChange:
    return PartitionIsrChange(topic_id, partition_id, leader_epoch, partition_epoch, new_isr)


def send(
    image: MetadataImage,
    brokers: BrokerLifecycle,
    *changes: PartitionIsrChange,
    sender: int = 1,
    sender_epoch: int | None = None,
) -> AlterPartitionBatchOutcome:
    epoch = epoch_of(sender) if sender_epoch is None else sender_epoch
    return alter_partitions(image, brokers, AlterPartitionBatch(sender, epoch, changes))


@pytest.mark.parametrize(
    ("sender", "sender_epoch"),
    [(1, epoch_of(1) - 1), (1, epoch_of(1) + 1), (9, epoch_of(9))],
    ids=["older-epoch", "newer-epoch", "unknown-broker"],
)
def test_a_sender_not_registered_with_its_epoch_is_stale(sender: int, sender_epoch: int) -> None:
    image = cluster()
    outcome = send(
        image, lifecycle(image), change(members(1, 2, 3)), sender=sender, sender_epoch=sender_epoch
    )
    assert outcome == AlterPartitionBatchOutcome(ErrorCode.stale_broker_epoch)


@pytest.mark.parametrize(
    ("asked", "sender", "error"),
    [
        (change(members(1, 2), topic_id=UUID(int=99)), 1, ErrorCode.unknown_topic_id),
        (change(members(1, 2), partition_id=9), 1, ErrorCode.unknown_topic_or_partition),
        (change(members(1, 2), leader_epoch=LEADER_EPOCH + 1), 1, ErrorCode.not_controller),
        (change(members(1, 2), partition_epoch=PARTITION_EPOCH + 1), 1, ErrorCode.not_controller),
        (change(members(1, 2), leader_epoch=LEADER_EPOCH - 1), 1, ErrorCode.fenced_leader_epoch),
        (change(members(1, 2)), 2, ErrorCode.invalid_request),
        (
            change(members(1, 2), partition_epoch=PARTITION_EPOCH - 1),
            1,
            ErrorCode.invalid_update_version,
        ),
        (change(members(2, 3)), 1, ErrorCode.invalid_request),
        (change(members(1, 1, 2)), 1, ErrorCode.invalid_request),
        (change(members(1, 2, 6)), 1, ErrorCode.invalid_request),
        (change(members(1, 2, 4), partition_id=1), 1, ErrorCode.ineligible_replica),
        (change(members(1, 2, 5), partition_id=1), 1, ErrorCode.ineligible_replica),
        # KIP-903: 3 restarted since the leader saw it fetch.
        (change((*members(1, 2), IsrMember(3, epoch_of(3) - 1))), 1, ErrorCode.ineligible_replica),
        (change((*members(1, 2), IsrMember(3, epoch_of(3) + 1))), 1, ErrorCode.ineligible_replica),
        # Broker epochs are checked last, as in Kafka.
        (
            change((*members(1, 2), IsrMember(3, 0)), leader_epoch=LEADER_EPOCH - 1),
            1,
            ErrorCode.fenced_leader_epoch,
        ),
        (change((*members(2), IsrMember(3, 0))), 1, ErrorCode.invalid_request),
    ],
    ids=[
        "unknown-topic-id",
        "unknown-partition",
        "leader-epoch-ahead",
        "partition-epoch-ahead",
        "stale-leader-epoch",
        "sender-not-leader",
        "stale-partition-epoch",
        "isr-without-leader",
        "duplicate-member",
        "not-a-replica",
        "fenced-member",
        "shutting-down-member",
        "member-older-epoch",
        "member-newer-epoch",
        "stale-leader-epoch-before-member-epoch",
        "invalid-isr-before-member-epoch",
    ],
)
def test_partition_errors(asked: PartitionIsrChange, sender: int, error: ErrorCode) -> None:
    image = cluster()
    outcome = send(image, lifecycle(image), asked, sender=sender)

    assert outcome.error is ErrorCode.none
    assert outcome.results == (PartitionIsrResult(asked.topic_id, asked.partition_id, error, None),)
    assert (outcome.records, outcome.events) == ((), ())


@pytest.mark.parametrize(
    "new_isr",
    [members(1, 2, 3), (IsrMember(1), IsrMember(2), IsrMember(3)), (IsrMember(3), *members(2, 1))],
    ids=["v3-epochs", "v2-no-epochs", "any-order"],
)
def test_expanding_the_isr(new_isr: tuple[IsrMember, ...]) -> None:
    image = cluster()
    outcome = send(image, lifecycle(image), change(new_isr))

    expected = PartitionState(
        (1, 2, 3), (1, 2, 3), leader=1, leader_epoch=LEADER_EPOCH, partition_epoch=8
    )
    assert outcome.results == (PartitionIsrResult(T, 0, ErrorCode.none, expected),)
    assert outcome.records == (PartitionChangeRecord(T, 0, isr=(1, 2, 3)),)
    (event,) = outcome.events
    assert event.partition == TopicPartition(T, 0)
    assert event.event.cause is ChangeCause.ALTER_PARTITION
    assert replay(outcome.records, image).partition(T, 0) == expected


def test_shrinking_the_isr_below_min_isr_puts_the_follower_in_the_elr() -> None:
    image = cluster()
    brokers = lifecycle(image, partition_defaults(min_insync_replicas=2))
    outcome = send(image, brokers, change(members(1)))

    assert outcome.records == (PartitionChangeRecord(T, 0, isr=(1,), elr=(2,)),)
    (result,) = outcome.results
    assert result.state == replay(outcome.records, image).partition(T, 0)


def test_a_retry_of_an_applied_change_answers_the_current_state_without_a_record() -> None:
    image = cluster()
    brokers = lifecycle(image)
    applied = send(image, brokers, change(members(1, 2, 3)))
    image = replay(applied.records, image)
    current = image.partition(T, 0)
    assert current is not None

    retry = send(image, brokers, change(members(1, 2, 3), partition_epoch=current.partition_epoch))

    assert retry.results == (PartitionIsrResult(T, 0, ErrorCode.none, current),)
    assert (retry.records, retry.events) == ((), ())


def test_each_partition_of_a_request_is_answered_in_order() -> None:
    image = cluster()
    outcome = send(
        image,
        lifecycle(image),
        change(members(1, 2, 3), partition_id=1),
        change(members(1), topic_id=UUID(int=99)),
        change(members(1)),
        change(members(1, 2), partition_id=0),
    )

    assert [(r.partition_id, r.error_code) for r in outcome.results] == [
        (1, ErrorCode.none),
        (0, ErrorCode.unknown_topic_id),
        (0, ErrorCode.none),
        # The same partition again.
        (0, ErrorCode.invalid_request),
    ]
    assert outcome.records == (
        PartitionChangeRecord(T, 1, isr=(1, 2, 3)),
        PartitionChangeRecord(T, 0, isr=(1,)),
    )
    assert [e.partition for e in outcome.events] == [TopicPartition(T, 1), TopicPartition(T, 0)]
    after = replay(outcome.records, image)
    assert [r.state for r in outcome.results] == [
        after.partition(T, 1),
        None,
        after.partition(T, 0),
        None,
    ]


def unclean_cluster() -> tuple[MetadataImage, BrokerLifecycle]:
    """Broker 3 restarted without a clean-shutdown marker: unfenced, out of partition 0's ISR
    and ELR (its Unclean Exclusion)."""
    image = cluster(broker_3_fenced=True)
    brokers = lifecycle(image)
    image = restart_unclean(image, brokers, 3)
    assert image.partition(T, 0) == P0
    assert 3 not in P0.isr + P0.elr
    return image, brokers


def registered(image: MetadataImage, *brokers: int) -> tuple[IsrMember, ...]:
    """ISR members named with the broker epochs `image` registers them with."""
    return tuple(IsrMember(b, image.brokers[b].broker_epoch) for b in brokers)


def test_an_unclean_replica_joins_the_isr_on_its_leaders_word() -> None:
    image, brokers = unclean_cluster()

    outcome = send(image, brokers, change(registered(image, 1, 2, 3)))

    assert [r.error_code for r in outcome.results] == [ErrorCode.none]
    assert outcome.records == (PartitionChangeRecord(T, 0, isr=(1, 2, 3)),)


@pytest.mark.parametrize(
    ("leader_epoch", "partition_epoch", "sender", "broker_3_epoch", "error"),
    [
        (LEADER_EPOCH - 1, PARTITION_EPOCH, 1, None, ErrorCode.fenced_leader_epoch),
        (LEADER_EPOCH + 1, PARTITION_EPOCH, 1, None, ErrorCode.not_controller),
        (LEADER_EPOCH, PARTITION_EPOCH - 1, 1, None, ErrorCode.invalid_update_version),
        (LEADER_EPOCH, PARTITION_EPOCH, 2, None, ErrorCode.invalid_request),
        # The leader vouches for broker 3's previous incarnation.
        (LEADER_EPOCH, PARTITION_EPOCH, 1, epoch_of(3), ErrorCode.ineligible_replica),
    ],
    ids=[
        "stale-leader-epoch",
        "leader-epoch-ahead",
        "stale-partition-epoch",
        "not-leader",
        "old-3",
    ],
)
def test_a_refused_request_leaves_the_unclean_replica_out(
    leader_epoch: int,
    partition_epoch: int,
    sender: int,
    broker_3_epoch: int | None,
    error: ErrorCode,
) -> None:
    image, brokers = unclean_cluster()
    new_isr = registered(image, 1, 2, 3)
    if broker_3_epoch is not None:
        new_isr = (*new_isr[:2], IsrMember(3, broker_3_epoch))
    asked = change(new_isr, leader_epoch=leader_epoch, partition_epoch=partition_epoch)

    outcome = send(image, brokers, asked, sender=sender)

    assert [r.error_code for r in outcome.results] == [error]
    assert outcome.records == ()


def test_a_request_with_a_stale_sender_epoch_leaves_the_unclean_replica_out() -> None:
    image, brokers = unclean_cluster()
    asked = change(registered(image, 1, 2, 3))
    outcome = send(image, brokers, asked, sender_epoch=epoch_of(1) - 1)

    assert outcome.error is ErrorCode.stale_broker_epoch
    assert outcome.records == ()

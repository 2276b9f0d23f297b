"""Producer-id blocks (controller/producer_ids.py): Kafka's ProducerIdControlManager rules."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from controller.image import MetadataImage
from controller.producer_ids import (
    PRODUCER_ID_BLOCK_SIZE,
    ProducerIdsOutcome,
    allocate_producer_ids,
)
from controller.records import ProducerIdsRecord
from tests.controller.images import broker, epoch_of, replay

INT64_MAX = 2**63 - 1


def cluster(next_producer_id: int | None = None) -> MetadataImage:
    records = [broker(1), broker(2, fenced=True)]
    image = replay(records)
    if next_producer_id is not None:
        image = replay([ProducerIdsRecord(1, epoch_of(1), next_producer_id)], image)
    return image


def test_the_first_block_starts_at_zero() -> None:
    outcome = allocate_producer_ids(cluster(), 1, epoch_of(1))
    assert outcome == ProducerIdsOutcome(
        ErrorCode.none, 0, PRODUCER_ID_BLOCK_SIZE, (ProducerIdsRecord(1, epoch_of(1), 1000),)
    )


def test_blocks_replayed_in_sequence_are_consecutive_and_disjoint() -> None:
    image = cluster()
    first = allocate_producer_ids(image, 1, epoch_of(1))
    image = replay(first.records, image)
    # A fenced broker is registered: its transaction coordinator may still ask.
    second = allocate_producer_ids(image, 2, epoch_of(2))
    image = replay(second.records, image)

    assert (first.producer_id_start, second.producer_id_start) == (0, 1000)
    assert first.producer_id_len == second.producer_id_len == 1000
    assert second.records == (ProducerIdsRecord(2, epoch_of(2), 2000),)
    assert image.next_producer_id == 2000
    ids = [
        range(o.producer_id_start, o.producer_id_start + o.producer_id_len) for o in (first, second)
    ]
    assert not set(ids[0]) & set(ids[1])


def test_a_snapshot_keeps_the_next_block() -> None:
    image = cluster(5000)
    restored = MetadataImage.from_records(image.to_records())
    assert allocate_producer_ids(restored, 1, epoch_of(1)).producer_id_start == 5000


@pytest.mark.parametrize(
    ("broker_id", "broker_epoch"),
    [(1, epoch_of(1) - 1), (1, epoch_of(1) + 1), (3, epoch_of(3)), (2, epoch_of(1))],
    ids=["older-epoch", "newer-epoch", "unknown-broker", "other-broker-epoch"],
)
def test_unknown_brokers_and_other_epochs_are_stale(broker_id: int, broker_epoch: int) -> None:
    outcome = allocate_producer_ids(cluster(), broker_id, broker_epoch)
    assert outcome == ProducerIdsOutcome(ErrorCode.stale_broker_epoch)
    assert (outcome.producer_id_start, outcome.producer_id_len, outcome.records) == (-1, 0, ())


def test_the_last_block_may_end_at_the_int64_maximum_and_then_ids_are_exhausted() -> None:
    image = cluster(INT64_MAX - PRODUCER_ID_BLOCK_SIZE)
    last = allocate_producer_ids(image, 1, epoch_of(1))
    assert last.error is ErrorCode.none
    assert last.records == (ProducerIdsRecord(1, epoch_of(1), INT64_MAX),)

    image = replay(last.records, image)
    assert allocate_producer_ids(image, 1, epoch_of(1)) == ProducerIdsOutcome(
        ErrorCode.unknown_server_error
    )


def test_a_block_that_would_pass_the_int64_maximum_is_refused() -> None:
    image = cluster(INT64_MAX - PRODUCER_ID_BLOCK_SIZE + 1)
    outcome = allocate_producer_ids(image, 1, epoch_of(1))
    assert outcome == ProducerIdsOutcome(ErrorCode.unknown_server_error)

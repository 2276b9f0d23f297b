"""What a leader answers an idempotent producer's Produce, by Kafka's rules: a retried batch
gets its first write's offset, and an acks=all retry waits for that write alone."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode

from controller.partition_state import PartitionState
from net.records import Record, encode_batch
from tests.broker.replicas import TOPIC, Broker, image, replicate, settle, values
from tests.fatal_faults import Faults, faults  # noqa: F401 (the fixture)
from tests.storage.test_io_errors import by_fd, failing

PRODUCER_ID = 7


def idempotent(value: bytes, sequence: int) -> bytes:
    """A one-record batch of producer 7, epoch 0, at `sequence`."""
    return encode_batch(
        [Record(value)],
        producer_id=PRODUCER_ID,
        producer_epoch=0,
        base_sequence=sequence,
        now_ms=1_000,
    )


@pytest.fixture
async def pair(tmp_path: Path) -> AsyncIterator[tuple[Broker, Broker]]:
    """Broker 1 leads the partition, broker 2 follows; both in the ISR."""
    leader, follower = Broker(1, tmp_path), Broker(2, tmp_path)
    state = PartitionState(replicas=(1, 2), isr=(1, 2), leader=1)
    for broker in (leader, follower):
        broker.apply(image({0: state}))
    yield leader, follower
    leader.close()
    follower.close()


async def test_an_acks_all_retry_of_a_committed_batch_is_answered_at_once(
    pair: tuple[Broker, Broker],
) -> None:
    """The producer retries "a" (its answer was lost) while "b", sent after it, is not yet
    replicated: Kafka answers the retry with a's offset as soon as a is committed
    (requiredOffset is the duplicate's last offset + 1). Waiting for b as well would answer a
    committed batch with REQUEST_TIMED_OUT, or NOT_LEADER_OR_FOLLOWER if leadership moves, and
    the producer would count a retry against records it had already written."""
    leader, follower = pair
    first = asyncio.create_task(
        leader.replicas.produce(-1, 5_000, [(TOPIC, 0, idempotent(b"a", 0))])
    )
    await settle()
    for _ in range(2):
        await replicate(leader, follower)
    (written,) = await asyncio.wait_for(first, 1)
    assert (written.error, written.base_offset) == (ErrorCode.none, 0)

    after = asyncio.create_task(
        leader.replicas.produce(-1, 5_000, [(TOPIC, 0, idempotent(b"b", 1))])
    )
    await settle()
    (retried,) = await asyncio.wait_for(
        leader.replicas.produce(-1, 1_000, [(TOPIC, 0, idempotent(b"a", 0))]), 2
    )
    assert (retried.error, retried.base_offset) == (ErrorCode.none, 0)
    assert not after.done()

    for _ in range(2):
        await replicate(leader, follower)
    (later,) = await asyncio.wait_for(after, 1)
    assert (later.error, later.base_offset) == (ErrorCode.none, 1)
    assert values(leader.partition().log) == values(follower.partition().log) == [b"a", b"b"]


async def test_an_acks_all_retry_of_an_uncommitted_batch_waits_for_its_first_write(
    pair: tuple[Broker, Broker],
) -> None:
    leader, follower = pair
    first = asyncio.create_task(
        leader.replicas.produce(-1, 5_000, [(TOPIC, 0, idempotent(b"a", 0))])
    )
    retried = asyncio.create_task(
        leader.replicas.produce(-1, 5_000, [(TOPIC, 0, idempotent(b"a", 0))])
    )
    await settle()
    assert not first.done() and not retried.done()
    for _ in range(2):
        await replicate(leader, follower)
    answers = [answer for (answer,) in await asyncio.wait_for(asyncio.gather(first, retried), 1)]
    assert [(a.error, a.base_offset) for a in answers] == [(ErrorCode.none, 0)] * 2
    assert values(leader.partition().log) == [b"a"]


@pytest.mark.parametrize(
    ("sequence", "error"),
    [
        (3, ErrorCode.out_of_order_sequence_number),  # a gap: 2 is next
        (0, ErrorCode.none),  # the first batch again: a duplicate, at its offset
        (1, ErrorCode.none),  # the last batch again
    ],
)
async def test_sequences_are_answered_as_kafka_does(
    pair: tuple[Broker, Broker], sequence: int, error: ErrorCode
) -> None:
    leader, _ = pair
    for index, value in enumerate((b"a", b"b")):
        await leader.replicas.produce(1, 1_000, [(TOPIC, 0, idempotent(value, index))])
    (answer,) = await leader.replicas.produce(1, 1_000, [(TOPIC, 0, idempotent(b"x", sequence))])
    assert answer.error is error
    if error is ErrorCode.none:
        assert answer.base_offset == sequence
    assert values(leader.partition().log) == [b"a", b"b"]


async def test_after_a_disk_error_the_replica_refuses_with_storage_errors_not_sequence_ones(
    pair: tuple[Broker, Broker],
    monkeypatch: pytest.MonkeyPatch,
    faults: Faults,  # noqa: F811
) -> None:
    """Seen by the fault suite on a full disk: the write of sequence 1 failed, and the batch
    queued behind it (sequence 2) was answered OUT_OF_ORDER_SEQUENCE_NUMBER, which librdkafka
    reads as "not written, nor anything after it": it bumped its epoch and sent again, under
    new sequences, batches of other partitions it had possibly written, which were then
    written twice. Kafka takes the log directory offline at the first disk error, so the
    batches behind it get KAFKA_STORAGE_ERROR (not written, retried as they are)."""
    leader, _ = pair
    (first,) = await leader.replicas.produce(1, 1_000, [(TOPIC, 0, idempotent(b"a", 0))])
    assert first.error is ErrorCode.none
    directory = leader.partition().log.directory
    with failing(monkeypatch, "writev", directory, by_fd) as failed:
        (refused,) = await leader.replicas.produce(1, 1_000, [(TOPIC, 0, idempotent(b"b", 1))])
    assert failed
    assert refused.error is ErrorCode.kafka_storage_error
    (behind,) = await leader.replicas.produce(1, 1_000, [(TOPIC, 0, idempotent(b"c", 2))])
    assert behind.error is ErrorCode.kafka_storage_error
    assert leader.partition().offline
    assert values(leader.partition().log) == [b"a"]
    # The broker's only log directory is offline: it can serve nothing more and ends (the
    # node's handler exits), as Kafka's broker halts when all its log directories failed.
    assert [what for what, _ in faults] == ["log_dirs_offline"]

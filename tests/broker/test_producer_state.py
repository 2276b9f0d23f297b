"""Idempotent producer state: duplicates, sequence and epoch checks, rebuilding from headers."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from broker.producer_state import ProducerStateError, ProducerStateManager, WrittenBatch
from net.record_batch import BatchHeader, read_header
from net.records import Record, encode_batch


def header(
    producer_id: int, epoch: int, sequence: int, records: int = 2, base_offset: int = 0
) -> BatchHeader:
    return read_header(
        encode_batch(
            [Record(b"v")] * records,
            base_offset=base_offset,
            producer_id=producer_id,
            producer_epoch=epoch,
            base_sequence=sequence,
        )
    )


def written(state: ProducerStateManager, batch: BatchHeader, offset: int) -> None:
    state.check(batch)
    state.update(batch, offset)


def test_a_retried_batch_is_a_duplicate_of_its_first_write() -> None:
    state = ProducerStateManager()
    written(state, header(7, 0, 0), 10)
    written(state, header(7, 0, 2), 12)
    assert state.find_duplicate(header(7, 0, 0)) == WrittenBatch(0, 1, 10, 11)
    assert state.find_duplicate(header(7, 0, 2)) == WrittenBatch(2, 3, 12, 13)
    assert state.find_duplicate(header(7, 0, 4)) is None
    # Another epoch or another producer is not the same batch.
    assert state.find_duplicate(header(7, 1, 0)) is None
    assert state.find_duplicate(header(8, 0, 0)) is None


def test_only_the_last_five_batches_are_remembered() -> None:
    state = ProducerStateManager()
    for index in range(6):
        written(state, header(7, 0, index * 2), index * 2)
    assert state.find_duplicate(header(7, 0, 0)) is None
    assert state.find_duplicate(header(7, 0, 2)) == WrittenBatch(2, 3, 2, 3)


@pytest.mark.parametrize(
    ("batch", "error"),
    [
        (header(7, 0, 5), ErrorCode.out_of_order_sequence_number),  # a gap after 0..1
        (header(7, 0, 1), ErrorCode.out_of_order_sequence_number),  # overlapping
        (header(7, 1, 3), ErrorCode.out_of_order_sequence_number),  # new epoch not at 0
    ],
)
def test_sequences_must_continue(batch: BatchHeader, error: ErrorCode) -> None:
    state = ProducerStateManager()
    written(state, header(7, 0, 0), 0)
    with pytest.raises(ProducerStateError) as refused:
        state.check(batch)
    assert refused.value.error_code == error


def test_an_older_epoch_is_fenced_and_a_newer_one_starts_over() -> None:
    state = ProducerStateManager()
    written(state, header(7, 3, 0), 0)
    with pytest.raises(ProducerStateError) as refused:
        state.check(header(7, 2, 2))
    assert refused.value.error_code == ErrorCode.invalid_producer_epoch
    written(state, header(7, 4, 0), 2)
    # The old epoch's batches are forgotten with it.
    assert state.find_duplicate(header(7, 3, 0)) is None
    assert state.find_duplicate(header(7, 4, 0)) == WrittenBatch(0, 1, 2, 3)


def test_an_unknown_producer_may_start_anywhere_and_plain_batches_are_ignored() -> None:
    state = ProducerStateManager()
    state.check(header(9, 0, 40))
    state.check(header(-1, -1, -1))
    state.update(header(-1, -1, -1), 0)
    assert len(state) == 0


def test_sequences_wrap_at_two_to_the_31() -> None:
    state = ProducerStateManager()
    written(state, header(7, 0, 2**31 - 2), 0)
    state.check(header(7, 0, 0))


def test_rebuilt_from_the_headers_of_a_log() -> None:
    headers = [header(7, 0, 0, base_offset=0), header(8, 2, 0, base_offset=2)]
    headers.append(header(7, 0, 2, base_offset=4))
    state = ProducerStateManager.rebuilt(headers)
    assert state.find_duplicate(header(7, 0, 2)) == WrittenBatch(2, 3, 4, 5)
    assert state.find_duplicate(header(8, 2, 0)) == WrittenBatch(0, 1, 2, 3)
    with pytest.raises(ProducerStateError):
        state.check(header(7, 0, 6))

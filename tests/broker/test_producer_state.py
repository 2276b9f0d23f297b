"""Idempotent producer state: duplicates, sequence and epoch checks, replaying headers,
snapshots."""

from __future__ import annotations

import struct

import crc32c
import pytest
from kio.schema.errors import ErrorCode

from broker.producer_state import (
    CorruptSnapshotError,
    ProducerStateError,
    ProducerStateManager,
    WrittenBatch,
)
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


def test_replayed_from_the_headers_of_a_log() -> None:
    headers = [header(7, 0, 0, base_offset=0), header(8, 2, 0, base_offset=2)]
    headers.append(header(7, 0, 2, base_offset=4))
    state = ProducerStateManager()
    state.replay(headers)
    assert state.find_duplicate(header(7, 0, 2)) == WrittenBatch(2, 3, 4, 5)
    assert state.find_duplicate(header(8, 2, 0)) == WrittenBatch(0, 1, 2, 3)
    with pytest.raises(ProducerStateError):
        state.check(header(7, 0, 6))


def several_producers() -> ProducerStateManager:
    """Three producers: one with more batches than are retained, one whose sequences wrap at
    2^31, and one with a large id and epoch."""
    state = ProducerStateManager()
    offset = 100
    for index in range(7):
        written(state, header(7, 3, index * 2), offset)
        offset += 2
    wrapping = 2**31 - 3
    for _ in range(3):
        batch = header(2**40, 0, wrapping, records=2)
        written(state, batch, offset)
        offset += 2
        wrapping = (wrapping + 2) % 2**31
    written(state, header(2**62, 32_767, 0, records=1), offset)
    return state


def test_a_snapshot_reads_back_to_the_same_state() -> None:
    state = several_producers()
    restored = ProducerStateManager.from_snapshot(state.to_snapshot())
    assert len(restored) == 3
    assert restored.to_snapshot() == state.to_snapshot()
    # The five retained batches of producer 7 still answer their original offsets.
    assert restored.find_duplicate(header(7, 3, 2)) is None
    for index in range(2, 7):
        assert restored.find_duplicate(header(7, 3, index * 2)) == WrittenBatch(
            index * 2, index * 2 + 1, 100 + index * 2, 101 + index * 2
        )
    # The batch whose sequences wrapped (2^31 - 1, 0) is kept as written.
    assert restored.find_duplicate(header(2**40, 0, 2**31 - 1)) == WrittenBatch(
        2**31 - 1, 0, 116, 117
    )
    restored.check(header(2**40, 0, 3))
    with pytest.raises(ProducerStateError):
        restored.check(header(2**40, 0, 1))
    assert restored.find_duplicate(header(2**62, 32_767, 0, records=1)) == WrittenBatch(
        0, 0, 120, 120
    )
    with pytest.raises(ProducerStateError) as fenced:
        restored.check(header(7, 2, 14))
    assert fenced.value.error_code == ErrorCode.invalid_producer_epoch


def test_an_empty_state_snapshots_too() -> None:
    assert len(ProducerStateManager.from_snapshot(ProducerStateManager().to_snapshot())) == 0


def resealed(body: bytes) -> bytes:
    """`body` behind a version 1 header with its correct CRC: only the layout can be wrong."""
    return struct.pack(">hI", 1, crc32c.crc32c(body)) + body


def test_the_crc_covers_every_body_byte() -> None:
    data = several_producers().to_snapshot()
    for position in range(6, len(data)):
        damaged = bytearray(data)
        damaged[position] ^= 0x01
        with pytest.raises(CorruptSnapshotError, match="CRC"):
            ProducerStateManager.from_snapshot(bytes(damaged))


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "shorter than a snapshot header"),
        (b"\x00\x01\x00", "shorter than a snapshot header"),
        (struct.pack(">hI", 2, 0), "unknown snapshot version 2"),
        (struct.pack(">hI", 1, 1), "CRC mismatch"),
        (resealed(b""), "cut short"),
        # One producer announced, none written.
        (resealed(struct.pack(">I", 1)), "cut short"),
        # A producer announcing a batch that is not there.
        (resealed(struct.pack(">IqhB", 1, 7, 0, 1)), "cut short"),
        (resealed(struct.pack(">IqhB", 1, 7, 0, 6) + b"\x00" * 24 * 6), "6 batches"),
        (resealed(struct.pack(">I", 0) + b"\x00"), "1 bytes after the snapshot"),
    ],
)
def test_a_bad_snapshot_is_refused(data: bytes, reason: str) -> None:
    with pytest.raises(CorruptSnapshotError, match=reason):
        ProducerStateManager.from_snapshot(data)


def test_a_snapshot_cut_short_is_refused() -> None:
    data = several_producers().to_snapshot()
    for length in range(len(data)):
        with pytest.raises(CorruptSnapshotError):
            ProducerStateManager.from_snapshot(data[:length])

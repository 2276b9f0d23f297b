"""Idempotent producers (KIP-98): per partition, what each producer id last wrote.

Pure: batch headers in, decisions out. For each producer id the replica keeps its epoch and
the metadata of its last five batches (sequence range and offsets), as Kafka's
ProducerStateManager does:

- A batch equal (same epoch and sequence range) to one of those five is a duplicate: the
  leader answers with the original offsets and writes nothing (a producer retrying after a lost
  response).
- An older epoch than the producer's is refused with INVALID_PRODUCER_EPOCH; a new epoch must
  start at sequence 0; otherwise a batch must continue the last sequence (wrapping at 2^31),
  else OUT_OF_ORDER_SEQUENCE_NUMBER. A producer id the replica has never seen may start at any
  sequence (its earlier batches may have been deleted by retention).
- Every replica (leader or follower) updates the state from the batches it appends, so the
  state moves with leadership; a replica opening its log loads a snapshot of it
  (`to_snapshot` / `from_snapshot`, kept by broker/producer_snapshots.py) and replays the batch
  headers after it.

Snapshot layout (big-endian), a CRC32C of the body guarding it:

    version: int16, crc: uint32, body:
      producer count: uint32, then per producer (by producer id):
        producer id: int64, epoch: int16, batch count: uint8, then per batch:
          first sequence: int32, last sequence: int32, first offset: int64, last offset: int64
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

import crc32c
from kio.schema.errors import ErrorCode

from net.record_batch import BatchHeader

# Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN.
BATCHES_RETAINED = 5
NO_PRODUCER_ID = -1
_SEQUENCE_WRAP = 2**31
SNAPSHOT_VERSION = 1
_SNAPSHOT_HEADER = struct.Struct(">hI")
_SNAPSHOT_COUNT = struct.Struct(">I")
_SNAPSHOT_PRODUCER = struct.Struct(">qhB")
_SNAPSHOT_BATCH = struct.Struct(">iiqq")


class ProducerStateError(Exception):
    """A batch the producer state refuses, with the Kafka error code to answer."""

    def __init__(self, error_code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


class CorruptSnapshotError(Exception):
    """Bytes that are not a producer-state snapshot this version wrote whole."""


class WrittenBatch(NamedTuple):
    """Where a producer's batch went: its sequence range and offsets."""

    first_sequence: int
    last_sequence: int
    first_offset: int
    last_offset: int


class ActiveProducer(NamedTuple):
    """A producer as DescribeProducers shows it: its epoch, the last sequence written and the
    max timestamp of its last batch (-1 when that batch was replayed from a snapshot)."""

    producer_id: int
    epoch: int
    last_sequence: int
    last_timestamp: int


@dataclass(slots=True)
class ProducerEntry:
    epoch: int
    batches: deque[WrittenBatch] = field(default_factory=lambda: deque(maxlen=BATCHES_RETAINED))
    # The max timestamp of its last batch seen since the state was loaded (snapshots do not
    # keep it: -1 until the producer writes again).
    last_timestamp: int = -1


def _last_sequence(header: BatchHeader) -> int:
    return (header.base_sequence + header.last_offset_delta) % _SEQUENCE_WRAP


class ProducerStateManager:
    """The producers of one partition replica."""

    def __init__(self) -> None:
        self._producers: dict[int, ProducerEntry] = {}

    def __len__(self) -> int:
        return len(self._producers)

    def find_duplicate(self, header: BatchHeader) -> WrittenBatch | None:
        """The batch already written that `header` repeats, if any."""
        entry = self._producers.get(header.producer_id)
        if header.producer_id == NO_PRODUCER_ID or entry is None:
            return None
        if entry.epoch != header.producer_epoch:
            return None
        last_sequence = _last_sequence(header)
        for written in entry.batches:
            if (written.first_sequence, written.last_sequence) == (
                header.base_sequence,
                last_sequence,
            ):
                return written
        return None

    def check(self, header: BatchHeader) -> None:
        """Raises ProducerStateError if the leader must refuse this (non-duplicate) batch."""
        if header.producer_id == NO_PRODUCER_ID:
            return
        entry = self._producers.get(header.producer_id)
        if entry is None:
            return
        if header.producer_epoch < entry.epoch:
            raise ProducerStateError(
                ErrorCode.invalid_producer_epoch,
                f"producer {header.producer_id} epoch {header.producer_epoch} is older than "
                f"{entry.epoch}",
            )
        if header.producer_epoch > entry.epoch:
            if header.base_sequence != 0:
                raise ProducerStateError(
                    ErrorCode.out_of_order_sequence_number,
                    f"producer {header.producer_id} new epoch {header.producer_epoch} starts "
                    f"at sequence {header.base_sequence}, not 0",
                )
            return
        if entry.batches:
            expected = (entry.batches[-1].last_sequence + 1) % _SEQUENCE_WRAP
            if header.base_sequence != expected:
                raise ProducerStateError(
                    ErrorCode.out_of_order_sequence_number,
                    f"producer {header.producer_id} sent sequence {header.base_sequence}, "
                    f"expected {expected}",
                )

    def update(self, header: BatchHeader, first_offset: int) -> None:
        """Record a batch written at `first_offset` (leader or follower)."""
        if header.producer_id == NO_PRODUCER_ID:
            return
        entry = self._producers.get(header.producer_id)
        if entry is None or entry.epoch != header.producer_epoch:
            entry = self._producers[header.producer_id] = ProducerEntry(header.producer_epoch)
        entry.batches.append(
            WrittenBatch(
                header.base_sequence,
                _last_sequence(header),
                first_offset,
                first_offset + header.last_offset_delta,
            )
        )
        entry.last_timestamp = header.max_timestamp

    def active_producers(self) -> list[ActiveProducer]:
        """The producers with a batch in this state (DescribeProducers), by producer id."""
        return [
            ActiveProducer(
                producer_id, entry.epoch, entry.batches[-1].last_sequence, entry.last_timestamp
            )
            for producer_id, entry in sorted(self._producers.items())
            if entry.batches
        ]

    def last_offsets(self) -> dict[int, int]:
        """Each producer's last written offset: the log cleaner keeps the batch ending there,
        so the producer's sequence survives compaction."""
        return {
            producer_id: entry.batches[-1].last_offset
            for producer_id, entry in self._producers.items()
            if entry.batches
        }

    def replay(self, headers: Iterable[BatchHeader]) -> None:
        """Update the state with batches of a log, in offset order (they keep their offsets)."""
        for header in headers:
            self.update(header, header.base_offset)

    def to_snapshot(self) -> bytes:
        """The state as bytes that `from_snapshot` reads back; equal states give equal bytes."""
        parts = [_SNAPSHOT_COUNT.pack(len(self._producers))]
        for producer_id, entry in sorted(self._producers.items()):
            parts.append(_SNAPSHOT_PRODUCER.pack(producer_id, entry.epoch, len(entry.batches)))
            parts.extend(_SNAPSHOT_BATCH.pack(*batch) for batch in entry.batches)
        body = b"".join(parts)
        return _SNAPSHOT_HEADER.pack(SNAPSHOT_VERSION, crc32c.crc32c(body)) + body

    @classmethod
    def from_snapshot(cls, data: bytes) -> ProducerStateManager:
        """The state `to_snapshot` wrote. Raises CorruptSnapshotError for an unknown version,
        a CRC mismatch, or a body cut short or running on."""
        if len(data) < _SNAPSHOT_HEADER.size:
            raise CorruptSnapshotError(f"{len(data)} bytes is shorter than a snapshot header")
        version, crc = _SNAPSHOT_HEADER.unpack_from(data)
        if version != SNAPSHOT_VERSION:
            raise CorruptSnapshotError(f"unknown snapshot version {version}")
        body = memoryview(data)[_SNAPSHOT_HEADER.size :]
        if crc32c.crc32c(body) != crc:
            raise CorruptSnapshotError("snapshot CRC mismatch")
        state = cls()
        try:
            (count,) = _SNAPSHOT_COUNT.unpack_from(body)
            position = _SNAPSHOT_COUNT.size
            for _ in range(count):
                producer_id, epoch, batches = _SNAPSHOT_PRODUCER.unpack_from(body, position)
                position += _SNAPSHOT_PRODUCER.size
                if batches > BATCHES_RETAINED:
                    # The deque would silently drop the extra ones: not something we wrote.
                    raise CorruptSnapshotError(f"producer {producer_id} has {batches} batches")
                entry = state._producers[producer_id] = ProducerEntry(epoch)
                for _ in range(batches):
                    entry.batches.append(WrittenBatch(*_SNAPSHOT_BATCH.unpack_from(body, position)))
                    position += _SNAPSHOT_BATCH.size
        except struct.error as error:
            raise CorruptSnapshotError(f"snapshot cut short: {error}") from error
        if position != len(body):
            raise CorruptSnapshotError(f"{len(body) - position} bytes after the snapshot")
        return state

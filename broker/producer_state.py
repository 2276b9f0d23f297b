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
  state moves with leadership; a replica opening its log rebuilds it from the batch headers.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from kio.schema.errors import ErrorCode

from net.record_batch import BatchHeader

# Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN.
BATCHES_RETAINED = 5
NO_PRODUCER_ID = -1
_SEQUENCE_WRAP = 2**31


class ProducerStateError(Exception):
    """A batch the producer state refuses, with the Kafka error code to answer."""

    def __init__(self, error_code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


class WrittenBatch(NamedTuple):
    """Where a producer's batch went: its sequence range and offsets."""

    first_sequence: int
    last_sequence: int
    first_offset: int
    last_offset: int


@dataclass(slots=True)
class ProducerEntry:
    epoch: int
    batches: deque[WrittenBatch] = field(default_factory=lambda: deque(maxlen=BATCHES_RETAINED))


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

    @classmethod
    def rebuilt(cls, headers: Iterable[BatchHeader]) -> ProducerStateManager:
        """The state after the batches of a log, in offset order."""
        state = cls()
        for header in headers:
            state.update(header, header.base_offset)
        return state

"""ListOffsets for one partition led here: which offset answers a timestamp.

The rules follow Apache Kafka's leader path, `UnifiedLog.fetchOffsetByTimestamp` (3.9 / 4.0,
without tiered storage) as filtered by `Partition.fetchOffsetForTimestamp` and
`ReplicaManager.fetchOffset` for a consumer's request:

- EARLIEST (-2) and EARLIEST_LOCAL (-4): the log start offset, no timestamp, and the epoch of
  the leader-epoch cache's earliest entry if that entry starts at or below the log start.
- LATEST (-1): the last fetchable offset (the last stable offset for READ_COMMITTED, the high
  watermark for READ_UNCOMMITTED), no timestamp, and the partition's leader epoch.
- LATEST_TIERED (-5): without remote storage Kafka answers offset -1, timestamp -1, epoch -1.
- MAX_TIMESTAMP (-3, KIP-734): the first record carrying the largest timestamp of the log's
  segments (`DefaultRecordBatch.offsetOfMaxTimestamp`), with its batch's leader epoch. As in
  Kafka, this looks at every batch still on disk, records below the log start offset included.
- a timestamp: the first record at or after the log start offset whose timestamp is >= it
  (`FileRecords.searchForTimestamp`), with its batch's leader epoch.

For MAX_TIMESTAMP and timestamps, a record at or above the last fetchable offset is not an
answer: Kafka then replies offset -1, timestamp -1, leader epoch -1 (ListOffsets v1+).
Kafka's OFFSET_NOT_AVAILABLE (a new leader whose high watermark is still below its epoch's
start offset) is the caller's to raise: it depends on partition state a Log does not hold.
"""

from __future__ import annotations

from dataclasses import dataclass

from net.record_batch import NO_PARTITION_LEADER_EPOCH, NO_TIMESTAMP, BatchHeader, iter_batches
from net.records import Record, decode_batch
from storage.log import Log

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4
LATEST_TIERED_TIMESTAMP = -5

UNKNOWN_OFFSET = -1

# How much a timestamp search reads at a time past the batch the time index pointed at; it
# only goes on when the records of that batch at or after the log start are all too old.
_READ_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class OffsetAnswer:
    """One partition's ListOffsets answer; -1 in a field where Kafka answers -1."""

    offset: int
    timestamp: int
    leader_epoch: int


NOT_FOUND = OffsetAnswer(UNKNOWN_OFFSET, NO_TIMESTAMP, NO_PARTITION_LEADER_EPOCH)


def offset_for_timestamp(
    log: Log,
    timestamp: int,
    *,
    isolation_committed: bool,
    leader_epoch: int | None = None,
) -> OffsetAnswer:
    """The ListOffsets answer of the leader of `log` for `timestamp`, as Kafka gives it to a
    consumer (see the module docstring for each special timestamp).

    `isolation_committed` is the request's READ_COMMITTED isolation; without transactions the
    last stable offset is the high watermark, so both isolations answer the same. For LATEST,
    Kafka answers the partition's current `leader_epoch`; when the caller does not pass it,
    the epoch that wrote the offset below the high watermark is used (-1 if none).
    A timestamp that is none of the special ones and is negative is searched like any other,
    as Kafka does. Raises what the log raises when it is offline or a batch is corrupt.
    """
    if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
        return _earliest(log)
    # READ_COMMITTED stops at the last stable offset, READ_UNCOMMITTED at the high watermark:
    # with no transactions they are the same offset.
    last_fetchable = log.high_watermark
    if timestamp == LATEST_TIMESTAMP:
        if leader_epoch is None:
            leader_epoch = _epoch_of(log, last_fetchable - 1)
        return OffsetAnswer(last_fetchable, NO_TIMESTAMP, leader_epoch)
    if timestamp == LATEST_TIERED_TIMESTAMP:
        return NOT_FOUND
    if timestamp == MAX_TIMESTAMP:
        found = _max_timestamp(log)
    else:
        found = _search(log, timestamp, last_fetchable)
    if found is None or found.offset >= last_fetchable:
        return NOT_FOUND
    return found


def _earliest(log: Log) -> OffsetAnswer:
    start = log.log_start_offset
    entries = log.leader_epoch_cache.entries
    # Kafka checks the earliest entry covers the log start: batches written before leader
    # epochs existed carry none, and then it answers no epoch rather than a later one.
    epoch = entries[0].epoch if entries and entries[0].start_offset <= start else -1
    return OffsetAnswer(start, NO_TIMESTAMP, epoch)


def _epoch_of(log: Log, offset: int) -> int:
    epoch = log.leader_epoch_cache.epoch_for_offset(offset)
    return NO_PARTITION_LEADER_EPOCH if epoch is None else epoch


def _answer(header: BatchHeader, record: Record) -> OffsetAnswer:
    # Decoded records always carry both; the fallbacks only satisfy the optional fields.
    offset = header.base_offset if record.offset is None else record.offset
    timestamp = header.max_timestamp if record.timestamp is None else record.timestamp
    return OffsetAnswer(offset, timestamp, max(header.partition_leader_epoch, -1))


def _max_timestamp(log: Log) -> OffsetAnswer | None:
    best = None
    for batch, header in log.batches():
        # Strictly greater: the first batch holding the maximum wins, as in Kafka.
        if best is None or header.max_timestamp > best[1].max_timestamp:
            best = (batch, header)
    if best is None:
        return None
    header, records = decode_batch(best[0].read())
    for record in records:
        if record.timestamp == header.max_timestamp:
            return _answer(header, record)
    return None


def _search(log: Log, target: int, limit: int) -> OffsetAnswer | None:
    """The first record at or after the log start with a timestamp >= `target`, if it is
    below `limit` (nothing at or above it could be the answer)."""
    lookup = log.lookup_timestamp(target)
    if lookup is None:
        return None
    chunk = lookup.batch.read()
    while True:
        next_offset = None
        for position, header in iter_batches(chunk):
            if header.base_offset >= limit:
                return None
            if header.max_timestamp >= target:
                _, records = decode_batch(chunk, position)
                for record in records:
                    answer = _answer(header, record)
                    if answer.offset >= lookup.offset and answer.timestamp >= target:
                        return answer
            next_offset = header.next_offset
        # Only when the batch found straddles the log start can its records from there on all
        # be older than the target. Kafka then reads on to the end of that segment; storage
        # already looks past segment ends, so this goes on to the next ones too.
        if next_offset is None or next_offset >= limit:
            return None
        records_slice = log.read(next_offset, _READ_BYTES).records
        if records_slice is None:
            return None
        chunk = records_slice.read()

"""Log compaction (`cleanup.policy=compact`), as Kafka's LogCleaner does it.

A clean keeps, for every key, only the record with the highest offset, in the cleanable part of
a log: its sealed segments wholly below the high watermark (the active segment, and data that
may still be truncated, are never touched), up to the first dirty segment holding a record newer
than `min.compaction.lag.ms` (Kafka's LogCleanerManager.cleanableOffsets). A log is due for a
clean when its dirty ratio reaches `min.cleanable.dirty.ratio`, or when its oldest dirty record
is older than `max.compaction.lag.ms` (`compaction_lag_passed`). It runs in two passes:

1. Map: read the dirty part, from the first dirty offset (the cleaner checkpoint) to the end of
   the cleanable part, and note the latest offset of every key there.
2. Rewrite: copy the cleanable segments from the start of the log, in groups that fit one
   segment, dropping every record whose key has a later offset in the map, records without a
   key, and tombstones whose delete horizon has passed. Each group becomes one segment, swapped
   in crash-safely by `Log.replace_segments` (see `storage.cleaner_swap`); then the checkpoint
   moves to the end of the part.

Offsets never change: a rewritten batch keeps its base offset, its last offset (so its offset
range, and the producer's last sequence, stay whole), its partition leader epoch and its producer
id, epoch and base sequence; records keep their offsets, so a compacted log has gaps. A batch
whose records all go is dropped, except the last batch of an active producer and the last batch
of each group, which stay as batches without records. Compressed batches are decompressed,
filtered and compressed again with their codec.

Tombstones (null values) follow KIP-534: the first clean that keeps one stamps its batch with a
delete horizon (now + `delete.retention.ms`, in the base timestamp, with the delete-horizon
attribute bit); cleans after the horizon drop it. Control and transactional batches are copied
as they are: storage keeps no record of aborted transactions, so it could not tell which
transactional records may supersede others.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import structlog

from net.record_batch import (
    DELETE_HORIZON_BIT,
    HEADER_SIZE,
    NO_PRODUCER_ID,
    BatchHeader,
    Compression,
    CorruptBatchError,
    TimestampType,
    batch_attributes,
    read_header,
)

# encode_batch numbers records consecutively; the cleaner re-encodes them at their own
# offsets, from the record and batch encoders encode_batch itself is built from.
from net.records import (
    BatchFields,
    compress,
    decode_batch,
    encode_headers,
    encode_record,
    seal_batch,
)
from storage import durability
from storage.cleaner_checkpoint import read_first_dirty_offset, write_first_dirty_offset
from storage.cleaner_swap import cleaned_path
from storage.log import Log
from storage.segment import (
    MAX_RELATIVE_OFFSET,
    Segment,
)

logger = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class CleanStats:
    """What one clean did.

    `first_dirty_offset` to `end_offset` is the part read to map keys (empty when nothing was
    dirty); `end_offset` is the new cleaner checkpoint. Counts cover the rewrite.
    """

    first_dirty_offset: int
    end_offset: int
    dirty_segments_read: int
    keys_mapped: int
    segments_replaced: int
    segments_written: int
    batches_removed: int
    records_removed: int
    bytes_before: int
    bytes_after: int
    # When tombstones kept by this clean may go (the earliest delete horizon in the log): a
    # clean is due then even if nothing new is dirty. None: no tombstone waits.
    next_delete_horizon_ms: int | None = None


@dataclass(frozen=True, slots=True)
class _DecodedRecord:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    encoded_headers: bytes


class _GroupWriter:
    """Writes one group's cleaned segment and counts what it removed."""

    def __init__(self, directory: Path, group: Sequence[Segment]) -> None:
        self.path = cleaned_path(directory, group[0].base_offset)
        self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        self.size = 0
        self.changed = len(group) > 1
        self.batches_removed = 0
        self.records_removed = 0
        self.earliest_delete_horizon: int | None = None

    def note_delete_horizon(self, horizon: int | None) -> None:
        self.earliest_delete_horizon = _earliest(self.earliest_delete_horizon, horizon)

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view) :]
        self.size += len(data)


def clean(
    log: Log,
    *,
    now_ms: int,
    delete_retention_ms: int,
    active_producers: Mapping[int, int] | None = None,
) -> CleanStats:
    """Compact the cleanable part of `log` (see the module docstring) and return what it did.

    `now_ms` is the clock tombstone horizons are set and judged by; `delete_retention_ms` is the
    topic's `delete.retention.ms`. `active_producers` maps each producer id the broker still
    tracks to the last offset of its last batch, whose batch is kept (possibly empty) so the
    producer's sequence survives; None counts every producer id in the log as active.

    The caller owns the log, as for any Log call. Nothing is rewritten when nothing is dirty and
    no tombstone horizon has passed. A disk error while writing a cleaned segment raises
    OSError and leaves the log as it was; one during a swap takes the log offline (see
    `Log.replace_segments`).
    """
    log_clean = LogClean(
        log,
        now_ms=now_ms,
        delete_retention_ms=delete_retention_ms,
        active_producers=active_producers,
    )
    for group in log_clean.prepare():
        log_clean.swap(log_clean.write(group))
    return log_clean.finish()


def dirty_ratio(log: Log, now_ms: int) -> float:
    """The share of the cleanable part's bytes (sealed segments below the high watermark, and
    before the records `min.compaction.lag.ms` still protects at `now_ms`) in segments holding
    dirty offsets, as Kafka's cleaner ranks logs; 0 when nothing is cleanable. Reads no segment
    data: the broker decides by this whether a clean is worth its cost."""
    first_dirty = _first_dirty_offset(log)
    cleanable = _cleanable_segments(log, first_dirty, now_ms)
    total = sum(segment.size for segment in cleanable)
    if not total:
        return 0.0
    dirty = sum(segment.size for segment in cleanable if segment.next_offset > first_dirty)
    return dirty / total


def compaction_lag_passed(log: Log, now_ms: int) -> bool:
    """Whether the oldest dirty record of `log` (its first dirty segment's first batch, as
    Kafka times it) is older than the log's `max.compaction.lag.ms` at `now_ms`: the log is
    then due for a clean whatever its dirty ratio. Reads one batch header."""
    max_lag = log.config.max_compaction_lag_ms
    if max_lag is None:
        return False
    first_dirty = _first_dirty_offset(log)
    sealed = log.segments[:-1]
    dirty = next((s for s in sealed if s.next_offset > first_dirty and s.size), None)
    if dirty is None:
        return False
    first_batch = read_header(dirty.file.pread(HEADER_SIZE, 0))
    return now_ms - first_batch.max_timestamp > max_lag


@dataclass(frozen=True, slots=True)
class CleanedGroup:
    """A group of segments and the cleaned segment written for it (None: it had nothing to
    remove, so it stays as it is)."""

    group: tuple[Segment, ...]
    path: Path | None
    size_before: int = 0
    size_after: int = 0
    batches_removed: int = 0
    records_removed: int = 0


class LogClean:
    """One clean of one log, in steps so that a broker can run the file work off its event loop.

    The constructor, `swap` and `finish` run where the log's owner runs (they read and change
    the log); `prepare` and `write` only read the sealed segments the constructor listed (the
    Segment objects keep their files readable even if the log deletes them meanwhile) and write
    `.cleaned` files, so they may run in another thread. A clean whose log was truncated, or
    whose segments were replaced or deleted, meanwhile swaps nothing and writes no checkpoint.
    """

    def __init__(
        self,
        log: Log,
        *,
        now_ms: int,
        delete_retention_ms: int,
        active_producers: Mapping[int, int] | None = None,
    ) -> None:
        self._log = log
        self._now_ms = now_ms
        self._delete_retention_ms = delete_retention_ms
        self._active_producers = active_producers
        self._directory = log.directory
        self._segment_bytes = log.config.segment_bytes
        self._truncations = log.truncations
        self._segments = log.segments
        self._first_dirty = _first_dirty_offset(log)
        self._cleanable = _cleanable_segments(log, self._first_dirty, now_ms)
        self._end = self._cleanable[-1].next_offset if self._cleanable else log.log_start_offset
        self._dirty: list[Segment] = []
        self._latest_offsets: dict[bytes, int] = {}
        self._swapped: list[CleanedGroup] = []
        self._next_delete_horizon: int | None = None
        self._void = False

    def prepare(self) -> list[tuple[Segment, ...]]:
        """Map the latest offset of each dirty key; the groups of segments to rewrite, in order
        (none when nothing is dirty and no tombstone horizon has passed)."""
        self._dirty = [s for s in self._cleanable if s.next_offset > self._first_dirty]
        self._latest_offsets = _map_latest_offsets(self._dirty, self._first_dirty)
        horizon = _earliest_delete_horizon(self._cleanable)
        self._next_delete_horizon = horizon
        if not self._dirty and (horizon is None or self._now_ms < horizon):
            return []
        self._next_delete_horizon = None
        if self._active_producers is None:
            self._active_producers = _last_offsets_of_producers(self._segments)
        return [tuple(group) for group in _group_by_size(self._cleanable, self._segment_bytes)]

    def write(self, group: tuple[Segment, ...]) -> CleanedGroup:
        """Write and fsync the cleaned segment of `group` (one of `prepare`'s). A disk error
        raises OSError and leaves no file behind."""
        assert self._active_producers is not None, "prepare() first"
        writer = _GroupWriter(self._directory, group)
        try:
            _write_cleaned(
                writer,
                group,
                latest_offsets=self._latest_offsets,
                active_producers=self._active_producers,
                now_ms=self._now_ms,
                delete_retention_ms=self._delete_retention_ms,
            )
            if writer.changed and writer.size:
                durability.sync_file(writer.fd, writer.path)
        except Exception:
            os.close(writer.fd)
            with contextlib.suppress(OSError):
                writer.path.unlink()
            raise
        os.close(writer.fd)
        self._next_delete_horizon = _earliest(
            self._next_delete_horizon, writer.earliest_delete_horizon
        )
        if not (writer.changed and writer.size):
            writer.path.unlink()
            return CleanedGroup(group, None)
        # Kafka keeps the newest modification time, which time-based decisions may read.
        try:
            modified = max(os.stat(segment.log_path).st_mtime_ns for segment in group)
        except FileNotFoundError:
            # Retention or DeleteRecords removed the group meanwhile: the log outran the clean.
            self.abandon(CleanedGroup(group, writer.path))
            return CleanedGroup(group, None)
        os.utime(writer.path, ns=(modified, modified))
        return CleanedGroup(
            group,
            writer.path,
            size_before=sum(segment.size for segment in group),
            size_after=writer.size,
            batches_removed=writer.batches_removed,
            records_removed=writer.records_removed,
        )

    def swap(self, cleaned: CleanedGroup) -> bool:
        """Put the cleaned segment in place of its group; False (and the file removed) when
        the log changed under the clean, which then swaps nothing more."""
        if cleaned.path is None:
            return not self._void
        if not self._void and self._log.truncations == self._truncations:
            try:
                self._log.replace_segments(cleaned.path, cleaned.group)
            except ValueError:
                pass
            else:
                self._swapped.append(cleaned)
                return True
        self.abandon(cleaned)
        return False

    def abandon(self, cleaned: CleanedGroup) -> None:
        """Give the clean up: remove the cleaned segment; nothing more is swapped in, and the
        checkpoint does not move."""
        if not self._void:
            logger.info("log_clean_abandoned", directory=str(self._directory))
        self._void = True
        if cleaned.path is not None:
            with contextlib.suppress(OSError):
                cleaned.path.unlink()

    def finish(self) -> CleanStats:
        """Move the cleaner checkpoint past the cleaned part (unless the clean was void) and
        return what the clean did."""
        if self._log.truncations != self._truncations:
            self._void = True
        if not self._void and self._dirty and self._end > self._first_dirty:
            write_first_dirty_offset(self._directory, self._end)
        stats = CleanStats(
            first_dirty_offset=self._first_dirty,
            end_offset=max(self._first_dirty, self._end),
            dirty_segments_read=len(self._dirty),
            keys_mapped=len(self._latest_offsets),
            segments_replaced=sum(len(cleaned.group) for cleaned in self._swapped),
            segments_written=len(self._swapped),
            batches_removed=sum(cleaned.batches_removed for cleaned in self._swapped),
            records_removed=sum(cleaned.records_removed for cleaned in self._swapped),
            bytes_before=sum(cleaned.size_before for cleaned in self._swapped),
            bytes_after=sum(cleaned.size_after for cleaned in self._swapped),
            next_delete_horizon_ms=self._next_delete_horizon,
        )
        if stats.segments_written:
            logger.info("log_cleaned", directory=str(self._directory), **dataclasses.asdict(stats))
        return stats


def _earliest(first: int | None, second: int | None) -> int | None:
    return first if second is None else second if first is None else min(first, second)


def _first_dirty_offset(log: Log) -> int:
    checkpoint = read_first_dirty_offset(log.directory)
    # As Kafka: a checkpoint outside the log (retention moved the start past it, or the log was
    # truncated below it) means the whole log is dirty.
    start = log.log_start_offset
    if checkpoint is not None and start <= checkpoint <= log.log_end_offset:
        return checkpoint
    return start


def _cleanable_segments(log: Log, first_dirty: int, now_ms: int) -> list[Segment]:
    """The sealed segments, from the oldest, whose offsets all lie below the high watermark,
    up to the first dirty one with a record newer than `min.compaction.lag.ms` at `now_ms`."""
    high_watermark = log.high_watermark
    min_lag = log.config.min_compaction_lag_ms
    cleanable = []
    for segment, following in itertools.pairwise(log.segments):
        if following.base_offset > high_watermark:
            break
        if (
            min_lag
            and segment.next_offset > first_dirty
            and segment.max_timestamp > now_ms - min_lag
        ):
            break
        cleanable.append(segment)
    return cleanable


def _batches(segment: Segment) -> Iterator[tuple[BatchHeader, bytes]]:
    for position, header in segment.batches():
        yield header, segment.file.pread(header.size, position)


def _is_compactable(header: BatchHeader) -> bool:
    return not (header.is_control or header.is_transactional)


def _decode(data: bytes) -> list[_DecodedRecord]:
    _, records = decode_batch(data)
    decoded = []
    for record in records:
        if record.offset is None or record.timestamp is None:
            raise CorruptBatchError("a decoded record lacks its offset or timestamp")
        decoded.append(
            _DecodedRecord(
                record.offset,
                record.timestamp,
                record.key,
                record.value,
                encode_headers(record.headers),
            )
        )
    return decoded


def _map_latest_offsets(dirty: Sequence[Segment], first_dirty: int) -> dict[bytes, int]:
    """The latest offset of every key from `first_dirty` on, in the dirty segments."""
    latest: dict[bytes, int] = {}
    for segment in dirty:
        for header, data in _batches(segment):
            if header.last_offset < first_dirty or not _is_compactable(header):
                continue
            for record in _decode(data):
                if record.key is not None and record.offset >= first_dirty:
                    latest[record.key] = record.offset
    return latest


def _earliest_delete_horizon(segments: Sequence[Segment]) -> int | None:
    """The earliest delete horizon of the batches holding tombstones, if any has one."""
    return min(
        (
            header.base_timestamp
            for segment in segments
            for _, header in segment.batches()
            if header.has_delete_horizon
        ),
        default=None,
    )


def _last_offsets_of_producers(segments: Sequence[Segment]) -> dict[int, int]:
    last: dict[int, int] = {}
    for segment in segments:
        for _, header in segment.batches():
            if header.producer_id != NO_PRODUCER_ID:
                last[header.producer_id] = header.last_offset
    return last


def _group_by_size(segments: Sequence[Segment], max_size: int) -> list[list[Segment]]:
    """Consecutive segments whose sizes add up to at most `max_size` and whose offsets fit the
    index's relative offsets (Kafka's groupSegmentsBySize, by the sizes before cleaning)."""
    groups: list[list[Segment]] = []
    for segment in segments:
        if groups:
            group = groups[-1]
            if (
                sum(member.size for member in group) + segment.size <= max_size
                and segment.next_offset - 1 - group[0].base_offset <= MAX_RELATIVE_OFFSET
            ):
                group.append(segment)
                continue
        groups.append([segment])
    return groups


def _write_cleaned(
    writer: _GroupWriter,
    group: Sequence[Segment],
    *,
    latest_offsets: Mapping[bytes, int],
    active_producers: Mapping[int, int],
    now_ms: int,
    delete_retention_ms: int,
) -> None:
    group_end = group[-1].next_offset
    for segment in group:
        for header, data in _batches(segment):
            if not _is_compactable(header):
                writer.write(data)
                continue
            records = _decode(data)
            horizon = header.base_timestamp if header.has_delete_horizon else None
            kept = [
                record for record in records if _retains(record, latest_offsets, horizon, now_ms)
            ]
            writer.records_removed += len(records) - len(kept)
            stamps_horizon = horizon is None and any(record.value is None for record in kept)
            if kept and len(kept) == len(records) and not stamps_horizon:
                writer.write(data)
                writer.note_delete_horizon(horizon)
                continue
            if kept:
                if stamps_horizon:
                    horizon = now_ms + delete_retention_ms
                # A rewritten batch keeps a horizon only while it holds tombstones.
                if not any(record.value is None for record in kept):
                    horizon = None
                writer.note_delete_horizon(horizon)
                cleaned = _retained_batch(header, kept, horizon)
            # The last batch of an active producer keeps its sequence for the producer state
            # (as Kafka); the group's last batch keeps the segment ending where the next one
            # starts, which recovery checks and by which an interrupted swap is finished.
            elif (
                header.producer_id != NO_PRODUCER_ID
                and active_producers.get(header.producer_id) == header.last_offset
            ) or header.next_offset == group_end:
                cleaned = _empty_batch(header)
            else:
                writer.batches_removed += 1
                writer.changed = True
                continue
            if cleaned != data:
                writer.changed = True
            writer.write(cleaned)


def _retains(
    record: _DecodedRecord,
    latest_offsets: Mapping[bytes, int],
    horizon: int | None,
    now_ms: int,
) -> bool:
    """Kafka's shouldRetainRecord: the key's latest record, unless a tombstone past its
    batch's delete horizon; records without a key are dropped."""
    if record.key is None:
        return False
    if record.offset < latest_offsets.get(record.key, -1):
        return False
    return record.value is not None or horizon is None or now_ms < horizon


def _retained_batch(
    header: BatchHeader, kept: Sequence[_DecodedRecord], horizon: int | None
) -> bytes:
    """`header`'s batch holding only `kept`, encoded as Kafka's filterTo does: base and last
    offsets, epoch, producer fields and codec kept; base timestamp the first record's, or the
    delete horizon (KIP-534), from which record timestamps are deltas."""
    base_timestamp = kept[0].timestamp if horizon is None else horizon
    if header.timestamp_type is TimestampType.LOG_APPEND_TIME:
        max_timestamp = header.max_timestamp
    else:
        max_timestamp = max(record.timestamp for record in kept)
    payload = b"".join(
        _encode_record(record, header.base_offset, base_timestamp) for record in kept
    )
    payload = compress(header.compression, payload)
    attributes = header.attributes & ~DELETE_HORIZON_BIT
    if horizon is not None:
        attributes |= DELETE_HORIZON_BIT
    return _seal(
        header,
        attributes=attributes,
        base_timestamp=base_timestamp,
        max_timestamp=max_timestamp,
        record_count=len(kept),
        payload=payload,
    )


def _empty_batch(header: BatchHeader) -> bytes:
    """`header`'s batch without records (Kafka's writeEmptyHeader): its offset range, epoch
    and producer fields, uncompressed, timestamped with its max timestamp."""
    attributes = batch_attributes(
        Compression.NONE,
        header.timestamp_type,
        is_transactional=header.is_transactional,
        is_control=header.is_control,
    )
    return _seal(
        header,
        attributes=attributes,
        base_timestamp=header.max_timestamp,
        max_timestamp=header.max_timestamp,
        record_count=0,
        payload=b"",
    )


def _seal(
    header: BatchHeader,
    *,
    attributes: int,
    base_timestamp: int,
    max_timestamp: int,
    record_count: int,
    payload: bytes,
) -> bytes:
    return seal_batch(
        BatchFields(
            header.base_offset,
            header.partition_leader_epoch,
            attributes,
            header.last_offset_delta,
            base_timestamp,
            max_timestamp,
            header.producer_id,
            header.producer_epoch,
            header.base_sequence,
            record_count,
        ),
        payload,
    )


def _encode_record(record: _DecodedRecord, base_offset: int, base_timestamp: int) -> bytes:
    return encode_record(
        timestamp_delta=record.timestamp - base_timestamp,
        offset_delta=record.offset - base_offset,
        key=record.key,
        value=record.value,
        encoded_headers=record.encoded_headers,
    )

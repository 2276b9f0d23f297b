"""A partition's log: an ordered list of segments, its offsets, and its durability.

Offsets a reader should know:
- log start offset: the first offset that may be read (advanced by retention and DeleteRecords);
- log end offset (LEO): the offset the next appended record gets;
- high watermark: set by replication (the log only keeps it within [log start, LEO]);
- recovery point: everything below it is known to be fsynced; recovery after an unclean
  shutdown re-validates the log from there.

A Log is not thread-safe: one event loop owns it, and fsyncs run on the caller's thread. The
one exception is `flush`: its owner may run it in a thread while leaving the log alone (the
metadata quorum's driver does, to keep fsyncs off the event loop), and two flushes (say that
one and the log manager's periodic `flush_if_due`) never overlap.
"""

from __future__ import annotations

import bisect
import shutil
import struct
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import structlog

from net.record_batch import (
    LOG_APPEND_TIME_BIT,
    LOG_OVERHEAD,
    NO_TIMESTAMP,
    BatchHeader,
    InvalidBatchError,
    RecordBatchError,
    RecordError,
    TimestampType,
    set_base_offset,
    set_log_append_time,
    set_partition_leader_epoch,
    validate_batch,
)
from net.records import RecordColumns, decode_batch_columns
from storage import durability
from storage.atomic_file import sync_replaced
from storage.cleaner_checkpoint import lower_first_dirty_offset
from storage.cleaner_swap import cleaned_path, swap_in
from storage.errors import (
    InvalidTimestampError,
    LogOfflineError,
    OffsetOutOfRangeError,
    RecordBatchTooLargeError,
    SegmentOverflowError,
    StorageIOError,
    UnexpectedAppendOffsetError,
)
from storage.leader_epoch_cache import EpochCheckpoints, LeaderEpochCache
from storage.log_loader import LogLoader
from storage.log_retention import segments_below, segments_past_retention
from storage.segment import (
    MAX_RELATIVE_OFFSET,
    MAX_SEGMENT_BYTES,
    BatchPlacement,
    Buffer,
    FileSlice,
    Segment,
)

log = structlog.get_logger(__name__)

# base_offset, batch_length, partition_leader_epoch: the 16 bytes before `magic`, rewritten
# when offsets are assigned; the rest of the batch is written straight from the caller's buffer.
_OFFSET_PREFIX = struct.Struct(">qii")
_PREFIX_SIZE = _OFFSET_PREFIX.size
_DAY_MS = 24 * 3600 * 1000
_LATEST_TIMESTAMP = 2**63 - 1
# Builds a NamedTuple from a tuple without its Python-level __new__: appends make two per call,
# and that __new__ costs more than the CRC of a 1 KiB batch.
_new_tuple = tuple.__new__


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True, slots=True)
class LogConfig:
    """Per-log settings, named after Kafka's topic configs (`segment.bytes`, ...).

    `flush_messages` / `flush_ms` of None mean "never by count / by time": the log is then
    fsynced only when a segment rolls (Kafka's default), and durability comes from replication.
    `retention_ms` / `retention_bytes` of None mean unlimited, and apply only when
    `cleanup_policy` holds "delete"; with "compact" the broker's cleaner compacts the log (see
    `storage.cleaner`), keeping tombstones `delete_retention_ms` and cleaning once the dirty part
    is `min_cleanable_dirty_ratio` of the cleanable part.
    """

    segment_bytes: int = 1024 * 1024 * 1024
    segment_ms: int = 7 * _DAY_MS
    index_interval_bytes: int = 4096
    flush_messages: int | None = None
    flush_ms: int | None = None
    retention_ms: int | None = 7 * _DAY_MS
    retention_bytes: int | None = None
    max_message_bytes: int = 1024 * 1024 + 12
    # KIP-937, with Kafka 4's defaults; None: no bound. LogAppendTime replaces the producer's
    # timestamps with the broker's clock, so the bounds apply to CreateTime only.
    message_timestamp_type: TimestampType = TimestampType.CREATE_TIME
    message_timestamp_before_max_ms: int | None = None
    message_timestamp_after_max_ms: int | None = 3600 * 1000
    cleanup_policy: frozenset[str] = frozenset({"delete"})
    delete_retention_ms: int = _DAY_MS
    min_cleanable_dirty_ratio: float = 0.5
    # How long a record stays uncompacted at least, and (None: no bound) at most.
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int | None = None

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    def __post_init__(self) -> None:
        checks = {
            "segment.bytes": 14 <= self.segment_bytes <= MAX_SEGMENT_BYTES,
            "segment.ms": self.segment_ms >= 1,
            "index.interval.bytes": self.index_interval_bytes >= 0,
            "flush.messages": self.flush_messages is None or self.flush_messages >= 1,
            "flush.ms": self.flush_ms is None or self.flush_ms >= 0,
            "retention.ms": self.retention_ms is None or self.retention_ms >= 0,
            "retention.bytes": self.retention_bytes is None or self.retention_bytes >= 0,
            "max.message.bytes": self.max_message_bytes >= 0,
            "message.timestamp.before.max.ms": self.message_timestamp_before_max_ms is None
            or self.message_timestamp_before_max_ms >= 0,
            "message.timestamp.after.max.ms": self.message_timestamp_after_max_ms is None
            or self.message_timestamp_after_max_ms >= 0,
            "cleanup.policy": bool(self.cleanup_policy)
            and self.cleanup_policy <= {"delete", "compact"},
            "delete.retention.ms": self.delete_retention_ms >= 0,
            "min.cleanable.dirty.ratio": 0 <= self.min_cleanable_dirty_ratio <= 1,
            "min.compaction.lag.ms": self.min_compaction_lag_ms >= 0,
            "max.compaction.lag.ms": self.max_compaction_lag_ms is None
            or self.max_compaction_lag_ms >= 1,
        }
        for key, valid in checks.items():
            if not valid:
                raise ValueError(f"invalid value for {key}")


class AppendInfo(NamedTuple):
    """What an append wrote: offsets are those assigned (leader) or kept (follower)."""

    first_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    batch_count: int
    record_count: int
    size: int


@dataclass(frozen=True, slots=True)
class ReadResult:
    """Whole batches (or None when there is nothing to read) plus the log's offsets."""

    records: FileSlice | None
    log_start_offset: int
    log_end_offset: int
    high_watermark: int


@dataclass(frozen=True, slots=True)
class TimestampLookup:
    """The first batch whose max timestamp is >= the target. Storage does not decode records;
    a caller that needs the exact record reads `batch` and searches inside it."""

    offset: int
    last_offset: int
    max_timestamp: int
    batch: FileSlice


class Log:
    """One partition's log in `directory`. Open it with `Log.open`."""

    def __init__(
        self,
        directory: Path,
        *,
        config: LogConfig,
        segments: list[Segment],
        epoch_cache: LeaderEpochCache,
        log_start_offset: int,
        recovery_point: int,
        high_watermark: int,
        clock: Callable[[], int],
    ) -> None:
        self.directory = directory
        self.config = config
        self._segments = segments
        self._base_offsets = [segment.base_offset for segment in segments]
        self.leader_epoch_cache = epoch_cache
        self._log_start_offset = log_start_offset
        self._log_end_offset = segments[-1].next_offset
        self._recovery_point = recovery_point
        self._high_watermark = high_watermark
        self._clock = clock
        self._unflushed_messages = 0
        self._last_flush_ms = clock()
        self._offline = False
        self._flush_lock = threading.Lock()
        self._truncations = 0
        # Files of the log's directory written without fsync that its first flush syncs.
        self._unsynced_files: list[Path] = []
        # Made empty by `create` in a new directory, and neither appended to nor restarted
        # elsewhere since: nothing of it, nor any file of its owner's, is on disk yet.
        self._never_written = False

    # -- opening ---------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        directory: Path,
        config: LogConfig | None = None,
        *,
        log_start_offset: int = 0,
        recovery_point: int = 0,
        high_watermark: int = 0,
        clean_shutdown: bool = False,
        clock: Callable[[], int] = wall_clock_ms,
        flush_recovered: bool = True,
    ) -> Log:
        """Open (or create) the log in `directory`, recovering it from `recovery_point` on
        unless `clean_shutdown` (see `storage.log_loader`); what survives a recovery is fsynced
        here unless `flush_recovered` is False. Unflushed, the recovered part stays above the
        recovery point (as in Kafka's LogLoader): it is as durable as it was before the crash,
        and a crash before its flush recovers it again."""
        config = config or LogConfig()
        loaded = LogLoader(
            directory,
            index_interval_bytes=config.index_interval_bytes,
            log_start_offset=log_start_offset,
            recovery_point=recovery_point,
            high_watermark=high_watermark,
            clean_shutdown=clean_shutdown,
        ).load()
        opened = cls(
            directory,
            config=config,
            segments=loaded.segments,
            epoch_cache=loaded.epoch_cache,
            log_start_offset=loaded.log_start_offset,
            recovery_point=loaded.recovery_point,
            high_watermark=loaded.high_watermark,
            clock=clock,
        )
        opened._delete_segments_below(loaded.log_start_offset)
        if not clean_shutdown and flush_recovered:
            opened.flush()
        # One of thousands a start opens (LogManager sums them up in one event; an event each
        # took seconds of a start recovering 10,000); a recovery that cut a segment warns.
        log.debug(
            "log_opened",
            directory=str(directory),
            clean_shutdown=clean_shutdown,
            log_start_offset=opened.log_start_offset,
            log_end_offset=opened.log_end_offset,
            recovery_point=opened.recovery_point,
            segments=len(opened.segments),
            latest_epoch=opened.latest_epoch,
        )
        return opened

    @classmethod
    def create(
        cls,
        directory: Path,
        config: LogConfig | None = None,
        *,
        clock: Callable[[], int] = wall_clock_ms,
        unsynced_files: Sequence[Path] = (),
    ) -> Log:
        """A new, empty log in `directory`, which the caller just made: nothing to list, load
        or recover there (`open` does that for a directory that may hold a log), and no
        segment file is made until the first append (`Segment.unwritten`).
        `unsynced_files`: files of the directory written without fsync that the log's first
        flush syncs (file and directory entry), before any of its batches is durable."""
        config = config or LogConfig()
        created = cls(
            directory,
            config=config,
            segments=[Segment.unwritten(directory, 0, config.index_interval_bytes)],
            epoch_cache=LeaderEpochCache.empty(directory),
            log_start_offset=0,
            recovery_point=0,
            high_watermark=0,
            clock=clock,
        )
        created._unsynced_files = list(unsynced_files)
        created._never_written = True
        return created

    # -- offsets ---------------------------------------------------------------------------

    @property
    def never_written(self) -> bool:
        """Whether the log was created empty by `create` in a directory just made, and has
        taken no batch (nor restarted at another offset) since: its directory holds no file
        but those `create` was given, so an owner has nothing of its own to load from it."""
        return self._never_written

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._log_end_offset

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    @property
    def recovery_point(self) -> int:
        return self._recovery_point

    @property
    def size_in_bytes(self) -> int:
        return sum(segment.size for segment in self._segments)

    @property
    def segment_base_offsets(self) -> list[int]:
        return list(self._base_offsets)

    @property
    def segments(self) -> tuple[Segment, ...]:
        """The segments, oldest first, the last one active: for storage's own maintenance (the
        cleaner) to read. They change only through the Log."""
        return tuple(self._segments)

    @property
    def active_segment_base_offset(self) -> int:
        """The base offset of the segment appends go to; it changes when the log rolls."""
        return self._base_offsets[-1]

    @property
    def latest_epoch(self) -> int | None:
        return self.leader_epoch_cache.latest_epoch

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """OffsetForLeaderEpoch's answer: `(epoch, end offset)`; see LeaderEpochCache."""
        return self.leader_epoch_cache.end_offset_for(epoch, self._log_end_offset)

    def start_leader_epoch(self, epoch: int, checkpoints: EpochCheckpoints | None = None) -> None:
        """Record that leader epoch `epoch` starts at the log end offset, if newer than the
        latest (a replica becoming leader, before its first append: Kafka's
        maybeAssignEpochStartOffset). A follower that fetched a deposed leader's later epoch
        then learns where this log ends its own epochs, and truncates there. With
        `checkpoints`, the leader-epoch checkpoint is written by its next `write`. On a log
        holding no batch, it is written by the first append instead."""
        self._check_online()
        latest_epoch = self.leader_epoch_cache.latest_epoch
        if latest_epoch is None or epoch > latest_epoch:
            if self._log_end_offset == self._log_start_offset:
                # No batch to tell apart by epoch: the first append writes the checkpoint, so
                # that creating thousands of led partitions costs no fsync for it.
                self.leader_epoch_cache.assign_unwritten(epoch, self._log_end_offset)
            elif checkpoints is None:
                self._assign_epoch(epoch, self._log_end_offset)
            else:
                checkpoints.assign(self.leader_epoch_cache, epoch, self._log_end_offset)

    def update_high_watermark(self, offset: int) -> int:
        """Set the high watermark, kept within [log start offset, log end offset]."""
        self._high_watermark = min(max(offset, self._log_start_offset), self._log_end_offset)
        return self._high_watermark

    # -- appending ---------------------------------------------------------------------------

    def append(
        self,
        records: bytes | bytearray | memoryview,
        leader_epoch: int,
        *,
        log_append_time_ms: int | None = None,
        before_write: Callable[[Sequence[BatchHeader]], None] | None = None,
    ) -> AppendInfo:
        """Append batches from a producer, as the leader of `leader_epoch`.

        Each batch is validated (header, CRC32C, offset delta against record count, size)
        without decoding its records; offsets are assigned from the log end offset by
        rewriting base offsets, and the partition leader epoch is stamped. With
        `log_append_time_ms` (the log's clock when its `message_timestamp_type` is
        LogAppendTime), batches become LogAppendTime with that max timestamp; otherwise their
        CreateTime timestamps must lie within the log's bounds around its clock
        (InvalidTimestampError). Any invalid batch refuses the whole append and nothing is
        written. `before_write` sees the validated headers (as sent) before anything is
        written; what it raises refuses the append, which writes nothing.
        """
        if self._offline:
            self._check_online()
        view = memoryview(records)
        headers = self._validate(view, from_producer=True)
        now = self._clock()
        if self.config.message_timestamp_type is TimestampType.LOG_APPEND_TIME:
            if log_append_time_ms is None:
                log_append_time_ms = now
        elif log_append_time_ms is None:
            self._check_timestamps(view, headers, now)
        if before_write is not None:
            before_write(headers)
        next_offset = self._log_end_offset
        buffers: list[Buffer] = []
        placements: list[BatchPlacement] = []
        position = 0
        for header in headers:
            base_offset = next_offset
            next_offset = base_offset + header.last_offset_delta + 1
            size = header.batch_length + LOG_OVERHEAD
            end = position + size
            max_timestamp = header.max_timestamp
            if log_append_time_ms is None:
                buffers.append(_OFFSET_PREFIX.pack(base_offset, header.batch_length, leader_epoch))
                buffers.append(view[position + _PREFIX_SIZE : end])
            else:
                batch = bytearray(view[position:end])
                set_base_offset(batch, 0, base_offset)
                set_partition_leader_epoch(batch, 0, leader_epoch)
                set_log_append_time(batch, 0, log_append_time_ms)
                buffers.append(batch)
                max_timestamp = log_append_time_ms
            placements.append(
                _new_tuple(BatchPlacement, (base_offset, next_offset, size, max_timestamp))
            )
            position = end
        latest_epoch = self.leader_epoch_cache.latest_epoch
        started = (latest_epoch is None or leader_epoch > latest_epoch) and (
            self.leader_epoch_cache.assign(leader_epoch, self._log_end_offset, persist=False)
        )
        self._write_epochs_before_batches(started)
        return self._write(buffers, placements, position, headers, now)

    def append_as_follower(
        self,
        records: bytes | bytearray | memoryview,
        *,
        before_write: Callable[[Sequence[BatchHeader]], None] | None = None,
    ) -> AppendInfo:
        """Append batches replicated from the leader, keeping their offsets and leader epochs.

        Every batch is validated; the first must start at or after the log end offset and
        offsets must increase. Nothing is written if any batch is refused. `before_write` sees
        the validated headers first, as in `append`.
        """
        self._check_online()
        view = memoryview(records)
        headers = self._validate(view, from_producer=False)
        if before_write is not None:
            before_write(headers)
        expected = self._log_end_offset
        placements = []
        for header in headers:
            if header.base_offset < expected:
                raise UnexpectedAppendOffsetError(
                    f"batch at offset {header.base_offset} does not continue the log at "
                    f"{expected} in {self.directory}"
                )
            expected = header.next_offset
            placements.append(
                BatchPlacement(
                    header.base_offset, header.next_offset, header.size, header.max_timestamp
                )
            )
        started = False
        for header in headers:
            if self.leader_epoch_cache.assign(
                header.partition_leader_epoch, header.base_offset, persist=False
            ):
                started = True
        self._write_epochs_before_batches(started)
        return self._write([view], placements, len(view), headers, self._clock())

    def _assign_epoch(self, epoch: int, start_offset: int) -> None:
        self._write_epoch_checkpoint(lambda: self.leader_epoch_cache.assign(epoch, start_offset))

    def _write_epoch_checkpoint(self, write: Callable[[], object]) -> None:
        """`write` the leader-epoch checkpoint; on a disk error the epochs starting at the log
        end, in memory though not on disk, are dropped again (nothing gets appended in them),
        and StorageIOError raised."""
        try:
            write()
        except OSError as error:
            self.leader_epoch_cache.truncate_from_end(self._log_end_offset, persist=False)
            raise StorageIOError(
                f"cannot write the leader-epoch checkpoint of {self.directory}: {error}",
                error.errno,
            ) from error

    def _write_epochs_before_batches(self, started: bool) -> None:
        """Write the leader-epoch checkpoint before batches that need it are written: those of
        an epoch they `started`, or the first of a log whose epoch is still only in memory
        (`start_leader_epoch` on an empty log). Without fsync (Kafka's too, since 3.7):
        `flush` syncs it before any of those batches is durable, and the recovery of batches a
        crash left unflushed assigns their epochs again. On a disk error the epochs the append
        started are dropped again and the append fails, nothing written."""
        if started or self.leader_epoch_cache.unpersisted:
            self._write_epoch_checkpoint(self.leader_epoch_cache.write_unsynced)

    def _validate(self, view: memoryview, *, from_producer: bool) -> list[BatchHeader]:
        total = len(view)
        if not total:
            raise InvalidBatchError("no record batch to append")
        max_message_bytes = self.config.max_message_bytes
        headers = []
        position = 0
        while position < total:
            header = validate_batch(view, position)
            size = header.batch_length + LOG_OVERHEAD
            if size > max_message_bytes:
                raise RecordBatchTooLargeError(
                    f"batch of {size} bytes exceeds max.message.bytes {max_message_bytes}"
                )
            if from_producer and header.last_offset_delta + 1 != header.record_count:
                raise InvalidBatchError(
                    f"last offset delta {header.last_offset_delta} does not match "
                    f"record count {header.record_count}"
                )
            if header.last_offset_delta > MAX_RELATIVE_OFFSET:
                raise InvalidBatchError(f"last offset delta {header.last_offset_delta} too large")
            headers.append(header)
            position += size
        if position > self.config.segment_bytes:
            raise SegmentOverflowError(
                f"append of {position} bytes exceeds segment.bytes {self.config.segment_bytes}"
            )
        return headers

    def _check_timestamps(
        self, records: memoryview, headers: Sequence[BatchHeader], now: int
    ) -> None:
        # Each record, as Kafka checks them, naming those at fault (KIP-467). A batch's max
        # timestamp bounds its records' from above, so without a lower bound (Kafka's default)
        # only a batch past the upper one is decoded; its first timestamp does not bound the
        # others (a producer may stamp its records in any order), so with a lower bound
        # (`message.timestamp.before.max.ms`) every batch is.
        before_max = self.config.message_timestamp_before_max_ms
        after_max = self.config.message_timestamp_after_max_ms
        earliest = -_LATEST_TIMESTAMP - 1 if before_max is None else now - before_max
        latest = _LATEST_TIMESTAMP if after_max is None else now + after_max
        refused: list[RecordError] = []
        position = 0
        for header in headers:
            if (before_max is not None or header.max_timestamp > latest) and not (
                header.attributes & LOG_APPEND_TIME_BIT
            ):
                columns = RecordColumns.empty(with_headers=False)
                decode_batch_columns(records, position, columns)
                refused.extend(
                    RecordError(
                        index,
                        f"Timestamp {timestamp} of message with offset {offset} is out of "
                        f"range. The timestamp should be within [{earliest}, {latest}]",
                    )
                    for index, (timestamp, offset) in enumerate(
                        zip(columns.timestamps, columns.offsets, strict=True)
                    )
                    if timestamp != NO_TIMESTAMP and not earliest <= timestamp <= latest
                )
            position += header.size
        if refused:
            raise InvalidTimestampError(
                "One or more records have been rejected due to invalid timestamp",
                tuple(refused),
            )

    def _write(
        self,
        buffers: list[Buffer],
        placements: list[BatchPlacement],
        size: int,
        headers: list[BatchHeader],
        now: int,
    ) -> AppendInfo:
        first_offset = placements[0].base_offset
        last_offset = placements[-1].next_offset - 1
        # Producers send one batch per partition: skip the general loop for that case.
        if len(placements) == 1:
            max_placement, record_count = placements[0], headers[0].record_count
        else:
            max_placement = max(placements, key=_max_timestamp_of)
            record_count = sum(header.record_count for header in headers)
        segment = self._segments[-1]
        try:
            if segment.size and (
                segment.size + size > self.config.segment_bytes
                or _time_waited_for_roll(segment, now, max_placement.max_timestamp)
                >= self.config.segment_ms
                or last_offset - segment.base_offset > MAX_RELATIVE_OFFSET
            ):
                # The new segment starts where the log ends, even when a follower's batch (of a
                # compacted leader) starts past it: segments stay contiguous, which is how
                # recovery tells a crash's cut from the log's own end.
                gap_fits = last_offset - self._log_end_offset <= MAX_RELATIVE_OFFSET
                segment = self._roll(self._log_end_offset if gap_fits else first_offset)
            segment.append(buffers, placements, size, now)
        except LogOfflineError:
            self._offline = True
            raise
        except StorageIOError:
            self.leader_epoch_cache.truncate_from_end(self._log_end_offset, persist=False)
            raise
        self._log_end_offset = last_offset + 1
        self._never_written = False
        self._unflushed_messages += record_count
        info = _new_tuple(
            AppendInfo,
            (
                first_offset,
                last_offset,
                max_placement.max_timestamp,
                max_placement.base_offset,
                len(placements),
                record_count,
                size,
            ),
        )
        flush_messages = self.config.flush_messages
        if flush_messages is not None and self._unflushed_messages >= flush_messages:
            self.flush()
        return info

    def roll(self) -> None:
        """Start a new segment at the log end offset (if the active one holds anything)."""
        self._check_online()
        if self._segments[-1].size:
            self._roll(self._log_end_offset)

    def _roll(self, base_offset: int) -> Segment:
        old = self._segments[-1]
        try:
            # Seal first: a failure then leaves no new segment file behind, which would sit
            # between the old segment and the next roll and misdirect reads after a reopen.
            old.seal()
            new = Segment.create(self.directory, base_offset, self.config.index_interval_bytes)
        except OSError as error:
            raise StorageIOError(f"cannot roll {self.directory}: {error}", error.errno) from error
        self._segments.append(new)
        self._base_offsets.append(base_offset)
        log.debug("segment_rolled", directory=str(self.directory), base_offset=base_offset)
        return new

    # -- reading ---------------------------------------------------------------------------

    def read(
        self,
        offset: int,
        max_bytes: int,
        *,
        max_offset: int | None = None,
        min_one_batch: bool = True,
    ) -> ReadResult:
        """Whole batches from the one containing `offset`, as a slice of one segment file.

        At most `max_bytes`, except that the first batch is returned whole when it is larger
        and `min_one_batch` is set (as Kafka does for the first partition of a fetch). Only
        batches entirely below `max_offset` (the high watermark, for consumers) are returned.
        Raises OffsetOutOfRangeError outside [log start offset, log end offset].
        """
        self._check_online()
        log_end_offset = self._log_end_offset
        if offset < self._log_start_offset or offset > log_end_offset:
            raise OffsetOutOfRangeError(
                f"offset {offset} is outside [{self._log_start_offset}, {log_end_offset}] "
                f"in {self.directory}"
            )
        limit = log_end_offset if max_offset is None else min(max_offset, log_end_offset)
        records = None
        for segment in self._segments_from(offset):
            if segment.base_offset >= limit:
                break
            found = segment.find(offset)
            if found is None:
                continue
            position_limit = segment.position_limit(limit)
            records = segment.slice_from(found, max_bytes, position_limit, min_one_batch)
            break
        return ReadResult(records, self._log_start_offset, log_end_offset, self._high_watermark)

    def bytes_from(self, offset: int) -> int:
        """The bytes of the log from the batch holding `offset` to its end: what a replica
        whose log ends at `offset` has still to copy (0 at or past the end, the whole log
        below its start). An index lookup and the sizes of the later segments, no scan."""
        if offset >= self._log_end_offset:
            return 0
        index = max(bisect.bisect_right(self._base_offsets, offset) - 1, 0)
        first = self._segments[index]
        found = None if offset < self._log_start_offset else first.find(offset)
        start = 0 if offset < self._log_start_offset else first.size if found is None else found[0]
        return first.size - start + sum(segment.size for segment in self._segments[index + 1 :])

    def _segments_from(self, offset: int) -> Iterator[Segment]:
        index = max(bisect.bisect_right(self._base_offsets, offset) - 1, 0)
        return iter(self._segments[index:])

    def batches(self, start_offset: int = 0) -> Iterator[tuple[FileSlice, BatchHeader]]:
        """Every batch of the log holding an offset >= `start_offset`, with its header, oldest
        first (rebuilding state from the log, tools and tests)."""
        for segment in self._segments_from(start_offset):
            for position, header in segment.batches():
                if header.last_offset >= start_offset:
                    yield FileSlice(segment.file, position, header.size), header

    def lookup_timestamp(self, timestamp: int) -> TimestampLookup | None:
        """The first batch, at or after the log start offset, whose max timestamp is >=
        `timestamp`, found through the time indexes. None if there is none."""
        self._check_online()
        for segment in self._segments:
            if segment.max_timestamp < timestamp:
                continue
            found = segment.find_by_timestamp(timestamp, self._log_start_offset)
            if found is None:
                continue
            position, header = found
            return TimestampLookup(
                offset=max(header.base_offset, self._log_start_offset),
                last_offset=header.last_offset,
                max_timestamp=header.max_timestamp,
                batch=FileSlice(segment.file, position, header.size),
            )
        return None

    # -- truncation and retention ---------------------------------------------------------

    def truncate_to(self, offset: int) -> None:
        """Remove every batch holding offsets >= `offset` (a follower's divergence).

        Truncation is by whole batches, so the new log end offset may be below `offset`, but
        never below the log start offset: a log left with no batch restarts empty there.

        With nothing to cut, the leader-epoch cache still forgets epochs starting at the log
        end: such an epoch is one this replica began as leader and never wrote in, and a
        follower that kept it would name it as its last fetched epoch, and be told the same
        divergence by its leader, on every fetch (Kafka's UnifiedLog.truncateTo does the same).
        """
        self._check_online()
        if offset >= self._log_end_offset:
            try:
                self.leader_epoch_cache.truncate_from_end(self._log_end_offset)
            except OSError as error:
                raise StorageIOError(
                    f"cannot write the leader-epoch checkpoint of {self.directory}: {error}",
                    error.errno,
                ) from error
            return
        if offset < self._log_start_offset:
            self.truncate_fully_and_start_at(offset)
            return
        try:
            while len(self._segments) > 1 and self._segments[-1].base_offset >= offset:
                self._segments.pop().delete()
                self._base_offsets.pop()
            self._segments[-1].truncate_to(offset)
        except OSError as error:
            self._offline = True
            raise LogOfflineError(f"truncation of {self.directory} failed: {error}") from error
        if self._segments[-1].next_offset < self._log_start_offset:
            # The batch spanning the log start went: the log is empty, and starts where it did.
            self.truncate_fully_and_start_at(self._log_start_offset)
            return
        self._after_truncation()
        log.info(
            "log_truncated",
            directory=str(self.directory),
            requested_offset=offset,
            log_end_offset=self._log_end_offset,
            latest_epoch=self.leader_epoch_cache.latest_epoch,
        )

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop the whole log and restart it, empty, at `offset` (log start = LEO = high
        watermark = offset)."""
        self._check_online()
        try:
            for segment in self._segments:
                segment.delete()
            new = Segment.create(self.directory, offset, self.config.index_interval_bytes)
        except OSError as error:
            self._offline = True
            raise LogOfflineError(f"truncation of {self.directory} failed: {error}") from error
        self._segments = [new]
        self._base_offsets = [offset]
        self._log_start_offset = offset
        self._never_written = False
        self.leader_epoch_cache.clear()
        self._after_truncation()
        # Nothing is left below `offset`, all of it committed or gone (Kafka sets it so too).
        self._high_watermark = offset
        log.info("log_truncated_fully", directory=str(self.directory), log_start_offset=offset)

    @property
    def truncations(self) -> int:
        """How many times the log was truncated since it was opened: work done on a snapshot of
        its segments (the cleaner's) is void if this changed meanwhile."""
        return self._truncations

    def _after_truncation(self) -> None:
        self._truncations += 1
        self._log_end_offset = self._segments[-1].next_offset
        # What is appended from here on is new: the cleaner must scan it as dirty.
        lower_first_dirty_offset(self.directory, self._log_end_offset)
        self.leader_epoch_cache.truncate_from_end(self._log_end_offset)
        self._high_watermark = min(self._high_watermark, self._log_end_offset)
        self._recovery_point = min(self._recovery_point, self._log_end_offset)
        self._unflushed_messages = 0
        durability.sync_directory(self.directory)

    def delete_records(self, offset: int) -> int:
        """Advance the log start offset to `offset` (DeleteRecords) and delete the segments
        wholly below it. `offset` may not pass the high watermark. Returns the log start."""
        self._check_online()
        if offset > self._high_watermark:
            raise OffsetOutOfRangeError(
                f"cannot move the log start offset to {offset}, above the high watermark "
                f"{self._high_watermark}"
            )
        if offset > self._log_start_offset:
            self._log_start_offset = offset
            log.info("log_start_offset_advanced", directory=str(self.directory), offset=offset)
            try:
                self.leader_epoch_cache.truncate_from_start(offset)
            except OSError as error:
                # The cache in memory is trimmed; a reopen trims the stale checkpoint again.
                raise StorageIOError(
                    f"cannot write the leader-epoch checkpoint of {self.directory}: {error}",
                    error.errno,
                ) from error
            self._delete_segments_below(offset)
        return self._log_start_offset

    def enforce_retention(self, now_ms: int | None = None) -> int:
        """Delete the oldest segments wholly below the log start offset, then those beyond
        `retention.ms` or `retention.bytes` when the cleanup policy holds "delete"; never the
        active segment nor data at or above the high watermark. Returns how many went."""
        self._check_online()
        now = self._clock() if now_ms is None else now_ms
        # Kafka's deleteLogStartOffsetBreachedSegments: a segment left behind by DeleteRecords
        # while it was still the active one goes once a later segment holds the log start.
        below = segments_below(self._base_offsets, self._log_start_offset)
        deleted = below + segments_past_retention(
            self._segments[below:],
            high_watermark=self._high_watermark,
            config=self.config,
            now_ms=now,
        )
        self._delete_oldest_segments(deleted)
        if deleted:
            log.info(
                "log_retention_deleted_segments",
                directory=str(self.directory),
                segments=deleted,
                log_start_offset=self._log_start_offset,
            )
        return deleted

    def _delete_segments_below(self, offset: int) -> None:
        # The segment holding `offset` stays (as does the active one).
        self._delete_oldest_segments(segments_below(self._base_offsets, offset))

    def _delete_oldest_segments(self, count: int) -> None:
        """Drop the `count` oldest segments (never the active one) and move the log start
        offset past them. They leave the log first: if the disk refuses to unlink their files,
        StorageIOError is raised with the log consistent without them (what is left of their
        files is deleted again by a reopen, once the log start checkpoint has passed them)."""
        if count <= 0:
            return
        doomed = self._segments[:count]
        del self._segments[:count]
        del self._base_offsets[:count]
        self._log_start_offset = max(self._log_start_offset, self._base_offsets[0])
        try:
            self.leader_epoch_cache.truncate_from_start(self._log_start_offset)
            for segment in doomed:
                segment.delete()
            durability.sync_directory(self.directory)
        except OSError as error:
            log.error(
                "log_segment_deletion_failed", directory=str(self.directory), error=str(error)
            )
            raise StorageIOError(
                f"cannot delete segments of {self.directory}: {error}", error.errno
            ) from error

    # -- compaction ---------------------------------------------------------------------------

    def replace_segments(self, cleaned: Path, replaced: Sequence[Segment]) -> Segment:
        """Swap the sealed segments `replaced` (consecutive, oldest first) for the one the
        cleaner wrote and fsynced at `cleaned` (`cleaner_swap.cleaned_path`), which holds the
        same offset range and ends with the same batch; see `storage.cleaner_swap` for how a
        crash at any point is undone or finished. A disk error once the swap has begun takes
        the log offline: only a reopen knows which of the two is on disk.
        """
        self._check_online()
        first = next(
            (index for index, segment in enumerate(self._segments) if segment is replaced[0]), -1
        )
        end = first + len(replaced)
        base_offset = replaced[0].base_offset
        if (
            first < 0
            or end >= len(self._segments)
            or any(a is not b for a, b in zip(self._segments[first:end], replaced, strict=True))
            or cleaned != cleaned_path(self.directory, base_offset)
        ):
            raise ValueError(f"{cleaned} cannot replace segments of {self.directory}")
        try:
            segment = swap_in(self.directory, cleaned, replaced, self.config.index_interval_bytes)
        except (OSError, RecordBatchError) as error:
            self._offline = True
            log.error("log_segment_swap_failed", directory=str(self.directory), error=str(error))
            raise LogOfflineError(f"segment swap in {self.directory} failed: {error}") from error
        self._segments[first:end] = [segment]
        self._base_offsets[first:end] = [base_offset]
        log.info(
            "log_segments_replaced",
            directory=str(self.directory),
            base_offset=base_offset,
            replaced=len(replaced),
            size=segment.size,
        )
        return segment

    # -- durability ---------------------------------------------------------------------------

    def flush(self, offset: int | None = None) -> None:
        """fsync every segment holding data below `offset` (default: the log end offset) and
        advance the recovery point to it. A failed fsync takes the log offline: the kernel may
        have dropped the dirty pages, so only a reopen with recovery can be trusted."""
        with self._flush_lock:
            self._check_online()
            target = self._log_end_offset if offset is None else min(offset, self._log_end_offset)
            # A new log's `partition.metadata` waits for a flush even while the log is empty:
            # the clean shutdown's flush makes it durable.
            if target <= self._recovery_point and not self._unsynced_files:
                return
            try:
                # What the batches depend on first: the files written without fsync.
                for path in self._unsynced_files:
                    sync_replaced(path)
                self._unsynced_files = []
                if self.leader_epoch_cache.unsynced:
                    self.leader_epoch_cache.persist()
                for segment in self._segments:
                    if segment.base_offset >= target:
                        break
                    segment.sync()
            except OSError as error:
                raise self._flush_failed("fsync", error) from error
            self._recovery_point = max(self._recovery_point, target)
            if target == self._log_end_offset:
                self._unflushed_messages = 0
            self._last_flush_ms = self._clock()

    def write_back(self) -> int:
        """Write what `flush` would make durable, without fsync: the indexes (the batches and
        the files written unsynced are in the page cache already). For a stop that syncs the
        whole file system after (`durability.FileSystemSync`) and then calls `synced_to` with
        the log end offset returned here."""
        with self._flush_lock:
            self._check_online()
            try:
                for segment in self._segments:
                    segment.write_back()
            except OSError as error:
                raise self._flush_failed("write", error) from error
            return self._log_end_offset

    def _flush_failed(self, what: str, error: OSError) -> LogOfflineError:
        """The log goes offline after a failed `what` (fsync or write) of a flush: the kernel
        may have dropped the dirty pages, so only a reopen with recovery can be trusted."""
        self._offline = True
        log.error("log_flush_failed", directory=str(self.directory), error=str(error))
        return LogOfflineError(f"{what} of {self.directory} failed: {error}")

    def synced_to(self, offset: int) -> None:
        """The file system holding this log was synced after a `write_back` that returned
        `offset`: everything below it is durable, as `flush(offset)` would have made it."""
        with self._flush_lock:
            if self._offline:
                return
            if offset == self._log_end_offset:
                # Nothing was appended since the write-back: all of it was synced.
                self._unsynced_files = []
                self.leader_epoch_cache.unsynced = False
                for segment in self._segments:
                    segment.synced()
                self._unflushed_messages = 0
            self._recovery_point = max(self._recovery_point, min(offset, self._log_end_offset))
            self._last_flush_ms = self._clock()

    def flush_if_due(self, now_ms: int | None = None) -> None:
        """Flush what policy says is due: sealed segments not yet fsynced (Kafka flushes a
        segment once it rolls), and everything when `flush.ms` has elapsed."""
        now = self._clock() if now_ms is None else now_ms
        flush_ms = self.config.flush_ms
        if flush_ms is not None and now - self._last_flush_ms >= flush_ms:
            self.flush()
        elif len(self._segments) > 1 and self._recovery_point < self._base_offsets[-1]:
            self.flush(self._base_offsets[-1])

    def close(self) -> None:
        """Write indexes and close files. Does not fsync: call flush first for that."""
        for segment in self._segments:
            segment.close()

    def delete(self) -> None:
        """Remove the log and its directory."""
        self.close()
        for path in self.directory.iterdir():
            durability.record_unlink(path)
        shutil.rmtree(self.directory, ignore_errors=True)
        durability.sync_directory(self.directory.parent)

    def _check_online(self) -> None:
        if self._offline:
            raise LogOfflineError(f"{self.directory} is offline after a disk error")

    @property
    def offline(self) -> bool:
        return self._offline


def _max_timestamp_of(placement: BatchPlacement) -> int:
    return placement.max_timestamp


def _time_waited_for_roll(segment: Segment, now_ms: int, max_timestamp: int) -> int:
    """How long the active segment has been open, as `segment.ms` counts it (Kafka's
    LogSegment.timeWaitedForRoll): from its first batch's max timestamp to that of the batches
    being appended, so that it survives restarts; when the first batch has no timestamp, by
    the clock since this process first appended to it."""
    if segment.first_batch_timestamp >= 0:
        return max_timestamp - segment.first_batch_timestamp
    first_append_ms = segment.first_append_ms
    return 0 if first_append_ms is None else now_ms - first_append_ms

"""One segment of a partition log: `<base offset>.log` with its `.index` and `.timeindex`.

The log file is a concatenation of RecordBatch v2 batches, each stored exactly as it will be
served. A segment never decodes records: it walks batch headers to find batch boundaries.
"""

from __future__ import annotations

import bisect
import contextlib
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import structlog

from net.record_batch import (
    HEADER_SIZE,
    NO_TIMESTAMP,
    BatchHeader,
    CorruptBatchError,
    RecordBatchError,
    read_header,
    validate_batch,
)
from storage import durability
from storage.errors import LogOfflineError, StorageIOError
from storage.index import OffsetIndex, TimeIndex
from storage.leader_epoch_cache import LeaderEpochCache

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
# A segment log file being written by the cleaner, not yet part of the log (Kafka's names).
CLEANED_SUFFIX = ".cleaned"
# A cleaned segment log file committed to replace older segments, not yet renamed into place.
SWAP_SUFFIX = ".swap"
# Relative offsets and positions are stored as uint32 in the indexes, as in Kafka.
MAX_RELATIVE_OFFSET = 2**31 - 1
MAX_SEGMENT_BYTES = 2**31 - 1
# How much to read at once when walking batch headers: a few index intervals.
_WALK_CHUNK = 16 * 1024
# How much to read at once when validating batches during recovery.
_RECOVERY_CHUNK = 1024 * 1024

log = structlog.get_logger(__name__)

Buffer = bytes | bytearray | memoryview


def segment_file_name(base_offset: int, suffix: str) -> str:
    return f"{base_offset:020d}{suffix}"


class SegmentFile:
    """An open log file. It stays open while any FileSlice refers to it, even once the segment
    has been deleted, so a slice handed to a Fetch response can always be read. Made with
    `opened=False`, it is not created (nor opened) yet: its segment holds nothing to read."""

    __slots__ = ("fd", "path")

    def __init__(self, path: Path, *, opened: bool = True) -> None:
        self.path = path
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644) if opened else -1

    def pread(self, size: int, position: int) -> bytes:
        if self.fd < 0:
            raise ValueError(f"{self.path} is closed")
        return os.pread(self.fd, size, position)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __del__(self) -> None:
        self.close()


@dataclass(frozen=True, slots=True)
class FileSlice:
    """`size` bytes at `position` of a segment file: whole batches, as a Fetch sends them.

    Reading copies them once from the page cache. Read it before yielding to the event loop
    if the log may be truncated meanwhile (a truncated region reads short, never garbage from
    another file).
    """

    file: SegmentFile
    position: int
    size: int

    def read(self) -> bytes:
        return self.file.pread(self.size, self.position)


class BatchPlacement(NamedTuple):
    """Where one batch of an append goes, computed by the log before writing."""

    base_offset: int
    next_offset: int
    size: int
    max_timestamp: int


class Segment:
    """A log segment. Not thread-safe: the owning Log serialises access.

    A segment made by `unwritten` has no file on disk until its first append creates its log
    file (and its close, with it, the index files): a new partition's log costs no segment
    file until it takes a batch, and a log that never took one has none."""

    def __init__(
        self, directory: Path, base_offset: int, index_interval_bytes: int, *, on_disk: bool = True
    ) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.log_path = directory / segment_file_name(base_offset, LOG_SUFFIX)
        self.file = SegmentFile(self.log_path, opened=on_disk)
        self.offset_index = OffsetIndex(directory / segment_file_name(base_offset, INDEX_SUFFIX))
        self.time_index = TimeIndex(directory / segment_file_name(base_offset, TIME_INDEX_SUFFIX))
        self.size = os.fstat(self.file.fd).st_size if on_disk else 0
        # No file yet (`unwritten`): the first append creates the log file.
        self._unwritten = not on_disk
        self.next_offset = base_offset
        self.max_timestamp = -1
        self.offset_of_max_timestamp = base_offset
        # When to roll by `segment.ms`, as Kafka times it: the max timestamp of the first batch
        # (known once appended, or loaded on open for the active segment), else the clock at
        # the first append made by this process.
        self.first_batch_timestamp = NO_TIMESTAMP
        self.first_append_ms: int | None = None
        self.flushed_size = 0
        self._bytes_since_index_entry = 0
        self._walked_to = 0
        # Whether the log file's name is durable (an unwritten segment has none to sync).
        self._name_synced = not on_disk
        # The batches after the last offset index entry (that batch included), which a lookup
        # would otherwise walk header by header: their base offset, last offsets and
        # positions. Consumers and followers at the end of the log look up there all the time.
        self._tail_base_offset = -1
        self._tail_last_offsets: list[int] = []
        self._tail_positions: list[int] = []

    # -- opening ---------------------------------------------------------------------------

    @classmethod
    def create(cls, directory: Path, base_offset: int, index_interval_bytes: int) -> Segment:
        """A new, empty segment (its files are created, replacing any stale ones of that base
        offset; the directory is synced on flush)."""
        for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX):
            with contextlib.suppress(FileNotFoundError):
                (directory / segment_file_name(base_offset, suffix)).unlink()
        return cls(directory, base_offset, index_interval_bytes)

    @classmethod
    def unwritten(cls, directory: Path, base_offset: int, index_interval_bytes: int) -> Segment:
        """A new, empty segment in a directory that holds no file of it (one just made, or
        a log directory holding no segment): no file is touched until its first append
        creates the log file. It reads as empty, and flushing or closing it writes nothing."""
        return cls(directory, base_offset, index_interval_bytes, on_disk=False)

    @classmethod
    def open_existing(cls, directory: Path, base_offset: int, index_interval_bytes: int) -> Segment:
        """Open a segment that was flushed: trust its data, load or rebuild its indexes, and
        walk from the last index entry to find its end offset and max timestamp."""
        segment = cls(directory, base_offset, index_interval_bytes)
        segment.flushed_size = segment.size
        segment._name_synced = True
        # A segment no larger than the index interval never took an index entry, and an index
        # with no entry may have no file (a clean stop writes none).
        small = segment.size <= index_interval_bytes
        # Every index entry points at a batch start, so strictly before the end of the file.
        loaded = segment.offset_index.load(
            max_value=segment.size - 1, missing_is_empty=small
        ) and segment.time_index.load(max_value=MAX_RELATIVE_OFFSET, missing_is_empty=small)
        if not loaded or not segment._load_tail():
            log.info("segment_index_rebuild", segment=str(segment.log_path))
            segment.rebuild_indexes()
        return segment

    def _load_tail(self) -> bool:
        """Set next offset and max timestamp from the indexes plus a walk to the end of file.
        Returns False if the indexes disagree with the log."""
        entry = self.offset_index.last
        position = 0 if entry is None else entry[1]
        last_time = self.time_index.last
        if last_time is not None:
            self.max_timestamp = last_time[0]
            self.offset_of_max_timestamp = self.base_offset + last_time[1]
        self._clear_tail()
        try:
            headers = self._walk(position)
            for index, (batch_position, header) in enumerate(headers):
                if (
                    index == 0
                    and entry is not None
                    and (header.base_offset != self.base_offset + entry[0])
                ):
                    return False
                self._observe_tail_batch(batch_position, header)
        except RecordBatchError:
            return False
        self._bytes_since_index_entry = self.size - position
        return self._walked_to == self.size

    def load_first_batch_timestamp(self) -> None:
        """Read the max timestamp of the first batch (what `segment.ms` counts from), for a
        segment that is to take appends after an open."""
        if self.size >= HEADER_SIZE:
            header = read_header(self.file.pread(HEADER_SIZE, 0), 0)
            self.first_batch_timestamp = header.max_timestamp

    def _observe_tail_batch(self, position: int, header: BatchHeader) -> None:
        self._add_to_tail(position, header.base_offset, header.last_offset)
        self.next_offset = header.next_offset
        self._walked_to = position + header.size
        if header.max_timestamp > self.max_timestamp:
            self.max_timestamp = header.max_timestamp
            self.offset_of_max_timestamp = header.base_offset

    def rebuild_indexes(self) -> None:
        """Recreate both indexes from the batch headers of the log file (trusted data)."""
        self.offset_index.clear()
        self.time_index.clear()
        self.next_offset = self.base_offset
        self.max_timestamp = -1
        self._bytes_since_index_entry = 0
        self._clear_tail()
        position = 0
        for batch_position, header in self._walk(0):
            self._index_batch(batch_position, header)
            self.next_offset = header.next_offset
            position = batch_position + header.size
        if position != self.size:
            raise RecordBatchError(f"{self.log_path}: batches end at {position} of {self.size}")
        self.offset_index.persist()
        self.time_index.persist()

    def recover(self, epoch_cache: LeaderEpochCache, start_offset: int) -> int:
        """Validate every batch (CRC included), rebuild the indexes, feed the epoch cache, and
        truncate the file (durably) at the first invalid, partial or out-of-order batch.

        `start_offset` is the lowest base offset the first batch may have. Returns how many
        bytes were truncated. A read the disk refuses raises StorageIOError and cuts nothing:
        data that could not be read is not known to be bad.
        """
        self.offset_index.clear()
        self.time_index.clear()
        self.next_offset = self.base_offset
        self.max_timestamp = -1
        self._bytes_since_index_entry = 0
        self._clear_tail()
        expected = max(start_offset, self.base_offset)
        position = 0
        try:
            for batch_position, header in self._validated_batches():
                if header.base_offset < expected or (
                    header.last_offset - self.base_offset > MAX_RELATIVE_OFFSET
                ):
                    break
                self._index_batch(batch_position, header)
                epoch_cache.assign(header.partition_leader_epoch, header.base_offset, persist=False)
                if not batch_position:
                    self.first_batch_timestamp = header.max_timestamp
                expected = self.next_offset = header.next_offset
                position = batch_position + header.size
        except OSError as error:
            log.error("segment_recovery_read_failed", segment=str(self.log_path), error=str(error))
            raise StorageIOError(
                f"{self.log_path}: recovery cannot read the segment: {error}", error.errno
            ) from error
        truncated = self.size - position
        if truncated:
            log.warning(
                "segment_truncated_in_recovery",
                segment=str(self.log_path),
                valid_bytes=position,
                truncated_bytes=truncated,
                next_offset=self.next_offset,
            )
            self.truncate_file(position)
        # The rebuilt indexes are written by the segment's next flush or close (the first
        # write cuts what the file held): until then a crash recovers the segment again, and
        # a start recovering thousands of logs saves two file writes each.
        return truncated

    def _validated_batches(self) -> Iterator[tuple[int, BatchHeader]]:
        """Fully validated batches from the start of the file; stops at the first bad one."""
        position = 0
        while position < self.size:
            chunk = self.file.pread(min(_RECOVERY_CHUNK, self.size - position), position)
            offset = 0
            while offset < len(chunk):
                try:
                    header = read_header(chunk, offset)
                except RecordBatchError:
                    if len(chunk) - offset >= HEADER_SIZE or position + len(chunk) >= self.size:
                        return
                    break
                if position + offset + header.size > self.size:
                    return
                if offset + header.size > len(chunk):
                    if offset == 0:
                        # One batch larger than the chunk: read it whole.
                        chunk = self.file.pread(header.size, position)
                        if len(chunk) < header.size:
                            return
                    else:
                        break
                try:
                    validate_batch(chunk, offset)
                except RecordBatchError:
                    return
                yield position + offset, header
                offset += header.size
            if offset == 0:
                return
            position += offset

    # -- appending ---------------------------------------------------------------------------

    def append(
        self,
        buffers: Sequence[Buffer],
        placements: Sequence[BatchPlacement],
        total_size: int,
        now_ms: int,
    ) -> None:
        """Write batches (already validated, with their final offsets) at the end of the file.

        A disk error raises StorageIOError once the file is cut back to its previous size, so a
        failed append leaves nothing behind; if even that cut fails, LogOfflineError.
        """
        if self._unwritten:
            self._create_file()
        start = self.size
        try:
            if len(buffers) > _IOV_MAX or os.writev(self.file.fd, buffers) != total_size:
                _finish_write(
                    self.file.fd, buffers, total_size, os.fstat(self.file.fd).st_size - start
                )
        except OSError as error:
            try:
                os.ftruncate(self.file.fd, start)
            except OSError as cleanup:
                raise LogOfflineError(
                    f"{self.log_path}: append failed ({error}) and could not be undone ({cleanup})"
                ) from cleanup
            raise StorageIOError(f"{self.log_path}: append failed: {error}", error.errno) from error
        if self.first_append_ms is None:
            self.first_append_ms = now_ms
            if not start:
                self.first_batch_timestamp = placements[0].max_timestamp
        position = start
        for placement in placements:
            self._index(
                position,
                placement.base_offset,
                placement.next_offset - 1,
                placement.size,
                placement.max_timestamp,
            )
            position += placement.size
        self.size = position
        self.next_offset = placements[-1].next_offset

    def _create_file(self) -> None:
        """Create the log file of an unwritten segment (its first append); its name becomes
        durable with the segment's next sync. StorageIOError if the disk refuses."""
        try:
            self.file = SegmentFile(self.log_path)
        except OSError as error:
            raise StorageIOError(
                f"{self.log_path}: cannot create the segment file: {error}", error.errno
            ) from error
        self._unwritten = False
        self._name_synced = False

    def _index_batch(self, position: int, header: BatchHeader) -> None:
        self._index(
            position, header.base_offset, header.last_offset, header.size, header.max_timestamp
        )

    def _index(
        self, position: int, base_offset: int, last_offset: int, size: int, max_timestamp: int
    ) -> None:
        if max_timestamp > self.max_timestamp:
            self.max_timestamp = max_timestamp
            self.offset_of_max_timestamp = base_offset
        if self._bytes_since_index_entry > self.index_interval_bytes:
            self.offset_index.append(base_offset - self.base_offset, position)
            self._maybe_append_time_entry()
            self._bytes_since_index_entry = 0
            self._tail_last_offsets = []
            self._tail_positions = []
        self._bytes_since_index_entry += size
        # _add_to_tail, inline: this runs once per appended batch.
        if not self._tail_positions:
            self._tail_base_offset = base_offset
        self._tail_last_offsets.append(last_offset)
        self._tail_positions.append(position)

    def _clear_tail(self) -> None:
        self._tail_base_offset = -1
        self._tail_last_offsets = []
        self._tail_positions = []

    def _add_to_tail(self, position: int, base_offset: int, last_offset: int) -> None:
        if not self._tail_positions:
            self._tail_base_offset = base_offset
        self._tail_last_offsets.append(last_offset)
        self._tail_positions.append(position)

    def _maybe_append_time_entry(self) -> None:
        last = self.time_index.last
        if self.max_timestamp >= 0 and (last is None or self.max_timestamp > last[0]):
            self.time_index.append(
                self.max_timestamp, self.offset_of_max_timestamp - self.base_offset
            )

    def seal(self) -> None:
        """The segment stops being active: record its final max timestamp and write indexes."""
        self._maybe_append_time_entry()
        self.offset_index.persist()
        self.time_index.persist()

    # -- reading ---------------------------------------------------------------------------

    def _walk(self, position: int) -> Iterator[tuple[int, BatchHeader]]:
        """Headers of consecutive batches from `position` (a batch start) to the end of file.
        Raises RecordBatchError at a header that does not parse."""
        self._walked_to = position
        while position + HEADER_SIZE <= self.size:
            chunk = self.file.pread(min(_WALK_CHUNK, self.size - position), position)
            offset = 0
            while offset + HEADER_SIZE <= len(chunk):
                header = read_header(chunk, offset)
                yield position + offset, header
                offset += header.size
            if not offset:
                raise CorruptBatchError(
                    f"{self.log_path}: {len(chunk)} bytes at {position}, expected a batch header"
                )
            position += offset

    def find(self, offset: int) -> tuple[int, BatchHeader] | None:
        """Position and header of the first batch whose last offset is >= `offset`."""
        if self._tail_positions and offset >= self._tail_base_offset:
            index = bisect.bisect_left(self._tail_last_offsets, offset)
            if index == len(self._tail_positions):
                return None
            position = self._tail_positions[index]
            return position, read_header(self.file.pread(HEADER_SIZE, position), 0)
        for attempt in range(2):
            entry = self.offset_index.floor(offset - self.base_offset)
            start = 0 if entry is None else entry[1]
            try:
                for index, (position, header) in enumerate(self._walk(start)):
                    if (
                        index == 0
                        and entry is not None
                        and (header.base_offset != self.base_offset + entry[0])
                    ):
                        raise RecordBatchError("offset index entry points off a batch start")
                    if header.last_offset >= offset:
                        return position, header
                return None
            except RecordBatchError:
                if attempt:
                    raise
                log.warning("segment_index_inconsistent", segment=str(self.log_path))
                self.rebuild_indexes()
        return None

    def position_limit(self, max_offset: int) -> int:
        """The end of the last whole batch whose offsets are all below `max_offset`."""
        if max_offset >= self.next_offset:
            return self.size
        found = self.find(max_offset)
        return self.size if found is None else found[0]

    def slice_from(
        self,
        found: tuple[int, BatchHeader],
        max_bytes: int,
        max_position: int,
        min_one_batch: bool,
    ) -> FileSlice | None:
        """Whole batches from the batch `found` (a `find` result), at most `max_bytes` of them
        (but at least one when `min_one_batch`), never past `max_position`. None if nothing
        qualifies."""
        start, header = found
        limit = min(self.size, max_position)
        if start + header.size > limit:
            return None
        if header.size > max_bytes:
            return FileSlice(self.file, start, header.size) if min_one_batch else None
        wanted_end = start + max_bytes
        if wanted_end >= limit:
            return FileSlice(self.file, start, limit - start)
        # Index entries sit on batch starts: jump to the last one that fits, then walk.
        entry = self.offset_index.floor_by_value(wanted_end)
        end = walk_from = start if entry is None or entry[1] < start else entry[1]
        for position, batch in self._walk(walk_from):
            if position + batch.size > wanted_end:
                break
            end = position + batch.size
        return FileSlice(self.file, start, end - start)

    def find_by_timestamp(
        self, timestamp: int, starting_offset: int = 0
    ) -> tuple[int, BatchHeader] | None:
        """The first batch holding offsets >= `starting_offset` whose max timestamp is >=
        `timestamp` (Kafka's LogSegment.findOffsetByTimestamp)."""
        entry = self.time_index.floor(timestamp)
        start_offset = self.base_offset if entry is None else self.base_offset + entry[1]
        found = self.find(max(start_offset, starting_offset))
        if found is None:
            return None
        for position, header in self._walk(found[0]):
            if header.max_timestamp >= timestamp:
                return position, header
        return None

    def batches(self) -> Iterator[tuple[int, BatchHeader]]:
        """Every batch header of the segment, in order."""
        return self._walk(0)

    # -- truncating, flushing, deleting -----------------------------------------------------

    def truncate_to(self, offset: int) -> None:
        """Remove every batch whose last offset is >= `offset` (whole batches only)."""
        found = self.find(offset)
        if found is None:
            return
        position = found[0]
        self.offset_index.truncate_to_value(position)
        self.time_index.truncate_to_value(found[1].base_offset - self.base_offset)
        self.truncate_file(position)
        self._reload_after_truncate()

    def truncate_file(self, position: int) -> None:
        """Cut the log file at `position`, durably: batches cut off must not come back after a
        power cut (a clean open trusts the file without validating it)."""
        os.ftruncate(self.file.fd, position)
        self.size = position
        durability.sync_file(self.file.fd, self.log_path)
        self.flushed_size = position

    def _reload_after_truncate(self) -> None:
        self.next_offset = self.base_offset
        self.max_timestamp = -1
        self.offset_of_max_timestamp = self.base_offset
        last_time = self.time_index.last
        if last_time is not None:
            self.max_timestamp = last_time[0]
            self.offset_of_max_timestamp = self.base_offset + last_time[1]
        entry = self.offset_index.last
        walk_from = 0 if entry is None else entry[1]
        self._clear_tail()
        for position, header in self._walk(walk_from):
            self._observe_tail_batch(position, header)
        self._bytes_since_index_entry = self.size - walk_from
        if self.size == 0:
            self.first_append_ms = None
            self.first_batch_timestamp = NO_TIMESTAMP
        self.offset_index.persist()
        self.time_index.persist()

    def sync(self) -> None:
        """fsync the log file and indexes (and, the first time, the directory entry)."""
        size = self.size
        if size == self.flushed_size and self._name_synced:
            return
        if size != self.flushed_size:
            durability.sync_file(self.file.fd, self.log_path)
        self.offset_index.sync()
        self.time_index.sync()
        if not self._name_synced:
            durability.sync_directory(self.directory)
            self._name_synced = True
        self.flushed_size = size

    def write_back(self) -> None:
        """What `sync` makes durable, written without fsync (the log file's bytes are in the
        page cache already; the indexes are written here): for a sync of the whole file
        system, after which `synced` records it."""
        if self.size == self.flushed_size and self._name_synced:
            return
        self.offset_index.write_back()
        self.time_index.write_back()

    def synced(self) -> None:
        """The segment as `write_back` left it (nothing appended since) is durable, its name
        included: its file system was synced."""
        self.offset_index.synced()
        self.time_index.synced()
        self._name_synced = True
        self.flushed_size = self.size

    def close(self) -> None:
        """Write the indexes and close the log file (an unwritten segment has neither)."""
        if self._unwritten:
            return
        self.offset_index.persist()
        self.time_index.persist()
        self.file.close()

    def delete(self) -> None:
        """Unlink the files. Slices already handed out stay readable until dropped."""
        for path in (self.log_path, self.offset_index.path, self.time_index.path):
            try:
                path.unlink()
            except FileNotFoundError:
                continue
            durability.record_unlink(path)


def _finish_write(fd: int, buffers: Sequence[Buffer], total_size: int, written: int) -> None:
    """Write what a short (or skipped, when there are too many buffers) writev left over."""
    remaining = memoryview(b"".join(buffers))[written:total_size]
    while remaining:
        remaining = remaining[os.write(fd, remaining) :]


_IOV_MAX = os.sysconf("SC_IOV_MAX") if hasattr(os, "sysconf") else 1024

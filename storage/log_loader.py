"""Loading a partition's log from its directory, and recovery after an unclean shutdown.

After a clean shutdown the segments are trusted as they are, and loading a log costs one
listing of its directory plus the reads of its checkpoint and active segment's indexes (a node
hosting thousands of logs opens them all at start). Otherwise every segment from the
one holding the recovery point on is validated batch by batch (CRC included) and the log is cut
at the first bad batch. A segment swap of the cleaner that a crash interrupted is first rolled
back or finished (see `storage.cleaner_swap`). The leader-epoch cache is loaded from its
checkpoint, or rebuilt from the batches when there is none, and kept within the log's offsets.

`Log.open` runs a LogLoader and builds the Log from what it loaded.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import structlog

from net.record_batch import RecordBatchError
from storage import durability
from storage.cleaner_swap import finish_interrupted_swaps, interrupted_swap_in
from storage.leader_epoch_cache import LeaderEpochCache
from storage.segment import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, Segment

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class LoadedLog:
    """What a log directory holds once loaded: its segments (oldest first, at least one), its
    epoch cache, and the checkpointed offsets kept within the segments' offsets. Segments
    wholly below `log_start_offset` may remain: the Log deletes them."""

    segments: list[Segment]
    epoch_cache: LeaderEpochCache
    log_start_offset: int
    recovery_point: int
    high_watermark: int


class LogLoader:
    """Loads the log in `directory` (creating it if need be), given the offsets its owner
    checkpointed and whether the node shut down cleanly."""

    def __init__(
        self,
        directory: Path,
        *,
        index_interval_bytes: int,
        log_start_offset: int,
        recovery_point: int,
        high_watermark: int,
        clean_shutdown: bool,
    ) -> None:
        self._directory = directory
        self._interval = index_interval_bytes
        self._log_start_offset = log_start_offset
        self._recovery_point = recovery_point
        self._high_watermark = high_watermark
        self._clean_shutdown = clean_shutdown

    def load(self) -> LoadedLog:
        directory = self._directory
        names = _list_directory(directory)
        if interrupted_swap_in(names):
            finish_interrupted_swaps(directory)
            names = _list_directory(directory)
        base_offsets = _discover_segments(directory, names)
        cached_epochs = LeaderEpochCache.load(directory)
        epoch_cache = cached_epochs or LeaderEpochCache.empty(directory)
        epochs_on_disk = epoch_cache.entries
        segments = self._load_segments(base_offsets, epoch_cache)
        log_end_offset = segments[-1].next_offset
        if cached_epochs is None:
            _rebuild_epoch_cache(epoch_cache, segments)
        epoch_cache.truncate_from_end(log_end_offset, persist=False)
        start = min(max(self._log_start_offset, segments[0].base_offset), log_end_offset)
        epoch_cache.truncate_from_start(start, persist=False)
        # A new log has no checkpoint and nothing to write in one: its first epoch writes it.
        if epoch_cache.entries != epochs_on_disk or (
            cached_epochs is None and epoch_cache.checkpoint_exists
        ):
            epoch_cache.persist()
        # What lies below the recovery point was fsynced before the crash, and a recovery that
        # re-validated it kept it as it was (a cut below it lowers the point to the log end):
        # the point stays, as in Kafka's LogLoader, also when the recovered tail is not flushed.
        return LoadedLog(
            segments=segments,
            epoch_cache=epoch_cache,
            log_start_offset=start,
            recovery_point=min(self._recovery_point, log_end_offset),
            high_watermark=min(max(self._high_watermark, start), log_end_offset),
        )

    def _load_segments(
        self, base_offsets: list[int], epoch_cache: LeaderEpochCache
    ) -> list[Segment]:
        """The segments that survive recovery (a new empty one if none does)."""
        directory = self._directory
        interval = self._interval
        segments: list[Segment] = []
        recovered = False
        for index, base_offset in enumerate(base_offsets):
            next_base = base_offsets[index + 1] if index + 1 < len(base_offsets) else None
            trusted = self._clean_shutdown or (
                next_base is not None and next_base <= self._recovery_point
            )
            segment = None
            if trusted and not recovered:
                try:
                    segment = Segment.open_existing(directory, base_offset, interval)
                except (RecordBatchError, OSError) as error:
                    log.warning(
                        "segment_untrusted",
                        segment=base_offset,
                        directory=str(directory),
                        error=str(error),
                    )
            if segment is None:
                if recovered:
                    # Data after a cut cannot be trusted to continue the log.
                    _delete_segment_files(directory, base_offset)
                    continue
                segment = Segment(directory, base_offset, interval)
                expected = segments[-1].next_offset if segments else base_offset
                recovered = segment.recover(epoch_cache, expected) > 0 or (
                    # A segment rolled where the next one starts: ending short of it means a
                    # cut between batches lost its tail, and later segments leave a hole.
                    next_base is not None and segment.next_offset != next_base
                )
                if segment.size == 0 and segments:
                    segment.file.close()
                    _delete_segment_files(directory, base_offset)
                    continue
            segments.append(segment)
        if not segments:
            # No segment file (a log that never took a batch): none is made before one does.
            segments.append(Segment.unwritten(directory, self._log_start_offset, interval))
        segments[-1].load_first_batch_timestamp()
        return segments


def _list_directory(directory: Path) -> list[str]:
    """The names of the files in `directory`, created empty if missing."""
    try:
        return os.listdir(directory)
    except FileNotFoundError:
        directory.mkdir(parents=True, exist_ok=True)
        return []


def _discover_segments(directory: Path, names: list[str]) -> list[int]:
    """Base offsets of the segments among the files `names` of `directory`; stray temporary
    and orphan index files go."""
    bases = set()
    split = [(name, *os.path.splitext(name)) for name in names]
    for name, stem, suffix in split:
        if suffix == ".tmp":
            (directory / name).unlink()
        elif suffix == LOG_SUFFIX and stem.isdigit():
            bases.add(int(stem))
    for name, stem, suffix in split:
        if suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX) and (
            not stem.isdigit() or int(stem) not in bases
        ):
            (directory / name).unlink()
    return sorted(bases)


def _delete_segment_files(directory: Path, base_offset: int) -> None:
    for path in directory.glob(f"{base_offset:020d}.*"):
        if path.suffix == ".snapshot":
            # The broker's producer-state snapshot at this offset is not the segment's: it may
            # be the newest state there is (its owner drops those above the log end itself).
            continue
        path.unlink()
        durability.record_unlink(path)


def _rebuild_epoch_cache(cache: LeaderEpochCache, segments: list[Segment]) -> None:
    """Every batch carries its partition leader epoch: replay them into the cache."""
    # Recovery may already have fed it the epochs of the later segments, and `assign` ignores
    # epochs older than the latest: start from nothing so the early epochs are not lost.
    cache.clear(persist=False)
    for segment in segments:
        for _, header in segment.batches():
            cache.assign(header.partition_leader_epoch, header.base_offset, persist=False)

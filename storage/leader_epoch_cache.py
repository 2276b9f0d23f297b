"""The leader-epoch cache of one partition: `epoch -> start offset`, checkpointed to disk.

Each entry says "leader epoch E wrote its first batch at offset O". A replica uses it to answer
"where does epoch E end in your log?" (OffsetForLeaderEpoch, and the diverging-epoch answer of
Fetch), which is how a follower finds where its log diverges from the leader's and truncates
only there instead of at its high watermark (reference: hw-leo-leader-epoch.txt).
"""

from __future__ import annotations

import bisect
import itertools
from dataclasses import dataclass
from pathlib import Path

import structlog

from storage.atomic_file import replace_unsynced, write_all_atomically, write_atomically
from storage.checkpoint_file import CheckpointFormatError, checkpoint_bytes, read_checkpoint

CHECKPOINT_NAME = "leader-epoch-checkpoint"
UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class EpochEntry:
    epoch: int
    start_offset: int


class LeaderEpochCache:
    """Entries kept sorted by epoch and by start offset (both strictly increasing)."""

    def __init__(self, checkpoint_path: Path, entries: list[EpochEntry]) -> None:
        self._checkpoint_path = checkpoint_path
        self._entries = entries
        # Whether the entries differ from the checkpoint by an epoch started where the log
        # ends with nothing written in it yet (`assign_unwritten`).
        self.unpersisted = False
        # Whether the checkpoint was written without fsync (`write_unsynced`).
        self.unsynced = False

    @classmethod
    def load(cls, partition_dir: Path) -> LeaderEpochCache | None:
        """Read the checkpoint in `partition_dir`; None if it is missing or unreadable, in which
        case the caller rebuilds the cache from the batches of the log."""
        path = partition_dir / CHECKPOINT_NAME
        try:
            rows = read_checkpoint(path, fields=2)
        except CheckpointFormatError as error:
            log.warning("leader_epoch_checkpoint_unreadable", path=str(path), error=str(error))
            return None
        if rows is None:
            return None
        entries = [EpochEntry(int(epoch), int(offset)) for epoch, offset in rows]
        for before, after in itertools.pairwise(entries):
            if after.epoch <= before.epoch or after.start_offset < before.start_offset:
                log.warning("leader_epoch_checkpoint_unordered", path=str(path))
                return None
        return cls(path, entries)

    @classmethod
    def empty(cls, partition_dir: Path) -> LeaderEpochCache:
        return cls(partition_dir / CHECKPOINT_NAME, [])

    @property
    def checkpoint_exists(self) -> bool:
        return self._checkpoint_path.exists()

    @property
    def entries(self) -> list[EpochEntry]:
        return list(self._entries)

    @property
    def latest_epoch(self) -> int | None:
        return self._entries[-1].epoch if self._entries else None

    def assign(self, epoch: int, start_offset: int, *, persist: bool = True) -> bool:
        """Record that `epoch` starts at `start_offset`, if `epoch` is newer than the latest.

        Older or equal epochs are ignored: appends and recovery replay batches in offset order,
        so a batch of an older epoch is one whose epoch is already recorded. Entries starting
        at or after `start_offset` conflict with the new one and are dropped, as Kafka does.
        Returns whether the cache changed.
        """
        if epoch < 0:
            return False
        latest = self._entries[-1] if self._entries else None
        if latest is not None and epoch <= latest.epoch:
            return False
        self._entries = [entry for entry in self._entries if entry.start_offset < start_offset]
        self._entries.append(EpochEntry(epoch, start_offset))
        if persist:
            self.persist()
        return True

    def assign_unwritten(self, epoch: int, start_offset: int) -> None:
        """`assign` in memory only, for an epoch started at the end of a log that holds no
        batch (a new replica becoming leader). Its checkpoint is left to the log's first
        append (which persists it before writing: `unpersisted`): until then the entry says
        nothing a restart could need, as an epoch starting at a log's end with nothing
        written in it is dropped by the next truncation anyway, and a restarted broker leads
        nothing before the controller gives it a newer epoch."""
        if self.assign(epoch, start_offset, persist=False):
            self.unpersisted = True

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        """`(epoch, end offset)` for OffsetForLeaderEpoch, as Kafka defines it.

        For the latest epoch, the log end offset. For an older epoch E, the start offset of the
        first epoch after E, paired with the largest epoch <= E this replica knows. For an epoch
        newer than any known, or with an empty cache, (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET).
        """
        if epoch == UNDEFINED_EPOCH or not self._entries:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if epoch == self._entries[-1].epoch:
            return epoch, log_end_offset
        epochs = [entry.epoch for entry in self._entries]
        higher = bisect.bisect_right(epochs, epoch)
        if higher == len(epochs):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if higher == 0:
            return epoch, self._entries[0].start_offset
        return self._entries[higher - 1].epoch, self._entries[higher].start_offset

    def epoch_for_offset(self, offset: int) -> int | None:
        """The leader epoch that wrote `offset`, if the cache covers it."""
        starts = [entry.start_offset for entry in self._entries]
        index = bisect.bisect_right(starts, offset)
        return self._entries[index - 1].epoch if index else None

    def truncate_from_end(self, end_offset: int, *, persist: bool = True) -> None:
        """Forget epochs that start at or after `end_offset` (the log was truncated there)."""
        kept = [entry for entry in self._entries if entry.start_offset < end_offset]
        if len(kept) != len(self._entries):
            self._entries = kept
            if persist:
                self.persist()

    def truncate_from_start(self, start_offset: int, *, persist: bool = True) -> None:
        """Drop epochs wholly below `start_offset`; the one spanning it now starts there."""
        starts = [entry.start_offset for entry in self._entries]
        index = bisect.bisect_right(starts, start_offset)
        if index == 0:
            return
        spanning = self._entries[index - 1]
        if index == 1 and spanning.start_offset == start_offset:
            return
        self._entries = [EpochEntry(spanning.epoch, start_offset), *self._entries[index:]]
        if persist:
            self.persist()

    def clear(self, *, persist: bool = True) -> None:
        self._entries = []
        if persist:
            self.persist()

    @property
    def checkpoint_path(self) -> Path:
        return self._checkpoint_path

    def checkpoint(self) -> bytes:
        """The checkpoint file's content for the current entries."""
        return checkpoint_bytes((entry.epoch, entry.start_offset) for entry in self._entries)

    def persist(self) -> None:
        write_atomically(self._checkpoint_path, self.checkpoint())
        self.unpersisted = False
        self.unsynced = False

    def write_unsynced(self) -> None:
        """Write the checkpoint with no fsync: what the log's first batch needs on disk as it
        is written (a process crash keeps it). A power cut may lose it, and the batch with
        it unless flushed, so the log `persist`s it before its first flush; recovery of
        unflushed batches assigns their epochs again."""
        replace_unsynced(self._checkpoint_path, self.checkpoint())
        self.unpersisted = False
        self.unsynced = True


class EpochCheckpoints:
    """Epochs assigned to many caches in memory, then checkpointed together: the checkpoints
    are written with their fsyncs in parallel (`write_all_atomically`), so that a broker that
    becomes leader of thousands of partitions at once does not fsync them one after another.

    Until `write` returns, the added epochs are not durable: the caller must not append to
    those logs before (the replica manager writes them in the same step that assigned them,
    with no other task running in between)."""

    def __init__(self) -> None:
        self._added: dict[Path, tuple[LeaderEpochCache, int]] = {}

    def assign(self, cache: LeaderEpochCache, epoch: int, start_offset: int) -> None:
        """`cache.assign(epoch, start_offset)`, its checkpoint written by the next `write`."""
        if cache.assign(epoch, start_offset, persist=False):
            self._added[cache.checkpoint_path] = (cache, start_offset)

    def write(self) -> None:
        """Write the checkpoint of every cache assigned an epoch since the last `write`. A
        cache whose checkpoint cannot be written forgets the epoch again (as a failed
        `assign` with persist does), so that the first append starts it instead."""
        added, self._added = self._added, {}
        failed = write_all_atomically(
            {path: cache.checkpoint() for path, (cache, _) in added.items()}
        )
        for path, error in failed.items():
            cache, start_offset = added[path]
            cache.truncate_from_end(start_offset, persist=False)
            log.error("leader_epoch_checkpoint_failed", path=str(path), error=str(error))

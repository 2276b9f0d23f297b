"""Snapshots of a partition's producer state, kept in its log directory beside the segments.

`<offset as 20 digits>.snapshot` holds the producer state after every batch below that offset
(the layout is `ProducerStateManager.to_snapshot`'s). A replica opening its log loads the
newest one at or below its log end offset and replays only the batches after it, instead of
every batch header of the log (Kafka's ProducerStateManager does the same). Snapshots are an
optimisation: a missing or corrupt one only means replaying more of the log.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import structlog

from broker.producer_state import CorruptSnapshotError, ProducerStateManager
from storage.atomic_file import remove_durably, replace_unsynced, write_atomically

SNAPSHOT_SUFFIX = ".snapshot"
# The newest is what a reopen uses; the one before it is what a truncation below the newest,
# or a newest one found corrupt, falls back to.
SNAPSHOTS_RETAINED = 2

log = structlog.get_logger(__name__)

# The snapshots taken when a log rolls are written here, off the event loop (each is a file
# fsynced, renamed and its directory fsynced: milliseconds every produce and fetch of the node
# would wait out). One thread, so that they reach the disk in the order they were taken.
_WRITER = ThreadPoolExecutor(1, thread_name_prefix="producer-snapshots")


def snapshot_writer() -> ThreadPoolExecutor:
    """The one thread writing the snapshots taken at rolls, in order."""
    return _WRITER


class ProducerSnapshots:
    """The producer-state snapshot files of the log in `directory`."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def path(self, offset: int) -> Path:
        """The file of the snapshot at `offset`."""
        return self.directory / f"{offset:020d}{SNAPSHOT_SUFFIX}"

    def offsets(self) -> list[int]:
        """The offsets of the snapshots on disk, oldest first."""
        return sorted(
            int(path.stem)
            for path in self.directory.iterdir()
            if path.suffix == SNAPSHOT_SUFFIX and path.stem.isdigit()
        )

    def write(self, offset: int, state: ProducerStateManager, *, durable: bool = True) -> None:
        """Save `state` as the state after every batch below `offset`, atomically and durably,
        then delete all but the newest SNAPSHOTS_RETAINED snapshots. Raises OSError.

        Not `durable`: with no fsync, for a stop whose sync of the whole file system follows
        (a power cut before it may leave the snapshot missing or corrupt, which costs a longer
        replay at the next open, never a wrong state)."""
        self._write_encoded(offset, state.to_snapshot(), durable=durable)

    def write_later(
        self, offset: int, state: ProducerStateManager, log_start_offset: int
    ) -> Future[None]:
        """`write` then `delete_below(log_start_offset)` on the snapshot writer thread, after
        every snapshot taken before this one; `state` is read now. The future raises
        OSError if the write failed."""
        encoded = state.to_snapshot()

        def write() -> None:
            self._write_encoded(offset, encoded)
            self.delete_below(log_start_offset)

        return _WRITER.submit(write)

    def _write_encoded(self, offset: int, encoded: bytes, *, durable: bool = True) -> None:
        if durable:
            write_atomically(self.path(offset), encoded)
        else:
            replace_unsynced(self.path(offset), encoded)
        for old in self.offsets()[:-SNAPSHOTS_RETAINED]:
            self._remove(old, durable=durable)

    def _remove(self, offset: int, *, durable: bool = True) -> None:
        if durable:
            remove_durably(self.path(offset))
        else:
            self.path(offset).unlink(missing_ok=True)

    def load(self, log_start: int, log_end: int) -> tuple[int, ProducerStateManager] | None:
        """The newest readable snapshot within [`log_start`, `log_end`] with its offset (None
        if there is none), once those outside are deleted: above the log end they count
        batches the log lost, below its start batches it no longer holds. One listing of the
        directory (a start loads thousands of logs)."""
        within = []
        for offset in self.offsets():
            if log_start <= offset <= log_end:
                within.append(offset)
            else:
                remove_durably(self.path(offset))
        return self._newest_readable(within)

    def latest(self, at_or_below: int) -> tuple[int, ProducerStateManager] | None:
        """The newest readable snapshot at or below `at_or_below` with its offset; None if
        there is none. A corrupt one is logged and deleted, and the next older one tried."""
        return self._newest_readable([o for o in self.offsets() if o <= at_or_below])

    def _newest_readable(self, offsets: list[int]) -> tuple[int, ProducerStateManager] | None:
        for offset in reversed(offsets):
            path = self.path(offset)
            try:
                return offset, ProducerStateManager.from_snapshot(path.read_bytes())
            except CorruptSnapshotError as error:
                log.warning("producer_snapshot_corrupt", path=str(path), error=str(error))
                remove_durably(path)
        return None

    def delete_below(self, offset: int, *, durable: bool = True) -> None:
        """Delete the snapshots below `offset` (the log start offset: their state describes
        batches the log no longer holds); not `durable`: with no sync of the directory."""
        for found in self.offsets():
            if found < offset:
                self._remove(found, durable=durable)

    def delete_all(self) -> None:
        """Delete every snapshot (the log was emptied and restarted)."""
        for found in self.offsets():
            remove_durably(self.path(found))

"""The metadata log on disk, as the Raft state machine's log operations change it.

`MetadataLog` is the storage half of the Raft driver: the `__cluster_metadata-0` storage log
(one record batch per entry, so entry and batch boundaries coincide) and the snapshot files
beside it. It applies a `Ready`'s log operations as the state machine's contract defines them
(`kraft.raft`), reads the entries back at start-up, and checks that the storage log holds
exactly the offsets the state machine believes it does. It is synchronous and owns no socket
or clock, so the seeded quorum simulation drives this same code over real files.
"""

from __future__ import annotations

from pathlib import Path

from kraft.messages import Entry
from kraft.raft import Append, DeleteBefore, LoadSnapshot, LogOp, SnapshotChunkToWrite, Truncate
from kraft.snapshot_file import SnapshotStore
from kraft.wire import decode_entries, encode_entries
from storage.log import Log


class MetadataLogDivergedError(Exception):
    """The metadata log on disk no longer holds what the quorum state machine says it does."""


class MetadataLog:
    """The storage log `log` of the metadata partition and the snapshots in its directory."""

    def __init__(self, log: Log) -> None:
        self.log = log
        self.snapshots = SnapshotStore(Path(log.directory))

    def entries(self) -> list[Entry]:
        """Every entry of the storage log, oldest first (start-up: the state machine's log).
        The segment holding the log start may begin below it; the state machine drops those
        entries against its snapshot."""
        found: list[Entry] = []
        for batch, _ in self.log.batches():
            found.extend(decode_entries(batch.read()))
        return found

    def apply(self, operation: LogOp) -> None:
        """Apply one log operation of a `Ready`."""
        if isinstance(operation, Truncate):
            self.log.truncate_to(operation.offset)
        elif isinstance(operation, Append):
            if operation.entries:
                self.log.append_as_follower(encode_entries(operation.entries))
        elif isinstance(operation, DeleteBefore):
            self._delete_before(operation.offset)
        elif isinstance(operation, SnapshotChunkToWrite):
            self.snapshots.write_chunk(operation.snapshot_id, operation.position, operation.data)
        elif isinstance(operation, LoadSnapshot):
            # The fetched snapshot becomes durable and the latest; the log restarts at its end.
            self.snapshots.complete(operation.snapshot_id, operation.size)
            self.log.truncate_fully_and_start_at(operation.snapshot_id.end_offset)

    def _delete_before(self, offset: int) -> None:
        """The log starts at `offset` now: a snapshot holds everything below it."""
        if self.log.log_end_offset < offset:
            self.log.truncate_fully_and_start_at(offset)
            return
        # Storage refuses to move the log start above its high watermark, which the driver
        # only updates after sending; a snapshot covers committed entries only.
        self.log.update_high_watermark(max(self.log.high_watermark, offset))
        # Roll first, so the segment holding the deleted prefix is sealed: the next
        # DeleteBefore (if not this one) frees it whole.
        self.log.roll()
        self.log.delete_records(offset)

    def check_holds(self, log_start_offset: int, log_end_offset: int) -> None:
        """Raise MetadataLogDivergedError unless the storage log spans exactly
        [`log_start_offset`, `log_end_offset`), the state machine's log."""
        stored = (self.log.log_start_offset, self.log.log_end_offset)
        if stored != (log_start_offset, log_end_offset):
            raise MetadataLogDivergedError(
                f"{self.log.directory} holds offsets [{stored[0]}, {stored[1]}) but the quorum "
                f"state machine holds [{log_start_offset}, {log_end_offset})"
            )

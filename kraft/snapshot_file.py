"""Snapshot files of the metadata log (KIP-630), stored and named as Kafka does.

A snapshot covering the entries below `end_offset`, whose last entry has epoch `epoch`, lives in
the metadata log's directory as `<end_offset:020d>-<epoch:010d>.checkpoint`. Its content is a
sequence of RecordBatch v2: a control batch holding the SnapshotHeader record (control type 3),
one data batch with the snapshot's records (absent when there are none), and a control batch
holding the SnapshotFooter record (control type 4). Every batch carries the snapshot's epoch as
its partition leader epoch, and offsets count from 0 inside the snapshot, as in Kafka.

A snapshot written locally appears atomically (temporary file, fsync, rename). One fetched from
the leader grows in a `.checkpoint.part` file, chunk by chunk, and is fsynced and renamed when
complete; partial files are never fsynced, so a crash may drop them and the transfer restarts.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import struct
from collections.abc import Sequence
from pathlib import Path

from kio.schema.snapshot_footer_record.v0.data import SnapshotFooterRecord
from kio.schema.snapshot_header_record.v0.data import SnapshotHeaderRecord
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i16, i64

from kraft.messages import SnapshotId
from kraft.raft import LocalSnapshot
from net.record_batch import BatchHeader, RecordBatchError
from net.records import Record, decode_batches, encode_batch
from storage import durability
from storage.atomic_file import remove_durably, write_atomically

SUFFIX = ".checkpoint"
PART_SUFFIX = ".checkpoint.part"
# Control record keys: version 0, then the control type (3 header, 4 footer).
_HEADER_KEY = struct.pack(">hh", 0, 3)
_FOOTER_KEY = struct.pack(">hh", 0, 4)
_NAME = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
_WRITE_HEADER = entity_writer(SnapshotHeaderRecord)
_WRITE_FOOTER = entity_writer(SnapshotFooterRecord)
_READ_HEADER = entity_reader(SnapshotHeaderRecord)
_READ_FOOTER = entity_reader(SnapshotFooterRecord)


class SnapshotFormatError(ValueError):
    """A snapshot file that is not header, records, footer in valid record batches."""


def file_name(snapshot_id: SnapshotId) -> str:
    """Kafka's name for the snapshot file of `snapshot_id`."""
    return f"{snapshot_id.end_offset:020d}-{snapshot_id.epoch:010d}{SUFFIX}"


def encode_snapshot(
    snapshot_id: SnapshotId, records: Sequence[bytes], last_contained_timestamp: int
) -> bytes:
    """The bytes of a snapshot file holding `records` (header batch, records, footer batch)."""
    header = io.BytesIO()
    _WRITE_HEADER(
        header,
        SnapshotHeaderRecord(
            version=i16(0), last_contained_log_timestamp=i64(last_contained_timestamp)
        ),
    )
    footer = io.BytesIO()
    _WRITE_FOOTER(footer, SnapshotFooterRecord(version=i16(0)))
    epoch = snapshot_id.epoch
    batches = [
        encode_batch(
            [Record(value=header.getvalue(), key=_HEADER_KEY, timestamp=last_contained_timestamp)],
            base_offset=0,
            partition_leader_epoch=epoch,
            is_control=True,
            now_ms=last_contained_timestamp,
        )
    ]
    if records:
        batches.append(
            encode_batch(
                [Record(value=record, timestamp=last_contained_timestamp) for record in records],
                base_offset=1,
                partition_leader_epoch=epoch,
                now_ms=last_contained_timestamp,
            )
        )
    batches.append(
        encode_batch(
            [Record(value=footer.getvalue(), key=_FOOTER_KEY, timestamp=last_contained_timestamp)],
            base_offset=1 + len(records),
            partition_leader_epoch=epoch,
            is_control=True,
            now_ms=last_contained_timestamp,
        )
    )
    return b"".join(batches)


def decode_snapshot(data: bytes) -> list[bytes]:
    """The records of a snapshot file, after checking its header and footer."""
    try:
        batches = list(decode_batches(data))
    except RecordBatchError as error:
        raise SnapshotFormatError(f"bad record batch: {error}") from error
    consumed = sum(header.size for header, _ in batches)
    if consumed != len(data):
        raise SnapshotFormatError(f"{len(data) - consumed} trailing bytes after the last batch")
    if len(batches) < 2:
        raise SnapshotFormatError("a snapshot holds at least a header and a footer batch")
    _check_control(batches[0], _HEADER_KEY, "header")
    _check_control(batches[-1], _FOOTER_KEY, "footer")
    (header_record,) = batches[0][1]
    (footer_record,) = batches[-1][1]
    _READ_HEADER(memoryview(header_record.value or b""), 0)
    _READ_FOOTER(memoryview(footer_record.value or b""), 0)
    records: list[bytes] = []
    for header, batch_records in batches[1:-1]:
        if header.is_control:
            raise SnapshotFormatError("a control batch between the header and the footer")
        records.extend(record.value or b"" for record in batch_records)
    return records


def _check_control(batch: tuple[BatchHeader, list[Record]], key: bytes, what: str) -> None:
    header, records = batch
    if not header.is_control or len(records) != 1 or records[0].key != key:
        raise SnapshotFormatError(f"the {what} batch is not a single {what} control record")


class SnapshotStore:
    """The snapshot files in one directory (the metadata log's)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def path(self, snapshot_id: SnapshotId) -> Path:
        """Where the complete snapshot `snapshot_id` lives."""
        return self.directory / file_name(snapshot_id)

    def _part_path(self, snapshot_id: SnapshotId) -> Path:
        return self.directory / (file_name(snapshot_id) + ".part")

    def snapshot_ids(self) -> list[SnapshotId]:
        """The complete snapshots on disk, oldest first."""
        found = []
        for path in self.directory.iterdir():
            match = _NAME.match(path.name)
            if match is not None:
                found.append(SnapshotId(int(match.group(1)), int(match.group(2))))
        return sorted(found, key=lambda snapshot_id: (snapshot_id.end_offset, snapshot_id.epoch))

    def open_latest(self) -> LocalSnapshot | None:
        """The latest complete snapshot, at startup; leftover partial files are removed first
        (a transfer interrupted by a crash restarts from position 0)."""
        for path in self.directory.glob(f"*{PART_SUFFIX}"):
            path.unlink()
        ids = self.snapshot_ids()
        if not ids:
            return None
        latest = ids[-1]
        return LocalSnapshot(latest, self.path(latest).stat().st_size)

    def write(self, snapshot_id: SnapshotId, data: bytes) -> int:
        """Write a complete snapshot atomically and durably; returns its size."""
        write_atomically(self.path(snapshot_id), data)
        return len(data)

    def read(self, snapshot_id: SnapshotId, position: int, size: int) -> bytes | None:
        """`size` bytes (fewer at the end) at `position`, or None if the snapshot is gone."""
        try:
            with self.path(snapshot_id).open("rb") as file:
                file.seek(position)
                return file.read(size)
        except FileNotFoundError:
            return None

    def read_all(self, snapshot_id: SnapshotId) -> bytes:
        """The whole snapshot file."""
        return self.path(snapshot_id).read_bytes()

    def write_chunk(self, snapshot_id: SnapshotId, position: int, data: bytes) -> None:
        """Write `data` at `position` of the partial file; position 0 starts a new transfer."""
        part = self._part_path(snapshot_id)
        flags = os.O_WRONLY | os.O_CREAT
        if position == 0:
            for stale in self.directory.glob(f"*{PART_SUFFIX}"):
                stale.unlink()
            flags |= os.O_TRUNC
        fd = os.open(part, flags, 0o644)
        try:
            view = memoryview(data)
            offset = position
            while view:
                written = os.pwrite(fd, view, offset)
                view = view[written:]
                offset += written
        finally:
            os.close(fd)

    def complete(self, snapshot_id: SnapshotId, size: int) -> None:
        """fsync the finished partial file and make it the snapshot (rename, directory sync)."""
        part = self._part_path(snapshot_id)
        fd = os.open(part, os.O_RDONLY)
        try:
            actual = os.fstat(fd).st_size
            if actual != size:
                raise SnapshotFormatError(f"{part} holds {actual} bytes, expected {size}")
            durability.sync_file(fd, part)
        finally:
            os.close(fd)
        target = self.path(snapshot_id)
        os.replace(part, target)
        durability.sync_directory(self.directory)
        durability.record_rename(part, target)

    def delete_older_than(self, snapshot_id: SnapshotId) -> list[SnapshotId]:
        """Remove every complete snapshot older than `snapshot_id`; returns the ones removed."""
        removed = []
        for older in self.snapshot_ids():
            if (older.end_offset, older.epoch) >= (snapshot_id.end_offset, snapshot_id.epoch):
                continue
            with contextlib.suppress(FileNotFoundError):
                remove_durably(self.path(older))
                durability.record_unlink(self.path(older))
                removed.append(older)
        return removed

    def delete(self, snapshot_id: SnapshotId) -> None:
        """Remove one complete snapshot (one the state machine did not take)."""
        remove_durably(self.path(snapshot_id))
        durability.record_unlink(self.path(snapshot_id))

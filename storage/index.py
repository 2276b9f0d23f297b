"""The sparse indexes of a segment, in Kafka's on-disk formats.

- Offset index (`.index`): entries `(relative offset: uint32, position: uint32)`, one for the
  start of a batch every `index.interval.bytes` of log. Lookup gives the position of the nearest
  batch at or before an offset, from which a short walk over batch headers finds the batch.
- Time index (`.timeindex`): entries `(max timestamp so far: int64, relative offset: uint32)`,
  added at the same interval when the segment's max timestamp grew, so a lookup by timestamp
  finds where to start walking.

Entries live in memory (arrays searched by bisection) and are appended to the file on flush,
roll and close: the equivalent of Kafka's memory-mapped index without the SIGBUS hazards of
mapping files that get truncated. After an unclean shutdown, indexes past the recovery point are
rebuilt from the log; a missing or inconsistent index file is rebuilt the same way.
"""

from __future__ import annotations

import bisect
import os
import struct
from array import array
from pathlib import Path

from storage import durability


class SparseIndex:
    """Sorted `(key, value)` pairs, both non-decreasing, persisted as fixed-size entries."""

    _ENTRY: struct.Struct

    def __init__(self, path: Path) -> None:
        self.path = path
        self._keys = array("q")
        self._values = array("q")
        self._persisted = 0
        # Entries in the file: unknown (-1) until loaded or written, so the first persist of an
        # index that was not loaded (rebuilt in recovery) cuts away whatever the file held.
        self._file_entries = -1
        # Bumped by every change, so a sync of an unchanged index costs nothing.
        self._version = 0
        self._synced_version = -1

    def __len__(self) -> int:
        return len(self._keys)

    @property
    def last(self) -> tuple[int, int] | None:
        if not self._keys:
            return None
        return self._keys[-1], self._values[-1]

    def append(self, key: int, value: int) -> None:
        self._keys.append(key)
        self._values.append(value)
        self._version += 1

    def floor(self, key: int) -> tuple[int, int] | None:
        """The last entry whose key is <= `key`."""
        index = bisect.bisect_right(self._keys, key)
        if index == 0:
            return None
        return self._keys[index - 1], self._values[index - 1]

    def floor_by_value(self, value: int) -> tuple[int, int] | None:
        """The last entry whose value is <= `value` (values are non-decreasing too)."""
        index = bisect.bisect_right(self._values, value)
        if index == 0:
            return None
        return self._keys[index - 1], self._values[index - 1]

    def truncate_to_value(self, value: int) -> None:
        """Remove every entry whose value is >= `value`."""
        index = bisect.bisect_left(self._values, value)
        self._truncate_entries(index)

    def clear(self) -> None:
        self._truncate_entries(0)

    def _truncate_entries(self, count: int) -> None:
        del self._keys[count:]
        del self._values[count:]
        self._persisted = min(self._persisted, count)
        self._version += 1

    def load(self, *, max_value: int, missing_is_empty: bool = False) -> bool:
        """Read the index file. Returns False (leaving the index empty) when the file is
        inconsistent (a size that is not whole entries, keys or values that go backwards, or
        a value above `max_value`) or missing, unless `missing_is_empty`."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return missing_is_empty
        size = self._ENTRY.size
        if len(data) % size:
            return False
        keys = array("q")
        values = array("q")
        for key, value in self._ENTRY.iter_unpack(data):
            if keys and (key < keys[-1] or value < values[-1]):
                return False
            if value > max_value or value < 0:
                return False
            keys.append(key)
            values.append(value)
        self._keys, self._values = keys, values
        self._persisted = self._file_entries = len(keys)
        self._version += 1
        self._synced_version = self._version
        return True

    def persist(self) -> None:
        """Write entries not yet in the file (and cut the file where entries were removed)."""
        count = len(self._keys)
        if self._persisted == count and self._file_entries == count:
            return
        size = self._ENTRY.size
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            if self._file_entries != self._persisted:
                os.ftruncate(fd, self._persisted * size)
            pending = b"".join(
                self._ENTRY.pack(self._keys[i], self._values[i])
                for i in range(self._persisted, count)
            )
            view = memoryview(pending)
            position = self._persisted * size
            while view:
                written = os.pwrite(fd, view, position)
                view, position = view[written:], position + written
        finally:
            os.close(fd)
        self._persisted = self._file_entries = count

    def sync(self) -> None:
        """Persist, then fsync the file (if anything changed since the last sync)."""
        if self._synced_version == self._version:
            return
        self.persist()
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            durability.sync_file(fd, self.path)
        finally:
            os.close(fd)
        self._synced_version = self._version

    def write_back(self) -> None:
        """The entries `sync` makes durable, written without fsync (an index with none has no
        file: creating thousands of empty ones took seconds): for a sync of the whole file
        system, after which `synced` records it."""
        self.persist()

    def synced(self) -> None:
        """The file as `write_back` left it is durable (its file system was synced)."""
        self._synced_version = self._version


class OffsetIndex(SparseIndex):
    """Keys: relative offsets of batch starts; values: their positions in the log file."""

    _ENTRY = struct.Struct(">II")


class TimeIndex(SparseIndex):
    """Keys: max timestamp of the segment so far; values: the relative offset of the batch
    holding it."""

    _ENTRY = struct.Struct(">qI")

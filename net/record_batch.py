"""RecordBatch v2 (magic 2): a header view that never decodes records.

Layout of a batch (big-endian), as Kafka defines it::

    0  base_offset              int64
    8  batch_length             int32   bytes after this field
    12 partition_leader_epoch   int32
    16 magic                    int8    must be 2
    17 crc                      uint32  CRC32C of bytes [21, end)
    21 attributes               int16
    23 last_offset_delta        int32
    27 base_timestamp           int64
    35 max_timestamp            int64
    43 producer_id              int64
    51 producer_epoch           int16
    53 base_sequence            int32
    57 record_count             int32
    61 records...

The broker validates and rewrites batches through this view only: base offset and partition
leader epoch lie outside the CRC, so assigning offsets never recomputes it; stamping
LogAppendTime changes covered bytes and does.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from enum import IntEnum
from typing import NamedTuple

import crc32c

HEADER_SIZE = 61
# Bytes before batch_length's coverage starts: base_offset + batch_length.
LOG_OVERHEAD = 12
CRC_START = 21
MAGIC_V2 = 2
NO_PRODUCER_ID = -1
NO_TIMESTAMP = -1
NO_PARTITION_LEADER_EPOCH = -1

_BASE_OFFSET = struct.Struct(">q")
_LEADER_EPOCH_AT = 12
_INT32 = struct.Struct(">i")
_CRC = struct.Struct(">I")
_MAX_TIMESTAMP_AT = 35
_INT64 = struct.Struct(">q")
_ATTRIBUTES_AT = 21
_INT16 = struct.Struct(">h")
# The whole 61-byte header in BatchHeader field order (writers pack it with the CRC last).
HEADER_STRUCT = struct.Struct(">qiibIhiqqqhii")

_BATCH_LENGTH_FIELD = 1
_MAGIC_FIELD = 3
_MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD
_new_header = tuple.__new__

_COMPRESSION_MASK = 0x07
LOG_APPEND_TIME_BIT = 0x08
_TRANSACTIONAL_BIT = 0x10
_CONTROL_BIT = 0x20
DELETE_HORIZON_BIT = 0x40


class Compression(IntEnum):
    """The codec in the low three bits of a batch's attributes."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


class TimestampType(IntEnum):
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


class RecordBatchError(ValueError):
    """A batch that must be refused; `error_code` is the Kafka error to answer with."""

    error_code = 2  # CORRUPT_MESSAGE


class CorruptBatchError(RecordBatchError):
    """The bytes are damaged: a CRC mismatch, or a length that runs past the data."""

    error_code = 2  # CORRUPT_MESSAGE


class InvalidBatchError(RecordBatchError):
    """The bytes are intact but describe an impossible batch (bad length, negative count...)."""

    error_code = 87  # INVALID_RECORD


@dataclass(frozen=True, slots=True)
class RecordError:
    """Why one record of a batch was refused (KIP-467): its index in its batch, and a message
    for the client to fail that record with."""

    batch_index: int
    message: str


class InvalidRecordsError(InvalidBatchError):
    """Records of an intact batch that the topic refuses (a record without a key in a compacted
    topic): the whole batch is refused, and `record_errors` names the records at fault."""

    def __init__(self, record_errors: tuple[RecordError, ...]) -> None:
        super().__init__(records_refused_message(record_errors))
        self.record_errors = record_errors


def records_refused_message(record_errors: tuple[RecordError, ...]) -> str:
    """Kafka's error message for a batch refused for the records it names."""
    shown = ", ".join(
        f"RecordError(batchIndex={e.batch_index}, message='{e.message}')" for e in record_errors[:3]
    )
    return (
        f"One or more records have been rejected due to {len(record_errors)} record errors in "
        f"total, and only showing the first three errors at most: [{shown}]"
    )


class UnsupportedMagicError(RecordBatchError):
    """Magic 0 or 1 (the old message formats), which this broker does not store."""

    error_code = 43  # UNSUPPORTED_FOR_MESSAGE_FORMAT


class BatchHeader(NamedTuple):
    """The decoded 61-byte header of one RecordBatch v2 (a tuple: cheap to build per batch)."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def size(self) -> int:
        """Total bytes of the batch, header included."""
        return LOG_OVERHEAD + self.batch_length

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> Compression:
        return Compression(self.attributes & _COMPRESSION_MASK)

    @property
    def timestamp_type(self) -> TimestampType:
        if self.attributes & LOG_APPEND_TIME_BIT:
            return TimestampType.LOG_APPEND_TIME
        return TimestampType.CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & _TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & _CONTROL_BIT)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & DELETE_HORIZON_BIT)


def batch_attributes(
    compression: Compression,
    timestamp_type: TimestampType,
    *,
    is_transactional: bool,
    is_control: bool,
) -> int:
    """The attributes int16 of a batch with these properties; BatchHeader's properties invert it."""
    attributes = int(compression)
    if timestamp_type == TimestampType.LOG_APPEND_TIME:
        attributes |= LOG_APPEND_TIME_BIT
    if is_transactional:
        attributes |= _TRANSACTIONAL_BIT
    if is_control:
        attributes |= _CONTROL_BIT
    return attributes


def with_compression(attributes: int, compression: Compression) -> int:
    """`attributes` naming `compression` as the codec of the batch's records."""
    return (attributes & ~_COMPRESSION_MASK) | compression


def read_header(buffer: bytes | bytearray | memoryview, position: int = 0) -> BatchHeader:
    """Decode the header of the batch at `position` without checking its CRC.

    Raises CorruptBatchError when fewer than HEADER_SIZE bytes remain, UnsupportedMagicError for
    magic 0/1, and InvalidBatchError for a batch length too small to hold the header.
    """
    remaining = len(buffer) - position
    if remaining < HEADER_SIZE:
        # Magic 0/1 messages can be shorter than a v2 header; name them properly if we can.
        if remaining > 16 and buffer[position + 16] in (0, 1):
            raise UnsupportedMagicError(f"message format magic {buffer[position + 16]}")
        raise CorruptBatchError(f"truncated batch header: {remaining} bytes at position {position}")
    fields = HEADER_STRUCT.unpack_from(buffer, position)
    # Checked on the raw tuple, and the tuple becomes the header without copying: this runs
    # once per appended batch.
    magic = fields[_MAGIC_FIELD]
    if magic != MAGIC_V2:
        if magic in (0, 1):
            raise UnsupportedMagicError(f"message format magic {magic}")
        raise CorruptBatchError(f"unknown magic {magic} at position {position}")
    if fields[_BATCH_LENGTH_FIELD] < _MIN_BATCH_LENGTH:
        raise InvalidBatchError(
            f"batch length {fields[_BATCH_LENGTH_FIELD]} is below the header size"
        )
    return _new_header(BatchHeader, fields)


def validate_batch(buffer: bytes | bytearray | memoryview, position: int = 0) -> BatchHeader:
    """Decode and fully check the batch at `position`: length within the data, sane counts, CRC.

    Records are not decoded. Raises a RecordBatchError subclass naming what is wrong.
    """
    length = len(buffer)
    if length - position < HEADER_SIZE:
        return read_header(buffer, position)  # raises the precise error
    fields = HEADER_STRUCT.unpack_from(buffer, position)
    if fields[_MAGIC_FIELD] != MAGIC_V2 or fields[_BATCH_LENGTH_FIELD] < _MIN_BATCH_LENGTH:
        return read_header(buffer, position)  # raises the precise error
    # The checks above are read_header's, inline: this runs once per appended batch.
    header: BatchHeader = _new_header(BatchHeader, fields)
    end = position + LOG_OVERHEAD + header.batch_length
    if end > length:
        raise CorruptBatchError(
            f"batch at position {position} claims {end - position} bytes, "
            f"only {length - position} remain"
        )
    if header.last_offset_delta < 0 or header.record_count < 0:
        raise InvalidBatchError(
            f"negative last offset delta {header.last_offset_delta} "
            f"or record count {header.record_count}"
        )
    view = buffer if isinstance(buffer, memoryview) else memoryview(buffer)
    actual = crc32c.crc32c(view[position + CRC_START : end])
    if actual != header.crc:
        raise CorruptBatchError(
            f"CRC32C mismatch at position {position}: stored {header.crc:#010x}, "
            f"computed {actual:#010x}"
        )
    return header


def iter_batches(buffer: bytes | bytearray | memoryview) -> Iterator[tuple[int, BatchHeader]]:
    """Yield `(position, header)` for each fully validated batch of a concatenation.

    Stops with a RecordBatchError at the first invalid or incomplete batch.
    """
    position = 0
    size = len(buffer)
    while position < size:
        header = validate_batch(buffer, position)
        yield position, header
        position += header.size


def set_base_offset(buffer: bytearray | memoryview, position: int, base_offset: int) -> None:
    """Rewrite a batch's base offset in place (outside the CRC, so the CRC stays valid)."""
    _BASE_OFFSET.pack_into(buffer, position, base_offset)


def set_partition_leader_epoch(buffer: bytearray | memoryview, position: int, epoch: int) -> None:
    """Stamp a batch's partition leader epoch in place (outside the CRC)."""
    _INT32.pack_into(buffer, position + _LEADER_EPOCH_AT, epoch)


def set_log_append_time(buffer: bytearray | memoryview, position: int, timestamp_ms: int) -> None:
    """Mark a batch LogAppendTime with `timestamp_ms` as its max timestamp and recompute its CRC."""
    attributes = _INT16.unpack_from(buffer, position + _ATTRIBUTES_AT)[0]
    _INT16.pack_into(buffer, position + _ATTRIBUTES_AT, attributes | LOG_APPEND_TIME_BIT)
    _INT64.pack_into(buffer, position + _MAX_TIMESTAMP_AT, timestamp_ms)
    end = position + LOG_OVERHEAD + _INT32.unpack_from(buffer, position + 8)[0]
    crc = crc32c.crc32c(memoryview(buffer)[position + CRC_START : end])
    _CRC.pack_into(buffer, position + 17, crc)

"""Kafka records inside a RecordBatch v2: the full encoder and decoder, compression included;
records decode into `Record`s or, for columnar consumers, into `RecordColumns`.

The broker's produce and fetch paths never come here (they move batches as bytes through
`net.record_batch`); the Spark connector, tests and tools do. Inside a batch, after the 61-byte
header and possibly compressed as a whole, each record is::

    length            varint   bytes of the record after this field
    attributes        int8     unused, written as 0
    timestamp_delta   varlong  from the batch's base timestamp
    offset_delta      varint   from the batch's base offset
    key_length        varint   -1 for a null key
    key               bytes
    value_length      varint   -1 for a null value
    value             bytes
    header_count      varint
    headers           header_count x (key_length varint, key UTF-8,
                                      value_length varint (-1 for null), value)

Varints are zig-zag, base-128, least significant group first (as in protobuf). Codecs run in C or
Rust (zlib and cramjam): gzip, snappy (xerial-framed as Kafka's Java producer writes it, raw as
librdkafka writes it; both are read), LZ4 frames with independent blocks, and zstd frames.
"""

from __future__ import annotations

import gzip
import struct
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import cramjam
import crc32c

from net.record_batch import (
    CRC_START,
    HEADER_SIZE,
    HEADER_STRUCT,
    LOG_OVERHEAD,
    MAGIC_V2,
    BatchHeader,
    Compression,
    CorruptBatchError,
    InvalidBatchError,
    TimestampType,
    batch_attributes,
    iter_batches,
    read_header,
    validate_batch,
    with_compression,
)

__all__ = [
    "BatchHeader",
    "Compression",
    "Header",
    "Record",
    "RecordColumns",
    "TimestampType",
    "decode_batch",
    "decode_batch_columns",
    "decode_batches",
    "encode_batch",
    "records_payload",
]


@dataclass(frozen=True, slots=True)
class Header:
    """One record header: a UTF-8 key and a nullable value."""

    key: str
    value: bytes | None


@dataclass(frozen=True, slots=True)
class Record:
    """One record of a batch.

    On encode, `timestamp` None means the batch's clock (`now_ms`), and `offset` is ignored:
    records take consecutive offsets from the batch's base offset. On decode both are filled:
    `offset` is absolute, and `timestamp` is the batch's max timestamp in a LogAppendTime batch.
    """

    value: bytes | None
    key: bytes | None = None
    headers: tuple[Header, ...] = ()
    timestamp: int | None = None
    offset: int | None = None


_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
# The longest varlong: ten groups of seven bits.
_VARINT_MAX_SHIFT = 63


def _encode_varint(value: int) -> bytes:
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise ValueError(f"{value} does not fit a varlong")
    unsigned = (value << 1) ^ (value >> 63)
    out = bytearray()
    while unsigned > 0x7F:
        out.append((unsigned & 0x7F) | 0x80)
        unsigned >>= 7
    out.append(unsigned)
    return bytes(out)


# Lengths, offset deltas and timestamp deltas are mostly small: their encodings are looked up.
_CACHED_VARINTS = 1 << 14
_VARINTS = tuple(_encode_varint(n) for n in range(_CACHED_VARINTS))
_NULL_LENGTH = _encode_varint(-1)
_RECORD_ATTRIBUTES = b"\x00"
_NO_HEADERS = _VARINTS[0]


def _varint(value: int) -> bytes:
    if 0 <= value < _CACHED_VARINTS:
        return _VARINTS[value]
    return _encode_varint(value)


# Zig-zag values of the one-byte varints, by byte.
_ONE_BYTE_VARINTS = tuple((byte >> 1) ^ -(byte & 1) for byte in range(0x80))


def _read_varint(data: bytes, position: int) -> tuple[int, int]:
    """The zig-zag varint at `position` and the position after it (IndexError past the end)."""
    byte = data[position]
    if byte < 0x80:
        return (byte >> 1) ^ -(byte & 1), position + 1
    unsigned = byte & 0x7F
    shift = 7
    while True:
        position += 1
        byte = data[position]
        unsigned |= (byte & 0x7F) << shift
        if byte < 0x80:
            return (unsigned >> 1) ^ -(unsigned & 1), position + 1
        shift += 7
        if shift > _VARINT_MAX_SHIFT:
            raise CorruptBatchError(f"varint longer than ten bytes at byte {position}")


# xerial snappy framing, as Kafka's Java producer writes it (SnappyOutputStream): an 8-byte magic,
# version and minimum compatible version (int32 each, both 1), then chunks of
# int32 length + raw snappy block, each block compressing at most 32 KiB.
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024
_XERIAL_CHUNK_LENGTH = struct.Struct(">i")
# Kafka's default compression.zstd.level.
_ZSTD_LEVEL = 3
# zlib's wbits for a gzip (RFC 1952) container, which Java's GZIPInputStream reads.
_GZIP_WBITS = 31


def _snappy_compress(records: bytes) -> bytes:
    view = memoryview(records)
    chunks = [_XERIAL_HEADER]
    for start in range(0, len(records), _XERIAL_BLOCK):
        block = cramjam.snappy.compress_raw(view[start : start + _XERIAL_BLOCK])
        chunks.append(_XERIAL_CHUNK_LENGTH.pack(len(block)))
        chunks.append(bytes(block))
    return b"".join(chunks)


def _snappy_decompress(payload: memoryview) -> bytes:
    if payload[: len(_XERIAL_MAGIC)] != _XERIAL_MAGIC:
        return bytes(cramjam.snappy.decompress_raw(payload))
    # The version fields are not checked: some writers get their byte order wrong.
    blocks = []
    position = len(_XERIAL_HEADER)
    end = len(payload)
    while position < end:
        if position + _XERIAL_CHUNK_LENGTH.size > end:
            raise ValueError(f"xerial chunk length cut short at byte {position}")
        (length,) = _XERIAL_CHUNK_LENGTH.unpack_from(payload, position)
        position += _XERIAL_CHUNK_LENGTH.size
        if length < 0 or position + length > end:
            raise ValueError(f"xerial chunk of {length} bytes at byte {position} runs past {end}")
        blocks.append(cramjam.snappy.decompress_raw(payload[position : position + length]))
        position += length
    return b"".join(blocks)


def _lz4_compress(records: bytes) -> bytes:
    # Kafka's Java reader refuses frames whose blocks depend on earlier ones.
    compressor = cramjam.lz4.Compressor(block_linked=False)
    compressor.compress(records)
    return bytes(compressor.finish())


def _lz4_compress_at(records: bytes, level: int) -> bytes:
    compressor = cramjam.lz4.Compressor(level=level, block_linked=False)
    compressor.compress(records)
    return bytes(compressor.finish())


_COMPRESSORS: dict[Compression, Callable[[bytes], bytes]] = {
    Compression.GZIP: lambda records: zlib.compress(
        records, zlib.Z_DEFAULT_COMPRESSION, _GZIP_WBITS
    ),
    Compression.SNAPPY: _snappy_compress,
    Compression.LZ4: _lz4_compress,
    Compression.ZSTD: lambda records: bytes(cramjam.zstd.compress(records, level=_ZSTD_LEVEL)),
}
# The codecs with levels (Kafka's `compression.<codec>.level`, KIP-390).
_COMPRESSORS_AT: dict[Compression, Callable[[bytes, int], bytes]] = {
    Compression.GZIP: lambda records, level: zlib.compress(records, level, _GZIP_WBITS),
    Compression.LZ4: _lz4_compress_at,
    Compression.ZSTD: lambda records, level: bytes(cramjam.zstd.compress(records, level=level)),
}


def compress(compression: Compression, records: bytes, level: int | None = None) -> bytes:
    """The records of a batch compressed with `compression` (as they are, for NONE), at
    `level` where the codec has levels (None: the codec's default as Kafka's producer uses
    it)."""
    if compression is Compression.NONE:
        return records
    if level is not None and compression in _COMPRESSORS_AT:
        return _COMPRESSORS_AT[compression](records, level)
    return _COMPRESSORS[compression](records)


# gzip.decompress reads concatenated members, as GZIPInputStream does; cramjam's zstd reads
# frames with or without a content size, and concatenated frames.
_DECOMPRESSORS: dict[Compression, Callable[[memoryview], bytes]] = {
    Compression.GZIP: gzip.decompress,
    Compression.SNAPPY: _snappy_decompress,
    Compression.LZ4: lambda payload: bytes(cramjam.lz4.decompress(payload)),
    Compression.ZSTD: lambda payload: bytes(cramjam.zstd.decompress(payload)),
}


def encode_headers(headers: tuple[Header, ...]) -> bytes:
    """The headers field of a record: a varint count, then each key and value."""
    fields = [_varint(len(headers))]
    for header in headers:
        key = header.key.encode()
        fields.append(_varint(len(key)))
        fields.append(key)
        if header.value is None:
            fields.append(_NULL_LENGTH)
        else:
            fields.append(_varint(len(header.value)))
            fields.append(header.value)
    return b"".join(fields)


def encode_batch(
    records: Sequence[Record],
    *,
    base_offset: int = 0,
    partition_leader_epoch: int = -1,
    compression: Compression = Compression.NONE,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    is_transactional: bool = False,
    is_control: bool = False,
    now_ms: int | None = None,
) -> bytes:
    """Encode `records` as one RecordBatch v2 with a valid CRC32C, compressed with `compression`.

    Records take offsets `base_offset`, `base_offset + 1`, ... (their `offset` is ignored).
    A record without a timestamp gets `now_ms` (the wall clock when None). The base timestamp
    is the first record's, the max timestamp the largest record's, or `now_ms` in a
    LogAppendTime batch, as a broker stamps it. Raises ValueError for an empty batch or a
    timestamp delta beyond int64.
    """
    if not records:
        raise ValueError("a record batch holds at least one record")
    clock = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    timestamps = [clock if record.timestamp is None else record.timestamp for record in records]
    base_timestamp = timestamps[0]
    max_timestamp = clock if timestamp_type == TimestampType.LOG_APPEND_TIME else max(timestamps)

    # The hot loop looks small varints up inline and sums field lengths rather than joining
    # each record: one join for the whole batch.
    varints = _VARINTS
    cached = _CACHED_VARINTS
    encode_varint = _encode_varint
    null_length = _NULL_LENGTH
    record_attributes = _RECORD_ATTRIBUTES
    no_headers = _NO_HEADERS
    parts: list[bytes] = []
    extend = parts.extend
    for offset_delta, record in enumerate(records):
        key = record.key
        value = record.value
        delta = timestamps[offset_delta] - base_timestamp
        timestamp_field = varints[delta] if 0 <= delta < cached else encode_varint(delta)
        offset_field = (
            varints[offset_delta] if offset_delta < cached else encode_varint(offset_delta)
        )
        if key is None:
            key_length = null_length
            key = b""
        else:
            length = len(key)
            key_length = varints[length] if length < cached else encode_varint(length)
        if value is None:
            value_length = null_length
            value = b""
        else:
            length = len(value)
            value_length = varints[length] if length < cached else encode_varint(length)
        headers = encode_headers(record.headers) if record.headers else no_headers
        size = (
            len(record_attributes)
            + len(timestamp_field)
            + len(offset_field)
            + len(key_length)
            + len(key)
            + len(value_length)
            + len(value)
            + len(headers)
        )
        extend(
            (
                varints[size] if size < cached else encode_varint(size),
                record_attributes,
                timestamp_field,
                offset_field,
                key_length,
                key,
                value_length,
                value,
                headers,
            )
        )

    attributes = batch_attributes(
        compression, timestamp_type, is_transactional=is_transactional, is_control=is_control
    )
    return seal_batch(
        BatchFields(
            base_offset,
            partition_leader_epoch,
            attributes,
            len(records) - 1,
            base_timestamp,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            len(records),
        ),
        compress(compression, b"".join(parts)),
    )


class BatchFields(NamedTuple):
    """The header fields of a RecordBatch v2 that its writer chooses (the length, magic and
    CRC follow from them and the payload)."""

    base_offset: int
    partition_leader_epoch: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int


def seal_batch(fields: BatchFields, payload: bytes) -> bytes:
    """A RecordBatch v2 with these header fields around `payload` (its records, already
    compressed as the attributes say), with its length and CRC32C."""
    batch_length = HEADER_SIZE - LOG_OVERHEAD + len(payload)
    after_crc = fields[2:]
    unsealed = HEADER_STRUCT.pack(
        fields.base_offset, batch_length, fields.partition_leader_epoch, MAGIC_V2, 0, *after_crc
    )
    crc = crc32c.crc32c(payload, crc32c.crc32c(unsealed[CRC_START:]))
    header = HEADER_STRUCT.pack(
        fields.base_offset, batch_length, fields.partition_leader_epoch, MAGIC_V2, crc, *after_crc
    )
    return header + payload


def encode_record(
    *,
    timestamp_delta: int,
    offset_delta: int,
    key: bytes | None,
    value: bytes | None,
    encoded_headers: bytes,
) -> bytes:
    """One record of a batch: its length, attributes, deltas, key, value and headers (already
    encoded with `encode_headers`)."""
    body = b"".join(
        (
            _RECORD_ATTRIBUTES,
            _encode_varint(timestamp_delta),
            _encode_varint(offset_delta),
            _NULL_LENGTH if key is None else _encode_varint(len(key)),
            key or b"",
            _NULL_LENGTH if value is None else _encode_varint(len(value)),
            value or b"",
            encoded_headers,
        )
    )
    return _encode_varint(len(body)) + body


def records_payload(
    buffer: bytes | bytearray | memoryview, position: int, header: BatchHeader
) -> bytes:
    """The records of the batch at `position` (whose header is `header`), decompressed.

    Raises InvalidBatchError for an unknown codec and CorruptBatchError for a payload that
    does not decompress. The batch is not validated here (see `validate_batch`).
    """
    payload = memoryview(buffer)[position + HEADER_SIZE : position + header.size]
    try:
        compression = header.compression
    except ValueError as err:
        raise InvalidBatchError(f"batch at position {position}: {err}") from err
    if compression == Compression.NONE:
        return bytes(payload)
    try:
        return _DECOMPRESSORS[compression](payload)
    except (cramjam.DecompressionError, zlib.error, OSError, EOFError, ValueError) as err:
        raise CorruptBatchError(
            f"batch at position {position}: {compression.name.lower()} payload "
            f"cannot be decompressed: {err}"
        ) from err


def recompress_batches(
    records: bytes | memoryview, compression: Compression, level: int | None = None
) -> bytes | memoryview:
    """`records` (batches as a producer sent them) with every batch's records compressed with
    `compression` at `level` (see `compress`), as a leader whose topic sets `compression.type`
    writes them (Kafka's LogValidator): a batch already in that codec, and a control batch,
    stays as it is; the others keep their header fields, with the new codec, length and CRC.
    `records` itself is returned when no batch changes. Each batch is validated first (CRC
    included), so a corrupt one is refused, never resealed: raises the errors of `iter_batches`
    and `records_payload`.
    """
    buffer = memoryview(records)
    batches: list[bytes | memoryview] = []
    changed = False
    for position, header in iter_batches(buffer):
        if header.compression is compression or header.is_control:
            batches.append(buffer[position : position + header.size])
            continue
        payload = records_payload(buffer, position, header)
        fields = BatchFields(
            header.base_offset,
            header.partition_leader_epoch,
            with_compression(header.attributes, compression),
            header.last_offset_delta,
            header.base_timestamp,
            header.max_timestamp,
            header.producer_id,
            header.producer_epoch,
            header.base_sequence,
            header.record_count,
        )
        batches.append(seal_batch(fields, compress(compression, payload, level)))
        changed = True
    return b"".join(batches) if changed else records


def decode_batch(
    buffer: bytes | bytearray | memoryview, position: int = 0
) -> tuple[BatchHeader, list[Record]]:
    """Decode the batch at `position`: its header and its records, in offset order.

    The batch is validated first (length, counts, CRC32C: see `validate_batch`). Raises
    CorruptBatchError when the payload cannot be decompressed or the records do not parse,
    InvalidBatchError for an unknown codec, and the other `validate_batch` errors.
    """
    header = validate_batch(buffer, position)
    if header.record_count == 0:
        # Compaction can leave a batch without records; Kafka does not decompress those.
        return header, []
    data = records_payload(buffer, position, header)
    try:
        return header, _decode_records(data, header)
    except CorruptBatchError as err:
        raise CorruptBatchError(f"batch at position {position}: {err}") from err


def _decode_records(data: bytes, header: BatchHeader) -> list[Record]:
    # One record walk serves rows and columns (`_decode_columns`): rows are zipped from them.
    columns = RecordColumns.empty(with_headers=True)
    _decode_columns(data, header, columns)
    assert columns.headers is not None
    return [
        Record(value, key, tuple(Header(k, v) for k, v in headers), timestamp, offset)
        for offset, timestamp, key, value, headers in zip(
            columns.offsets,
            columns.timestamps,
            columns.keys,
            columns.values,
            columns.headers,
            strict=True,
        )
    ]


def _decode_headers(data: bytes, position: int, count: int) -> tuple[tuple[Header, ...], int]:
    if count < 0:
        raise CorruptBatchError(f"header count {count}")
    one_byte = _ONE_BYTE_VARINTS
    headers = []
    for _ in range(count):
        byte = data[position]
        if byte < 0x80:
            key_length = one_byte[byte]
            position += 1
        else:
            key_length, position = _read_varint(data, position)
        if key_length < 0:
            raise CorruptBatchError(f"header key length {key_length}")
        key_end = position + key_length
        try:
            key = data[position:key_end].decode()
        except UnicodeDecodeError as err:
            raise CorruptBatchError(f"header key is not UTF-8: {err}") from err
        byte = data[key_end]
        if byte < 0x80:
            value_length = one_byte[byte]
            position = key_end + 1
        else:
            value_length, position = _read_varint(data, key_end)
        if value_length >= 0:
            value: bytes | None = data[position : position + value_length]
            position += value_length
        elif value_length == -1:
            value = None
        else:
            raise CorruptBatchError(f"header value length {value_length}")
        headers.append(Header(key, value))
    return tuple(headers), position


def decode_batches(
    buffer: bytes | bytearray | memoryview,
) -> Iterator[tuple[BatchHeader, list[Record]]]:
    """Decode each batch of a concatenation, as `decode_batch` does.

    A trailing batch cut short (a fetch response may end with one) ends the iteration silently;
    any other bad batch raises as `decode_batch` does.
    """
    position = 0
    size = len(buffer)
    while size - position >= HEADER_SIZE:
        if read_header(buffer, position).size > size - position:
            return
        header, records = decode_batch(buffer, position)
        yield header, records
        position += header.size


@dataclass(slots=True)
class RecordColumns:
    """Decoded records as parallel lists, one entry per record, for columnar consumers (such as
    Arrow) that would otherwise build a `Record` per row only to take it apart again.

    `headers` holds each record's headers as (key, value) pairs, or is None when the decoder
    was asked to leave them out.
    """

    offsets: list[int]
    timestamps: list[int]
    timestamp_types: list[int]
    keys: list[bytes | None]
    values: list[bytes | None]
    headers: list[list[tuple[str, bytes | None]]] | None

    @classmethod
    def empty(cls, *, with_headers: bool) -> RecordColumns:
        return cls([], [], [], [], [], [] if with_headers else None)

    def __len__(self) -> int:
        return len(self.offsets)


def decode_batch_columns(
    buffer: bytes | bytearray | memoryview,
    position: int,
    columns: RecordColumns,
    *,
    start: int = 0,
    end: int = _INT64_MAX,
) -> BatchHeader:
    """Append the records of the batch at `position` whose offsets are in [start, end) to
    `columns`; returns the batch's header.

    Validates and decompresses as `decode_batch` does, and raises the same errors. Control
    batches (transaction markers) add no records.
    """
    header = validate_batch(buffer, position)
    if header.record_count == 0 or header.is_control:
        return header
    if header.next_offset <= start or header.base_offset >= end:
        return header
    data = records_payload(buffer, position, header)
    first = len(columns.offsets)
    try:
        _decode_columns(data, header, columns)
    except CorruptBatchError as err:
        # Leave `columns` as it was: no half-decoded batch.
        _truncate_columns(columns, first)
        raise CorruptBatchError(f"batch at position {position}: {err}") from err
    if header.base_offset < start or header.last_offset >= end:
        offsets = columns.offsets
        keep_from = first
        while keep_from < len(offsets) and offsets[keep_from] < start:
            keep_from += 1
        keep_to = len(offsets)
        while keep_to > keep_from and offsets[keep_to - 1] >= end:
            keep_to -= 1
        _cut_columns(columns, first, keep_from, keep_to)
    timestamp_type = int(header.timestamp_type)
    columns.timestamp_types.extend([timestamp_type] * (len(columns.offsets) - first))
    return header


def _column_lists(columns: RecordColumns) -> list[list[Any]]:
    lists: list[list[Any]] = [columns.offsets, columns.timestamps, columns.keys, columns.values]
    if columns.headers is not None:
        lists.append(columns.headers)
    return lists


def _truncate_columns(columns: RecordColumns, length: int) -> None:
    for values in _column_lists(columns):
        del values[length:]


def _cut_columns(columns: RecordColumns, first: int, keep_from: int, keep_to: int) -> None:
    for values in _column_lists(columns):
        del values[keep_to:]
        del values[first:keep_from]


def _decode_columns(data: bytes, header: BatchHeader, columns: RecordColumns) -> None:
    # The loop of _decode_records, appending fields to the columns instead of building records.
    base_offset = header.base_offset
    base_timestamp = header.base_timestamp
    log_append_time = (
        header.max_timestamp if header.timestamp_type == TimestampType.LOG_APPEND_TIME else None
    )
    one_byte = _ONE_BYTE_VARINTS
    read_varint = _read_varint
    size = len(data)
    add_offset = columns.offsets.append
    add_timestamp = columns.timestamps.append
    add_key = columns.keys.append
    add_value = columns.values.append
    header_lists = columns.headers
    position = 0
    first = len(columns.offsets)
    try:
        for _ in range(header.record_count):
            byte = data[position]
            if byte < 0x80:
                length = one_byte[byte]
                position += 1
            elif data[position + 1] < 0x80:
                unsigned = (byte & 0x7F) | (data[position + 1] << 7)
                length = (unsigned >> 1) ^ -(unsigned & 1)
                position += 2
            else:
                length, position = read_varint(data, position)
            end = position + length
            if length <= 0 or end > size:
                raise CorruptBatchError(
                    f"record of {length} bytes at byte {position} runs past {size}"
                )
            byte = data[position + 1]
            if byte < 0x80:
                timestamp_delta = one_byte[byte]
                position += 2
            else:
                timestamp_delta, position = read_varint(data, position + 1)
            byte = data[position]
            if byte < 0x80:
                offset_delta = one_byte[byte]
                position += 1
            elif data[position + 1] < 0x80:
                unsigned = (byte & 0x7F) | (data[position + 1] << 7)
                offset_delta = (unsigned >> 1) ^ -(unsigned & 1)
                position += 2
            else:
                offset_delta, position = read_varint(data, position)
            byte = data[position]
            if byte < 0x80:
                key_length = one_byte[byte]
                position += 1
            else:
                key_length, position = read_varint(data, position)
            if key_length >= 0:
                add_key(data[position : position + key_length])
                position += key_length
            elif key_length == -1:
                add_key(None)
            else:
                raise CorruptBatchError(f"key length {key_length}")
            byte = data[position]
            if byte < 0x80:
                value_length = one_byte[byte]
                position += 1
            elif data[position + 1] < 0x80:
                unsigned = (byte & 0x7F) | (data[position + 1] << 7)
                value_length = (unsigned >> 1) ^ -(unsigned & 1)
                position += 2
            else:
                value_length, position = read_varint(data, position)
            if value_length >= 0:
                add_value(data[position : position + value_length])
                position += value_length
            elif value_length == -1:
                add_value(None)
            else:
                raise CorruptBatchError(f"value length {value_length}")
            if data[position] == 0:
                position += 1
                if header_lists is not None:
                    header_lists.append([])
            else:
                header_count, position = read_varint(data, position)
                headers, position = _decode_headers(data, position, header_count)
                if header_lists is not None:
                    header_lists.append([(h.key, h.value) for h in headers])
            if position != end:
                raise CorruptBatchError(
                    f"record declared {length} bytes but its fields took {length + position - end}"
                )
            add_offset(base_offset + offset_delta)
            add_timestamp(
                base_timestamp + timestamp_delta if log_append_time is None else log_append_time
            )
    except IndexError as err:
        raise CorruptBatchError(
            f"records end at byte {size}, inside record {len(columns.offsets) - first} "
            f"of {header.record_count}"
        ) from err
    if position != size:
        raise CorruptBatchError(
            f"{size - position} bytes follow the last of {header.record_count} records"
        )

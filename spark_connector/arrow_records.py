"""Fetched record batches straight into an Arrow batch of the source's rows.

Python walks the records only to find where each one starts (one varint per record); every
other field is decoded for all records at once with Arrow compute kernels, and keys and values
become Arrow binary arrays by way of binary views into the fetched bytes, so no Python object
is made per key or value. Records Arrow cannot take this way (headers asked for and present,
or varints longer than five bytes: timestamps spread over more than ~200 days) go through
`net.records.decode_batch_columns` instead, which gives the same rows.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from net.record_batch import TimestampType, iter_batches
from net.records import RecordColumns, decode_batch_columns, records_payload
from spark_connector.rows import HEADERS_TYPE, MICROS, MILLIS, record_batch

# The longest varint decoded with kernels; longer ones send the chunk down the Python path.
_VARINT_BYTES = 5
# Binary views keep values of up to 12 bytes inline, longer ones as prefix + offset.
_INLINE = 12
# Zero bytes after the records, so reading a varint's next bytes never leaves the buffer.
_PADDING = bytes(16)
_ONE_BYTE = tuple((byte >> 1) ^ -(byte & 1) for byte in range(0x80))


@functools.cache
def _int(value: int) -> pa.Scalar:
    """`value` as an Arrow int64 scalar: kernels convert Python ints slowly (pyarrow tries
    imports on the way, on every call)."""
    return pa.scalar(value, pa.int64())


class _NeedsRecordDecoderError(Exception):
    """This chunk needs the per-record decoder."""


@dataclass(frozen=True, slots=True)
class _Batch:
    base_offset: int
    # The timestamp every record's delta adds to, and 1 (CreateTime) or 0 (LogAppendTime:
    # every record takes the batch's max timestamp).
    base_timestamp: int
    delta_factor: int
    timestamp_type: int
    record_count: int


def decode_fetched(
    records: bytes,
    *,
    start: int,
    end: int,
    topic: str,
    partition: int,
    schema: pa.Schema,
    include_headers: bool,
) -> pa.RecordBatch:
    """The rows of the records in `records` (whole batches) with offsets in [start, end)."""
    try:
        return _vectorised(
            records,
            start=start,
            end=end,
            topic=topic,
            partition=partition,
            schema=schema,
            include_headers=include_headers,
        )
    except _NeedsRecordDecoderError:
        columns = RecordColumns.empty(with_headers=include_headers)
        for position, _header in iter_batches(records):
            decode_batch_columns(records, position, columns, start=start, end=end)
        return record_batch(topic, partition, columns, schema)


def _vectorised(
    records: bytes,
    *,
    start: int,
    end: int,
    topic: str,
    partition: int,
    schema: pa.Schema,
    include_headers: bool,
) -> pa.RecordBatch:
    payloads: list[bytes] = []
    batches: list[_Batch] = []
    for position, header in iter_batches(records):
        if header.record_count == 0 or header.is_control:
            continue
        if header.next_offset <= start or header.base_offset >= end:
            continue
        payloads.append(records_payload(records, position, header))
        log_append_time = header.timestamp_type == TimestampType.LOG_APPEND_TIME
        batches.append(
            _Batch(
                header.base_offset,
                header.max_timestamp if log_append_time else header.base_timestamp,
                0 if log_append_time else 1,
                int(header.timestamp_type),
                header.record_count,
            )
        )
    data = b"".join(payloads) + _PADDING
    positions = _record_positions(data, payloads, batches)
    count = len(positions)
    if count == 0:
        return pa.RecordBatch.from_pylist([], schema=schema)
    buffer = pa.py_buffer(data)
    octets = pa.Array.from_buffers(pa.uint8(), len(data), [None, buffer])
    # Each record: its length, then attributes (1 byte), timestamp delta, offset delta, key
    # length, key, value length, value, header count, headers.
    at = pa.array(positions, pa.int64())
    length, size = _varints(octets, at)
    body = pc.add(at, size)
    timestamp_delta, size = _varints(octets, pc.add(body, _int(1)))
    at = pc.add(pc.add(body, _int(1)), size)
    offset_delta, size = _varints(octets, at)
    at = pc.add(at, size)
    key_length, size = _varints(octets, at)
    key_start = pc.add(at, size)
    at = pc.add(key_start, pc.max_element_wise(key_length, _int(0)))
    value_length, size = _varints(octets, at)
    value_start = pc.add(at, size)
    at = pc.add(value_start, pc.max_element_wise(value_length, _int(0)))
    header_count, size = _varints(octets, at)
    record_end = pc.add(body, length)
    without_headers = pc.equal(header_count, _int(0))
    fields_end = pc.add(at, size)
    if include_headers and not pc.all(without_headers).as_py():
        raise _NeedsRecordDecoderError
    # Records with headers were not parsed to their end; the others must end where their
    # length said, else leave it to the per-record decoder to say what is wrong.
    consistent = pc.or_(pc.invert(without_headers), pc.equal(fields_end, record_end))
    if not pc.all(consistent).as_py():
        raise _NeedsRecordDecoderError

    def per_record(values: list[int], kind: pa.DataType) -> pa.Array:
        return pa.concat_arrays(
            [
                pa.repeat(pa.scalar(v, kind), b.record_count)
                for v, b in zip(values, batches, strict=True)
            ]
        )

    offsets = pc.add(per_record([b.base_offset for b in batches], pa.int64()), offset_delta)
    timestamps = pc.add(
        per_record([b.base_timestamp for b in batches], pa.int64()),
        pc.multiply(timestamp_delta, per_record([b.delta_factor for b in batches], pa.int64())),
    )
    arrays = [
        _binary(octets, buffer, key_start, key_length, count),
        _binary(octets, buffer, value_start, value_length, count),
        pa.repeat(pa.scalar(topic, pa.string()), count),
        pa.repeat(pa.scalar(partition, pa.int32()), count),
        offsets,
        timestamps.cast(MILLIS).cast(MICROS),
        per_record([b.timestamp_type for b in batches], pa.int32()),
    ]
    if include_headers:
        no_headers = pa.repeat(pa.scalar(0, pa.int32()), count + 1)
        arrays.append(
            pa.ListArray.from_arrays(
                no_headers, pa.array([], HEADERS_TYPE.value_type), type=HEADERS_TYPE
            )
        )
    rows = pa.RecordBatch.from_arrays(arrays, schema=schema)
    bounds = pc.min_max(offsets)
    if bounds["min"].as_py() < start or bounds["max"].as_py() >= end:
        keep = pc.and_(pc.greater_equal(offsets, _int(start)), pc.less(offsets, _int(end)))
        rows = rows.filter(keep)
    return rows


def _record_positions(data: bytes, payloads: list[bytes], batches: list[_Batch]) -> list[int]:
    """Where each record (its length varint) starts in `data`: the one walk made in Python."""
    one_byte = _ONE_BYTE
    positions: list[int] = []
    add = positions.append
    position = 0
    for payload, batch in zip(payloads, batches, strict=True):
        limit = position + len(payload)
        for _ in range(batch.record_count):
            add(position)
            byte = data[position]
            if byte < 0x80:
                position += 1 + one_byte[byte]
            elif data[position + 1] < 0x80:
                unsigned = (byte & 0x7F) | (data[position + 1] << 7)
                position += 2 + ((unsigned >> 1) ^ -(unsigned & 1))
            else:
                raise _NeedsRecordDecoderError
        if position != limit:
            raise _NeedsRecordDecoderError
    return positions


def _varints(octets: pa.Array, positions: pa.Array) -> tuple[pa.Array, pa.Array]:
    """The zig-zag varints at `positions` and how many bytes each takes."""
    byte = pc.take(octets, positions).cast(pa.int64())
    unsigned = pc.bit_wise_and(byte, _int(0x7F))
    size = pa.repeat(_int(1), len(positions))
    going = pc.greater_equal(byte, _int(0x80))
    for index in range(1, _VARINT_BYTES + 1):
        if not pc.any(going).as_py():
            break
        if index == _VARINT_BYTES:
            raise _NeedsRecordDecoderError
        byte = pc.take(octets, pc.add(positions, _int(index))).cast(pa.int64())
        more = pc.shift_left(pc.bit_wise_and(byte, _int(0x7F)), _int(7 * index))
        unsigned = pc.add(unsigned, pc.if_else(going, more, _int(0)))
        size = pc.add(size, going.cast(pa.int64()))
        going = pc.and_(going, pc.greater_equal(byte, _int(0x80)))
    value = pc.bit_wise_xor(
        pc.shift_right(unsigned, _int(1)), pc.negate(pc.bit_wise_and(unsigned, _int(1)))
    )
    return value, size


@functools.lru_cache(maxsize=4)
def _interleaving(count: int) -> pa.Array:
    """Where position i of `count` interleaved 4-word views takes its word from, when the
    words lie one array after another: word i % 4 of view i // 4."""
    index = pc.subtract(pc.cumulative_sum(pa.repeat(_int(1), 4 * count)), _int(1))
    return pc.add(
        pc.multiply(pc.bit_wise_and(index, _int(3)), _int(count)), pc.shift_right(index, _int(2))
    )


def _binary(
    octets: pa.Array, buffer: pa.Buffer, starts: pa.Array, lengths: pa.Array, count: int
) -> pa.Array:
    """A binary array of the byte ranges (start, length) of `buffer`; length -1 is null.

    Built as binary views (16 bytes each: length, then the bytes inline up to 12, else a
    4-byte prefix, buffer index 0 and the offset) that Arrow then copies into a binary array.
    """
    nulls = pc.less(lengths, _int(0))
    null_count = pc.sum(nulls.cast(pa.int64())).as_py()
    if null_count == count:
        return pa.nulls(count, pa.binary())
    sizes = pc.max_element_wise(lengths, _int(0))
    inline = pc.less_equal(sizes, _int(_INLINE))
    any_inline = pc.any(inline).as_py()
    words = [sizes]
    for word in range(3 if any_inline else 1):
        value = None
        for index in range(4):
            at = word * 4 + index
            byte = pc.take(octets, pc.add(starts, _int(at))).cast(pa.int64())
            if any_inline:
                # Inline views hold zeros after the value's end.
                byte = pc.if_else(pc.less(_int(at), sizes), byte, _int(0))
            shifted = pc.shift_left(byte, _int(8 * index)) if index else byte
            value = shifted if value is None else pc.bit_wise_or(value, shifted)
        words.append(value)
    if any_inline:
        words[2] = pc.if_else(inline, words[2], _int(0))
        words[3] = pc.if_else(inline, words[3], starts)
    else:
        words.append(pa.repeat(_int(0), count))
        words.append(starts)
    # Interleave the four words of each view: word w of view i goes to 4 * i + w.
    stacked = pa.concat_arrays([w.cast(pa.uint32(), safe=False) for w in words])
    source = _interleaving(count)
    views = pc.take(stacked, source)
    validity = pc.invert(nulls).buffers()[1] if null_count else None
    binary_views = pa.Array.from_buffers(
        pa.binary_view(), count, [validity, views.buffers()[1], buffer], null_count=null_count
    )
    return binary_views.cast(pa.binary())

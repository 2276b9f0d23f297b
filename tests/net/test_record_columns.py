"""decode_batch_columns: the same records as decode_batch, as columns, within an offset range."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from net.record_batch import Compression, CorruptBatchError, TimestampType
from net.records import Record, RecordColumns, decode_batch, decode_batch_columns, encode_batch
from tests.net.test_records import NOW_MS, record_strategy, sample_records


def columns_of(records: list[Record], timestamp_type: int) -> dict[str, list[Any]]:
    return {
        "offsets": [r.offset for r in records],
        "timestamps": [r.timestamp for r in records],
        "timestamp_types": [timestamp_type] * len(records),
        "keys": [r.key for r in records],
        "values": [r.value for r in records],
        "headers": [[(h.key, h.value) for h in r.headers] for r in records],
    }


def as_dict(columns: RecordColumns) -> dict[str, list[Any]]:
    return {
        name: list(getattr(columns, name))
        for name in ("offsets", "timestamps", "timestamp_types", "keys", "values", "headers")
    }


@settings(deadline=None)
@given(
    records=st.lists(record_strategy, min_size=1, max_size=30),
    compression=st.sampled_from(list(Compression)),
    timestamp_type=st.sampled_from(list(TimestampType)),
    base_offset=st.integers(0, 2**40),
    bounds=st.tuples(st.integers(-3, 33), st.integers(-3, 33)),
)
def test_columns_hold_the_records_decode_batch_gives_within_the_range(
    records: list[Record],
    compression: Compression,
    timestamp_type: TimestampType,
    base_offset: int,
    bounds: tuple[int, int],
) -> None:
    batch = encode_batch(
        records,
        base_offset=base_offset,
        compression=compression,
        timestamp_type=timestamp_type,
        now_ms=NOW_MS,
    )
    start, end = base_offset + min(bounds), base_offset + max(bounds)
    _header, decoded = decode_batch(batch)
    expected = columns_of(
        [r for r in decoded if r.offset is not None and start <= r.offset < end],
        int(timestamp_type),
    )
    # Appending to columns that hold rows already keeps those rows.
    columns = RecordColumns.empty(with_headers=True)
    decode_batch_columns(encode_batch([Record(b"before")], now_ms=NOW_MS), 0, columns)
    before = as_dict(columns)

    decode_batch_columns(batch, 0, columns, start=start, end=end)

    assert as_dict(columns) == {name: before[name] + expected[name] for name in expected}


def test_columns_without_headers_and_at_a_position() -> None:
    records = sample_records(10)
    batch = encode_batch(records, base_offset=100, now_ms=NOW_MS)
    columns = RecordColumns.empty(with_headers=False)
    header = decode_batch_columns(b"\x00" * 7 + batch, 7, columns)
    assert header.base_offset == 100
    assert columns.headers is None
    assert columns.offsets == list(range(100, 110))
    assert columns.values == [r.value for r in records]


def test_a_corrupt_batch_leaves_the_columns_as_they_were() -> None:
    columns = RecordColumns.empty(with_headers=True)
    decode_batch_columns(encode_batch([Record(b"kept")], now_ms=NOW_MS), 0, columns)
    damaged = bytearray(encode_batch(sample_records(5), now_ms=NOW_MS))
    damaged[-3] ^= 0xFF
    with pytest.raises(CorruptBatchError):
        decode_batch_columns(damaged, 0, columns)
    assert columns.values == [b"kept"]
    assert len(columns.keys) == len(columns.headers or []) == len(columns.timestamp_types) == 1

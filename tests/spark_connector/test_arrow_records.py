"""decode_fetched: Arrow rows of fetched batches, the same as the per-record decoder's, within
the offset range, whatever the codec, nulls, headers or varint widths."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from net.record_batch import Compression, TimestampType
from net.records import Header, Record, RecordColumns, decode_batch_columns, encode_batch
from spark_connector.arrow_records import decode_fetched
from spark_connector.rows import arrow_schema, record_batch

NOW_MS = 1_790_000_000_000

record_strategy = st.builds(
    Record,
    # Up to 5000 bytes: record lengths stay two-byte varints, which Arrow decodes.
    value=st.none() | st.binary(max_size=40) | st.binary(min_size=120, max_size=5_000),
    key=st.none() | st.binary(max_size=20),
    headers=st.lists(
        st.builds(Header, st.text(max_size=5), st.none() | st.binary(max_size=5)), max_size=2
    ).map(tuple)
    | st.just(()),
    timestamp=st.none() | st.integers(NOW_MS - 10**9, NOW_MS + 10**9),
)
batch_strategy = st.tuples(
    st.lists(record_strategy, min_size=1, max_size=150),
    st.sampled_from(list(Compression)),
    st.sampled_from(list(TimestampType)),
)


def reference(records: bytes, start: int, end: int, include_headers: bool) -> pa.RecordBatch:
    columns = RecordColumns.empty(with_headers=include_headers)
    position = 0
    while position < len(records):
        header = decode_batch_columns(records, position, columns, start=start, end=end)
        position += header.size
    return record_batch("topic", 3, columns, arrow_schema(include_headers))


@settings(deadline=None, max_examples=60)
@given(
    batches=st.lists(batch_strategy, min_size=1, max_size=4),
    bounds=st.tuples(st.integers(0, 700), st.integers(0, 700)),
    include_headers=st.booleans(),
)
def test_rows_equal_the_per_record_decoders(
    batches: list[tuple[list[Record], Compression, TimestampType]],
    bounds: tuple[int, int],
    include_headers: bool,
) -> None:
    encoded = []
    base_offset = 100
    for records, compression, timestamp_type in batches:
        encoded.append(
            encode_batch(
                records,
                base_offset=base_offset,
                compression=compression,
                timestamp_type=timestamp_type,
                now_ms=NOW_MS,
            )
        )
        base_offset += len(records) + 7  # a gap, as compaction leaves
    data = b"".join(encoded)
    start, end = 100 + min(bounds), 100 + max(bounds)
    rows = decode_fetched(
        data,
        start=start,
        end=end,
        topic="topic",
        partition=3,
        schema=arrow_schema(include_headers),
        include_headers=include_headers,
    )
    assert rows.schema.equals(arrow_schema(include_headers))
    assert rows.to_pylist() == reference(data, start, end, include_headers).to_pylist()


@pytest.mark.parametrize("size", [0, 1, 11, 12, 13, 200])
def test_values_around_the_inline_size_of_binary_views(size: int) -> None:
    records = [Record(bytes(range(i, i + size)) if i % 3 else None, b"k" * i) for i in range(20)]
    data = encode_batch(records, now_ms=NOW_MS)
    rows = decode_fetched(
        data,
        start=0,
        end=20,
        topic="t",
        partition=0,
        schema=arrow_schema(False),
        include_headers=False,
    )
    assert rows.column("value").to_pylist() == [r.value for r in records]
    assert rows.column("key").to_pylist() == [r.key for r in records]


@pytest.mark.parametrize(
    "records",
    [
        # A record length of three varint bytes, and timestamps ~30 years apart: varints
        # Arrow is not asked to decode.
        [Record(b"v" * 20_000), Record(b"w", timestamp=0)],
        # Headers, asked for below.
        [Record(b"v", headers=(Header("h", b"x"),)), Record(b"w")],
    ],
)
def test_records_beyond_the_arrow_path_give_the_same_rows(records: list[Record]) -> None:
    data = encode_batch(records, now_ms=NOW_MS)
    rows = decode_fetched(
        data,
        start=0,
        end=2,
        topic="topic",
        partition=3,
        schema=arrow_schema(True),
        include_headers=True,
    )
    assert rows.to_pylist() == reference(data, 0, 2, True).to_pylist()

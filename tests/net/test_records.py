"""net.records against real clients' encoders and readers, and its own promises.

Cross-checks: kafka-python builds and reads batches (its batch and record code, its xerial
snappy framing), and librdkafka (confluent-kafka's in-process mock cluster) produces batches with
its own codecs: raw snappy, LZ4 frames and zstd frames without a content size.
"""

from __future__ import annotations

import socket
import struct
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import confluent_kafka
import cramjam
import crc32c
import kafka.codec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record import default_records
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from net.api_keys import ApiKey
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
    read_header,
    set_log_append_time,
    validate_batch,
)
from net.records import (
    Header,
    Record,
    decode_batch,
    decode_batches,
    encode_batch,
    recompress_batches,
)

NOW_MS = 1_700_000_000_000
CODECS = list(Compression)
_CRC = struct.Struct(">I")
_CRC_AT = 17
_ATTRIBUTES = struct.Struct(">h")
_ATTRIBUTES_AT = 21


def sample_records(count: int = 40) -> list[Record]:
    """Nulls, headers and out-of-order timestamps; values compress well, so clients compress."""
    return [
        Record(
            value=None if i % 7 == 3 else b"value-%d-" % i + b"x" * (i * 5),
            key=None if i % 5 == 0 else b"key-%d" % i,
            headers=(Header("trace", b"t%d" % i), Header("empty", None)) if i % 3 else (),
            timestamp=NOW_MS + (i * 37) % 11 - 5,
        )
        for i in range(count)
    ]


def with_offsets(records: Sequence[Record], base_offset: int) -> list[Record]:
    return [replace(record, offset=base_offset + i) for i, record in enumerate(records)]


def reseal(batch: bytes | bytearray) -> bytes:
    """The batch with its CRC32C recomputed, so that only the damage done on purpose remains."""
    sealed = bytearray(batch)
    _CRC.pack_into(sealed, _CRC_AT, crc32c.crc32c(memoryview(sealed)[CRC_START:]))
    return bytes(sealed)


def batch_around(section: bytes, record_count: int, attributes: int = 0) -> bytes:
    """A batch built by hand (not by encode_batch) around arbitrary record bytes."""
    header = HEADER_STRUCT.pack(
        0,
        HEADER_SIZE - LOG_OVERHEAD + len(section),
        -1,
        MAGIC_V2,
        0,
        attributes,
        max(record_count - 1, 0),
        NOW_MS,
        NOW_MS,
        -1,
        -1,
        -1,
        record_count,
    )
    return reseal(header + section)


def records_section(batch: bytes) -> bytes:
    """The bytes after the header: the records, compressed as the batch says."""
    return batch[HEADER_SIZE:]


def with_records_section(batch: bytes, section: bytes, compression: Compression) -> bytes:
    """`batch` with its records section replaced by `section`, compressed with `compression`."""
    fields = list(HEADER_STRUCT.unpack_from(batch))
    fields[1] = HEADER_SIZE - LOG_OVERHEAD + len(section)  # batch length
    fields[5] = fields[5] & ~0x07 | int(compression)  # attributes
    return reseal(HEADER_STRUCT.pack(*fields) + section)


# --- kafka-python -------------------------------------------------------------------------


@pytest.fixture
def kafka_python_codecs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Give kafka-python the codecs whose packages (python-snappy, lz4, zstandard) are missing.

    Only the raw compress/decompress calls come from cramjam; kafka-python's batch and record
    layout and its xerial snappy framing stay its own. librdkafka covers independent codecs.
    """
    if not kafka.codec.has_snappy():
        monkeypatch.setattr(
            kafka.codec,
            "snappy",
            SimpleNamespace(
                compress=lambda data: bytes(cramjam.snappy.compress_raw(data)),
                decompress=lambda data: bytes(cramjam.snappy.decompress_raw(data)),
            ),
        )
    if not kafka.codec.has_lz4():
        monkeypatch.setattr(kafka.codec, "has_lz4", lambda: True)
        monkeypatch.setattr(
            default_records, "lz4_encode", lambda data: bytes(cramjam.lz4.compress(data))
        )
        monkeypatch.setattr(
            default_records, "lz4_decode", lambda data: bytes(cramjam.lz4.decompress(data))
        )
    if not kafka.codec.has_zstd():
        monkeypatch.setattr(kafka.codec, "has_zstd", lambda: True)
        monkeypatch.setattr(
            default_records, "zstd_encode", lambda data: bytes(cramjam.zstd.compress(data))
        )
        monkeypatch.setattr(
            default_records, "zstd_decode", lambda data: bytes(cramjam.zstd.decompress(data))
        )


def kafka_python_batch(records: Sequence[Record], compression: Compression) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=int(compression),
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 24,
    )
    for offset, record in enumerate(records):
        headers = [(header.key, header.value) for header in record.headers]
        assert builder.append(offset, record.timestamp, record.key, record.value, headers)
    return bytes(builder.build())


def read_with_kafka_python(buffer: bytes) -> list[Record]:
    """Records as kafka-python's reader sees them, checking each batch's CRC on the way."""
    records: list[Record] = []
    batches = MemoryRecords(buffer)
    while batches.has_next():
        batch = batches.next_batch()
        assert batch.validate_crc()
        records.extend(
            Record(
                value=record.value,
                key=record.key,
                headers=tuple(Header(key, value) for key, value in record.headers),
                timestamp=record.timestamp,
                offset=record.offset,
            )
            for record in batch
        )
    return records


@pytest.mark.usefixtures("kafka_python_codecs")
@pytest.mark.parametrize("compression", CODECS, ids=lambda c: c.name.lower())
def test_kafka_python_batches_decode_to_the_same_records(compression: Compression) -> None:
    records = sample_records()
    batch = kafka_python_batch(records, compression)

    header, decoded = decode_batch(batch)

    assert header.compression == compression
    assert decoded == with_offsets(records, 0)


@pytest.mark.usefixtures("kafka_python_codecs")
@pytest.mark.parametrize("compression", CODECS, ids=lambda c: c.name.lower())
def test_our_batches_read_the_same_with_kafka_python(compression: Compression) -> None:
    records = sample_records()
    batch = encode_batch(records, base_offset=1000, compression=compression)

    assert read_with_kafka_python(batch) == with_offsets(records, 1000)


@pytest.mark.usefixtures("kafka_python_codecs")
@pytest.mark.parametrize("compression", CODECS[1:], ids=lambda c: c.name.lower())
def test_multi_block_payloads_cross_check_with_kafka_python(compression: Compression) -> None:
    # ~1.3 MB of records: many xerial snappy chunks (32 KiB) and LZ4 blocks (64 KiB).
    records = [Record(b"%08d" % i * 200, b"k%d" % i, timestamp=NOW_MS) for i in range(800)]

    ours = encode_batch(records, compression=compression)
    theirs = kafka_python_batch(records, compression)

    assert read_with_kafka_python(ours) == with_offsets(records, 0)
    assert decode_batch(theirs)[1] == with_offsets(records, 0)


def test_varint_boundaries_cross_check_with_kafka_python() -> None:
    # Lengths and deltas on each side of one-, two- and three-byte varints, and far timestamps
    # that need nine- and ten-byte varlongs, in both directions.
    lengths = [0, 63, 64, 8191, 8192, 16383, 16384, 1 << 20]
    records = [Record(b"v" * n, b"k" * n, (Header("h" * n, b"x" * n),)) for n in lengths]
    timestamps = [0, 63, -64, 64, 8192, 2**62 - 1, -(2**62) - 1, 2**62]
    records = [replace(r, timestamp=t) for r, t in zip(records, timestamps, strict=True)]
    records.extend(Record(b"v", timestamp=0) for _ in range(200))

    batch = encode_batch(records, base_offset=2**40)

    assert read_with_kafka_python(batch) == with_offsets(records, 2**40)
    assert decode_batch(kafka_python_batch(records, Compression.NONE))[1] == with_offsets(
        records, 0
    )


# --- librdkafka ---------------------------------------------------------------------------


def _receive_exactly(sock: socket.socket, size: int) -> bytes:
    chunks = []
    while size:
        chunk = sock.recv(size)
        assert chunk, "mock broker closed the connection"
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def fetch_records_section(address: tuple[str, int], topic: str, offset: int) -> bytes:
    """One Fetch v4 for partition 0 of `topic`: the raw records bytes, as the broker sent them."""
    client_id = b"test-records"
    name = topic.encode()
    request = (
        struct.pack(">hhih", ApiKey.FETCH, 4, 7, len(client_id))  # api key, version, correlation id
        + client_id
        + struct.pack(">iiiib", -1, 500, 1, 1 << 24, 0)  # replica, wait, min/max bytes, isolation
        + struct.pack(">ih", 1, len(name))
        + name
        + struct.pack(">iiqi", 1, 0, offset, 1 << 24)
    )
    with socket.create_connection(address, timeout=10) as sock:
        sock.sendall(struct.pack(">i", len(request)) + request)
        (size,) = struct.unpack(">i", _receive_exactly(sock, 4))
        response = _receive_exactly(sock, size)
    # correlation id, throttle time, topic count, topic name, partition count, partition index
    (name_length,) = struct.unpack_from(">h", response, 12)
    position = 14 + name_length + 8
    error_code, _, _, aborted_count = struct.unpack_from(">hqqi", response, position)
    assert error_code == 0
    position += 22 + 16 * max(aborted_count, 0)
    (records_size,) = struct.unpack_from(">i", response, position)
    return response[position + 4 : position + 4 + records_size]


def produce_with_librdkafka(compression: Compression) -> list[tuple[BatchHeader, list[Record]]]:
    """`sample_records()` produced by librdkafka to a mock broker, fetched back and decoded."""
    producer = confluent_kafka.Producer(
        {
            "test.mock.num.brokers": 1,
            "compression.type": compression.name.lower(),
            # Long enough that the 40 records form one batch; flush() below sends it at once.
            "linger.ms": 10000,
            "log_level": 3,
        }
    )
    errors: list[object] = []

    def on_delivery(error: object, _message: object) -> None:
        if error is not None:
            errors.append(error)

    for record in sample_records():
        assert record.timestamp is not None
        producer.produce(
            "records",
            partition=0,
            value=record.value,
            key=record.key,
            headers=[(header.key, header.value) for header in record.headers],
            timestamp=record.timestamp,
            on_delivery=on_delivery,
        )
    assert producer.flush(10) == 0
    assert errors == []
    broker = next(iter(producer.list_topics(timeout=10).brokers.values()))
    batches: list[tuple[BatchHeader, list[Record]]] = []
    next_offset = 0
    while next_offset < len(sample_records()):
        section = fetch_records_section((broker.host, broker.port), "records", next_offset)
        fetched = list(decode_batches(section))
        assert fetched, f"the mock broker returned no batch at offset {next_offset}"
        batches.extend(fetched)
        next_offset = fetched[-1][0].next_offset
    return batches


@pytest.fixture(scope="module")
def librdkafka_batches() -> dict[Compression, list[tuple[BatchHeader, list[Record]]]]:
    return {compression: produce_with_librdkafka(compression) for compression in CODECS}


@pytest.mark.parametrize("compression", CODECS, ids=lambda c: c.name.lower())
def test_librdkafka_batches_decode_to_the_same_records(
    compression: Compression,
    librdkafka_batches: dict[Compression, list[tuple[BatchHeader, list[Record]]]],
) -> None:
    batches = librdkafka_batches[compression]

    # librdkafka sends a batch uncompressed when compressing would not shrink it, which can
    # happen if its timing splits off a small batch; at least one must carry the codec.
    codecs = [header.compression for header, _ in batches]
    assert compression in codecs
    assert set(codecs) <= {compression, Compression.NONE}
    assert [record for _, records in batches for record in records] == with_offsets(
        sample_records(), 0
    )


# --- round trips --------------------------------------------------------------------------

header_strategy = st.builds(Header, st.text(max_size=12), st.none() | st.binary(max_size=24))
record_strategy = st.builds(
    Record,
    value=st.none() | st.binary(max_size=300),
    key=st.none() | st.binary(max_size=40),
    headers=st.lists(header_strategy, max_size=3).map(tuple),
    # Any pair of these differs by less than 2**63, so every delta fits a varlong.
    timestamp=st.none() | st.integers(-(2**62), 2**62 - 1),
)


# encode_batch's options, named as BatchHeader names what they become.
batch_options = st.fixed_dictionaries(
    {
        "base_offset": st.integers(0, 2**62),
        "partition_leader_epoch": st.integers(-1, 2**31 - 1),
        "compression": st.sampled_from(CODECS),
        "timestamp_type": st.sampled_from(list(TimestampType)),
        "producer_id": st.integers(-1, 2**63 - 1),
        "producer_epoch": st.integers(-1, 2**15 - 1),
        "base_sequence": st.integers(-1, 2**31 - 1),
        "is_transactional": st.booleans(),
        "is_control": st.booleans(),
    }
)


@settings(deadline=None)
@given(records=st.lists(record_strategy, min_size=1, max_size=30), options=batch_options)
def test_encode_then_decode_gives_back_the_records_and_header(
    records: list[Record], options: dict[str, Any]
) -> None:
    batch = encode_batch(records, now_ms=NOW_MS, **options)

    header, decoded = decode_batch(batch)

    create_times = [NOW_MS if r.timestamp is None else r.timestamp for r in records]
    if options["timestamp_type"] == TimestampType.LOG_APPEND_TIME:
        expected_times = [NOW_MS] * len(records)
    else:
        expected_times = create_times
    base_offset = options["base_offset"]
    assert decoded == [
        replace(record, timestamp=timestamp, offset=base_offset + i)
        for i, (record, timestamp) in enumerate(zip(records, expected_times, strict=True))
    ]
    assert validate_batch(batch) == header
    assert {name: getattr(header, name) for name in options} == options
    assert (header.size, header.last_offset, header.record_count) == (
        len(batch),
        base_offset + len(records) - 1,
        len(records),
    )
    assert (header.base_timestamp, header.max_timestamp) == (create_times[0], max(expected_times))


@pytest.mark.parametrize("make_buffer", [bytes, bytearray, memoryview])
def test_decode_accepts_any_buffer_and_position(
    make_buffer: Callable[[bytes], bytes | bytearray | memoryview],
) -> None:
    first = encode_batch([Record(b"a")], base_offset=5, now_ms=NOW_MS)
    second = encode_batch([Record(b"b"), Record(b"c")], base_offset=6, now_ms=NOW_MS)

    header, records = decode_batch(make_buffer(first + second), len(first))

    assert header.base_offset == 6
    assert records == [
        Record(b"b", timestamp=NOW_MS, offset=6),
        Record(b"c", timestamp=NOW_MS, offset=7),
    ]


def test_record_without_timestamp_takes_the_batch_clock() -> None:
    batch = encode_batch(
        [Record(b"a", timestamp=NOW_MS - 10), Record(b"b")], now_ms=NOW_MS, base_offset=3
    )

    header, records = decode_batch(batch)

    assert [r.timestamp for r in records] == [NOW_MS - 10, NOW_MS]
    assert (header.base_timestamp, header.max_timestamp) == (NOW_MS - 10, NOW_MS)


def test_record_without_timestamp_and_clock_takes_wall_time() -> None:
    before = time.time_ns() // 1_000_000
    (record,) = decode_batch(encode_batch([Record(b"a")]))[1]
    after = time.time_ns() // 1_000_000

    assert record.timestamp is not None
    assert before <= record.timestamp <= after


def test_log_append_time_stamped_by_a_broker_becomes_every_record_timestamp() -> None:
    batch = bytearray(encode_batch(sample_records(5), now_ms=NOW_MS))
    set_log_append_time(batch, 0, NOW_MS + 99)

    header, records = decode_batch(batch)

    assert header.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert {r.timestamp for r in records} == {NOW_MS + 99}


def test_encode_refuses_an_empty_batch() -> None:
    with pytest.raises(ValueError, match="at least one record"):
        encode_batch([])


def test_encode_refuses_a_timestamp_delta_beyond_a_varlong() -> None:
    with pytest.raises(ValueError, match="varlong"):
        encode_batch([Record(b"a", timestamp=-(2**62)), Record(b"b", timestamp=2**62)])


# --- codec details ------------------------------------------------------------------------


def test_snappy_is_written_xerial_framed_like_the_java_producer() -> None:
    batch = encode_batch(sample_records(), compression=Compression.SNAPPY)

    payload = records_section(batch)
    assert payload[:16] == b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)


def test_raw_snappy_as_librdkafka_writes_it_decodes() -> None:
    plain = encode_batch(sample_records(), now_ms=NOW_MS)
    raw = bytes(cramjam.snappy.compress_raw(records_section(plain)))
    batch = with_records_section(plain, raw, Compression.SNAPPY)

    assert decode_batch(batch)[1] == decode_batch(plain)[1]


def test_lz4_frames_have_independent_blocks_as_the_java_reader_requires() -> None:
    batch = encode_batch(sample_records(), compression=Compression.LZ4)

    payload = records_section(batch)
    assert payload[:4] == b"\x04\x22\x4d\x18"  # LZ4 frame magic
    assert payload[4] & 0x20, "FLG block independence bit"


def test_zstd_frame_without_content_size_decodes() -> None:
    plain = encode_batch(sample_records(), now_ms=NOW_MS)
    compressor = cramjam.zstd.Compressor()
    compressor.compress(records_section(plain))
    frame = bytes(compressor.finish())
    assert frame[4] & 0xC0 == 0, "a streaming frame carries no content size"
    batch = with_records_section(plain, frame, Compression.ZSTD)

    assert decode_batch(batch)[1] == decode_batch(plain)[1]


def test_gzip_with_concatenated_members_decodes() -> None:
    plain = encode_batch(sample_records(), now_ms=NOW_MS)
    section = records_section(plain)
    members = b"".join(zlib.compress(part, wbits=31) for part in (section[:100], section[100:]))
    batch = with_records_section(plain, members, Compression.GZIP)

    assert decode_batch(batch)[1] == decode_batch(plain)[1]


# --- damage -------------------------------------------------------------------------------


def test_corrupt_crc_is_refused() -> None:
    batch = bytearray(encode_batch(sample_records(), compression=Compression.NONE))
    batch[-1] ^= 0xFF

    with pytest.raises(CorruptBatchError, match="CRC32C mismatch"):
        decode_batch(batch)


def test_truncated_batch_is_refused() -> None:
    batch = encode_batch(sample_records())

    with pytest.raises(CorruptBatchError, match="only"):
        decode_batch(batch[:-1])
    with pytest.raises(CorruptBatchError, match="truncated batch header"):
        decode_batch(batch[: HEADER_SIZE - 1])


@pytest.mark.parametrize("cut", [1, LOG_OVERHEAD, HEADER_SIZE - 1, HEADER_SIZE, -1])
def test_decode_batches_stops_silently_at_a_partial_trailing_batch(cut: int) -> None:
    first = encode_batch([Record(b"a")], base_offset=0, now_ms=NOW_MS)
    second = encode_batch([Record(b"b"), Record(b"c")], base_offset=1, now_ms=NOW_MS)
    third = encode_batch([Record(b"d")], base_offset=3, now_ms=NOW_MS)

    decoded = list(decode_batches(first + second + third[:cut]))

    assert [records for _, records in decoded] == [
        [Record(b"a", timestamp=NOW_MS, offset=0)],
        [Record(b"b", timestamp=NOW_MS, offset=1), Record(b"c", timestamp=NOW_MS, offset=2)],
    ]


def test_decode_batches_raises_at_a_corrupt_batch_before_the_end() -> None:
    first = bytearray(encode_batch([Record(b"a")], now_ms=NOW_MS))
    first[-1] ^= 0x01
    second = encode_batch([Record(b"b")], base_offset=1, now_ms=NOW_MS)

    with pytest.raises(CorruptBatchError, match="CRC32C"):
        list(decode_batches(bytes(first) + second))


@pytest.mark.parametrize("compression", CODECS[1:], ids=lambda c: c.name.lower())
def test_payload_cut_short_cannot_be_decompressed_and_is_corrupt(compression: Compression) -> None:
    whole = encode_batch(sample_records(), compression=compression)
    payload = records_section(whole)
    batch = with_records_section(whole, payload[: len(payload) // 2], compression)

    with pytest.raises(CorruptBatchError, match=f"{compression.name.lower()} payload cannot"):
        decode_batch(batch)


def test_raw_snappy_garbage_is_corrupt() -> None:
    batch = batch_around(b"\xff\xff\xff\x7f" + b"\x00" * 8, 1, attributes=int(Compression.SNAPPY))

    with pytest.raises(CorruptBatchError, match="snappy payload cannot be decompressed"):
        decode_batch(batch)


def _one_record(body: bytes) -> bytes:
    """A record: its length varint (zig-zag, one byte) then `body`."""
    assert len(body) < 64
    return bytes([len(body) << 1]) + body


# attributes, timestamp delta 0, offset delta 0, then key, value and headers.
_RECORD_START = b"\x00\x00\x00"


@pytest.mark.parametrize(
    ("section", "record_count", "message"),
    [
        pytest.param(
            _one_record(_RECORD_START + b"\x01\x01\x00"),
            2,
            "inside record 1 of 2",
            id="fewer-records-than-counted",
        ),
        pytest.param(
            _one_record(_RECORD_START + b"\x01\x01\x00") * 2,
            1,
            "bytes follow the last",
            id="more-bytes-than-counted",
        ),
        pytest.param(
            _one_record(_RECORD_START + b"\x01\x01\x00\x00"),
            1,
            "declared 7 bytes",
            id="record-longer-than-its-fields",
        ),
        pytest.param(
            b"\x0c" + _RECORD_START + b"\x04ab\x01\x00",
            1,
            "declared 6 bytes",
            id="key-runs-past-record",
        ),
        pytest.param(b"\x7e" + _RECORD_START, 1, "runs past", id="length-past-the-end"),
        pytest.param(
            _one_record(_RECORD_START + b"\x03\x01\x00"),
            1,
            "key length -2",
            id="negative-key-length",
        ),
        pytest.param(
            _one_record(_RECORD_START + b"\x01\x05\x00"),
            1,
            "value length -3",
            id="negative-value-length",
        ),
        pytest.param(
            _one_record(_RECORD_START + b"\x01\x01\x01"),
            1,
            "header count -1",
            id="negative-header-count",
        ),
        pytest.param(
            _one_record(_RECORD_START + b"\x01\x01\x02\x01\x01"),
            1,
            "header key length -1",
            id="null-header-key",
        ),
        pytest.param(
            _one_record(_RECORD_START + b"\x01\x01\x02\x02a\x03"),
            1,
            "header value length -2",
            id="negative-header-value-length",
        ),
        pytest.param(
            _one_record(_RECORD_START + b"\x01\x01\x02\x02\xff\x01"),
            1,
            "not UTF-8",
            id="header-key-not-utf8",
        ),
        pytest.param(b"\xff" * 10 + b"\x01", 1, "longer than ten bytes", id="overlong-varint"),
    ],
)
def test_records_that_do_not_parse_are_corrupt(
    section: bytes, record_count: int, message: str
) -> None:
    with pytest.raises(CorruptBatchError, match=message):
        decode_batch(batch_around(section, record_count))


def test_the_handmade_record_bytes_are_what_they_seem() -> None:
    # The damage cases above start from this record: null key, null value, no headers.
    valid = batch_around(_one_record(_RECORD_START + b"\x01\x01\x00"), 1)

    assert decode_batch(valid)[1] == [Record(None, None, (), NOW_MS, 0)]


def test_unknown_codec_is_an_invalid_batch() -> None:
    batch = bytearray(encode_batch([Record(b"a")]))
    _ATTRIBUTES.pack_into(batch, _ATTRIBUTES_AT, 5)

    with pytest.raises(InvalidBatchError, match="5 is not a valid Compression"):
        decode_batch(reseal(batch))


@pytest.mark.parametrize("compression", CODECS, ids=lambda c: c.name.lower())
def test_batch_emptied_by_compaction_has_no_records(compression: Compression) -> None:
    header, records = decode_batch(batch_around(b"", 0, attributes=int(compression)))

    assert records == []
    assert (header.record_count, header.compression) == (0, compression)


@pytest.mark.parametrize("target", list(Compression))
@pytest.mark.parametrize("sent", [Compression.NONE, Compression.LZ4])
def test_recompressed_batches_keep_their_records_and_header_fields(
    sent: Compression, target: Compression
) -> None:
    records = [Record(b"v%d" % i, key=b"k%d" % i, timestamp=1_000 + i) for i in range(5)]
    first = encode_batch(
        records, compression=sent, producer_id=7, producer_epoch=1, base_sequence=3
    )
    control = encode_batch([Record(b"\x00\x00\x00\x00", key=b"\x00\x00\x00\x00")], is_control=True)
    sent_batches = first + control
    recompressed = recompress_batches(sent_batches, target)
    if sent is target:
        assert recompressed is sent_batches
        return
    (header, decoded), (control_header, _) = list(decode_batches(bytes(recompressed)))
    assert header.compression is target
    assert [(r.key, r.value, r.timestamp) for r in decoded] == [
        (r.key, r.value, r.timestamp) for r in records
    ]
    original = read_header(first)
    assert header._replace(attributes=0, crc=0, batch_length=0) == original._replace(
        attributes=0, crc=0, batch_length=0
    )
    # A control batch (a transaction marker) is never recompressed.
    assert control_header.compression is Compression.NONE
    assert bytes(recompressed).endswith(control)


def test_a_corrupt_batch_is_refused_not_resealed() -> None:
    damaged = bytearray(encode_batch([Record(b"value")]))
    damaged[-1] ^= 0xFF
    with pytest.raises(CorruptBatchError):
        recompress_batches(bytes(damaged), Compression.GZIP)


@pytest.mark.parametrize(
    ("codec", "fast", "small"),
    [(Compression.GZIP, 1, 9), (Compression.ZSTD, 1, 19), (Compression.LZ4, 1, 17)],
)
def test_recompression_at_a_level_is_read_back_and_a_higher_level_packs_tighter(
    codec: Compression, fast: int, small: int
) -> None:
    # Varied but repetitive values: levels make a difference on them.
    records = [Record(b"%d-" % (i * i % 97) * 40 + bytes(range(i % 50))) for i in range(300)]
    sent = encode_batch(records)
    sizes = {}
    for level in (fast, small):
        recompressed = bytes(recompress_batches(sent, codec, level))
        ((header, decoded),) = list(decode_batches(recompressed))
        assert header.compression is codec
        assert [r.value for r in decoded] == [r.value for r in records]
        sizes[level] = len(recompressed)
    assert sizes[small] < sizes[fast]

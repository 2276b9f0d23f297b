"""The codec: headers by flexibility, frames, kio round trips, error and refusal responses."""

from __future__ import annotations

import dataclasses
import datetime
import functools
import io
import struct
import types
import typing
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode
from kio.serial import entity_writer
from kio.static.primitive import (
    Interval,
    TZAware,
    TZAwareMicros,
    f64,
    i16,
    i32Timedelta,
    i64Timedelta,
)

from net import legacy_produce
from net.api_keys import ApiKey
from net.protocol import (
    InvalidRequestError,
    UnknownApiError,
    api_versions_error_frame,
    decode_request,
    decode_response,
    encode_body,
    encode_request,
    encode_response,
    error_response,
    field_entity_type,
    make_entity,
    read_request_header,
    request_schema,
    response_schema,
    schema_versions,
    unsupported_version_response,
)
from tests.net.schemas import response_type

# Every API key this project names (net.api_keys names those it serves, sends or decodes), at
# every version of kio's index: what any node advertises in ApiVersions is among these (a node
# started through the `kraft` script checks it, tests/integration/test_node_entry.py), and the
# codec resolves each through its lazy schema lookup.
SERVED_API_KEYS = tuple(ApiKey)
SERVED = [(key, version) for key in SERVED_API_KEYS for version in schema_versions(key)]


@functools.cache
def entities(entity_type: Any) -> st.SearchStrategy[Any]:
    """Values of a kio field type, with small collections so hundreds of schemas stay fast."""
    origin = typing.get_origin(entity_type)
    if origin in (types.UnionType, typing.Union):
        (inner,) = [arg for arg in typing.get_args(entity_type) if arg is not type(None)]
        return st.none() | entities(inner)
    if origin is tuple:
        return st.lists(entities(typing.get_args(entity_type)[0]), max_size=2).map(tuple)
    if isinstance(entity_type, type) and dataclasses.is_dataclass(entity_type):
        return st.builds(
            entity_type,
            **{f.name: entities(typing.cast(Any, f.type)) for f in dataclasses.fields(entity_type)},
        )
    if entity_type is ErrorCode:
        return st.sampled_from(ErrorCode)
    if isinstance(entity_type, type) and issubclass(entity_type, Interval):
        return st.integers(entity_type.__low__, entity_type.__high__)
    if entity_type is i64Timedelta:
        # kio's reader overflows on i64 millisecond counts beyond timedelta's range.
        return st.integers(-(2**40), 2**40).map(lambda ms: datetime.timedelta(milliseconds=ms))
    if entity_type in (i32Timedelta, TZAware, TZAwareMicros):
        return st.from_type(entity_type)
    if entity_type is f64:
        return st.floats(allow_nan=False, allow_infinity=False)
    if entity_type is bool:
        return st.booleans()
    if entity_type is uuid.UUID:
        return st.uuids()
    if isinstance(entity_type, type) and issubclass(entity_type, str):
        return st.text(max_size=6)
    if isinstance(entity_type, type) and issubclass(entity_type, bytes):
        return st.binary(max_size=8)
    raise TypeError(f"no strategy for {entity_type!r}")


ROUND_TRIP = settings(
    max_examples=5,
    deadline=None,
    database=None,
    phases=[Phase.generate],
    suppress_health_check=list(HealthCheck),
)


@pytest.mark.parametrize(("api_key", "version"), SERVED, ids=[f"{k}v{v}" for k, v in SERVED])
def test_every_served_version_round_trips(api_key: int, version: int) -> None:
    request_type = request_schema(api_key, version)
    response_type = response_schema(api_key, version)
    assert request_type is not None
    assert response_type is not None

    @ROUND_TRIP
    @given(
        request=entities(request_type),
        response=entities(response_type),
        correlation_id=st.integers(-(2**31), 2**31 - 1),
        client_id=st.none() | st.text(max_size=10),
    )
    def round_trip(request: Any, response: Any, correlation_id: int, client_id: str | None) -> None:
        # An ApiVersions answer of UNSUPPORTED_VERSION is read as v0 whatever the version asked
        # (KIP-511); the server writes those with `api_versions_error_frame`, never this way.
        assume(
            api_key != ApiKey.API_VERSIONS or response.error_code != ErrorCode.unsupported_version
        )
        frame = b"".join(encode_request(request, correlation_id, client_id))
        assert struct.unpack_from(">i", frame)[0] == len(frame) - 4
        header, decoded = decode_request(frame[4:])
        assert (header.api_key, header.api_version) == (api_key, version)
        assert (header.correlation_id, header.client_id) == (correlation_id, client_id)
        assert decoded == request

        frame = b"".join(encode_response(correlation_id, response))
        assert struct.unpack_from(">i", frame)[0] == len(frame) - 4
        assert struct.unpack_from(">i", frame, 4)[0] == correlation_id
        assert decode_response(frame[4:], api_key, version) == response

    round_trip()


def kio_bytes(entity: Any) -> bytes:
    buffer = io.BytesIO()
    entity_writer(type(entity))(buffer, entity)
    return buffer.getvalue()


@pytest.mark.parametrize("version", schema_versions(ApiKey.FETCH))
def test_fetch_response_encoder_matches_kio_byte_for_byte(version: int) -> None:
    schema = response_schema(ApiKey.FETCH, version)

    @settings(ROUND_TRIP, max_examples=40)
    @given(response=entities(schema))
    def same_bytes(response: Any) -> None:
        assert b"".join(encode_body(response)) == kio_bytes(response)

    same_bytes()


def test_fetch_request_encoder_matches_kio_byte_for_byte() -> None:
    # v12, the replica fetchers' version, has an encoder of its own (net.fetch_request).
    schema = request_schema(ApiKey.FETCH, 12)

    @settings(ROUND_TRIP, max_examples=200)
    @given(request=entities(schema))
    def same_bytes(request: Any) -> None:
        assert b"".join(encode_body(request)) == kio_bytes(request)

    same_bytes()


def fetch_response_with_records(records: Any) -> Any:
    schema: Any = response_schema(ApiKey.FETCH, 12)
    topic = field_entity_type(schema, "responses")
    partition = field_entity_type(topic, "partitions")
    return make_entity(
        schema,
        throttle_time=datetime.timedelta(0),
        error_code=ErrorCode.none,
        responses=(
            make_entity(
                topic,
                topic="t",
                partitions=(
                    make_entity(
                        partition,
                        partition_index=0,
                        error_code=ErrorCode.none,
                        high_watermark=10,
                        aborted_transactions=None,
                        records=records,
                    ),
                ),
            ),
        ),
    )


def test_fetch_response_keeps_large_records_by_reference() -> None:
    segment = bytearray(b"r" * 100_000)
    records = memoryview(segment)[10:90_010]
    buffers = encode_response(7, fetch_response_with_records(records))
    assert any(buffer is records for buffer in buffers)
    frame = b"".join(buffers)
    decoded: Any = decode_response(frame[4:], ApiKey.FETCH, 12)
    assert decoded.responses[0].partitions[0].records == bytes(records)


def test_produce_request_keeps_large_records_by_reference() -> None:
    schema: Any = request_schema(ApiKey.PRODUCE, 9)
    topic = field_entity_type(schema, "topic_data")
    partition = field_entity_type(topic, "partition_data")
    records = b"x" * 50_000
    request = make_entity(
        schema,
        acks=-1,
        timeout=datetime.timedelta(seconds=1),
        topic_data=(
            make_entity(
                topic, name="t", partition_data=(make_entity(partition, index=0, records=records),)
            ),
        ),
    )
    buffers = encode_request(request, 1, "c")
    assert any(buffer is records for buffer in buffers)
    _header, decoded = decode_request(b"".join(buffers)[4:])
    assert decoded == request


def request_of(api_key: int, version: int, **values: Any) -> Any:
    schema = request_schema(api_key, version)
    assert schema is not None
    return make_entity(schema, **values)


def metadata_request(version: int) -> Any:
    return request_of(
        3,
        version,
        topics=None,
        allow_auto_topic_creation=False,
        include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False,
    )


def test_request_header_version_follows_flexibility() -> None:
    # Metadata v8 is not flexible: header v1 ends after the client id.
    v8 = b"".join(encode_request(metadata_request(8), 5, "abc"))[4:]
    assert v8[:13] == struct.pack(">hhih", ApiKey.METADATA, 8, 5, 3) + b"abc"
    assert read_request_header(v8).size == 13
    # Metadata v9 is flexible: header v2 adds a tagged-field count after the client id.
    v9 = b"".join(encode_request(metadata_request(9), 5, "abc"))[4:]
    assert v9[:14] == struct.pack(">hhih", ApiKey.METADATA, 9, 5, 3) + b"abc\x00"
    assert read_request_header(v9).size == 14


def test_request_header_skips_unknown_tagged_fields_and_reads_a_null_client_id() -> None:
    body = b"\x00\x00\x00\x00"  # Metadata v12: null topics, two booleans, no tags
    tags = b"\x02" + b"\x05\x02ab" + b"\x07\x00"  # tag 5 (2 bytes), tag 7 (empty)
    frame = struct.pack(">hhih", ApiKey.METADATA, 12, 9, -1) + tags + body
    header, request = decode_request(frame)
    assert header.client_id is None
    assert header.size == 10 + len(tags)
    assert request == metadata_request(12)


def test_response_header_is_v0_for_api_versions_and_v1_for_other_flexible_responses() -> None:
    api_versions = make_entity(
        response_type(ApiKey.API_VERSIONS, 3),
        error_code=ErrorCode.none,
        api_keys=(),
        throttle_time=datetime.timedelta(0),
    )
    frame = b"".join(encode_response(42, api_versions))
    # size, correlation id, then the body right away: error code, empty array (1), throttle 0,
    # and a zero count of top-level tagged fields.
    assert frame == struct.pack(">iih", 12, 42, 0) + b"\x01" + b"\x00" * 4 + b"\x00"
    heartbeat = make_entity(
        response_type(ApiKey.HEARTBEAT, 4),
        throttle_time=datetime.timedelta(0),
        error_code=ErrorCode.none,
    )
    frame = b"".join(encode_response(42, heartbeat))
    assert frame == struct.pack(">ii", 12, 42) + b"\x00" + b"\x00" * 6 + b"\x00"


def test_api_versions_request_of_an_unknown_version_still_has_a_readable_header() -> None:
    frame = struct.pack(">hhih", ApiKey.API_VERSIONS, 99, 3, 2) + b"me\x00" + b"future body"
    header = read_request_header(frame)
    assert (header.api_key, header.api_version, header.correlation_id) == (18, 99, 3)
    assert header.client_id == "me"


def test_api_versions_error_frame_is_v0_and_clients_decode_it_whatever_they_sent() -> None:
    frame = b"".join(api_versions_error_frame(8, ErrorCode.unsupported_version, [(18, 0, 2)]))
    assert frame == struct.pack(">iihihhh", 16, 8, 35, 1, 18, 0, 2)
    response: Any = decode_response(frame[4:], 18, 4)
    assert response.__version__ == 0
    assert response.error_code == ErrorCode.unsupported_version
    assert [(k.api_key, k.min_version, k.max_version) for k in response.api_keys] == [(18, 0, 2)]


def test_unknown_api_keys_and_versions_raise_with_the_correlation_id() -> None:
    for api_key, version in ((999, 0), (3, 99), (-1, 0)):
        with pytest.raises(UnknownApiError) as raised:
            read_request_header(struct.pack(">hhih", api_key, version, 77, -1))
        assert raised.value.correlation_id == 77


@pytest.mark.parametrize(
    "frame",
    [
        b"",
        b"\x00\x03\x00",
        struct.pack(">hhi", ApiKey.METADATA, 12, 1),  # no client id length
        struct.pack(">hhih", ApiKey.METADATA, 12, 1, 10) + b"abc",  # client id runs past the frame
        struct.pack(">hhih", ApiKey.METADATA, 12, 1, -5),  # negative client id length
        struct.pack(">hhih", ApiKey.METADATA, 12, 1, 2) + b"\xff\xfe\x00",  # client id not UTF-8
        # A tag that runs past the frame.
        struct.pack(">hhih", ApiKey.METADATA, 12, 1, -1) + b"\x01\x05\x09ab",
        struct.pack(">hhih", ApiKey.METADATA, 12, 1, -1) + b"\x00" + b"\x05",  # truncated body
        # An array that runs past the end.
        struct.pack(">hhih", ApiKey.METADATA, 8, 1, -1) + b"\x00\x00\x00\x05\x00\x01",
    ],
)
def test_malformed_requests_raise_invalid_request(frame: bytes) -> None:
    with pytest.raises(InvalidRequestError):
        decode_request(frame)


def test_error_response_sets_the_top_level_error_code_where_the_schema_has_one() -> None:
    find_coordinator: Any = error_response(
        ApiKey.FIND_COORDINATOR, 0, ErrorCode.unsupported_version
    )
    assert find_coordinator.error_code == ErrorCode.unsupported_version
    assert (
        decode_response(
            b"".join(encode_response(1, find_coordinator))[4:], ApiKey.FIND_COORDINATOR, 0
        )
        == find_coordinator
    )
    fetch: Any = error_response(ApiKey.FETCH, 12, ErrorCode.unknown_server_error)
    assert fetch.error_code == ErrorCode.unknown_server_error
    assert fetch.responses == ()
    # Metadata and Produce carry errors only per topic / partition.
    assert error_response(ApiKey.METADATA, 12, ErrorCode.unsupported_version) is None
    assert error_response(ApiKey.PRODUCE, 9, ErrorCode.unsupported_version) is None


@pytest.mark.parametrize("version", [0, 1, 2])
def test_produce_v0_to_v2_is_refused_per_partition_in_its_own_version(version: int) -> None:
    schema = legacy_produce.REQUEST_SCHEMAS[version]
    # As a plain `type`: mypy reads a frozen dataclass's class object as unhashable (it takes
    # the instances' __hash__ for the class's own), so field_entity_type's cache refuses it.
    schema_type: type = schema
    topic = field_entity_type(schema_type, "topic_data")
    partition = field_entity_type(topic, "partition_data")
    request = schema(
        acks=i16(1),
        timeout=i32Timedelta.parse(datetime.timedelta(seconds=1)),
        topic_data=(
            make_entity(
                topic,
                name="t",
                partition_data=(
                    make_entity(partition, index=0, records=b"old"),
                    make_entity(partition, index=3, records=None),
                ),
            ),
        ),
    )
    frame = b"".join(encode_request(request, 5, "old-client"))[4:]
    header = read_request_header(frame)
    refusal: Any = unsupported_version_response(header, frame)
    encoded = b"".join(encode_response(5, refusal))
    # v0: array of 1 topic "t", 2 partitions (index, error 35, base offset -1); v1 adds the
    # throttle time after it; v2 adds log append time -1 per partition.
    partition_tail = b"\xff" * 8 if version == 2 else b""
    expected_body = (
        struct.pack(">ih", 1, 1)
        + b"t"
        + struct.pack(">i", 2)
        + struct.pack(">ihq", 0, 35, -1)
        + partition_tail
        + struct.pack(">ihq", 3, 35, -1)
        + partition_tail
        + (struct.pack(">i", 0) if version >= 1 else b"")
    )
    assert encoded == struct.pack(">ii", 4 + len(expected_body), 5) + expected_body


def test_produce_v0_with_acks_0_cannot_be_refused_by_a_response() -> None:
    request = legacy_produce.ProduceRequestV0(
        acks=i16(0),
        timeout=i32Timedelta.parse(datetime.timedelta(seconds=1)),
        topic_data=(),
    )
    frame = b"".join(encode_request(request, 5, None))[4:]
    assert unsupported_version_response(read_request_header(frame), frame) is None


def test_make_entity_drops_values_the_version_lacks() -> None:
    v0: Any = request_of(3, 0, topics=(), allow_auto_topic_creation=True)
    assert v0.topics == ()
    v4: Any = request_of(3, 4, topics=(), allow_auto_topic_creation=True)
    assert v4.allow_auto_topic_creation is True

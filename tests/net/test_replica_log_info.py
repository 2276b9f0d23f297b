"""GetReplicaLogInfo v0 (API key 93, net/replica_log_info.py) and ElectRecoveredLeader (our own
controller API, net/manual_recovery.py): wire layouts worked out by hand from
kafka-protocol/message/GetReplicaLogInfo{Request,Response}.json and compared byte for byte with
what net.protocol encodes, then decoded back.

Both messages are flexible in every version: request header v2 (client id as a non-compact
nullable string, then a tagged-field count), response header v1 (correlation id and a
tagged-field count), compact arrays and strings (length + 1 as an unsigned varint, 0 for null),
16-byte uuids, and a tagged-field count closing every struct.
"""

from __future__ import annotations

import datetime
import struct
from collections.abc import Sequence
from uuid import UUID

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode
from kio.static.primitive import i32, i32Timedelta, i64

from net.api_keys import ApiKey
from net.buffer_gatherer import Buffer
from net.manual_recovery import ElectRecoveredLeaderRequest, ElectRecoveredLeaderResponse
from net.protocol import (
    InvalidRequestError,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    read_request_header,
    request_schema,
    response_header_version,
    response_schema,
    schema_versions,
)
from net.replica_log_info import (
    GetReplicaLogInfoRequest,
    GetReplicaLogInfoResponse,
    PartitionLogInfo,
    TopicPartitionLogInfo,
    TopicPartitions,
)

TOPIC_A = UUID("00112233-4455-6677-8899-aabbccddeeff")
TOPIC_B = UUID(int=0x0F)
NO_TAGS = b"\x00"


def frame(parts: Sequence[Buffer]) -> bytes:
    return b"".join(parts)


def request_header(api_key: int, correlation_id: int, client_id: bytes) -> bytes:
    """Request header v2: key, version 0, correlation id, client id (int16 length), no tags."""
    return struct.pack(">hhih", api_key, 0, correlation_id, len(client_id)) + client_id + NO_TAGS


def sized(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def test_the_apis_are_known_to_the_codec() -> None:
    assert int(ApiKey.GET_REPLICA_LOG_INFO) == 93
    assert schema_versions(ApiKey.GET_REPLICA_LOG_INFO) == (0,)
    assert request_schema(ApiKey.GET_REPLICA_LOG_INFO, 0) is GetReplicaLogInfoRequest
    assert response_schema(ApiKey.GET_REPLICA_LOG_INFO, 0) is GetReplicaLogInfoResponse
    assert request_schema(ApiKey.GET_REPLICA_LOG_INFO, 1) is None
    assert response_schema(ApiKey.GET_REPLICA_LOG_INFO, 1) is None
    assert response_header_version(ApiKey.GET_REPLICA_LOG_INFO, 0) == 1

    assert schema_versions(ApiKey.ELECT_RECOVERED_LEADER) == (0,)
    assert request_schema(ApiKey.ELECT_RECOVERED_LEADER, 0) is ElectRecoveredLeaderRequest
    assert response_schema(ApiKey.ELECT_RECOVERED_LEADER, 0) is ElectRecoveredLeaderResponse
    assert request_schema(ApiKey.ELECT_RECOVERED_LEADER, 1) is None
    assert response_header_version(ApiKey.ELECT_RECOVERED_LEADER, 0) == 1
    # Our own key fits an int16 and is far above Kafka's.
    assert 1000 < ApiKey.ELECT_RECOVERED_LEADER < 2**15


# GetReplicaLogInfoRequest v0:
#   TopicPartitions: []TopicPartitions, nullable (compact: count + 1, 0 for null)
#     TopicId: uuid (16 bytes)
#     Partitions: []int32 (compact)
#     (tagged fields)
#   (tagged fields)


def test_get_replica_log_info_request_layout() -> None:
    request = GetReplicaLogInfoRequest(
        topic_partitions=(
            TopicPartitions(topic_id=TOPIC_A, partitions=(i32(0), i32(7))),
            TopicPartitions(topic_id=TOPIC_B, partitions=()),
        )
    )
    body = (
        b"\x03"  # two topics
        + bytes.fromhex("00112233445566778899aabbccddeeff")
        + b"\x03"  # two partitions
        + struct.pack(">ii", 0, 7)
        + NO_TAGS
        + b"\x00" * 15
        + b"\x0f"
        + b"\x01"  # no partitions
        + NO_TAGS
        + NO_TAGS
    )
    expected = sized(request_header(93, 0x01020304, b"ctl") + body)
    encoded = frame(encode_request(request, 0x01020304, "ctl"))
    assert encoded == expected

    header, decoded = decode_request(encoded[4:])
    assert (header.api_key, header.api_version, header.correlation_id) == (93, 0, 0x01020304)
    assert header.client_id == "ctl"
    assert header.size == len(request_header(93, 0, b"ctl"))
    assert decoded == request


def test_get_replica_log_info_request_with_null_topics_and_a_two_byte_varint() -> None:
    null = GetReplicaLogInfoRequest(topic_partitions=None)
    encoded = frame(encode_request(null, 1, None))
    assert encoded == sized(
        struct.pack(">hhih", ApiKey.GET_REPLICA_LOG_INFO, 0, 1, -1) + NO_TAGS + b"\x00" + NO_TAGS
    )
    assert decode_request(encoded[4:])[1] == null

    # 130 partitions: a compact length of 131 = 0b1_0000011, two varint bytes 0x83 0x01.
    many = GetReplicaLogInfoRequest(
        topic_partitions=(
            TopicPartitions(topic_id=TOPIC_B, partitions=tuple(i32(p) for p in range(130))),
        )
    )
    body = (
        b"\x02"
        + TOPIC_B.bytes
        + b"\x83\x01"
        + b"".join(struct.pack(">i", p) for p in range(130))
        + NO_TAGS
        + NO_TAGS
    )
    encoded = frame(encode_request(many, 2, "c"))
    assert encoded == sized(request_header(93, 2, b"c") + body)
    assert decode_request(encoded[4:])[1] == many


def test_a_truncated_get_replica_log_info_request_is_invalid() -> None:
    request = GetReplicaLogInfoRequest(
        topic_partitions=(TopicPartitions(topic_id=TOPIC_A, partitions=(i32(1),)),)
    )
    encoded = frame(encode_request(request, 3, "c"))
    header = read_request_header(encoded[4:])
    with pytest.raises(InvalidRequestError):
        decode_request(encoded[4 : 4 + header.size + 10])


# GetReplicaLogInfoResponse v0:
#   ThrottleTimeMs: int32, BrokerEpoch: int64, Truncated: bool
#   TopicPartitionLogInfoList: []
#     TopicId: uuid
#     PartitionLogInfo: []
#       Partition: int32, LastWrittenLeaderEpoch: int32, CurrentLeaderEpoch: int32,
#       LogEndOffset: int64, ErrorCode: int16, (tagged fields)
#     (tagged fields)
#   (tagged fields)


def log_info(
    partition: int, last_written: int, current: int, end: int, error: ErrorCode = ErrorCode.none
) -> PartitionLogInfo:
    return PartitionLogInfo(
        partition=i32(partition),
        last_written_leader_epoch=i32(last_written),
        current_leader_epoch=i32(current),
        log_end_offset=i64(end),
        error_code=error,
    )


def test_get_replica_log_info_response_layout() -> None:
    response = GetReplicaLogInfoResponse(
        throttle_time=i32Timedelta.parse(datetime.timedelta(milliseconds=5)),
        broker_epoch=i64(0x0102030405),
        truncated=True,
        topic_partition_log_info_list=(
            TopicPartitionLogInfo(
                topic_id=TOPIC_A,
                partition_log_info=(
                    log_info(0, 3, 4, 2**40),
                    log_info(2, -1, -1, -1, ErrorCode.unknown_topic_or_partition),
                ),
            ),
        ),
    )
    body = (
        struct.pack(">iq?", 5, 0x0102030405, True)
        + b"\x02"  # one topic
        + TOPIC_A.bytes
        + b"\x03"  # two partitions
        + struct.pack(">iiiqh", 0, 3, 4, 2**40, 0)
        + NO_TAGS
        + struct.pack(">iiiqh", 2, -1, -1, -1, 3)
        + NO_TAGS
        + NO_TAGS  # topic
        + NO_TAGS  # response
    )
    expected = sized(struct.pack(">i", 77) + NO_TAGS + body)
    encoded = frame(encode_response(77, response))
    assert encoded == expected
    assert decode_response(encoded[4:], 93, 0) == response


def test_an_empty_get_replica_log_info_response_layout() -> None:
    response = GetReplicaLogInfoResponse(
        throttle_time=i32Timedelta.parse(datetime.timedelta(0)),
        broker_epoch=i64(-1),
        truncated=False,
        topic_partition_log_info_list=(),
    )
    encoded = frame(encode_response(1, response))
    body = struct.pack(">iq?", 0, -1, False) + b"\x01" + NO_TAGS
    assert encoded == sized(struct.pack(">i", 1) + NO_TAGS + body)
    assert decode_response(encoded[4:], 93, 0) == response


int32s = st.integers(-(2**31), 2**31 - 1)
int64s = st.integers(-(2**63), 2**63 - 1)
uuids = st.uuids()


@given(
    st.lists(st.tuples(uuids, st.lists(int32s, max_size=4)), max_size=4),
    int32s,
)
def test_get_replica_log_info_requests_round_trip(
    topics: list[tuple[UUID, list[int]]], correlation_id: int
) -> None:
    request = GetReplicaLogInfoRequest(
        topic_partitions=tuple(
            TopicPartitions(topic_id=t, partitions=tuple(i32(p) for p in ps)) for t, ps in topics
        )
    )
    header, decoded = decode_request(frame(encode_request(request, correlation_id, "x"))[4:])
    assert header.correlation_id == correlation_id
    assert decoded == request


@given(
    int64s,
    st.booleans(),
    st.lists(
        st.tuples(
            uuids,
            st.lists(
                st.tuples(int32s, int32s, int32s, int64s, st.sampled_from(list(ErrorCode))),
                max_size=3,
            ),
        ),
        max_size=3,
    ),
)
def test_get_replica_log_info_responses_round_trip(
    broker_epoch: int,
    truncated: bool,
    topics: list[tuple[UUID, list[tuple[int, int, int, int, ErrorCode]]]],
) -> None:
    response = GetReplicaLogInfoResponse(
        throttle_time=i32Timedelta.parse(datetime.timedelta(0)),
        broker_epoch=i64(broker_epoch),
        truncated=truncated,
        topic_partition_log_info_list=tuple(
            TopicPartitionLogInfo(
                topic_id=t, partition_log_info=tuple(log_info(*info) for info in infos)
            )
            for t, infos in topics
        ),
    )
    assert (
        decode_response(frame(encode_response(9, response))[4:], ApiKey.GET_REPLICA_LOG_INFO, 0)
        == response
    )


# ElectRecoveredLeaderRequest v0: TopicId uuid, Partition int32, Leader int32, (tagged fields).
# ElectRecoveredLeaderResponse v0: ThrottleTimeMs int32, ErrorCode int16,
#   ErrorMessage compact nullable string, (tagged fields).


def test_elect_recovered_leader_request_layout() -> None:
    request = ElectRecoveredLeaderRequest(topic_id=TOPIC_A, partition=i32(3), leader=i32(2))
    body = TOPIC_A.bytes + struct.pack(">ii", 3, 2) + NO_TAGS
    encoded = frame(encode_request(request, 11, "admin"))
    assert encoded == sized(request_header(10_000, 11, b"admin") + body)
    header, decoded = decode_request(encoded[4:])
    assert (header.api_key, header.api_version, header.client_id) == (10_000, 0, "admin")
    assert decoded == request


@pytest.mark.parametrize(
    ("error", "message", "encoded_message"),
    [
        (ErrorCode.none, None, b"\x00"),
        (
            ErrorCode.ineligible_replica,
            "Broker 5 is not a replica.",
            b"\x1b" + b"Broker 5 is not a replica.",
        ),
        (ErrorCode.election_not_needed, "", b"\x01"),
    ],
)
def test_elect_recovered_leader_response_layout(
    error: ErrorCode, message: str | None, encoded_message: bytes
) -> None:
    response = ElectRecoveredLeaderResponse(
        throttle_time=i32Timedelta.parse(datetime.timedelta(0)),
        error_code=error,
        error_message=message,
    )
    body = struct.pack(">ih", 0, error.value) + encoded_message + NO_TAGS
    encoded = frame(encode_response(12, response))
    assert encoded == sized(struct.pack(">i", 12) + NO_TAGS + body)
    assert decode_response(encoded[4:], ApiKey.ELECT_RECOVERED_LEADER, 0) == response


def test_error_codes_the_manual_recovery_answers_are_kafkas() -> None:
    assert ErrorCode.ineligible_replica.value == 107
    assert ErrorCode.election_not_needed.value == 84
    assert ErrorCode.unknown_topic_or_partition.value == 3
    assert ErrorCode.kafka_storage_error.value == 56

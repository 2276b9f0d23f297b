"""GetReplicaLogInfo on a broker (broker/replica_log_info.py): the state of hosted logs as
the controller's unclean recovery reads it.

A real ReplicaManager over real logs (tests/broker/replicas.py), brought in line with metadata
images the test writes; the handler is reached through the ApiRegistry it registers with, and
its answers are encoded and decoded as they travel.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from kio.schema.errors import ErrorCode
from kio.static.primitive import i32

from broker.replica_log_info import ReplicaLogInfoApi
from controller.partition_state import NO_LEADER, PartitionState
from net.api_keys import ApiKey
from net.api_registry import ApiRegistry, RequestContext
from net.protocol import RequestHeader, decode_response, encode_response
from net.replica_log_info import (
    MAX_PARTITIONS,
    GetReplicaLogInfoRequest,
    GetReplicaLogInfoResponse,
    PartitionLogInfo,
    TopicPartitions,
)
from tests.broker.replicas import TOPIC, TOPIC_ID, Broker, batch, image

OTHER_TOPIC = UUID(int=99)


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    made = Broker(1, tmp_path)
    yield made
    made.close()


class Epoch:
    """The broker epoch the handler reads, changeable by the test."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __call__(self) -> int:
        return self.value


def led(leader_epoch: int, *, leader: int = 1) -> PartitionState:
    return PartitionState(
        replicas=(1, 2), isr=(1, 2), leader=leader, leader_epoch=leader_epoch, partition_epoch=1
    )


async def write(broker: Broker, partition_id: int, *values: bytes) -> None:
    for value in values:
        (result,) = await broker.replicas.produce(1, 1_000, [(TOPIC, partition_id, batch(value))])
        assert result.error is ErrorCode.none


def ask(
    api: ReplicaLogInfoApi, *topics: tuple[UUID | None, list[int]]
) -> GetReplicaLogInfoResponse:
    """Sends the request through the registry, and the answer over the wire and back."""
    registry = ApiRegistry()
    api.register(registry)
    registration = registry.lookup(ApiKey.GET_REPLICA_LOG_INFO, 0)
    assert registration is not None
    request = GetReplicaLogInfoRequest(
        topic_partitions=tuple(
            TopicPartitions(topic_id=topic_id, partitions=tuple(i32(p) for p in partitions))
            for topic_id, partitions in topics
        )
    )
    header = RequestHeader(ApiKey.GET_REPLICA_LOG_INFO, 0, 1, "controller", 10)
    response: Any = registration.handler(RequestContext(header, "127.0.0.1:1", 1, 0.0, 10), request)
    assert isinstance(response, GetReplicaLogInfoResponse)
    decoded: Any = decode_response(
        b"".join(encode_response(1, response))[4:], ApiKey.GET_REPLICA_LOG_INFO, 0
    )
    assert decoded == response
    return response


def info(
    response: GetReplicaLogInfoResponse,
) -> list[tuple[UUID | None, int, int, int, int, ErrorCode]]:
    return [
        (
            topic.topic_id,
            int(p.partition),
            int(p.last_written_leader_epoch),
            int(p.current_leader_epoch),
            int(p.log_end_offset),
            p.error_code,
        )
        for topic in response.topic_partition_log_info_list
        for p in topic.partition_log_info
    ]


def fields(p: PartitionLogInfo) -> tuple[int, int, int, ErrorCode]:
    return (
        int(p.last_written_leader_epoch),
        int(p.current_leader_epoch),
        int(p.log_end_offset),
        p.error_code,
    )


async def test_a_led_partition_reports_its_last_written_epoch_current_epoch_and_end(
    broker: Broker,
) -> None:
    api = ReplicaLogInfoApi(broker.replicas, Epoch(42))
    broker.apply(image({0: led(0)}))
    # A leader starts its epoch in the log's epoch cache at the log end when it is elected
    # (as Kafka's does), so even an empty log reports the epoch it leads in.
    assert fields(api.partition_log_info(TOPIC_ID, 0)) == (0, 0, 0, ErrorCode.none)

    await write(broker, 0, b"a", b"b")
    assert fields(api.partition_log_info(TOPIC_ID, 0)) == (0, 0, 2, ErrorCode.none)

    # A follower at epoch 2: it writes nothing in that epoch, so the last written stays 0.
    broker.apply(image({0: led(2, leader=2)}, end_offset=2))
    assert fields(api.partition_log_info(TOPIC_ID, 0)) == (0, 2, 2, ErrorCode.none)

    # Elected again at epoch 3, it writes there.
    broker.apply(image({0: led(3)}, end_offset=3))
    await write(broker, 0, b"c")
    assert fields(api.partition_log_info(TOPIC_ID, 0)) == (3, 3, 3, ErrorCode.none)

    # Leaderless at epoch 4 (as before an unclean recovery): the last written stays 3.
    leaderless = PartitionState(
        replicas=(1, 2), isr=(), leader=NO_LEADER, leader_epoch=4, partition_epoch=2
    )
    broker.apply(image({0: leaderless}, end_offset=4))
    assert fields(api.partition_log_info(TOPIC_ID, 0)) == (3, 4, 3, ErrorCode.none)


async def test_a_follower_replica_reports_its_own_log(broker: Broker) -> None:
    api = ReplicaLogInfoApi(broker.replicas, Epoch(42))
    broker.apply(image({0: led(7, leader=2)}))
    assert fields(api.partition_log_info(TOPIC_ID, 0)) == (-1, 7, 0, ErrorCode.none)


async def test_the_request_handler_answers_each_partition_with_the_broker_epoch(
    broker: Broker,
) -> None:
    epoch = Epoch(42)
    api = ReplicaLogInfoApi(broker.replicas, epoch)
    broker.apply(image({0: led(2), 1: led(5), 2: led(0, leader=2)}))
    await write(broker, 0, b"a", b"b", b"c")
    await write(broker, 1, b"x")

    response = ask(api, (TOPIC_ID, [1, 0, 9]), (OTHER_TOPIC, [0]), (TOPIC_ID, [2, 0]))
    assert int(response.broker_epoch) == 42
    assert not response.truncated
    # Grouped by topic in the order topics first appear; a partition asked twice is
    # answered once.
    assert info(response) == [
        (TOPIC_ID, 1, 5, 5, 1, ErrorCode.none),
        (TOPIC_ID, 0, 2, 2, 3, ErrorCode.none),
        (TOPIC_ID, 9, -1, -1, -1, ErrorCode.unknown_topic_or_partition),
        (TOPIC_ID, 2, -1, 0, 0, ErrorCode.none),
        (OTHER_TOPIC, 0, -1, -1, -1, ErrorCode.unknown_topic_or_partition),
    ]

    # The epoch of the incarnation answering now, not the one at construction.
    epoch.value = 57
    assert int(ask(api, (TOPIC_ID, [0])).broker_epoch) == 57


async def test_unknown_topics_and_partitions(broker: Broker) -> None:
    api = ReplicaLogInfoApi(broker.replicas, Epoch(1))
    broker.apply(image({0: led(0), 1: PartitionState((2, 3), (2, 3), leader=2)}))
    unknown = (-1, -1, -1, ErrorCode.unknown_topic_or_partition)
    assert fields(api.partition_log_info(OTHER_TOPIC, 0)) == unknown
    assert fields(api.partition_log_info(None, 0)) == unknown
    assert fields(api.partition_log_info(TOPIC_ID, 5)) == unknown
    # Partition 1 exists, but this broker does not host it.
    assert fields(api.partition_log_info(TOPIC_ID, 1)) == unknown
    assert fields(api.partition_log_info(TOPIC_ID, 0))[3] is ErrorCode.none
    # A null topic list asks nothing.
    assert info(ask(api)) == []


async def test_an_offline_replica_is_a_storage_error(broker: Broker) -> None:
    api = ReplicaLogInfoApi(broker.replicas, Epoch(1))
    broker.apply(image({0: led(1), 1: led(1)}))
    await write(broker, 0, b"a")
    broker.partition(0).take_offline("disk error in a test")
    assert fields(api.partition_log_info(TOPIC_ID, 0)) == (
        -1,
        -1,
        -1,
        ErrorCode.kafka_storage_error,
    )
    # Another replica is still answered.
    assert fields(api.partition_log_info(TOPIC_ID, 1)) == (1, 1, 0, ErrorCode.none)
    assert [row[5] for row in info(ask(api, (TOPIC_ID, [0, 1])))] == [
        ErrorCode.kafka_storage_error,
        ErrorCode.none,
    ]


async def test_more_than_1000_partitions_are_truncated(broker: Broker) -> None:
    api = ReplicaLogInfoApi(broker.replicas, Epoch(3))
    broker.apply(image({0: led(0)}))
    assert MAX_PARTITIONS == 1000

    exactly = ask(api, (TOPIC_ID, list(range(1000))))
    assert not exactly.truncated
    assert len(info(exactly)) == 1000

    # Duplicates do not count towards the limit.
    repeated = ask(api, (TOPIC_ID, list(range(1000))), (TOPIC_ID, [0, 1, 999]))
    assert not repeated.truncated
    assert len(info(repeated)) == 1000

    over = ask(api, (TOPIC_ID, list(range(600))), (OTHER_TOPIC, list(range(401))))
    assert over.truncated
    rows = info(over)
    assert len(rows) == 1000
    # The first 1000 asked, in request order: the last of the other topic's is left out.
    assert [(t, p) for t, p, *_ in rows] == [(TOPIC_ID, p) for p in range(600)] + [
        (OTHER_TOPIC, p) for p in range(400)
    ]
    assert rows[0][5] is ErrorCode.none

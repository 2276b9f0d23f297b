"""Produce, fetch and list offsets with real clients against one real `kraft serve` node
(broker and controller roles): what each client writes, the others read, in order."""

from __future__ import annotations

import asyncio
import datetime
import subprocess
import time
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from confluent_kafka import (
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    KafkaError,
    KafkaException,
    Producer,
)
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka import TopicPartition as PythonTopicPartition
from kafka.admin import ConfigResource as PythonConfigResource
from kafka.admin import ConfigResourceType as PythonConfigResourceType
from kio.schema.errors import ErrorCode
from kio.schema.produce.v9.response import ProduceResponse

from bench.cluster import Cluster
from controller.topic_config import ConfigSource
from net.api_keys import ApiKey
from net.client import NodeConnection
from net.protocol import field_entity_type, make_entity, request_schema
from net.records import Record, encode_batch


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    cluster = Cluster.combined(tmp_path_factory.mktemp("node"), 1)
    cluster.start_all()
    try:
        cluster.wait_for("broker unfenced", cluster.brokers_unfenced)
        yield cluster
    finally:
        cluster.stop_all()


def create_topic(
    cluster: Cluster,
    name: str,
    partitions: int,
    *,
    replication_factor: int = 1,
    configs: Mapping[str, str] | None = None,
) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    topic = NewTopic(
        name,
        num_partitions=partitions,
        replication_factor=replication_factor,
        config=dict(configs or {}),
    )
    admin.create_topics([topic])[name].result(timeout=30)
    cluster.wait_for(
        f"{name} led",
        lambda: (
            all(
                p.leader >= 0
                for p in admin.list_topics(name, timeout=10).topics[name].partitions.values()
            )
            and len(admin.list_topics(name, timeout=10).topics[name].partitions) == partitions
        ),
    )


def produce_with_librdkafka(cluster: Cluster, topic: str, messages: list[tuple[int, str]]) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 5})
    failures: list[Any] = []
    for partition, value in messages:
        producer.produce(
            topic,
            value=value.encode(),
            partition=partition,
            on_delivery=lambda error, _: failures.append(error) if error else None,
        )
    assert producer.flush(30) == 0
    assert failures == []


# kcat reads every partition from the start to the end, printing partition, offset and value.
READ_ALL = ("-o", "beginning", "-e", "-q", "-f", "%p %o %s\\n")


def kcat_consume(cluster: Cluster, topic: str) -> list[tuple[int, int, str]]:
    output = subprocess.run(
        ["kcat", "-C", "-b", cluster.bootstrap, "-t", topic, *READ_ALL],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    return [
        (int(p), int(o), value)
        for p, o, value in (line.split(" ", 2) for line in output.splitlines())
    ]


async def aiokafka_read(
    cluster: Cluster, topic: str, partitions: int, count: int
) -> dict[int, list[str]]:
    """The first `count` values of `topic` read with aiokafka, by partition."""
    consumer = AIOKafkaConsumer(bootstrap_servers=cluster.bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        assigned = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(assigned)
        await consumer.seek_to_beginning(*assigned)
        values: dict[int, list[str]] = {p: [] for p in range(partitions)}
        while sum(len(v) for v in values.values()) < count:
            batch = await asyncio.wait_for(consumer.getmany(timeout_ms=1000), 10)
            for tp, records in batch.items():
                values[tp.partition].extend(r.value.decode() for r in records)
        return values
    finally:
        await consumer.stop()


def test_librdkafka_writes_and_kcat_and_kafka_python_read(node: Cluster) -> None:
    create_topic(node, "orders", 3)
    messages = [(i % 3, f"order-{i}") for i in range(300)]
    produce_with_librdkafka(node, "orders", messages)

    read = kcat_consume(node, "orders")
    for partition in range(3):
        expected = [value for p, value in messages if p == partition]
        got = [(offset, value) for p, offset, value in read if p == partition]
        assert got == list(enumerate(expected))

    consumer = KafkaConsumer(
        bootstrap_servers=node.bootstrap, enable_auto_commit=False, consumer_timeout_ms=5000
    )
    try:
        partitions = [PythonTopicPartition("orders", p) for p in range(3)]
        consumer.assign(partitions)
        consumer.seek_to_beginning()
        seen = {(r.partition, r.offset): r.value.decode() for r in consumer}
        assert len(seen) == 300
        assert consumer.end_offsets(partitions) == {tp: 100 for tp in partitions}
    finally:
        consumer.close()


async def test_kafka_python_writes_and_aiokafka_reads(node: Cluster) -> None:
    await asyncio.to_thread(create_topic, node, "events", 2)
    producer = KafkaProducer(bootstrap_servers=node.bootstrap, acks="all")
    try:
        for i in range(50):
            producer.send("events", value=f"event-{i}".encode(), partition=i % 2)
        producer.flush(30)
    finally:
        producer.close()
    values = await aiokafka_read(node, "events", 2, 50)
    assert values[0] == [f"event-{i}" for i in range(0, 50, 2)]
    assert values[1] == [f"event-{i}" for i in range(1, 50, 2)]


def test_acks_all_below_min_insync_replicas_is_refused(node: Cluster) -> None:
    create_topic(node, "strict", 1, configs={"min.insync.replicas": "2"})
    # No retries: the broker's refusal reaches the application as it is.
    producer = Producer({"bootstrap.servers": node.bootstrap, "acks": "all", "retries": 0})
    errors: list[Any] = []
    producer.produce("strict", b"x", on_delivery=lambda error, _: errors.append(error))
    producer.flush(10)
    assert [error.code() for error in errors] == [KafkaError.NOT_ENOUGH_REPLICAS]


async def test_produce_errors_over_the_wire(node: Cluster) -> None:
    await asyncio.to_thread(create_topic, node, "plain", 1)

    def request(acks: int, topic: str, partition: int, records: bytes) -> Any:
        return produce_request(topic, records, acks, partition)

    connection = NodeConnection("127.0.0.1", node.nodes[1].broker_port or 0)
    try:

        def error_of(response: Any) -> ErrorCode:
            return ErrorCode(response.responses[0].partition_responses[0].error_code)

        assert error_of(await connection.send(request(2, "plain", 0, b"x" * 61))) == (
            ErrorCode.invalid_required_acks
        )
        assert error_of(await connection.send(request(1, "missing", 0, b"x" * 61))) == (
            ErrorCode.unknown_topic_or_partition
        )
        assert error_of(await connection.send(request(1, "plain", 7, b"x" * 61))) == (
            ErrorCode.unknown_topic_or_partition
        )
        # Produce v3+ carries only magic 2 batches (Kafka: InvalidRecordException).
        assert error_of(await connection.send(request(1, "plain", 0, b"\x00" * 61))) == (
            ErrorCode.invalid_record
        )
        damaged = bytearray(encode_batch([Record(b"value")]))
        damaged[-1] ^= 0xFF
        assert error_of(await connection.send(request(1, "plain", 0, bytes(damaged)))) == (
            ErrorCode.corrupt_message
        )
        # Nothing of the refused appends reached the log: the next offset is still 0.
        accepted = await connection.send(request(1, "plain", 0, encode_batch([Record(b"v")])))
        assert isinstance(accepted, ProduceResponse)  # v9, as produce_request asks
        assert accepted.responses[0].partition_responses[0].base_offset == 0
    finally:
        await connection.close()


async def test_offset_for_leader_epoch(node: Cluster) -> None:
    await asyncio.to_thread(create_topic, node, "epochs", 1)
    await asyncio.to_thread(produce_with_librdkafka, node, "epochs", [(0, "a"), (0, "b")])
    schema: Any = request_schema(ApiKey.OFFSET_FOR_LEADER_EPOCH, 4)
    topic_type = field_entity_type(schema, "topics")
    partition_type = field_entity_type(topic_type, "partitions")

    async def ask(topic: str, current_leader_epoch: int, leader_epoch: int) -> Any:
        request = make_entity(
            schema,
            replica_id=-1,
            topics=(
                make_entity(
                    topic_type,
                    topic=topic,
                    partitions=(
                        make_entity(
                            partition_type,
                            partition=0,
                            current_leader_epoch=current_leader_epoch,
                            leader_epoch=leader_epoch,
                        ),
                    ),
                ),
            ),
        )
        response: Any = await connection.send(request)
        answer = response.topics[0].partitions[0]
        return ErrorCode(answer.error_code), answer.leader_epoch, answer.end_offset

    connection = NodeConnection("127.0.0.1", node.nodes[1].broker_port or 0)
    try:
        # The topic's only leader epoch is 0, which ends at the log end; an epoch the leader
        # never had, newer than its latest, is undefined (Kafka's LeaderEpochFileCache).
        assert await ask("epochs", 0, 0) == (ErrorCode.none, 0, 2)
        assert await ask("epochs", -1, 7) == (ErrorCode.none, -1, -1)
        assert await ask("epochs", 3, 0) == (ErrorCode.unknown_leader_epoch, -1, -1)
        assert await ask("nowhere", -1, 0) == (ErrorCode.unknown_topic_or_partition, -1, -1)
    finally:
        await connection.close()


def test_idempotent_producers_of_every_client(node: Cluster) -> None:
    create_topic(node, "idempotent", 2)
    python_producer = KafkaProducer(bootstrap_servers=node.bootstrap, enable_idempotence=True)
    try:
        for i in range(20):
            python_producer.send("idempotent", value=f"python-{i}".encode(), partition=0)
        python_producer.flush(30)
    finally:
        python_producer.close()
    producer = Producer({"bootstrap.servers": node.bootstrap, "enable.idempotence": True})
    failures: list[Any] = []
    for i in range(20):
        producer.produce(
            "idempotent",
            f"librdkafka-{i}".encode(),
            partition=1,
            on_delivery=lambda error, _: failures.append(error) if error else None,
        )
    assert producer.flush(30) == 0
    assert failures == []
    read = kcat_consume(node, "idempotent")
    assert [v for p, _, v in read if p == 0] == [f"python-{i}" for i in range(20)]
    assert [v for p, _, v in read if p == 1] == [f"librdkafka-{i}" for i in range(20)]


async def init_producer_id(connection: NodeConnection) -> tuple[int, int]:
    schema: Any = request_schema(ApiKey.INIT_PRODUCER_ID, 4)
    response: Any = await connection.send(
        make_entity(
            schema,
            transactional_id=None,
            transaction_timeout=datetime.timedelta(seconds=60),
            producer_id=-1,
            producer_epoch=-1,
        )
    )
    assert response.error_code == ErrorCode.none
    return response.producer_id, response.producer_epoch


def produce_request(
    topic: str, records: bytes, acks: int = -1, partition: int = 0, timeout_ms: int = 10_000
) -> Any:
    schema: Any = request_schema(ApiKey.PRODUCE, 9)
    topic_type = field_entity_type(schema, "topic_data")
    partition_type = field_entity_type(topic_type, "partition_data")
    return make_entity(
        schema,
        transactional_id=None,
        acks=acks,
        timeout=datetime.timedelta(milliseconds=timeout_ms),
        topic_data=(
            make_entity(
                topic_type,
                name=topic,
                partition_data=(make_entity(partition_type, index=partition, records=records),),
            ),
        ),
    )


async def produce_answer(connection: NodeConnection, topic: str, records: bytes) -> Any:
    response: Any = await connection.send(produce_request(topic, records))
    answer = response.responses[0].partition_responses[0]
    return ErrorCode(answer.error_code), answer.base_offset


async def test_a_retried_batch_is_written_once_even_across_a_restart(tmp_path: Path) -> None:
    cluster = Cluster.combined(tmp_path, 1)
    cluster.start_all()
    try:
        await asyncio.to_thread(cluster.wait_for, "broker unfenced", cluster.brokers_unfenced)
        await asyncio.to_thread(create_topic, cluster, "once", 1)
        connection = NodeConnection("127.0.0.1", cluster.nodes[1].broker_port or 0)
        try:
            producer_id, epoch = await init_producer_id(connection)
            other_id, _ = await init_producer_id(connection)
            assert other_id != producer_id

            def batch(sequence: int, *values: bytes) -> bytes:
                return encode_batch(
                    [Record(value) for value in values],
                    producer_id=producer_id,
                    producer_epoch=epoch,
                    base_sequence=sequence,
                )

            first = batch(0, b"a", b"b")
            assert await produce_answer(connection, "once", first) == (ErrorCode.none, 0)
            assert await produce_answer(connection, "once", first) == (ErrorCode.none, 0)
            assert await produce_answer(connection, "once", batch(2, b"c")) == (ErrorCode.none, 2)
            gap = await produce_answer(connection, "once", batch(9, b"x"))
            assert gap[0] == ErrorCode.out_of_order_sequence_number
        finally:
            await connection.close()

        assert cluster.terminate(1) == 0
        cluster.start(1)
        await asyncio.to_thread(cluster.wait_for, "broker back", cluster.brokers_unfenced)
        connection = NodeConnection("127.0.0.1", cluster.nodes[1].broker_port or 0)
        try:

            async def retried() -> Any:
                return await produce_answer(connection, "once", batch(2, b"c"))

            deadline = asyncio.get_running_loop().time() + 20
            answer = await retried()
            while answer[0] != ErrorCode.none and asyncio.get_running_loop().time() < deadline:
                await asyncio.sleep(0.2)
                answer = await retried()
            # The restarted leader rebuilt the producer state: still a duplicate.
            assert answer == (ErrorCode.none, 2)
            assert await produce_answer(connection, "once", batch(3, b"d")) == (ErrorCode.none, 3)
        finally:
            await connection.close()
        read = await asyncio.to_thread(kcat_consume, cluster, "once")
        assert [v for _, _, v in read] == ["a", "b", "c", "d"]
    finally:
        cluster.stop_all()


def test_describe_configs_and_topic_storage_settings(node: Cluster) -> None:
    create_topic(
        node, "configured", 1, configs={"segment.bytes": "2048", "retention.ms": "3600000"}
    )
    admin = AdminClient({"bootstrap.servers": node.bootstrap})
    topic = ConfigResource(ConfigResource.Type.TOPIC, "configured")
    broker = ConfigResource(ConfigResource.Type.BROKER, "1")
    described = {
        resource.name: future.result(timeout=10)
        for resource, future in admin.describe_configs([topic, broker]).items()
    }
    topic_configs = described["configured"]
    assert topic_configs["segment.bytes"].value == "2048"
    assert topic_configs["segment.bytes"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert topic_configs["segment.ms"].source == ConfigSource.STATIC_BROKER_CONFIG.value
    assert topic_configs["message.timestamp.type"].value == "CreateTime"
    broker_configs = described["1"]
    assert broker_configs["node.id"].value == "1"
    assert broker_configs["node.id"].is_read_only
    assert broker_configs["process.roles"].value == "broker,controller"

    # kafka-python asks with an older version; a missing topic is refused.
    python_admin = KafkaAdminClient(bootstrap_servers=node.bootstrap)
    try:
        described_by_python = python_admin.describe_configs(
            [PythonConfigResource(PythonConfigResourceType.TOPIC, "configured")],
            config_filter="all",
        )
        retention = described_by_python["topic"]["configured"]["retention.ms"]
        assert (retention["value"], retention["config_source"]) == (
            "3600000",
            "DYNAMIC_TOPIC_CONFIG",
        )
    finally:
        python_admin.close()
    missing = ConfigResource(ConfigResource.Type.TOPIC, "no-such-topic")
    with pytest.raises(KafkaException) as refused:
        admin.describe_configs([missing])[missing].result(timeout=10)
    assert refused.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART

    # The topic's segment.bytes, not the broker's, decides when its log rolls; a batch larger
    # than a segment is refused.
    producer = Producer({"bootstrap.servers": node.bootstrap, "batch.size": 1000})
    delivered: list[Any] = []
    for _ in range(40):
        producer.produce("configured", b"x" * 500, on_delivery=lambda e, m: delivered.append(e))
    producer.produce("configured", b"y" * 3000, on_delivery=lambda e, m: delivered.append(e))
    assert producer.flush(30) == 0
    assert delivered[:40] == [None] * 40
    assert delivered[40].code() == KafkaError.RECORD_LIST_TOO_LARGE
    segments = list((node.nodes[1].data_dir / "configured-0").glob("*.log"))
    assert len(segments) >= 8
    assert all(path.stat().st_size <= 2048 for path in segments)


def test_timestamps_log_append_time_and_bounds(node: Cluster) -> None:
    create_topic(node, "appended", 1, configs={"message.timestamp.type": "LogAppendTime"})
    create_topic(node, "bounded", 1, configs={"message.timestamp.before.max.ms": "60000"})
    producer = Producer({"bootstrap.servers": node.bootstrap, "linger.ms": 0})
    delivered: dict[bytes, Any] = {}

    def report(error: KafkaError | None, message: Any) -> None:
        delivered[message.value()] = error or message.timestamp()

    now_ms = int(time.time() * 1000)
    hour = 3600 * 1000
    # One batch each: a batch is refused whole.
    for topic, value, timestamp in [
        ("appended", b"stamped", now_ms - 10 * hour),
        ("bounded", b"future", now_ms + 2 * hour),
        ("bounded", b"old", now_ms - 2 * 60_000),
        ("bounded", b"recent", now_ms - 1000),
    ]:
        producer.produce(topic, value, timestamp=timestamp, on_delivery=report)
        assert producer.flush(30) == 0

    # The broker's clock replaces the producer's timestamp, and says so in its answer.
    stamp_type, stamped_at = delivered[b"stamped"]
    assert stamp_type == TIMESTAMP_LOG_APPEND_TIME
    assert abs(stamped_at - now_ms) < 60_000
    assert delivered[b"future"].code() == KafkaError.INVALID_TIMESTAMP
    assert delivered[b"old"].code() == KafkaError.INVALID_TIMESTAMP
    assert delivered[b"recent"] == (TIMESTAMP_CREATE_TIME, now_ms - 1000)

    consumer = KafkaConsumer(bootstrap_servers=node.bootstrap, consumer_timeout_ms=5000)
    try:
        consumer.assign([PythonTopicPartition("appended", 0), PythonTopicPartition("bounded", 0)])
        consumer.seek_to_beginning()
        read = {record.value: (record.timestamp_type, record.timestamp) for record in consumer}
    finally:
        consumer.close()
    assert read == {b"stamped": (1, stamped_at), b"recent": (0, now_ms - 1000)}


async def test_a_fetch_naming_only_unknown_topic_ids_is_answered_at_once(node: Cluster) -> None:
    # What a consumer of a just-deleted topic sends; the handler failed on it before
    # (UNKNOWN_SERVER_ERROR for the whole request, asked again hundreds of times a second).
    schema: Any = request_schema(ApiKey.FETCH, 13)
    topic_type = field_entity_type(schema, "topics")
    partition_type = field_entity_type(topic_type, "partitions")
    request = make_entity(
        schema,
        replica_id=-1,
        max_wait=datetime.timedelta(seconds=5),
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=(
            make_entity(
                topic_type,
                topic_id=uuid.UUID(int=12345),
                partitions=(
                    make_entity(
                        partition_type,
                        partition=0,
                        current_leader_epoch=-1,
                        fetch_offset=0,
                        last_fetched_epoch=-1,
                        log_start_offset=-1,
                        partition_max_bytes=1 << 20,
                    ),
                ),
            ),
        ),
        forgotten_topics_data=(),
        rack_id="",
    )
    connection = NodeConnection("127.0.0.1", node.nodes[1].broker_port or 0)
    try:
        started = time.monotonic()
        response: Any = await connection.send(request)
        elapsed = time.monotonic() - started
    finally:
        await connection.close()
    assert response.error_code == ErrorCode.none
    answer = response.responses[0].partitions[0]
    assert ErrorCode(answer.error_code) is ErrorCode.unknown_topic_id
    assert elapsed < 2.0

"""The common flows of programs written for Kafka, with each of the four clients (librdkafka via
confluent-kafka, kcat, kafka-python, aiokafka) against one and three real `kraft serve` nodes:
produce to a topic nobody created (Kafka's automatic creation), read it back from a chosen
offset, commit and fetch a group's offsets, and list a partition's earliest, latest and by-time
offsets."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka import TopicPartition as AioTopicPartition
from aiokafka.structs import OffsetAndMetadata as AioOffsetAndMetadata
from confluent_kafka import Consumer, Producer, TopicPartition
from kafka import KafkaConsumer, KafkaProducer, OffsetAndMetadata
from kafka import TopicPartition as PythonTopicPartition

from bench.cluster import Cluster

pytestmark = pytest.mark.timeout(120)

VALUES = [f"v{index}".encode() for index in range(10)]


@pytest.fixture(scope="module", params=[1, 3], ids=["1-node", "3-nodes"])
def node(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Cluster]:
    nodes: int = request.param
    # Topics created automatically are replicated to every node.
    cluster = Cluster.combined(
        tmp_path_factory.mktemp("flows"), nodes, **{"default.replication.factor": str(nodes)}
    )
    with cluster.started(60):
        yield cluster


def test_confluent_kafka(node: Cluster) -> None:
    topic = "flow-confluent"
    producer = Producer({"bootstrap.servers": node.bootstrap, "acks": "all"})
    before = int(time.time() * 1000)
    for value in VALUES:
        producer.produce(topic, value, partition=0)
    assert producer.flush(30) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": node.bootstrap,
            "group.id": "flow-confluent",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, 0, 4)])
        read: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(read) < 6 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                read.append(message.value() or b"")
        assert read == VALUES[4:]
        consumer.commit(offsets=[TopicPartition(topic, 0, 7)], asynchronous=False)
        (committed,) = consumer.committed([TopicPartition(topic, 0)], timeout=10)
        assert committed.offset == 7
        assert consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10) == (0, 10)
        (by_time,) = consumer.offsets_for_times([TopicPartition(topic, 0, before)], timeout=10)
        assert by_time.offset == 0
    finally:
        consumer.close()


def kcat(*args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        ["kcat", *args], input=stdin, capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout


def test_kcat(node: Cluster) -> None:
    topic = "flow-kcat"
    before = int(time.time() * 1000)
    lines = "".join(f"{value.decode()}\n" for value in VALUES)
    kcat("-P", "-b", node.bootstrap, "-t", topic, "-p", "0", stdin=lines)
    read = kcat("-C", "-b", node.bootstrap, "-t", topic, "-p", "0", "-o", "4", "-e", "-q")
    assert read.split() == [value.decode() for value in VALUES[4:]]
    # -Q: the offset of the first message at or after a time.
    queried = kcat("-Q", "-b", node.bootstrap, "-t", f"{topic}:0:{before}")
    assert "offset 0" in queried
    # A group's commits: a balanced consumer of the topic reads all and commits.
    read = kcat("-G", "flow-kcat", "-b", node.bootstrap, "-o", "beginning", "-e", "-q", topic)
    assert sorted(read.split()) == sorted(value.decode() for value in VALUES)


def test_kafka_python(node: Cluster) -> None:
    topic = "flow-kafka-python"
    before = int(time.time() * 1000)
    producer = KafkaProducer(bootstrap_servers=node.bootstrap, acks="all")
    try:
        for value in VALUES:
            producer.send(topic, value, partition=0)
        producer.flush(30)
    finally:
        producer.close()
    partition = PythonTopicPartition(topic, 0)
    consumer = KafkaConsumer(
        bootstrap_servers=node.bootstrap, group_id="flow-kafka-python", enable_auto_commit=False
    )
    try:
        consumer.assign([partition])
        consumer.seek(partition, 4)
        read: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(read) < 6 and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                read.extend(record.value for record in records)
        assert read == VALUES[4:]
        consumer.commit({partition: OffsetAndMetadata(7, "", -1)})
        assert consumer.committed(partition) == 7
        assert consumer.beginning_offsets([partition]) == {partition: 0}
        assert consumer.end_offsets([partition]) == {partition: 10}
        assert consumer.offsets_for_times({partition: before})[partition].offset == 0
    finally:
        consumer.close()


async def test_aiokafka(node: Cluster) -> None:
    topic = "flow-aiokafka"
    before = int(time.time() * 1000)
    producer = AIOKafkaProducer(bootstrap_servers=node.bootstrap, acks="all")
    await producer.start()
    try:
        for value in VALUES:
            await producer.send_and_wait(topic, value, partition=0)
    finally:
        await producer.stop()
    partition = AioTopicPartition(topic, 0)
    consumer = AIOKafkaConsumer(
        bootstrap_servers=node.bootstrap, group_id="flow-aiokafka", enable_auto_commit=False
    )
    await consumer.start()
    try:
        consumer.assign([partition])
        consumer.seek(partition, 4)
        read: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(read) < 6 and time.monotonic() < deadline:
            for records in (await consumer.getmany(timeout_ms=500)).values():
                read.extend(record.value or b"" for record in records)
        assert read == VALUES[4:]
        await consumer.commit({partition: AioOffsetAndMetadata(7, "")})
        assert await consumer.committed(partition) == 7
        assert await consumer.beginning_offsets([partition]) == {partition: 0}
        assert await consumer.end_offsets([partition]) == {partition: 10}
        by_time = await consumer.offsets_for_times({partition: before})
        assert by_time[partition] is not None and by_time[partition].offset == 0
    finally:
        await consumer.stop()

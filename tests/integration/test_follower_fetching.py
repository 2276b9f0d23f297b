"""Fetching from the closest replica (KIP-392), with confluent-kafka and aiokafka against three
real nodes in three racks: with `replica.selector.class` set to Kafka's rack-aware selector, the
leader sends a consumer whose `client.rack` names a follower's rack to that follower, which
serves every record up to its high watermark."""

from __future__ import annotations

import asyncio
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka import TopicPartition as AioTopicPartition
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from prometheus_client.parser import text_string_to_metric_families

from bench.cluster import Cluster

pytestmark = pytest.mark.timeout(180)

RACK_AWARE = "org.apache.kafka.common.replica.RackAwareReplicaSelector"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    cluster = Cluster.combined(
        tmp_path_factory.mktemp("racks"), 3, **{"replica.selector.class": RACK_AWARE}
    )
    for node_id, node in cluster.nodes.items():
        with node.config_path.open("a") as config:
            config.write(f"broker.rack=rack-{node_id}\n")
    cluster.start_all()
    try:
        cluster.wait_for("brokers unfenced", lambda: cluster.brokers_unfenced(3), timeout=60)
        yield cluster
    finally:
        cluster.stop_all()


def fetch_counters(cluster: Cluster, node_id: int, topic: str) -> tuple[float, float]:
    """(consumer fetches served as follower, redirected as leader) of partition 0 of `topic` on
    node `node_id`, from its `/metrics`."""
    url = f"http://127.0.0.1:{cluster.nodes[node_id].admin_port}/metrics"
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    found = {"as_follower": 0.0, "redirected": 0.0}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.labels.get("topic") != topic or not sample.name.endswith("_total"):
                continue
            if sample.name == "kraft_partition_consumer_fetches_as_follower_total":
                found["as_follower"] = sample.value
            if sample.name == "kraft_partition_consumer_fetches_redirected_total":
                found["redirected"] = sample.value
    return found["as_follower"], found["redirected"]


def fully_in_sync(admin: AdminClient, topic: str) -> bool:
    """Whether partition 0 of `topic` has all 3 replicas in its ISR. False while the answering
    broker has not learnt of the topic yet (LEADER_NOT_AVAILABLE, no partitions): CreateTopics
    answers once the controller committed it, the brokers' metadata follows."""
    partitions = admin.list_topics(topic, timeout=10).topics[topic].partitions
    return 0 in partitions and len(partitions[0].isrs) == 3


def produce(cluster: Cluster, topic: str, values: list[str]) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 5})
    failures: list[Any] = []
    for value in values:
        producer.produce(
            topic,
            value=value.encode(),
            partition=0,
            on_delivery=lambda error, _: failures.append(error) if error else None,
        )
    assert producer.flush(30) == 0
    assert failures == []


def consume(consumer: Consumer, count: int) -> list[str]:
    values: list[str] = []
    for _ in range(600):
        if len(values) >= count:
            break
        message = consumer.poll(0.1)
        if message is None or message.error() is not None:
            continue
        value = message.value()
        assert value is not None
        values.append(value.decode())
    return values


def test_a_consumer_in_a_followers_rack_reads_every_record_from_that_follower(
    cluster: Cluster,
) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    # Node 1 leads; nodes 2 and 3 follow.
    topic = NewTopic("racked", 1, replica_assignment=[[1, 2, 3]])
    admin.create_topics([topic])["racked"].result(timeout=30)
    cluster.wait_for("racked fully in sync", lambda: fully_in_sync(admin, "racked"), timeout=30)
    first = [f"first-{index}" for index in range(200)]
    produce(cluster, "racked", first)

    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": "rack-3-reader",
            "client.rack": "rack-3",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign([TopicPartition("racked", 0, OFFSET_BEGINNING)])
        assert consume(consumer, len(first)) == first
        # Records written while the consumer reads from the follower reach it too.
        second = [f"second-{index}" for index in range(100)]
        produce(cluster, "racked", second)
        assert consume(consumer, len(second)) == second
    finally:
        consumer.close()

    served_by_follower, _ = fetch_counters(cluster, 3, "racked")
    _, redirected = fetch_counters(cluster, 1, "racked")
    assert redirected >= 1
    assert served_by_follower >= 1
    # The follower of the other rack served no consumer.
    assert fetch_counters(cluster, 2, "racked") == (0.0, 0.0)


async def test_aiokafka_with_client_rack_reads_from_the_follower_of_its_rack(
    cluster: Cluster,
) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic("racked-aio", 1, replica_assignment=[[1, 2, 3]])])[
        "racked-aio"
    ].result(timeout=30)
    cluster.wait_for(
        "racked-aio fully in sync", lambda: fully_in_sync(admin, "racked-aio"), timeout=30
    )
    values = [f"aio-{index}" for index in range(150)]
    produce(cluster, "racked-aio", values)
    consumer = AIOKafkaConsumer(
        bootstrap_servers=cluster.bootstrap, client_rack="rack-2", enable_auto_commit=False
    )
    await consumer.start()
    try:
        partition = AioTopicPartition("racked-aio", 0)
        consumer.assign([partition])
        await consumer.seek_to_beginning(partition)
        read: list[str] = []
        async with asyncio.timeout(60):
            while len(read) < len(values):
                batches = await consumer.getmany(partition, timeout_ms=500)
                read.extend(
                    (message.value or b"").decode() for message in batches.get(partition, [])
                )
    finally:
        await consumer.stop()
    assert read == values
    assert fetch_counters(cluster, 2, "racked-aio")[0] >= 1
    assert fetch_counters(cluster, 1, "racked-aio")[1] >= 1
    assert fetch_counters(cluster, 3, "racked-aio") == (0.0, 0.0)

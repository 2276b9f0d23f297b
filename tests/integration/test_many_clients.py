"""Many clients and the acks=all path on real `kraft serve` processes: a node holding 1,000
idle Kafka connections still answers a producer (and keeps every idle connection usable), and
no acks=all write acknowledged while a follower dies mid-wait is lost."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.cluster import Cluster
from tests.integration.test_request_limits import api_versions

IDLE_CONNECTIONS = 1000


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root: Path = tmp_path_factory.mktemp("many-clients")
    # A follower that dies leaves the ISR within seconds, so waiting writes are answered.
    cluster = Cluster.combined(
        root,
        3,
        **{
            "min.insync.replicas": "2",
            "replica.lag.time.max.ms": "2000",
            "broker.session.timeout.ms": "3000",
            "broker.heartbeat.interval.ms": "500",
        },
    )
    with cluster.started(60):
        yield cluster


def created(cluster: Cluster, topic: str) -> int:
    """Creates `topic` (one partition, replication factor 3); its leader, once the whole ISR
    is in."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 3)])[topic].result(30)

    def led() -> int | None:
        partition = admin.list_topics(topic, timeout=5).topics[topic].partitions.get(0)
        if partition is None or partition.leader < 0 or len(partition.isrs) != 3:
            return None
        return int(partition.leader)

    return cluster.wait_for(f"{topic} led with a full ISR", led, timeout=30)


def produce(cluster: Cluster, topic: str, values: list[bytes], pause: float = 0) -> list[bytes]:
    """Produces `values` with acks=all (idempotent), `pause` seconds apart; the values
    acknowledged."""
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "acks": "all",
            "linger.ms": 0,
            "enable.idempotence": True,
        }
    )
    acknowledged: list[bytes] = []

    def delivered(error: object, message: object) -> None:
        if error is None:
            acknowledged.append(message.value())  # type: ignore[attr-defined]

    for value in values:
        producer.produce(topic, value, on_delivery=delivered)
        producer.poll(pause)
    assert producer.flush(60) == 0
    return acknowledged


def consumed(cluster: Cluster, topic: str, expected: int) -> list[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": f"check-{topic}",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    found: list[bytes] = []
    deadline = time.monotonic() + 60
    while len(found) < expected and time.monotonic() < deadline:
        for message in consumer.consume(1000, timeout=1):
            if message.error() is None:
                found.append(message.value() or b"")
    consumer.close()
    return found


def high_watermark(cluster: Cluster, node_id: int, topic: str) -> int:
    """Partition 0's high watermark as node `node_id` gives it (-1 while it cannot)."""
    try:
        return int(cluster.nodes[node_id].get(f"/v1/topics/{topic}/partitions/0")["high_watermark"])
    except (OSError, ValueError, KeyError, TypeError):
        return -1


def test_a_producer_is_answered_while_1000_idle_connections_are_open(cluster: Cluster) -> None:
    leader = created(cluster, "busy")
    port = cluster.nodes[leader].broker_port
    assert port is not None
    idle: list[socket.socket] = []
    try:
        for number in range(IDLE_CONNECTIONS):
            connection = socket.create_connection(("127.0.0.1", port), timeout=10)
            idle.append(connection)
            # A real Kafka connection (the client's first request), then nothing more.
            assert api_versions(connection, number, timeout=30) == number
        values = [b"%d" % n for n in range(300)]
        assert produce(cluster, "busy", values) == values
        # Every idle connection is still open and served.
        for number, connection in enumerate(idle):
            assert api_versions(connection, IDLE_CONNECTIONS + number, timeout=30) == (
                IDLE_CONNECTIONS + number
            )
    finally:
        for connection in idle:
            connection.close()
    assert consumed(cluster, "busy", len(values)) == values


def test_no_acknowledged_write_is_lost_when_a_follower_dies_mid_wait(cluster: Cluster) -> None:
    leader = created(cluster, "steady")
    follower = next(node for node in cluster.running() if node != leader)
    values = [b"%d" % n for n in range(1000)]
    acknowledged: list[bytes] = []
    # The follower dies while writes wait for it: some of them are then answered only once
    # the ISR shrank to the two left (still min.insync.replicas).
    writer = threading.Thread(
        target=lambda: acknowledged.extend(produce(cluster, "steady", values, 0.002))
    )
    writer.start()
    cluster.wait_for("writes flowing", lambda: high_watermark(cluster, leader, "steady") > 200)
    cluster.kill(follower)
    writer.join(120)
    assert not writer.is_alive()
    try:
        assert len(acknowledged) == len(values)
        found = consumed(cluster, "steady", len(acknowledged))
        assert set(acknowledged) <= set(found)
        assert len(found) == len(set(found))  # none written twice
    finally:
        cluster.start(follower)
        cluster.wait_for("follower back", lambda: cluster.ready(follower), timeout=60)


def test_each_node_froze_its_start_up_heap_out_of_the_collector(cluster: Cluster) -> None:
    # A full collection walking every object start-up made paused the event loop for tens of
    # milliseconds on a loaded machine; each node freezes them once it has started.
    def frozen_objects(node_id: int) -> int | None:
        lines = cluster.nodes[node_id].log_path.read_text().splitlines()
        events = [json.loads(line) for line in lines if line.startswith("{")]
        frozen = [event for event in events if event.get("event") == "gc_frozen"]
        return int(frozen[-1]["objects"]) if frozen else None

    for node_id in cluster.nodes:
        # The modules and classes alone are tens of thousands of objects.
        objects = cluster.wait_for(f"node {node_id} froze", partial(frozen_objects, node_id))
        assert objects > 10_000

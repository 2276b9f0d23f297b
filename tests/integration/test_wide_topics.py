"""Topics of hundreds of partitions on three real nodes (RF 3, min.insync.replicas 2): created
in one CreateTopics, every partition gets a leader that its broker really took up and a full
ISR; acks=all writes to several of them read back; a controlled shutdown moves a third of the
leaderships at once, and the moved partitions take writes under their new leaders; a node
whose power is cut right after it created the replicas of a new topic, before any write to
them, takes them up again and replicates the writes that follow."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.cluster import Cluster

TOPIC = "wide"
PARTITIONS = 500
WRITTEN = (0, 1, 2, 123, 250, 499)
LATE = "wide-late"
LATE_PARTITIONS = 90


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    started = Cluster.combined(tmp_path_factory.mktemp("wide"), 3, **{"min.insync.replicas": "2"})
    # From its first start (its format's files too): the last test cuts its power.
    started.keep_durability_journal(3)
    started.start_all()
    try:
        started.wait_for("brokers unfenced", started.brokers_unfenced, 60)
        admin = AdminClient({"bootstrap.servers": started.bootstrap})
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)])[TOPIC].result(60)
        started.wait_for("every partition led, ISR full", lambda: all_led_in_sync(started), 90)
        yield started
    finally:
        started.stop_all()


def metadata(cluster: Cluster, topic: str = TOPIC) -> dict[int, Any]:
    """The topic's partitions as a client's Metadata request sees them."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    return dict(admin.list_topics(topic, timeout=20).topics[topic].partitions)


def led_by_replica_managers(cluster: Cluster) -> dict[int, int]:
    """Node id -> how many partitions of the topic its replica manager leads (it reports the
    ISR size of those only)."""
    led = {}
    for node_id in cluster.running():
        node = cluster.nodes[node_id]
        url = f"http://{node.host}:{node.admin_port}/metrics"
        with urllib.request.urlopen(url, timeout=20) as response:
            led[node_id] = sum(
                1
                for line in response.read().decode().splitlines()
                if line.startswith("kraft_partition_isr_size{") and f'topic="{TOPIC}"' in line
            )
    return led


def produce(cluster: Cluster, partitions: tuple[int, ...], tag: str, topic: str = TOPIC) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 5})
    failures: list[Any] = []
    for partition in partitions:
        for index in range(20):
            producer.produce(
                topic,
                f"{tag}-{partition}-{index}".encode(),
                partition=partition,
                on_delivery=lambda error, _: failures.append(error) if error else None,
            )
    assert producer.flush(60) == 0
    assert failures == []


def consume(cluster: Cluster, partition: int, count: int, topic: str = TOPIC) -> list[bytes]:
    consumer = Consumer(
        {"bootstrap.servers": cluster.bootstrap, "group.id": "wide", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, partition, 0)])
    values: list[bytes] = []

    def received_all() -> bool:
        for message in consumer.consume(100, 0.5):
            value = message.value()
            if message.error() is None and value is not None:
                values.append(value)
        return len(values) >= count

    try:
        cluster.wait_for(f"{count} records of partition {partition}", received_all, 60)
    finally:
        consumer.close()
    return values


def all_led_in_sync(cluster: Cluster, topic: str = TOPIC, count: int = PARTITIONS) -> bool:
    partitions = metadata(cluster, topic)
    return len(partitions) == count and all(
        p.leader >= 0 and len(p.isrs) == 3 for p in partitions.values()
    )


def test_every_partition_is_led_by_its_broker_with_a_full_isr(cluster: Cluster) -> None:
    assert all_led_in_sync(cluster)
    partitions = metadata(cluster)
    by_leader = {
        node_id: sum(1 for p in partitions.values() if p.leader == node_id)
        for node_id in cluster.nodes
    }
    # The leaders the metadata names lead in their replica managers too, spread evenly.
    cluster.wait_for(
        "replica managers leading", lambda: led_by_replica_managers(cluster) == by_leader, 60
    )
    assert all(abs(count - PARTITIONS / 3) <= 1 for count in by_leader.values())


def test_acks_all_writes_to_several_partitions_read_back(cluster: Cluster) -> None:
    produce(cluster, WRITTEN, "first")
    for partition in WRITTEN:
        assert consume(cluster, partition, 20) == [
            f"first-{partition}-{index}".encode() for index in range(20)
        ]


def test_a_controlled_shutdown_moves_a_third_of_the_leaderships_at_once(
    cluster: Cluster,
) -> None:
    before = metadata(cluster)
    stopped = 3
    moved = tuple(p for p, state in before.items() if state.leader == stopped)
    assert len(moved) > PARTITIONS // 4
    assert cluster.terminate(stopped) == 0

    def moved_away() -> bool:
        partitions = metadata(cluster)
        return all(
            partitions[p].leader not in (-1, stopped) and stopped not in partitions[p].isrs
            for p in range(PARTITIONS)
        )

    cluster.wait_for("leaderships moved", moved_away, 90)
    after = metadata(cluster)
    by_leader = {
        node_id: sum(1 for p in after.values() if p.leader == node_id) for node_id in (1, 2)
    }
    assert sum(by_leader.values()) == PARTITIONS
    cluster.wait_for(
        "replica managers leading the moved partitions",
        lambda: led_by_replica_managers(cluster) == by_leader,
        60,
    )
    assert {after[p].leader for p in moved} <= {1, 2}
    # The moved partitions take acks=all writes (ISR 2 = min.insync.replicas) and serve them.
    written = (moved[0], moved[len(moved) // 2], moved[-1])
    produce(cluster, written, "moved")
    for partition in written:
        values = consume(cluster, partition, 20)
        assert values[-20:] == [f"moved-{partition}-{index}".encode() for index in range(20)]


def test_a_power_cut_right_after_a_topic_was_created_loses_none_of_the_writes_after(
    cluster: Cluster,
) -> None:
    # Node 3 (stopped by the previous test) starts again.
    cluster.start(3)
    cluster.wait_for("node 3 ready", lambda: cluster.ready(3), 60)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(LATE, LATE_PARTITIONS, 3)])[LATE].result(60)
    cluster.wait_for(
        "the new topic led, ISR full", lambda: all_led_in_sync(cluster, LATE, LATE_PARTITIONS), 60
    )
    # Its replicas' files were made without an fsync each: the cut removes what was never
    # synced, before a single write.
    cluster.power_cut(3)
    cluster.start(3)
    cluster.wait_for("node 3 ready", lambda: cluster.ready(3), 60)
    cluster.wait_for(
        "every ISR full again",
        lambda: all_led_in_sync(cluster, LATE, LATE_PARTITIONS) and all_led_in_sync(cluster),
        90,
    )
    written = (0, 1, 2, 44, 89)
    produce(cluster, written, "late", LATE)
    for partition in written:
        assert consume(cluster, partition, 20, LATE) == [
            f"late-{partition}-{index}".encode() for index in range(20)
        ]

        # Every replica holds them, node 3's too (what each last reported to its leader).
        def replicated(p: int = partition) -> bool:
            described = cluster.nodes[1].get(f"/v1/topics/{LATE}/partitions/{p}", timeout=10)
            return bool(described["log_end_offsets"] == {"1": 20, "2": 20, "3": 20})

        cluster.wait_for(f"partition {partition} replicated", replicated, 30)

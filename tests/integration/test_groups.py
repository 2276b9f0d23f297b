"""Consumer groups against a real `kraft serve` node with real clients: the coordinator found
on `__consumer_offsets`, partitions shared among a group's members, commits that a restarted
consumer resumes from."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from kafka import KafkaConsumer

from tests.integration.cluster import Cluster
from tests.integration.test_produce_consume import create_topic, produce_with_librdkafka

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    cluster = Cluster.combined(
        tmp_path_factory.mktemp("groups"),
        1,
        **{"offsets.topic.num.partitions": "5", "group.initial.rebalance.delay.ms": "0"},
    )
    cluster.start_all()
    try:
        cluster.wait_for("broker unfenced", cluster.brokers_unfenced)
        yield cluster
    finally:
        cluster.stop_all()


def group_consumer(cluster: Cluster, group: str, **settings: Any) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500,
            **settings,
        }
    )


def shared_by(cluster: Cluster, consumers: list[Consumer], partitions: int, what: str) -> None:
    """Poll every consumer (from this one thread: confluent-kafka's rebalance callbacks run in
    poll) until each owns some partitions and together they own each exactly once."""

    def owners() -> bool:
        for consumer in consumers:
            consumer.poll(0.05)
        owned = [{tp.partition for tp in consumer.assignment()} for consumer in consumers]
        every = sorted(p for mine in owned for p in mine)
        return all(owned) and every == list(range(partitions))

    cluster.wait_for(what, owners, 60.0)


def test_librdkafka_members_share_the_partitions_and_take_over_when_one_leaves(
    node: Cluster,
) -> None:
    create_topic(node, "shared", 6)
    consumers = [group_consumer(node, "sharers") for _ in range(3)]
    try:
        for consumer in consumers:
            consumer.subscribe(["shared"])
        shared_by(node, consumers, 6, "partitions shared by three members")
        # One leaves cleanly (LeaveGroup): the two others take its partitions over at once,
        # well before its session would have expired.
        consumers.pop().close()
        left_at = time.monotonic()
        shared_by(node, consumers, 6, "partitions shared by the two others")
        assert time.monotonic() - left_at < 6.0
    finally:
        for consumer in consumers:
            consumer.close()


def test_a_consumer_resumes_from_what_it_committed(node: Cluster) -> None:
    create_topic(node, "resumed", 2)
    produce_with_librdkafka(node, "resumed", [(i % 2, f"m-{i}") for i in range(40)])

    first = group_consumer(node, "resumers")
    first.subscribe(["resumed"])
    seen: list[str] = []
    deadline = time.monotonic() + 60
    while len(seen) < 20 and time.monotonic() < deadline:
        message = first.poll(0.5)
        if message is not None and message.error() is None:
            seen.append(message.value().decode())
            first.commit(message=message, asynchronous=False)
    committed = first.committed([TopicPartition("resumed", p) for p in range(2)], timeout=10)
    first.close()
    # Offsets each partition committed (a partition it never read from has none: -1001).
    assert sum(max(tp.offset, 0) for tp in committed) == len(seen) == 20

    # kafka-python in the same group starts where the commits are: nothing twice, no gap.
    second = KafkaConsumer(
        "resumed",
        bootstrap_servers=node.bootstrap,
        group_id="resumers",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        consumer_timeout_ms=10_000,
    )
    try:
        rest = [record.value.decode() for record in second]
    finally:
        second.close()
    assert sorted(seen + rest) == sorted(f"m-{i}" for i in range(40))

"""Replication between real `kraft serve` processes: followers pull from leaders, the high
watermark moves once every ISR member has a record, and the replicas' logs are identical."""

from __future__ import annotations

import asyncio
import subprocess
import urllib.error
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer
from confluent_kafka import KafkaError, Producer
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as PythonTopicPartition

from bench.cluster import Cluster
from tests.integration.test_produce_consume import (
    aiokafka_read,
    create_topic,
    kcat_consume,
    produce_with_librdkafka,
)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    cluster = Cluster.combined(tmp_path, 3)
    with cluster.started(20.0):
        yield cluster


def segment_bytes(cluster: Cluster, node_id: int, topic: str, partition: int) -> bytes:
    directory = cluster.nodes[node_id].data_dir / f"{topic}-{partition}"
    return b"".join(path.read_bytes() for path in sorted(directory.glob("*.log")))


async def test_acks_all_is_replicated_to_every_replica(cluster: Cluster) -> None:
    await asyncio.to_thread(create_topic, cluster, "replicated", 3, replication_factor=3)
    messages = [(i % 3, f"message-{i}") for i in range(300)]
    await asyncio.to_thread(produce_with_librdkafka, cluster, "replicated", messages)

    read = await asyncio.to_thread(kcat_consume, cluster, "replicated")
    assert sorted((p, o) for p, o, _ in read) == sorted(
        (p, o) for p in range(3) for o in range(100)
    )

    def identical() -> bool:
        return all(
            len({segment_bytes(cluster, node_id, "replicated", p) for node_id in (1, 2, 3)}) == 1
            for p in range(3)
        )

    await asyncio.to_thread(cluster.wait_for, "identical replicas", identical, 10.0)
    assert len(segment_bytes(cluster, 1, "replicated", 0)) > 100 * len("message-0")


def partition_state(cluster: Cluster, node_id: int, topic: str) -> dict[str, Any]:
    state: dict[str, Any] = cluster.nodes[node_id].get(f"/v1/topics/{topic}")["partitions"][0]
    return state


def wait_for_partition_state(
    cluster: Cluster,
    node_id: int,
    topic: str,
    what: str,
    condition: Callable[[dict[str, Any]], bool],
    timeout: float = 20.0,
) -> dict[str, Any]:
    """Partition 0's state as `node_id` sees it, once `condition` holds. A node whose metadata
    image does not have the topic yet (404: the controller answered the creation first) has
    not seen the condition yet."""

    def check() -> dict[str, Any] | None:
        try:
            state = partition_state(cluster, node_id, topic)
        except urllib.error.HTTPError as error:
            if error.code != 404:
                raise
            return None
        return state if condition(state) else None

    return cluster.wait_for(what, check, timeout)


def produce_one(cluster: Cluster, topic: str, value: bytes) -> KafkaError | None:
    """One acks=all message without retries: the broker's answer as the application sees it."""
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "retries": 0})
    outcome: list[KafkaError | None] = []
    producer.produce(topic, value, on_delivery=lambda error, _: outcome.append(error))
    producer.flush(30)
    return outcome[0]


@pytest.mark.timeout(120)
async def test_a_stalled_follower_leaves_the_isr_and_rejoins(tmp_path: Path) -> None:
    cluster = Cluster.combined(
        tmp_path,
        3,
        **{"replica.lag.time.max.ms": "1500", "broker.session.timeout.ms": "60000"},
    )
    cluster.start_all()
    try:
        await asyncio.to_thread(cluster.wait_for, "brokers unfenced", cluster.brokers_unfenced)
        await asyncio.to_thread(
            create_topic,
            cluster,
            "guarded",
            1,
            replication_factor=3,
            configs={"min.insync.replicas": "3"},
        )
        assert await asyncio.to_thread(produce_one, cluster, "guarded", b"before") is None
        quorum_leader = cluster.nodes[1].get("/v1/quorum")["leader_id"]
        state = await asyncio.to_thread(
            wait_for_partition_state, cluster, 1, "guarded", "guarded known", lambda _: True
        )
        # Stall a follower that is neither the partition leader nor the quorum leader.
        (stalled,) = [r for r in state["replicas"] if r not in (state["leader"], quorum_leader)][:1]
        observer = state["leader"]
        cluster.pause(stalled)
        await asyncio.to_thread(
            wait_for_partition_state,
            cluster,
            observer,
            "guarded",
            "the stalled follower out of the ISR",
            lambda state: stalled not in state["isr"],
            15.0,
        )
        refused = await asyncio.to_thread(produce_one, cluster, "guarded", b"refused")
        assert refused is not None and refused.code() == KafkaError.NOT_ENOUGH_REPLICAS

        cluster.resume(stalled)
        await asyncio.to_thread(
            wait_for_partition_state,
            cluster,
            observer,
            "guarded",
            "the follower back in the ISR",
            lambda state: sorted(state["isr"]) == [1, 2, 3],
            15.0,
        )
        assert await asyncio.to_thread(produce_one, cluster, "guarded", b"after") is None
        read = await asyncio.to_thread(kcat_consume, cluster, "guarded")
        assert [value for _, _, value in read] == ["before", "after"]
    finally:
        cluster.stop_all()


@pytest.mark.timeout(150)
async def test_leader_killed_during_an_idempotent_stream_keeps_every_message_exactly_once(
    tmp_path: Path,
) -> None:
    """librdkafka's idempotent producer (acks=all) retries what the dead leader never
    answered; the new leader, which replicated the producer state, writes each once."""
    cluster = Cluster.combined(
        tmp_path,
        3,
        **{"broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "500"},
    )
    cluster.start_all()
    try:
        await asyncio.to_thread(cluster.wait_for, "brokers unfenced", cluster.brokers_unfenced)
        settings = {"min.insync.replicas": "2"}
        await asyncio.to_thread(
            create_topic, cluster, "stream", 1, replication_factor=3, configs=settings
        )
        stream_state = await asyncio.to_thread(
            wait_for_partition_state, cluster, 1, "stream", "stream led", lambda s: s["leader"] >= 0
        )
        leader = stream_state["leader"]
        acknowledged: list[str] = []
        failed: list[str] = []

        def stream() -> None:
            producer = Producer(
                {
                    "bootstrap.servers": cluster.bootstrap,
                    "enable.idempotence": True,
                    "acks": "all",
                    "linger.ms": 2,
                    "message.timeout.ms": 60000,
                }
            )

            def delivered(error: KafkaError | None, message: Any) -> None:
                value = message.value().decode()
                (failed if error is not None else acknowledged).append(value)

            for index in range(3000):
                producer.produce("stream", f"m-{index:05d}".encode(), on_delivery=delivered)
                producer.poll(0)
                if index % 100 == 0:
                    producer.flush(60)
            producer.flush(90)

        streaming = asyncio.create_task(asyncio.to_thread(stream))
        while len(acknowledged) < 800:
            await asyncio.sleep(0.01)
        cluster.kill(leader)
        await asyncio.wait_for(streaming, 120)
        assert failed == []
        survivors = cluster.running()

        def new_leader() -> int | None:
            state = partition_state(cluster, survivors[0], "stream")
            return state["leader"] if state["leader"] not in (-1, leader) else None

        await asyncio.to_thread(cluster.wait_for, "a new leader", new_leader, 30.0)
        read = await asyncio.to_thread(kcat_consume, cluster, "stream")
        values = [value for _, _, value in read]
        # Every message was acknowledged and is there once, in the order it was sent.
        sent = [f"m-{index:05d}" for index in range(3000)]
        assert sorted(acknowledged) == sent
        assert values == sent

        # The killed broker comes back, truncates what the new leader's epoch does not have
        # (its log diverged: it took records the others never got), catches up, and the ISR
        # heals to all three with identical logs.
        cluster.start(leader)
        await asyncio.to_thread(
            wait_for_partition_state,
            cluster,
            survivors[0],
            "stream",
            "ISR healed",
            lambda state: sorted(state["isr"]) == [1, 2, 3],
            60.0,
        )

        def identical() -> bool:
            return len({segment_bytes(cluster, n, "stream", 0) for n in (1, 2, 3)}) == 1

        await asyncio.to_thread(cluster.wait_for, "identical replicas", identical, 10.0)
    finally:
        cluster.stop_all()


async def test_every_client_reads_what_the_others_wrote_with_three_replicas(
    cluster: Cluster,
) -> None:
    """librdkafka, kcat, kafka-python and aiokafka write at once to a 3-partition RF=3 topic;
    kcat, kafka-python and aiokafka each read all of it: the same log per partition, with every
    writer's messages in the order it sent them."""
    await asyncio.to_thread(create_topic, cluster, "mixed", 3, replication_factor=3)
    count = 60

    def values(writer: str, partition: int) -> list[str]:
        return [f"{writer}-{i}" for i in range(count) if i % 3 == partition]

    def write_librdkafka() -> None:
        produce_with_librdkafka(
            cluster, "mixed", [(i % 3, f"librdkafka-{i}") for i in range(count)]
        )

    def write_kcat() -> None:
        for partition in range(3):
            subprocess.run(
                ["kcat", "-P", "-b", cluster.bootstrap, "-t", "mixed", "-p", str(partition)],
                input="\n".join(values("kcat", partition)) + "\n",
                text=True,
                timeout=60,
                check=True,
            )

    def write_kafka_python() -> None:
        producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all")
        try:
            for i in range(count):
                producer.send("mixed", value=f"kafka-python-{i}".encode(), partition=i % 3)
            producer.flush(30)
        finally:
            producer.close()

    async def write_aiokafka() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all")
        await producer.start()
        try:
            for i in range(count):
                await producer.send("mixed", f"aiokafka-{i}".encode(), partition=i % 3)
            await producer.flush()
        finally:
            await producer.stop()

    await asyncio.wait_for(
        asyncio.gather(
            asyncio.to_thread(write_librdkafka),
            asyncio.to_thread(write_kcat),
            asyncio.to_thread(write_kafka_python),
            write_aiokafka(),
        ),
        120,
    )
    writers = ("librdkafka", "kcat", "kafka-python", "aiokafka")
    total = count * len(writers)

    by_kcat: dict[int, list[str]] = {0: [], 1: [], 2: []}
    for partition, offset, value in await asyncio.to_thread(kcat_consume, cluster, "mixed"):
        assert offset == len(by_kcat[partition])
        by_kcat[partition].append(value)

    def read_kafka_python() -> dict[int, list[str]]:
        consumer = KafkaConsumer(
            bootstrap_servers=cluster.bootstrap, enable_auto_commit=False, consumer_timeout_ms=5000
        )
        try:
            consumer.assign([PythonTopicPartition("mixed", p) for p in range(3)])
            consumer.seek_to_beginning()
            read: dict[int, list[str]] = {0: [], 1: [], 2: []}
            for record in consumer:
                read[record.partition].append(record.value.decode())
            return read
        finally:
            consumer.close()

    by_aiokafka = await aiokafka_read(cluster, "mixed", 3, total)
    assert await asyncio.to_thread(read_kafka_python) == by_kcat
    assert by_aiokafka == by_kcat
    for partition, log in by_kcat.items():
        for writer in writers:
            assert [v for v in log if v.rsplit("-", 1)[0] == writer] == values(writer, partition)
    assert sum(len(log) for log in by_kcat.values()) == total

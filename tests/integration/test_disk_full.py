"""A full disk costs the partitions on it their writes and nothing else (issue 19).

One real node keeps its partition logs on two directories, one a small filesystem of the
test's own (tmpfs, mounted as root), and its metadata log on a third (`metadata.log.dir`).
Filling the small one up: producers to its partitions get KAFKA_STORAGE_ERROR, the node stays
ready and keeps taking writes on its other directory, nothing acknowledged is corrupted or lost;
the partition stays offline (KAFKA_STORAGE_ERROR) until its broker restarts, even once space
returns, as Kafka takes a failed log directory offline; after a crash (SIGKILL) and restart it
takes writes again and every acknowledged record reads back in order.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaStorageError

from bench.cluster import Cluster
from tests.integration.test_produce_consume import create_topic

TOPIC = "filling"
VALUE = b"v" * 50_000

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a filesystem needs root")


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 3 MiB filesystem, unmounted after the test."""
    mount_point = tmp_path / "small"
    mount_point.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount_point)], check=True)
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


@pytest.fixture
def node(tmp_path: Path, small_disk: Path) -> Iterator[Cluster]:
    root = tmp_path / "cluster"
    cluster = Cluster.combined(
        root,
        1,
        **{
            "log.dirs": f"{small_disk},{root / 'node1' / 'big'}",
            "metadata.log.dir": str(root / "node1" / "metadata"),
        },
    )
    cluster.start_all()
    try:
        cluster.wait_for("broker unfenced", cluster.brokers_unfenced)
        yield cluster
    finally:
        cluster.stop_all()


def acknowledged(producer: KafkaProducer, partition: int, count: int) -> list[int]:
    """Send `count` records to `partition` one by one; the offsets of those acknowledged,
    stopping at the first KAFKA_STORAGE_ERROR."""
    offsets = []
    for _ in range(count):
        try:
            offsets.append(producer.send(TOPIC, VALUE, partition=partition).get(10).offset)
        except KafkaStorageError:
            break
    return offsets


def test_a_full_disk_refuses_writes_to_its_partitions_only_and_loses_nothing(
    node: Cluster, small_disk: Path
) -> None:
    create_topic(node, TOPIC, 4)
    on_small = sorted(int(path.name.rsplit("-", 1)[1]) for path in small_disk.glob(f"{TOPIC}-*"))
    on_big = sorted(set(range(4)) - set(on_small))
    assert on_small and on_big, "the topic's partitions should span both directories"
    full, spare = on_small[0], on_big[0]
    producer = KafkaProducer(bootstrap_servers=node.bootstrap, acks="all", retries=0)
    try:
        written = acknowledged(producer, full, 200)
        assert 0 < len(written) < 200, "the small disk should have filled up"
        # The full disk's partition refuses; the other directory and the node carry on.
        with pytest.raises(KafkaStorageError):
            producer.send(TOPIC, VALUE, partition=full).get(10)
        assert len(acknowledged(producer, spare, 5)) == 5
        assert node.nodes[1].get("/v1/health/ready")["status"] == "ok"
        # Space returns; the replica stays offline (as Kafka's failed log directory) until
        # its broker restarts.
        subprocess.run(["mount", "-o", "remount,size=16m", str(small_disk)], check=True)
        with pytest.raises(KafkaStorageError):
            producer.send(TOPIC, VALUE, partition=full).get(10)
    finally:
        producer.close()
    node.kill(1)
    node.start(1)
    node.wait_for("the restarted node ready", lambda: node.ready(1), 30.0)
    node.wait_for(
        "a leader again",
        lambda: node.nodes[1].get(f"/v1/topics/{TOPIC}")["partitions"][full]["leader"] == 1,
    )
    producer = KafkaProducer(bootstrap_servers=node.bootstrap, acks="all", retries=5)
    try:
        more = acknowledged(producer, full, 5)
    finally:
        producer.close()
    assert more == list(range(written[-1] + 1, written[-1] + 6))
    consumer = KafkaConsumer(
        bootstrap_servers=node.bootstrap, enable_auto_commit=False, consumer_timeout_ms=5_000
    )
    try:
        partition = TopicPartition(TOPIC, full)
        consumer.assign([partition])
        consumer.seek_to_beginning(partition)
        records = [record for record in consumer if record.partition == full]
    finally:
        consumer.close()
    assert [record.offset for record in records] == written + more
    assert all(record.value == VALUE for record in records)

"""The broker's log maintenance in a running node: retention deletes old segments of a
`cleanup.policy=delete` topic, and the background cleaner compacts a `cleanup.policy=compact`
topic (newest record per key, tombstones gone after `delete.retention.ms`) while a real client
reads it correctly, and compacts `__consumer_offsets`, whose compacted log still gives a
restarted coordinator every committed offset."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.cluster import Cluster
from tests.integration.test_produce_consume import create_topic
from tests.integration.test_replication import wait_for_partition_state

pytestmark = pytest.mark.timeout(180)

KEYS = 20
ROUNDS = 30
TOMBSTONED = {f"k{index}" for index in range(5)}


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    cluster = Cluster.combined(
        tmp_path_factory.mktemp("compaction"),
        1,
        **{
            "log.cleaner.backoff.ms": "200",
            "log.retention.check.interval.ms": "200",
            "offsets.topic.num.partitions": "1",
            "offsets.topic.segment.bytes": "2048",
            "group.initial.rebalance.delay.ms": "0",
        },
    )
    cluster.start_all()
    try:
        cluster.wait_for("broker unfenced", cluster.brokers_unfenced)
        yield cluster
    finally:
        cluster.stop_all()


def read_all(cluster: Cluster, topic: str) -> list[tuple[int, str, str | None]]:
    """Every record of partition 0 from the start to the end: offset, key, value."""
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": "compaction-reader",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        records: list[tuple[int, str, str | None]] = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error() is not None:
                break  # end of the partition
            offset, key, value = message.offset(), message.key(), message.value()
            assert offset is not None and key is not None
            text = None if value is None else value.decode()
            records.append((offset, key.decode(), text))
        return records
    finally:
        consumer.close()


def produce(cluster: Cluster, topic: str, records: list[tuple[str, str | None]]) -> None:
    # Small batches: a batch may not be larger than the topic's tiny segments.
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "batch.size": 600})
    for key, value in records:
        producer.produce(topic, key=key.encode(), value=None if value is None else value.encode())
    assert producer.flush(30) == 0


def test_retention_deletes_old_segments_and_moves_the_log_start(node: Cluster) -> None:
    create_topic(node, "expiring", 1, configs={"segment.bytes": "2048", "retention.ms": "1500"})
    produce(node, "expiring", [(f"old{i}", "x" * 40) for i in range(200)])
    consumer = Consumer({"bootstrap.servers": node.bootstrap, "group.id": "retention-reader"})
    try:

        def log_start() -> int:
            low, _ = consumer.get_watermark_offsets(TopicPartition("expiring", 0), timeout=10)
            return int(low)

        assert log_start() == 0
        time.sleep(1.5)
        # New records keep the active segment, and the segments they roll, young.
        produce(node, "expiring", [(f"new{i}", "y" * 40) for i in range(20)])
        node.wait_for("old segments deleted", lambda: log_start() > 150, 30.0)
        records = read_all(node, "expiring")
        assert records[0][0] == log_start()
        assert [key for _, key, _ in records][-20:] == [f"new{i}" for i in range(20)]
    finally:
        consumer.close()


def test_a_compacted_topic_keeps_the_newest_record_of_each_key(node: Cluster) -> None:
    create_topic(
        node,
        "compacted",
        1,
        configs={
            "cleanup.policy": "compact",
            "segment.bytes": "2048",
            "min.cleanable.dirty.ratio": "0.01",
            "delete.retention.ms": "1000",
        },
    )
    updates = [(f"k{key}", f"v{round}") for round in range(ROUNDS) for key in range(KEYS)]
    tombstones: list[tuple[str, str | None]] = [(key, None) for key in sorted(TOMBSTONED)]
    # Distinct keys, never compacted away: they push the updates out of the active segment.
    fillers: list[tuple[str, str | None]] = [(f"filler{i}", "x" * 40) for i in range(150)]
    produce(node, "compacted", [*updates, *tombstones, *fillers])
    produced = len(updates) + len(tombstones) + len(fillers)

    def compacted() -> list[tuple[int, str, str | None]] | None:
        records = read_all(node, "compacted")
        keys = [key for _, key, _ in records if key.startswith("k")]
        return records if sorted(keys) == sorted(set(keys)) else None

    records = node.wait_for("every key once", compacted, 60.0)
    offsets = [offset for offset, _, _ in records]
    assert offsets == sorted(set(offsets))
    assert offsets[-1] == produced - 1  # offsets are kept: the last record is where it was
    latest = {key: value for _, key, value in records if key.startswith("k")}
    for index in range(KEYS):
        key = f"k{index}"
        if key not in TOMBSTONED:
            assert latest[key] == f"v{ROUNDS - 1}"
        else:
            assert latest.get(key) is None  # a tombstone, or nothing once it went
    assert [key for _, key, _ in records if key.startswith("filler")] == [key for key, _ in fillers]

    # After delete.retention.ms the tombstones themselves go, though nothing new is written.
    def tombstones_gone() -> bool:
        return not TOMBSTONED & {key for _, key, _ in read_all(node, "compacted")}

    node.wait_for("tombstones removed", tombstones_gone, 30.0)


def offsets_log_size(cluster: Cluster) -> int:
    directory = cluster.nodes[1].data_dir / "__consumer_offsets-0"
    total = 0
    for path in Path(directory).glob("*.log"):
        # The node's cleaner may swap a segment out between the listing and its stat.
        with contextlib.suppress(FileNotFoundError):
            total += path.stat().st_size
    return total


def test_the_offsets_topic_is_compacted_and_still_gives_every_commit(node: Cluster) -> None:
    create_topic(node, "tracked", 2)
    committer = Consumer({"bootstrap.servers": node.bootstrap, "group.id": "committer"})
    commits = 300
    try:
        for offset in range(1, commits + 1):
            committer.commit(
                offsets=[TopicPartition("tracked", 0, offset), TopicPartition("tracked", 1, 7)],
                asynchronous=False,
            )
    finally:
        committer.close()

    # Each commit appended a record of ~100 bytes per partition; compaction leaves a few.
    node.wait_for("offsets topic compacted", lambda: offsets_log_size(node) < 8 * 2048, 60.0)

    # A coordinator that loads the compacted partition finds the last commit of each.
    node.kill(1)
    node.start(1)
    node.wait_for("the restarted node ready", lambda: node.ready(1), 30.0)
    reader = Consumer({"bootstrap.servers": node.bootstrap, "group.id": "committer"})
    try:
        committed = reader.committed(
            [TopicPartition("tracked", 0), TopicPartition("tracked", 1)], timeout=30
        )
    finally:
        reader.close()
    assert [(tp.partition, tp.offset) for tp in committed] == [(0, commits), (1, 7)]


def test_a_follower_catching_up_from_a_compacted_leader_can_lead_with_the_same_records(
    tmp_path: Path,
) -> None:
    cluster = Cluster.combined(
        tmp_path,
        3,
        **{
            "log.cleaner.backoff.ms": "200",
            "broker.session.timeout.ms": "4000",
            "broker.heartbeat.interval.ms": "500",
        },
    )
    cluster.start_all()
    try:
        cluster.wait_for("brokers unfenced", cluster.brokers_unfenced, 60.0)
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        configs = {
            "cleanup.policy": "compact",
            "segment.bytes": "2048",
            "min.cleanable.dirty.ratio": "0.01",
        }
        # Node 1 leads; node 2 is next in line.
        topic = NewTopic("replicated", 1, replica_assignment=[[1, 2, 3]], config=configs)
        admin.create_topics([topic])["replicated"].result(timeout=30)
        wait_for_partition_state(cluster, 1, "replicated", "led", lambda s: s["leader"] == 1)

        # Node 2 is away while the leader is written to and compacted.
        cluster.kill(2)
        updates = [(f"k{key}", f"v{round}") for round in range(ROUNDS) for key in range(KEYS)]
        fillers: list[tuple[str, str | None]] = [(f"filler{i}", "x" * 40) for i in range(150)]
        produce(cluster, "replicated", [*updates, *fillers])
        produced = len(updates) + len(fillers)

        def leader_compacted() -> bool:
            keys = [key for _, key, _ in read_all(cluster, "replicated") if key.startswith("k")]
            return sorted(keys) == sorted(set(keys))

        cluster.wait_for("the leader compacted", leader_compacted, 60.0)

        # Back, node 2 fetches the compacted log (offsets with gaps) and rejoins the ISR.
        cluster.start(2)
        wait_for_partition_state(
            cluster,
            1,
            "replicated",
            "node 2 in the ISR",
            lambda state: sorted(state["isr"]) == [1, 2, 3],
            60.0,
        )
        cluster.kill(1)
        wait_for_partition_state(
            cluster, 3, "replicated", "node 2 leading", lambda s: s["leader"] == 2, 30.0
        )
        records = read_all(cluster, "replicated")
        assert records[-1][0] == produced - 1
        latest = {key: value for _, key, value in records}
        assert all(latest[f"k{key}"] == f"v{ROUNDS - 1}" for key in range(KEYS))
        assert [key for _, key, _ in records if key.startswith("filler")] == [
            key for key, _ in fillers
        ]
    finally:
        cluster.stop_all()


def test_min_compaction_lag_keeps_recent_records_of_a_compacted_topic(node: Cluster) -> None:
    compacting = {
        "cleanup.policy": "compact",
        "segment.bytes": "2048",
        "min.cleanable.dirty.ratio": "0.01",
    }
    create_topic(node, "lagged", 1, configs={**compacting, "min.compaction.lag.ms": "600000"})
    create_topic(node, "unlagged", 1, configs=compacting)
    updates = [(f"k{key}", f"v{round}") for round in range(10) for key in range(KEYS)]
    fillers: list[tuple[str, str | None]] = [(f"filler{i}", "x" * 40) for i in range(150)]
    for topic in ("lagged", "unlagged"):
        produce(node, topic, [*updates, *fillers])

    def compacted(topic: str) -> bool:
        keys = [key for _, key, _ in read_all(node, topic) if key.startswith("k")]
        return sorted(keys) == sorted(set(keys))

    # The cleaner compacts the topic without a lag; the one with a lag keeps every update.
    node.wait_for("unlagged compacted", lambda: compacted("unlagged"), 60.0)
    time.sleep(1)  # a few more cleaner passes (log.cleaner.backoff.ms=200)
    assert [key for _, key, _ in read_all(node, "lagged")] == [key for key, _ in updates + fillers]


def test_max_compaction_lag_cleans_a_log_whatever_its_dirty_ratio(node: Cluster) -> None:
    # A dirty ratio of 0.99 is never reached once the first clean compacted the first updates:
    # only the max lag makes the cleaner come back.
    rarely = {
        "cleanup.policy": "compact",
        "segment.bytes": "2048",
        "min.cleanable.dirty.ratio": "0.99",
    }
    create_topic(node, "overdue", 1, configs={**rarely, "max.compaction.lag.ms": "1000"})
    fillers: list[tuple[str, str | None]] = [(f"filler{i}", "x" * 40) for i in range(150)]

    def compacted() -> bool:
        keys = [key for _, key, _ in read_all(node, "overdue") if key.startswith("k")]
        return sorted(keys) == sorted(set(keys))

    first = [(f"k{key}", f"v{round}") for round in range(3) for key in range(KEYS)]
    produce(node, "overdue", [*first, *fillers])
    node.wait_for("first clean", compacted, 60.0)
    second = [(f"k{key}", f"w{round}") for round in range(3) for key in range(KEYS)]
    produce(node, "overdue", [*second, *fillers])
    node.wait_for("cleaned again once the max lag passed", compacted, 60.0)

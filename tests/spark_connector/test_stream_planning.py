"""The streaming reader's driver side against a real node, without Spark: read limits,
Trigger.AvailableNow's cap, and deterministic partitions for a range."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows, ReadMinRows

from bench.cluster import Cluster
from spark_connector.broker_session import DataLossError
from spark_connector.options import parse_read_options
from spark_connector.reader import KraftStreamReader, RangePartition
from tests.spark_connector.helpers import new_topic, produce

pytestmark = pytest.mark.timeout(60)


def reader(node: Cluster, **options: str) -> KraftStreamReader:
    raw = {"kraft.bootstrap.servers": node.bootstrap, **options}
    return KraftStreamReader(
        parse_read_options({k.lower(): v for k, v in raw.items()}, streaming=True)
    )


def fill(node: Cluster, topic: str, partitions: int, count: int) -> None:
    produce(node, topic, [{"partition": i % partitions, "value": b"%d" % i} for i in range(count)])


def test_max_offsets_per_trigger_is_shared_by_partitions(node: Cluster) -> None:
    topic = new_topic(node, "limited", 2)
    fill(node, topic, 2, 30)
    source = reader(node, subscribe=topic, startingOffsets="earliest", maxOffsetsPerTrigger="10")
    start = source.initialOffset()
    assert start == {topic: {"0": 0, "1": 0}}
    limit = source.getDefaultReadLimit()
    assert limit == ReadMaxRows(10)
    end = source.latestOffset(start, limit)
    assert end == {topic: {"0": 5, "1": 5}}
    assert source.reportLatestOffset() == {topic: {"0": 15, "1": 15}}
    # The same range always plans the same input partitions.
    planned = source.partitions(start, end)
    ranges = [p.range for p in planned if isinstance(p, RangePartition)]
    assert len(ranges) == len(planned)  # every input partition is a RangePartition
    assert [(r.partition, r.start, r.end) for r in ranges] == [
        (0, 0, 5),
        (1, 0, 5),
    ]
    # A fresh reader (as after a restart) plans the same range the same way.
    again = reader(
        node, subscribe=topic, startingOffsets="earliest", maxOffsetsPerTrigger="10"
    ).partitions(start, end)
    assert again == planned


def test_min_offsets_per_trigger_waits_until_enough_or_the_delay(node: Cluster) -> None:
    topic = new_topic(node, "patient", 1)
    fill(node, topic, 1, 5)
    waiting = reader(node, subscribe=topic, startingOffsets="earliest", minOffsetsPerTrigger="8")
    start = waiting.initialOffset()
    assert waiting.getDefaultReadLimit() == ReadMinRows(8)
    assert waiting.latestOffset(start, ReadMinRows(8)) == start
    fill(node, topic, 1, 3)
    assert waiting.latestOffset(start, ReadMinRows(8)) == {topic: {"0": 8}}
    hurried = reader(
        node,
        subscribe=topic,
        startingOffsets="earliest",
        minOffsetsPerTrigger="100",
        maxTriggerDelay="0ms",
    )
    assert hurried.latestOffset(start, ReadMinRows(100)) == {topic: {"0": 8}}


def test_available_now_reads_what_existed_at_its_start_and_ignores_min(node: Cluster) -> None:
    topic = new_topic(node, "now", 1)
    fill(node, topic, 1, 4)
    source = reader(node, subscribe=topic, startingOffsets="earliest", minOffsetsPerTrigger="50")
    start = source.initialOffset()
    source.prepareForTriggerAvailableNow()
    fill(node, topic, 1, 6)
    assert source.latestOffset(start, ReadMinRows(50)) == {topic: {"0": 4}}


def test_a_deleted_topic_is_data_loss_or_dropped(node: Cluster, admin: AdminClient) -> None:
    gone, kept = new_topic(node, "vanishing", 1), new_topic(node, "staying", 1)
    fill(node, gone, 1, 2)
    fill(node, kept, 1, 2)
    strict = reader(node, subscribe=f"{gone},{kept}", startingOffsets="earliest")
    lenient = reader(
        node, subscribe=f"{gone},{kept}", startingOffsets="earliest", failOnDataLoss="false"
    )
    start = strict.initialOffset()
    assert start == {gone: {"0": 0}, kept: {"0": 0}}
    admin.delete_topics([gone])[gone].result(30)
    node.wait_for("the topic gone", lambda: gone not in admin.list_topics(timeout=5).topics)
    with pytest.raises(DataLossError, match=f"partition {gone}-0 is gone.*failOnDataLoss"):
        strict.latestOffset(start, ReadAllAvailable())
    assert lenient.latestOffset(start, ReadAllAvailable()) == {kept: {"0": 2}}


def test_records_deleted_by_retention_before_they_were_read_are_data_loss(node: Cluster) -> None:
    topic = new_topic(node, "expiring", 1, configs={"segment.ms": "500", "retention.ms": "1000"})
    fill(node, topic, 1, 200)
    strict = reader(node, subscribe=topic, startingOffsets="earliest")
    lenient = reader(node, subscribe=topic, startingOffsets="earliest", failOnDataLoss="false")
    start = strict.initialOffset()
    assert start == {topic: {"0": 0}}
    consumer = Consumer({"bootstrap.servers": node.bootstrap, "group.id": "log-start-probe"})
    try:

        def log_start() -> int:
            low, _ = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
            return int(low)

        time.sleep(1.2)
        fill(node, topic, 1, 20)  # rolls the segment (segment.ms), so the old one can expire
        node.wait_for("old segments deleted", lambda: log_start() > 0, 30.0)
        deleted_up_to = log_start()
    finally:
        consumer.close()
    with pytest.raises(DataLossError, match=r"offsets 0\.\..* were deleted.*failOnDataLoss"):
        strict.latestOffset(start, ReadAllAvailable())
    end = lenient.latestOffset(start, ReadAllAvailable())
    assert end == {topic: {"0": 220}}
    # Reading the planned range skips what is gone and gives everything still there.
    offsets = [
        offset
        for planned in lenient.partitions(start, end)
        for batch in lenient.read(planned)
        for offset in batch.column("offset").to_pylist()
    ]
    assert offsets == list(range(deleted_up_to, 220))

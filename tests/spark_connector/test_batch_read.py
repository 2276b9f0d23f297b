"""Batch reads through Spark against a real node: exactly the records produced, in Spark's
Kafka schema, between startingOffsets and endingOffsets."""

from __future__ import annotations

import pytest
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from bench.cluster import Cluster
from tests.spark_connector.helpers import batch_reader, new_topic, produce

pytestmark = pytest.mark.timeout(240)

BASE_MS = 1_790_000_000_000


@pytest.fixture(scope="module")
def topic(node: Cluster) -> str:
    """30 records over 3 partitions: keys, headers and timestamps of their own."""
    name = new_topic(node, "read", 3)
    produce(
        node,
        name,
        [
            {
                "partition": i % 3,
                "key": None if i % 4 == 0 else b"k%d" % i,
                "value": b"v%d" % i,
                "headers": [("n", str(i).encode()), ("empty", None)] if i % 2 else None,
                "timestamp": BASE_MS + i,
            }
            for i in range(30)
        ],
    )
    return name


def test_reads_exactly_the_produced_records_with_their_fields(
    spark: SparkSession, node: Cluster, topic: str
) -> None:
    frame = batch_reader(spark, node, subscribe=topic, includeHeaders="true").load()
    assert frame.schema.simpleString() == (
        "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,"
        "timestamp:timestamp,timestampType:int,headers:array<struct<key:string,value:binary>>>"
    )
    rows = sorted(frame.collect(), key=lambda row: (row.partition, row.offset))
    assert len(rows) == 30
    for row in rows:
        i = int(row.value[1:])
        assert (row.topic, row.partition, row.offset) == (topic, i % 3, i // 3)
        assert row.key == (None if i % 4 == 0 else b"k%d" % i)
        assert row.timestampType == 0
        # PySpark gives timestamps as naive local datetimes.
        assert round(row.timestamp.timestamp() * 1000) == BASE_MS + i
        expected_headers = [("n", str(i).encode()), ("empty", None)] if i % 2 else []
        assert [(h.key, h.value) for h in row.headers] == expected_headers
    without_headers = batch_reader(spark, node, subscribe=topic).load()
    assert "headers" not in without_headers.columns


def test_offsets_bound_the_read(spark: SparkSession, node: Cluster, topic: str) -> None:
    frame = batch_reader(
        spark,
        node,
        assign=f'{{"{topic}": [0, 2]}}',
        startingOffsets=f'{{"{topic}": {{"0": 3, "2": -2}}}}',
        endingOffsets=f'{{"{topic}": {{"0": 8, "2": 4}}}}',
    ).load()
    read = sorted((row.partition, row.offset) for row in frame.collect())
    assert read == [(0, o) for o in range(3, 8)] + [(2, o) for o in range(4)]


def test_min_partitions_splits_ranges_without_changing_the_rows(
    spark: SparkSession, node: Cluster, topic: str
) -> None:
    frame = batch_reader(spark, node, subscribePattern="read-.*", minPartitions="7").load()
    assert frame.rdd.getNumPartitions() >= 7
    offsets = sorted((row.topic, row.partition, row.offset) for row in frame.collect())
    assert offsets == sorted((topic, i % 3, i // 3) for i in range(30))


def test_starting_timestamp_starts_each_partition_at_that_time(
    spark: SparkSession, node: Cluster, topic: str
) -> None:
    frame = batch_reader(spark, node, subscribe=topic, startingTimestamp=str(BASE_MS + 24)).load()
    assert sorted(int(row.value[1:]) for row in frame.collect()) == list(range(24, 30))


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({}, "exactly one of the options subscribe, subscribePattern, assign"),
        ({"subscribe": "x", "startingOffsets": "latest"}, "option startingOffsets"),
        ({"subscribe": "x", "kraft.fetch.min.bytes": "1"}, "kraft.fetch.min.bytes"),
    ],
)
def test_bad_options_fail_the_query_naming_the_option(
    spark: SparkSession, node: Cluster, options: dict[str, str], named: str
) -> None:
    with pytest.raises(PySparkException, match=named):
        batch_reader(spark, node, **options).load().collect()


def test_a_starting_offset_json_must_cover_the_subscribed_partitions(
    spark: SparkSession, node: Cluster, topic: str
) -> None:
    with pytest.raises(PySparkException, match=rf"option startingOffsets .* {topic}-1"):
        batch_reader(
            spark, node, subscribe=topic, startingOffsets=f'{{"{topic}": {{"0": 0, "2": 0}}}}'
        ).load().collect()

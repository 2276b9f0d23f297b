"""Batch and streaming writers: each task produces its rows with an idempotent `net` producer.

Delivery is at least once: a task's retries inside the producer never duplicate (producer id,
epoch and sequence numbers), but a task that Spark reruns writes its rows again.

Rows: `value` (binary or string) is required; `key` (binary or string), `topic` (string; the
`topic` option wins over it), `partition` (int; else the key's murmur2 hash as Kafka's default
partitioner, or, without a key, one partition per Arrow batch in turn) and `headers`
(array<struct<key string, value binary>>) are optional. Other columns are ignored.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import structlog
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    IntegerType,
    StringType,
    StructType,
)

from net.client import ClusterClient
from net.partitioner import partition_for_key
from net.producer import Producer
from net.records import Header, Record
from net.tls import client_context
from spark_connector.options import OptionError, WriteOptions
from spark_connector.worker_logging import configure as configure_logging

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class WriteSummary(WriterCommitMessage):
    """What one task wrote."""

    records: int


def check_columns(schema: StructType, options: WriteOptions) -> None:
    """Refuse, naming the column, a DataFrame the sink cannot write."""
    types: dict[str, DataType] = {f.name: f.dataType for f in schema.fields}
    if "value" not in types:
        raise OptionError("the DataFrame to write needs a value column (binary or string)")
    expected: dict[str, tuple[str, tuple[type[DataType], ...]]] = {
        "value": ("binary or string", (BinaryType, StringType)),
        "key": ("binary or string", (BinaryType, StringType)),
        "topic": ("string", (StringType,)),
        "partition": ("int", (IntegerType,)),
    }
    for name, (described, allowed) in expected.items():
        if name in types and not isinstance(types[name], allowed):
            raise OptionError(
                f"column {name} must be {described}, not {types[name].simpleString()}"
            )
    if "headers" in types:
        headers = types["headers"]
        element = headers.elementType if isinstance(headers, ArrayType) else None
        if not (
            isinstance(element, StructType)
            and [(f.name, type(f.dataType)) for f in element.fields]
            == [("key", StringType), ("value", BinaryType)]
        ):
            raise OptionError(
                "column headers must be array<struct<key: string, value: binary>>, not "
                + headers.simpleString()
            )
    if options.topic is None and "topic" not in types:
        raise OptionError("a topic column or the topic option is required to write")


def produce_batches(options: WriteOptions, batches: Iterator[pa.RecordBatch]) -> WriteSummary:
    """Produce every row of `batches`; returns once all are acknowledged (raises otherwise)."""
    configure_logging()
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(_produce(options, batches))
    finally:
        loop.close()


async def _produce(options: WriteOptions, batches: Iterator[pa.RecordBatch]) -> WriteSummary:
    cluster = ClusterClient(
        options.bootstrap_servers,
        client_id=options.client_id,
        ssl_context=None if options.tls is None else client_context(options.tls),
        sasl=options.sasl,
    )
    producer = Producer(cluster, options.producer)
    try:
        await cluster.bootstrap()
        await producer.start()
        for rotation, batch in enumerate(batches):
            await _append_rows(producer, options, batch, rotation)
            await producer.wait_for_room()
        await producer.flush()
        return WriteSummary(producer.records_sent)
    finally:
        await producer.close()
        await cluster.close()


def _column(batch: pa.RecordBatch, name: str) -> list[Any] | None:
    index = batch.schema.get_field_index(name)
    return None if index < 0 else batch.column(index).to_pylist()


async def _append_rows(
    producer: Producer, options: WriteOptions, batch: pa.RecordBatch, rotation: int
) -> None:
    count = batch.num_rows
    values = _column(batch, "value")
    assert values is not None
    keys = _column(batch, "key") or [None] * count
    topics = [options.topic] * count if options.topic else _column(batch, "topic")
    assert topics is not None
    partitions = _column(batch, "partition") or [None] * count
    headers = _column(batch, "headers") or [None] * count
    partition_counts: dict[str, int] = {}
    # Rows go to the producer per partition, in their order, with one call each.
    by_partition: dict[tuple[str, int], list[Record]] = {}
    for value, key, topic, chosen, row_headers in zip(
        values, keys, topics, partitions, headers, strict=True
    ):
        if topic is None:
            raise OptionError("a row to write has a null topic and no topic option is set")
        key_bytes = key.encode() if isinstance(key, str) else key
        partition_count = partition_counts.get(topic)
        if partition_count is None:
            partition_count = partition_counts[topic] = await producer.partition_count(topic)
        if chosen is None:
            partition = (
                rotation % partition_count
                if key_bytes is None
                else partition_for_key(key_bytes, partition_count)
            )
        elif 0 <= chosen < partition_count:
            partition = chosen
        else:
            raise OptionError(
                f"a row's partition {chosen} is not one of the {partition_count} partitions "
                f"of topic {topic!r}"
            )
        record = Record(
            value.encode() if isinstance(value, str) else value,
            key_bytes,
            tuple(Header(h["key"], h["value"]) for h in row_headers) if row_headers else (),
        )
        records = by_partition.get((topic, partition))
        if records is None:
            by_partition[(topic, partition)] = [record]
        else:
            records.append(record)
    for (topic, partition), records in by_partition.items():
        producer.extend(topic, partition, records)


def _records(messages: list[WriterCommitMessage | None]) -> int:
    return sum(m.records for m in messages if isinstance(m, WriteSummary))


class KraftBatchWriter(DataSourceArrowWriter):
    """`df.write.format("kraft")`."""

    def __init__(self, options: WriteOptions) -> None:
        self._options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriteSummary:
        return produce_batches(self._options, iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        configure_logging()
        log.info("kraft_write_committed", records=_records(messages))

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        configure_logging()
        log.warning("kraft_write_aborted", records=_records(messages))


class KraftStreamWriter(DataSourceStreamArrowWriter):
    """`df.writeStream.format("kraft")`: each micro-batch's tasks produce their rows."""

    def __init__(self, options: WriteOptions) -> None:
        self._options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriteSummary:
        return produce_batches(self._options, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        configure_logging()
        log.info(
            "kraft_stream_batch_committed",
            batch_id=batchId,
            records=_records(messages),
        )

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        configure_logging()
        log.warning(
            "kraft_stream_batch_aborted",
            batch_id=batchId,
            records=_records(messages),
        )

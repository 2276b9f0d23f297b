"""The source's row schema (Spark's Kafka source's), and decoded records as Arrow batches.

Spark checks the first Arrow batch a reader yields against its own Arrow form of the schema,
field for field: binary, string, int32, int64, timestamp[us, UTC], list<element: struct>, every
field nullable. `arrow_schema` is that form; tests compare it with Spark's conversion.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from net.records import RecordColumns

_HEADER = StructType([StructField("key", StringType()), StructField("value", BinaryType())])
_ARROW_HEADER = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
HEADERS_TYPE = pa.list_(pa.field("element", _ARROW_HEADER))
MILLIS = pa.timestamp("ms", tz="UTC")
MICROS = pa.timestamp("us", tz="UTC")


def row_schema(include_headers: bool) -> StructType:
    """key, value, topic, partition, offset, timestamp, timestampType (and headers)."""
    fields = [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
    if include_headers:
        fields.append(StructField("headers", ArrayType(_HEADER)))
    return StructType(fields)


def arrow_schema(include_headers: bool) -> pa.Schema:
    fields = [
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()),
        pa.field("timestamp", MICROS),
        pa.field("timestampType", pa.int32()),
    ]
    if include_headers:
        fields.append(pa.field("headers", HEADERS_TYPE))
    return pa.schema(fields)


def record_batch(
    topic: str, partition: int, columns: RecordColumns, schema: pa.Schema
) -> pa.RecordBatch:
    """The rows of `columns` (records of one partition) in `schema` (from `arrow_schema`)."""
    count = len(columns)
    arrays = [
        pa.array(columns.keys, pa.binary()),
        pa.array(columns.values, pa.binary()),
        pa.repeat(pa.scalar(topic, pa.string()), count),
        pa.repeat(pa.scalar(partition, pa.int32()), count),
        pa.array(columns.offsets, pa.int64()),
        pa.array(columns.timestamps, MILLIS).cast(MICROS),
        pa.array(columns.timestamp_types, pa.int32()),
    ]
    if columns.headers is not None:
        arrays.append(pa.array(columns.headers, HEADERS_TYPE))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)

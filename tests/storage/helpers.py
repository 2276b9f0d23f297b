"""Batches and logs for storage tests, built with the project's own record encoder."""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict, Unpack

from net.record_batch import TimestampType, iter_batches
from net.records import Record, decode_batch, encode_batch
from storage.log import Log, LogConfig


def make_batch(
    record_count: int = 1, value_size: int = 10, timestamp: int = 1_000, tag: int = 0
) -> bytes:
    """A valid uncompressed batch whose values identify it by `tag` and record index."""
    records = [
        Record(
            value=f"{tag}:{index}:".encode().ljust(value_size, b"."),
            key=f"k{index}".encode(),
            timestamp=timestamp,
        )
        for index in range(record_count)
    ]
    return encode_batch(records, now_ms=timestamp)


class LogConfigOverrides(TypedDict, total=False):
    """Any of `LogConfig`'s fields, as keyword arguments of the helpers below."""

    segment_bytes: int
    segment_ms: int
    index_interval_bytes: int
    flush_messages: int | None
    flush_ms: int | None
    retention_ms: int | None
    retention_bytes: int | None
    max_message_bytes: int
    message_timestamp_type: TimestampType
    message_timestamp_before_max_ms: int | None
    message_timestamp_after_max_ms: int | None
    cleanup_policy: frozenset[str]
    delete_retention_ms: int
    min_cleanable_dirty_ratio: float


def open_log(
    directory: Path, clock_ms: list[int] | None = None, **config: Unpack[LogConfigOverrides]
) -> Log:
    """A log with `config` overrides; `clock_ms[0]` is its clock when given."""
    if clock_ms is None:
        return Log.open(directory, LogConfig(**config))
    return Log.open(directory, LogConfig(**config), clock=lambda: clock_ms[0])


def read_values(log: Log, offset: int | None = None, max_offset: int | None = None) -> list[bytes]:
    """Every record value from `offset` (default: log start) to the end, in offset order,
    decoded from what `read` returns, read after read."""
    values: list[bytes] = []
    position = log.log_start_offset if offset is None else offset
    while position < (log.log_end_offset if max_offset is None else max_offset):
        result = log.read(position, 64 * 1024, max_offset=max_offset)
        if result.records is None:
            break
        data = result.records.read()
        for batch_position, header in iter_batches(data):
            _, records = decode_batch(data, batch_position)
            values.extend(
                record.value or b"" for record in records if (record.offset or 0) >= position
            )
            position = header.next_offset
    return values

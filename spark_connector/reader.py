"""Batch and streaming readers: plan offset ranges on the driver, read them on executors.

Each InputPartition is one offset range of one partition (`planning.OffsetRange`); a task
fetches exactly that range with its own `BrokerSession` and yields Arrow batches, so the same
range always gives the same rows (a micro-batch replayed after a restart reads what it read
before).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import structlog
from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)

from spark_connector.arrow_records import decode_fetched
from spark_connector.broker_session import BrokerSession, DataLossError
from spark_connector.options import EARLIEST, LATEST, OffsetSpec, OptionError, ReadOptions
from spark_connector.planning import (
    OffsetRange,
    PartitionOffsets,
    TopicPartition,
    canonical,
    from_offset_json,
    offsets_between,
    ranges_between,
    rate_limited,
    reconcile,
    split_ranges,
)
from spark_connector.rows import arrow_schema
from spark_connector.worker_logging import configure as configure_logging

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class RangePartition(InputPartition):
    """The InputPartition of one offset range."""

    range: OffsetRange


def read_range(options: ReadOptions, offset_range: OffsetRange) -> Iterator[pa.RecordBatch]:
    """The rows of `offset_range` as Arrow batches in the source's schema (on an executor)."""
    configure_logging()
    schema = arrow_schema(options.include_headers)
    session = BrokerSession(options.bootstrap_servers, options.client)
    try:
        for fetched in session.read_range(
            offset_range, fail_on_data_loss=options.fail_on_data_loss
        ):
            rows = decode_fetched(
                fetched.records,
                start=fetched.start,
                end=fetched.end,
                topic=offset_range.topic,
                partition=offset_range.partition,
                schema=schema,
                include_headers=options.include_headers,
            )
            if rows.num_rows:
                yield rows
    finally:
        session.close()


def resolve_offsets(
    session: BrokerSession,
    spec: OffsetSpec,
    partitions: Sequence[TopicPartition],
    *,
    option: str,
    timestamp_strategy: str = "error",
) -> PartitionOffsets:
    """The offset `spec` names for each of `partitions` (that still exists)."""
    if spec.everywhere is not None:
        return session.list_offsets(dict.fromkeys(partitions, spec.everywhere))[0]
    if spec.timestamp is not None or spec.timestamps is not None:
        if spec.timestamps is not None:
            _check_covers(spec.timestamps, partitions, option)
            asked = dict(spec.timestamps)
        else:
            assert spec.timestamp is not None
            asked = dict.fromkeys(partitions, spec.timestamp)
        found, _gone = session.list_offsets(asked)
        after_all = sorted(tp for tp, offset in found.items() if offset < 0)
        if after_all and timestamp_strategy == "error":
            raise OptionError(
                f"option {option}: no record of {after_all[0]} has a timestamp at or after "
                f"{asked[after_all[0]]} (set startingOffsetsByTimestampStrategy to latest to "
                f"start such partitions at their end)"
            )
        if after_all:
            found.update(session.list_offsets(dict.fromkeys(after_all, LATEST))[0])
        return found
    assert spec.offsets is not None
    _check_covers(spec.offsets, partitions, option)
    special = {tp: value for tp, value in spec.offsets.items() if value in (EARLIEST, LATEST)}
    resolved = {tp: value for tp, value in spec.offsets.items() if value >= 0}
    resolved.update(session.list_offsets(special)[0])
    return resolved


def _check_covers(
    given: Mapping[TopicPartition, int], partitions: Sequence[TopicPartition], option: str
) -> None:
    missing = sorted(set(partitions) - set(given))
    unknown = sorted(set(given) - set(partitions))
    if missing:
        raise OptionError(
            f"option {option} must give every partition read; missing: "
            + ", ".join(map(str, missing))
            + " (use -2 for earliest, -1 for latest)"
        )
    if unknown:
        raise OptionError(
            f"option {option} names partitions that do not exist or are not subscribed: "
            + ", ".join(map(str, unknown))
        )


class KraftBatchReader(DataSourceReader):
    """`spark.read.format("kraft")`: startingOffsets to endingOffsets, resolved when the query
    is planned."""

    def __init__(self, options: ReadOptions) -> None:
        self._options = options

    def partitions(self) -> Sequence[InputPartition]:
        configure_logging()
        options = self._options
        session = BrokerSession(options.bootstrap_servers, options.client)
        try:
            partitions = session.partitions(options.subscription)
            start = resolve_offsets(
                session,
                options.starting,
                partitions,
                option="startingOffsets",
                timestamp_strategy=options.timestamp_strategy,
            )
            end = resolve_offsets(session, options.ending, partitions, option="endingOffsets")
        finally:
            session.close()
        common = sorted(set(start) & set(end))
        for tp in common:
            if start[tp] > end[tp]:
                raise OptionError(
                    f"partition {tp} would start at offset {start[tp]}, after its ending "
                    f"offset {end[tp]} (check startingOffsets and endingOffsets)"
                )
        ranges = ranges_between(start, {tp: end[tp] for tp in common})
        return [RangePartition(r) for r in split_ranges(ranges, options.min_partitions)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, RangePartition)
        return read_range(self._options, partition.range)


class KraftStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """`spark.readStream.format("kraft")`, with admission control (maxOffsetsPerTrigger,
    minOffsetsPerTrigger with maxTriggerDelay) and Trigger.AvailableNow.

    Offsets are `planning.canonical` dicts. Lives on the driver for the whole query (one
    instance there); tasks get their own copy, which needs nothing but the options.
    """

    def __init__(self, options: ReadOptions) -> None:
        self._options = options
        self._session: BrokerSession | None = None
        self._available_now: PartitionOffsets | None = None
        self._latest: PartitionOffsets | None = None
        self._last_batch = time.monotonic()

    def __getstate__(self) -> dict[str, Any]:
        return {"options": self._options}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["options"])  # type: ignore[misc]

    @property
    def _broker(self) -> BrokerSession:
        if self._session is None:
            configure_logging()
            self._session = BrokerSession(self._options.bootstrap_servers, self._options.client)
        return self._session

    def initialOffset(self) -> dict[str, dict[str, int]]:  # noqa: N802
        options = self._options
        partitions = self._broker.partitions(options.subscription)
        start = resolve_offsets(
            self._broker,
            options.starting,
            partitions,
            option="startingOffsets",
            timestamp_strategy=options.timestamp_strategy,
        )
        return canonical(start)

    def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802
        partitions = self._broker.partitions(self._options.subscription)
        self._available_now = self._broker.list_offsets(dict.fromkeys(partitions, LATEST))[0]

    def getDefaultReadLimit(self) -> ReadLimit:  # noqa: N802
        if self._options.max_offsets_per_trigger is not None:
            return ReadMaxRows(self._options.max_offsets_per_trigger)
        if self._options.min_offsets_per_trigger is not None:
            return ReadMinRows(self._options.min_offsets_per_trigger)
        return ReadAllAvailable()

    def latestOffset(  # noqa: N802
        self, start: dict[str, Any], limit: ReadLimit
    ) -> dict[str, dict[str, int]]:
        options = self._options
        begin = from_offset_json(start)
        partitions = self._broker.partitions(options.subscription)
        earliest = self._broker.list_offsets(dict.fromkeys(partitions, EARLIEST))[0]
        latest = self._broker.list_offsets(dict.fromkeys(earliest, LATEST))[0]
        self._latest = latest
        resumed, losses = reconcile(begin, earliest, latest)
        for loss in losses:
            if options.fail_on_data_loss:
                raise DataLossError(
                    f"{loss.message}. Set the option failOnDataLoss to false to skip lost "
                    f"data instead."
                )
            log.warning("kraft_data_lost", message=loss.message)
        available = {tp: max(latest.get(tp, offset), offset) for tp, offset in resumed.items()}
        if self._available_now is not None:
            # Only what existed when the availableNow query started; later partitions wait.
            cap = self._available_now
            available = {
                tp: max(resumed[tp], min(offset, cap.get(tp, resumed[tp])))
                for tp, offset in available.items()
            }
        max_offsets = options.max_offsets_per_trigger
        if isinstance(limit, ReadMaxRows):
            max_offsets = limit.max_rows
        end = available if max_offsets is None else rate_limited(resumed, available, max_offsets)
        min_offsets = options.min_offsets_per_trigger
        if min_offsets is not None and self._available_now is None and not losses:
            waited_ms = (time.monotonic() - self._last_batch) * 1000
            if (
                offsets_between(resumed, end) < min_offsets
                and waited_ms < options.max_trigger_delay_ms
            ):
                return canonical(begin)
        if offsets_between(resumed, end) > 0:
            self._last_batch = time.monotonic()
        return canonical(end)

    def reportLatestOffset(self) -> dict[str, dict[str, int]] | None:  # noqa: N802
        """The newest offsets seen by the last latestOffset (shown in the query's progress)."""
        return None if self._latest is None else canonical(self._latest)

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        begin = from_offset_json(start)
        finish = from_offset_json(end)
        new = [tp for tp in finish if tp not in begin]
        if new:
            # Partitions that appeared since `start` are read from their beginning.
            begin.update(self._broker.list_offsets(dict.fromkeys(new, EARLIEST))[0])
        readable = {tp: offset for tp, offset in finish.items() if tp in begin}
        ranges = ranges_between(begin, readable)
        return [RangePartition(r) for r in split_ranges(ranges, self._options.min_partitions)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, RangePartition)
        return read_range(self._options, partition.range)

    def commit(self, end: dict[str, Any]) -> None:
        # Progress lives in Spark's checkpoint; nothing is committed to the cluster.
        log.debug("kraft_stream_committed", end=end)

    def stop(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None

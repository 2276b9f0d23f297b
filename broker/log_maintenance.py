"""The broker's periodic work on its logs, as Kafka's LogManager schedules it.

- flush what each log's flush policy says is due (`log.flush.scheduler.interval.ms`);
- write the recovery-point, high-watermark and log-start checkpoints
  (`log.flush.offset.checkpoint.interval.ms`), so a restart after a crash scans little;
- delete segments past `retention.ms` / `retention.bytes` (`log.retention.check.interval.ms`);
- compact the replicas whose `cleanup.policy` holds "compact" (`__consumer_offsets` always):
  every `log.cleaner.backoff.ms`, each such log whose dirty part reached its
  `min.cleanable.dirty.ratio`, or whose earliest tombstone horizon passed, is cleaned.

Everything runs on the event loop, in order with appends, truncations and deletions, except the
reading and writing of segment files during a clean, which runs in a worker thread, one clean
at a time (Kafka's single cleaner thread): the loop takes the clean's snapshot and swaps each
cleaned segment in, and a clean the log outran (truncated, segments deleted, replica removed)
is abandoned (see `storage.cleaner.LogClean`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import structlog

from broker.partition import Partition
from broker.replica_manager import ReplicaManager
from net.record_batch import RecordBatchError
from net.tasks import start_essential
from storage.cleaner import CleanStats, LogClean, compaction_lag_passed, dirty_ratio
from storage.errors import StorageError
from storage.log import wall_clock_ms
from storage.log_manager import LogManager, write_checkpoints

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class MaintenanceConfig:
    """How often each task runs, named after Kafka's broker settings."""

    flush_interval_ms: int = 1_000
    checkpoint_interval_ms: int = 60_000
    retention_check_interval_ms: int = 300_000
    cleaner_enabled: bool = True
    cleaner_backoff_ms: int = 15_000


class LogMaintenance:
    """Runs the periodic tasks over the logs of `logs` and the replicas of `replicas`."""

    def __init__(
        self,
        logs: LogManager,
        replicas: ReplicaManager,
        config: MaintenanceConfig,
        clock: Callable[[], int] = wall_clock_ms,
    ) -> None:
        self._logs = logs
        self._replicas = replicas
        self._config = config
        self._clock = clock
        self._stopping = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        # The earliest tombstone horizon of each compacted replica after its last clean;
        # absent: not cleaned since start, so a clean finds out.
        self._delete_horizons: dict[Partition, int | None] = {}
        # Replicas whose log holds a batch the cleaner cannot decode.
        self._uncleanable: set[Partition] = set()

    def start(self) -> None:
        periodic: list[tuple[int, Callable[[], Awaitable[None]]]] = [
            (self._config.flush_interval_ms, self._flush),
            (self._config.checkpoint_interval_ms, self._checkpoint),
            (self._config.retention_check_interval_ms, self._enforce_retention),
        ]
        self._tasks = [
            start_essential(self._every(interval_ms, task), f"log-maintenance-{task.__name__}")
            for interval_ms, task in periodic
        ]
        if self._config.cleaner_enabled:
            self._tasks.append(start_essential(self._run_cleaner(), "log-cleaner"))

    async def stop(self) -> None:
        """Stop every task; a clean in progress finishes the segment it is writing first."""
        self._stopping.set()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _every(self, interval_ms: int, task: Callable[[], Awaitable[None]]) -> None:
        while not await self._stopped_within(interval_ms):
            try:
                await task()
            except StorageError as error:
                # The log that failed is offline, or refused this once; the others go on.
                log.error("log_maintenance_failed", task=task.__name__, error=str(error))

    async def _stopped_within(self, interval_ms: int) -> bool:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(interval_ms / 1000):
                await self._stopping.wait()
        return self._stopping.is_set()

    async def _flush(self) -> None:
        self._logs.flush_due(self._clock())

    async def _checkpoint(self) -> None:
        # The offsets are read here, the files written and fsynced in a thread: several
        # fsyncs on the event loop would stall every produce and fetch of the node.
        await asyncio.to_thread(write_checkpoints, self._logs.checkpoints())

    async def _enforce_retention(self) -> None:
        for moved in self._logs.enforce_retention(self._clock()):
            # The fetch sessions read only what they are told changed.
            partition = self._replicas.partitions.get((moved.topic, moved.partition))
            if partition is not None:
                partition.log_start_moved()

    # -- compaction ---------------------------------------------------------------------------

    async def _run_cleaner(self) -> None:
        while not await self._stopped_within(self._config.cleaner_backoff_ms):
            await self._clean_due_logs()

    async def _clean_due_logs(self) -> None:
        for key, partition in list(self._replicas.partitions.items()):
            if self._stopping.is_set():
                break
            if self._replicas.partitions.get(key) is not partition or not self._is_due(partition):
                continue
            try:
                stats = await self._clean(partition)
            except (OSError, StorageError) as error:
                log.error(
                    "log_clean_failed",
                    topic=partition.topic,
                    partition=partition.partition_id,
                    error=str(error),
                )
                continue
            except RecordBatchError as error:
                # A batch that cannot be decoded would fail every clean: as Kafka's cleaner,
                # leave the log as it is until the broker restarts, and go on with the others.
                self._uncleanable.add(partition)
                log.error(
                    "log_uncleanable",
                    topic=partition.topic,
                    partition=partition.partition_id,
                    error=str(error),
                )
                continue
            if stats is not None:
                self._delete_horizons[partition] = stats.next_delete_horizon_ms
        self._delete_horizons = {
            partition: horizon
            for partition, horizon in self._delete_horizons.items()
            if self._hosted(partition)
        }
        self._uncleanable = {
            partition for partition in self._uncleanable if self._hosted(partition)
        }

    def _hosted(self, partition: Partition) -> bool:
        return self._replicas.partitions.get((partition.topic, partition.partition_id)) is partition

    def _is_due(self, partition: Partition) -> bool:
        replica_log = partition.log
        if not replica_log.config.compact or replica_log.offline or partition in self._uncleanable:
            return False
        if partition not in self._delete_horizons:
            return True
        horizon = self._delete_horizons[partition]
        if horizon is not None and self._clock() >= horizon:
            return True
        now_ms = self._clock()
        ratio = dirty_ratio(replica_log, now_ms)
        if ratio > 0 and ratio >= replica_log.config.min_cleanable_dirty_ratio:
            return True
        return compaction_lag_passed(replica_log, now_ms)

    async def _clean(self, partition: Partition) -> CleanStats | None:
        """One clean of the partition's log; None when it was given up (the checkpoint stays,
        so the next clean maps the same keys again)."""
        replica_log = partition.log
        log_clean = LogClean(
            replica_log,
            now_ms=self._clock(),
            delete_retention_ms=replica_log.config.delete_retention_ms,
            active_producers=partition.producers.last_offsets(),
        )
        for group in await asyncio.to_thread(log_clean.prepare):
            if self._stopping.is_set():
                return None
            cleaned = await asyncio.to_thread(log_clean.write, group)
            hosted = self._replicas.partitions.get((partition.topic, partition.partition_id))
            if hosted is not partition or replica_log.offline:
                log_clean.abandon(cleaned)
                return None
            if not log_clean.swap(cleaned):
                break
        return log_clean.finish()

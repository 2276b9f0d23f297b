"""The logs of one node across its `log.dirs`, their checkpoints and the shutdown marker.

Each log directory holds one sub-directory per partition (`<topic>-<partition>`) and, as in
Kafka, three checkpoint files covering all of its partitions: `recovery-point-offset-checkpoint`,
`replication-offset-checkpoint` (high watermarks) and `log-start-offset-checkpoint`. A partition
directory records the id of its topic in `partition.metadata` (storage/partition_metadata.py), so
that the log of a topic deleted and created again under the same name is told apart from the
new topic's.

A deleted log is renamed aside at once (`<topic>-<partition>.<unique id>-delete`, as Kafka names
it), so that nothing opens or serves it again, and its files are removed in the background; a
directory with that suffix found at start (a crash came first) is never loaded and is removed
again.

The clean-shutdown marker (`.kraft_cleanshutdown`, JSON with the broker epoch) is written in
every log directory after every log was flushed and checkpointed, and read and removed at start
(reference: async-storage-and-recovery.txt 5.1-5.2). Only when every directory had it is the
start clean: logs then open without scanning, and the broker epoch found there is what the
broker registers with; otherwise logs recover from their recovery points and the broker
registers with no epoch, which excludes its replicas from leadership until they catch up.
What a recovery kept is not fsynced at start (Kafka's LogLoader does not either): it stays
above the recovery point, as durable as before the crash, until the log's next flush.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_for_futures
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import structlog

from storage import durability
from storage.atomic_file import remove_durably, write_atomically
from storage.checkpoint_file import CheckpointFormatError, read_checkpoint, write_checkpoint
from storage.durability import FileSystemSync
from storage.errors import InconsistentTopicIdError, StorageError, StorageIOError
from storage.file_threads import FILE_THREADS, file_threads
from storage.log import Log, LogConfig, wall_clock_ms
from storage.partition_metadata import (
    PartitionMetadataError,
    read_partition_metadata,
    write_partition_metadata,
    write_partition_metadata_unsynced,
)

CLEAN_SHUTDOWN_MARKER = ".kraft_cleanshutdown"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
HIGH_WATERMARK_CHECKPOINT = "replication-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
_MARKER_VERSION = 0
_DELETED_SUFFIX = "-delete"
# The longest file name the file systems in use take (a name aside for deletion is cut to it).
_MAX_FILE_NAME = 255
_PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")

T = TypeVar("T")

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True, order=True)
class TopicPartition:
    topic: str
    partition: int

    @property
    def dir_name(self) -> str:
        return f"{self.topic}-{self.partition}"

    @classmethod
    def from_dir_name(cls, name: str) -> TopicPartition | None:
        match = _PARTITION_DIR.match(name)
        if match is None:
            return None
        return cls(match["topic"], int(match["partition"]))

    def deleted_dir_name(self) -> str:
        """A name for this partition's directory once it is deleted, unique so that a log
        created again under the same name can be deleted before the previous one is gone
        (Kafka's `<topic>-<partition>.<unique id>-delete`, its topic cut to fit a name)."""
        suffix = f"-{self.partition}.{uuid.uuid4().hex}{_DELETED_SUFFIX}"
        return self.topic[: _MAX_FILE_NAME - len(suffix)] + suffix


# A log being made on the storage threads: its log directory, its topic id, its creation.
_Making = tuple[Path, uuid.UUID | None, Future[Log]]


class LogManager:
    """Opens, creates, checkpoints, flushes, retains and closes the logs of a node."""

    def __init__(
        self,
        log_dirs: list[Path],
        *,
        partition_dirs: list[Path] | None = None,
        default_config: LogConfig,
        clean_shutdown: bool,
        broker_epoch_at_start: int | None,
        clock: Callable[[], int],
    ) -> None:
        self.log_dirs = log_dirs
        # Where new partition logs go: a directory outside these (the metadata log's own)
        # takes only the logs created there by name.
        self.partition_dirs = partition_dirs or log_dirs
        self.default_config = default_config
        self.clean_shutdown = clean_shutdown
        self.broker_epoch_at_start = broker_epoch_at_start
        self._clock = clock
        self._logs: dict[TopicPartition, Log] = {}
        self._dir_of: dict[TopicPartition, Path] = {}
        self._logs_in_dir: Counter[Path] = Counter()
        # The topic id each log's directory records (none for a log from before topic ids).
        self._topic_ids: dict[TopicPartition, uuid.UUID] = {}
        # New logs `prepare_logs` started making, until a `get_or_create_logs` takes them.
        self._preparing: dict[TopicPartition, _Making] = {}
        # Removes the directories of deleted logs, off the caller's thread (made on first use).
        self._deleter: ThreadPoolExecutor | None = None
        self._deletions: set[Future[None]] = set()
        self._deletions_lock = threading.Lock()
        # One syncfs per directory makes a clean stop durable (opened now, so that they report
        # the writeback errors of the whole run); None where the kernel cannot.
        self._file_system_syncs = (
            [FileSystemSync(directory) for directory in log_dirs]
            if FileSystemSync.supported()
            else None
        )

    @classmethod
    def open(
        cls,
        log_dirs: Iterable[Path],
        default_config: LogConfig | None = None,
        *,
        clock: Callable[[], int] = wall_clock_ms,
        partition_dirs: Iterable[Path] | None = None,
    ) -> LogManager:
        """Read and remove the shutdown markers, then open every log found in `log_dirs`.
        New partition logs go to `partition_dirs` (default: every one of `log_dirs`)."""
        dirs = [Path(directory) for directory in log_dirs]
        if not dirs:
            raise ValueError("log.dirs names no directory")
        placement = None if partition_dirs is None else [Path(d) for d in partition_dirs]
        epochs = []
        for directory in dirs:
            directory.mkdir(parents=True, exist_ok=True)
            epochs.append(_read_marker(directory))
        clean = all(epoch is not None for epoch in epochs)
        broker_epoch = epochs[0] if clean and len(set(epochs)) == 1 else None
        # Removed before any log is touched: a crash from here on must read as unclean.
        for directory in dirs:
            remove_durably(directory / CLEAN_SHUTDOWN_MARKER)
        manager = cls(
            dirs,
            partition_dirs=placement,
            default_config=default_config or LogConfig(),
            clean_shutdown=clean,
            broker_epoch_at_start=broker_epoch if broker_epoch != -1 else None,
            clock=clock,
        )
        for directory in dirs:
            manager._load_directory(directory)
        log.info(
            "log_manager_opened",
            log_dirs=[str(directory) for directory in dirs],
            clean_shutdown=clean,
            broker_epoch=manager.broker_epoch_at_start,
            logs=len(manager._logs),
            # Those a crash right now would recover again.
            logs_above_recovery_point=sum(
                entry.recovery_point < entry.log_end_offset for entry in manager._logs.values()
            ),
        )
        return manager

    def _load_directory(self, directory: Path) -> None:
        recovery_points = _read_offsets(directory / RECOVERY_POINT_CHECKPOINT)
        high_watermarks = _read_offsets(directory / HIGH_WATERMARK_CHECKPOINT)
        log_starts = _read_offsets(directory / LOG_START_OFFSET_CHECKPOINT)
        # Entries know whether they are directories without a stat each.
        with os.scandir(directory) as entries:
            children = sorted(Path(entry.path) for entry in entries if entry.is_dir())
        # Opened (and after an unclean stop recovered) here, one after the other, as by
        # Kafka's default of one recovery thread per directory: an open is a few small reads
        # of cached files and Python work under the interpreter lock, which the storage
        # threads only contended for (on two cores, 3,000 logs after a clean stop: 0.6 s here,
        # 1.8 s on eight threads; 10,000 after SIGKILL: 2.5 s against 6 s).
        for child in children:
            if child.name.endswith(_DELETED_SUFFIX):
                # Deleted before a crash (or a stop) finished removing it.
                self._remove_in_background(child)
                continue
            partition = TopicPartition.from_dir_name(child.name)
            if partition is None:
                continue
            topic_id, self._logs[partition] = _open_log(
                child,
                self.default_config,
                log_start_offset=log_starts.get(child.name, 0),
                recovery_point=recovery_points.get(child.name, 0),
                high_watermark=high_watermarks.get(child.name, 0),
                clean_shutdown=self.clean_shutdown,
                clock=self._clock,
            )
            if topic_id is not None:
                self._topic_ids[partition] = topic_id
            self._dir_of[partition] = directory
            self._logs_in_dir[directory] += 1

    @property
    def logs(self) -> dict[TopicPartition, Log]:
        return dict(self._logs)

    def directory_of(self, partition: TopicPartition) -> Path | None:
        """The log directory holding `partition`'s log, if there is one."""
        return self._dir_of.get(partition)

    def get_log(self, partition: TopicPartition) -> Log | None:
        return self._logs.get(partition)

    def topic_id_of(self, partition: TopicPartition) -> uuid.UUID | None:
        """The topic id `partition`'s log directory records; None when there is no such log or
        it records none (a log from before topic ids were recorded)."""
        return self._topic_ids.get(partition)

    def get_or_create_log(
        self,
        partition: TopicPartition,
        config: LogConfig | None = None,
        *,
        directory: Path | None = None,
        topic_id: uuid.UUID | None = None,
    ) -> Log:
        """The log of `partition`, created empty in `directory` (default: the least-loaded
        partition directory) if new; with `topic_id` as in `get_or_create_logs`."""
        topic_ids = {} if topic_id is None else {partition.topic: topic_id}
        return self.get_or_create_logs(
            [(partition, config)], directory=directory, topic_ids=topic_ids
        )[0]

    def get_or_create_logs(
        self,
        wanted: Sequence[tuple[TopicPartition, LogConfig | None]],
        *,
        directory: Path | None = None,
        topic_ids: Mapping[str, uuid.UUID] | None = None,
    ) -> list[Log]:
        """The logs of the `(partition, config)` pairs, in order; each new one is created empty
        in `directory` or else the least-loaded partition directory, and every directory that
        gained one is synced once, so that creating a topic's thousands of partitions costs one
        fsync, not one each.

        `topic_ids` (topic name -> id) are recorded durably in the directory of each new log
        of those topics, and of each existing one that records no id yet (it takes the id it
        is first used under). An existing log that records another id than asked for is never
        handed out: InconsistentTopicIdError (the caller deletes it first)."""
        topic_ids = topic_ids or {}
        # Those `prepare_logs` started: made by now, or soon.
        self._register_made(
            {
                partition: self._preparing.pop(partition)
                for partition, _ in wanted
                if partition in self._preparing
            }
        )
        for partition, _ in wanted:
            recorded = self._topic_ids.get(partition)
            asked = topic_ids.get(partition.topic)
            if partition in self._logs and None not in (recorded, asked) and recorded != asked:
                raise InconsistentTopicIdError(
                    f"the log of {partition.dir_name} belongs to topic id {recorded}, not {asked}"
                )
        created = self._start_creating(wanted, directory, topic_ids)
        self._register_made(created)
        logs = []
        for partition, _ in wanted:
            topic_id = topic_ids.get(partition.topic)
            if topic_id is not None and partition not in created:
                self.record_topic_id(partition, topic_id)
            logs.append(self._logs[partition])
        return logs

    def prepare_logs(
        self,
        wanted: Sequence[tuple[TopicPartition, LogConfig | None]],
        *,
        topic_ids: Mapping[str, uuid.UUID] | None = None,
    ) -> list[Future[Log]]:
        """Start creating the logs of `wanted` that do not exist yet, on the storage threads,
        as `get_or_create_logs` would create them; the `get_or_create_logs` that asks for them
        then takes them as made. So the files of a next batch of new replicas are made while
        the caller sets up the previous one's. Returns the creations started, each done once
        its files are made (an event loop waits for them before asking, not to block on it)."""
        started = self._start_creating(wanted, None, topic_ids or {})
        self._preparing.update(started)
        return [making for _, _, making in started.values()]

    def _start_creating(
        self,
        wanted: Sequence[tuple[TopicPartition, LogConfig | None]],
        directory: Path | None,
        topic_ids: Mapping[str, uuid.UUID],
    ) -> dict[TopicPartition, _Making]:
        """Submit the creation of each log of `wanted` that is neither there nor being made, in
        `directory` or else the least-loaded partition directory, to the storage threads."""
        load = Counter(self._logs_in_dir)
        load.update(home for home, _, _ in self._preparing.values())
        pool = file_threads()
        started: dict[TopicPartition, _Making] = {}
        for partition, config in wanted:
            if partition in self._logs or partition in self._preparing or partition in started:
                continue
            home = directory or min(self.partition_dirs, key=load.__getitem__)
            load[home] += 1
            topic_id = topic_ids.get(partition.topic)
            started[partition] = (
                home,
                topic_id,
                pool.submit(
                    _create_log,
                    home / partition.dir_name,
                    config or self.default_config,
                    topic_id,
                    self._clock,
                ),
            )
        return started

    def _register_made(self, making: Mapping[TopicPartition, _Making]) -> None:
        """Wait for the logs of `making` (partition -> its log directory, topic id, creation),
        whose file work (directory, `partition.metadata`, empty segment) waits on no fsync, and
        register them. Every directory that gained a log is synced once, before any of the new
        logs can flush data (a flushed log in a directory whose own entry a power cut could
        lose would not be durable). StorageIOError names the first that failed."""
        failure: StorageIOError | None = None
        homes: set[Path] = set()
        for partition, (home, topic_id, making_log) in making.items():
            try:
                made = making_log.result()
            except OSError as error:
                failure = failure or StorageIOError(
                    f"cannot create the log of {partition.dir_name}: {error}", error.errno
                )
                continue
            self._logs[partition] = made
            self._dir_of[partition] = home
            self._logs_in_dir[home] += 1
            if topic_id is not None:
                self._topic_ids[partition] = topic_id
            homes.add(home)
            log.debug("log_created", topic=partition.topic, partition=partition.partition)
        for home in sorted(homes):
            durability.sync_directory(home)
        if homes:
            log.info(
                "logs_created",
                logs=sum(1 for partition in making if partition in self._logs),
                log_dirs=[str(home) for home in sorted(homes)],
            )
        if failure is not None:
            raise failure

    def record_topic_id(self, partition: TopicPartition, topic_id: uuid.UUID) -> None:
        """Record `topic_id` durably as the topic id of `partition`'s log, which records none
        yet (a log from before topic ids were recorded takes the id it is first used under).
        InconsistentTopicIdError if it records another; StorageIOError on a disk error."""
        owner = self._logs.get(partition)
        if owner is None:
            raise KeyError(partition)
        recorded = self._topic_ids.get(partition)
        if recorded is not None and recorded != topic_id:
            raise InconsistentTopicIdError(
                f"the log of {partition.dir_name} belongs to topic id {recorded}, not {topic_id}"
            )
        if recorded is None:
            self._record_topic_id(partition, owner, topic_id)
            log.info(
                "log_topic_id_adopted",
                topic=partition.topic,
                partition=partition.partition,
                topic_id=str(topic_id),
            )

    def _record_topic_id(self, partition: TopicPartition, owner: Log, topic_id: uuid.UUID) -> None:
        try:
            write_partition_metadata(owner.directory, topic_id)
        except OSError as error:
            raise StorageIOError(
                f"cannot record the topic id of {partition.dir_name}: {error}", error.errno
            ) from error
        self._topic_ids[partition] = topic_id

    def delete_log(self, partition: TopicPartition) -> Path | None:
        """Remove a partition's log: its directory is renamed aside (durably) before this
        returns, so that a crash cannot leave a half-deleted log that looks live, and its
        files are removed in the background. Returns the directory's name aside (None when
        there was no such log). StorageIOError on a disk error: if the rename failed, the
        log stays, closed (its directory is to go offline); if only the sync after it did,
        it is gone, but a crash may bring it back under its name (a start then tells it
        apart by its topic id)."""
        removed = self._logs.get(partition)
        directory = self._dir_of.get(partition)
        if removed is None or directory is None:
            return None
        doomed = directory / partition.deleted_dir_name()
        # Closed first: closing writes its indexes, by their names.
        removed.close()
        try:
            removed.directory.rename(doomed)
        except OSError as error:
            raise StorageIOError(
                f"cannot delete the log of {partition.dir_name}: {error}", error.errno
            ) from error
        del self._logs[partition], self._dir_of[partition]
        self._topic_ids.pop(partition, None)
        self._logs_in_dir[directory] -= 1
        try:
            durability.sync_directory(directory)
        except OSError as error:
            raise StorageIOError(
                f"cannot sync {directory} after deleting {partition.dir_name}: {error}",
                error.errno,
            ) from error
        durability.record_rename(removed.directory, doomed)
        # Only once the rename is durable: a crash must not find the files half removed
        # under the log's own name.
        self._remove_in_background(doomed)
        log.debug(
            "log_renamed_for_deletion",
            topic=partition.topic,
            partition=partition.partition,
            directory=str(doomed),
        )
        return doomed

    def _remove_in_background(self, doomed: Path) -> None:
        if self._deleter is None:
            self._deleter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="log-deleter")
        future = self._deleter.submit(_remove_deleted_directory, doomed)
        with self._deletions_lock:
            self._deletions.add(future)
        future.add_done_callback(self._deletion_done)

    def _deletion_done(self, future: Future[None]) -> None:
        with self._deletions_lock:
            self._deletions.discard(future)

    def wait_for_deletions(self, timeout: float | None = None) -> bool:
        """Wait until every deleted log's directory is removed (or `timeout` seconds passed);
        True if none is left to remove."""
        with self._deletions_lock:
            pending = set(self._deletions)
        _, not_done = wait_for_futures(pending, timeout)
        return not not_done

    def checkpoint(self) -> None:
        """Write the recovery-point, high-watermark and log-start checkpoints of each dir.

        A disk error raises StorageIOError; the previous checkpoints stay in place.
        """
        write_checkpoints(self.checkpoints())

    def checkpoints(self) -> list[tuple[Path, list[tuple[str, int, int]]]]:
        """The recovery-point, high-watermark and log-start checkpoints of each dir, as they
        stand now: (file, rows) for `write_checkpoints`, which may run in another thread (the
        rows are plain values, the logs are not touched there)."""
        found: list[tuple[Path, list[tuple[str, int, int]]]] = []
        for directory in self.log_dirs:
            logs = sorted(
                (partition, self._logs[partition])
                for partition, home in self._dir_of.items()
                if home == directory
            )
            online = [(partition, entry) for partition, entry in logs if not entry.offline]
            for name, attribute in (
                (RECOVERY_POINT_CHECKPOINT, "recovery_point"),
                (HIGH_WATERMARK_CHECKPOINT, "high_watermark"),
                (LOG_START_OFFSET_CHECKPOINT, "log_start_offset"),
            ):
                rows = [
                    (partition.topic, partition.partition, getattr(entry, attribute))
                    for partition, entry in online
                ]
                found.append((directory / name, rows))
        return found

    def flush_due(self, now_ms: int | None = None) -> None:
        """Apply every log's flush policy (rolled segments, `flush.ms`)."""
        now = self._clock() if now_ms is None else now_ms
        for entry in self._logs.values():
            if not entry.offline:
                entry.flush_if_due(now)

    def enforce_retention(self, now_ms: int | None = None) -> list[TopicPartition]:
        """Apply every log's retention; returns the partitions whose log start offset moved.
        A log whose disk refuses a deletion is logged and left as its error left it (its
        segments out of the log, see `Log.enforce_retention`); the others go on."""
        now = self._clock() if now_ms is None else now_ms
        moved = []
        for partition, entry in self._logs.items():
            if entry.offline:
                continue
            start = entry.log_start_offset
            try:
                entry.enforce_retention(now)
            except StorageError as error:
                log.error(
                    "log_retention_failed",
                    topic=partition.topic,
                    partition=partition.partition,
                    error=str(error),
                )
            if entry.log_start_offset != start:
                moved.append(partition)
        return moved

    def shutdown(self, broker_epoch: int | None) -> None:
        """Clean shutdown: flush every log, write checkpoints, close, then write the marker
        with `broker_epoch` (-1 when the broker never registered) in every directory."""
        self._take_prepared()
        # A log that fails is offline now (the marker will not be written); the rest go on.
        self._make_durable()
        self.checkpoint()
        for entry in self._logs.values():
            entry.close()
        self._stop_deleter()
        self._close_file_system_syncs()
        if any(entry.offline for entry in self._logs.values()):
            log.error("log_manager_shutdown_unclean", reason="a log is offline")
            return
        epoch = -1 if broker_epoch is None else broker_epoch
        marker = json.dumps({"version": _MARKER_VERSION, "broker_epoch": epoch}).encode()
        for directory in self.log_dirs:
            write_atomically(directory / CLEAN_SHUTDOWN_MARKER, marker)
        log.info("log_manager_shutdown_clean", broker_epoch=broker_epoch)

    def _make_durable(self) -> None:
        """Make every online log durable to its end (a log that fails goes offline). Each
        log's writes go to the kernel, then one syncfs per directory makes them durable: a
        node hosting 10,000 logs spent 9 s fsyncing them file by file. Without syncfs, or when
        it reports an error, each log is flushed on its own, whose fsyncs tell which logs
        failed."""
        started = time.monotonic()
        if self._file_system_syncs is not None:
            written = self._on_every_online_log(Log.write_back)
            written_back = time.monotonic()
            try:
                for file_system in self._file_system_syncs:
                    file_system.sync()
            except OSError as error:
                log.error("log_dirs_sync_failed", error=str(error))
            else:
                for entry, log_end_offset in written:
                    entry.synced_to(log_end_offset)
                log.info(
                    "log_dirs_synced",
                    logs=len(written),
                    log_dirs=[
                        str(file_system.directory) for file_system in self._file_system_syncs
                    ],
                    write_back_seconds=round(written_back - started, 3),
                    sync_seconds=_since(written_back),
                )
                return
        flushed = self._on_every_online_log(Log.flush)
        log.info("logs_flushed", logs=len(flushed), seconds=_since(started))

    def _on_every_online_log(self, action: Callable[[Log], T]) -> list[tuple[Log, T]]:
        """`action` (a flush or a write-back) on every online log, many at once (fsyncs and
        writes wait on the disk, not the interpreter, and the file system commits concurrent
        fsyncs together; each log is handled by one thread only, nothing else uses the logs
        meanwhile): each log with what it returned. A log whose action failed is offline
        since, logged and left out."""
        online = [(tp, entry) for tp, entry in self._logs.items() if not entry.offline]
        if not online:
            return []
        with ThreadPoolExecutor(FILE_THREADS, thread_name_prefix="log-flush") as flushers:
            started = [(tp, entry, flushers.submit(action, entry)) for tp, entry in online]
        done = []
        for partition, entry, future in started:
            error = future.exception()
            if isinstance(error, StorageError):
                log.error(
                    "log_flush_failed",
                    topic=partition.topic,
                    partition=partition.partition,
                    error=str(error),
                )
            elif error is not None:
                raise error
            else:
                done.append((entry, future.result()))
        return done

    def _close_file_system_syncs(self) -> None:
        for file_system in self._file_system_syncs or []:
            file_system.close()

    def close(self) -> None:
        """Close every log without flushing or writing the marker (an unclean stop)."""
        self._take_prepared()
        for entry in self._logs.values():
            entry.close()
        self._stop_deleter()
        self._close_file_system_syncs()

    def _take_prepared(self) -> None:
        """Register the logs `prepare_logs` made that no `get_or_create_logs` took (an apply
        cut short by a stop), so they are flushed and closed with the others."""
        preparing, self._preparing = self._preparing, {}
        try:
            self._register_made(preparing)
        except StorageIOError as error:
            log.error("log_creation_failed", error=str(error))

    def _stop_deleter(self) -> None:
        # Not waited for: a directory left aside is removed again at the next start. (The
        # interpreter still lets the removals queued so far finish before it exits.)
        if self._deleter is not None:
            self._deleter.shutdown(wait=False)
            self._deleter = None


def _since(started: float) -> float:
    return round(time.monotonic() - started, 3)


def _open_log(
    partition_dir: Path,
    config: LogConfig,
    *,
    log_start_offset: int,
    recovery_point: int,
    high_watermark: int,
    clean_shutdown: bool,
    clock: Callable[[], int],
) -> tuple[uuid.UUID | None, Log]:
    """The topic id recorded in `partition_dir` and its log, opened from the checkpointed
    offsets; what an unclean stop left is recovered, not flushed."""
    try:
        topic_id = read_partition_metadata(partition_dir)
    except PartitionMetadataError as error:
        # Written atomically, so only something outside the broker left it so: the log is
        # taken as one without an id, which adopts its topic's on first use.
        log.warning("partition_metadata_unreadable", directory=str(partition_dir), error=str(error))
        topic_id = None
    opened = Log.open(
        partition_dir,
        config,
        log_start_offset=log_start_offset,
        recovery_point=recovery_point,
        high_watermark=high_watermark,
        clean_shutdown=clean_shutdown,
        clock=clock,
        flush_recovered=False,
    )
    return topic_id, opened


def _create_log(
    partition_dir: Path, config: LogConfig, topic_id: uuid.UUID | None, clock: Callable[[], int]
) -> Log:
    """A new log in `partition_dir` (on a storage thread), its topic id recorded before any
    of its files exists. A directory that exists already (left by a creation that failed) is
    opened as it is, its id recorded durably."""
    try:
        partition_dir.mkdir()
        fresh = True
    except FileExistsError:
        fresh = False
    if not fresh:
        if topic_id is not None:
            write_partition_metadata(partition_dir, topic_id, sync_directory=False)
        return Log.open(partition_dir, config, clock=clock)
    # Synced by the log's first flush (Kafka's too): until a record of the log is durable,
    # a power cut that loses the id loses nothing the id would tell apart.
    unsynced = (
        () if topic_id is None else (write_partition_metadata_unsynced(partition_dir, topic_id),)
    )
    return Log.create(partition_dir, config, clock=clock, unsynced_files=unsynced)


def _remove_deleted_directory(doomed: Path) -> None:
    """Remove a directory renamed aside for deletion (on the deleter's thread)."""
    # Its removal is not synced (nothing depends on it: a start removes what is left), so
    # the durability journal records none.
    try:
        shutil.rmtree(doomed)
    except FileNotFoundError:
        return
    except OSError as error:
        # It stays aside, never loaded, and the next start tries again.
        log.warning("deleted_log_removal_failed", directory=str(doomed), error=str(error))
        return
    log.debug("deleted_log_removed", directory=str(doomed))


def _read_marker(directory: Path) -> int | None:
    """The broker epoch in a directory's clean-shutdown marker, or None if absent or bad."""
    path = directory / CLEAN_SHUTDOWN_MARKER
    try:
        content = json.loads(path.read_text(encoding="utf-8"))
        return int(content["broker_epoch"])
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError) as error:
        log.warning("clean_shutdown_marker_unreadable", path=str(path), error=str(error))
        return None


def _read_offsets(path: Path) -> dict[str, int]:
    """The offsets of a checkpoint by partition directory name (`<topic>-<partition>`): a
    start looks up thousands of logs by their directory."""
    try:
        rows = read_checkpoint(path, fields=3)
    except CheckpointFormatError as error:
        log.warning("offset_checkpoint_unreadable", path=str(path), error=str(error))
        return {}
    if rows is None:
        return {}
    offsets = {}
    for topic, partition, offset in rows:
        try:
            offsets[f"{topic}-{int(partition)}"] = int(offset)
        except ValueError:
            log.warning("offset_checkpoint_unreadable", path=str(path), row=[topic, partition])
            return {}
    return offsets


def write_checkpoints(checkpoints: Iterable[tuple[Path, Sequence[tuple[str, int, int]]]]) -> None:
    """Write each checkpoint file of `LogManager.checkpoints` atomically and durably. A disk
    error raises StorageIOError; the previous checkpoints stay in place."""
    try:
        for path, rows in checkpoints:
            write_checkpoint(path, rows)
    except OSError as error:
        raise StorageIOError(f"cannot write checkpoints: {error}", error.errno) from error

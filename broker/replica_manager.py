"""The partitions this broker hosts, kept in line with the metadata log; produce and fetch.

As a `RaftListener` (after the `MetadataReplayer`) it applies each new metadata image: a
replica assigned to this broker gets its log (created if new, recording its topic id) and its
role and leader epoch; a topic gone from the image has its replicas closed and their data
deleted.

Topic identity: a log belongs to the topic whose id its directory records, not to whatever
topic now has its name. From the first image applied (once the broker's registration is
replayed, so the image is at least as new as anything decided while it was down) and with
every change after, a local log is deleted when the image has no topic of its name, or has
one under another id (the topic was deleted and created again): its directory is renamed aside
at once, so it is never opened or served again, and removed in the background; a re-created
topic's replica starts an empty log. A log of a partition that still exists under the same id
but no longer lists this broker among its replicas (reassigned away while the broker was down)
is deleted too. A log without a recorded id (from before ids were recorded) takes the image's
id. Logs on an offline log directory are left alone.

Produce (leader only): every partition is validated and appended at once; acks=all waits
(bounded by the request timeout) until the high watermark passes the last appended offset,
and is refused up front with NOT_ENOUGH_REPLICAS while the ISR is below the topic's
`min.insync.replicas`. Fetch: consumers read below the high watermark, followers (replica id
>= 0) up to the log end offset, which also reports the follower's log end offset to the leader
and so moves the high watermark; a fetch with too few bytes waits (long polling) until any of
its partitions changes or `max_wait` passes. Record bytes are returned as the log stores them.

Replication throttle (Kafka's): while the leader's quota (`leader.replication.throttled.rate`)
is exceeded, a follower fetch gets nothing of a partition that throttles that follower
(`Partition.leader_throttles`: outside the ISR, and listed in the topic's
`leader.replication.throttled.replicas` or being added by a reassignment); what such
partitions are served counts against the quota. The fetchers do the same on the follower's
side. The rates are the node's settings unless the metadata log sets them as dynamic broker
configs (`controller.broker_config`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import shutil
import ssl
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from concurrent.futures import Future as ConcurrentFuture
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from uuid import UUID

import structlog
from kio.schema.errors import ErrorCode

from broker.configs import topic_log_config
from broker.isr_changes import IsrChangeSender
from broker.metadata_api import DEFAULT_LISTENER
from broker.offsets import OffsetAnswer
from broker.partition import (
    LeaderAppend,
    NotLeaderError,
    Partition,
    until_any_changes,
    wake_waiter,
)
from broker.partition_changes import PartitionChanges
from broker.producer_state import ActiveProducer, ProducerStateError
from broker.replica_fetcher import APPLY_SLICE_S, ReplicaFetcherManager
from broker.replication_quota import NO_THROTTLE, UNTHROTTLED, ThrottleSettings
from controller.broker_config import dynamic_broker_value
from controller.image import MetadataImage, MetadataReplayer
from controller.partition_state import PartitionState
from controller.topic_config import TopicConfig
from kraft.messages import Entry, SnapshotId
from kraft.wire import METADATA_TOPIC
from net.record_batch import (
    NO_TIMESTAMP,
    CorruptBatchError,
    InvalidRecordsError,
    RecordBatchError,
    RecordError,
)
from net.sasl import SaslClientCredentials
from net.tasks import report_fatal, start_essential
from storage.errors import (
    InvalidTimestampError,
    OffsetOutOfRangeError,
    RecordBatchTooLargeError,
    StorageError,
)
from storage.file_threads import FILE_THREADS
from storage.leader_epoch_cache import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET, EpochCheckpoints
from storage.log import Log, LogConfig
from storage.log_manager import LogManager, TopicPartition

log = structlog.get_logger(__name__)

# Fetch's replica id of consumers (and of the ReplicaState of v15+).
CONSUMER_REPLICA_ID = -1
# Replicas applied together: their new logs' directories synced once for them all, and their
# new leaderships' epoch checkpoints written with their fsyncs in parallel.
_NEW_LOGS_AT_ONCE = 64
# A step of applying metadata: None, or the creation of a new log's files, which the steps
# after it need done (an apply on the event loop awaits it instead of blocking).
ApplyStep = ConcurrentFuture[Log] | None


@dataclass(frozen=True, slots=True)
class ProduceResult:
    error: ErrorCode
    base_offset: int = -1
    log_start_offset: int = -1
    message: str | None = None
    log_append_time_ms: int = NO_TIMESTAMP
    # The records at fault when a batch was refused for some of its records (KIP-467).
    record_errors: tuple[RecordError, ...] = ()


@dataclass(frozen=True, slots=True)
class HostedReplica:
    """A replica's log as DescribeLogDirs shows it."""

    topic: str
    partition_id: int
    size_bytes: int
    # How far the log end is below the high watermark (Kafka's "offset lag": 0 but while a
    # log is being filled).
    offset_lag: int


@dataclass(frozen=True, slots=True)
class LogDirDescription:
    """A log directory of this broker: online or not, its replicas and its disk's space."""

    path: Path
    online: bool
    replicas: list[HostedReplica]
    total_bytes: int
    usable_bytes: int


@dataclass(frozen=True, slots=True)
class FetchPartition:
    """One partition of a Fetch request."""

    topic: str
    partition_id: int
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    last_fetched_epoch: int = -1
    # A follower's own log start offset (Fetch v5+; -1: not given).
    log_start_offset: int = -1


@dataclass(frozen=True, slots=True)
class FetchResult:
    """One partition's answer; `diverging_epoch` is (epoch, end offset) for a follower whose
    log diverged from the leader's."""

    error: ErrorCode
    high_watermark: int = -1
    log_start_offset: int = -1
    records: bytes | None = None
    diverging_epoch: tuple[int, int] | None = None
    leader: tuple[int, int] = (-1, -1)
    # Read for a follower the leader's replication quota bounds (counted once answered).
    throttled: bool = False
    # KIP-392: the follower the consumer should fetch from instead (-1: none, read here).
    preferred_read_replica: int = -1


class ReplicaManager:
    """The hosted replicas of broker `broker_id`."""

    def __init__(
        self,
        broker_id: int,
        logs: LogManager,
        replayer: MetadataReplayer,
        log_config: LogConfig,
        topic_defaults: TopicConfig,
        *,
        isr_changes: IsrChangeSender | None = None,
        replica_lag_time_max_ms: int = 30_000,
        eligible_leader_replicas_enable: bool = True,
        fenced_until_registered: bool = False,
        throttle: ThrottleSettings = NO_THROTTLE,
        rack_aware_replica_selector: bool = False,
        sasl: SaslClientCredentials | None = None,
        fetcher_ssl_context: ssl.SSLContext | None = None,
        replication_listener: str = DEFAULT_LISTENER,
    ) -> None:
        """`log_config`: the broker's storage settings, which the configuration of each
        topic (its overrides on top of `topic_defaults`) then sets for its replicas.
        `isr_changes` sends the ISR changes of led partitions (None: the ISR only changes
        by the controller's own decisions). With `eligible_leader_replicas_enable` (the
        cluster's `eligible.leader.replicas.enable`), a leader's high watermark stays while its
        ISR is below MinISR. `throttle`: the node's replication throttle settings (dynamic
        broker configs override its rates).

        With `fenced_until_registered`, the metadata log's commits reach the replicas only
        once `registered` was called and the replayed image holds that registration (the
        start-up fence of async-storage-and-recovery.txt 5.2, as Kafka's brokers publish no
        metadata before their initial catch-up): the metadata a restarted broker replays from
        its own log may still name it leader, but the controller moved every leadership and
        ISR membership off an incarnation that registers again, in the registration's own
        batch. Acting on the replayed image before that would let a broker that lost its
        unflushed tail lead, take writes at offsets its followers already hold, and have
        them acknowledged.

        With `rack_aware_replica_selector` (Kafka's RackAwareReplicaSelector, KIP-392), the
        leader answers a consumer's fetch that names its rack with a follower of that rack to
        fetch from instead (`preferred_read_replica`). The replica fetchers connect to the
        leaders' listener named `replication_listener` (Kafka's inter.broker.listener.name),
        with `fetcher_ssl_context` on TLS, authenticating with `sasl` on SASL."""
        self._replication_listener = replication_listener
        self._rack_aware = rack_aware_replica_selector
        # The offset of this broker's registration record (its broker epoch): None while the
        # broker has not registered, -1 when nothing fences the replicas.
        self._registration_offset: int | None = None if fenced_until_registered else -1
        # Set by `stop`: the metadata committed after it (the quorum runs on until the node
        # stops it) must not start replicas and fetchers again.
        self._stopped = False
        # Set once the replicas follow the metadata log: the broker serves clients from then.
        self.published = asyncio.Event()
        if not fenced_until_registered:
            self.published.set()
        self.broker_id = broker_id
        self._elr_enabled = eligible_leader_replicas_enable
        self._isr_changes = isr_changes
        self._lag_time_max_ms = replica_lag_time_max_ms
        self._expiration: asyncio.Task[None] | None = None
        # Applies a large metadata change in slices (`_apply_latest`); None or done when idle.
        self._applier: asyncio.Task[None] | None = None
        # A connection's produce whose appends are sliced: done once they all are.
        self._appending: dict[int, asyncio.Future[None]] = {}
        self._logs = logs
        self._replayer = replayer
        self._log_config = log_config
        self._topic_defaults = topic_defaults
        self._applied = MetadataImage.EMPTY
        self.partitions: dict[tuple[str, int], Partition] = {}
        # Local logs no hosted replica has taken: checked against every new set of topics.
        # None until the first image is applied, which fills it with every log found at start
        # (and a replica removed while its log directory is offline leaves its log here).
        self._unhosted: set[TopicPartition] | None = None
        # Log directories a disk error took offline (until the broker restarts).
        self._offline_dirs: set[Path] = set()
        # The node's settings of the throttle's rates, under any dynamic ones.
        self._static_rates = {
            "leader.replication.throttled.rate": throttle.leader_rate,
            "follower.replication.throttled.rate": throttle.follower_rate,
        }
        self.quotas = throttle.quotas()
        self._fetchers = ReplicaFetcherManager(
            broker_id,
            self._client_address,
            self.quotas.follower,
            fetcher_ssl_context,
            sasl=sasl,
        )
        # Called with a hosted partition whose leadership (or leader epoch) changed, and
        # whether this broker leads it now (a deleted replica leads nothing).
        self.leadership_listeners: list[Callable[[Partition, bool], None]] = []
        # Told of each change of a hosted partition (its log end, high watermark, log start or
        # role: what a long-polling fetch wakes on), and whether only its high watermark moved.
        self.change_listeners: list[Callable[[Partition, bool], None]] = []
        # Told how many replicas an apply started and stopped hosting, as it goes (a large
        # change in steps), and whether the apply of an image ended there.
        self.hosting_listeners: list[Callable[[int, int, bool], None]] = []
        # Every such change, numbered: what changed since a fetch last read.
        self.changes = PartitionChanges()

    # -- RaftListener ---------------------------------------------------------------------------

    def on_commit(self, entries: Sequence[Entry]) -> None:
        self._apply_replayed()

    def on_leader_change(self, leader_id: int | None, leader_epoch: int) -> None:
        """Nothing: partition leadership comes from metadata records, not the quorum."""

    def on_snapshot_loaded(self, snapshot_id: SnapshotId, records: Sequence[bytes]) -> None:
        self._apply_replayed()

    def registered(self, broker_epoch: int) -> None:
        """This broker registered; its registration record is at offset `broker_epoch`. The
        replicas follow the metadata log from the moment the replayed image holds it."""
        if self._registration_offset is None:
            self._registration_offset = broker_epoch
            self._apply_replayed()

    def _apply_replayed(self) -> None:
        image = self._replayer.image
        fence = self._registration_offset
        if fence is None or image.end_offset <= fence or self._stopped:
            return
        if not self.published.is_set():
            self.published.set()
            if fence >= 0:
                log.info(
                    "replicas_unfenced_at_registration",
                    broker_epoch=fence,
                    metadata_offset=image.end_offset - 1,
                )
        self._apply_latest()

    # -- metadata ---------------------------------------------------------------------------------

    def apply(self, image: MetadataImage) -> None:
        """Bring the hosted replicas in line with `image`, at once."""
        for _ in self._apply_steps(image):
            pass

    def _apply_latest(self) -> None:
        """Bring the hosted replicas in line with the replayed image: at once when that takes
        less than APPLY_SLICE_S (a change of a few partitions, answered in the same loop
        iteration as before), otherwise in slices of about that long with the event loop free
        between them, so that creating, moving or deleting thousands of replicas (each a log
        and an fsynced epoch checkpoint) does not hold up heartbeats, fetches and requests for
        seconds. Meanwhile the replicas not yet reached keep their previous state (as in
        Kafka, whose brokers apply metadata deltas apart from request handling); images
        committed meanwhile are applied after, the newest only."""
        if self._applier is not None and not self._applier.done():
            return  # it applies the newest image once it is done with this one
        steps = self._apply_steps(self._replayer.image)
        left = self._run_slice(steps)
        if left is not None:
            self._applier = start_essential(self._apply_rest(steps, left), "replica-metadata")

    def _run_slice(self, steps: Iterator[ApplyStep]) -> ApplyStep | bool:
        """Runs `steps` for up to APPLY_SLICE_S, or until one waits on file work not done
        yet: True (or that file work) if some are left, None once all are done."""
        deadline = time.monotonic() + APPLY_SLICE_S
        for step in steps:
            if step is not None and not step.done():
                return step
            if time.monotonic() >= deadline:
                return True
        return None

    async def _apply_rest(self, steps: Iterator[ApplyStep], left: ApplyStep | bool) -> None:
        while True:
            while left is not None:
                if isinstance(left, ConcurrentFuture):
                    # The event loop serves others while the storage threads make files (a
                    # failed creation raises from the step that takes the log).
                    await asyncio.wait([asyncio.wrap_future(left)])
                else:
                    await asyncio.sleep(0)
                left = self._run_slice(steps)
            if self._replayer.image is self._applied:
                return
            steps = self._apply_steps(self._replayer.image)
            left = True

    def _apply_steps(self, image: MetadataImage) -> Iterator[ApplyStep]:
        """Brings the hosted replicas in line with `image`, one step per replica created,
        changed or deleted, and one per creation of new logs' files the next steps wait for
        (the caller may yield the event loop between steps, and await those)."""
        old = self._applied
        if image is old:
            return
        if image.configs is not old.configs:
            self._apply_throttle_rates(image)
        reconciling_all = self._unhosted is None
        if self._unhosted is None:
            # The metadata log is the quorum's, never a replica of a topic.
            self._unhosted = {found for found in self._logs.logs if found.topic != METADATA_TOPIC}
        hosted: list[tuple[UUID, PartitionState, TopicConfig, LogConfig, tuple[str, int]]] = []
        for topic_id, topic in image.topics.items():
            overrides = image.topic_configs(topic.name)
            old_topic = old.topics.get(topic_id)
            same_configs = old.topic_configs(topic.name) == overrides
            if old_topic is topic and same_configs:
                continue
            # A change of a few partitions of a wide topic applies those only: the image keeps
            # the state objects of the partitions it did not change.
            unchanged = old_topic.partitions if old_topic is not None and same_configs else {}
            config = image.topic_config(topic.name, self._topic_defaults)
            log_config = topic_log_config(self._log_config, config)
            for partition_id, state in topic.partitions.items():
                key = (topic.name, partition_id)
                partition = self.partitions.get(key)
                if partition is not None and unchanged.get(partition_id) is state:
                    continue
                if partition is not None and (
                    self.broker_id not in state.replicas or partition.topic_id != topic_id
                ):
                    self._remove(key, topic_id)
                    yield None
                if self.broker_id not in state.replicas:
                    continue
                if key not in self.partitions and not self._take_local_log(key, topic_id):
                    yield None
                    continue
                hosted.append((topic_id, state, config, log_config, key))
        upcoming: list[ConcurrentFuture[Log]] = []
        for first in range(0, len(hosted), _NEW_LOGS_AT_ONCE):
            chunk = hosted[first : first + _NEW_LOGS_AT_ONCE]
            # The new replicas' logs of a chunk at once: their directories are synced once,
            # not each. The files made ahead for it are awaited, not blocked on (a change of
            # one chunk or less still applies in the step that saw it).
            wanted, topic_ids = self._new_logs_of(chunk)
            yield from upcoming
            new_logs = iter(self._logs.get_or_create_logs(wanted, topic_ids=topic_ids))
            # The next chunk's files are made meanwhile, on the storage threads.
            following = hosted[first + _NEW_LOGS_AT_ONCE : first + 2 * _NEW_LOGS_AT_ONCE]
            wanted, topic_ids = self._new_logs_of(following)
            upcoming = self._logs.prepare_logs(wanted, topic_ids=topic_ids)
            checkpoints = EpochCheckpoints()
            applied: list[tuple[Partition, PartitionState, tuple[bool, int]]] = []
            started = 0
            for topic_id, state, config, _, key in chunk:
                partition = self.partitions.get(key)
                if partition is None:
                    started += 1
                    partition = Partition(
                        key[0],
                        topic_id,
                        key[1],
                        self.broker_id,
                        next(new_logs),
                        hold_high_watermark_below_min_isr=self._elr_enabled,
                    )
                    partition.offline_listener = self._replica_went_offline
                    partition.change_listener = self._partition_changed
                    self.partitions[key] = partition
                # A log reopened at start-up got the broker's settings.
                partition.apply_config(config)
                led = (partition.is_leader, partition.leader_epoch)
                partition.apply(state, _now_ms(), checkpoints)
                applied.append((partition, state, led))
            # Durable before the event loop runs anything that could append to those logs.
            checkpoints.write()
            if started:
                self._hosting_changed(started, 0, image_done=False)
            for partition, state, led in applied:
                if (partition.is_leader, partition.leader_epoch) != led:
                    for listener in self.leadership_listeners:
                        listener(partition, partition.is_leader)
                if partition.is_leader or not state.has_leader:
                    self._fetchers.unfollow(partition)
                else:
                    self._fetchers.follow(partition, state.leader)
                yield None
        # A topic leaves the image (deleted, or created again under a new id) only with a
        # change of the topics' names or ids: other images need no pass over every replica.
        if reconciling_all or image.topic_ids is not old.topic_ids:
            for key, partition in list(self.partitions.items()):
                if partition.topic_id not in image.topics:
                    # A topic of its name now (created again with fewer partitions) has a new id.
                    self._remove(key, image.topic_ids.get(key[0]))
                    yield None
            # A replica unassigned at run time went with its log (`_remove`): only then can a
            # log be a stray.
            yield from self._delete_strays(image)
        self._applied = image
        self._hosting_changed(0, 0, image_done=True)

    def _hosting_changed(self, started: int, stopped: int, *, image_done: bool) -> None:
        for listener in self.hosting_listeners:
            listener(started, stopped, image_done)

    def _new_logs_of(
        self, chunk: Sequence[tuple[UUID, PartitionState, TopicConfig, LogConfig, tuple[str, int]]]
    ) -> tuple[list[tuple[TopicPartition, LogConfig | None]], dict[str, UUID]]:
        """The logs a chunk of hosted replicas needs that no replica has yet, and the topic ids
        they are for (what `get_or_create_logs` and `prepare_logs` take)."""
        wanted: list[tuple[TopicPartition, LogConfig | None]] = [
            (TopicPartition(*key), log_config)
            for _, _, _, log_config, key in chunk
            if key not in self.partitions
        ]
        return wanted, {key[0]: topic_id for topic_id, _, _, _, key in chunk}

    def _apply_throttle_rates(self, image: MetadataImage) -> None:
        """The replication quotas' rates: the dynamic broker configs of `image`, else the
        node's settings."""
        for name, quota in (
            ("leader.replication.throttled.rate", self.quotas.leader),
            ("follower.replication.throttled.rate", self.quotas.follower),
        ):
            dynamic = dynamic_broker_value(image, self.broker_id, name)
            rate = self._static_rates[name] if dynamic is None else int(dynamic.value)
            if rate != quota.bytes_per_second:
                quota.bytes_per_second = rate
                log.info(
                    "replication_throttle_rate_changed",
                    config=name,
                    bytes_per_second=None if rate == UNTHROTTLED else rate,
                    source="static" if dynamic is None else dynamic.source.name,
                    metadata_offset=image.end_offset - 1,
                )

    def _take_local_log(self, key: tuple[str, int], topic_id: UUID) -> bool:
        """Whether a new replica of `key` under `topic_id` may have its log here: a log found
        there that belongs to another topic id (a topic of the same name deleted while this
        broker was down) is deleted first; a log on an offline log directory is left alone,
        and the replica with it (it could serve nothing)."""
        found = TopicPartition(*key)
        recorded = self._logs.topic_id_of(found)
        offline = self._logs.directory_of(found) in self._offline_dirs
        if offline:
            log.warning(
                "replica_log_dir_offline",
                topic=found.topic,
                partition=found.partition,
                directory=str(self._logs.directory_of(found)),
            )
            return False
        if self._logs.get_log(found) is None or recorded in (None, topic_id):
            return True
        return self._delete_log(found, recorded, topic_id, reason="topic_recreated")

    def _delete_strays(self, image: MetadataImage) -> Iterator[ApplyStep]:
        """Deletes the local logs no replica hosts whose topic is gone from `image` or is
        there under another id, or whose partition no longer lists this broker as a replica;
        one step per log deleted."""
        assert self._unhosted is not None
        for found in sorted(self._unhosted):
            if (found.topic, found.partition) in self.partitions or not self._logs.get_log(found):
                self._unhosted.discard(found)
                continue
            if self._logs.directory_of(found) in self._offline_dirs:
                continue
            recorded = self._logs.topic_id_of(found)
            topic = image.topic(found.topic)
            if topic is None:
                deleted = self._delete_log(found, recorded, None, reason="topic_deleted")
            elif recorded not in (None, topic.topic_id) or found.partition not in topic.partitions:
                # A partition the topic of that name does not have is of an earlier one too.
                deleted = self._delete_log(
                    found, recorded, topic.topic_id, reason="topic_recreated"
                )
            elif self.broker_id not in topic.partitions[found.partition].replicas:
                # Reassigned away while this broker was down (or while its directory was
                # offline): no replica of it will be hosted here again under this id.
                deleted = self._delete_log(
                    found, recorded, topic.topic_id, reason="replica_unassigned"
                )
            else:
                continue
            if deleted:
                self._unhosted.discard(found)
            yield None

    def _delete_log(
        self,
        found: TopicPartition,
        recorded: UUID | None,
        topic_id: UUID | None,
        *,
        reason: str,
        leader_epoch: int | None = None,
    ) -> bool:
        """Deletes `found`'s log (`recorded`: the topic id it belongs to; `topic_id`: the id
        of the topic of its name now, if any) and logs one event saying why; False if a disk
        error kept it (its log directory is offline then)."""
        directory = self._logs.directory_of(found)
        try:
            aside = self._logs.delete_log(found)
        except StorageError as error:
            self._log_dir_failed(directory, error)
            return False
        log.info(
            "partition_replica_deleted",
            topic=found.topic,
            partition=found.partition,
            reason=reason,
            topic_id=None if recorded is None else str(recorded),
            new_topic_id=None if topic_id is None else str(topic_id),
            leader_epoch=leader_epoch,
            directory=None if aside is None else str(aside),
        )
        return True

    def _partition_changed(self, partition: Partition, high_watermark_only: bool) -> None:
        self.changes.changed(
            (partition.topic, partition.partition_id), high_watermark_only=high_watermark_only
        )
        for listener in self.change_listeners:
            listener(partition, high_watermark_only)

    def _replica_went_offline(self, failed: Partition, error: StorageError) -> None:
        """A write to `failed`'s log failed on the disk: its whole log directory goes offline,
        as in Kafka, so that no replica there takes writes a failing disk may lose; once no
        log directory is left, the broker can serve nothing and ends (a fatal fault, as
        Kafka's broker halts when all its log directories have failed), so the controller
        moves its leaderships and ISR memberships at once instead of after every replica
        timed out on its own."""
        self._log_dir_failed(
            self._logs.directory_of(TopicPartition(failed.topic, failed.partition_id)), error
        )

    def _log_dir_failed(self, directory: Path | None, error: StorageError) -> None:
        """A disk error in `directory`: it goes offline with every replica in it."""
        if directory is None or directory in self._offline_dirs:
            return
        self._offline_dirs.add(directory)
        taken = [
            partition
            for key, partition in self.partitions.items()
            if self._logs.directory_of(TopicPartition(*key)) == directory
        ]
        log.error(
            "log_dir_offline", directory=str(directory), replicas=len(taken), error=str(error)
        )
        for partition in taken:
            partition.take_offline(f"log directory {directory} is offline")
        if set(self._logs.partition_dirs) <= self._offline_dirs:
            report_fatal("log_dirs_offline", error)

    def _remove(self, key: tuple[str, int], topic_id: UUID | None) -> None:
        """Stop hosting the replica of `key` and delete its log (`topic_id`: the id of the
        topic of its name now, None if there is none)."""
        partition = self.partitions.pop(key)
        partition.remove()
        self._hosting_changed(0, 1, image_done=False)
        if partition.is_leader:
            for listener in self.leadership_listeners:
                listener(partition, False)
        self._fetchers.unfollow(partition)
        found = TopicPartition(*key)
        if topic_id is None:
            reason = "topic_deleted"
        elif topic_id != partition.topic_id:
            reason = "topic_recreated"
        else:
            reason = "replica_unassigned"
        if self._logs.directory_of(found) in self._offline_dirs or not self._delete_log(
            found, partition.topic_id, topic_id, reason=reason, leader_epoch=partition.leader_epoch
        ):
            # Left alone while its log directory is offline (until a restart, which
            # reconciles it as a stray).
            assert self._unhosted is not None
            self._unhosted.add(found)

    def _client_address(self, broker_id: int) -> tuple[str, int] | None:
        # The replayer's image: `apply` may be running on it and not have recorded it yet.
        broker = self._replayer.image.brokers.get(broker_id)
        if broker is None:
            return None
        for endpoint in broker.listeners:
            if endpoint.name == self._replication_listener:
                return endpoint.host, endpoint.port
        return None

    def start(self) -> None:
        """Start checking the ISRs of led partitions for lagging followers."""
        if self._isr_changes is not None:
            self._expiration = start_essential(self._expire_lagging_followers(), "isr-expiration")

    async def stop(self) -> None:
        """Stop applying metadata, fetching from the leaders and checking ISRs, then close
        every hosted replica (snapshotting its producer state)."""
        self._stopped = True
        for task in (self._applier, self._expiration):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        if self._isr_changes is not None:
            await self._isr_changes.stop()
        await self._fetchers.stop()
        # Each close writes a producer snapshot, with no fsync: the node's clean stop then
        # syncs each log directory's whole file system where the kernel can
        # (`LogManager.shutdown`), and a snapshot a power cut loses only lengthens the next
        # open's replay. Many at once: a node hosts thousands of replicas. Awaited, not
        # blocked on: closing 10,000 replicas takes seconds, and the node's Raft replica (the
        # quorum's leader, maybe) goes on answering meanwhile.
        close = functools.partial(Partition.close, durable=False)
        partitions = list(self.partitions.values())
        with ThreadPoolExecutor(FILE_THREADS, thread_name_prefix="replica-close") as closers:
            await asyncio.to_thread(lambda: list(closers.map(close, partitions)))

    async def _expire_lagging_followers(self) -> None:
        """Kafka's isr-expiration task: every half lag time, leaders drop followers that have
        not caught up for `replica.lag.time.max.ms`."""
        assert self._isr_changes is not None
        while True:
            await asyncio.sleep(self._lag_time_max_ms / 2000)
            now_ms = _now_ms()
            for partition in self.partitions.values():
                shrunk = partition.lagging_isr(now_ms, self._lag_time_max_ms)
                if shrunk is not None:
                    self._isr_changes.propose(partition, shrunk, "lagging_followers")

    def _may_join_isr(self, replica_id: int) -> bool:
        """Whether this broker's metadata lets a caught-up follower join an ISR: not fenced
        nor in controlled shutdown (Kafka's Partition.isReplicaIsrEligible). A follower that
        restarted fetches before it is unfenced; asked for then, the controller would refuse
        it as ineligible, partition by partition, fetch after fetch. The replayer's image
        first: the replicas may still be catching up with it (applied in slices)."""
        registration = self._replayer.image.brokers.get(replica_id) or self._applied.brokers.get(
            replica_id
        )
        return registration is None or not (
            registration.fenced or registration.in_controlled_shutdown
        )

    def topic_name(self, topic_id: UUID) -> str | None:
        topic = self._applied.topics.get(topic_id)
        return None if topic is None else topic.name

    # -- produce ----------------------------------------------------------------------------------

    async def produce(
        self,
        acks: int,
        timeout_ms: int,
        partitions: Sequence[tuple[str, int, memoryview | bytes | None]],
        *,
        connection_id: int | None = None,
    ) -> list[ProduceResult]:
        """Append each (topic, partition, records); answers in the same order.

        The appends run in slices of APPLY_SLICE_S with the event loop free between them (the
        first batches of thousands of new partitions, each a segment file and an epoch
        checkpoint made, held it for seconds). The produces of one `connection_id` append in
        the order they came all the same: Kafka handles a connection's requests in order, and
        an idempotent producer's pipelined batches count on it."""
        loop = asyncio.get_running_loop()
        if connection_id is not None:
            while (earlier := self._appending.get(connection_id)) is not None:
                await earlier
        results: list[ProduceResult] = []
        # Each acks=all append: where its answer goes, and the offset and leader epoch the
        # high watermark must pass in.
        waits: list[tuple[int, Partition, int, int]] = []
        # Set while this produce, its appends sliced, lets others run: the connection's next
        # produces wait for it.
        appending: asyncio.Future[None] | None = None
        slice_ends = time.monotonic() + APPLY_SLICE_S
        try:
            for topic, partition_id, records in partitions:
                if time.monotonic() >= slice_ends:
                    if connection_id is not None and appending is None:
                        appending = self._appending[connection_id] = loop.create_future()
                    await asyncio.sleep(0)
                    slice_ends = time.monotonic() + APPLY_SLICE_S
                partition = self.partitions.get((topic, partition_id))
                appended = self._append(partition, topic, acks, records)
                if isinstance(appended, ProduceResult):
                    results.append(appended)
                    continue
                assert partition is not None
                if acks == -1:
                    # A retried batch waits for its first write alone (Kafka's requiredOffset).
                    waits.append(
                        (len(results), partition, appended.end_offset, partition.leader_epoch)
                    )
                results.append(
                    ProduceResult(
                        ErrorCode.none,
                        appended.first_offset,
                        partition.log_start_offset,
                        log_append_time_ms=appended.log_append_time_ms,
                    )
                )
        finally:
            if appending is not None and connection_id is not None:
                del self._appending[connection_id]
                appending.set_result(None)
        if not waits:
            return results
        deadline = loop.time() + timeout_ms / 1000
        if len(waits) == 1:
            # Awaited in this task, not a child one: the answer goes out in the loop
            # iteration after the high watermark passes it, not two or three later.
            index, partition, required, epoch = waits[0]
            results[index] = await self._until_replicated(
                partition, required, epoch, deadline, results[index]
            )
        else:
            await self._until_all_replicated(waits, deadline, results)
        return results

    def _append(
        self, partition: Partition | None, topic: str, acks: int, records: memoryview | bytes | None
    ) -> ProduceResult | LeaderAppend:
        """Where one partition's batches went (or went the first time, for a producer's retried
        batch), or the error that refused them."""
        if partition is None:
            return ProduceResult(ErrorCode.unknown_topic_or_partition)
        if not partition.is_leader:
            return ProduceResult(ErrorCode.not_leader_or_follower)
        if records is None or not len(records):
            return ProduceResult(ErrorCode.invalid_record, message="no records")
        if acks == -1 and partition.under_min_isr:
            return ProduceResult(
                ErrorCode.not_enough_replicas,
                message=f"ISR {partition.isr_size()} is below min.insync.replicas",
            )
        try:
            return partition.append_as_leader(records)
        except NotLeaderError:
            return ProduceResult(ErrorCode.not_leader_or_follower)
        except ProducerStateError as error:
            return ProduceResult(error.error_code, message=str(error))
        except InvalidTimestampError as error:
            return ProduceResult(
                ErrorCode.invalid_timestamp, message=str(error), record_errors=error.record_errors
            )
        except InvalidRecordsError as error:
            return ProduceResult(
                ErrorCode.invalid_record, message=str(error), record_errors=error.record_errors
            )
        except RecordBatchTooLargeError as error:
            return ProduceResult(ErrorCode(error.error_code), message=str(error))
        except CorruptBatchError as error:
            return ProduceResult(ErrorCode.corrupt_message, message=str(error))
        except RecordBatchError as error:
            return ProduceResult(ErrorCode.invalid_record, message=str(error))
        except StorageError as error:
            log.error("produce_storage_failed", topic=topic, error=str(error))
            return ProduceResult(ErrorCode.kafka_storage_error, message=str(error))

    async def _until_replicated(
        self,
        partition: Partition,
        required: int,
        leader_epoch: int,
        deadline: float,
        appended: ProduceResult,
    ) -> ProduceResult:
        """The answer to an acks=all append once the high watermark passed it (Kafka's
        DelayedProduce): success only if this replica led throughout, in the epoch it appended
        in; a leadership lost even for a moment may have truncated the records."""
        expired = await _until_done_or(partition.until_high_watermark(required), deadline)
        if expired and partition.high_watermark < required:
            return ProduceResult(ErrorCode.request_timed_out)
        return self._replicated_answer(partition, required, leader_epoch, appended)

    async def _until_all_replicated(
        self,
        waits: Sequence[tuple[int, Partition, int, int]],
        deadline: float,
        results: list[ProduceResult],
    ) -> None:
        """`_until_replicated` for the acks=all appends of one request, each (index in
        `results`, partition, required offset, leader epoch), answered into `results`: every
        partition waits at once through one callback on its high watermark future (no task
        per partition) and is answered when that future completes, so each sees its own
        leadership change when it happens, not after the partitions before it."""
        all_answered: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        unanswered = {
            index: (partition, required, epoch) for index, partition, required, epoch in waits
        }

        def answer(index: int, future: asyncio.Future[None]) -> None:
            wait = unanswered.pop(index, None)
            if wait is None or future.cancelled():
                return
            partition, required, epoch = wait
            results[index] = self._replicated_answer(partition, required, epoch, results[index])
            if not unanswered and not all_answered.done():
                all_answered.set_result(None)

        futures = {}
        for index, partition, required, _ in waits:
            future = futures[index] = partition.until_high_watermark(required)
            future.add_done_callback(functools.partial(answer, index))
        try:
            if await _until_done_or(all_answered, deadline):
                for index in list(unanswered):
                    future = futures[index]
                    if future.done():
                        # Passed, but its callback had not run yet: answered as passed.
                        answer(index, future)
                    else:
                        unanswered.pop(index)
                        results[index] = ProduceResult(ErrorCode.request_timed_out)
        finally:
            for future in futures.values():
                future.cancel()

    def _replicated_answer(
        self, partition: Partition, required: int, leader_epoch: int, appended: ProduceResult
    ) -> ProduceResult:
        """The answer to an acks=all append whose wait for the high watermark is over."""
        if self.partitions.get((partition.topic, partition.partition_id)) is not partition:
            return ProduceResult(ErrorCode.unknown_topic_or_partition)
        if partition.offline:
            return ProduceResult(ErrorCode.kafka_storage_error)
        if (
            not partition.is_leader
            or partition.leader_epoch != leader_epoch
            or partition.high_watermark < required
        ):
            return ProduceResult(ErrorCode.not_leader_or_follower)
        if partition.under_min_isr:
            return ProduceResult(
                ErrorCode.not_enough_replicas_after_append,
                message=f"ISR {partition.isr_size()} fell below min.insync.replicas",
            )
        return appended

    # -- offsets ----------------------------------------------------------------------------------

    def _leader_of(
        self, topic: str, partition_id: int, current_leader_epoch: int
    ) -> tuple[ErrorCode, Partition | None]:
        """The partition if this broker leads it in the epoch the client knows (-1: any)."""
        partition = self.partitions.get((topic, partition_id))
        if partition is None or partition.state is None:
            return ErrorCode.unknown_topic_or_partition, None
        if partition.offline:
            return ErrorCode.kafka_storage_error, partition
        if not partition.is_leader:
            return ErrorCode.not_leader_or_follower, partition
        if current_leader_epoch >= 0:
            if current_leader_epoch < partition.leader_epoch:
                return ErrorCode.fenced_leader_epoch, partition
            if current_leader_epoch > partition.leader_epoch:
                return ErrorCode.unknown_leader_epoch, partition
        return ErrorCode.none, partition

    def list_offset(
        self, topic: str, partition_id: int, timestamp: int, current_leader_epoch: int
    ) -> tuple[ErrorCode, OffsetAnswer | None]:
        """ListOffsets for one partition, on its leader. OFFSET_NOT_AVAILABLE (retriable)
        while a new leader's high watermark is below where its epoch began (KIP-207): until
        its followers report, it may not yet have passed what the previous leader committed,
        and an offset answered then could go back."""
        error, partition = self._leader_of(topic, partition_id, current_leader_epoch)
        if error is not ErrorCode.none or partition is None:
            return error, None
        if partition.high_watermark < partition.leader_epoch_start_offset:
            return ErrorCode.offset_not_available, None
        try:
            return ErrorCode.none, partition.offset_for_timestamp(timestamp)
        except StorageError as storage_error:
            log.error("list_offsets_storage_failed", topic=topic, error=str(storage_error))
            return ErrorCode.kafka_storage_error, None

    def end_offset_for_epoch(
        self, topic: str, partition_id: int, current_leader_epoch: int, leader_epoch: int
    ) -> tuple[ErrorCode, int, int]:
        """OffsetForLeaderEpoch on the leader: (error, epoch, end offset), the largest epoch
        at or below `leader_epoch` and where it ends (-1, -1 when there is none)."""
        error, partition = self._leader_of(topic, partition_id, current_leader_epoch)
        if error is not ErrorCode.none or partition is None:
            return error, -1, -1
        epoch, end_offset = partition.end_offset_for_epoch(leader_epoch)
        return ErrorCode.none, epoch, end_offset

    async def delete_records(
        self, topic: str, partition_id: int, offset: int, timeout_ms: int
    ) -> tuple[ErrorCode, int]:
        """DeleteRecords for one partition, on its leader: (error, low watermark). The log
        start offset moves up to `offset` (-1: the high watermark); as Kafka's
        DelayedDeleteRecords, the answer waits up to `timeout_ms` for every follower on an alive
        broker to follow it (they do as they fetch), then gives the low watermark, the smallest
        log start offset over the replicas (REQUEST_TIMED_OUT if they have not by then).
        OFFSET_OUT_OF_RANGE beyond the high watermark, POLICY_VIOLATION for a topic whose
        cleanup.policy lacks "delete"."""
        error, partition = self._leader_of(topic, partition_id, -1)
        if error is not ErrorCode.none or partition is None:
            return error, -1
        if "delete" not in partition.log.config.cleanup_policy:
            return ErrorCode.policy_violation, -1
        high_watermark = partition.high_watermark
        target = high_watermark if offset == -1 else offset
        if not 0 <= target <= high_watermark:
            return ErrorCode.offset_out_of_range, -1
        try:
            log_start_offset = partition.delete_records(target)
        except StorageError as storage_error:
            log.error("delete_records_failed", topic=topic, error=str(storage_error))
            return ErrorCode.kafka_storage_error, -1
        log.info(
            "records_deleted",
            topic=topic,
            partition=partition_id,
            log_start_offset=log_start_offset,
        )
        return await self._until_low_watermark(partition, target, timeout_ms)

    async def _until_low_watermark(
        self, partition: Partition, target: int, timeout_ms: int
    ) -> tuple[ErrorCode, int]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_ms / 1000
        while True:
            if not partition.is_leader or self._hosted(partition) is not partition:
                return ErrorCode.not_leader_or_follower, -1
            low_watermark = partition.low_watermark(self._alive)
            if low_watermark >= target:
                return ErrorCode.none, low_watermark
            remaining = deadline - loop.time()
            if remaining <= 0:
                return ErrorCode.request_timed_out, low_watermark
            await until_any_changes((partition,), remaining)

    def _hosted(self, partition: Partition) -> Partition | None:
        return self.partitions.get((partition.topic, partition.partition_id))

    def _alive(self, broker_id: int) -> bool:
        broker = self._applied.brokers.get(broker_id)
        return broker is not None and not broker.fenced

    def describe_log_dirs(
        self, asked: Mapping[str, Collection[int]] | None
    ) -> list[LogDirDescription]:
        """DescribeLogDirs: each partition log directory with the hosted replicas in it (of
        the partitions `asked`, by topic; None: every one). An offline directory lists none,
        as Kafka answers KAFKA_STORAGE_ERROR for it."""
        by_dir: dict[Path, list[HostedReplica]] = {d: [] for d in self._logs.partition_dirs}
        for (topic, partition_id), partition in sorted(self.partitions.items()):
            if asked is not None and partition_id not in asked.get(topic, ()):
                continue
            directory = self._logs.directory_of(TopicPartition(topic, partition_id))
            if directory not in by_dir or directory in self._offline_dirs:
                continue
            by_dir[directory].append(
                HostedReplica(
                    topic,
                    partition_id,
                    partition.log.size_in_bytes,
                    max(partition.high_watermark - partition.log_end_offset, 0),
                )
            )
        described = []
        for directory, replicas in by_dir.items():
            online = directory not in self._offline_dirs
            total = usable = -1
            if online:
                with contextlib.suppress(OSError):
                    total, _, usable = shutil.disk_usage(directory)
            described.append(LogDirDescription(directory, online, replicas, total, usable))
        return described

    def active_producers(
        self, topic: str, partition_id: int
    ) -> tuple[ErrorCode, list[ActiveProducer]]:
        """DescribeProducers for one partition, on any of its replicas: (error, producers).
        NOT_LEADER_OR_FOLLOWER where this broker hosts no replica of it."""
        partition = self.partitions.get((topic, partition_id))
        if partition is None or partition.state is None:
            topic_image = self._applied.topic(topic)
            if topic_image is None or partition_id not in topic_image.partitions:
                return ErrorCode.unknown_topic_or_partition, []
            return ErrorCode.not_leader_or_follower, []
        if partition.offline:
            return ErrorCode.kafka_storage_error, []
        return ErrorCode.none, partition.producers.active_producers()

    # -- fetch ------------------------------------------------------------------------------------

    async def fetch(
        self,
        replica_id: int,
        max_wait_ms: int,
        min_bytes: int,
        max_bytes: int,
        requests: Sequence[FetchPartition],
        client_rack: str | None = None,
    ) -> list[FetchResult]:
        """Read each partition; waits up to `max_wait_ms` for `min_bytes` if none failed. A
        fetch of no partition (every one it named unknown) is answered at once, as Kafka's
        KafkaApis does when nothing is left to fetch.

        `client_rack` is the rack a consumer's Fetch v11+ names ("" when it names none; None
        before v11). Such a consumer may read from a follower, up to the follower's high
        watermark; from the leader it may be sent to a follower of its rack instead (KIP-392),
        an answer given at once.

        After a wait, only the partitions changed since the last read are read again (the
        journal, `changes`) while no answer holds records: the others would read the same, and
        with the whole `max_bytes` left each read is what a full read would give. A follower
        (`replica_id` >= 0) waits for more than a high watermark's move (Kafka's DelayedFetch),
        then reads what changed, its high watermarks included."""
        if not requests:
            return []
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max_wait_ms / 1000
        names = [(request.topic, request.partition_id) for request in requests]
        named = set(names)
        read_up_to = self.changes.sequence
        results = self._read_all(replica_id, max_bytes, requests, client_rack)
        while True:
            size = sum(len(r.records) for r in results if r.records is not None)
            remaining = deadline - loop.time()
            if (
                size >= min_bytes
                or remaining <= 0
                or any(
                    r.error is not ErrorCode.none
                    or r.diverging_epoch is not None
                    or r.preferred_read_replica >= 0
                    for r in results
                )
            ):
                self.count_throttled(results)
                return results
            follower = replica_id >= 0
            if named.isdisjoint(self.changes.since(read_up_to, follower=follower)):
                # (Not when one changed while it was read: the read itself may move a high
                # watermark.)
                await until_any_changes(
                    [self.partitions[name] for name in names], remaining, follower=follower
                )
            changed = named.intersection(self.changes.since(read_up_to))
            read_up_to = self.changes.sequence
            if size:
                # The records held shift the room every later partition gets: all again.
                results = self._read_all(replica_id, max_bytes, requests, client_rack)
                continue
            again = [index for index, name in enumerate(names) if name in changed]
            reread = self._read_all(
                replica_id, max_bytes, [requests[i] for i in again], client_rack
            )
            for index, result in zip(again, reread, strict=True):
                results[index] = result

    def count_throttled(self, results: Sequence[FetchResult]) -> None:
        """Count the records of a fetch's answer its follower's replication quota bounds
        (once, as the answer goes out)."""
        throttled = sum(len(r.records) for r in results if r.throttled and r.records)
        if throttled:
            self.quotas.leader.record(throttled, _now_ms())

    def read_now(
        self,
        replica_id: int,
        max_bytes: int,
        requests: Sequence[FetchPartition],
        client_rack: str | None = None,
    ) -> list[FetchResult]:
        """Read each partition as `fetch` does, at once and without waiting; the records of
        throttled followers are not counted (`count_throttled`)."""
        return self._read_all(replica_id, max_bytes, requests, client_rack)

    def _read_all(
        self,
        replica_id: int,
        max_bytes: int,
        requests: Sequence[FetchPartition],
        client_rack: str | None,
    ) -> list[FetchResult]:
        results = []
        budget = max_bytes
        # KIP-392 applies to consumers' Fetch v11+ only; the leader's reads stay as they are
        # unless the rack-aware selector is on and the consumer names its rack.
        consumer_with_rack = replica_id < 0 and client_rack is not None
        selecting = consumer_with_rack and self._rack_aware and bool(client_rack)
        # One clock reading for the whole read: every partition's follower fetch time.
        now_ms = _now_ms()
        for request in requests:
            first = budget == max_bytes
            result = self._redirect(request, client_rack or "") if selecting else None
            if result is None:
                result = self._read(replica_id, request, budget, now_ms, first=first)
                if consumer_with_rack and result.error is ErrorCode.not_leader_or_follower:
                    result = self._read_as_follower(request, budget, first)
            if result.records is not None:
                budget = max(0, budget - len(result.records))
            results.append(result)
        return results

    def _read(
        self, replica_id: int, request: FetchPartition, budget: int, now_ms: int, *, first: bool
    ) -> FetchResult:
        error, partition = self._leader_of(
            request.topic, request.partition_id, request.current_leader_epoch
        )
        if partition is None or partition.state is None:
            return FetchResult(error)
        leader = (partition.state.leader, partition.leader_epoch)
        if error is not ErrorCode.none:
            return FetchResult(error, leader=leader)
        is_follower = replica_id >= 0
        if is_follower and request.last_fetched_epoch >= 0:
            epoch, end_offset = partition.end_offset_for_epoch(request.last_fetched_epoch)
            if epoch == UNDEFINED_EPOCH or end_offset == UNDEFINED_EPOCH_OFFSET:
                # No end of that epoch here (Kafka's answer too): the follower falls back on
                # the high watermark and log start offset this carries.
                return FetchResult(
                    ErrorCode.offset_out_of_range,
                    partition.high_watermark,
                    partition.log_start_offset,
                    leader=leader,
                )
            if epoch != request.last_fetched_epoch or end_offset < request.fetch_offset:
                return FetchResult(
                    ErrorCode.none,
                    partition.high_watermark,
                    partition.log_start_offset,
                    diverging_epoch=(epoch, end_offset),
                    leader=leader,
                )
        if is_follower:
            self._record_follower_fetch(replica_id, partition, request, now_ms)
        throttled = is_follower and partition.leader_throttles(replica_id)
        return _read_records(
            partition,
            request,
            budget,
            first=first,
            committed_only=not is_follower,
            leader=leader,
            throttled=throttled,
            # As Kafka: a throttled partition is still read (an offset out of range is
            # answered), but while the quota is exceeded its records are left out.
            hold_records=throttled and self.quotas.leader.exceeded(now_ms),
        )

    def record_follower_fetches(self, replica_id: int, requests: Sequence[FetchPartition]) -> None:
        """Follower `replica_id` fetches `requests` again, at positions it had and with nothing
        new to read there (a fetch session's settled partitions): its fetch state as a read
        would record it (caught up now, an ISR expansion), without the read."""
        now_ms = _now_ms()
        for request in requests:
            error, partition = self._leader_of(
                request.topic, request.partition_id, request.current_leader_epoch
            )
            if error is ErrorCode.none and partition is not None:
                self._record_follower_fetch(replica_id, partition, request, now_ms)

    def _record_follower_fetch(
        self, replica_id: int, partition: Partition, request: FetchPartition, now_ms: int
    ) -> None:
        # A fetch offset past this log's end is no log end offset a follower can have.
        if request.fetch_offset > partition.log_end_offset:
            return
        expanded = partition.record_follower_fetch(
            replica_id, request.fetch_offset, now_ms, request.log_start_offset
        )
        if (
            expanded is not None
            and self._isr_changes is not None
            and self._may_join_isr(replica_id)
        ):
            self._isr_changes.propose(partition, expanded, "follower_caught_up")

    def _redirect(self, request: FetchPartition, client_rack: str) -> FetchResult | None:
        """The leader's answer sending a consumer of `client_rack` to a follower of its rack
        (no records, the follower in `preferred_read_replica`); None to read here."""
        partition = self.partitions.get((request.topic, request.partition_id))
        if partition is None or partition.state is None or not partition.is_leader:
            return None
        preferred = self._preferred_read_replica(partition, client_rack, request.fetch_offset)
        if preferred is None:
            return None
        partition.consumer_fetches_redirected += 1
        return FetchResult(
            ErrorCode.none,
            partition.high_watermark,
            partition.log_start_offset,
            leader=(partition.state.leader, partition.leader_epoch),
            preferred_read_replica=preferred,
        )

    def _read_as_follower(self, request: FetchPartition, budget: int, first: bool) -> FetchResult:
        """A consumer's read from this follower (Fetch v11+, KIP-392): its records below its
        own high watermark, with the leader epoch checked as the leader checks it; past its log
        end, OFFSET_OUT_OF_RANGE."""
        partition = self.partitions[(request.topic, request.partition_id)]
        assert partition.state is not None
        partition.consumer_fetches_as_follower += 1
        leader = (partition.state.leader, partition.leader_epoch)
        epoch = request.current_leader_epoch
        if 0 <= epoch < partition.leader_epoch:
            return FetchResult(ErrorCode.fenced_leader_epoch, leader=leader)
        if epoch > partition.leader_epoch:
            return FetchResult(ErrorCode.unknown_leader_epoch, leader=leader)
        return _read_records(
            partition, request, budget, first=first, committed_only=True, leader=leader
        )

    def _preferred_read_replica(
        self, partition: Partition, client_rack: str, fetch_offset: int
    ) -> int | None:
        """The follower a consumer in `client_rack` should read from, as Kafka's
        RackAwareReplicaSelector picks it: None (the leader) without the selector or a client
        rack, or when the leader is in that rack; else, among the alive in-sync followers of
        the rack that hold `fetch_offset`, the one furthest ahead (then the latest caught up)."""
        if not self._rack_aware or not client_rack or partition.state is None:
            return None
        brokers = self._applied.brokers
        own = brokers.get(self.broker_id)
        if own is not None and own.rack == client_rack:
            return None
        candidates = []
        for replica_id in partition.state.isr:
            follower = partition.followers.get(replica_id)
            broker = brokers.get(replica_id)
            if (
                follower is None
                or broker is None
                or broker.fenced
                or broker.rack != client_rack
                or follower.log_end_offset < fetch_offset
                or fetch_offset < partition.log_start_offset
            ):
                continue
            candidates.append((follower.log_end_offset, follower.last_caught_up_ms, replica_id))
        return max(candidates)[2] if candidates else None


def _read_records(
    partition: Partition,
    request: FetchPartition,
    budget: int,
    *,
    first: bool,
    committed_only: bool,
    leader: tuple[int, int],
    throttled: bool = False,
    hold_records: bool = False,
) -> FetchResult:
    """The batches of `partition` a fetch gets from its fetch offset (below the high watermark
    when `committed_only`), within `budget` bytes; none when `hold_records` (a throttled
    follower over its quota). `throttled`: the leader's replication quota counts the bytes."""
    try:
        read = partition.read(
            request.fetch_offset,
            min(request.max_bytes, budget),
            committed_only=committed_only,
            min_one_batch=first,
        )
        records = None if read.records is None or hold_records else read.records.read()
    except OffsetOutOfRangeError:
        return FetchResult(
            ErrorCode.offset_out_of_range,
            partition.high_watermark,
            partition.log_start_offset,
            leader=leader,
        )
    except (StorageError, OSError) as error:
        # That partition's answer only: the others of the fetch are served.
        log.error("fetch_storage_failed", topic=request.topic, error=str(error))
        return FetchResult(ErrorCode.kafka_storage_error, leader=leader)
    return FetchResult(
        ErrorCode.none,
        read.high_watermark,
        read.log_start_offset,
        records,
        leader=leader,
        throttled=throttled,
    )


def _now_ms() -> int:
    return int(asyncio.get_running_loop().time() * 1000)


async def _until_done_or(waiter: asyncio.Future[None], deadline: float) -> bool:
    """Await `waiter`, woken at `deadline` (loop time) if nothing woke it before; whether the
    deadline did. A timer of its own rather than asyncio.timeout, which costs several times as
    much on the path of every acks=all answer."""
    expired = False

    def expire() -> None:
        nonlocal expired
        expired = True
        wake_waiter(waiter)

    timer = asyncio.get_running_loop().call_at(deadline, expire)
    try:
        await waiter
    finally:
        timer.cancel()
    return expired

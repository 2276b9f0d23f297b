"""One partition replica hosted by this broker: its log, its role, and the high watermark.

The rules of `replication-design-v1.txt` and `hw-and-leader-epoch-discussion.txt` for the
leader: a follower's log end offset is the offset it fetches from; the high watermark is the
smallest log end offset over the ISR (the leader's included), and never moves back; with
eligible leader replicas it stays while the ISR is below MinISR (KIP-966, reference
`async-storage-and-recovery.txt` 5.2). The leader epoch of every append is the one the metadata
log gave this leadership, and it starts in the log's epoch cache when the leadership does; a
role change older than what was applied is ignored.

Waiters (acks=all produce, long-polling fetches) are woken when the high watermark or the log
end offset moves, or when the replica stops leading.

The idempotent-producer state is snapshotted in the log directory when the log rolls and when
the replica is closed; opening (or truncating) the log loads the newest snapshot within it and
replays only the batches after that one.

The rest of the broker reads the replica through it (offsets, reads for a fetch, epochs,
ListOffsets) as it writes through it; `Partition.log` itself is for storage maintenance (the
cleaner needs the Log).
"""

from __future__ import annotations

import asyncio
import functools
import heapq
import itertools
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import NamedTuple
from uuid import UUID

import structlog

from broker.configs import topic_log_config
from broker.offsets import OffsetAnswer, offset_for_timestamp
from broker.producer_snapshots import ProducerSnapshots
from broker.producer_state import ProducerStateManager, WrittenBatch
from controller.partition_state import PartitionState
from controller.topic_config import ThrottledReplicas, TopicConfig
from net.record_batch import (
    NO_TIMESTAMP,
    BatchHeader,
    Compression,
    InvalidRecordsError,
    RecordError,
    TimestampType,
)
from net.records import RecordColumns, decode_batch_columns, recompress_batches
from storage.errors import LogOfflineError, StorageError, StorageIOError
from storage.leader_epoch_cache import EpochCheckpoints
from storage.log import Log, ReadResult

log = structlog.get_logger(__name__)


class NotLeaderError(Exception):
    """This replica does not lead the partition (in the epoch asked)."""


class _DuplicateBatchError(Exception):
    """A producer's retried batch: it was written as `written` already."""

    def __init__(self, written: WrittenBatch) -> None:
        super().__init__(written)
        self.written = written


class LeaderAppend(NamedTuple):
    """Where a producer's batches went: their first offset, the offset after their last (what
    the high watermark must reach for acks=all), and their LogAppendTime (NO_TIMESTAMP for
    CreateTime topics and for duplicates)."""

    first_offset: int
    end_offset: int
    log_append_time_ms: int


@dataclass(slots=True)
class FollowerState:
    """What the leader knows of one follower: its log end offset (the offset it fetches
    from) and when it last fetched from the leader's log end offset."""

    log_end_offset: int = -1
    last_caught_up_ms: int = -1
    # Its log start offset, as its last fetch said (-1: unknown).
    log_start_offset: int = -1
    # The leader's log end offset and the time at the follower's previous fetch.
    last_fetch_leader_log_end_offset: int = -1
    last_fetch_ms: int = -1


class Partition:
    """A replica of `topic`-`partition_id` on broker `broker_id`."""

    def __init__(
        self,
        topic: str,
        topic_id: UUID,
        partition_id: int,
        broker_id: int,
        replica_log: Log,
        *,
        hold_high_watermark_below_min_isr: bool = True,
    ) -> None:
        """`hold_high_watermark_below_min_isr`: whether the high watermark stays while the ISR
        is below MinISR (or below the replication factor, when that is smaller); with eligible
        leader replicas it must, as the members that left the ISR then (the ELR) are leader
        candidates only because nothing was committed without them."""
        self.topic = topic
        self.topic_id = topic_id
        self.partition_id = partition_id
        self.broker_id = broker_id
        self.log = replica_log
        self._snapshots = ProducerSnapshots(replica_log.directory)
        # Both set by _load_producer_state, as after every truncation.
        self.producers: ProducerStateManager
        self._active_segment_base: int
        # The offset of the newest snapshot on disk, if known (or of a state that needs none:
        # a new log's empty one).
        self._snapshot_offset: int | None
        # The snapshot taken at the last roll while its writer thread writes it: its offset
        # and the write's future.
        self._snapshot_writing: tuple[int, Future[None]] | None = None
        self._load_producer_state()
        self.state: PartitionState | None = None
        self.followers: dict[int, FollowerState] = {}
        # An ISR this leader asked the controller for, until the metadata log answers (a new
        # partition epoch) or the controller refuses; and the partition epoch it was asked at.
        self.pending_isr: tuple[int, ...] | None = None
        self.pending_partition_epoch = -1
        # The log end offset when this leadership began: a follower below it has not got the
        # records of the current epoch, so it cannot join the ISR yet.
        self.leader_epoch_start_offset = 0
        # The topic's min.insync.replicas and replication throttle lists (`apply_config`).
        self._min_insync_replicas = 1
        self._leader_throttled = ThrottledReplicas()
        self._follower_throttled = ThrottledReplicas()
        # The codec the topic's compression.type has the leader write (None: the producer's).
        self._recompress_to: Compression | None = None
        self._recompress_level: int | None = None
        # KIP-392, since the broker started: consumer fetches this replica served as a
        # follower, and those it answered as leader with a follower to read from instead.
        self.consumer_fetches_as_follower = 0
        self.consumer_fetches_redirected = 0
        self._hold_high_watermark_below_min_isr = hold_high_watermark_below_min_isr
        # Futures of waiters (long-polling fetches, DeleteRecords) woken by the next change;
        # one fetch over many partitions registers one future with each of them. Followers'
        # fetches wait apart: a high watermark that moved alone does not wake them.
        self._change_waiters: set[asyncio.Future[None]] = set()
        self._follower_waiters: set[asyncio.Future[None]] = set()
        # acks=all produces waiting for the high watermark to reach an offset: a heap of
        # (offset, arrival, future), so an advance releases only the ones it satisfies.
        self._high_watermark_waiters: list[tuple[int, int, asyncio.Future[None]]] = []
        self._arrivals = itertools.count()
        # Set when a write to the log failed on the disk (a full or failing disk): from then
        # on the replica takes no write and serves no fetch until the broker restarts, as
        # Kafka takes the log directory offline. The failed write left nothing behind, but the
        # ones queued behind it must not be judged by a producer state that never saw it (an
        # idempotent producer answered OUT_OF_ORDER_SEQUENCE_NUMBER for its next batch takes
        # it as not written, bumps its epoch and sends again what it may have written).
        self.offline = False
        # Told when this replica goes offline (the replica manager takes its directory
        # offline with it).
        self.offline_listener: Callable[[Partition, StorageError], None] | None = None
        # Told of every change `wait_for_change` wakes on (the fetch sessions' change notices),
        # and whether only the high watermark moved.
        self.change_listener: Callable[[Partition, bool], None] | None = None

    # -- role -----------------------------------------------------------------------------------

    @property
    def is_leader(self) -> bool:
        return self.state is not None and self.state.leader == self.broker_id

    @property
    def leader_epoch(self) -> int:
        return -1 if self.state is None else self.state.leader_epoch

    def apply(
        self, state: PartitionState, now_ms: int = 0, checkpoints: EpochCheckpoints | None = None
    ) -> None:
        """A new state from the metadata log; one older than the applied one is ignored.

        `now_ms` starts the lag clock of the followers of a new leadership (Kafka gives ISR
        members the benefit of the doubt: caught up as of the moment leadership began). With
        `checkpoints`, a new leadership's leader-epoch checkpoint is written by its next
        `write`, which must come before anything is appended."""
        old = self.state
        if old is not None and (
            state.leader_epoch < old.leader_epoch or state.partition_epoch < old.partition_epoch
        ):
            return
        self.state = state
        became_leader = state.leader == self.broker_id and (
            old is None or old.leader != self.broker_id or old.leader_epoch != state.leader_epoch
        )
        if became_leader:
            # A new leadership knows nothing of the followers yet (they report on their next
            # fetch); the log's leader-epoch cache starts the epoch at the current end.
            self.followers = {
                r: FollowerState(last_caught_up_ms=now_ms if r in state.isr else -1)
                for r in state.replicas
                if r != self.broker_id
            }
            self.leader_epoch_start_offset = self.log.log_end_offset
            self._start_leader_epoch(state.leader_epoch, checkpoints)
            log.info(
                "partition_became_leader",
                topic=self.topic,
                partition=self.partition_id,
                leader_epoch=state.leader_epoch,
                partition_epoch=state.partition_epoch,
                isr=list(state.isr),
                log_end_offset=self.log.log_end_offset,
                high_watermark=self.log.high_watermark,
            )
        elif self.is_leader and old is not None and state.replicas != old.replicas:
            # Replicas added or removed in the same leadership (a reassignment): track the
            # new ones from their first fetch, forget the removed ones.
            self.followers = {
                r: self.followers.get(r) or FollowerState()
                for r in state.replicas
                if r != self.broker_id
            }
        elif old is None or old.leader != state.leader or old.leader_epoch != state.leader_epoch:
            log.info(
                "partition_became_follower",
                topic=self.topic,
                partition=self.partition_id,
                leader=state.leader,
                leader_epoch=state.leader_epoch,
                partition_epoch=state.partition_epoch,
            )
        if self.pending_isr is not None and (
            state.partition_epoch > self.pending_partition_epoch or not self.is_leader
        ):
            self.pending_isr = None
        if self.is_leader:
            self.maybe_advance_high_watermark()
        else:
            self._release_high_watermark_waiters(release_all=True)
        self._wake()

    def _start_leader_epoch(
        self, leader_epoch: int, checkpoints: EpochCheckpoints | None = None
    ) -> None:
        try:
            self.log.start_leader_epoch(leader_epoch, checkpoints)
        except StorageError as error:
            # The first append starts the epoch instead (or fails the same way, to its client).
            log.error(
                "leader_epoch_start_failed",
                topic=self.topic,
                partition=self.partition_id,
                leader_epoch=leader_epoch,
                error=str(error),
            )

    def apply_config(self, config: TopicConfig) -> None:
        """The topic's configuration, new or changed: its MinISR, its replication throttle
        lists and its log's settings."""
        self._min_insync_replicas = config.min_insync_replicas
        self._leader_throttled = config.leader_replication_throttled_replicas
        self._follower_throttled = config.follower_replication_throttled_replicas
        self._recompress_to = config.compression_type
        self._recompress_level = config.compression_level
        self.log.config = topic_log_config(self.log.config, config)

    @property
    def min_insync_replicas(self) -> int:
        """The topic's min.insync.replicas, as last applied."""
        return self._min_insync_replicas

    @property
    def under_min_isr(self) -> bool:
        """The ISR holds fewer replicas than min.insync.replicas."""
        return self.state is not None and len(self.state.isr) < self._min_insync_replicas

    # -- the replication throttle -----------------------------------------------------------

    def leader_throttles(self, replica_id: int) -> bool:
        """Whether the leader's replication quota bounds what this replica serves follower
        `replica_id`: never an ISR member; one being added by a reassignment, or any follower
        when the topic's `leader.replication.throttled.replicas` lists this partition on this
        broker."""
        state = self.state
        if state is None or replica_id in state.isr:
            return False
        return replica_id in state.adding_replicas or self._leader_throttled.throttles(
            self.partition_id, self.broker_id
        )

    @property
    def follower_throttled(self) -> bool:
        """Whether the follower's replication quota bounds this replica's fetching: never an
        ISR member; one being added by a reassignment, or one the topic's
        `follower.replication.throttled.replicas` lists."""
        state = self.state
        if state is None or self.broker_id in state.isr:
            return False
        return self.broker_id in state.adding_replicas or self._follower_throttled.throttles(
            self.partition_id, self.broker_id
        )

    def bytes_behind(self) -> dict[int, int]:
        """On the leader: per replica, the bytes between where its log ends (as its last fetch
        said) and this log's end; -1 for a follower not heard from in this leadership. Empty
        on a follower."""
        if not self.is_leader or self.state is None:
            return {}
        behind: dict[int, int] = {}
        for replica in self.state.replicas:
            if replica == self.broker_id:
                behind[replica] = 0
                continue
            follower = self.followers.get(replica)
            log_end_offset = -1 if follower is None else follower.log_end_offset
            behind[replica] = -1 if log_end_offset < 0 else self.log.bytes_from(log_end_offset)
        return behind

    # -- the log, as the broker reads it --------------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    @property
    def latest_epoch(self) -> int | None:
        """The latest leader epoch in the log's epoch cache (None: none yet)."""
        return self.log.latest_epoch

    def read(
        self, offset: int, max_bytes: int, *, committed_only: bool, min_one_batch: bool = True
    ) -> ReadResult:
        """Whole batches from `offset` (see Log.read): only those below the high watermark when
        `committed_only` (a consumer's fetch), up to the log end otherwise (a follower's)."""
        replica_log = self.log
        return replica_log.read(
            offset,
            max_bytes,
            max_offset=replica_log.high_watermark if committed_only else None,
            min_one_batch=min_one_batch,
        )

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """OffsetForLeaderEpoch's answer from this log: `(epoch, end offset)`, the largest
        epoch at or below `epoch` and where it ends (see LeaderEpochCache)."""
        return self.log.end_offset_for_epoch(epoch)

    def offset_for_timestamp(self, timestamp: int) -> OffsetAnswer:
        """ListOffsets' answer as this replica leads (committed records only, this
        leadership's epoch for LATEST); see `broker.offsets`."""
        return offset_for_timestamp(
            self.log, timestamp, isolation_committed=True, leader_epoch=self.leader_epoch
        )

    # -- leader ---------------------------------------------------------------------------------

    def append_as_leader(self, records: memoryview | bytes) -> LeaderAppend:
        """Append a producer's batches in this leader's epoch: the first offset they got, and
        the time the log stamped them with if the topic uses LogAppendTime. With a topic's
        `compression.type` other than `producer`, their records are recompressed to that codec
        first (`recompress_batches`).

        A single batch that repeats one of its producer's last five is not written again: the
        offsets it got the first time are returned, so an acks=all retry waits for that batch
        alone, as Kafka's answer to a duplicate does (not for batches the producer sent after
        it, which may never commit here). Raises ProducerStateError for a batch its
        producer's state refuses, InvalidRecordsError for records without a key in a compacted
        topic (nothing is written then), and the log's errors.
        """
        if not self.is_leader:
            raise NotLeaderError
        if self._recompress_to is not None:
            # Not for `producer` (the default): the batches are written as they came.
            records = recompress_batches(records, self._recompress_to, self._recompress_level)
        validated: list[BatchHeader] = []
        compacted = self.log.config.compact

        def check_producers(headers: Sequence[BatchHeader]) -> None:
            # After the log validated the batches (CRC included), before it writes them.
            if compacted:
                _refuse_records_without_keys(records, headers, f"{self.topic}-{self.partition_id}")
            if len(headers) == 1:
                duplicate = self.producers.find_duplicate(headers[0])
                if duplicate is not None:
                    raise _DuplicateBatchError(duplicate)
            for header in headers:
                self.producers.check(header)
            validated.extend(headers)

        self._check_online()
        try:
            info = self.log.append(records, self.leader_epoch, before_write=check_producers)
        except _DuplicateBatchError as duplicate:
            written = duplicate.written
            return LeaderAppend(written.first_offset, written.last_offset + 1, NO_TIMESTAMP)
        except (StorageIOError, LogOfflineError) as error:
            self._go_offline(error)
            raise
        offset = info.first_offset
        for header in validated:
            self.producers.update(header, offset)
            offset += header.last_offset_delta + 1
        self._snapshot_if_rolled()
        self.maybe_advance_high_watermark()
        self._wake()
        # `offset` is now past the last appended batch.
        if self.log.config.message_timestamp_type is TimestampType.LOG_APPEND_TIME:
            return LeaderAppend(info.first_offset, offset, info.max_timestamp)
        return LeaderAppend(info.first_offset, offset, NO_TIMESTAMP)

    def delete_records(self, offset: int) -> int:
        """DeleteRecords on the leader: move the log start offset up to `offset` (at most the
        high watermark, else OffsetOutOfRangeError) and delete the segments wholly below it.
        Returns the log start offset."""
        self._check_online()
        try:
            start = self.log.delete_records(offset)
        except StorageIOError as error:
            self._go_offline(error)
            raise
        # Long-polling followers answer at once, with the new log start to follow.
        self._wake()
        return start

    def _check_online(self) -> None:
        if self.offline:
            raise LogOfflineError(f"{self.log.directory} is offline since a disk error")

    def _go_offline(self, error: StorageError) -> None:
        if not self.offline:
            self.take_offline(str(error))
            if self.offline_listener is not None:
                self.offline_listener(self, error)

    def take_offline(self, reason: str) -> None:
        """This replica takes no write and serves no fetch until its broker restarts."""
        if self.offline:
            return
        self.offline = True
        self._release_high_watermark_waiters(release_all=True)
        self._wake()
        log.error(
            "partition_offline",
            topic=self.topic,
            partition=self.partition_id,
            leader_epoch=self.leader_epoch,
            log_end_offset=self.log.log_end_offset,
            reason=reason,
        )

    def isr_size(self) -> int:
        return 0 if self.state is None else len(self.state.isr)

    def record_follower_fetch(
        self, replica: int, fetch_offset: int, now_ms: int, log_start_offset: int = -1
    ) -> tuple[int, ...] | None:
        """A follower fetched from `fetch_offset`: its log end offset (and its log start
        offset, -1 if its fetch version has none). Returns the expanded ISR to ask the
        controller for when a follower outside the ISR has caught up."""
        follower = self.followers.get(replica)
        if follower is None or self.state is None:
            return None
        leader_log_end_offset = self.log.log_end_offset
        if (
            fetch_offset == follower.log_end_offset == leader_log_end_offset
            and leader_log_end_offset == self.log.high_watermark
            and log_start_offset == follower.log_start_offset
            and replica in self.state.isr
        ):
            # An in-sync follower fetching again where it was, at the committed log end (an
            # idle partition's refresh, every FOLLOWER_REFRESH_MS): only its times move. No
            # high watermark can pass the log end, and no ISR change is due.
            follower.last_caught_up_ms = follower.last_fetch_ms = now_ms
            follower.last_fetch_leader_log_end_offset = leader_log_end_offset
            return None
        follower.log_end_offset = fetch_offset
        if log_start_offset != follower.log_start_offset:
            follower.log_start_offset = log_start_offset
            # A DeleteRecords may be waiting for the followers' log starts (`low_watermark`).
            self._wake()
        # Kafka's rule: caught up now if it reached the leader's end, or caught up as of its
        # previous fetch if it reached the end the leader had then (under steady appends a
        # follower never sees the very end).
        if fetch_offset >= leader_log_end_offset:
            follower.last_caught_up_ms = now_ms
        elif fetch_offset >= follower.last_fetch_leader_log_end_offset >= 0:
            follower.last_caught_up_ms = max(follower.last_caught_up_ms, follower.last_fetch_ms)
        follower.last_fetch_leader_log_end_offset = leader_log_end_offset
        follower.last_fetch_ms = now_ms
        self.maybe_advance_high_watermark()
        if (
            replica in self.state.isr
            or self.pending_isr is not None
            or fetch_offset < self.log.high_watermark
            or fetch_offset < self.leader_epoch_start_offset
        ):
            return None
        return tuple(r for r in self.state.replicas if r in self.state.isr or r == replica)

    def lagging_isr(self, now_ms: int, lag_time_max_ms: int) -> tuple[int, ...] | None:
        """The shrunk ISR to ask for when followers in it have not caught up with the leader's
        log end for `lag_time_max_ms` (replica.lag.time.max.ms); None if none lag."""
        if not self.is_leader or self.pending_isr is not None or self.state is None:
            return None
        lagging = {
            r
            for r in self.state.isr
            if r != self.broker_id
            and now_ms - self.followers.get(r, FollowerState()).last_caught_up_ms > lag_time_max_ms
        }
        if not lagging:
            return None
        return tuple(r for r in self.state.isr if r not in lagging)

    def maybe_advance_high_watermark(self) -> bool:
        """HW = max(HW, min LEO over the maximal ISR); whether it moved. Not while the ISR is
        below MinISR when told to hold it there."""
        assert self.state is not None
        # A topic whose MinISR exceeds its replication factor would otherwise never commit.
        if self._hold_high_watermark_below_min_isr and len(self.state.isr) < min(
            self._min_insync_replicas, len(self.state.replicas)
        ):
            return False
        candidate = self.log.log_end_offset
        followers = self.followers
        # Over the maximal ISR (Kafka's): the ISR plus any member a pending change adds, so
        # that a replica about to join counts before the metadata log says it joined and the
        # high watermark never passes the log end of an ISR member. (Not built as a set: a
        # member counted twice changes no minimum.)
        for members in (self.state.isr, self.pending_isr or ()):
            for replica in members:
                if replica != self.broker_id:
                    follower = followers.get(replica)
                    candidate = min(candidate, -1 if follower is None else follower.log_end_offset)
        if candidate <= self.log.high_watermark:
            return False
        self.log.update_high_watermark(candidate)
        self._release_high_watermark_waiters()
        self._wake(high_watermark_only=True)
        return True

    # -- follower -------------------------------------------------------------------------------

    def append_from_leader(self, records: bytes, leader_high_watermark: int) -> None:
        """Append what the leader sent (keeping its offsets and epochs); the follower's high
        watermark is min(own LEO, the leader's high watermark)."""
        if records:
            self._check_online()
            appended: list[BatchHeader] = []
            try:
                self.log.append_as_follower(records, before_write=appended.extend)
            except (StorageIOError, LogOfflineError) as error:
                self._go_offline(error)
                raise
            self.producers.replay(appended)
            self._snapshot_if_rolled()
        self.log.update_high_watermark(min(self.log.log_end_offset, leader_high_watermark))
        self._wake(high_watermark_only=not records)

    def low_watermark(self, alive: Callable[[int], bool]) -> int:
        """On the leader: the smallest log start offset over this replica and its followers on
        `alive` brokers (Kafka's `lowWatermarkIfLeader`), which DeleteRecords waits to reach;
        a follower that never said its log start counts as 0."""
        low = self.log.log_start_offset
        for replica_id, follower in self.followers.items():
            if alive(replica_id):
                low = min(low, max(follower.log_start_offset, 0))
        return low

    def follow_log_start_offset(self, leader_log_start_offset: int) -> None:
        """Move this follower's log start offset up to the leader's (records deleted there by
        DeleteRecords or retention), never past this replica's own high watermark."""
        offset = min(leader_log_start_offset, self.log.high_watermark)
        if offset > self.log.log_start_offset:
            self.delete_records(offset)

    def truncate_to_divergence(self, epoch: int, end_offset: int) -> int:
        """The leader says this log diverges after `end_offset` of `epoch`: cut it where both
        agree, never blindly at the high watermark (hw-leo-leader-epoch.txt); the new end."""
        # Our end of that epoch (or of the latest one before it, if we never had it): KIP-279
        # truncates to the smaller, then the next fetch checks again from there.
        _, local_end = self.log.end_offset_for_epoch(epoch)
        offset = min(end_offset, local_end)
        if offset >= self.log.log_end_offset:
            # Nothing to cut, but an epoch this replica began as leader and never wrote in
            # must go (see Log.truncate_to), or the next fetch diverges the same way again.
            self.log.truncate_to(offset)
        else:
            log.warning(
                "partition_truncated_to_divergence",
                topic=self.topic,
                partition=self.partition_id,
                leader_epoch=self.leader_epoch,
                diverging_epoch=epoch,
                leader_end_offset=end_offset,
                old_log_end_offset=self.log.log_end_offset,
                new_log_end_offset=offset,
            )
            self.truncate_to(offset)
        return self.log.log_end_offset

    def truncate_to(self, offset: int) -> None:
        """Remove the batches at or above `offset`; the producer state forgets them too."""
        self.log.truncate_to(offset)
        self._load_producer_state()
        self._wake()

    def restart_at(self, offset: int) -> None:
        """Empty the log and continue it at `offset` (the leader deleted what lies before)."""
        self.log.truncate_fully_and_start_at(offset)
        # As Kafka does: the producers of a log this replica no longer shares are forgotten.
        self.wait_for_snapshot()
        self._snapshots.delete_all()
        self._load_producer_state()
        self._wake()

    def log_start_moved(self) -> None:
        """Retention moved the log start offset (through the log itself): the waiters and the
        change listener are told, as of any change a fetch could see."""
        self._wake()

    # -- producer state ---------------------------------------------------------------------------

    def close(self, *, durable: bool = True) -> None:
        """Snapshot the producer state at the log end offset, so the next open of this log
        replays nothing. The partition stays usable; a failed write is logged, not raised.
        Not `durable`: the snapshot is written with no fsync, for a stop that syncs the whole
        file system next (`ProducerSnapshots.write`)."""
        self.wait_for_snapshot()
        if self.log.offline:
            # Reopened with recovery, which may cut the log below the snapshot's offset.
            return
        self._write_snapshot(durable=durable)

    def wait_for_snapshot(self) -> None:
        """Until the snapshots taken at rolls are on disk (or their failure logged). Blocks:
        for the rare paths that read or delete snapshots (truncation, restart, close, removal),
        which must not race with the write of a state they are about to replace."""
        writing = self._snapshot_writing
        if writing is None:
            return
        self._snapshot_writing = None
        offset, future = writing
        if future.exception() is not None and self._snapshot_offset == offset:
            # Not on disk after all: a close writes it again.
            self._snapshot_offset = None

    def _load_producer_state(self) -> None:
        """The state at the log end: the newest snapshot within the log, then the batches
        after it. Snapshots above the log end count batches the log lost (recovery or
        truncation cut them); those below its start, batches it no longer holds."""
        self.wait_for_snapshot()
        if self.log.never_written:
            # A log just created holds no snapshot nor batch (a listing of its directory
            # each, for thousands of new replicas); its empty state needs no snapshot.
            self.producers = ProducerStateManager()
            self._snapshot_offset = self.log.log_end_offset
            self._active_segment_base = self.log.active_segment_base_offset
            return
        found = self._snapshots.load(self.log.log_start_offset, self.log.log_end_offset)
        start, self.producers = found if found is not None else (0, ProducerStateManager())
        self._snapshot_offset = start if found is not None else None
        self.producers.replay(header for _, header in self.log.batches(start))
        self._active_segment_base = self.log.active_segment_base_offset

    def _snapshot_if_rolled(self) -> None:
        # Called once the state includes the appended batches, so the snapshot is at the end.
        base = self.log.active_segment_base_offset
        if base != self._active_segment_base:
            self._active_segment_base = base
            offset = self.log.log_end_offset
            # The writer thread takes snapshots in order: waiting for this one waits for any
            # earlier one of this partition still queued.
            future = self._snapshots.write_later(offset, self.producers, self.log.log_start_offset)
            future.add_done_callback(functools.partial(self._snapshot_written, offset))
            self._snapshot_offset = offset
            self._snapshot_writing = (offset, future)

    def _snapshot_written(self, offset: int, future: Future[None]) -> None:
        # On the writer thread: only logs.
        error = future.exception()
        if error is not None:
            self._snapshot_failed(offset, error)

    def _snapshot_failed(self, offset: int, error: BaseException) -> None:
        # Only an optimisation: the next open replays more of the log instead.
        log.warning(
            "producer_snapshot_write_failed",
            topic=self.topic,
            partition=self.partition_id,
            offset=offset,
            error=str(error),
        )

    def _write_snapshot(self, *, durable: bool = True) -> None:
        offset = self.log.log_end_offset
        if offset == self._snapshot_offset:
            # The newest snapshot is of this very state (nothing was appended since it was
            # loaded or written): a stop after a restart writes none again.
            return
        try:
            self._snapshots.write(offset, self.producers, durable=durable)
            self._snapshot_offset = offset
            self._snapshots.delete_below(self.log.log_start_offset, durable=durable)
        except OSError as error:
            self._snapshot_failed(offset, error)

    # -- waiting ----------------------------------------------------------------------------------

    def until_high_watermark(self, offset: int) -> asyncio.Future[None]:
        """A future done once the high watermark reaches `offset`, or once this replica stops
        leading (the caller tells which). Cancelling it is how a waiter gives up."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if self.log.high_watermark >= offset or not self.is_leader:
            waiter.set_result(None)
        else:
            heapq.heappush(self._high_watermark_waiters, (offset, next(self._arrivals), waiter))
        return waiter

    def remove(self) -> None:
        """This replica is no longer hosted here: every waiter (acks=all produces,
        long-polling fetches) wakes to find out, and a pending ISR change is dropped."""
        self.pending_isr = None
        self._release_high_watermark_waiters(release_all=True)
        self._wake()
        # Its log directory is deleted next: no snapshot file may appear in it meanwhile.
        self.wait_for_snapshot()

    def _release_high_watermark_waiters(self, *, release_all: bool = False) -> None:
        waiters = self._high_watermark_waiters
        high_watermark = self.log.high_watermark
        while waiters and (release_all or waiters[0][0] <= high_watermark):
            waiter = heapq.heappop(waiters)[2]
            if not waiter.done():
                waiter.set_result(None)

    @property
    def waiting(self) -> int:
        """How many waiters (long-polling fetches, DeleteRecords) wait for this replica to
        change."""
        return len(self._change_waiters) + len(self._follower_waiters)

    async def wait_for_change(self) -> None:
        """Until the high watermark, the log end offset or the role changes."""
        await until_any_changes((self,), None)

    def _wake(self, *, high_watermark_only: bool = False) -> None:
        # Done in the same loop iteration as the change: a follower's long-polling fetch is
        # answered on the very next iteration, with no timer in between. A high watermark that
        # moved alone wakes no follower (it has nothing new to read: Kafka's DelayedFetch);
        # its next answer, on new records or at its timeout, carries the high watermark.
        if self._change_waiters:
            waiters, self._change_waiters = self._change_waiters, set()
            for waiter in waiters:
                wake_waiter(waiter)
        if self._follower_waiters and not high_watermark_only:
            waiters, self._follower_waiters = self._follower_waiters, set()
            for waiter in waiters:
                wake_waiter(waiter)
        if self.change_listener is not None:
            self.change_listener(self, high_watermark_only)


def _refuse_records_without_keys(
    records: memoryview | bytes, headers: Sequence[BatchHeader], partition_name: str
) -> None:
    """Kafka's rule for compacted topics: every record has a key, since the cleaner keeps the
    newest record of each key and drops records without one. The only place the broker decodes
    records, for compacted topics alone. Raises InvalidRecordsError naming each record without
    a key by its index in its batch, as Kafka's LogValidator does."""
    refused: list[RecordError] = []
    position = 0
    for header in headers:
        columns = RecordColumns.empty(with_headers=False)
        decode_batch_columns(records, position, columns)
        position += header.size
        refused.extend(
            RecordError(
                index,
                "Compacted topic cannot accept message without key in topic partition "
                f"{partition_name}.",
            )
            for index, key in enumerate(columns.keys)
            if key is None
        )
    if refused:
        raise InvalidRecordsError(tuple(refused))


async def until_any_changes(
    partitions: Sequence[Partition], timeout: float | None, *, follower: bool = False
) -> None:
    """Until the high watermark, the log end offset or the role of any of `partitions`
    changes, or `timeout` seconds passed (None: no bound); for a `follower`, a high watermark
    that moved alone is no change. One future for them all, so a fetch over many partitions
    costs a set insertion per partition, not a task."""
    loop = asyncio.get_running_loop()
    waiter: asyncio.Future[None] = loop.create_future()
    for partition in partitions:
        (partition._follower_waiters if follower else partition._change_waiters).add(waiter)
    timer = None if timeout is None else loop.call_later(timeout, wake_waiter, waiter)
    try:
        await waiter
    finally:
        if timer is not None:
            timer.cancel()
        for partition in partitions:
            (partition._follower_waiters if follower else partition._change_waiters).discard(waiter)


def wake_waiter(waiter: asyncio.Future[None]) -> None:
    """Completes `waiter` unless it is done already (a timer's or a change's wake-up)."""
    if not waiter.done():
        waiter.set_result(None)

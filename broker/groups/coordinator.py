"""The group coordinator: the asyncio driver of the `__consumer_offsets` partitions this broker
leads, each a `CoordinatorShard`.

- The coordinator of a group is the leader of partition `offsets_partition_for(group id)`. The
  topic is created (compacted, `offsets.topic.num.partitions` partitions) the first time a
  client looks a coordinator up; until it has a leader the answer is COORDINATOR_NOT_AVAILABLE.
- A broker that becomes a partition's leader loads its records into a new shard before it
  answers for its groups; one that stops leading it unloads the shard (its waiting requests
  get NOT_COORDINATOR, and later requests too).
- A shard's writes are appended to the partition in order, as its leader with acks=all; the
  shard hears each outcome. Its timers (sessions, rebalances, retention) run on the event loop.
- ListGroups is answered from every partition this broker leads: a broker lists the groups it
  coordinates, as Kafka's does; clients ask every broker.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import structlog
from kio.schema.errors import ErrorCode

from broker.groups.membership import (
    GroupDescription,
    HeartbeatAnswer,
    HeartbeatRequest,
    JoinAnswer,
    JoinRequest,
    LeaveAnswer,
    LeavingMember,
    SyncAnswer,
    SyncRequest,
)
from broker.groups.partitioning import offsets_partition_for
from broker.groups.records import CorruptOffsetsRecordError, OffsetCommitValue
from broker.groups.shard import (
    CommitAnswer,
    CoordinatorShard,
    DeleteGroupsAnswer,
    OffsetDeleteAnswer,
    OffsetToCommit,
    ShardAnswer,
    ShardConfig,
    ShardStep,
    Write,
)
from broker.groups.wire import ListedGroup, ListGroupsFilter
from broker.partition import Partition
from broker.replica_manager import ReplicaManager
from controller.image import MetadataImage
from controller.topics import OFFSETS_TOPIC
from net.records import Record, decode_batches, encode_batch
from net.tasks import start_essential

_LOAD_READ_BYTES = 1024 * 1024
# How often offsets past retention are looked for (offsets.retention.check.interval.ms).
_RETENTION_CHECK_MS = 600_000
# Coalesced writes stay well below the offsets topic's max.message.bytes (1 MiB by default).
_WRITE_BATCH_BYTES = 256 * 1024

log = structlog.get_logger(__name__)

AnswerT = TypeVar("AnswerT", bound=ShardAnswer)
Waiter = asyncio.Future[ShardAnswer]


def offsets_topic_configs(segment_bytes: int) -> dict[str, str]:
    """The configs `__consumer_offsets` is created with: always compacted, in segments of
    `offsets.topic.segment.bytes` (Kafka's default 100 MiB) so that it is cleaned early."""
    return {"cleanup.policy": "compact", "segment.bytes": str(segment_bytes)}


@dataclass(frozen=True, slots=True)
class CoordinatorConfig:
    """offsets.topic.num.partitions, offsets.topic.replication.factor (capped by the brokers
    there are), offsets.commit.timeout.ms, and the shards' settings."""

    offsets_topic_partitions: int = 50
    offsets_topic_replication_factor: int = 3
    commit_timeout_ms: int = 5_000
    shard: ShardConfig = field(default_factory=ShardConfig)


class CoordinatorUnavailableError(Exception):
    """This broker cannot answer for the group: the error to give the client."""

    def __init__(self, error_code: ErrorCode) -> None:
        super().__init__(error_code.name)
        self.error_code = error_code


@dataclass(slots=True)
class _Hosted:
    shard: CoordinatorShard[Waiter]
    retention_check_ms: int
    timer: asyncio.TimerHandle | None = None
    timer_at_ms: int | None = None
    # Writes of the shard's steps in this turn of the event loop, appended together at its end.
    pending_writes: list[Write] = field(default_factory=list)


class GroupCoordinator:
    """The groups of the `__consumer_offsets` partitions broker `broker_id` leads."""

    def __init__(
        self,
        broker_id: int,
        replicas: ReplicaManager,
        image: Callable[[], MetadataImage],
        create_offsets_topic: Callable[[int, int], Coroutine[Any, Any, None]],
        config: CoordinatorConfig | None = None,
    ) -> None:
        """`create_offsets_topic(partitions, replication_factor)` asks the controller for the
        topic (its errors are the controller's to log; the lookup is retried by clients)."""
        self._broker_id = broker_id
        self._replicas = replicas
        self._image = image
        self._create_offsets_topic = create_offsets_topic
        self._config = config or CoordinatorConfig()
        self._hosted: dict[int, _Hosted] = {}
        # Partitions led whose groups are still being read from the log.
        self._loading: dict[int, asyncio.Task[None]] = {}
        self._creating: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        replicas.leadership_listeners.append(self._on_leadership)

    # --- finding the coordinator ---------------------------------------------------------------

    def coordinator_of(self, group_id: str) -> tuple[ErrorCode, int]:
        """FindCoordinator: the broker that leads the group's partition, or why there is none
        (the offsets topic is created on the first lookup)."""
        topic = self._image().topic(OFFSETS_TOPIC)
        if topic is None:
            self._create_topic()
            return ErrorCode.coordinator_not_available, -1
        state = topic.partitions.get(offsets_partition_for(group_id, len(topic.partitions)))
        if state is None or not state.has_leader:
            return ErrorCode.coordinator_not_available, -1
        return ErrorCode.none, state.leader

    def _create_topic(self) -> None:
        if self._creating is not None and not self._creating.done():
            return
        live = sum(1 for broker in self._image().brokers.values() if not broker.fenced)
        replication_factor = max(1, min(self._config.offsets_topic_replication_factor, live))
        self._creating = asyncio.create_task(
            self._create_offsets_topic(self._config.offsets_topic_partitions, replication_factor)
        )

    # --- requests ------------------------------------------------------------------------------

    async def join(self, group_id: str, request: JoinRequest) -> JoinAnswer:
        try:
            partition, hosted = self._shard_of(group_id)
        except CoordinatorUnavailableError as error:
            return JoinAnswer(error.error_code, request.member_id)
        waiter = self._waiter()
        self._run(partition, hosted.shard.join(waiter, group_id, request, _now_ms()))
        return await self._answer(waiter, JoinAnswer)

    async def sync(self, group_id: str, request: SyncRequest) -> SyncAnswer:
        try:
            partition, hosted = self._shard_of(group_id)
        except CoordinatorUnavailableError as error:
            return SyncAnswer(error.error_code)
        waiter = self._waiter()
        self._run(partition, hosted.shard.sync(waiter, group_id, request, _now_ms()))
        return await self._answer(waiter, SyncAnswer)

    async def heartbeat(self, group_id: str, request: HeartbeatRequest) -> HeartbeatAnswer:
        try:
            partition, hosted = self._shard_of(group_id)
        except CoordinatorUnavailableError as error:
            return HeartbeatAnswer(error.error_code)
        waiter = self._waiter()
        self._run(partition, hosted.shard.heartbeat(waiter, group_id, request, _now_ms()))
        return await self._answer(waiter, HeartbeatAnswer)

    async def leave(self, group_id: str, members: Sequence[LeavingMember]) -> LeaveAnswer:
        try:
            partition, hosted = self._shard_of(group_id)
        except CoordinatorUnavailableError as error:
            return LeaveAnswer(error.error_code)
        waiter = self._waiter()
        self._run(partition, hosted.shard.leave(waiter, group_id, members, _now_ms()))
        return await self._answer(waiter, LeaveAnswer)

    async def commit_offsets(
        self,
        group_id: str,
        *,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        offsets: Sequence[OffsetToCommit],
        retention_ms: int | None = None,
        unknown_group_error: ErrorCode = ErrorCode.illegal_generation,
    ) -> CommitAnswer:
        try:
            partition, hosted = self._shard_of(group_id)
        except CoordinatorUnavailableError as error:
            return CommitAnswer(tuple(((o.topic, o.partition), error.error_code) for o in offsets))
        waiter = self._waiter()
        step = hosted.shard.commit_offsets(
            waiter,
            group_id,
            member_id=member_id,
            group_instance_id=group_instance_id,
            generation_id=generation_id,
            offsets=offsets,
            now_ms=_now_ms(),
            retention_ms=retention_ms,
            unknown_group_error=unknown_group_error,
        )
        self._run(partition, step)
        return await self._answer(waiter, CommitAnswer)

    def committed_offsets(
        self, group_id: str, partitions: Sequence[tuple[str, int]] | None
    ) -> dict[tuple[str, int], OffsetCommitValue]:
        """OffsetFetch; raises CoordinatorUnavailableError when this broker cannot answer."""
        _, hosted = self._shard_of(group_id)
        return hosted.shard.committed(group_id, partitions)

    async def delete_offsets(
        self, group_id: str, partitions: Sequence[tuple[str, int]]
    ) -> OffsetDeleteAnswer:
        """OffsetDelete: answered once the offsets' tombstones are written."""
        try:
            partition, hosted = self._shard_of(group_id)
        except CoordinatorUnavailableError as error:
            return OffsetDeleteAnswer(error.error_code)
        waiter = self._waiter()
        self._run(partition, hosted.shard.delete_offsets(waiter, group_id, partitions, _now_ms()))
        return await self._answer(waiter, OffsetDeleteAnswer)

    # --- administration ------------------------------------------------------------------------

    def describe_group(self, group_id: str) -> GroupDescription:
        """DescribeGroups for one group; raises CoordinatorUnavailableError when this broker
        cannot answer for it."""
        _, hosted = self._shard_of(group_id)
        return hosted.shard.describe(group_id)

    def list_groups(self, admitted: ListGroupsFilter) -> tuple[ErrorCode, list[ListedGroup]]:
        """ListGroups: the groups of every partition this broker leads that `admitted` admits,
        sorted by group id; COORDINATOR_LOAD_IN_PROGRESS (with the groups loaded) while some
        partition is still loading, as Kafka answers."""
        listed = [g for hosted in self._hosted.values() for g in hosted.shard.listed(admitted)]
        error = ErrorCode.coordinator_load_in_progress if self._loading else ErrorCode.none
        return error, sorted(listed, key=lambda g: g.group_id)

    async def delete_groups(self, group_ids: Sequence[str]) -> list[tuple[str, ErrorCode]]:
        """DeleteGroups: each group's error, in request order. The groups of one partition are
        deleted together, each partition's once its tombstones are written."""
        errors = [ErrorCode.none] * len(group_ids)
        asked: dict[int, tuple[_Hosted, list[int]]] = {}
        for index, group_id in enumerate(group_ids):
            try:
                partition, hosted = self._shard_of(group_id)
            except CoordinatorUnavailableError as error:
                errors[index] = error.error_code
                continue
            asked.setdefault(partition, (hosted, []))[1].append(index)
        waiting: list[tuple[list[int], Waiter]] = []
        for partition, (hosted, indexes) in asked.items():
            waiter = self._waiter()
            step = hosted.shard.delete_groups(waiter, [group_ids[i] for i in indexes], _now_ms())
            self._run(partition, step)
            waiting.append((indexes, waiter))
        for indexes, waiter in waiting:
            answer = await self._answer(waiter, DeleteGroupsAnswer)
            for index, (_, group_error) in zip(indexes, answer.errors, strict=True):
                errors[index] = group_error
        return list(zip(group_ids, errors, strict=True))

    def _shard_of(self, group_id: str) -> tuple[int, _Hosted]:
        topic = self._image().topic(OFFSETS_TOPIC)
        if topic is None:
            raise CoordinatorUnavailableError(ErrorCode.coordinator_not_available)
        partition = offsets_partition_for(group_id, len(topic.partitions))
        hosted = self._hosted.get(partition)
        if hosted is None:
            if partition in self._loading:
                raise CoordinatorUnavailableError(ErrorCode.coordinator_load_in_progress)
            raise CoordinatorUnavailableError(ErrorCode.not_coordinator)
        return partition, hosted

    @staticmethod
    def _waiter() -> Waiter:
        return asyncio.get_running_loop().create_future()

    @staticmethod
    async def _answer(waiter: Waiter, kind: type[AnswerT]) -> AnswerT:
        answer = await waiter
        assert isinstance(answer, kind)
        return answer

    # --- driving the shards --------------------------------------------------------------------

    def _run(self, partition_id: int, step: ShardStep[Waiter]) -> None:
        for change in step.state_changes:
            log.info(
                "group_state_changed",
                partition=partition_id,
                group=change.group_id,
                state=change.state.value,
                previous_state=change.previous_state.value,
                generation_id=change.generation_id,
                protocol=change.protocol_name,
                leader=change.leader_id,
                members=list(change.member_ids),
            )
        for waiter, answer in step.answers:
            if not waiter.done():
                waiter.set_result(answer)
        hosted = self._hosted.get(partition_id)
        if hosted is None:
            return
        if step.writes:
            if not hosted.pending_writes:
                asyncio.get_running_loop().call_soon(
                    self._append_pending_writes, partition_id, hosted
                )
            hosted.pending_writes.extend(step.writes)
        self._schedule(partition_id, hosted)

    def _append_pending_writes(self, partition_id: int, hosted: _Hosted) -> None:
        """Append the writes of this turn of the event loop (every request read from the
        connections in it) together, in batches of at most `_WRITE_BATCH_BYTES` each."""
        writes, hosted.pending_writes = hosted.pending_writes, []
        if self._hosted.get(partition_id) is not hosted:
            return  # unloaded: the shard answered its waiters NOT_COORDINATOR
        batch: list[Write] = []
        size = 0
        for write in writes:
            write_size = sum(len(key) + len(value or b"") for key, value in write.records)
            if batch and size + write_size > _WRITE_BATCH_BYTES:
                self._spawn(self._write(partition_id, hosted, batch))
                batch, size = [], 0
            batch.append(write)
            size += write_size
        self._spawn(self._write(partition_id, hosted, batch))

    async def _write(self, partition_id: int, hosted: _Hosted, writes: Sequence[Write]) -> None:
        batch = encode_batch(
            [Record(value=value, key=key) for write in writes for key, value in write.records]
        )
        (result,) = await self._replicas.produce(
            -1, self._config.commit_timeout_ms, [(OFFSETS_TOPIC, partition_id, batch)]
        )
        for write in writes:
            if self._hosted.get(partition_id) is not hosted:
                return  # unloaded meanwhile: its shard answered NOT_COORDINATOR
            step = hosted.shard.write_completed(write.write_id, result.error, _now_ms())
            self._run(partition_id, step)

    def _schedule(self, partition_id: int, hosted: _Hosted) -> None:
        """Wake the shard at its next deadline, or at its next retention check."""
        now_ms = _now_ms()
        if now_ms >= hosted.retention_check_ms:
            hosted.retention_check_ms = now_ms + _RETENTION_CHECK_MS
        deadline = hosted.shard.next_deadline_ms()
        at_ms = (
            hosted.retention_check_ms
            if deadline is None
            else min(deadline, hosted.retention_check_ms)
        )
        if hosted.timer is not None:
            if hosted.timer_at_ms == at_ms:
                return
            hosted.timer.cancel()
        delay = max(0.0, (at_ms - now_ms) / 1000)
        hosted.timer = asyncio.get_running_loop().call_later(delay, self._tick, partition_id)
        hosted.timer_at_ms = at_ms

    def _tick(self, partition_id: int) -> None:
        hosted = self._hosted.get(partition_id)
        if hosted is not None:
            hosted.timer = None
            self._run(partition_id, hosted.shard.tick(_now_ms()))

    # --- leadership ----------------------------------------------------------------------------

    def _on_leadership(self, partition: Partition, leads: bool) -> None:
        if partition.topic != OFFSETS_TOPIC:
            return
        partition_id = partition.partition_id
        loading = self._loading.pop(partition_id, None)
        if loading is not None:
            loading.cancel()
        hosted = self._hosted.pop(partition_id, None)
        if hosted is not None:
            if hosted.timer is not None:
                hosted.timer.cancel()
            self._run(partition_id, hosted.shard.unload(_now_ms()))
            log.info("group_coordinator_unloaded", partition=partition_id)
        if leads:
            log.info(
                "group_coordinator_loading",
                partition=partition_id,
                leader_epoch=partition.leader_epoch,
            )
            self._loading[partition_id] = self._spawn(self._load(partition))

    async def _load(self, partition: Partition) -> None:
        """Replay the partition into a new shard (the leader's log is the truth now), a chunk
        at a time so that the broker keeps serving; the shard answers once it has it all."""
        shard: CoordinatorShard[Waiter] = CoordinatorShard(self._config.shard)
        offset = partition.log_start_offset
        records = 0
        started = time.monotonic()
        while offset < partition.log_end_offset:
            read = partition.read(offset, _LOAD_READ_BYTES, committed_only=False)
            if read.records is None:
                break
            for header, batch in decode_batches(read.records.read()):
                for record in batch:
                    if record.key is None or (record.offset or 0) < offset:
                        continue
                    try:
                        shard.replay(record.key, record.value)
                        records += 1
                    except CorruptOffsetsRecordError as error:
                        log.warning(
                            "group_record_skipped",
                            partition=partition.partition_id,
                            offset=record.offset,
                            error=str(error),
                        )
                offset = header.next_offset
            await asyncio.sleep(0)
        shard.activate(_now_ms())
        del self._loading[partition.partition_id]
        hosted = self._hosted[partition.partition_id] = _Hosted(
            shard, retention_check_ms=_now_ms() + _RETENTION_CHECK_MS
        )
        self._schedule(partition.partition_id, hosted)
        log.info(
            "group_coordinator_loaded",
            partition=partition.partition_id,
            leader_epoch=partition.leader_epoch,
            records=records,
            groups=len(shard.group_ids()),
            load_ms=round((time.monotonic() - started) * 1000),
        )

    def _spawn(self, coroutine: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        # Loads and writes: one that failed would leave its groups unanswered for good.
        task = start_essential(coroutine, "group-coordinator")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def stop(self) -> None:
        """Cancel the timers and the writes in flight."""
        for hosted in self._hosted.values():
            if hosted.timer is not None:
                hosted.timer.cancel()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


def _now_ms() -> int:
    # Wall-clock time: commit and state timestamps are written to the log and read by other
    # brokers after failovers, as Kafka's are.
    return time.time_ns() // 1_000_000

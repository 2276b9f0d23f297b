"""Followers pull from their leaders: one fetcher task per source broker.

Each fetcher sends Fetch (v12: names, the current leader epoch, and the last fetched epoch so
the leader can point out a divergence) for every partition this broker follows from that
leader, with its broker id as replica id, and applies the answer per partition: append the
records as they are, set the high watermark to min(own LEO, leader's HW), truncate where the
leader says the log diverges, restart below the leader's log start when the offset fell out
of range. A refusal (not the leader, fenced or unknown epoch: the two brokers' metadata differ for a
moment) or a batch that fails validation backs that partition off (Kafka's
`replica.fetch.backoff.ms`) while the others go on, until the backoff passes or its metadata
changes; a connection error backs the whole fetcher off. The metadata log moves a partition to
another fetcher when its leader changes. Partitions that got records go to the end of the next
request, so a batch too large for what the response has left is not starved by busier
partitions before it. An answer is applied in slices (`APPLY_SLICE_S`) with the event loop free
between them; a replica added, removed or moved to another epoch meanwhile takes nothing of an
answer fetched for the one before it.

Fetch sessions (KIP-227, `broker.fetch_session_handler`): the first Fetch names every
partition and opens a session on the leader; the next ones name only the partitions whose fetch
position changed (those that got an answer, were added or came back from a backoff) and forget
those that left (removed, backing off, offline), so a fetch over thousands of idle partitions
costs what changed, on both ends. Any error (a connection, a session the leader lost) makes
the next Fetch full again.

Replication throttle (Kafka's follower side): while the broker's follower quota is exceeded,
the partitions it throttles (`Partition.follower_throttled`) are left out of the requests, and
the records they get count against it. While a follower rate is set, the fetcher sends full
sessionless Fetches, which choose the partitions anew each time.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ssl
import time
from collections.abc import Callable, Generator, Iterator, Mapping
from typing import Any

import structlog
from kio.schema.errors import ErrorCode
from kio.schema.fetch import v12 as fetch_v12

from broker.fetch_session_handler import (
    FINAL_EPOCH,
    FetchPlan,
    FetchPosition,
    FetchSessionHandler,
    PartitionKey,
)
from broker.partition import Partition
from broker.replication_quota import ReplicationQuota
from net.client import NodeConnection, RequestTimedOutError
from net.protocol import ProtocolError
from net.record_batch import RecordBatchError
from net.sasl import SaslClientCredentials
from net.tasks import start_essential
from storage.errors import StorageError

log = structlog.get_logger(__name__)

# How long one slice of bulk replica work may hold the event loop before it lets others run:
# applying one Fetch answer (the first records of thousands of partitions, each a log's segment
# file and epoch checkpoint made, took seconds at once) or a metadata change
# (`replica_manager._apply_latest`).
APPLY_SLICE_S = 0.02
# Kafka's replica.fetch.* defaults.
FETCH_MAX_WAIT = datetime.timedelta(milliseconds=500)
FETCH_MAX_BYTES = 10 * 1024 * 1024
PARTITION_MAX_BYTES = 1024 * 1024
BACKOFF_S = 1.0
# How soon partitions left out by the exceeded follower quota are looked at again when they
# were all that was left to fetch.
THROTTLE_RECHECK_S = 0.1

# The answer to one partition of a Fetch (v12, the version sent).
FetchAnswer = fetch_v12.response.PartitionData
# The v12 request's classes, called with plain ints: kio's field types are phantom types whose
# constructors validate (about 0.8 µs each, a dozen per request), and its generic make_entity
# costs more again; the encoder packs every value with `struct`, which range-checks it.
_FetchPartition: Any = fetch_v12.request.FetchPartition
_FetchTopic: Any = fetch_v12.request.FetchTopic
_ForgottenTopic: Any = fetch_v12.request.ForgottenTopic
_FetchRequest: Any = fetch_v12.FetchRequest


class ReplicaFetcher:
    """Fetches the partitions this broker follows from broker `leader_id`, within the
    follower `quota` (unbounded by default)."""

    def __init__(
        self,
        broker_id: int,
        leader_id: int,
        address: tuple[str, int],
        quota: ReplicationQuota | None = None,
        ssl_context: ssl.SSLContext | None = None,
        sasl: SaslClientCredentials | None = None,
    ) -> None:
        self.broker_id = broker_id
        self.quota = ReplicationQuota() if quota is None else quota
        self.leader_id = leader_id
        self.partitions: dict[tuple[str, int], Partition] = {}
        self._connection = NodeConnection(
            address[0],
            address[1],
            client_id=f"replica-fetcher-{broker_id}",
            request_timeout=30,
            sasl=sasl,
            ssl_context=ssl_context,
        )
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        # Partitions backing off after a refusal: the monotonic time they are asked for again.
        self._delayed_until: dict[tuple[str, int], float] = {}
        self.session = FetchSessionHandler()
        # Partitions whose fetch position may differ from what the leader's session holds,
        # and those to take out of it.
        self._changed_keys: set[PartitionKey] = set()
        self._leaving: set[PartitionKey] = set()
        # While a Fetch is in flight: what `partitions` held, before it changed meanwhile, of
        # each key added or removed since it was sent (None: none), so that its answer is
        # applied only to the replicas it was sent for without a copy of them all per Fetch.
        self._replaced: dict[PartitionKey, Partition | None] | None = None

    def start(self) -> None:
        self._task = start_essential(self._run(), f"replica-fetcher-{self.leader_id}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self._connection.close()

    def add(self, partition: Partition) -> None:
        """Fetch `partition` from this leader; one backing off is asked for again at once (its
        metadata changed)."""
        key = (partition.topic, partition.partition_id)
        self._note_replaced(key)
        self.partitions[key] = partition
        self._delayed_until.pop(key, None)
        self._changed_keys.add(key)
        self._leaving.discard(key)
        self._changed.set()

    def remove(self, partition: Partition) -> None:
        key = (partition.topic, partition.partition_id)
        self._note_replaced(key)
        self.partitions.pop(key, None)
        self._delayed_until.pop(key, None)
        self._changed_keys.discard(key)
        self._leaving.add(key)

    def _note_replaced(self, key: PartitionKey) -> None:
        replaced = self._replaced
        if replaced is not None and key not in replaced:
            replaced[key] = self.partitions.get(key)

    def due_partitions(self) -> dict[tuple[str, int], Partition]:
        """The partitions to ask for now, in fetch order: all but those backing off, those
        offline (a disk error: they fetch again once the broker restarted) and, while the
        follower quota is exceeded, those it throttles."""
        now = time.monotonic()
        held = self.quota.exceeded(int(now * 1000))
        return {
            key: partition
            for key, partition in self.partitions.items()
            if self._delayed_until.get(key, 0.0) <= now
            and not partition.offline
            and not (held and partition.follower_throttled)
        }

    async def _run(self) -> None:
        while True:
            plan = self._next_plan()
            if plan is None:
                await self._idle()
                continue
            # What changes in `partitions` until the answer is applied is noted there.
            self._replaced = {}
            try:
                connection_failed = await self._fetch(plan, self._replaced)
            finally:
                self._replaced = None
            if connection_failed:
                await asyncio.sleep(BACKOFF_S)

    async def _fetch(self, plan: FetchPlan, replaced: dict[PartitionKey, Partition | None]) -> bool:
        """Send `plan`'s Fetch and apply its answer, to the replicas it was sent for (those of
        `partitions` but for what `replaced` says they were); True if the connection failed."""
        try:
            response = await self._connection.send(self._request(plan))
        except (OSError, RequestTimedOutError, ProtocolError) as error:
            log.info("replica_fetch_failed", leader_id=self.leader_id, error=str(error))
            self.session.reset()
            return True
        # The connection decodes the answer as the response to the request's version.
        assert isinstance(response, fetch_v12.FetchResponse)
        refusal = ErrorCode(response.error_code)
        if refusal is not ErrorCode.none:
            log.info(
                "replica_fetch_session_failed",
                leader_id=self.leader_id,
                session_id=plan.session_id,
                session_epoch=plan.epoch,
                error=refusal.name,
            )
            self.session.reset()
            return False
        self._session_answered(plan, response.session_id)
        epochs: Mapping[PartitionKey, int] = (
            {key: position.current_leader_epoch for key, position in plan.partitions.items()}
            if plan.full
            else _SentEpochs(self.session.sent)
        )
        answers = self.apply_response(_AsSent(self.partitions, replaced), epochs, response)
        deadline = time.monotonic() + APPLY_SLICE_S
        for _ in answers:
            if time.monotonic() >= deadline:
                await asyncio.sleep(0)
                deadline = time.monotonic() + APPLY_SLICE_S
        return False

    def _next_plan(self) -> FetchPlan | None:
        """The next Fetch: full without a session (or while a follower rate is set: the
        throttled partitions are chosen anew each time), else incremental; None when there is
        nothing to fetch."""
        if self.quota.throttling or self.session.needs_full:
            due = self.due_partitions()
            if not due:
                return None
            positions = {key: _position(partition) for key, partition in due.items()}
            self._changed_keys.clear()
            self._leaving.clear()
            if self.quota.throttling:
                return FetchPlan(self.session.session_id, FINAL_EPOCH, positions)
            return self.session.full(positions)
        now = time.monotonic()
        for key, until in list(self._delayed_until.items()):
            if until <= now:
                del self._delayed_until[key]
                self._changed_keys.add(key)
        changed = {}
        for key in self._changed_keys:
            partition = self.partitions.get(key)
            if partition is None or key in self._delayed_until or partition.offline:
                self._leaving.add(key)
            else:
                changed[key] = _position(partition)
        plan = self.session.incremental(changed, self._leaving)
        self._changed_keys.clear()
        self._leaving.clear()
        if not self.session.sent and not plan.partitions:
            return None
        return plan

    async def _idle(self) -> None:
        """Wait until a partition is added, or the first backoff passes."""
        backoffs = [
            self._delayed_until[key] for key in self.partitions if key in self._delayed_until
        ]
        # A scan of every partition only while a follower rate is set: without one
        # nothing is held back, and the fetch loop stays O(1) here.
        if self.quota.throttling and any(
            partition.follower_throttled for partition in self.partitions.values()
        ):
            backoffs.append(time.monotonic() + THROTTLE_RECHECK_S)
        self._changed.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(
                max(0.0, min(backoffs) - time.monotonic()) if backoffs else None
            ):
                await self._changed.wait()

    def _session_answered(self, plan: FetchPlan, session_id: int) -> None:
        opened = plan.full and session_id != self.session.session_id
        self.session.answered(plan, session_id)
        if opened and session_id:
            log.info(
                "replica_fetch_session_opened",
                leader_id=self.leader_id,
                session_id=session_id,
                partitions=len(plan.partitions),
            )

    def apply_response(
        self,
        fetched: Mapping[tuple[str, int], Partition],
        epochs: Mapping[tuple[str, int], int],
        response: fetch_v12.FetchResponse,
    ) -> Generator[None, None, bool]:
        """Apply the answers of a Fetch sent for `fetched` at leader `epochs`, a step per
        partition answered (the fetcher's task frees the event loop between slices of them);
        returns False when a partition backs off. Partitions that got records move to the end
        of the order."""
        went_on = True
        served = []
        throttled = 0
        for topic in response.responses:
            for answer in topic.partitions:
                key = (topic.topic, answer.partition_index)
                partition = self.partitions.get(key)
                # Answers for a replica that changed role or epoch meanwhile are stale.
                if (
                    partition is not None
                    and partition is fetched.get(key)
                    and partition.leader_epoch == epochs.get(key)
                ):
                    if answer.records and partition.follower_throttled:
                        throttled += len(answer.records)
                    # Its fetch position may have moved: the next Fetch names it if so.
                    self._changed_keys.add(key)
                    if not self._apply_answer_safely(partition, answer):
                        self._delayed_until[key] = time.monotonic() + BACKOFF_S
                        self._leaving.add(key)
                        went_on = False
                    elif answer.records:
                        served.append(key)
                    yield
        if throttled:
            self.quota.record(throttled, int(time.monotonic() * 1000))
        for key in served:
            if key in self.partitions:
                self.partitions[key] = self.partitions.pop(key)
        return went_on

    def _request(self, plan: FetchPlan) -> fetch_v12.FetchRequest:
        by_topic: dict[str, list[fetch_v12.request.FetchPartition]] = {}
        for (topic, partition_id), position in plan.partitions.items():
            by_topic.setdefault(topic, []).append(
                _FetchPartition(
                    partition=partition_id,
                    current_leader_epoch=position.current_leader_epoch,
                    fetch_offset=position.fetch_offset,
                    last_fetched_epoch=position.last_fetched_epoch,
                    log_start_offset=position.log_start_offset,
                    partition_max_bytes=PARTITION_MAX_BYTES,
                )
            )
        forgotten: dict[str, list[int]] = {}
        for topic, partition_id in plan.forgotten:
            forgotten.setdefault(topic, []).append(partition_id)
        request: fetch_v12.FetchRequest = _FetchRequest(
            replica_id=self.broker_id,
            max_wait=FETCH_MAX_WAIT,
            min_bytes=1,
            max_bytes=FETCH_MAX_BYTES,
            isolation_level=0,
            session_id=plan.session_id,
            session_epoch=plan.epoch,
            topics=tuple(
                _FetchTopic(topic=topic, partitions=tuple(items))
                for topic, items in by_topic.items()
            ),
            forgotten_topics_data=tuple(
                _ForgottenTopic(topic=topic, partitions=tuple(indexes))
                for topic, indexes in forgotten.items()
            ),
            rack_id="",
        )
        return request

    def _apply_answer_safely(self, partition: Partition, answer: FetchAnswer) -> bool:
        """`apply_answer`, with any failure confined to that partition: it backs off and is
        asked again, while the fetcher goes on serving the others (Kafka's fetcher threads
        mark such a partition failed the same way). A failure never ends the fetcher, which
        would leave every partition of this leader unreplicated with nothing in the log."""
        try:
            return self.apply_answer(partition, answer)
        except Exception:
            log.exception("replica_fetch_partition_failed", **self._about(partition))
            return False

    def apply_answer(self, partition: Partition, answer: FetchAnswer) -> bool:
        """Apply one partition's answer; False when that partition should back off."""
        error = ErrorCode(answer.error_code)
        try:
            if error is ErrorCode.none:
                diverging = answer.diverging_epoch
                if diverging.epoch >= 0 or diverging.end_offset >= 0:
                    partition.truncate_to_divergence(diverging.epoch, diverging.end_offset)
                    return True
                partition.append_from_leader(answer.records or b"", answer.high_watermark)
                partition.follow_log_start_offset(answer.log_start_offset)
                return True
            if error is ErrorCode.offset_out_of_range:
                self._restart_in_range(partition, answer)
                return True
        except (StorageError, RecordBatchError) as refused:
            # A batch that fails validation (bit rot in the leader's copy) is not written:
            # this partition is asked again after the backoff, the others are unaffected.
            log.error("replica_fetch_append_failed", **self._about(partition, error=str(refused)))
            return False
        # The leader's metadata may trail ours (or ours theirs): retry after the backoff; a
        # newer metadata record moves the partition to another fetcher if the leader changed.
        log.info("replica_fetch_refused", **self._about(partition, error=error.name))
        return False

    def _about(self, partition: Partition, **more: object) -> dict[str, object]:
        """The fields of an event about one partition this fetcher fetches, and `more`."""
        return {
            "topic": partition.topic,
            "partition": partition.partition_id,
            "leader_id": self.leader_id,
            "leader_epoch": partition.leader_epoch,
            **more,
        }

    def _restart_in_range(self, partition: Partition, answer: FetchAnswer) -> None:
        if partition.log_end_offset < answer.log_start_offset:
            # The leader deleted what we would fetch next: start again at its log start.
            partition.restart_at(answer.log_start_offset)
        else:
            # Ahead of the leader: what is above its high watermark was never committed.
            partition.truncate_to(max(answer.high_watermark, partition.log_start_offset))
        log.warning(
            "replica_fetch_offset_out_of_range",
            **self._about(
                partition,
                leader_log_start_offset=answer.log_start_offset,
                leader_high_watermark=answer.high_watermark,
                log_end_offset=partition.log_end_offset,
            ),
        )


def _position(partition: Partition) -> FetchPosition:
    latest_epoch = partition.latest_epoch
    return FetchPosition(
        fetch_offset=partition.log_end_offset,
        current_leader_epoch=partition.leader_epoch,
        last_fetched_epoch=-1 if latest_epoch is None else latest_epoch,
        log_start_offset=partition.log_start_offset,
    )


class _AsSent(Mapping[PartitionKey, Partition]):
    """The partitions a fetcher held when it sent a Fetch (a view): those it holds now, but
    for the keys `replaced` (added or removed since) says what they were then."""

    def __init__(
        self,
        held: Mapping[PartitionKey, Partition],
        replaced: Mapping[PartitionKey, Partition | None],
    ) -> None:
        self._held = held
        self._replaced = replaced

    def __getitem__(self, key: PartitionKey) -> Partition:
        if key not in self._replaced:
            return self._held[key]
        partition = self._replaced[key]
        if partition is None:
            raise KeyError(key)
        return partition

    def __iter__(self) -> Iterator[PartitionKey]:
        yield from (key for key in self._held if key not in self._replaced)
        yield from (key for key, partition in self._replaced.items() if partition is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)


class _SentEpochs(Mapping[PartitionKey, int]):
    """The leader epoch each partition of the session was last fetched at (a view)."""

    def __init__(self, sent: Mapping[PartitionKey, FetchPosition]) -> None:
        self._sent = sent

    def __getitem__(self, key: PartitionKey) -> int:
        return self._sent[key].current_leader_epoch

    def __iter__(self) -> Iterator[PartitionKey]:
        return iter(self._sent)

    def __len__(self) -> int:
        return len(self._sent)


class ReplicaFetcherManager:
    """The fetchers of broker `broker_id`, one per leader, sharing the follower `quota`;
    `address_of` gives a broker's client listener (None if it has none registered)."""

    def __init__(
        self,
        broker_id: int,
        address_of: Callable[[int], tuple[str, int] | None],
        quota: ReplicationQuota | None = None,
        ssl_context: ssl.SSLContext | None = None,
        *,
        sasl: SaslClientCredentials | None = None,
    ) -> None:
        self.broker_id = broker_id
        self._sasl = sasl
        self._address_of = address_of
        # TLS to the leaders when the listener brokers replicate on has it.
        self._ssl_context = ssl_context
        self._quota = ReplicationQuota() if quota is None else quota
        self._fetchers: dict[int, ReplicaFetcher] = {}
        self._following: dict[tuple[str, int], int] = {}

    def follow(self, partition: Partition, leader_id: int) -> None:
        """Fetch `partition` from `leader_id` (moving it from its previous leader's fetcher);
        re-adds it after a refusal once the metadata changed."""
        key = (partition.topic, partition.partition_id)
        previous = self._following.get(key)
        if previous is not None and previous != leader_id:
            self._fetchers[previous].remove(partition)
        fetcher = self._fetchers.get(leader_id)
        if fetcher is None:
            address = self._address_of(leader_id)
            if address is None:
                return
            fetcher = self._fetchers[leader_id] = ReplicaFetcher(
                self.broker_id,
                leader_id,
                address,
                self._quota,
                self._ssl_context,
                self._sasl,
            )
            fetcher.start()
        fetcher.add(partition)
        self._following[key] = leader_id

    def unfollow(self, partition: Partition) -> None:
        key = (partition.topic, partition.partition_id)
        leader_id = self._following.pop(key, None)
        if leader_id is not None:
            self._fetchers[leader_id].remove(partition)

    async def stop(self) -> None:
        for fetcher in self._fetchers.values():
            await fetcher.stop()
        self._fetchers.clear()

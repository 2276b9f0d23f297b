"""An asyncio producer on `ClusterClient`: batching per partition, retries, and idempotence.

Records are appended (synchronously, so a caller can feed many without awaiting each) to an
open batch per partition; a batch closes when it reaches `batch_size` bytes, when `linger_ms`
has passed since its first record, or on `flush`. Closed batches go to the partition's leader,
at most `max_in_flight` requests per partition at once.

Idempotence (the default, as in Kafka): the producer takes a producer id and epoch
(InitProducerId) and numbers each partition's records from 0. A batch keeps its producer id,
epoch and base sequence for life, and a retry resends the very same bytes, so a broker that
already appended it answers with its original offset instead of appending it twice. After a
failure, the failed batch and every batch behind it are resent in order (a broker refuses a
sequence that skips ahead).
"""

from __future__ import annotations

import asyncio
import datetime
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog
from kio.schema.errors import ErrorCode

from net.api_keys import ApiKey
from net.client import ClusterClient, KafkaConnectionError, RequestTimedOutError
from net.protocol import ProtocolError, field_entity_type, make_entity, request_schema
from net.record_batch import Compression
from net.records import Record, encode_batch
from net.topic_metadata import TopicMetadata, fetch_topic_metadata

log = structlog.get_logger(__name__)

_MAX_SEQUENCE = 2**31 - 1
# Per-record overhead beyond key and value, for sizing batches before they are encoded.
_RECORD_OVERHEAD = 16
_PRODUCE_MIN_VERSION = 3


@dataclass(frozen=True, slots=True)
class ProducerConfig:
    """Settings with the meaning of Kafka's producer configs of the same names.

    `acks` -1 is `all`. Idempotence needs acks=all. `batch_size` is larger than Kafka's
    16 KiB default: per-request costs are higher in Python than on the JVM.
    """

    acks: int = -1
    compression: Compression = Compression.NONE
    linger_ms: int = 5
    batch_size: int = 512 * 1024
    max_in_flight: int = 5
    retry_backoff_ms: int = 100
    delivery_timeout_ms: int = 120_000
    request_timeout_ms: int = 30_000
    buffer_memory: int = 32 * 1024 * 1024
    idempotent: bool = True

    def __post_init__(self) -> None:
        if self.idempotent and self.acks != -1:
            raise ValueError("an idempotent producer needs acks=all (-1)")
        if self.acks not in (-1, 0, 1):
            raise ValueError(f"acks must be -1 (all), 0 or 1, not {self.acks}")


class ProducerError(Exception):
    """A batch could not be delivered (a non-retriable error, or its delivery timeout passed)."""


@dataclass(slots=True)
class _Batch:
    topic: str
    partition: int
    records: list[Record] = field(default_factory=list)
    size: int = 0
    created: float = field(default_factory=time.monotonic)
    encoded: bytes = b""
    record_count: int = 0
    attempts: int = 0


@dataclass(frozen=True, slots=True)
class _Failure:
    reason: str
    retriable: bool


@dataclass(slots=True)
class _PartitionState:
    open: _Batch | None = None
    queue: deque[_Batch] = field(default_factory=deque)
    sender: asyncio.Task[None] | None = None
    next_sequence: int = 0


class Producer:
    """Sends records to the leaders of their partitions; see the module docstring.

    Call `start` first, `append` per record, `wait_for_room` now and then (it applies the
    `buffer_memory` bound and raises a delivery failure), and `flush` at the end. A failure
    is raised by the next `append`, `wait_for_room` or `flush`.
    """

    def __init__(self, cluster: ClusterClient, config: ProducerConfig) -> None:
        self._cluster = cluster
        self._config = config
        self._producer_id = -1
        self._producer_epoch = -1
        self._partitions: dict[tuple[str, int], _PartitionState] = {}
        self._metadata = TopicMetadata()
        self._buffered = 0
        self._room = asyncio.Event()
        self._room.set()
        self._failure: ProducerError | None = None
        self.records_sent = 0

    @property
    def producer_id(self) -> int:
        return self._producer_id

    @property
    def producer_epoch(self) -> int:
        return self._producer_epoch

    async def start(self) -> None:
        """Take a producer id and epoch (idempotent producers only)."""
        if not self._config.idempotent:
            return
        schema = request_schema(ApiKey.INIT_PRODUCER_ID, 0)
        assert schema is not None
        deadline = time.monotonic() + self._config.delivery_timeout_ms / 1000
        while True:
            response: Any = await self._cluster.send_any(
                make_entity(
                    schema,
                    transactional_id=None,
                    transaction_timeout=datetime.timedelta(minutes=1),
                    producer_id=-1,
                    producer_epoch=-1,
                ),
                timeout=self._config.request_timeout_ms / 1000,
            )
            error = ErrorCode(response.error_code)
            if error is ErrorCode.none:
                self._producer_id = response.producer_id
                self._producer_epoch = response.producer_epoch
                log.debug("producer_id_assigned", producer_id=self._producer_id)
                return
            if not error.retriable or time.monotonic() > deadline:
                raise ProducerError(f"InitProducerId failed: {error.name}")
            await asyncio.sleep(self._config.retry_backoff_ms / 1000)

    async def partition_count(self, topic: str) -> int:
        """How many partitions `topic` has; ProducerError if it does not exist."""
        partitions = self._metadata.topics.get(topic)
        if partitions is None:
            await self._refresh_metadata([topic])
            partitions = self._metadata.topics.get(topic)
            if partitions is None:
                raise ProducerError(f"topic {topic!r} does not exist")
        return len(partitions)

    def append(self, topic: str, partition: int, record: Record) -> None:
        """Add `record` to the open batch of `topic`-`partition` (ProducerError: an earlier
        batch failed)."""
        self.extend(topic, partition, (record,))

    def extend(self, topic: str, partition: int, records: Sequence[Record]) -> None:
        """Add `records`, in order, to the open batches of `topic`-`partition`: `append` for
        many records at the cost of one call (ProducerError: an earlier batch failed)."""
        if self._failure is not None:
            raise self._failure
        state = self._partitions.get((topic, partition))
        if state is None:
            state = self._partitions[(topic, partition)] = _PartitionState()
        batch_size = self._config.batch_size
        added = 0
        batch = state.open
        for record in records:
            if batch is None:
                batch = state.open = self._open_batch(state, topic, partition)
            batch.records.append(record)
            size = _RECORD_OVERHEAD + len(record.value or b"") + len(record.key or b"")
            if record.headers:
                size += sum(len(h.key) + len(h.value or b"") + 2 for h in record.headers)
            batch.size += size
            added += size
            if batch.size >= batch_size:
                self._close(state)
                batch = None
        self._buffered += added
        if self._buffered >= self._config.buffer_memory:
            self._room.clear()

    def _open_batch(self, state: _PartitionState, topic: str, partition: int) -> _Batch:
        batch = _Batch(topic, partition)
        # linger.ms 0 still gathers the records appended before the event loop next runs.
        asyncio.get_running_loop().call_later(
            self._config.linger_ms / 1000, self._linger_expired, state, batch
        )
        return batch

    async def wait_for_room(self) -> None:
        """Wait until the bytes of unsent and unacknowledged batches fall below
        `buffer_memory`; raises a delivery failure."""
        while not self._room.is_set() and self._failure is None:
            await self._room.wait()
        if self._failure is not None:
            raise self._failure

    async def flush(self) -> None:
        """Send every open batch and wait until all are acknowledged; raises a failure."""
        for state in self._partitions.values():
            self._close(state)
        senders = [s.sender for s in self._partitions.values() if s.sender is not None]
        if senders:
            await asyncio.gather(*senders, return_exceptions=True)
        if self._failure is not None:
            raise self._failure

    async def close(self) -> None:
        """Stop sending (unsent batches are dropped)."""
        for state in self._partitions.values():
            if state.sender is not None:
                state.sender.cancel()

    def _linger_expired(self, state: _PartitionState, batch: _Batch) -> None:
        if state.open is batch:
            self._close(state)

    def _close(self, state: _PartitionState) -> None:
        batch = state.open
        if batch is None:
            return
        state.open = None
        sequence = -1
        if self._config.idempotent:
            sequence = state.next_sequence
            state.next_sequence = (sequence + len(batch.records)) % (_MAX_SEQUENCE + 1)
        batch.encoded = encode_batch(
            batch.records,
            compression=self._config.compression,
            producer_id=self._producer_id,
            producer_epoch=self._producer_epoch,
            base_sequence=sequence,
        )
        batch.record_count = len(batch.records)
        batch.records = []
        state.queue.append(batch)
        if state.sender is None or state.sender.done():
            state.sender = asyncio.get_running_loop().create_task(self._send_queue(state))

    async def _send_queue(self, state: _PartitionState) -> None:
        """Send the partition's batches in order, `max_in_flight` at a time, until none is
        left; after a failure, resend from the failed batch on."""
        queue = state.queue
        try:
            while queue and self._failure is None:
                window = [queue[i] for i in range(min(self._config.max_in_flight, len(queue)))]
                results = await asyncio.gather(*(self._send(batch) for batch in window))
                for batch, failure in zip(window, results, strict=True):
                    if failure is not None:
                        await self._after_failure(batch, failure)
                        break
                    queue.popleft()
                    self._delivered(batch)
        except ProducerError as failure:
            self._fail(failure)
        except Exception as unexpected:  # a bug or a broken connection state: fail loudly
            self._fail(ProducerError(f"producer failed: {unexpected!r}"))

    async def _after_failure(self, batch: _Batch, failure: _Failure) -> None:
        batch.attempts += 1
        elapsed_ms = (time.monotonic() - batch.created) * 1000
        if not failure.retriable or elapsed_ms > self._config.delivery_timeout_ms:
            raise ProducerError(
                f"batch for {batch.topic}-{batch.partition} not delivered after "
                f"{batch.attempts} attempts: {failure.reason}"
            )
        log.info(
            "produce_retry",
            topic=batch.topic,
            partition=batch.partition,
            attempt=batch.attempts,
            error=failure.reason,
        )
        await asyncio.sleep(self._config.retry_backoff_ms / 1000)
        await self._refresh_metadata([batch.topic])

    async def _send(self, batch: _Batch) -> _Failure | None:
        """Send one batch; None when it is in the log, else why not."""
        leader = self._metadata.leader(batch.topic, batch.partition)
        if leader is None:
            await self._refresh_metadata([batch.topic])
            leader = self._metadata.leader(batch.topic, batch.partition)
        if leader is None or leader.leader_id < 0 or leader.leader_id not in self._cluster.brokers:
            return _Failure(f"no known leader for {batch.topic}-{batch.partition}", True)
        connection = self._cluster.connection(leader.leader_id)
        try:
            await connection.connect()
            version = connection.version_for(ApiKey.PRODUCE, _PRODUCE_MIN_VERSION)
            response: Any = await connection.send(
                _produce_request(version, self._config, batch),
                timeout=self._config.request_timeout_ms / 1000,
            )
        except (KafkaConnectionError, RequestTimedOutError, ProtocolError) as error:
            return _Failure(f"{type(error).__name__}: {error}", True)
        if response is None:  # acks=0
            return None
        answer = response.responses[0].partition_responses[0]
        code = ErrorCode(answer.error_code)
        if code is ErrorCode.none or code is ErrorCode.duplicate_sequence_number:
            return None
        # Out of order: an earlier batch of the window failed and is resent first.
        retriable = code.retriable or code is ErrorCode.out_of_order_sequence_number
        detail = f" ({answer.error_message})" if answer.error_message else ""
        return _Failure(code.name + detail, retriable)

    def _delivered(self, batch: _Batch) -> None:
        self._buffered -= batch.size
        self.records_sent += batch.record_count
        if self._buffered < self._config.buffer_memory:
            self._room.set()

    def _fail(self, failure: ProducerError) -> None:
        if self._failure is None:
            self._failure = failure
        self._room.set()

    async def _refresh_metadata(self, topics: Sequence[str]) -> None:
        try:
            fresh = await fetch_topic_metadata(self._cluster, topics)
        except KafkaConnectionError as error:
            log.info("producer_metadata_failed", error=str(error))
            return
        merged = dict(self._metadata.topics)
        merged.update(fresh.topics)
        for topic in fresh.missing:
            merged.pop(topic, None)
        self._metadata = TopicMetadata(merged, fresh.missing)


def _produce_request(version: int, config: ProducerConfig, batch: _Batch) -> Any:
    schema = request_schema(ApiKey.PRODUCE, version)
    assert schema is not None
    topic_type = field_entity_type(schema, "topic_data")
    partition_type = field_entity_type(topic_type, "partition_data")
    return make_entity(
        schema,
        transactional_id=None,
        acks=config.acks,
        timeout=datetime.timedelta(milliseconds=config.request_timeout_ms),
        topic_data=(
            make_entity(
                topic_type,
                name=batch.topic,
                partition_data=(
                    make_entity(partition_type, index=batch.partition, records=batch.encoded),
                ),
            ),
        ),
    )

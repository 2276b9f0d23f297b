"""Blocking access to the cluster for Spark's synchronous callbacks: partitions of a
subscription, offsets (earliest, latest, by timestamp), and fetching an offset range.

A `BrokerSession` owns a private asyncio event loop and a `net` ClusterClient on it, both made
on first use, so the Spark objects that hold one stay picklable until then (and drop it when
pickled). Errors that mean lost data are DataLossError; the caller decides whether to fail.
"""

from __future__ import annotations

import asyncio
import datetime
import time
from collections.abc import AsyncGenerator, Coroutine, Iterator, Mapping, Sequence
from typing import Any, NamedTuple, TypeVar

import structlog
from kio.schema.errors import ErrorCode

from net.api_keys import ApiKey
from net.client import ClusterClient, KafkaConnectionError, RequestTimedOutError
from net.protocol import ProtocolError, field_entity_type, make_entity, request_schema
from net.record_batch import HEADER_SIZE, read_header
from net.tls import client_context
from net.topic_metadata import TopicMetadata, fetch_topic_metadata
from spark_connector.options import ClientSettings, Subscription
from spark_connector.planning import OffsetRange, PartitionOffsets, TopicPartition

log = structlog.get_logger(__name__)

# Fetch v13+ names topics by id; v4-12 by name, which is all this reader needs.
_FETCH_VERSIONS = (4, 12)
_LIST_OFFSETS_VERSIONS = (1, 7)
_FETCH_MAX_BYTES = 64 * 1024 * 1024
_RETRY_BACKOFF_S = 0.1
# Errors after which the partition's leader is looked up again and the request retried (until
# the request timeout): leadership moving, or a leader that cannot answer right now.
_RETRIABLE_ERRORS = frozenset(
    {
        ErrorCode.not_leader_or_follower,
        ErrorCode.leader_not_available,
        ErrorCode.unknown_leader_epoch,
        ErrorCode.fenced_leader_epoch,
        ErrorCode.kafka_storage_error,
        ErrorCode.not_enough_replicas,
        ErrorCode.request_timed_out,
    }
)

_T = TypeVar("_T")


class FetchedBatches(NamedTuple):
    """Whole record batches as fetched, and the offsets [start, end) of them to read."""

    records: bytes
    start: int
    end: int


class DataLossError(Exception):
    """Offsets a query must read no longer exist (deleted topic, data deleted by retention)."""


class BrokerError(Exception):
    """The cluster could not answer within the request timeout, or answered with an error."""


class BrokerSession:
    """See the module docstring. Not thread-safe; one per Spark task or driver object."""

    def __init__(self, bootstrap_servers: str, client: ClientSettings) -> None:
        self._bootstrap_servers = bootstrap_servers
        self._settings = client
        self._loop: asyncio.AbstractEventLoop | None = None
        self._cluster: ClusterClient | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"bootstrap_servers": self._bootstrap_servers, "settings": self._settings}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["bootstrap_servers"], state["settings"])  # type: ignore[misc]

    def _run(self, work: Coroutine[Any, Any, _T]) -> _T:
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        return self._loop.run_until_complete(work)

    async def _client(self) -> ClusterClient:
        if self._cluster is None:
            tls = self._settings.tls
            cluster = ClusterClient(
                self._bootstrap_servers,
                client_id=self._settings.client_id,
                request_timeout=self._settings.request_timeout_ms / 1000,
                ssl_context=None if tls is None else client_context(tls),
                sasl=self._settings.sasl,
            )
            await cluster.bootstrap()
            self._cluster = cluster
        return self._cluster

    def close(self) -> None:
        if self._loop is None:
            return
        if self._cluster is not None:
            self._loop.run_until_complete(self._cluster.close())
            self._cluster = None
        self._loop.close()
        self._loop = None

    @property
    def _deadline(self) -> float:
        return time.monotonic() + self._settings.request_timeout_ms / 1000

    # -- metadata --------------------------------------------------------------------------------

    def partitions(self, subscription: Subscription) -> list[TopicPartition]:
        """The existing partitions of the subscription, sorted."""
        return self._run(self._partitions(subscription))

    async def _partitions(self, subscription: Subscription) -> list[TopicPartition]:
        metadata = await self._metadata(subscription.topics_to_describe())
        return subscription.select({t: len(ps) for t, ps in metadata.topics.items()})

    async def _metadata(self, topics: Sequence[str] | None) -> TopicMetadata:
        cluster = await self._client()
        try:
            return await fetch_topic_metadata(cluster, topics)
        except (KafkaConnectionError, RequestTimedOutError) as error:
            message = f"cannot read metadata from {self._bootstrap_servers}: {error}"
            raise BrokerError(message) from error

    # -- offsets ---------------------------------------------------------------------------------

    def list_offsets(
        self, asked: Mapping[TopicPartition, int]
    ) -> tuple[PartitionOffsets, list[TopicPartition]]:
        """For each partition, the offset ListOffsets answers to its value (-2 earliest, -1
        latest, else a timestamp: the first offset at or after it, -1 if none); and the asked
        partitions that no longer exist."""
        return self._run(self._list_offsets(asked))

    async def _list_offsets(
        self, asked: Mapping[TopicPartition, int]
    ) -> tuple[PartitionOffsets, list[TopicPartition]]:
        found: PartitionOffsets = {}
        gone: list[TopicPartition] = []
        pending = dict(asked)
        deadline = self._deadline
        while pending:
            metadata = await self._metadata(sorted({tp.topic for tp in pending}))
            by_leader: dict[int, list[TopicPartition]] = {}
            for tp in sorted(pending):
                leader = metadata.leader(tp.topic, tp.partition)
                if leader is None:
                    gone.append(tp)
                    del pending[tp]
                elif leader.leader_id >= 0:
                    by_leader.setdefault(leader.leader_id, []).append(tp)
            answers = await asyncio.gather(
                *(
                    self._list_offsets_at(node, {tp: pending[tp] for tp in tps})
                    for node, tps in by_leader.items()
                )
            )
            for answered, vanished in answers:
                found.update(answered)
                gone.extend(vanished)
                for tp in [*answered, *vanished]:
                    del pending[tp]
            if pending:
                if time.monotonic() > deadline:
                    raise BrokerError(
                        "no leader answered ListOffsets for "
                        + ", ".join(str(tp) for tp in sorted(pending))
                    )
                await asyncio.sleep(_RETRY_BACKOFF_S)
        return found, sorted(gone)

    async def _list_offsets_at(
        self, node_id: int, asked: Mapping[TopicPartition, int]
    ) -> tuple[PartitionOffsets, list[TopicPartition]]:
        """Offsets from one leader, and the partitions it says are gone; partitions in neither
        are to be asked again."""
        cluster = await self._client()
        connection = cluster.connection(node_id)
        try:
            await connection.connect()
            version = connection.version_for(ApiKey.LIST_OFFSETS, *_LIST_OFFSETS_VERSIONS)
            response: Any = await connection.send(_list_offsets_request(version, asked))
        except (KafkaConnectionError, RequestTimedOutError, ProtocolError) as error:
            log.info("list_offsets_retry", node=node_id, error=str(error))
            return {}, []
        found: PartitionOffsets = {}
        gone: list[TopicPartition] = []
        for topic in response.topics:
            for partition in topic.partitions:
                tp = TopicPartition(topic.name, partition.partition_index)
                code = ErrorCode(partition.error_code)
                if code is ErrorCode.none:
                    found[tp] = partition.offset
                elif code is ErrorCode.unknown_topic_or_partition:
                    gone.append(tp)
                elif code not in _RETRIABLE_ERRORS:
                    raise BrokerError(f"ListOffsets for {tp} failed: {code.name}")
        return found, gone

    # -- fetch -----------------------------------------------------------------------------------

    def read_range(
        self, offset_range: OffsetRange, *, fail_on_data_loss: bool
    ) -> Iterator[FetchedBatches]:
        """The record batches holding `offset_range`, in offset order, a fetch response's
        worth at a time.

        Offsets the log no longer holds (the topic was deleted, or the log start moved past
        them) raise DataLossError when `fail_on_data_loss`, and are skipped with a warning
        otherwise.
        """
        chunks = self._fetch_range(offset_range, fail_on_data_loss)
        try:
            while True:
                try:
                    yield self._run(chunks.__anext__())
                except StopAsyncIteration:
                    return
        finally:
            self._run(chunks.aclose())

    async def _fetch_range(
        self, offset_range: OffsetRange, fail_on_data_loss: bool
    ) -> AsyncGenerator[FetchedBatches]:
        tp = offset_range.topic_partition
        cursor = offset_range.start
        deadline = self._deadline
        leader_id = -1
        # The next Fetch, sent before the caller decodes this one's records, so the broker
        # works on it meanwhile: (leader, offset, request).
        ahead: tuple[int, int, asyncio.Task[Any | None]] | None = None
        try:
            while cursor < offset_range.end:
                if leader_id < 0:
                    metadata = await self._metadata([tp.topic])
                    leader = metadata.leader(tp.topic, tp.partition)
                    if leader is None:
                        _data_lost(
                            f"partition {tp} is gone (its topic was deleted?) before offsets "
                            f"{cursor}..{offset_range.end - 1} were read",
                            fail_on_data_loss,
                        )
                        return
                    leader_id = leader.leader_id
                if ahead is not None and ahead[:2] == (leader_id, cursor):
                    answer = await ahead[2]
                else:
                    answer = (
                        await self._fetch_once(leader_id, tp, cursor) if leader_id >= 0 else None
                    )
                ahead = None
                code = ErrorCode.leader_not_available if answer is None else answer.error_code
                if code is ErrorCode.unknown_topic_or_partition or code in _RETRIABLE_ERRORS:
                    # Look the leader up again; a deleted topic shows there as gone.
                    leader_id = -1
                    if time.monotonic() > deadline:
                        raise BrokerError(f"no leader of {tp} answered Fetch in time ({code.name})")
                    await asyncio.sleep(_RETRY_BACKOFF_S)
                    continue
                assert answer is not None
                if code is ErrorCode.offset_out_of_range and cursor < answer.log_start_offset:
                    _data_lost(
                        f"offsets {cursor}..{answer.log_start_offset - 1} of partition {tp} "
                        f"were deleted before they were read (the log now starts at "
                        f"{answer.log_start_offset})",
                        fail_on_data_loss,
                    )
                    cursor = answer.log_start_offset
                    continue
                if code is not ErrorCode.none:
                    raise BrokerError(f"Fetch of {tp} at offset {cursor} failed: {code.name}")
                records = answer.records or b""
                first = cursor
                position = 0
                while len(records) - position >= HEADER_SIZE:
                    header = read_header(records, position)
                    if header.size > len(records) - position:
                        break  # a partial batch ends the response
                    cursor = max(cursor, header.next_offset)
                    position += header.size
                if position:
                    deadline = self._deadline
                    if cursor < offset_range.end:
                        request = asyncio.ensure_future(self._fetch_once(leader_id, tp, cursor))
                        ahead = (leader_id, cursor, request)
                        # Two loop turns: the task writes its request, the write is flushed.
                        await asyncio.sleep(0)
                        await asyncio.sleep(0)
                    whole = records if position == len(records) else records[:position]
                    yield FetchedBatches(whole, first, min(cursor, offset_range.end))
                    continue
                if time.monotonic() > deadline:
                    if answer.high_watermark > cursor:
                        raise BrokerError(
                            f"fetching {tp} from offset {cursor} returned no batch before its "
                            f"high watermark {answer.high_watermark}"
                        )
                    _data_lost(
                        f"offsets {cursor}..{offset_range.end - 1} of partition {tp} are not "
                        f"in the log (its high watermark is {answer.high_watermark})",
                        fail_on_data_loss,
                    )
                    return
        finally:
            if ahead is not None:
                ahead[2].cancel()
                await asyncio.gather(ahead[2], return_exceptions=True)

    async def _fetch_once(self, leader_id: int, tp: TopicPartition, offset: int) -> Any | None:
        """One partition's part of a Fetch answer from its leader, or None to retry."""
        cluster = await self._client()
        if leader_id not in cluster.brokers:
            return None
        connection = cluster.connection(leader_id)
        settings = self._settings
        try:
            await connection.connect()
            version = connection.version_for(ApiKey.FETCH, *_FETCH_VERSIONS)
            response: Any = await connection.send(
                _fetch_request(
                    version,
                    tp,
                    offset,
                    settings.max_partition_fetch_bytes,
                    settings.fetch_max_wait_ms,
                ),
                timeout=settings.request_timeout_ms / 1000 + settings.fetch_max_wait_ms / 1000,
            )
        except (KafkaConnectionError, RequestTimedOutError, ProtocolError) as error:
            log.info("fetch_retry", partition=str(tp), error=str(error))
            return None
        return response.responses[0].partitions[0]


def _data_lost(message: str, fail: bool) -> None:
    if fail:
        raise DataLossError(
            message + ". Set the option failOnDataLoss to false to skip lost data instead."
        )
    log.warning("kraft_data_lost", message=message)


def _list_offsets_request(version: int, asked: Mapping[TopicPartition, int]) -> Any:
    schema = request_schema(ApiKey.LIST_OFFSETS, version)
    assert schema is not None
    topic_type = field_entity_type(schema, "topics")
    partition_type = field_entity_type(topic_type, "partitions")
    by_topic: dict[str, list[Any]] = {}
    for tp, timestamp in sorted(asked.items()):
        by_topic.setdefault(tp.topic, []).append(
            make_entity(
                partition_type,
                partition_index=tp.partition,
                current_leader_epoch=-1,
                timestamp=timestamp,
            )
        )
    return make_entity(
        schema,
        replica_id=-1,
        isolation_level=0,
        topics=tuple(
            make_entity(topic_type, name=topic, partitions=tuple(partitions))
            for topic, partitions in by_topic.items()
        ),
    )


def _fetch_request(
    version: int, tp: TopicPartition, offset: int, partition_max_bytes: int, max_wait_ms: int
) -> Any:
    schema = request_schema(ApiKey.FETCH, version)
    assert schema is not None
    topic_type = field_entity_type(schema, "topics")
    partition_type = field_entity_type(topic_type, "partitions")
    return make_entity(
        schema,
        replica_id=-1,
        max_wait=datetime.timedelta(milliseconds=max_wait_ms),
        min_bytes=1,
        max_bytes=_FETCH_MAX_BYTES,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=(
            make_entity(
                topic_type,
                topic=tp.topic,
                partitions=(
                    make_entity(
                        partition_type,
                        partition=tp.partition,
                        current_leader_epoch=-1,
                        fetch_offset=offset,
                        last_fetched_epoch=-1,
                        log_start_offset=-1,
                        partition_max_bytes=partition_max_bytes,
                    ),
                ),
            ),
        ),
        forgotten_topics_data=(),
        rack_id="",
    )

"""Produce, Fetch and ListOffsets on the client listener: kio requests to the replicas and back.

ListOffsets v1-v10 answers on the leader (earliest, latest, max timestamp, by timestamp);
OffsetForLeaderEpoch v2-v4 gives the end of a leader epoch (librdkafka validates its position
with it after a leader change).
Produce v3-v10 is served (magic v2 batches); v0-v2 are advertised and refused with
UNSUPPORTED_VERSION, as Kafka 4 does (KAFKA-18659: old librdkafka, kcat included, enables
compression only when Produce v0 is advertised). Fetch v4-v16 is served, with KIP-227 fetch
sessions from v7 on (`broker.fetch_sessions`): an incremental fetch reads only the partitions
of its session that may have something new and waits on a change of any of them. Fetch
responses are encoded by `net.fetch_response` with the record bytes as the log stores them.
"""

from __future__ import annotations

import asyncio
import typing
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias, TypeVar
from uuid import UUID

import structlog
from kio.schema.errors import ErrorCode
from kio.static.protocol import Payload

from broker.fetch_session_handler import FINAL_EPOCH
from broker.fetch_sessions import (
    FetchContext,
    FetchSessionCache,
    RequestedPartition,
    SessionKey,
)
from broker.partition import Partition, wake_waiter
from broker.replica_manager import (
    FetchPartition,
    FetchResult,
    ProduceResult,
    ReplicaManager,
)
from controller.acls import AclOperation, Authorizer, ResourceType
from controller.topics import INTERNAL_TOPICS
from net import messages
from net.api_keys import ApiKey
from net.api_registry import ApiRegistry, PreEncodedResponse, RequestContext
from net.buffer_gatherer import Buffer
from net.fetch_response import PartitionFetched, encode_fetch_answers
from net.produce_response import PartitionProduced, encode_produce_response
from net.protocol import NO_THROTTLE, field_entity_type, make_entity

log = structlog.get_logger(__name__)

PRODUCE_VERSIONS = (3, 10)
FETCH_VERSIONS = (4, 16)
LIST_OFFSETS_VERSIONS = (1, 10)
OFFSET_FOR_LEADER_EPOCH_VERSIONS = (2, 4)
_VALID_ACKS = (-1, 0, 1)
# The first Produce version whose answers carry record errors.
_PRODUCE_RECORD_ERRORS = 8

# The versions of each message that have the field named: their classes are imported for the
# type checker only (kio's 13 Fetch and 7 ListOffsets versions took ~0.1 s of every node's
# start); at run time the request's version says which fields it has (the `_has_*` guards).
if TYPE_CHECKING:
    from kio.schema.fetch import v4 as fetch_v4
    from kio.schema.fetch import v5 as fetch_v5
    from kio.schema.fetch import v6 as fetch_v6
    from kio.schema.fetch import v7 as fetch_v7
    from kio.schema.fetch import v8 as fetch_v8
    from kio.schema.fetch import v9 as fetch_v9
    from kio.schema.fetch import v10 as fetch_v10
    from kio.schema.fetch import v11 as fetch_v11
    from kio.schema.fetch import v12 as fetch_v12
    from kio.schema.fetch import v13 as fetch_v13
    from kio.schema.fetch import v14 as fetch_v14
    from kio.schema.fetch import v15 as fetch_v15
    from kio.schema.fetch import v16 as fetch_v16
    from kio.schema.list_offsets import v4 as list_offsets_v4
    from kio.schema.list_offsets import v5 as list_offsets_v5
    from kio.schema.list_offsets import v6 as list_offsets_v6
    from kio.schema.list_offsets import v7 as list_offsets_v7
    from kio.schema.list_offsets import v8 as list_offsets_v8
    from kio.schema.list_offsets import v9 as list_offsets_v9
    from kio.schema.list_offsets import v10 as list_offsets_v10
    from typing_extensions import TypeIs

    # Each later field's versions are a subset of an earlier one's: the unions nest.
    _FetchWithReplicaState: TypeAlias = fetch_v15.FetchRequest | fetch_v16.FetchRequest
    # Fetch v7 on have sessions: every served version but these.
    _FetchWithoutSession: TypeAlias = (
        fetch_v4.FetchRequest | fetch_v5.FetchRequest | fetch_v6.FetchRequest
    )
    _FetchByTopicId: TypeAlias = (
        fetch_v13.FetchRequest | fetch_v14.FetchRequest | _FetchWithReplicaState
    )
    _FetchWithRackId: TypeAlias = fetch_v11.FetchRequest | fetch_v12.FetchRequest | _FetchByTopicId
    _FetchPartitionWithLastFetchedEpoch: TypeAlias = (
        fetch_v12.request.FetchPartition
        | fetch_v13.request.FetchPartition
        | fetch_v14.request.FetchPartition
        | fetch_v15.request.FetchPartition
        | fetch_v16.request.FetchPartition
    )
    _FetchPartitionWithLeaderEpoch: TypeAlias = (
        fetch_v9.request.FetchPartition
        | fetch_v10.request.FetchPartition
        | fetch_v11.request.FetchPartition
        | _FetchPartitionWithLastFetchedEpoch
    )
    _FetchPartitionWithLogStart: TypeAlias = (
        fetch_v5.request.FetchPartition
        | fetch_v6.request.FetchPartition
        | fetch_v7.request.FetchPartition
        | fetch_v8.request.FetchPartition
        | _FetchPartitionWithLeaderEpoch
    )
    _ListOffsetsPartitionWithLeaderEpoch: TypeAlias = (
        list_offsets_v4.request.ListOffsetsPartition
        | list_offsets_v5.request.ListOffsetsPartition
        | list_offsets_v6.request.ListOffsetsPartition
        | list_offsets_v7.request.ListOffsetsPartition
        | list_offsets_v8.request.ListOffsetsPartition
        | list_offsets_v9.request.ListOffsetsPartition
        | list_offsets_v10.request.ListOffsetsPartition
    )


# The first version of each message with the field named.
_FETCH_REPLICA_STATE = 15
_FETCH_SESSIONS = 7
_FETCH_RACK_ID = 11
_FETCH_TOPIC_IDS = 13
_FETCH_LOG_START_OFFSET = 5
_FETCH_CURRENT_LEADER_EPOCH = 9
_FETCH_LAST_FETCHED_EPOCH = 12
_LIST_OFFSETS_CURRENT_LEADER_EPOCH = 4


def _has_replica_state(
    request: messages.FetchRequest, version: int
) -> TypeIs[_FetchWithReplicaState]:
    return version >= _FETCH_REPLICA_STATE


def _has_no_session(request: messages.FetchRequest, version: int) -> TypeIs[_FetchWithoutSession]:
    return version < _FETCH_SESSIONS


def _has_rack_id(request: messages.FetchRequest, version: int) -> TypeIs[_FetchWithRackId]:
    return version >= _FETCH_RACK_ID


def _has_topic_ids(request: messages.FetchRequest, version: int) -> TypeIs[_FetchByTopicId]:
    return version >= _FETCH_TOPIC_IDS


_Response = TypeVar("_Response", bound=Payload)
_Asked = TypeVar("_Asked")


class _EpochQuery(typing.Protocol):
    """A partition of an OffsetForLeaderEpochRequest, as every served version has it."""

    @property
    def partition(self) -> int: ...

    @property
    def current_leader_epoch(self) -> int: ...

    @property
    def leader_epoch(self) -> int: ...


class _OffsetQuery(typing.Protocol):
    """A partition of a ListOffsetsRequest: the fields every served version has."""

    @property
    def partition_index(self) -> int: ...

    @property
    def timestamp(self) -> int: ...


class DataApis:
    """Produce and Fetch over `replicas`."""

    def __init__(
        self,
        replicas: ReplicaManager,
        authorizer: Authorizer | None = None,
        sessions: FetchSessionCache | None = None,
    ) -> None:
        """`sessions`: the broker's fetch session cache (KIP-227)."""
        self._replicas = replicas
        # None: no authorizer, every request is allowed (one attribute check per request).
        self._authorizer = authorizer
        self.sessions = FetchSessionCache() if sessions is None else sessions
        self._changes = replicas.changes
        # The incremental fetches waiting for a change of their session's partitions: the
        # future that wakes each, by session id; consumers' and followers' apart, since a high
        # watermark that moved alone wakes only consumers.
        self._waiting: dict[int, asyncio.Future[None]] = {}
        self._followers_waiting: dict[int, asyncio.Future[None]] = {}
        replicas.change_listeners.append(self._partition_changed)

    def register(self, registry: ApiRegistry) -> None:
        registry.register(
            ApiKey.PRODUCE,
            self._on_produce,
            min_version=PRODUCE_VERSIONS[0],
            max_version=PRODUCE_VERSIONS[1],
            advertised_min_version=0,
        )
        registry.register(
            ApiKey.FETCH,
            self._on_fetch,
            min_version=FETCH_VERSIONS[0],
            max_version=FETCH_VERSIONS[1],
        )
        registry.register(
            ApiKey.OFFSET_FOR_LEADER_EPOCH,
            self._on_offset_for_leader_epoch,
            min_version=OFFSET_FOR_LEADER_EPOCH_VERSIONS[0],
            max_version=OFFSET_FOR_LEADER_EPOCH_VERSIONS[1],
        )
        registry.register(
            ApiKey.LIST_OFFSETS,
            self._on_list_offsets,
            min_version=LIST_OFFSETS_VERSIONS[0],
            max_version=LIST_OFFSETS_VERSIONS[1],
        )

    def _denied_topics(
        self,
        context: RequestContext,
        operation: AclOperation,
        topics: Sequence[str],
        *,
        from_replica: bool = False,
    ) -> set[str]:
        """The topics of `topics` the sender may not do `operation` on (none without an
        authorizer); a replica's request needs CLUSTER_ACTION on the cluster instead."""
        authorizer = self._authorizer
        if authorizer is None:
            return set()
        if from_replica:
            if authorizer.allows_cluster(context, AclOperation.CLUSTER_ACTION):
                return set()
            return set(topics)
        return {
            topic
            for topic in set(topics)
            if not authorizer.allows(context, operation, ResourceType.TOPIC, topic)
        }

    # -- OffsetForLeaderEpoch ----------------------------------------------------------------------

    def _on_offset_for_leader_epoch(
        self, context: RequestContext, request: messages.OffsetForLeaderEpochRequest
    ) -> messages.OffsetForLeaderEpochResponse:
        schema = messages.OFFSET_FOR_LEADER_EPOCH_RESPONSES[context.header.api_version]
        topic_type = field_entity_type(schema, "topics")
        partition_type = field_entity_type(topic_type, "partitions")

        denied = self._denied_topics(
            context,
            AclOperation.DESCRIBE,
            [topic.topic for topic in request.topics],
            from_replica=getattr(request, "replica_id", -1) >= 0,
        )

        def answer(topic: str, partition: _EpochQuery) -> object:
            if topic in denied:
                return make_entity(
                    partition_type,
                    error_code=ErrorCode.topic_authorization_failed,
                    partition=partition.partition,
                    leader_epoch=-1,
                    end_offset=-1,
                )
            error, epoch, end_offset = self._replicas.end_offset_for_epoch(
                topic, partition.partition, partition.current_leader_epoch, partition.leader_epoch
            )
            return make_entity(
                partition_type,
                error_code=error,
                partition=partition.partition,
                leader_epoch=epoch,
                end_offset=end_offset,
            )

        asked: list[tuple[str, tuple[_EpochQuery, ...]]] = [
            (topic.topic, topic.partitions) for topic in request.topics
        ]
        return _per_partition(schema, topic_type, "topic", asked, answer)

    # -- ListOffsets ------------------------------------------------------------------------------

    def _on_list_offsets(
        self, context: RequestContext, request: messages.ListOffsetsRequest
    ) -> messages.ListOffsetsResponse:
        version = context.header.api_version
        schema = messages.LIST_OFFSETS_RESPONSES[version]
        topic_type = field_entity_type(schema, "topics")
        partition_type = field_entity_type(topic_type, "partitions")

        denied = self._denied_topics(
            context,
            AclOperation.DESCRIBE,
            [topic.name for topic in request.topics],
            from_replica=request.replica_id >= 0,
        )

        def answer(topic: str, partition: _OffsetQuery) -> object:
            if topic in denied:
                return make_entity(
                    partition_type,
                    partition_index=partition.partition_index,
                    error_code=ErrorCode.topic_authorization_failed,
                    timestamp=-1,
                    offset=-1,
                    leader_epoch=-1,
                )
            error, found = self._replicas.list_offset(
                topic,
                partition.partition_index,
                partition.timestamp,
                typing.cast("_ListOffsetsPartitionWithLeaderEpoch", partition).current_leader_epoch
                if version >= _LIST_OFFSETS_CURRENT_LEADER_EPOCH
                else -1,
            )
            return make_entity(
                partition_type,
                partition_index=partition.partition_index,
                error_code=error,
                timestamp=-1 if found is None else found.timestamp,
                offset=-1 if found is None else found.offset,
                leader_epoch=-1 if found is None else found.leader_epoch,
            )

        asked: list[tuple[str, tuple[_OffsetQuery, ...]]] = [
            (topic.name, topic.partitions) for topic in request.topics
        ]
        return _per_partition(schema, topic_type, "name", asked, answer)

    # -- Produce ----------------------------------------------------------------------------------

    async def _on_produce(
        self, context: RequestContext, request: messages.ProduceRequest
    ) -> PreEncodedResponse | None:
        version = context.header.api_version
        acks = request.acks
        partitions = [
            (topic.name, data.index, data.records)
            for topic in request.topic_data
            for data in topic.partition_data
        ]
        if acks not in _VALID_ACKS:
            answers = [ProduceResult(ErrorCode.invalid_required_acks)] * len(partitions)
        else:
            timeout_ms = round(request.timeout.total_seconds() * 1000)
            authorizer = self._authorizer
            if authorizer is not None:
                answers = await self._produce_authorized(
                    authorizer, context, request, acks, timeout_ms, partitions
                )
            elif any(topic in INTERNAL_TOPICS for topic, _, _ in partitions):
                answers = await self._produce_except_internal(context, acks, timeout_ms, partitions)
            else:
                answers = await self._replicas.produce(
                    acks, timeout_ms, partitions, connection_id=context.connection_id
                )
        if acks == 0:
            return None
        by_topic: dict[str, list[PartitionProduced]] = {}
        for (topic, index, _), answer in zip(partitions, answers, strict=True):
            by_topic.setdefault(topic, []).append(
                PartitionProduced(
                    index,
                    answer.error,
                    answer.base_offset,
                    answer.log_append_time_ms,
                    answer.log_start_offset,
                    tuple((error.batch_index, error.message) for error in answer.record_errors),
                    answer.message,
                )
            )
        return PreEncodedResponse([encode_produce_response(version, list(by_topic.items()))])

    async def _produce_authorized(
        self,
        authorizer: Authorizer,
        context: RequestContext,
        request: messages.ProduceRequest,
        acks: int,
        timeout_ms: int,
        partitions: Sequence[tuple[str, int, bytes | None]],
    ) -> list[ProduceResult]:
        """As Kafka: a transactional producer needs WRITE on its transactional id (else every
        partition is TRANSACTIONAL_ID_AUTHORIZATION_FAILED), and each topic WRITE (else its
        partitions are TOPIC_AUTHORIZATION_FAILED and nothing is written to them)."""
        transactional_id = getattr(request, "transactional_id", None)
        if transactional_id is not None and not authorizer.allows(
            context, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id
        ):
            return [ProduceResult(ErrorCode.transactional_id_authorization_failed)] * len(
                partitions
            )
        writable = {
            topic: authorizer.allows(context, AclOperation.WRITE, ResourceType.TOPIC, topic)
            for topic in {topic for topic, _, _ in partitions}
        }
        allowed = [entry for entry in partitions if writable[entry[0]]]
        if not allowed:
            appended: Iterator[ProduceResult] = iter(())
        elif any(topic in INTERNAL_TOPICS for topic, _, _ in allowed):
            appended = iter(await self._produce_except_internal(context, acks, timeout_ms, allowed))
        else:
            appended = iter(
                await self._replicas.produce(
                    acks, timeout_ms, allowed, connection_id=context.connection_id
                )
            )
        return [
            next(appended)
            if writable[topic]
            else ProduceResult(ErrorCode.topic_authorization_failed)
            for topic, _, _ in partitions
        ]

    async def _produce_except_internal(
        self,
        context: RequestContext,
        acks: int,
        timeout_ms: int,
        partitions: Sequence[tuple[str, int, bytes | None]],
    ) -> list[ProduceResult]:
        """Only brokers write internal topics: their partitions are refused, as Kafka refuses
        them, and the others are appended."""
        allowed = [entry for entry in partitions if entry[0] not in INTERNAL_TOPICS]
        appended = iter(
            await self._replicas.produce(
                acks, timeout_ms, allowed, connection_id=context.connection_id
            )
        )
        return [
            ProduceResult(
                ErrorCode.invalid_topic_exception,
                message=f"Cannot append to internal topic {topic}",
            )
            if topic in INTERNAL_TOPICS
            else next(appended)
            for topic, _, _ in partitions
        ]

    # -- Fetch ------------------------------------------------------------------------------------

    async def _on_fetch(
        self, context: RequestContext, request: messages.FetchRequest
    ) -> PreEncodedResponse:
        version = context.header.api_version
        replica_id = (
            request.replica_state.replica_id
            if _has_replica_state(request, version)
            else request.replica_id
        )
        requested = self._requested_partitions(request, version, replica_id)
        if _has_no_session(request, version):
            session_id, session_epoch = 0, FINAL_EPOCH
        else:
            session_id, session_epoch = request.session_id, request.session_epoch
        session = self.sessions.new_context(
            session_id,
            session_epoch,
            requested,
            self._forgotten(request, version),
            uses_topic_ids=_has_topic_ids(request, version),
            privileged=replica_id >= 0,
            now_ms=_now_ms(),
        )
        if session.error is not ErrorCode.none:
            return PreEncodedResponse(
                _fetch_response(version, [], session_id=0, error=session.error)
            )
        wanted = _FetchWanted(
            replica_id,
            round(request.max_wait.total_seconds() * 1000),
            request.min_bytes,
            request.max_bytes,
            request.rack_id if _has_rack_id(request, version) else None,
        )
        if session.incremental:
            answers = await self._fetch_incremental(context, session, wanted)
        else:
            answers = await self._fetch_named(context, requested, wanted)
        answered = session.respond(answers, request.max_bytes, _now_ms())
        if session.session is not None and not session.incremental:
            log.debug(
                "fetch_session_created",
                session_id=session.session_id,
                replica_id=replica_id,
                partitions=len(requested),
            )
        return PreEncodedResponse(_fetch_response(version, answered, session_id=session.session_id))

    def _requested_partitions(
        self, request: messages.FetchRequest, version: int, replica_id: int
    ) -> list[RequestedPartition]:
        """The partitions a Fetch names, keyed as its session knows them (by topic id from
        v13 on, else by name); a topic id this broker does not know has no name."""
        from_follower = replica_id >= 0
        if _has_topic_ids(request, version):
            requested: list[RequestedPartition] = []
            for topic in request.topics:
                name = None if topic.topic_id is None else self._replicas.topic_name(topic.topic_id)
                topic_key = topic.topic_id or UUID(int=0)
                requested.extend(
                    RequestedPartition(
                        (topic_key, partition.partition),
                        name,
                        topic.topic_id,
                        None
                        if name is None
                        else _fetch_partition(
                            name, partition, version, from_follower=from_follower
                        ),
                    )
                    for partition in topic.partitions
                )
            return requested
        return [
            RequestedPartition(
                (topic.topic, partition.partition),
                topic.topic,
                None,
                _fetch_partition(topic.topic, partition, version, from_follower=from_follower),
            )
            for topic in request.topics
            for partition in topic.partitions
        ]

    @staticmethod
    def _forgotten(request: messages.FetchRequest, version: int) -> list[SessionKey]:
        if _has_no_session(request, version):
            return []
        if _has_topic_ids(request, version):
            return [
                (topic.topic_id or UUID(int=0), index)
                for topic in request.forgotten_topics_data
                for index in topic.partitions
            ]
        return [
            (topic.topic, index)
            for topic in request.forgotten_topics_data
            for index in topic.partitions
        ]

    async def _fetch_named(
        self,
        context: RequestContext,
        requested: Sequence[RequestedPartition],
        wanted: _FetchWanted,
    ) -> list[tuple[RequestedPartition, FetchResult]]:
        """A sessionless or full fetch: every partition named, read (and waited for) by the
        replica manager."""
        refused = self._refusals(context, wanted.replica_id, requested)
        fetched = iter(
            await self._replicas.fetch(
                wanted.replica_id,
                wanted.max_wait_ms,
                wanted.min_bytes,
                wanted.max_bytes,
                [
                    partition.fetch
                    for partition in requested
                    if partition.fetch is not None and partition.key not in refused
                ],
                wanted.rack,
            )
        )
        return [(partition, refused.get(partition.key) or next(fetched)) for partition in requested]

    async def _fetch_incremental(
        self, context: RequestContext, session: FetchContext, wanted: _FetchWanted
    ) -> list[tuple[RequestedPartition, FetchResult]]:
        """An incremental fetch: reads only the session's partitions that may have something
        new, and waits (up to `max_wait_ms`, for `min_bytes`) on a change of any partition,
        reading then only what changed. A follower's is not woken by a high watermark that
        moved alone (nothing new to read: Kafka's DelayedFetch); when it wakes it reads
        every partition changed, so its answer carries their high watermarks."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wanted.max_wait_ms / 1000
        answers: dict[SessionKey, tuple[RequestedPartition, FetchResult]] = {}
        # The bytes of records in `answers`, and whether one of them is to be answered now.
        size = 0
        urgent = False
        assert session.session is not None
        session_id = session.session.session_id
        follower = wanted.replica_id >= 0
        waiting = self._followers_waiting if follower else self._waiting
        refreshed = session.follower_refresh(_now_ms())
        if refreshed:
            self._replicas.record_follower_fetches(wanted.replica_id, refreshed)
        while True:
            due = session.to_read(self._changes)
            refused = self._refusals(context, wanted.replica_id, due)
            readable = [p for p in due if p.fetch is not None and p.key not in refused]
            # The room left beside the answers that are not read again.
            kept = size - sum(
                _records_size(answers[p.key][1]) for p in readable if p.key in answers
            )
            results = iter(
                self._replicas.read_now(
                    wanted.replica_id,
                    max(0, wanted.max_bytes - kept),
                    [p.fetch for p in readable if p.fetch is not None],
                    wanted.rack,
                )
            )
            for partition in due:
                result = refused.get(partition.key) or next(results)
                previous = answers.get(partition.key)
                if previous is not None:
                    size -= _records_size(previous[1])
                answers[partition.key] = (partition, result)
                size += _records_size(result)
                urgent = urgent or (
                    result.error is not ErrorCode.none
                    or result.diverging_epoch is not None
                    or result.preferred_read_replica >= 0
                )
            remaining = deadline - loop.time()
            if size >= wanted.min_bytes or remaining <= 0 or urgent:
                self._replicas.count_throttled([result for _, result in answers.values()])
                return list(answers.values())
            keys = session.session.keys
            if any(
                name in keys
                for name in self._changes.since(session.session.read_up_to, follower=follower)
            ):
                # Changed while it was read (the read itself may move a high watermark).
                continue
            # A future and a timer (asyncio.wait_for made a task per wait): woken by
            # `_partition_changed` or by the timer at the deadline.
            waiter: asyncio.Future[None] = loop.create_future()
            waiting[session_id] = waiter
            timer = loop.call_later(remaining, wake_waiter, waiter)
            try:
                await waiter
            finally:
                timer.cancel()
                if waiting.get(session_id) is waiter:
                    del waiting[session_id]

    def _partition_changed(self, partition: Partition, high_watermark_only: bool) -> None:
        name = (partition.topic, partition.partition_id)
        # Wakes the incremental fetches waiting on a session that holds this partition (each
        # reads what changed): the sessions holding it, not every waiting one, are looked at.
        # A high watermark that moved alone wakes consumers only.
        consumers = self._waiting
        followers = None if high_watermark_only else self._followers_waiting
        if consumers or followers:
            for session_id in self.sessions.holding(name):
                waiter = consumers.get(session_id)
                if waiter is None and followers:
                    waiter = followers.get(session_id)
                if waiter is not None:
                    wake_waiter(waiter)

    def _refusals(
        self,
        context: RequestContext,
        replica_id: int,
        partitions: Sequence[RequestedPartition],
    ) -> dict[SessionKey, FetchResult]:
        """The answer of each partition that is not read: an unknown topic id, or a topic its
        sender may not read (every one for a follower without CLUSTER_ACTION on the cluster,
        else those without READ: Kafka's rules)."""
        refused = {
            partition.key: FetchResult(ErrorCode.unknown_topic_id)
            for partition in partitions
            if partition.topic is None
        }
        authorizer = self._authorizer
        if authorizer is None:
            return refused
        names = {partition.topic for partition in partitions if partition.topic is not None}
        if replica_id >= 0:
            denied = (
                set() if authorizer.allows_cluster(context, AclOperation.CLUSTER_ACTION) else names
            )
        else:
            denied = {
                name
                for name in names
                if not authorizer.allows(context, AclOperation.READ, ResourceType.TOPIC, name)
            }
        refused.update(
            (partition.key, FetchResult(ErrorCode.topic_authorization_failed))
            for partition in partitions
            if partition.topic in denied
        )
        return refused


@dataclass(frozen=True, slots=True)
class _FetchWanted:
    """What a Fetch asks of the read as a whole."""

    replica_id: int
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    # The consumer's rack (Fetch v11+; None before).
    rack: str | None


class _FetchedPartition(typing.Protocol):
    """A partition of a FetchRequest: the fields every served version has."""

    @property
    def partition(self) -> int: ...

    @property
    def fetch_offset(self) -> int: ...

    @property
    def partition_max_bytes(self) -> int: ...


def _fetch_partition(
    topic: str, partition: _FetchedPartition, version: int, *, from_follower: bool
) -> FetchPartition:
    """What the replica manager is asked for a partition of a FetchRequest; the epochs its
    version lacks are -1 ("none given"), and so is the log start offset but from a follower
    (only the leader's DeleteRecords reads it)."""
    return FetchPartition(
        topic=topic,
        partition_id=partition.partition,
        fetch_offset=partition.fetch_offset,
        max_bytes=partition.partition_max_bytes,
        current_leader_epoch=typing.cast(
            "_FetchPartitionWithLeaderEpoch", partition
        ).current_leader_epoch
        if version >= _FETCH_CURRENT_LEADER_EPOCH
        else -1,
        last_fetched_epoch=typing.cast(
            "_FetchPartitionWithLastFetchedEpoch", partition
        ).last_fetched_epoch
        if version >= _FETCH_LAST_FETCHED_EPOCH
        else -1,
        log_start_offset=typing.cast("_FetchPartitionWithLogStart", partition).log_start_offset
        if from_follower and version >= _FETCH_LOG_START_OFFSET
        else -1,
    )


def _per_partition(
    schema: type[_Response],
    topic_type: type,
    name_field: str,
    topics: list[tuple[str, tuple[_Asked, ...]]],
    answer: Callable[[str, _Asked], object],
) -> _Response:
    """A response with one `answer(topic name, asked partition)` per partition asked, grouped
    by topic as the request grouped them (topics named by `name_field`)."""
    return make_entity(
        schema,
        throttle_time=NO_THROTTLE,
        topics=tuple(
            make_entity(
                topic_type,
                **{name_field: name},
                partitions=tuple(answer(name, p) for p in partitions),
            )
            for name, partitions in topics
        ),
    )


def _fetch_response(
    version: int,
    answered: Sequence[tuple[RequestedPartition, FetchResult]],
    *,
    session_id: int,
    error: ErrorCode = ErrorCode.none,
) -> list[Buffer]:
    """The body of a FetchResponse of `version` carrying `answered`, grouped by topic in the
    order the partitions come."""
    by_topic: dict[tuple[str | None, UUID | None], list[PartitionFetched]] = {}
    for requested, result in answered:
        by_topic.setdefault((requested.topic, requested.topic_id), []).append(
            PartitionFetched(
                requested.key[1],
                result.error,
                result.high_watermark,
                result.high_watermark,
                result.log_start_offset,
                # Kafka sends empty records, never null: librdkafka refuses a null record set.
                b"" if result.records is None else result.records,
                None,
                result.preferred_read_replica,
                result.diverging_epoch,
                # A leader id of -1 (none now) is not told, whatever its epoch.
                result.leader if result.leader[0] >= 0 else None,
            )
        )
    return encode_fetch_answers(
        version,
        [(name or "", topic_id, partitions) for (name, topic_id), partitions in by_topic.items()],
        error_code=error,
        session_id=session_id,
    )


def _records_size(result: FetchResult) -> int:
    return 0 if result.records is None else len(result.records)


def _now_ms() -> int:
    return int(asyncio.get_running_loop().time() * 1000)

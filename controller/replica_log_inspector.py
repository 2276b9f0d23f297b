"""Asks brokers for the state of their replicas' logs (GetReplicaLogInfo), for unclean recovery.

The asyncio side of `unclean_recovery`: the active controller, and any node's admin API
showing a recovery, send one GetReplicaLogInfo per broker over the broker's client listener
(the address it registered), all brokers at once, each bounded by a timeout. A broker that
does not answer in time, refuses the connection or answers an error for a partition simply
gives no answer for it: the recovery rules decide what a missing answer means.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import Mapping, Sequence
from uuid import UUID

import structlog
from kio.schema.errors import ErrorCode
from kio.static.primitive import i32

from controller.image import MetadataImage
from controller.partition_change import TopicPartition
from controller.records import ReplicaLogState
from net.client import KafkaConnectionError, NodeConnection, RequestTimedOutError
from net.protocol import ProtocolError
from net.replica_log_info import (
    GetReplicaLogInfoRequest,
    GetReplicaLogInfoResponse,
    TopicPartitions,
)
from net.sasl import SaslClientCredentials

log = structlog.get_logger(__name__)


class ReplicaLogInspector:
    """GetReplicaLogInfo to brokers on their listener named `listener`; one connection each,
    kept while the broker's address stays the same."""

    def __init__(
        self,
        listener: str,
        timeout_s: float,
        ssl_context: ssl.SSLContext | None = None,
        sasl: SaslClientCredentials | None = None,
    ) -> None:
        self._listener = listener
        self._ssl_context = ssl_context
        self._sasl = sasl
        self._timeout_s = timeout_s
        self._connections: dict[int, NodeConnection] = {}

    async def inspect(
        self, image: MetadataImage, asked: Mapping[int, Sequence[TopicPartition]]
    ) -> dict[TopicPartition, list[ReplicaLogState]]:
        """The answers of brokers `asked` (broker id -> its partitions), by partition."""
        brokers = [b for b in asked if asked[b]]
        answers = await asyncio.gather(*(self._ask(image, b, asked[b]) for b in brokers))
        by_partition: dict[TopicPartition, list[ReplicaLogState]] = {}
        for states in answers:
            for partition, state in states:
                by_partition.setdefault(partition, []).append(state)
        return by_partition

    async def _ask(
        self, image: MetadataImage, broker_id: int, partitions: Sequence[TopicPartition]
    ) -> list[tuple[TopicPartition, ReplicaLogState]]:
        connection = self._connection(image, broker_id)
        if connection is None:
            return []
        by_topic: dict[UUID, list[i32]] = {}
        for partition in partitions:
            by_topic.setdefault(partition.topic_id, []).append(i32(partition.partition_id))
        request = GetReplicaLogInfoRequest(
            topic_partitions=tuple(
                TopicPartitions(topic_id=topic_id, partitions=tuple(ids))
                for topic_id, ids in by_topic.items()
            )
        )
        try:
            async with asyncio.timeout(self._timeout_s):
                response = await connection.send(request, timeout=self._timeout_s)
        except (KafkaConnectionError, RequestTimedOutError, TimeoutError, ProtocolError) as error:
            log.info("replica_log_info_unanswered", broker_id=broker_id, error=repr(error))
            connection.disconnect()
            return []
        # The connection decodes the answer with the schema of the request's API.
        assert isinstance(response, GetReplicaLogInfoResponse)
        return [
            (
                # kio reads the all-zero ("no topic") id as None.
                TopicPartition(topic.topic_id or UUID(int=0), int(info.partition)),
                ReplicaLogState(
                    broker_id,
                    int(response.broker_epoch),
                    int(info.last_written_leader_epoch),
                    int(info.log_end_offset),
                ),
            )
            for topic in response.topic_partition_log_info_list
            for info in topic.partition_log_info
            if info.error_code == ErrorCode.none
        ]

    def _connection(self, image: MetadataImage, broker_id: int) -> NodeConnection | None:
        registration = image.brokers.get(broker_id)
        address = None
        if registration is not None:
            address = next(
                ((e.host, e.port) for e in registration.listeners if e.name == self._listener),
                None,
            )
        known = self._connections.get(broker_id)
        if known is not None and (address is None or (known.host, known.port) != address):
            del self._connections[broker_id]
            known.disconnect()
            known = None
        if address is None:
            return None
        if known is None:
            known = NodeConnection(
                address[0],
                address[1],
                client_id="controller-unclean-recovery",
                request_timeout=self._timeout_s,
                connect_timeout=self._timeout_s,
                ssl_context=self._ssl_context,
                sasl=self._sasl,
            )
            self._connections[broker_id] = known
        return known

    async def close(self) -> None:
        connections, self._connections = list(self._connections.values()), {}
        for connection in connections:
            with contextlib.suppress(Exception):
                await connection.close()

"""GetReplicaLogInfo (API key 93, KIP-966) on the client listener: the state of hosted logs.

The active controller asks this before an unclean recovery, to choose the replica with the
most complete log. Per partition the answer gives the last leader epoch written to the log
(-1 for an empty log), the leader epoch this broker knows from the metadata log, and the log
end offset; a partition this broker does not host is UNKNOWN_TOPIC_OR_PARTITION, one on an
offline log directory KAFKA_STORAGE_ERROR (its log cannot be trusted). The answer carries the
broker epoch of this incarnation, so the controller never elects from an answer given by an
earlier one. As in Kafka, at most 1,000 partitions are answered, with `truncated` set when
more were asked. With an authorizer, only a sender with CLUSTER_ACTION on the cluster (the
controllers) is answered; any other gets CLUSTER_AUTHORIZATION_FAILED for every partition.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from uuid import UUID

from kio.schema.errors import ErrorCode
from kio.static.primitive import i32, i32Timedelta, i64

from broker.replica_manager import ReplicaManager
from controller.acls import AclOperation, Authorizer
from net.api_keys import ApiKey
from net.api_registry import ApiRegistry, RequestContext
from net.protocol import NO_THROTTLE
from net.replica_log_info import (
    MAX_PARTITIONS,
    VERSIONS,
    GetReplicaLogInfoRequest,
    GetReplicaLogInfoResponse,
    PartitionLogInfo,
    TopicPartitionLogInfo,
)

NO_EPOCH = -1


class ReplicaLogInfoApi:
    """Answers GetReplicaLogInfo from `replicas`; `broker_epoch` gives this incarnation's."""

    def __init__(
        self,
        replicas: ReplicaManager,
        broker_epoch: Callable[[], int],
        authorizer: Authorizer | None = None,
    ) -> None:
        self._replicas = replicas
        self._broker_epoch = broker_epoch
        self._authorizer = authorizer

    def register(self, registry: ApiRegistry) -> None:
        registry.register(
            ApiKey.GET_REPLICA_LOG_INFO,
            self._on_get_replica_log_info,
            min_version=VERSIONS[0],
            max_version=VERSIONS[-1],
        )

    def _on_get_replica_log_info(
        self, context: RequestContext, request: GetReplicaLogInfoRequest
    ) -> GetReplicaLogInfoResponse:
        asked = list(_asked(request))
        authorizer = self._authorizer
        refused = authorizer is not None and not authorizer.allows_cluster(
            context, AclOperation.CLUSTER_ACTION
        )
        answered: dict[UUID | None, list[PartitionLogInfo]] = {}
        for topic_id, partition_id in asked[:MAX_PARTITIONS]:
            info = (
                _error(partition_id, ErrorCode.cluster_authorization_failed)
                if refused
                else self.partition_log_info(topic_id, partition_id)
            )
            answered.setdefault(topic_id, []).append(info)
        return GetReplicaLogInfoResponse(
            throttle_time=i32Timedelta.parse(NO_THROTTLE),
            broker_epoch=i64(self._broker_epoch()),
            truncated=len(asked) > MAX_PARTITIONS,
            topic_partition_log_info_list=tuple(
                TopicPartitionLogInfo(topic_id=topic_id, partition_log_info=tuple(infos))
                for topic_id, infos in answered.items()
            ),
        )

    def partition_log_info(self, topic_id: UUID | None, partition_id: int) -> PartitionLogInfo:
        """One partition's answer."""
        name = None if topic_id is None else self._replicas.topic_name(topic_id)
        partition = None if name is None else self._replicas.partitions.get((name, partition_id))
        if partition is None or partition.topic_id != topic_id:
            return _error(partition_id, ErrorCode.unknown_topic_or_partition)
        if partition.offline:
            return _error(partition_id, ErrorCode.kafka_storage_error)
        last_written = partition.latest_epoch
        return PartitionLogInfo(
            partition=i32(partition_id),
            last_written_leader_epoch=i32(NO_EPOCH if last_written is None else last_written),
            current_leader_epoch=i32(partition.leader_epoch),
            log_end_offset=i64(partition.log_end_offset),
            error_code=ErrorCode.none,
        )


def _asked(request: GetReplicaLogInfoRequest) -> Iterator[tuple[UUID | None, int]]:
    """Each distinct partition asked, in request order."""
    seen: set[tuple[UUID | None, int]] = set()
    for topic in request.topic_partitions or ():
        for partition_id in topic.partitions:
            key = (topic.topic_id, int(partition_id))
            if key not in seen:
                seen.add(key)
                yield key


def _error(partition_id: int, error: ErrorCode) -> PartitionLogInfo:
    return PartitionLogInfo(
        partition=i32(partition_id),
        last_written_leader_epoch=i32(NO_EPOCH),
        current_leader_epoch=i32(NO_EPOCH),
        log_end_offset=i64(-1),
        error_code=error,
    )

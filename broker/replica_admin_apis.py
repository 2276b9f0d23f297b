"""The admin APIs answered from the replicas a broker hosts: DeleteRecords v0-v2,
DescribeLogDirs v1-v4 and DescribeProducers v0.

DeleteRecords moves the log start offset of the partitions this broker leads (Kafka's
`KafkaApis.handleDeleteRecordsRequest`); the followers follow it as they fetch (the log start
offset each fetch answer carries), and the answer waits, up to the request's timeout, until
they have (the low watermark: the smallest log start offset over the replicas).
DescribeLogDirs lists this broker's partition log directories with the size of each replica
log in them (no replica is ever a "future" one: logs do not move between directories here).
DescribeProducers lists the producers of a partition as any of its replicas knows them (no
transactions here: no coordinator epoch nor open transaction).
"""

from __future__ import annotations

import asyncio

from kio.schema.errors import ErrorCode

from broker.replica_manager import ReplicaManager
from controller.acls import AclOperation, Authorizer, ResourceType
from net import messages
from net.api_keys import ApiKey
from net.api_registry import ApiRegistry, RequestContext
from net.protocol import NO_THROTTLE, field_entity_type, make_entity

DELETE_RECORDS_VERSIONS = (0, 2)
DESCRIBE_LOG_DIRS_VERSIONS = (1, 4)
DESCRIBE_PRODUCERS_VERSIONS = (0, 0)


class ReplicaAdminApis:
    """DeleteRecords, DescribeLogDirs and DescribeProducers over `replicas`.

    With an authorizer, Kafka's rules: DeleteRecords needs DELETE on each topic and
    DescribeProducers READ (else TOPIC_AUTHORIZATION_FAILED for its partitions),
    DescribeLogDirs DESCRIBE on the cluster (else CLUSTER_AUTHORIZATION_FAILED).
    """

    def __init__(self, replicas: ReplicaManager, authorizer: Authorizer | None = None) -> None:
        self._replicas = replicas
        self._authorizer = authorizer

    def _denied(self, context: RequestContext, operation: AclOperation, topic: str) -> bool:
        authorizer = self._authorizer
        return authorizer is not None and not authorizer.allows(
            context, operation, ResourceType.TOPIC, topic
        )

    def register(self, registry: ApiRegistry) -> None:
        registry.register(
            ApiKey.DELETE_RECORDS,
            self._on_delete_records,
            min_version=DELETE_RECORDS_VERSIONS[0],
            max_version=DELETE_RECORDS_VERSIONS[1],
        )
        registry.register(
            ApiKey.DESCRIBE_LOG_DIRS,
            self._on_describe_log_dirs,
            min_version=DESCRIBE_LOG_DIRS_VERSIONS[0],
            max_version=DESCRIBE_LOG_DIRS_VERSIONS[1],
        )
        registry.register(
            ApiKey.DESCRIBE_PRODUCERS,
            self._on_describe_producers,
            min_version=DESCRIBE_PRODUCERS_VERSIONS[0],
            max_version=DESCRIBE_PRODUCERS_VERSIONS[1],
        )

    async def _on_delete_records(
        self, context: RequestContext, request: messages.DeleteRecordsRequest
    ) -> messages.DeleteRecordsResponse:
        schema = messages.DELETE_RECORDS_RESPONSES[context.header.api_version]
        topic_type = field_entity_type(schema, "topics")
        partition_type = field_entity_type(topic_type, "partitions")
        timeout_ms = max(0, round(request.timeout.total_seconds() * 1000))

        async def answer(topic: str, partition_index: int, offset: int) -> object:
            if self._denied(context, AclOperation.DELETE, topic):
                error, low_watermark = ErrorCode.topic_authorization_failed, -1
            else:
                error, low_watermark = await self._replicas.delete_records(
                    topic, partition_index, offset, timeout_ms
                )
            return make_entity(
                partition_type,
                partition_index=partition_index,
                low_watermark=low_watermark,
                error_code=error,
            )

        async def topic_answer(name: str, partitions: list[tuple[int, int]]) -> object:
            answers = await asyncio.gather(*(answer(name, *p) for p in partitions))
            return make_entity(topic_type, name=name, partitions=tuple(answers))

        # Every partition's deletion starts at once; each answer waits for its followers.
        topics = await asyncio.gather(
            *(
                topic_answer(topic.name, [(p.partition_index, p.offset) for p in topic.partitions])
                for topic in request.topics
            )
        )
        return make_entity(schema, throttle_time=NO_THROTTLE, topics=tuple(topics))

    def _on_describe_log_dirs(
        self, context: RequestContext, request: messages.DescribeLogDirsRequest
    ) -> messages.DescribeLogDirsResponse:
        schema = messages.DESCRIBE_LOG_DIRS_RESPONSES[context.header.api_version]
        result_type = field_entity_type(schema, "results")
        topic_type = field_entity_type(result_type, "topics")
        partition_type = field_entity_type(topic_type, "partitions")
        authorizer = self._authorizer
        if authorizer is not None and not authorizer.allows_cluster(context, AclOperation.DESCRIBE):
            return make_entity(
                schema,
                throttle_time=NO_THROTTLE,
                error_code=ErrorCode.cluster_authorization_failed,
                results=(),
            )
        asked: dict[str, set[int]] | None = None
        if request.topics is not None:
            asked = {}
            for topic in request.topics:
                asked.setdefault(topic.topic, set()).update(topic.partitions)
        results: list[object] = []
        for described in self._replicas.describe_log_dirs(asked):
            by_topic: dict[str, list[object]] = {}
            for replica in described.replicas:
                by_topic.setdefault(replica.topic, []).append(
                    make_entity(
                        partition_type,
                        partition_index=replica.partition_id,
                        partition_size=replica.size_bytes,
                        offset_lag=replica.offset_lag,
                        is_future_key=False,
                    )
                )
            results.append(
                make_entity(
                    result_type,
                    error_code=ErrorCode.none
                    if described.online
                    else ErrorCode.kafka_storage_error,
                    log_dir=str(described.path.absolute()),
                    topics=tuple(
                        make_entity(topic_type, name=name, partitions=tuple(partitions))
                        for name, partitions in by_topic.items()
                    ),
                    total_bytes=described.total_bytes,
                    usable_bytes=described.usable_bytes,
                )
            )
        return make_entity(
            schema, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, results=tuple(results)
        )

    def _on_describe_producers(
        self, context: RequestContext, request: messages.DescribeProducersRequest
    ) -> messages.DescribeProducersResponse:
        schema = messages.DESCRIBE_PRODUCERS_RESPONSES[context.header.api_version]
        topic_type = field_entity_type(schema, "topics")
        partition_type = field_entity_type(topic_type, "partitions")
        producer_type = field_entity_type(partition_type, "active_producers")

        def answer(topic: str, partition_index: int) -> object:
            error, producers = (
                (ErrorCode.topic_authorization_failed, [])
                if self._denied(context, AclOperation.READ, topic)
                else self._replicas.active_producers(topic, partition_index)
            )
            return make_entity(
                partition_type,
                partition_index=partition_index,
                error_code=error,
                error_message=None,
                active_producers=tuple(
                    make_entity(
                        producer_type,
                        producer_id=producer.producer_id,
                        producer_epoch=producer.epoch,
                        last_sequence=producer.last_sequence,
                        last_timestamp=producer.last_timestamp,
                        coordinator_epoch=-1,
                        current_txn_start_offset=-1,
                    )
                    for producer in producers
                ),
            )

        return make_entity(
            schema,
            throttle_time=NO_THROTTLE,
            topics=tuple(
                make_entity(
                    topic_type,
                    name=topic.name,
                    partitions=tuple(answer(topic.name, p) for p in topic.partition_indexes),
                )
                for topic in request.topics
            ),
        )

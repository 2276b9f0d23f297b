"""The admin APIs answered from the replicas a broker hosts: DeleteRecords v0-v2.

DeleteRecords moves the log start offset of the partitions this broker leads (Kafka's
`KafkaApis.handleDeleteRecordsRequest`); its answer is the leader's new log start offset, and
the followers follow it as they fetch (the log start offset each fetch answer carries).
"""

from __future__ import annotations

from broker.replica_manager import ReplicaManager
from net import messages
from net.api_keys import ApiKey
from net.api_registry import ApiRegistry, RequestContext
from net.protocol import NO_THROTTLE, field_entity_type, make_entity

DELETE_RECORDS_VERSIONS = (0, 2)


class ReplicaAdminApis:
    """DeleteRecords over `replicas`."""

    def __init__(self, replicas: ReplicaManager) -> None:
        self._replicas = replicas

    def register(self, registry: ApiRegistry) -> None:
        registry.register(
            ApiKey.DELETE_RECORDS,
            self._on_delete_records,
            min_version=DELETE_RECORDS_VERSIONS[0],
            max_version=DELETE_RECORDS_VERSIONS[1],
        )

    def _on_delete_records(
        self, context: RequestContext, request: messages.DeleteRecordsRequest
    ) -> messages.DeleteRecordsResponse:
        schema = messages.DELETE_RECORDS_RESPONSES[context.header.api_version]
        topic_type = field_entity_type(schema, "topics")
        partition_type = field_entity_type(topic_type, "partitions")

        def answer(topic: str, partition_index: int, offset: int) -> object:
            error, low_watermark = self._replicas.delete_records(topic, partition_index, offset)
            return make_entity(
                partition_type,
                partition_index=partition_index,
                low_watermark=low_watermark,
                error_code=error,
            )

        return make_entity(
            schema,
            throttle_time=NO_THROTTLE,
            topics=tuple(
                make_entity(
                    topic_type,
                    name=topic.name,
                    partitions=tuple(
                        answer(topic.name, p.partition_index, p.offset) for p in topic.partitions
                    ),
                )
                for topic in request.topics
            ),
        )

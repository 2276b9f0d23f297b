"""The controller's Kafka APIs on the wire: kio requests in, kio responses out.

Pure translation between the Kafka messages the controller listener serves and the domain
types of `broker_lifecycle`, `topics`, `alter_partition`, `elections` and `producer_ids`. One
function builds a response for any version the listener serves (`make_entity` drops the
fields a version lacks), so the served ranges below are the single list of what is spoken.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple
from uuid import UUID

from kio.schema.errors import ErrorCode

from controller.alter_partition import (
    AlterPartitionBatch,
    AlterPartitionBatchOutcome,
    IsrMember,
    PartitionIsrChange,
)
from controller.broker_lifecycle import (
    NO_BROKER_EPOCH,
    HeartbeatOutcome,
    HeartbeatRequest,
    RegistrationOutcome,
    RegistrationRequest,
)
from controller.elections import ElectionResult, ElectionType
from controller.producer_ids import ProducerIdsOutcome
from controller.records import BrokerEndpoint, BrokerFeature
from controller.topics import (
    AlterConfigsResource,
    AlterConfigsResult,
    ConfigChange,
    CreatePartitionsResult,
    CreateTopicResult,
    DeleteTopicResult,
    NewTopic,
    PartitionsIncrease,
)
from net.api_keys import ApiKey
from net.protocol import NO_THROTTLE, field_entity_type, make_entity, response_schema

# Kafka's api keys of the controller's own APIs.


class ServedVersions(NamedTuple):
    api_key: ApiKey
    min_version: int
    max_version: int


# Every version kio has a schema for. AlterPartition v0-v1 name topics instead of ids and
# are not served (Kafka 3.x brokers send v2+).
SERVED = (
    ServedVersions(ApiKey.CREATE_TOPICS, 2, 7),
    ServedVersions(ApiKey.DELETE_TOPICS, 1, 6),
    ServedVersions(ApiKey.CREATE_PARTITIONS, 0, 3),
    ServedVersions(ApiKey.ELECT_LEADERS, 0, 2),
    ServedVersions(ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, 1),
    ServedVersions(ApiKey.ALTER_PARTITION, 2, 3),
    ServedVersions(ApiKey.BROKER_REGISTRATION, 0, 4),
    ServedVersions(ApiKey.BROKER_HEARTBEAT, 0, 2),
    ServedVersions(ApiKey.ALLOCATE_PRODUCER_IDS, 0, 0),
)


# ElectLeaders v0 has no election type: it is always a preferred election.
_DEFAULT_ELECTION_TYPE = ElectionType.PREFERRED


def _response(api_key: int, version: int, **values: Any) -> Any:
    schema = response_schema(api_key, version)
    assert schema is not None, f"no response schema for api {api_key} v{version}"
    return make_entity(schema, **values)


def _nested(api_key: int, version: int, *path: str) -> type:
    """The entity class reached from the response through the fields of `path`."""
    entity: type = response_schema(api_key, version)  # type: ignore[assignment]
    for name in path:
        entity = field_entity_type(entity, name)
    return entity


# --- broker registration and heartbeats ----------------------------------------------------------


def registration_request(request: Any) -> RegistrationRequest:
    """A BrokerRegistrationRequest (any version) as the lifecycle takes it."""
    return RegistrationRequest(
        broker_id=request.broker_id,
        incarnation_id=request.incarnation_id or UUID(int=0),
        listeners=tuple(
            BrokerEndpoint(listener.name, listener.host, listener.port, listener.security_protocol)
            for listener in request.listeners
        ),
        rack=request.rack,
        previous_broker_epoch=getattr(request, "previous_broker_epoch", NO_BROKER_EPOCH),
        features=tuple(
            BrokerFeature(f.name, f.min_supported_version, f.max_supported_version)
            for f in request.features
        ),
    )


def registration_response(version: int, outcome: RegistrationOutcome) -> Any:
    return _response(
        ApiKey.BROKER_REGISTRATION,
        version,
        throttle_time=NO_THROTTLE,
        error_code=outcome.error,
        broker_epoch=outcome.broker_epoch,
    )


def registration_error(version: int, error: ErrorCode) -> Any:
    return registration_response(version, RegistrationOutcome(error))


def heartbeat_request(request: Any) -> HeartbeatRequest:
    return HeartbeatRequest(
        broker_id=request.broker_id,
        broker_epoch=request.broker_epoch,
        current_metadata_offset=request.current_metadata_offset,
        want_fence=request.want_fence,
        want_shutdown=request.want_shut_down,
    )


def heartbeat_response(version: int, outcome: HeartbeatOutcome) -> Any:
    return _response(
        ApiKey.BROKER_HEARTBEAT,
        version,
        throttle_time=NO_THROTTLE,
        error_code=outcome.error,
        is_caught_up=outcome.is_caught_up,
        is_fenced=outcome.is_fenced,
        should_shut_down=outcome.should_shut_down,
    )


def heartbeat_error(version: int, error: ErrorCode) -> Any:
    return heartbeat_response(version, HeartbeatOutcome(error))


# --- AlterPartition ------------------------------------------------------------------------------


def alter_partition_request(version: int, request: Any) -> AlterPartitionBatch:
    """v2 lists the new ISR as broker ids; v3 with each member's broker epoch (KIP-903)."""

    def members(partition: Any) -> tuple[IsrMember, ...]:
        if version >= 3:
            return tuple(
                IsrMember(member.broker_id, member.broker_epoch)
                for member in partition.new_isr_with_epochs
            )
        return tuple(IsrMember(broker_id, NO_BROKER_EPOCH) for broker_id in partition.new_isr)

    return AlterPartitionBatch(
        broker_id=request.broker_id,
        broker_epoch=request.broker_epoch,
        partitions=tuple(
            PartitionIsrChange(
                topic_id=topic.topic_id or UUID(int=0),
                partition_id=partition.partition_index,
                leader_epoch=partition.leader_epoch,
                partition_epoch=partition.partition_epoch,
                new_isr=members(partition),
            )
            for topic in request.topics
            for partition in topic.partitions
        ),
    )


def alter_partition_response(version: int, outcome: AlterPartitionBatchOutcome) -> Any:
    topic_type = _nested(ApiKey.ALTER_PARTITION, version, "topics")
    partition_type = _nested(ApiKey.ALTER_PARTITION, version, "topics", "partitions")
    by_topic: dict[UUID, list[Any]] = {}
    for result in outcome.results:
        state = result.state
        by_topic.setdefault(result.topic_id, []).append(
            make_entity(
                partition_type,
                partition_index=result.partition_id,
                error_code=result.error_code,
                leader_id=-1 if state is None else state.leader,
                leader_epoch=-1 if state is None else state.leader_epoch,
                isr=() if state is None else state.isr,
                leader_recovery_state=0,
                partition_epoch=-1 if state is None else state.partition_epoch,
            )
        )
    return _response(
        ApiKey.ALTER_PARTITION,
        version,
        throttle_time=NO_THROTTLE,
        error_code=outcome.error,
        topics=tuple(
            make_entity(topic_type, topic_id=topic_id, partitions=tuple(partitions))
            for topic_id, partitions in by_topic.items()
        ),
    )


def alter_partition_error(version: int, error: ErrorCode) -> Any:
    return alter_partition_response(version, AlterPartitionBatchOutcome(error))


# --- AllocateProducerIds -------------------------------------------------------------------------


def producer_ids_response(version: int, outcome: ProducerIdsOutcome) -> Any:
    return _response(
        ApiKey.ALLOCATE_PRODUCER_IDS,
        version,
        throttle_time=NO_THROTTLE,
        error_code=outcome.error,
        producer_id_start=outcome.producer_id_start,
        producer_id_len=outcome.producer_id_len,
    )


def producer_ids_error(version: int, error: ErrorCode) -> Any:
    return producer_ids_response(version, ProducerIdsOutcome(error))


# --- CreateTopics, DeleteTopics, CreatePartitions ------------------------------------------------


def create_topics_request(request: Any) -> list[NewTopic]:
    return [
        NewTopic(
            name=topic.name,
            num_partitions=topic.num_partitions,
            replication_factor=topic.replication_factor,
            assignments=[(a.partition_index, a.broker_ids) for a in topic.assignments],
            configs={config.name: config.value for config in topic.configs},
        )
        for topic in request.topics
    ]


def create_topics_response(version: int, results: Sequence[CreateTopicResult]) -> Any:
    result_type = _nested(ApiKey.CREATE_TOPICS, version, "topics")
    config_type = (
        _nested(ApiKey.CREATE_TOPICS, version, "topics", "configs") if version >= 5 else None
    )

    def topic(result: CreateTopicResult) -> Any:
        failed = result.error_code is not ErrorCode.none
        configs: tuple[Any, ...] | None = (
            tuple(
                make_entity(
                    config_type,
                    name=entry.name,
                    value=entry.value,
                    read_only=False,
                    config_source=int(entry.source),
                    is_sensitive=False,
                )
                for entry in result.configs
            )
            if config_type is not None and not failed
            else None
        )
        return make_entity(
            result_type,
            name=result.name,
            topic_id=result.topic_id,
            error_code=result.error_code,
            error_message=result.error_message,
            topic_config_error_code=0,
            num_partitions=result.num_partitions,
            replication_factor=result.replication_factor,
            configs=configs,
        )

    return _response(
        ApiKey.CREATE_TOPICS,
        version,
        throttle_time=NO_THROTTLE,
        topics=tuple(topic(r) for r in results),
    )


def create_topics_error(
    version: int, request: Any, error: ErrorCode, message: str | None = None
) -> Any:
    return create_topics_response(
        version, [CreateTopicResult(topic.name, error, message) for topic in request.topics]
    )


def delete_topics_request(version: int, request: Any) -> list[str | UUID]:
    """Names (v0-v5 `topic_names`), or per topic a name or an id (v6 `topics`)."""
    if version < 6:
        return list(request.topic_names)
    return [
        topic.name if topic.name is not None else (topic.topic_id or UUID(int=0))
        for topic in request.topics
    ]


def delete_topics_response(version: int, results: Sequence[DeleteTopicResult]) -> Any:
    result_type = _nested(ApiKey.DELETE_TOPICS, version, "responses")
    return _response(
        ApiKey.DELETE_TOPICS,
        version,
        throttle_time=NO_THROTTLE,
        responses=tuple(
            make_entity(
                result_type,
                name=result.name,
                topic_id=result.topic_id,
                error_code=result.error_code,
                error_message=result.error_message,
            )
            for result in results
        ),
    )


def delete_topics_error(
    version: int, request: Any, error: ErrorCode, message: str | None = None
) -> Any:
    return delete_topics_response(
        version,
        [
            DeleteTopicResult(
                item if isinstance(item, str) else None, _as_uuid(item), error, message
            )
            for item in delete_topics_request(version, request)
        ],
    )


def _as_uuid(item: str | UUID) -> UUID:
    return item if isinstance(item, UUID) else UUID(int=0)


def create_partitions_request(request: Any) -> list[PartitionsIncrease]:
    return [
        PartitionsIncrease(
            name=topic.name,
            count=topic.count,
            assignments=None
            if topic.assignments is None
            else [assignment.broker_ids for assignment in topic.assignments],
        )
        for topic in request.topics
    ]


def create_partitions_response(version: int, results: Sequence[CreatePartitionsResult]) -> Any:
    result_type = _nested(ApiKey.CREATE_PARTITIONS, version, "results")
    return _response(
        ApiKey.CREATE_PARTITIONS,
        version,
        throttle_time=NO_THROTTLE,
        results=tuple(
            make_entity(
                result_type,
                name=result.name,
                error_code=result.error_code,
                error_message=result.error_message,
            )
            for result in results
        ),
    )


def create_partitions_error(
    version: int, request: Any, error: ErrorCode, message: str | None = None
) -> Any:
    return create_partitions_response(
        version, [CreatePartitionsResult(topic.name, error, message) for topic in request.topics]
    )


# --- ElectLeaders --------------------------------------------------------------------------------


def elect_leaders_request(request: Any) -> tuple[ElectionType, list[tuple[str, int]] | None]:
    """The election type and the partitions (None: every partition)."""
    election_type = ElectionType(getattr(request, "election_type", _DEFAULT_ELECTION_TYPE))
    if request.topic_partitions is None:
        return election_type, None
    return election_type, [
        (topic.topic, partition)
        for topic in request.topic_partitions
        for partition in topic.partitions
    ]


def elect_leaders_response(
    version: int, results: Sequence[ElectionResult], error: ErrorCode = ErrorCode.none
) -> Any:
    topic_type = _nested(ApiKey.ELECT_LEADERS, version, "replica_election_results")
    partition_type = _nested(
        ApiKey.ELECT_LEADERS, version, "replica_election_results", "partition_result"
    )
    by_topic: dict[str, list[Any]] = {}
    for result in results:
        by_topic.setdefault(result.topic, []).append(
            make_entity(
                partition_type,
                partition_id=result.partition_id,
                error_code=result.error_code,
                error_message=result.error_message,
            )
        )
    return _response(
        ApiKey.ELECT_LEADERS,
        version,
        throttle_time=NO_THROTTLE,
        error_code=error,
        replica_election_results=tuple(
            make_entity(topic_type, topic=topic, partition_result=tuple(partitions))
            for topic, partitions in by_topic.items()
        ),
    )


# --- IncrementalAlterConfigs ---------------------------------------------------------------------


def incremental_alter_configs_request(request: Any) -> list[AlterConfigsResource]:
    return [
        AlterConfigsResource(
            resource.resource_type,
            resource.resource_name,
            [
                ConfigChange(config.name, config.config_operation, config.value)
                for config in resource.configs
            ],
        )
        for resource in request.resources
    ]


def incremental_alter_configs_response(version: int, results: Sequence[AlterConfigsResult]) -> Any:
    result_type = _nested(ApiKey.INCREMENTAL_ALTER_CONFIGS, version, "responses")
    return _response(
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        version,
        throttle_time=NO_THROTTLE,
        responses=tuple(
            make_entity(
                result_type,
                error_code=result.error_code,
                error_message=result.error_message,
                resource_type=result.resource_type,
                resource_name=result.resource_name,
            )
            for result in results
        ),
    )


def incremental_alter_configs_error(
    version: int, request: Any, error: ErrorCode, message: str | None = None
) -> Any:
    return incremental_alter_configs_response(
        version,
        [
            AlterConfigsResult(resource.resource_type, resource.resource_name, error, message)
            for resource in request.resources
        ],
    )

"""The controller's Kafka APIs on the wire: kio requests in, kio responses out.

Pure translation between the Kafka messages the controller listener serves and the domain
types of `broker_lifecycle`, `topics`, `alter_partition`, `elections`, `reassignment` and
`producer_ids`. One
function builds a response for any version the listener serves (`make_entity` drops the
fields a version lacks), so the served ranges below are the single list of what is spoken.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple, TypeAlias, TypeVar
from uuid import UUID

from kio.schema.alter_partition import v2 as alter_partition_v2
from kio.schema.alter_partition import v3 as alter_partition_v3
from kio.schema.alter_partition_reassignments import v1 as alter_partition_reassignments_v1
from kio.schema.broker_registration import v3 as broker_registration_v3
from kio.schema.broker_registration import v4 as broker_registration_v4
from kio.schema.delete_topics import v6 as delete_topics_v6
from kio.schema.elect_leaders import v0 as elect_leaders_v0
from kio.schema.errors import ErrorCode
from kio.static.protocol import Payload

from controller import acl_wire
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
    UnregistrationOutcome,
)
from controller.elections import ElectionResult, ElectionType
from controller.producer_ids import ProducerIdsOutcome
from controller.reassignment import OngoingReassignment, ReassignmentRequest, ReassignmentResult
from controller.records import BrokerEndpoint, BrokerFeature
from controller.scram import ScramAlteration, ScramDescription, ScramResult
from controller.topics import (
    AlterConfigsResource,
    AlterConfigsResult,
    ConfigChange,
    ConfigOperation,
    CreatePartitionsResult,
    CreateTopicResult,
    DeleteTopicResult,
    NewTopic,
    PartitionsIncrease,
)
from net import messages
from net.api_keys import ApiKey
from net.protocol import NO_THROTTLE, make_entity

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
    ServedVersions(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, 1),
    ServedVersions(ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, 0),
    ServedVersions(ApiKey.UNREGISTER_BROKER, 0, 0),
    ServedVersions(ApiKey.ALTER_CONFIGS, 0, 2),
    ServedVersions(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, 0),
    ServedVersions(ApiKey.ALTER_PARTITION, 2, 3),
    ServedVersions(ApiKey.BROKER_REGISTRATION, 0, 4),
    ServedVersions(ApiKey.BROKER_HEARTBEAT, 0, 2),
    ServedVersions(ApiKey.ALLOCATE_PRODUCER_IDS, 0, 0),
)


# The BrokerRegistration versions that carry the epoch of the broker's clean shutdown (KIP-966).
_RegistrationWithPreviousEpoch: TypeAlias = (
    broker_registration_v3.BrokerRegistrationRequest
    | broker_registration_v4.BrokerRegistrationRequest
)

# ElectLeaders v0 has no election type: it is always a preferred election.
_DEFAULT_ELECTION_TYPE = ElectionType.PREFERRED


# --- broker registration and heartbeats ----------------------------------------------------------


def registration_request(request: messages.BrokerRegistrationRequest) -> RegistrationRequest:
    """A BrokerRegistrationRequest (any version) as the lifecycle takes it."""
    return RegistrationRequest(
        broker_id=request.broker_id,
        incarnation_id=request.incarnation_id or UUID(int=0),
        listeners=tuple(
            BrokerEndpoint(listener.name, listener.host, listener.port, listener.security_protocol)
            for listener in request.listeners
        ),
        rack=request.rack,
        previous_broker_epoch=(
            request.previous_broker_epoch
            if isinstance(request, _RegistrationWithPreviousEpoch)
            else NO_BROKER_EPOCH
        ),
        features=tuple(
            BrokerFeature(f.name, f.min_supported_version, f.max_supported_version)
            for f in request.features
        ),
    )


def registration_response(
    version: int, outcome: RegistrationOutcome
) -> messages.BrokerRegistrationResponse:
    return make_entity(
        messages.BROKER_REGISTRATION_RESPONSES[version],
        throttle_time=NO_THROTTLE,
        error_code=outcome.error,
        broker_epoch=outcome.broker_epoch,
    )


def registration_error(version: int, error: ErrorCode) -> messages.BrokerRegistrationResponse:
    return registration_response(version, RegistrationOutcome(error))


def heartbeat_request(request: messages.BrokerHeartbeatRequest) -> HeartbeatRequest:
    return HeartbeatRequest(
        broker_id=request.broker_id,
        broker_epoch=request.broker_epoch,
        current_metadata_offset=request.current_metadata_offset,
        want_fence=request.want_fence,
        want_shutdown=request.want_shut_down,
    )


def heartbeat_response(version: int, outcome: HeartbeatOutcome) -> messages.BrokerHeartbeatResponse:
    return make_entity(
        messages.BROKER_HEARTBEAT_RESPONSES[version],
        throttle_time=NO_THROTTLE,
        error_code=outcome.error,
        is_caught_up=outcome.is_caught_up,
        is_fenced=outcome.is_fenced,
        should_shut_down=outcome.should_shut_down,
    )


def heartbeat_error(version: int, error: ErrorCode) -> messages.BrokerHeartbeatResponse:
    return heartbeat_response(version, HeartbeatOutcome(error))


# --- AlterPartition ------------------------------------------------------------------------------


def alter_partition_request(request: messages.AlterPartitionRequest) -> AlterPartitionBatch:
    """v2 lists the new ISR as broker ids; v3 with each member's broker epoch (KIP-903)."""

    def members(
        partition: alter_partition_v2.request.PartitionData
        | alter_partition_v3.request.PartitionData,
    ) -> tuple[IsrMember, ...]:
        if isinstance(partition, alter_partition_v3.request.PartitionData):
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


def alter_partition_response(
    version: int, outcome: AlterPartitionBatchOutcome
) -> messages.AlterPartitionResponse:
    topic_type = messages.nested_type(messages.ALTER_PARTITION_RESPONSES, version, "topics")
    partition_type = messages.nested_type(
        messages.ALTER_PARTITION_RESPONSES, version, "topics", "partitions"
    )
    by_topic: dict[UUID, list[object]] = {}
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
    return make_entity(
        messages.ALTER_PARTITION_RESPONSES[version],
        throttle_time=NO_THROTTLE,
        error_code=outcome.error,
        topics=tuple(
            make_entity(topic_type, topic_id=topic_id, partitions=tuple(partitions))
            for topic_id, partitions in by_topic.items()
        ),
    )


def alter_partition_error(version: int, error: ErrorCode) -> messages.AlterPartitionResponse:
    return alter_partition_response(version, AlterPartitionBatchOutcome(error))


# --- AllocateProducerIds -------------------------------------------------------------------------


def producer_ids_response(
    version: int, outcome: ProducerIdsOutcome
) -> messages.AllocateProducerIdsResponse:
    return make_entity(
        messages.ALLOCATE_PRODUCER_IDS_RESPONSES[version],
        throttle_time=NO_THROTTLE,
        error_code=outcome.error,
        producer_id_start=outcome.producer_id_start,
        producer_id_len=outcome.producer_id_len,
    )


def producer_ids_error(version: int, error: ErrorCode) -> messages.AllocateProducerIdsResponse:
    return producer_ids_response(version, ProducerIdsOutcome(error))


# --- CreateTopics, DeleteTopics, CreatePartitions ------------------------------------------------


def create_topics_request(request: messages.CreateTopicsRequest) -> list[NewTopic]:
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


def create_topics_response(
    version: int, results: Sequence[CreateTopicResult]
) -> messages.CreateTopicsResponse:
    result_type = messages.nested_type(messages.CREATE_TOPICS_RESPONSES, version, "topics")
    config_type = (
        messages.nested_type(messages.CREATE_TOPICS_RESPONSES, version, "topics", "configs")
        if version >= 5
        else None
    )

    def topic(result: CreateTopicResult) -> object:
        failed = result.error_code is not ErrorCode.none
        configs: tuple[object, ...] | None = (
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

    return make_entity(
        messages.CREATE_TOPICS_RESPONSES[version],
        throttle_time=NO_THROTTLE,
        topics=tuple(topic(r) for r in results),
    )


def create_topics_error(
    version: int,
    request: messages.CreateTopicsRequest,
    error: ErrorCode,
    message: str | None = None,
) -> messages.CreateTopicsResponse:
    return create_topics_response(
        version, [CreateTopicResult(topic.name, error, message) for topic in request.topics]
    )


def delete_topics_request(request: messages.DeleteTopicsRequest) -> list[str | UUID]:
    """Names (v0-v5 `topic_names`), or per topic a name or an id (v6 `topics`)."""
    if not isinstance(request, delete_topics_v6.DeleteTopicsRequest):
        return list(request.topic_names)
    return [
        topic.name if topic.name is not None else (topic.topic_id or UUID(int=0))
        for topic in request.topics
    ]


def delete_topics_response(
    version: int, results: Sequence[DeleteTopicResult]
) -> messages.DeleteTopicsResponse:
    result_type = messages.nested_type(messages.DELETE_TOPICS_RESPONSES, version, "responses")
    return make_entity(
        messages.DELETE_TOPICS_RESPONSES[version],
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
    version: int,
    request: messages.DeleteTopicsRequest,
    error: ErrorCode,
    message: str | None = None,
) -> messages.DeleteTopicsResponse:
    return delete_topics_response(
        version,
        [
            DeleteTopicResult(
                item if isinstance(item, str) else None, _as_uuid(item), error, message
            )
            for item in delete_topics_request(request)
        ],
    )


def _as_uuid(item: str | UUID) -> UUID:
    return item if isinstance(item, UUID) else UUID(int=0)


def create_partitions_request(
    request: messages.CreatePartitionsRequest,
) -> list[PartitionsIncrease]:
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


def create_partitions_response(
    version: int, results: Sequence[CreatePartitionsResult]
) -> messages.CreatePartitionsResponse:
    result_type = messages.nested_type(messages.CREATE_PARTITIONS_RESPONSES, version, "results")
    return make_entity(
        messages.CREATE_PARTITIONS_RESPONSES[version],
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
    version: int,
    request: messages.CreatePartitionsRequest,
    error: ErrorCode,
    message: str | None = None,
) -> messages.CreatePartitionsResponse:
    return create_partitions_response(
        version, [CreatePartitionsResult(topic.name, error, message) for topic in request.topics]
    )


# --- ElectLeaders --------------------------------------------------------------------------------


def elect_leaders_request(
    request: messages.ElectLeadersRequest,
) -> tuple[ElectionType, list[tuple[str, int]] | None]:
    """The election type and the partitions (None: every partition)."""
    election_type = (
        _DEFAULT_ELECTION_TYPE
        if isinstance(request, elect_leaders_v0.ElectLeadersRequest)
        else ElectionType(request.election_type)
    )
    if request.topic_partitions is None:
        return election_type, None
    return election_type, [
        (topic.topic, partition)
        for topic in request.topic_partitions
        for partition in topic.partitions
    ]


def elect_leaders_response(
    version: int, results: Sequence[ElectionResult], error: ErrorCode = ErrorCode.none
) -> messages.ElectLeadersResponse:
    topic_type = messages.nested_type(
        messages.ELECT_LEADERS_RESPONSES, version, "replica_election_results"
    )
    partition_type = messages.nested_type(
        messages.ELECT_LEADERS_RESPONSES, version, "replica_election_results", "partition_result"
    )
    by_topic: dict[str, list[object]] = {}
    for result in results:
        by_topic.setdefault(result.topic, []).append(
            make_entity(
                partition_type,
                partition_id=result.partition_id,
                error_code=result.error_code,
                error_message=result.error_message,
            )
        )
    return make_entity(
        messages.ELECT_LEADERS_RESPONSES[version],
        throttle_time=NO_THROTTLE,
        error_code=error,
        replica_election_results=tuple(
            make_entity(topic_type, topic=topic, partition_result=tuple(partitions))
            for topic, partitions in by_topic.items()
        ),
    )


# --- IncrementalAlterConfigs ---------------------------------------------------------------------


def incremental_alter_configs_request(
    request: messages.IncrementalAlterConfigsRequest,
) -> list[AlterConfigsResource]:
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


def incremental_alter_configs_response(
    version: int, results: Sequence[AlterConfigsResult]
) -> messages.IncrementalAlterConfigsResponse:
    return _config_results(messages.INCREMENTAL_ALTER_CONFIGS_RESPONSES, version, results)


def incremental_alter_configs_error(
    version: int,
    request: messages.IncrementalAlterConfigsRequest,
    error: ErrorCode,
    message: str | None = None,
) -> messages.IncrementalAlterConfigsResponse:
    return incremental_alter_configs_response(
        version, _refused_resources(request.resources, error, message)
    )


_ConfigsResponse = TypeVar("_ConfigsResponse", bound=Payload)


def _config_results(
    responses: messages.ByVersion[_ConfigsResponse],
    version: int,
    results: Sequence[AlterConfigsResult],
) -> _ConfigsResponse:
    """The answer of (Incremental)AlterConfigs, whose responses have the same shape."""
    result_type = messages.nested_type(responses, version, "responses")
    return make_entity(
        responses[version],
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


def _refused_resources(
    resources: Iterable[Any], error: ErrorCode, message: str | None
) -> list[AlterConfigsResult]:
    """Every resource of an (Incremental)AlterConfigs request refused with `error`."""
    return [
        AlterConfigsResult(resource.resource_type, resource.resource_name, error, message)
        for resource in resources
    ]


# --- AlterPartitionReassignments, ListPartitionReassignments -------------------------------------


def alter_reassignments_request(
    request: messages.AlterPartitionReassignmentsRequest,
) -> tuple[list[ReassignmentRequest], bool]:
    """Each partition's target (None: cancel) and whether the replication factor may change
    (v1's `allow_replication_factor_change`; always in v0)."""
    allow = (
        request.allow_replication_factor_change
        if isinstance(request, alter_partition_reassignments_v1.AlterPartitionReassignmentsRequest)
        else True
    )
    return [
        ReassignmentRequest(
            topic.name,
            partition.partition_index,
            None if partition.replicas is None else tuple(partition.replicas),
        )
        for topic in request.topics
        for partition in topic.partitions
    ], allow


def alter_reassignments_response(
    version: int,
    results: Sequence[ReassignmentResult],
    error: ErrorCode = ErrorCode.none,
    message: str | None = None,
    *,
    allow_replication_factor_change: bool = True,
) -> messages.AlterPartitionReassignmentsResponse:
    """The per-partition answers, or a top-level `error` (then `results` is empty); v1 echoes
    `allow_replication_factor_change`."""
    responses = messages.ALTER_PARTITION_REASSIGNMENTS_RESPONSES
    topic_type = messages.nested_type(responses, version, "responses")
    partition_type = messages.nested_type(responses, version, "responses", "partitions")
    by_topic: dict[str, list[object]] = {}
    for result in results:
        by_topic.setdefault(result.topic, []).append(
            make_entity(
                partition_type,
                partition_index=result.partition_id,
                error_code=result.error_code,
                error_message=result.error_message,
            )
        )
    return make_entity(
        responses[version],
        throttle_time=NO_THROTTLE,
        allow_replication_factor_change=allow_replication_factor_change,
        error_code=error,
        error_message=message,
        responses=tuple(
            make_entity(topic_type, name=topic, partitions=tuple(partitions))
            for topic, partitions in by_topic.items()
        ),
    )


def alter_reassignments_error(
    version: int, error: ErrorCode, message: str | None = None
) -> messages.AlterPartitionReassignmentsResponse:
    return alter_reassignments_response(version, (), error, message)


def list_reassignments_request(
    request: messages.ListPartitionReassignmentsRequest,
) -> list[tuple[str, int]] | None:
    """The (topic, partition) pairs asked for, or None for every partition."""
    if request.topics is None:
        return None
    return [
        (topic.name, partition) for topic in request.topics for partition in topic.partition_indexes
    ]


def list_reassignments_response(
    version: int,
    ongoing: Sequence[OngoingReassignment],
    error: ErrorCode = ErrorCode.none,
) -> messages.ListPartitionReassignmentsResponse:
    responses = messages.LIST_PARTITION_REASSIGNMENTS_RESPONSES
    topic_type = messages.nested_type(responses, version, "topics")
    partition_type = messages.nested_type(responses, version, "topics", "partitions")
    by_topic: dict[str, list[object]] = {}
    for item in ongoing:
        by_topic.setdefault(item.topic, []).append(
            make_entity(
                partition_type,
                partition_index=item.partition_id,
                replicas=item.replicas,
                adding_replicas=item.adding_replicas,
                removing_replicas=item.removing_replicas,
            )
        )
    return make_entity(
        responses[version],
        throttle_time=NO_THROTTLE,
        error_code=error,
        error_message=None,
        topics=tuple(
            make_entity(topic_type, name=topic, partitions=tuple(partitions))
            for topic, partitions in by_topic.items()
        ),
    )


def list_reassignments_error(
    version: int, error: ErrorCode
) -> messages.ListPartitionReassignmentsResponse:
    return list_reassignments_response(version, (), error)


# --- UnregisterBroker ----------------------------------------------------------------------------


def unregister_broker_response(
    version: int, outcome: UnregistrationOutcome
) -> messages.UnregisterBrokerResponse:
    return make_entity(
        messages.UNREGISTER_BROKER_RESPONSES[version],
        throttle_time=NO_THROTTLE,
        error_code=outcome.error,
        error_message=outcome.message,
    )


def unregister_broker_error(version: int, error: ErrorCode) -> messages.UnregisterBrokerResponse:
    return unregister_broker_response(version, UnregistrationOutcome(error))


# --- AlterUserScramCredentials and DescribeUserScramCredentials --------------------------------


def alter_scram_credentials_request(
    request: messages.AlterUserScramCredentialsRequest,
) -> list[ScramAlteration]:
    """The deletions, then the upsertions, of the request."""
    return [
        ScramAlteration(deletion.name, deletion.mechanism) for deletion in request.deletions
    ] + [
        ScramAlteration(
            upsertion.name,
            upsertion.mechanism,
            upsertion.iterations,
            upsertion.salt,
            upsertion.salted_password,
        )
        for upsertion in request.upsertions
    ]


def alter_scram_credentials_response(
    version: int, results: Sequence[ScramResult]
) -> messages.AlterUserScramCredentialsResponse:
    result_type = messages.nested_type(
        messages.ALTER_USER_SCRAM_CREDENTIALS_RESPONSES, version, "results"
    )
    return make_entity(
        messages.ALTER_USER_SCRAM_CREDENTIALS_RESPONSES[version],
        throttle_time=NO_THROTTLE,
        results=tuple(
            make_entity(
                result_type, user=result.user, error_code=result.error, error_message=result.message
            )
            for result in results
        ),
    )


def alter_scram_credentials_error(
    version: int,
    request: messages.AlterUserScramCredentialsRequest,
    error: ErrorCode,
    message: str | None = None,
) -> messages.AlterUserScramCredentialsResponse:
    users = dict.fromkeys(
        [deletion.name for deletion in request.deletions]
        + [upsertion.name for upsertion in request.upsertions]
    )
    return alter_scram_credentials_response(
        version, [ScramResult(user, error, message) for user in users]
    )


def describe_scram_credentials_response(
    version: int,
    descriptions: Sequence[ScramDescription],
    error: ErrorCode = ErrorCode.none,
) -> messages.DescribeUserScramCredentialsResponse:
    """The descriptions of the users' credentials; or, with an `error`, none and the error."""
    responses = messages.DESCRIBE_USER_SCRAM_CREDENTIALS_RESPONSES
    result_type = messages.nested_type(responses, version, "results")
    info_type = messages.nested_type(responses, version, "results", "credential_infos")
    return make_entity(
        responses[version],
        throttle_time=NO_THROTTLE,
        error_code=error,
        error_message=None,
        results=tuple(
            make_entity(
                result_type,
                user=description.user,
                error_code=description.error,
                error_message=description.message,
                credential_infos=tuple(
                    make_entity(info_type, mechanism=int(mechanism), iterations=iterations)
                    for mechanism, iterations in description.credentials
                ),
            )
            for description in descriptions
        ),
    )


# --- AlterConfigs --------------------------------------------------------------------------------


def alter_configs_request(request: messages.AlterConfigsRequest) -> list[AlterConfigsResource]:
    """The resources of a (non-incremental) AlterConfigs request: each given config SET, or
    DELETE where its value is null (`topics.replace_configs` deletes the others)."""
    return [
        AlterConfigsResource(
            resource.resource_type,
            resource.resource_name,
            [
                ConfigChange(
                    config.name,
                    ConfigOperation.DELETE if config.value is None else ConfigOperation.SET,
                    config.value,
                )
                for config in resource.configs
            ],
        )
        for resource in request.resources
    ]


def alter_configs_response(
    version: int, results: Sequence[AlterConfigsResult]
) -> messages.AlterConfigsResponse:
    return _config_results(messages.ALTER_CONFIGS_RESPONSES, version, results)


def alter_configs_error(
    version: int,
    request: messages.AlterConfigsRequest,
    error: ErrorCode,
    message: str | None = None,
) -> messages.AlterConfigsResponse:
    return alter_configs_response(version, _refused_resources(request.resources, error, message))


# --- refusing a forwarded admin request whole ----------------------------------------------------


# By API key: each forwarded admin API's whole refusal.
_FORWARDED_REFUSALS: dict[int, Callable[[int, Any, ErrorCode], Payload]] = {
    ApiKey.CREATE_ACLS: lambda v, r, e: acl_wire.create_acls_error(v, r, e, None),
    ApiKey.DELETE_ACLS: lambda v, r, e: acl_wire.delete_acls_error(v, r, e, None),
    ApiKey.CREATE_TOPICS: create_topics_error,
    ApiKey.DELETE_TOPICS: delete_topics_error,
    ApiKey.CREATE_PARTITIONS: create_partitions_error,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: incremental_alter_configs_error,
    ApiKey.ALTER_CONFIGS: alter_configs_error,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: lambda v, _, e: alter_reassignments_error(v, e),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: lambda v, _, e: list_reassignments_error(v, e),
    ApiKey.UNREGISTER_BROKER: lambda v, _, e: unregister_broker_error(v, e),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: alter_scram_credentials_error,
    ApiKey.ELECT_LEADERS: lambda v, _, e: elect_leaders_response(v, (), e),
}


def forwarded_refusal(version: int, request: Any, error: ErrorCode) -> Payload:
    """The response to an admin request a broker forwards to the controller (CreateTopics,
    DeleteTopics, CreatePartitions, (Incremental)AlterConfigs, ElectLeaders, the reassignment
    APIs, UnregisterBroker, AlterUserScramCredentials, CreateAcls, DeleteAcls) refusing every
    item of it with `error`."""
    return _FORWARDED_REFUSALS[int(request.__api_key__)](version, request, error)

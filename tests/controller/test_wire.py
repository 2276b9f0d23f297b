"""Every version the controller listener serves: its responses encode and decode to the
values the domain outcome holds, and requests of every version translate to the domain."""

from __future__ import annotations

import datetime
import uuid
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from controller import wire
from controller.alter_partition import AlterPartitionBatchOutcome, PartitionIsrResult
from controller.broker_lifecycle import HeartbeatOutcome, RegistrationOutcome, UnregistrationOutcome
from controller.elections import ElectionResult, ElectionType
from controller.partition_state import PartitionState
from controller.producer_ids import ProducerIdsOutcome
from controller.reassignment import OngoingReassignment, ReassignmentRequest, ReassignmentResult
from controller.topic_config import ConfigSource, TopicConfigEntry
from controller.topics import (
    AlterConfigsResult,
    CreatePartitionsResult,
    CreateTopicResult,
    DeleteTopicResult,
)
from net.api_keys import ApiKey
from net.protocol import (
    decode_request_body,
    decode_response,
    encode_request,
    encode_response,
    field_entity_type,
    make_entity,
    read_request_header,
    request_schema,
)


def versions(api_key: int) -> list[int]:
    (served,) = [s for s in wire.SERVED if s.api_key == api_key]
    return list(range(served.min_version, served.max_version + 1))


def round_trip(response: Any) -> Any:
    frame = b"".join(bytes(b) for b in encode_response(7, response))[4:]
    return decode_response(frame, response.__api_key__, response.__version__)


def request_round_trip(request: Any) -> Any:
    frame = b"".join(bytes(b) for b in encode_request(request, 7, "test"))[4:]
    return decode_request_body(read_request_header(frame), frame)


def entity(api_key: int, version: int, *path: str, **values: Any) -> Any:
    schema: Any = request_schema(api_key, version)
    for name in path:
        schema = field_entity_type(schema, name)
    return make_entity(schema, **values)


TOPIC_ID = uuid.UUID(int=5)
TIMEOUT = datetime.timedelta(seconds=30)


@pytest.mark.parametrize("version", versions(ApiKey.CREATE_TOPICS))
def test_create_topics_every_version(version: int) -> None:
    key = ApiKey.CREATE_TOPICS
    request = request_round_trip(
        entity(
            key,
            version,
            topics=(
                entity(
                    key,
                    version,
                    "topics",
                    name="orders",
                    num_partitions=3,
                    replication_factor=2,
                    assignments=(),
                    configs=(
                        entity(key, version, "topics", "configs", name="retention.ms", value="1"),
                    ),
                ),
            ),
        )
    )
    (new_topic,) = wire.create_topics_request(request)
    assert (new_topic.name, new_topic.num_partitions, new_topic.replication_factor) == (
        "orders",
        3,
        2,
    )
    assert new_topic.configs == {"retention.ms": "1"}
    results = [
        CreateTopicResult(
            "orders",
            topic_id=TOPIC_ID,
            num_partitions=3,
            replication_factor=2,
            configs=(TopicConfigEntry("retention.ms", "1", ConfigSource.DYNAMIC_TOPIC_CONFIG),),
        ),
        CreateTopicResult("bad", ErrorCode.invalid_topic_exception, "no"),
    ]
    decoded = round_trip(wire.create_topics_response(version, results))
    assert [(t.name, t.error_code) for t in decoded.topics] == [
        ("orders", ErrorCode.none),
        ("bad", ErrorCode.invalid_topic_exception),
    ]
    if version >= 5:
        assert decoded.topics[0].num_partitions == 3
        assert [(c.name, c.value) for c in decoded.topics[0].configs] == [("retention.ms", "1")]
    if version >= 7:
        assert decoded.topics[0].topic_id == TOPIC_ID


@pytest.mark.parametrize("version", versions(ApiKey.DELETE_TOPICS))
def test_delete_topics_every_version(version: int) -> None:
    key = ApiKey.DELETE_TOPICS
    if version >= 6:
        request = entity(
            key,
            version,
            topics=(
                entity(key, version, "topics", name="orders", topic_id=uuid.UUID(int=0)),
                entity(key, version, "topics", name=None, topic_id=TOPIC_ID),
            ),
            timeout=TIMEOUT,
        )
        assert wire.delete_topics_request(request_round_trip(request)) == [
            "orders",
            TOPIC_ID,
        ]
    else:
        request = entity(key, version, topic_names=("orders",), timeout=TIMEOUT)
        assert wire.delete_topics_request(request_round_trip(request)) == ["orders"]
    decoded = round_trip(
        wire.delete_topics_response(
            version, [DeleteTopicResult("orders", TOPIC_ID, ErrorCode.not_controller)]
        )
    )
    assert [(r.name, r.error_code) for r in decoded.responses] == [
        ("orders", ErrorCode.not_controller)
    ]


@pytest.mark.parametrize("version", versions(ApiKey.CREATE_PARTITIONS))
def test_create_partitions_every_version(version: int) -> None:
    key = ApiKey.CREATE_PARTITIONS
    request = entity(
        key,
        version,
        topics=(
            entity(
                key,
                version,
                "topics",
                name="orders",
                count=4,
                assignments=(entity(key, version, "topics", "assignments", broker_ids=(1, 2)),),
            ),
        ),
        timeout=TIMEOUT,
        validate_only=False,
    )
    (increase,) = wire.create_partitions_request(request_round_trip(request))
    assert (increase.name, increase.count, increase.assignments) == ("orders", 4, [(1, 2)])
    decoded = round_trip(
        wire.create_partitions_response(
            version, [CreatePartitionsResult("orders", ErrorCode.invalid_partitions, "fewer")]
        )
    )
    assert [(r.name, r.error_code, r.error_message) for r in decoded.results] == [
        ("orders", ErrorCode.invalid_partitions, "fewer")
    ]


@pytest.mark.parametrize("version", versions(ApiKey.INCREMENTAL_ALTER_CONFIGS))
def test_incremental_alter_configs_every_version(version: int) -> None:
    key = ApiKey.INCREMENTAL_ALTER_CONFIGS
    config = entity(
        key, version, "resources", "configs", name="retention.ms", config_operation=0, value="5"
    )
    request = entity(
        key,
        version,
        resources=(
            entity(
                key, version, "resources", resource_type=2, resource_name="t", configs=(config,)
            ),
        ),
        validate_only=True,
    )
    (resource,) = wire.incremental_alter_configs_request(request_round_trip(request))
    assert (resource.resource_type, resource.resource_name) == (2, "t")
    assert [(c.name, c.operation, c.value) for c in resource.changes] == [("retention.ms", 0, "5")]
    decoded = round_trip(
        wire.incremental_alter_configs_response(
            version, [AlterConfigsResult(2, "t", ErrorCode.invalid_config, "bad")]
        )
    )
    assert [
        (r.resource_type, r.resource_name, r.error_code, r.error_message) for r in decoded.responses
    ] == [(2, "t", ErrorCode.invalid_config, "bad")]


@pytest.mark.parametrize("version", versions(ApiKey.ELECT_LEADERS))
def test_elect_leaders_every_version(version: int) -> None:
    key = ApiKey.ELECT_LEADERS
    request = entity(
        key,
        version,
        election_type=1,
        topic_partitions=(entity(key, version, "topic_partitions", topic="t", partitions=(0, 2)),),
    )
    election_type, partitions = wire.elect_leaders_request(request_round_trip(request))
    # v0 has no election type: always preferred.
    assert election_type == (ElectionType.PREFERRED if version == 0 else 1)
    assert partitions == [("t", 0), ("t", 2)]
    decoded = round_trip(
        wire.elect_leaders_response(
            version,
            [
                ElectionResult("t", 0, ErrorCode.none),
                ElectionResult("t", 2, ErrorCode.preferred_leader_not_available, "not in ISR"),
            ],
        )
    )
    (topic,) = decoded.replica_election_results
    assert [(p.partition_id, p.error_code) for p in topic.partition_result] == [
        (0, ErrorCode.none),
        (2, ErrorCode.preferred_leader_not_available),
    ]


@pytest.mark.parametrize("version", versions(ApiKey.ALTER_PARTITION))
def test_alter_partition_every_version(version: int) -> None:
    key = ApiKey.ALTER_PARTITION
    partition_values: dict[str, Any] = {
        "partition_index": 1,
        "leader_epoch": 4,
        "leader_recovery_state": 0,
        "partition_epoch": 9,
    }
    if version >= 3:
        partition_values["new_isr_with_epochs"] = tuple(
            entity(key, version, "topics", "partitions", "new_isr_with_epochs", **values)
            for values in (
                {"broker_id": 1, "broker_epoch": 10},
                {"broker_id": 2, "broker_epoch": 20},
            )
        )
    else:
        partition_values["new_isr"] = (1, 2)
    request = entity(
        key,
        version,
        broker_id=1,
        broker_epoch=10,
        topics=(
            entity(
                key,
                version,
                "topics",
                topic_id=TOPIC_ID,
                partitions=(entity(key, version, "topics", "partitions", **partition_values),),
            ),
        ),
    )
    batch = wire.alter_partition_request(request_round_trip(request))
    (change,) = batch.partitions
    assert (batch.broker_id, batch.broker_epoch) == (1, 10)
    assert (change.topic_id, change.partition_id, change.leader_epoch, change.partition_epoch) == (
        TOPIC_ID,
        1,
        4,
        9,
    )
    expected_epochs = (10, 20) if version >= 3 else (-1, -1)
    assert [(m.broker_id, m.broker_epoch) for m in change.new_isr] == list(
        zip((1, 2), expected_epochs, strict=True)
    )
    state = PartitionState(
        replicas=(1, 2), isr=(1, 2), leader=1, leader_epoch=4, partition_epoch=10
    )
    outcome = AlterPartitionBatchOutcome(
        ErrorCode.none,
        (
            PartitionIsrResult(TOPIC_ID, 1, ErrorCode.none, state),
            PartitionIsrResult(TOPIC_ID, 2, ErrorCode.fenced_leader_epoch, None),
        ),
    )
    (topic,) = round_trip(wire.alter_partition_response(version, outcome)).topics
    assert [
        (p.partition_index, p.error_code, p.isr, p.partition_epoch) for p in topic.partitions
    ] == [
        (1, ErrorCode.none, (1, 2), 10),
        (2, ErrorCode.fenced_leader_epoch, (), -1),
    ]


@pytest.mark.parametrize("version", versions(ApiKey.BROKER_REGISTRATION))
def test_broker_registration_every_version(version: int) -> None:
    key = ApiKey.BROKER_REGISTRATION
    incarnation = uuid.uuid4()
    request = entity(
        key,
        version,
        broker_id=3,
        cluster_id="c",
        incarnation_id=incarnation,
        listeners=(
            entity(
                key,
                version,
                "listeners",
                name="PLAINTEXT",
                host="h",
                port=9092,
                security_protocol=0,
            ),
        ),
        features=(),
        rack="r1",
        previous_broker_epoch=42,
    )
    registration = wire.registration_request(request_round_trip(request))
    assert (registration.broker_id, registration.incarnation_id, registration.rack) == (
        3,
        incarnation,
        "r1",
    )
    assert registration.listeners[0].port == 9092
    # PreviousBrokerEpoch arrived in v3.
    assert registration.previous_broker_epoch == (42 if version >= 3 else -1)
    decoded = round_trip(
        wire.registration_response(version, RegistrationOutcome(ErrorCode.none, 77))
    )
    assert (decoded.error_code, decoded.broker_epoch) == (ErrorCode.none, 77)


@pytest.mark.parametrize("version", versions(ApiKey.BROKER_HEARTBEAT))
def test_broker_heartbeat_every_version(version: int) -> None:
    request = entity(
        ApiKey.BROKER_HEARTBEAT,
        version,
        broker_id=3,
        broker_epoch=77,
        current_metadata_offset=100,
        want_fence=False,
        want_shut_down=True,
    )
    heartbeat = wire.heartbeat_request(request_round_trip(request))
    assert (heartbeat.broker_id, heartbeat.broker_epoch, heartbeat.current_metadata_offset) == (
        3,
        77,
        100,
    )
    assert heartbeat.want_shutdown and not heartbeat.want_fence
    outcome = HeartbeatOutcome(ErrorCode.none, is_caught_up=True, is_fenced=False)
    decoded = round_trip(wire.heartbeat_response(version, outcome))
    assert (decoded.is_caught_up, decoded.is_fenced, decoded.should_shut_down) == (
        True,
        False,
        False,
    )


def test_allocate_producer_ids() -> None:
    decoded = round_trip(
        wire.producer_ids_response(0, ProducerIdsOutcome(ErrorCode.none, 2000, 1000))
    )
    assert (decoded.producer_id_start, decoded.producer_id_len) == (2000, 1000)


@pytest.mark.parametrize("version", versions(ApiKey.ALTER_PARTITION_REASSIGNMENTS))
def test_alter_partition_reassignments_every_version(version: int) -> None:
    key = ApiKey.ALTER_PARTITION_REASSIGNMENTS
    request = request_round_trip(
        entity(
            key,
            version,
            timeout=TIMEOUT,
            allow_replication_factor_change=False,
            topics=(
                entity(
                    key,
                    version,
                    "topics",
                    name="orders",
                    partitions=(
                        entity(
                            key, version, "topics", "partitions", partition_index=0, replicas=(3, 4)
                        ),
                        entity(
                            key, version, "topics", "partitions", partition_index=1, replicas=None
                        ),
                    ),
                ),
            ),
        )
    )
    asked, allow = wire.alter_reassignments_request(request)
    assert asked == [
        ReassignmentRequest("orders", 0, (3, 4)),
        ReassignmentRequest("orders", 1, None),
    ]
    assert allow is (version == 0)  # v0 has no such field: the factor may always change
    results = [
        ReassignmentResult("orders", 0, ErrorCode.none),
        ReassignmentResult("orders", 1, ErrorCode.no_reassignment_in_progress, "none"),
    ]
    decoded = round_trip(wire.alter_reassignments_response(version, results))
    assert decoded.error_code == ErrorCode.none
    assert [
        (t.name, p.partition_index, p.error_code, p.error_message)
        for t in decoded.responses
        for p in t.partitions
    ] == [
        ("orders", 0, ErrorCode.none, None),
        ("orders", 1, ErrorCode.no_reassignment_in_progress, "none"),
    ]
    refused = round_trip(wire.alter_reassignments_error(version, ErrorCode.not_controller))
    assert (refused.error_code, refused.responses) == (ErrorCode.not_controller, ())


@pytest.mark.parametrize("version", versions(ApiKey.LIST_PARTITION_REASSIGNMENTS))
def test_list_partition_reassignments_every_version(version: int) -> None:
    key = ApiKey.LIST_PARTITION_REASSIGNMENTS
    every = request_round_trip(entity(key, version, timeout=TIMEOUT, topics=None))
    assert wire.list_reassignments_request(every) is None
    named = request_round_trip(
        entity(
            key,
            version,
            timeout=TIMEOUT,
            topics=(entity(key, version, "topics", name="orders", partition_indexes=(0, 2)),),
        )
    )
    assert wire.list_reassignments_request(named) == [("orders", 0), ("orders", 2)]
    decoded = round_trip(
        wire.list_reassignments_response(
            version, [OngoingReassignment("orders", 0, (3, 4, 1, 2), (3, 4), (1, 2))]
        )
    )
    ((topic,),) = [decoded.topics]
    ((partition,),) = [topic.partitions]
    assert (topic.name, partition.partition_index) == ("orders", 0)
    assert (partition.replicas, partition.adding_replicas, partition.removing_replicas) == (
        (3, 4, 1, 2),
        (3, 4),
        (1, 2),
    )


def test_unregister_broker() -> None:
    decoded = round_trip(
        wire.unregister_broker_response(
            0, UnregistrationOutcome(ErrorCode.invalid_request, "still hosts replicas")
        )
    )
    assert (decoded.error_code, decoded.error_message) == (
        ErrorCode.invalid_request,
        "still hosts replicas",
    )
    assert round_trip(wire.unregister_broker_error(0, ErrorCode.not_controller)).error_code == (
        ErrorCode.not_controller
    )

"""CreateTopics, DeleteTopics and CreatePartitions: requests in, metadata records and results out.

Pure: each function reads a `MetadataImage` and returns the records to append to the metadata
log with one result per topic, carrying Kafka's error code and message. The caller appends the
records (all of them, atomically, as Kafka's `ControllerResult.atomicOf`) and answers the client.

The validation, its order and its messages follow Kafka's KRaft controller
(`ControllerApis.createTopics / deleteTopics`, `ReplicationControlManager.createTopics /
createPartitions / deleteTopic`, `TopicRecord.validate`, `LogConfig` for topic configs):

- a name given twice in one request: INVALID_REQUEST "Duplicate topic name.";
- `__cluster_metadata`: INVALID_REQUEST;
- a bad name (empty, "." or "..", longer than 249, other than [a-zA-Z0-9._-]), or one that
  differs from an existing topic's only by '.' versus '_' (they share metric names):
  INVALID_TOPIC_EXCEPTION;
- an existing topic: TOPIC_ALREADY_EXISTS;
- a null, unknown or invalid config value: INVALID_CONFIG;
- manual assignments together with a partition count or replication factor: INVALID_REQUEST;
  bad assignments: INVALID_REPLICA_ASSIGNMENT;
- a partition count of 0 or below -1: INVALID_PARTITIONS; a replication factor of 0 or below
  -1, or above the number of usable brokers: INVALID_REPLICATION_FACTOR.

A request asking for more than 10,000 partitions in all, or that would write more than 10,000
records, raises `OperationTooLargeError` before anything is placed (`controller.limits`).

Two deliberate differences from Kafka. Replicas are placed only on usable brokers (unfenced and
not in controlled shutdown), where Kafka's placer may put followers on fenced brokers when it
runs short. And two topics of one request whose names collide by '.' versus '_' are refused
like a collision with an existing topic (Kafka checks only the existing topics, so one request
can create both).

As in Kafka, `min.insync.replicas` above the replication factor is accepted (producers with
acks=all then get NOT_ENOUGH_REPLICAS), and internal topics such as `__consumer_offsets` may be
deleted.
"""

from __future__ import annotations

import re
import uuid
from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Generic, TypeVar
from uuid import UUID

from kio.schema.errors import ErrorCode

from controller.broker_config import (
    DYNAMIC_BROKER_CONFIGS,
    broker_resource_problem,
    dynamic_broker_config_problem,
    static_broker_config_problem,
)
from controller.image import BrokerRegistration, ConfigResource, MetadataImage
from controller.limits import (
    MAX_PARTITIONS_PER_REQUEST,
    MAX_RECORDS_PER_USER_OP,
    TOO_MANY_PARTITIONS,
    TOO_MANY_RECORDS,
    OperationTooLargeError,
)
from controller.partition_state import PartitionState
from controller.placement import (
    PlacementBroker,
    PlacementError,
    place_replicas,
    start_for_topic,
    validate_manual_assignment,
)
from controller.records import (
    ConfigRecord,
    ConfigResourceType,
    MetadataRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RemoveTopicRecord,
    TopicRecord,
)
from controller.topic_config import (
    TOPIC_CONFIGS,
    ConfigType,
    TopicConfigEntry,
    effective_topic_configs,
    topic_config_problem,
)

# Kafka's Topic.MAX_NAME_LENGTH: a partition's directory name is the topic name plus "-" and the
# partition index, and must stay within the 255 bytes file systems allow.
MAX_TOPIC_NAME_LENGTH = 249
CLUSTER_METADATA_TOPIC = "__cluster_metadata"
OFFSETS_TOPIC = "__consumer_offsets"
# Topics the brokers themselves write (Kafka's Topic.isInternal): clients may read them, and
# may not produce to them.
INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC, "__transaction_state"})
_LEGAL_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]+")
_ZERO_UUID = UUID(int=0)


@dataclass(frozen=True, slots=True)
class TopicDefaults:
    """What a CreateTopics request leaves out: the broker's `num.partitions`,
    `default.replication.factor`, and its values for topic configs (by topic config name,
    e.g. the broker's `min.insync.replicas`), which override Kafka's defaults."""

    num_partitions: int = 1
    replication_factor: int = 1
    configs: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class NewTopic:
    """One topic of a CreateTopics request.

    -1 for `num_partitions` / `replication_factor` means the default, and is required with
    `assignments`: (partition index, broker ids) pairs as the request lists them. `configs`
    maps names to values; a null value is refused, as Kafka does.
    """

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    assignments: Sequence[tuple[int, Sequence[int]]] = ()
    configs: Mapping[str, str | None] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CreateTopicResult:
    """The answer for one topic of CreateTopics; the topic fields are set only on success."""

    name: str
    error_code: ErrorCode = ErrorCode.none
    error_message: str | None = None
    topic_id: UUID = _ZERO_UUID
    num_partitions: int = -1
    replication_factor: int = -1
    configs: tuple[TopicConfigEntry, ...] = ()


@dataclass(frozen=True, slots=True)
class DeleteTopicResult:
    """The answer for one topic of DeleteTopics: `name` is None for an unknown topic id."""

    name: str | None
    topic_id: UUID
    error_code: ErrorCode = ErrorCode.none
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class PartitionsIncrease:
    """One topic of a CreatePartitions request: the new total `count`, and optionally the
    replicas of each new partition, in partition order."""

    name: str
    count: int
    assignments: Sequence[Sequence[int]] | None = None


@dataclass(frozen=True, slots=True)
class CreatePartitionsResult:
    """The answer for one topic of CreatePartitions."""

    name: str
    error_code: ErrorCode = ErrorCode.none
    error_message: str | None = None


_Result = TypeVar("_Result")


@dataclass(frozen=True, slots=True)
class TopicsOutcome(Generic[_Result]):
    """The records to append (all or none) and one result per topic of the request."""

    records: tuple[MetadataRecord, ...]
    results: tuple[_Result, ...]


class TopicError(Exception):
    """A topic of a request is refused with `error_code`."""

    def __init__(self, error_code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message


# --- names and configs ---------------------------------------------------------------------------


def validate_topic_name(name: str) -> None:
    """Kafka's `Topic.validate`: TopicError with INVALID_TOPIC_EXCEPTION for a bad name."""
    if not name:
        raise TopicError(
            ErrorCode.invalid_topic_exception, "TopicRecord name is illegal, it can't be empty"
        )
    if name in (".", ".."):
        raise TopicError(
            ErrorCode.invalid_topic_exception, 'TopicRecord name cannot be "." or ".."'
        )
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise TopicError(
            ErrorCode.invalid_topic_exception,
            f"TopicRecord name is illegal, it can't be longer than {MAX_TOPIC_NAME_LENGTH} "
            f"characters, topic name: {name}",
        )
    if not _LEGAL_TOPIC_NAME.fullmatch(name):
        raise TopicError(
            ErrorCode.invalid_topic_exception,
            f'TopicRecord name "{name}" is illegal, it contains a character other than ASCII '
            "alphanumerics, '.', '_' and '-'",
        )


def _unified_name(name: str) -> str:
    """Kafka's `Topic.unifyCollisionChars`: metric names turn '.' into '_', so "a.b" and "a_b"
    would report as one topic."""
    return name.replace(".", "_")


def validate_topic_config(name: str, value: str) -> None:
    """Checks one topic config as Kafka's LogConfig does; TopicError with INVALID_CONFIG."""
    problem = topic_config_problem(name, value)
    if problem is not None:
        raise TopicError(ErrorCode.invalid_config, problem)


# --- brokers and partitions ----------------------------------------------------------------------


def _is_usable(broker: BrokerRegistration) -> bool:
    """May host new replicas and join a new ISR (Kafka's `ClusterControlManager.isActive`)."""
    return not broker.fenced and not broker.in_controlled_shutdown


def _new_partition(image: MetadataImage, replicas: Sequence[int]) -> PartitionState | None:
    """A new partition on `replicas`: the ISR is its usable replicas, the first leads (Kafka's
    `buildPartitionRegistration`), epochs 0. None if no replica is usable."""
    isr = tuple(broker for broker in replicas if _is_usable(image.brokers[broker]))
    if not isr:
        return None
    return PartitionState(replicas=tuple(replicas), isr=isr, leader=isr[0])


def _placed_partitions(
    image: MetadataImage, name: str, count: int, replication_factor: int, first_partition: int
) -> list[PartitionState]:
    """Partitions `first_partition`.. of topic `name`, placed on the usable brokers."""
    brokers = [
        PlacementBroker(broker.broker_id, broker.rack)
        for broker in image.brokers.values()
        if _is_usable(broker)
    ]
    try:
        placement = place_replicas(
            brokers,
            count,
            replication_factor,
            start=start_for_topic(name),
            first_partition=first_partition,
        )
    except PlacementError as error:
        if error.error_code is ErrorCode.invalid_replication_factor:
            raise TopicError(
                error.error_code,
                f"Unable to replicate the partition {replication_factor} time(s): {error}",
            ) from error
        raise TopicError(error.error_code, str(error)) from error
    # Every placed replica is usable, so every partition gets an ISR and a leader.
    return [PartitionState(tuple(replicas), tuple(replicas), replicas[0]) for replicas in placement]


def _assigned_partitions(
    image: MetadataImage,
    assignments: Sequence[tuple[int, Sequence[int]]],
    first_partition: int,
    replication_factor: int | None,
) -> list[PartitionState]:
    """The partitions of an operator's assignment; INVALID_REPLICA_ASSIGNMENT if it is bad.

    As in Kafka, the assignment may name any registered broker, fenced ones included, but each
    partition needs a usable one to lead it.
    """
    try:
        ordered = validate_manual_assignment(
            assignments,
            image.brokers.keys(),
            first_partition=first_partition,
            replication_factor=replication_factor,
        )
    except PlacementError as error:
        raise TopicError(error.error_code, str(error)) from error
    partitions = []
    for partition_id, replicas in enumerate(ordered, start=first_partition):
        state = _new_partition(image, replicas)
        if state is None:
            raise TopicError(
                ErrorCode.invalid_replica_assignment,
                f"All brokers specified in the manual partition assignment for partition "
                f"{partition_id} are fenced or in controlled shutdown.",
            )
        partitions.append(state)
    return partitions


_Key = TypeVar("_Key", bound=Hashable)


def _duplicates(names: Sequence[_Key]) -> set[_Key]:
    return {name for name, count in Counter(names).items() if count > 1}


# --- CreateTopics --------------------------------------------------------------------------------


def create_topics(
    image: MetadataImage,
    requests: Sequence[NewTopic],
    defaults: TopicDefaults,
    *,
    validate_only: bool,
    new_topic_id: Callable[[], UUID] = uuid.uuid4,
) -> TopicsOutcome[CreateTopicResult]:
    """The records creating the topics of a CreateTopics request, and one result per name.

    Results come in request order, one per distinct name. With `validate_only` the results are
    those a real creation would give (topic ids included) and there are no records.
    `new_topic_id` draws each created topic's id. Raises OperationTooLargeError, before any
    other check, when the request asks for more than MAX_PARTITIONS_PER_REQUEST partitions
    (as Kafka does, validate-only requests included).
    """
    if _requested_partitions(requests, defaults) > MAX_PARTITIONS_PER_REQUEST:
        raise OperationTooLargeError(TOO_MANY_PARTITIONS)
    duplicates = _duplicates([request.name for request in requests])
    # Unified names of the existing topics and of those this request creates so far.
    taken_unified = {_unified_name(name): name for name in image.topic_ids}
    records: list[MetadataRecord] = []
    results: dict[str, CreateTopicResult] = {}
    for request in requests:
        if request.name in results:
            continue
        if request.name in duplicates:
            results[request.name] = CreateTopicResult(
                request.name, ErrorCode.invalid_request, "Duplicate topic name."
            )
            continue
        try:
            topic_records, result = _create_topic(
                image, request, defaults, taken_unified, new_topic_id
            )
        except TopicError as error:
            results[request.name] = CreateTopicResult(request.name, error.error_code, error.message)
            continue
        taken_unified[_unified_name(request.name)] = request.name
        records.extend(topic_records)
        results[request.name] = result
    return TopicsOutcome(() if validate_only else tuple(records), tuple(results.values()))


def _requested_partitions(requests: Sequence[NewTopic], defaults: TopicDefaults) -> int:
    """The partitions a CreateTopics asks for, counted as Kafka's
    `validateTotalNumberOfPartitions` counts them: a topic's assignments, else its count (the
    default for -1, nothing for other invalid counts)."""
    total = 0
    for request in requests:
        if request.assignments:
            total += len(request.assignments)
        elif request.num_partitions == -1:
            total += defaults.num_partitions
        elif request.num_partitions > 0:
            total += request.num_partitions
    return total


def _create_topic(
    image: MetadataImage,
    request: NewTopic,
    defaults: TopicDefaults,
    taken_unified: Mapping[str, str],
    new_topic_id: Callable[[], UUID],
) -> tuple[list[MetadataRecord], CreateTopicResult]:
    """The records and result of one topic, in Kafka's order of checks; raises TopicError."""
    name = request.name
    if name == CLUSTER_METADATA_TOPIC:
        raise TopicError(
            ErrorCode.invalid_request, f"Creation of internal topic {name} is prohibited."
        )
    validate_topic_name(name)
    if name in image.topic_ids:
        raise TopicError(ErrorCode.topic_already_exists, f"TopicRecord '{name}' already exists.")
    colliding = taken_unified.get(_unified_name(name))
    if colliding is not None:
        raise TopicError(
            ErrorCode.invalid_topic_exception,
            f"TopicRecord '{name}' collides with existing topic: {colliding}",
        )
    configs = _validated_configs(request.configs)
    partitions = _new_partitions(image, request, defaults)
    topic_id = new_topic_id()
    records: list[MetadataRecord] = [TopicRecord(name, topic_id)]
    # Kafka writes the ConfigRecords after the TopicRecord and before the PartitionRecords.
    records.extend(
        ConfigRecord(ConfigResourceType.TOPIC, name, key, value)
        for key, value in sorted(configs.items())
    )
    records.extend(
        PartitionRecord.of(topic_id, partition_id, state)
        for partition_id, state in enumerate(partitions)
    )
    result = CreateTopicResult(
        name,
        topic_id=topic_id,
        num_partitions=len(partitions),
        replication_factor=len(partitions[0].replicas),
        configs=effective_topic_configs(configs, defaults.configs),
    )
    return records, result


def _validated_configs(configs: Mapping[str, str | None]) -> dict[str, str]:
    """The topic's config overrides; TopicError with INVALID_CONFIG if one is null or bad."""
    nulls = sorted(key for key, value in configs.items() if value is None)
    if nulls:
        raise TopicError(
            ErrorCode.invalid_config,
            f"Null value not supported for topic configs: {','.join(nulls)}",
        )
    checked = {key: value for key, value in configs.items() if value is not None}
    for key, value in checked.items():
        validate_topic_config(key, value)
    return checked


def _new_partitions(
    image: MetadataImage, request: NewTopic, defaults: TopicDefaults
) -> list[PartitionState]:
    """The new topic's partitions, assigned by the operator or placed; raises TopicError."""
    if request.assignments:
        if request.replication_factor != -1:
            raise TopicError(
                ErrorCode.invalid_request,
                "A manual partition assignment was specified, but replication factor was not "
                "set to -1.",
            )
        if request.num_partitions != -1:
            raise TopicError(
                ErrorCode.invalid_request,
                "A manual partition assignment was specified, but numPartitions was not set to -1.",
            )
        return _assigned_partitions(
            image, request.assignments, first_partition=0, replication_factor=None
        )
    if request.replication_factor < -1 or request.replication_factor == 0:
        raise TopicError(
            ErrorCode.invalid_replication_factor,
            "Replication factor must be larger than 0, or -1 to use the default value.",
        )
    if request.num_partitions < -1 or request.num_partitions == 0:
        raise TopicError(
            ErrorCode.invalid_partitions,
            "Number of partitions was set to an invalid non-positive value.",
        )
    num_partitions = (
        defaults.num_partitions if request.num_partitions == -1 else request.num_partitions
    )
    replication_factor = (
        defaults.replication_factor
        if request.replication_factor == -1
        else request.replication_factor
    )
    return _placed_partitions(image, request.name, num_partitions, replication_factor, 0)


# --- DeleteTopics --------------------------------------------------------------------------------


def delete_topics(
    image: MetadataImage, names_or_ids: Sequence[str | UUID]
) -> TopicsOutcome[DeleteTopicResult]:
    """The RemoveTopicRecords of a DeleteTopics request, and one result per name or id.

    Topics may be named (v0-v5, and v6 with a name) or given by id (v6). As in Kafka's
    ControllerApis: a name or id given twice, the zero id, or a name whose topic's id is also
    given, is INVALID_REQUEST; an unknown name UNKNOWN_TOPIC_OR_PARTITION; an unknown id
    UNKNOWN_TOPIC_ID. Results come in request order, one per distinct name or id.
    """
    counts = Counter(names_or_ids)
    given_ids = {item for item in names_or_ids if isinstance(item, UUID)}
    records: list[MetadataRecord] = []
    results: dict[str | UUID, DeleteTopicResult] = {}
    for item in names_or_ids:
        if item in results:
            continue
        results[item] = _delete_topic(image, item, counts[item] > 1, given_ids)
        if results[item].error_code is ErrorCode.none:
            records.append(RemoveTopicRecord(results[item].topic_id))
    return TopicsOutcome(tuple(records), tuple(results.values()))


def _delete_topic(
    image: MetadataImage, item: str | UUID, duplicated: bool, given_ids: set[UUID]
) -> DeleteTopicResult:
    """The result of deleting one named or identified topic."""
    if isinstance(item, UUID):
        if duplicated:
            return DeleteTopicResult(None, item, ErrorCode.invalid_request, "Duplicate topic id.")
        if item == _ZERO_UUID:
            return DeleteTopicResult(
                None,
                item,
                ErrorCode.invalid_request,
                f"Attempt to find topic with invalid topicId {item}",
            )
        topic = image.topics.get(item)
        if topic is None:
            return DeleteTopicResult(
                None, item, ErrorCode.unknown_topic_id, "This server does not host this topic ID."
            )
        return DeleteTopicResult(topic.name, item)
    if duplicated:
        return DeleteTopicResult(
            item, _ZERO_UUID, ErrorCode.invalid_request, "Duplicate topic name."
        )
    topic_id = image.topic_ids.get(item)
    if topic_id is None:
        return DeleteTopicResult(
            item,
            _ZERO_UUID,
            ErrorCode.unknown_topic_or_partition,
            "This server does not host this topic-partition.",
        )
    if topic_id in given_ids:
        # The id's own entry deletes the topic once; this one only reports the overlap.
        return DeleteTopicResult(
            item,
            topic_id,
            ErrorCode.invalid_request,
            "The provided topic name maps to an ID that was already supplied.",
        )
    return DeleteTopicResult(item, topic_id)


# --- CreatePartitions ----------------------------------------------------------------------------


def create_partitions(
    image: MetadataImage, requests: Sequence[PartitionsIncrease], *, validate_only: bool
) -> TopicsOutcome[CreatePartitionsResult]:
    """The PartitionRecords of a CreatePartitions request, and one result per topic name.

    New partitions keep the topic's replication factor (that of partition 0) and continue its
    placement: the same start as at creation, from the current partition count on, so they land
    where creating them with the topic would have put them. With `validate_only`, no records.

    Raises OperationTooLargeError as soon as a topic's new partitions would take the request
    past MAX_RECORDS_PER_USER_OP records, before they are placed. (Kafka's controller checks
    the same bound while it appends them, but answers that topic UNKNOWN_SERVER_ERROR and keeps
    the records appended before the bound; refusing the whole request as its other operations
    do writes nothing half-done.)
    """
    duplicates = _duplicates([request.name for request in requests])
    records: list[MetadataRecord] = []
    results: dict[str, CreatePartitionsResult] = {}
    for request in requests:
        if request.name in results:
            continue
        if request.name in duplicates:
            results[request.name] = CreatePartitionsResult(
                request.name, ErrorCode.invalid_request, "Duplicate topic name."
            )
            continue
        try:
            records.extend(
                _create_partitions(image, request, MAX_RECORDS_PER_USER_OP - len(records))
            )
        except TopicError as error:
            results[request.name] = CreatePartitionsResult(
                request.name, error.error_code, error.message
            )
            continue
        results[request.name] = CreatePartitionsResult(request.name)
    return TopicsOutcome(() if validate_only else tuple(records), tuple(results.values()))


def _create_partitions(
    image: MetadataImage, request: PartitionsIncrease, room: int
) -> list[PartitionRecord]:
    """The PartitionRecords adding partitions to one topic; raises TopicError, or
    OperationTooLargeError if they would be more than `room`."""
    topic = image.topic(request.name)
    if topic is None:
        raise TopicError(
            ErrorCode.unknown_topic_or_partition,
            "This server does not host this topic-partition.",
        )
    current = len(topic.partitions)
    if request.count == current:
        raise TopicError(
            ErrorCode.invalid_partitions, f"TopicRecord already has {current} partition(s)."
        )
    if request.count < current:
        raise TopicError(
            ErrorCode.invalid_partitions,
            f"The topic {request.name} currently has {current} partition(s); {request.count} "
            "would not be an increase.",
        )
    additional = request.count - current
    if additional > room:
        raise OperationTooLargeError(TOO_MANY_RECORDS)
    replication_factor = len(topic.partitions[0].replicas)
    if request.assignments is None:
        partitions = _placed_partitions(
            image, request.name, additional, replication_factor, first_partition=current
        )
    else:
        if len(request.assignments) != additional:
            raise TopicError(
                ErrorCode.invalid_replica_assignment,
                f"Attempted to add {additional} additional partition(s), but only "
                f"{len(request.assignments)} assignment(s) were specified.",
            )
        partitions = _assigned_partitions(
            image,
            list(enumerate(request.assignments, start=current)),
            first_partition=current,
            replication_factor=replication_factor,
        )
    return [
        PartitionRecord.of(topic.topic_id, partition_id, state)
        for partition_id, state in enumerate(partitions, start=current)
    ]


# --- IncrementalAlterConfigs ---------------------------------------------------------------------


class ConfigOperation(IntEnum):
    """IncrementalAlterConfigs' operation on one key (Kafka's AlterConfigOp.OpType)."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


@dataclass(frozen=True, slots=True)
class ConfigChange:
    """One key of an IncrementalAlterConfigs resource."""

    name: str
    operation: int
    value: str | None


@dataclass(frozen=True, slots=True)
class AlterConfigsResource:
    """One resource of an IncrementalAlterConfigs request (Kafka's resource type numbers)."""

    resource_type: int
    resource_name: str
    changes: Sequence[ConfigChange]


@dataclass(frozen=True, slots=True)
class AlterConfigsResult:
    """The answer for one resource of IncrementalAlterConfigs."""

    resource_type: int
    resource_name: str
    error_code: ErrorCode = ErrorCode.none
    error_message: str | None = None


def incremental_alter_configs(
    image: MetadataImage, requests: Sequence[AlterConfigsResource], *, validate_only: bool
) -> TopicsOutcome[AlterConfigsResult]:
    """The ConfigRecords of an IncrementalAlterConfigs request, and one result per resource.

    As Kafka's ConfigurationControlManager: each resource succeeds or fails on its own; a topic
    must exist; every resulting value is validated as at topic creation; APPEND and SUBTRACT
    apply only to list configs. A BROKER resource ("" for the cluster-wide defaults, or a
    broker id) takes the dynamic broker configs only (`controller.broker_config`). A changed
    `min.insync.replicas` clears the ELR and LastKnownELR of the topic's partitions (KIP-966:
    they were chosen against the old minimum). With `validate_only`, no records.
    """
    keys = [(request.resource_type, request.resource_name) for request in requests]
    duplicates = _duplicates(keys)
    records: list[MetadataRecord] = []
    results: list[AlterConfigsResult] = []
    for request, key in zip(requests, keys, strict=True):
        if key in duplicates:
            results.append(
                AlterConfigsResult(*key, ErrorCode.invalid_request, "Duplicate resource.")
            )
            continue
        try:
            if request.resource_type == ConfigResourceType.BROKER:
                configs = _alter_broker_configs(image, request)
            else:
                configs = _alter_topic_configs(image, request)
        except TopicError as error:
            results.append(AlterConfigsResult(*key, error.error_code, error.message))
            continue
        records.extend(configs)
        if any(config.key == "min.insync.replicas" for config in configs):
            records.extend(_elr_resets(image, request.resource_name))
        results.append(AlterConfigsResult(*key))
    return TopicsOutcome(() if validate_only else tuple(records), tuple(results))


def replace_configs(
    image: MetadataImage, requests: Sequence[AlterConfigsResource], *, validate_only: bool
) -> TopicsOutcome[AlterConfigsResult]:
    """The ConfigRecords of a (non-incremental) AlterConfigs request, and one result per
    resource: as Kafka's legacy AlterConfigs, the configs given become the resource's whole
    set of overrides (each one SET, or DELETE for a null value), every other override it has is
    deleted; validated as `incremental_alter_configs` validates."""
    return incremental_alter_configs(
        image,
        [_as_replacement(image, request) for request in requests],
        validate_only=validate_only,
    )


def _as_replacement(image: MetadataImage, request: AlterConfigsResource) -> AlterConfigsResource:
    """`request` with a DELETE of each override of the resource that it does not name."""
    if request.resource_type != ConfigResourceType.TOPIC:
        return request
    given = {change.name for change in request.changes}
    dropped = [
        ConfigChange(name, ConfigOperation.DELETE, None)
        for name in sorted(image.topic_configs(request.resource_name))
        if name not in given
    ]
    return AlterConfigsResource(
        request.resource_type, request.resource_name, [*request.changes, *dropped]
    )


def _alter_topic_configs(image: MetadataImage, request: AlterConfigsResource) -> list[ConfigRecord]:
    """The ConfigRecords of one resource's changes; raises TopicError."""
    if request.resource_type != ConfigResourceType.TOPIC:
        raise TopicError(
            ErrorCode.invalid_request,
            f"Altering configs of resource type {request.resource_type} is not supported.",
        )
    name = request.resource_name
    if image.topic(name) is None:
        raise TopicError(
            ErrorCode.unknown_topic_or_partition,
            "This server does not host this topic-partition.",
        )
    repeated = _duplicates([change.name for change in request.changes])
    if repeated:
        raise TopicError(
            ErrorCode.invalid_request,
            f"Error due to duplicate config keys: {', '.join(sorted(repeated))}",
        )
    current = dict(image.topic_configs(name))
    records: list[ConfigRecord] = []
    for change in request.changes:
        definition = TOPIC_CONFIGS.get(change.name)
        if definition is None:
            raise TopicError(ErrorCode.invalid_config, f"Unknown topic config name: {change.name}")
        value = _changed_value(
            definition.type, definition.default, change, current.get(change.name)
        )
        if value is not None:
            validate_topic_config(change.name, value)
        if current.get(change.name) != value:
            records.append(ConfigRecord(ConfigResourceType.TOPIC, name, change.name, value))
    return records


def _alter_broker_configs(
    image: MetadataImage, request: AlterConfigsResource
) -> list[ConfigRecord]:
    """The ConfigRecords of one BROKER resource's changes (dynamic broker configs only);
    raises TopicError."""
    name = request.resource_name
    resource_problem = broker_resource_problem(name)
    if resource_problem is not None:
        raise TopicError(ErrorCode.invalid_request, resource_problem)
    repeated = _duplicates([change.name for change in request.changes])
    if repeated:
        raise TopicError(
            ErrorCode.invalid_request,
            f"Error due to duplicate config keys: {', '.join(sorted(repeated))}",
        )
    current = dict(image.configs.get(ConfigResource(ConfigResourceType.BROKER, name), {}))
    records: list[ConfigRecord] = []
    for change in request.changes:
        definition = DYNAMIC_BROKER_CONFIGS.get(change.name)
        if definition is None:
            raise TopicError(ErrorCode.invalid_config, static_broker_config_problem(change.name))
        value = _changed_value(*definition, change, current.get(change.name))
        if value is not None:
            problem = dynamic_broker_config_problem(change.name, value)
            if problem is not None:
                raise TopicError(ErrorCode.invalid_config, problem)
        if current.get(change.name) != value:
            records.append(ConfigRecord(ConfigResourceType.BROKER, name, change.name, value))
    return records


def _elr_resets(image: MetadataImage, name: str) -> list[PartitionChangeRecord]:
    """PartitionChangeRecords clearing every ELR and LastKnownELR of topic `name`."""
    topic = image.topic(name)
    assert topic is not None
    return [
        PartitionChangeRecord(topic.topic_id, partition_id, elr=(), last_known_elr=())
        for partition_id, state in sorted(topic.partitions.items())
        if state.elr or state.last_known_elr
    ]


def _changed_value(
    config_type: ConfigType, default: str, change: ConfigChange, current: str | None
) -> str | None:
    """The override of a config of `config_type` (Kafka's `default`) after `change` (None: no
    override)."""
    try:
        operation = ConfigOperation(change.operation)
    except ValueError:
        raise TopicError(
            ErrorCode.invalid_request, f"Unknown config operation {change.operation}."
        ) from None
    if operation is ConfigOperation.DELETE:
        return None
    if change.value is None:
        raise TopicError(ErrorCode.invalid_request, f"Null value not supported for: {change.name}")
    if operation is ConfigOperation.SET:
        return change.value
    if config_type is not ConfigType.LIST:
        raise TopicError(
            ErrorCode.invalid_config,
            f"ConfigRecord value append is not allowed for config key: {change.name}"
            if operation is ConfigOperation.APPEND
            else f"ConfigRecord value subtract is not allowed for config key: {change.name}",
        )
    items = [item for item in (current or default).split(",") if item]
    given = [item.strip() for item in change.value.split(",") if item.strip()]
    if operation is ConfigOperation.APPEND:
        items += [item for item in given if item not in items]
    else:
        items = [item for item in items if item not in given]
    return ",".join(items)

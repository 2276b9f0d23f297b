"""Metadata and DescribeCluster answered from the broker's metadata image.

Pure: a function of the image, this broker's id and the request. As Kafka's KRaft brokers:

- The brokers listed are the registered, unfenced ones, each with its advertised endpoint of
  the listener the request came in on (a fenced broker cannot serve, so clients are not sent
  there; a broker without that listener is left out, as Kafka does).
- The controller id is this broker: clients send admin requests (CreateTopics, ...) to the
  controller id, and every broker forwards them to the active controller.
- Per partition: leader (LEADER_NOT_AVAILABLE while it has none), leader epoch, replicas, ISR,
  and offline replicas (replicas on brokers that are fenced or not registered).
- The cluster id is answered (v2 on).
- With an authorizer (`access`), only the topics the client may DESCRIBE are listed; one it
  names without that right is TOPIC_AUTHORIZATION_FAILED, and the authorized-operations
  fields are the client's allowed operations.
- A topic asked for by an invalid name (Kafka's `Topic.validate`) is INVALID_TOPIC_EXCEPTION.
- Topics asked for that do not exist are UNKNOWN_TOPIC_OR_PARTITION, except those being created
  automatically for this request (`topics_to_create`), which are LEADER_NOT_AVAILABLE until they
  exist, as Kafka answers; a topic asked by id that does not exist is UNKNOWN_TOPIC_ID.
"""

from __future__ import annotations

import typing
import uuid
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import TypeAlias

from kio.schema.errors import ErrorCode
from kio.schema.metadata import v10 as metadata_v10
from kio.schema.metadata import v11 as metadata_v11
from kio.schema.metadata import v12 as metadata_v12

from controller.acls import CLUSTER_NAME, AclOperation, ResourceType
from controller.image import MetadataImage, TopicImage
from controller.topics import (
    CLUSTER_METADATA_TOPIC,
    INTERNAL_TOPICS,
    TopicError,
    validate_topic_name,
)
from net import messages
from net.protocol import NO_THROTTLE, field_entity_type, make_entity

METADATA_VERSIONS = (0, 12)
DESCRIBE_CLUSTER_VERSIONS = (0, 1)

_ZERO_UUID = uuid.UUID(int=0)
# Kafka's "not requested" value of the authorized-operations fields.
_NO_AUTHORIZED_OPERATIONS = -(2**31)


def _operations_bitfield(*codes: int) -> int:
    return sum(1 << code for code in codes)


# Without ACLs every client may do everything: Kafka then answers every operation its ACLs
# support for the resource type (`AclEntry.supportedOperations`), one bit per AclOperation
# code (READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9,
# DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12).
TOPIC_AUTHORIZED_OPERATIONS = _operations_bitfield(3, 4, 5, 6, 7, 8, 10, 11)
CLUSTER_AUTHORIZED_OPERATIONS = _operations_bitfield(5, 7, 8, 9, 10, 11, 12)
# The name of the listener of a bare configuration (`listeners=PLAINTEXT://...`), Kafka's.
DEFAULT_LISTENER = "PLAINTEXT"

# The Metadata versions whose topics may be asked by id.
_TopicAskedById: TypeAlias = (
    metadata_v10.request.MetadataRequestTopic
    | metadata_v11.request.MetadataRequestTopic
    | metadata_v12.request.MetadataRequestTopic
)


class _AskedTopic(typing.Protocol):
    """A topic of a MetadataRequest: a name, which may be null from v10 on (asked by id)."""

    @property
    def name(self) -> str | None: ...


# (name, topic id, the topic's image if it exists, error) -> the topic's response entity.
_TopicEntity: TypeAlias = Callable[[str | None, uuid.UUID, TopicImage | None, ErrorCode], object]


@dataclass(frozen=True, slots=True)
class MetadataAccess:
    """What the client of a request may see: `allows(operation, resource type, name)` and
    `operations(resource type, name)`, its authorized-operations bitfield."""

    allows: Callable[[AclOperation, ResourceType, str], bool]
    operations: Callable[[ResourceType, str], int]


def _live_brokers(image: MetadataImage, listener: str) -> list[tuple[int, str, int, str | None]]:
    """(id, host, port, rack) of each unfenced broker with the listener named `listener`."""
    live = []
    for broker_id, broker in sorted(image.brokers.items()):
        if broker.fenced:
            continue
        for endpoint in broker.listeners:
            if endpoint.name == listener:
                live.append((broker_id, endpoint.host, endpoint.port, broker.rack))
                break
    return live


def _is_valid_topic_name(name: str) -> bool:
    try:
        validate_topic_name(name)
    except TopicError:
        return False
    return True


def topics_to_create(image: MetadataImage, request: messages.MetadataRequest) -> list[str]:
    """The topics `request` asks to be created automatically (Kafka's
    `allow_auto_topic_creation`, implicitly true before v4): those named that do not exist,
    have a valid name, and are not internal (the offsets topic is created by its coordinator,
    the metadata log is no topic). Whether the broker creates them is its own setting
    (`auto.create.topics.enable`)."""
    # v0-3 have no flag: they always allow it.
    if request.topics is None or not getattr(request, "allow_auto_topic_creation", True):
        return []
    names = (item.name for item in request.topics if item.name is not None)
    return [
        name
        for name in dict.fromkeys(names)
        if image.topic(name) is None
        and name not in INTERNAL_TOPICS
        and name != CLUSTER_METADATA_TOPIC
        and _is_valid_topic_name(name)
    ]


def metadata_response(
    image: MetadataImage,
    broker_id: int,
    cluster_id: str,
    version: int,
    request: messages.MetadataRequest,
    creating: Collection[str] = (),
    access: MetadataAccess | None = None,
    listener: str = DEFAULT_LISTENER,
) -> messages.MetadataResponse:
    """The MetadataResponse of `version` to `request`, naming the cluster `cluster_id` (v2+;
    librdkafka's DescribeCluster reads it from there); `creating`: the topics asked for that
    are being created for it; `listener`: the listener the request came in on."""
    schema = messages.METADATA_RESPONSES[version]
    broker_type = field_entity_type(schema, "brokers")
    topic_type = field_entity_type(schema, "topics")
    partition_type = field_entity_type(topic_type, "partitions")
    live = _live_brokers(image, listener)
    live_ids = {broker[0] for broker in live}
    # The versions without these fields (v0-v7; v11+ for the cluster's) never ask.
    include_topic_operations = getattr(request, "include_topic_authorized_operations", False)
    cluster_operations = (
        (
            CLUSTER_AUTHORIZED_OPERATIONS
            if access is None
            else access.operations(ResourceType.CLUSTER, CLUSTER_NAME)
        )
        if getattr(request, "include_cluster_authorized_operations", False)
        else _NO_AUTHORIZED_OPERATIONS
    )

    def topic_operations(name: str | None) -> int:
        if not include_topic_operations:
            return _NO_AUTHORIZED_OPERATIONS
        if access is None:
            return TOPIC_AUTHORIZED_OPERATIONS
        return 0 if name is None else access.operations(ResourceType.TOPIC, name)

    def describes(name: str) -> bool:
        return access is None or access.allows(AclOperation.DESCRIBE, ResourceType.TOPIC, name)

    def topic_entity(
        name: str | None, topic_id: uuid.UUID, topic: TopicImage | None, error: ErrorCode
    ) -> object:
        partitions = (
            ()
            if topic is None
            else tuple(
                make_entity(
                    partition_type,
                    error_code=ErrorCode.none
                    if state.has_leader
                    else ErrorCode.leader_not_available,
                    partition_index=partition_id,
                    leader_id=state.leader,
                    leader_epoch=state.leader_epoch,
                    replica_nodes=state.replicas,
                    isr_nodes=state.isr,
                    offline_replicas=tuple(r for r in state.replicas if r not in live_ids),
                )
                for partition_id, state in sorted(topic.partitions.items())
            )
        )
        return make_entity(
            topic_type,
            error_code=error,
            name=name,
            topic_id=topic_id,
            is_internal=name in INTERNAL_TOPICS,
            partitions=partitions,
            topic_authorized_operations=topic_operations(name),
        )

    def known(name: str) -> object:
        topic = image.topic(name)
        if not describes(name) and name not in creating:
            return topic_entity(name, _ZERO_UUID, None, ErrorCode.topic_authorization_failed)
        if topic is None:
            if name in creating:
                error = ErrorCode.leader_not_available
            elif _is_valid_topic_name(name):
                error = ErrorCode.unknown_topic_or_partition
            else:
                error = ErrorCode.invalid_topic_exception
            return topic_entity(name, _ZERO_UUID, None, error)
        return topic_entity(name, topic.topic_id, topic, ErrorCode.none)

    asked = request.topics
    # v0 has no null: an empty list means every topic, as a null does from v1 on.
    topics: Iterable[object]
    if asked is None or (version == 0 and not asked):
        topics = (known(name) for name in sorted(image.topic_ids) if describes(name))
    else:
        topics = (_asked_topic(image, item, known, topic_entity) for item in asked)
    return make_entity(
        schema,
        throttle_time=NO_THROTTLE,
        brokers=tuple(
            make_entity(broker_type, node_id=node_id, host=host, port=port, rack=rack)
            for node_id, host, port, rack in live
        ),
        cluster_id=cluster_id,
        controller_id=broker_id,
        topics=tuple(topics),
        cluster_authorized_operations=cluster_operations,
    )


def _asked_topic(
    image: MetadataImage,
    item: _AskedTopic,
    known: Callable[[str], object],
    topic_entity: _TopicEntity,
) -> object:
    if item.name is not None:
        return known(item.name)
    topic_id = (item.topic_id if isinstance(item, _TopicAskedById) else None) or _ZERO_UUID
    topic = image.topics.get(topic_id)
    if topic is None:
        return topic_entity(None, topic_id, None, ErrorCode.unknown_topic_id)
    return known(topic.name)


def describe_cluster_response(
    image: MetadataImage,
    broker_id: int,
    cluster_id: str,
    version: int,
    *,
    include_cluster_authorized_operations: bool = False,
    cluster_operations: int = CLUSTER_AUTHORIZED_OPERATIONS,
    listener: str = DEFAULT_LISTENER,
) -> messages.DescribeClusterResponse:
    """DescribeClusterResponse: the live brokers (their endpoints of `listener`, the one the
    request came in on), with this broker as the controller, and the cluster's authorized
    operations when asked for (`cluster_operations`: every one unless an authorizer says
    otherwise)."""
    schema = messages.DESCRIBE_CLUSTER_RESPONSES[version]
    broker_type = field_entity_type(schema, "brokers")
    return make_entity(
        schema,
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        error_message=None,
        endpoint_type=1,
        cluster_id=cluster_id,
        controller_id=broker_id,
        brokers=tuple(
            make_entity(broker_type, broker_id=node_id, host=host, port=port, rack=rack)
            for node_id, host, port, rack in _live_brokers(image, listener)
        ),
        cluster_authorized_operations=cluster_operations
        if include_cluster_authorized_operations
        else _NO_AUTHORIZED_OPERATIONS,
    )


def describe_cluster_error(version: int, error: ErrorCode) -> messages.DescribeClusterResponse:
    """DescribeClusterResponse refusing the request with `error`."""
    schema = messages.DESCRIBE_CLUSTER_RESPONSES[version]
    return make_entity(
        schema,
        throttle_time=NO_THROTTLE,
        error_code=error,
        error_message=None,
        endpoint_type=1,
        cluster_id="",
        controller_id=-1,
        brokers=(),
        cluster_authorized_operations=_NO_AUTHORIZED_OPERATIONS,
    )

"""Metadata answers and the topics a Metadata request asks to create (broker/metadata_api.py)."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest
from kio.schema.errors import ErrorCode

from broker.metadata_api import metadata_response, topics_to_create
from controller.image import MetadataImage
from controller.records import BrokerEndpoint, RegisterBrokerRecord, TopicRecord
from net.api_keys import ApiKey
from net.protocol import field_entity_type, make_entity, request_schema

IMAGE = MetadataImage.from_records([TopicRecord(name="events", topic_id=UUID(int=7))])


def metadata_request(version: int, *names: str | None, allow: bool = True) -> Any:
    schema: Any = request_schema(ApiKey.METADATA, version)
    topic_type = field_entity_type(schema, "topics")
    return make_entity(
        schema,
        topics=tuple(make_entity(topic_type, name=name, topic_id=None) for name in names),
        allow_auto_topic_creation=allow,
        include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False,
    )


def test_a_producer_asks_for_the_valid_missing_topics_it_names() -> None:
    request = metadata_request(12, "events", "orders", "bad$#!", "orders", "__consumer_offsets")
    assert topics_to_create(IMAGE, request) == ["orders"]


@pytest.mark.parametrize(
    ("version", "allow", "expected"),
    [(12, False, []), (4, False, []), (4, True, ["orders"]), (1, True, ["orders"])],
)
def test_the_flag_decides_and_before_v4_creation_is_always_allowed(
    version: int, allow: bool, expected: list[str]
) -> None:
    assert topics_to_create(IMAGE, metadata_request(version, "orders", allow=allow)) == expected


def test_a_request_for_every_topic_creates_none() -> None:
    schema: Any = request_schema(ApiKey.METADATA, 12)
    request = make_entity(
        schema,
        topics=None,
        allow_auto_topic_creation=True,
        include_topic_authorized_operations=False,
    )
    assert topics_to_create(IMAGE, request) == []


@pytest.mark.parametrize(
    ("name", "error"),
    [
        ("events", ErrorCode.none),
        ("orders", ErrorCode.leader_not_available),
        ("missing", ErrorCode.unknown_topic_or_partition),
        ("bad$#!", ErrorCode.invalid_topic_exception),
        ("x" * 250, ErrorCode.invalid_topic_exception),
        (".", ErrorCode.invalid_topic_exception),
        ("..", ErrorCode.invalid_topic_exception),
    ],
)
def test_each_topic_asked_gets_its_error(name: str, error: ErrorCode) -> None:
    request = metadata_request(12, name)
    response: Any = metadata_response(IMAGE, 1, "cluster", 12, request, creating=["orders"])
    assert [(t.name, t.error_code) for t in response.topics] == [(name, error)]
    assert response.cluster_id == "cluster"


def test_brokers_are_advertised_with_the_listener_the_request_came_in_on() -> None:
    """As Kafka: each broker's endpoint of the same listener; a broker without it is left out
    for that client."""

    def registered(broker_id: int, *listeners: tuple[str, int]) -> RegisterBrokerRecord:
        return RegisterBrokerRecord(
            broker_id=broker_id,
            incarnation_id=UUID(int=broker_id),
            broker_epoch=broker_id,
            listeners=tuple(BrokerEndpoint(name, "127.0.0.1", port) for name, port in listeners),
            fenced=False,
        )

    image = MetadataImage.from_records(
        [
            registered(1, ("CLIENT", 9092), ("REPLICATION", 9093)),
            registered(2, ("CLIENT", 9192), ("REPLICATION", 9193)),
            registered(3, ("REPLICATION", 9293)),
        ]
    )

    def advertised(listener: str) -> list[tuple[int, int]]:
        response: Any = metadata_response(
            image, 1, "cluster", 12, metadata_request(12), listener=listener
        )
        return [(broker.node_id, broker.port) for broker in response.brokers]

    assert advertised("CLIENT") == [(1, 9092), (2, 9192)]
    assert advertised("REPLICATION") == [(1, 9093), (2, 9193), (3, 9293)]
    assert advertised("PLAINTEXT") == []

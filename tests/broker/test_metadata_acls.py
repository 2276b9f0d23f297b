"""Metadata with an authorizer (broker/metadata_api.py): only described topics, the client's own
authorized operations."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from kio.schema.errors import ErrorCode

from broker.metadata_api import MetadataAccess, metadata_response
from controller.acls import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AuthorizerSettings,
    PatternType,
    ResourceType,
)
from controller.image import MetadataImage
from controller.records import AccessControlEntryRecord, TopicRecord
from net.api_keys import ApiKey
from net.protocol import field_entity_type, make_entity, request_schema

ALICE = "User:alice"
IMAGE = MetadataImage.from_records(
    [
        TopicRecord(name="public", topic_id=UUID(int=1)),
        TopicRecord(name="private", topic_id=UUID(int=2)),
        AccessControlEntryRecord.of(
            UUID(int=3),
            AclBinding(
                ResourceType.TOPIC,
                "public",
                PatternType.LITERAL,
                ALICE,
                "*",
                AclOperation.READ,
                AclPermissionType.ALLOW,
            ),
        ),
    ]
)
SETTINGS = AuthorizerSettings()


def access(image: MetadataImage) -> MetadataAccess:
    """What alice from 10.0.0.1 may see in `image`."""

    def allows(operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
        return image.acls.authorize(SETTINGS, ALICE, "10.0.0.1", operation, resource_type, name)

    def operations(resource_type: ResourceType, name: str) -> int:
        return sum(
            1 << operation
            for operation in AclOperation
            if operation > AclOperation.ALL and allows(operation, resource_type, name)
        )

    return MetadataAccess(allows, operations)


def request(*names: str, every_topic: bool = False) -> Any:
    schema: Any = request_schema(ApiKey.METADATA, 12)
    topic_type = field_entity_type(schema, "topics")
    return make_entity(
        schema,
        topics=None
        if every_topic
        else tuple(make_entity(topic_type, name=name, topic_id=None) for name in names),
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=True,
    )


def test_every_topic_lists_only_those_the_client_may_describe() -> None:
    response: Any = metadata_response(
        IMAGE, 1, "c", 12, request(every_topic=True), access=access(IMAGE)
    )
    assert [topic.name for topic in response.topics] == ["public"]
    # READ, and the DESCRIBE it implies.
    assert response.topics[0].topic_authorized_operations == (1 << 3) | (1 << 8)


def test_a_topic_named_without_describe_is_topic_authorization_failed() -> None:
    response = metadata_response(
        IMAGE, 1, "c", 12, request("private", "missing", "public"), access=access(IMAGE)
    )
    assert [(t.name, t.error_code) for t in response.topics] == [
        ("private", ErrorCode.topic_authorization_failed),
        ("missing", ErrorCode.topic_authorization_failed),
        ("public", ErrorCode.none),
    ]
    assert response.topics[0].partitions == ()


def test_without_an_authorizer_every_topic_is_listed() -> None:
    response = metadata_response(IMAGE, 1, "c", 12, request(every_topic=True))
    assert [topic.name for topic in response.topics] == ["private", "public"]

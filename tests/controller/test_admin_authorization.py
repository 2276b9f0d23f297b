"""The controller's authorization of forwarded admin requests (Kafka's ControllerApis rules):
a cluster API refused whole, a per-resource AlterConfigs split between the handler and the
authorization errors and merged back into one response."""

from __future__ import annotations

import asyncio
from typing import Any
from uuid import UUID

from kio.schema.errors import ErrorCode

from controller import wire
from controller.acls import (
    AclBinding,
    AclIndex,
    AclOperation,
    AclPermissionType,
    Authorizer,
    AuthorizerSettings,
    PatternType,
    ResourceType,
)
from controller.admin_authorization import AdminRequestAuthorization
from controller.image import MetadataImage
from controller.records import ConfigResourceType
from controller.topics import AlterConfigsResult
from net.api_keys import ApiKey
from net.api_registry import RequestContext
from net.principal import KafkaPrincipal
from net.protocol import RequestHeader, field_entity_type, make_entity, request_schema


def allow(operation: AclOperation, resource_type: ResourceType, name: str) -> AclBinding:
    return AclBinding(
        resource_type,
        name,
        PatternType.LITERAL,
        "User:alice",
        "*",
        operation,
        AclPermissionType.ALLOW,
    )


AUTHORIZATION = AdminRequestAuthorization(
    Authorizer(
        AuthorizerSettings(),
        lambda: AclIndex({UUID(int=1): allow(AclOperation.ALTER_CONFIGS, ResourceType.TOPIC, "a")}),
    ),
    lambda: MetadataImage.EMPTY,
)


def context(api_key: int, version: int) -> RequestContext:
    header = RequestHeader(api_key, version, 1, "client", 10)
    return RequestContext(header, "10.0.0.1:0", 1, 0.0, 10, principal=KafkaPrincipal.user("alice"))


def alter_configs(*resources: tuple[int, str]) -> Any:
    schema: Any = request_schema(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1)
    return make_entity(
        schema,
        resources=tuple(
            make_entity(
                field_entity_type(schema, "resources"),
                resource_type=resource_type,
                resource_name=name,
                configs=(),
            )
            for resource_type, name in resources
        ),
        validate_only=False,
    )


def test_alter_configs_applies_the_authorized_resources_and_refuses_the_others() -> None:
    handled: list[list[str]] = []

    async def handle(_: RequestContext, request: Any) -> Any:
        names = [resource.resource_name for resource in request.resources]
        handled.append(names)
        return wire.incremental_alter_configs_response(
            1,
            [
                AlterConfigsResult(ConfigResourceType.TOPIC, name, ErrorCode.none, None)
                for name in names
            ],
        )

    request = alter_configs(
        (ConfigResourceType.TOPIC, "a"),
        (ConfigResourceType.TOPIC, "b"),
        (ConfigResourceType.BROKER, "1"),
    )
    response: Any = asyncio.run(
        AUTHORIZATION.authorized(context(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1), request, handle)
    )
    assert handled == [["a"]]
    assert {(r.resource_name, r.error_code) for r in response.responses} == {
        ("a", ErrorCode.none),
        ("b", ErrorCode.topic_authorization_failed),
        ("1", ErrorCode.cluster_authorization_failed),
    }


def test_a_cluster_api_without_alter_on_the_cluster_is_refused_whole() -> None:
    async def handle(_: RequestContext, request: Any) -> Any:
        raise AssertionError("not to be handled")

    schema: Any = request_schema(ApiKey.UNREGISTER_BROKER, 0)
    response: Any = asyncio.run(
        AUTHORIZATION.authorized(
            context(ApiKey.UNREGISTER_BROKER, 0), make_entity(schema, broker_id=3), handle
        )
    )
    assert response.error_code == ErrorCode.cluster_authorization_failed
